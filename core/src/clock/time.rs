//! The two kinds of time, as types: [`BaseMs`] and [`LivenessMs`] (the [module
//! documentation](super) says which is which and where one becomes the other).
//!
//! Plain values with no imports, so that every module may name them (`liveness::word` stores
//! deadlines as [`LivenessMs`]) without reaching the clocks' atomics.

/// A time on a base clock, ms ([`Clock::now_ms`](super::Clock::now_ms) of the system or a
/// manual clock): when an event happened, when the monitor last ran. Not comparable with a
/// [`LivenessMs`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BaseMs(pub u64);

/// A time on the liveness clock, ms: base time minus every master stall detected so far
/// ([`LivenessClock`](super::LivenessClock)). Every deadline a word holds is one. Not
/// comparable with a [`BaseMs`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LivenessMs(pub u64);

impl BaseMs {
    /// `ms` later, saturating.
    pub fn saturating_add(self, ms: u64) -> Self {
        Self(self.0.saturating_add(ms))
    }

    /// Milliseconds from `earlier` to `self` (0 if `earlier` is later).
    pub fn since(self, earlier: BaseMs) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl LivenessMs {
    /// `ms` later, saturating.
    pub fn saturating_add(self, ms: u64) -> Self {
        Self(self.0.saturating_add(ms))
    }

    /// Milliseconds from `earlier` to `self` (0 if `earlier` is later).
    pub fn since(self, earlier: LivenessMs) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}
