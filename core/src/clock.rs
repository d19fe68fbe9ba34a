//! Time sources: a [`Clock`] reads milliseconds; the monitor works in [`Tick`]s.
//!
//! Three clocks:
//! - [`SystemClock`]: monotonic milliseconds since the clock was made (`Instant`-based).
//! - [`ManualClock`]: set and advanced by hand (tests, `replay`, the simulator, loom models).
//! - [`LivenessClock`]: the clock liveness deadlines live on. It is a base clock minus the
//!   *stall credit*: the time during which the master itself was detected as stalled. Every
//!   deadline is stored on this clock, so adding the stall to the credit extends every deadline
//!   by the stall at once, in O(1) (invariant 5), without touching a single record.
//!
//! Two kinds of time, two types: [`BaseMs`] (a base clock's reading: event times, the stall
//! detector's tick times) and [`LivenessMs`] (the liveness clock's: every deadline in a word).
//! Neither converts into the other by `From`; the one crossing is [`LivenessClock::to_liveness`]
//! (and [`LivenessClock::now`]), where the stall credit is applied. Durations (TTLs, the tick,
//! a stall) are plain `u64` milliseconds and add to either.
//!
//! Ground rules for [`LivenessClock`]: only the monitor writes `credit_ms` (`fetch_add`, Release);
//! signal paths read it (Acquire). A signal that reads the credit just before the monitor adds a
//! stall stores a deadline that is later than it needs to be; the error is always in the
//! client's favour, never against it.
//!
//! Owns: time and the stall credit. Imports only `sync`; may not touch liveness state: deadlines
//! are stored in the records' words by the record's own CAS loops, read against this clock.

use crate::sync::{AtomicU64, Ordering};
use std::fmt;
use std::time::Instant;

/// A time on a base clock, ms ([`Clock::now_ms`] of the system or a
/// manual clock): when an event happened, when the monitor last ran. Not comparable with a
/// [`LivenessMs`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BaseMs(pub u64);

/// A time on the liveness clock, ms: base time minus every master stall detected so far
/// ([`LivenessClock`]). Every deadline a word holds is one. Not
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

/// A monitor tick: `liveness_ms / tick_ms`. The wheel works only in ticks.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Tick(pub u64);

impl Tick {
    /// The largest tick the wheel represents; later deadlines are clamped to it.
    pub const MAX: Tick = Tick(u64::MAX >> 1);

    /// The tick containing millisecond `ms` (floor), for a tick of `tick_ms`.
    pub fn of_ms(ms: u64, tick_ms: u64) -> Tick {
        Tick(ms / tick_ms.max(1))
    }

    /// The tick containing liveness time `t` (floor), for a tick of `tick_ms`: the monitor's
    /// ticks are on the liveness clock.
    pub fn of(t: LivenessMs, tick_ms: u64) -> Tick {
        Self::of_ms(t.0, tick_ms)
    }
}

impl fmt::Debug for Tick {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tick({})", self.0)
    }
}

/// A source of monotonic milliseconds.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Milliseconds since this clock's epoch; never decreases.
    fn now_ms(&self) -> u64;
}

/// Monotonic wall time, milliseconds since construction.
#[derive(Debug)]
pub struct SystemClock {
    start: Instant,
}

impl SystemClock {
    /// A clock whose epoch is now.
    pub fn new() -> Self {
        Self { start: Instant::now() }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl SystemClock {
    /// The instant this clock counts from (its millisecond 0).
    pub fn epoch(&self) -> Instant {
        self.start
    }
}

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }
}

/// A clock moved only by [`ManualClock::set_ms`] and [`ManualClock::advance_ms`].
#[derive(Debug)]
pub struct ManualClock {
    now_ms: AtomicU64,
}

impl ManualClock {
    /// A manual clock reading `start_ms`.
    pub fn new(start_ms: u64) -> Self {
        Self {
            now_ms: AtomicU64::new(start_ms),
        }
    }

    /// Moves the clock forward by `ms`.
    pub fn advance_ms(&self, ms: u64) {
        self.now_ms.fetch_add(ms, Ordering::AcqRel);
    }

    /// Sets the clock to `ms`; a value in the past is ignored (the clock is monotonic).
    pub fn set_ms(&self, ms: u64) {
        self.now_ms.fetch_max(ms, Ordering::AcqRel);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now_ms.load(Ordering::Acquire)
    }
}

impl<C: Clock + ?Sized> Clock for crate::sync::CellArc<C> {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }
}

/// The clock liveness deadlines are kept on: a base clock minus detected master stalls.
#[derive(Debug)]
pub struct LivenessClock<C: Clock> {
    base: C,
    credit_ms: AtomicU64,
}

impl<C: Clock> LivenessClock<C> {
    /// Wraps `base` with no stall credit.
    pub fn new(base: C) -> Self {
        Self {
            base,
            credit_ms: AtomicU64::new(0),
        }
    }

    /// The base clock.
    pub fn base(&self) -> &C {
        &self.base
    }

    /// Liveness time now: base time minus every stall detected so far.
    pub fn now(&self) -> LivenessMs {
        self.to_liveness(self.base_now())
    }

    /// The base clock's time now.
    pub fn base_now(&self) -> BaseMs {
        BaseMs(self.base.now_ms())
    }

    /// Converts a base-clock reading to liveness time: the one place the stall credit is
    /// applied.
    pub fn to_liveness(&self, base: BaseMs) -> LivenessMs {
        LivenessMs(base.0.saturating_sub(self.credit_ms.load(Ordering::Acquire)))
    }

    /// Total stall time excluded so far.
    pub fn credit_ms(&self) -> u64 {
        self.credit_ms.load(Ordering::Acquire)
    }

    /// Excludes `ms` of master stall from every deadline (monitor only).
    pub(crate) fn add_stall_ms(&self, ms: u64) {
        self.credit_ms.fetch_add(ms, Ordering::AcqRel);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn tick_of_ms_floors() {
        for (ms, tick_ms, want) in [(0, 100, 0), (99, 100, 0), (100, 100, 1), (250, 100, 2), (7, 0, 7)] {
            assert_eq!(Tick::of_ms(ms, tick_ms), Tick(want), "ms={ms} tick_ms={tick_ms}");
        }
    }

    #[test]
    fn times_add_durations_and_measure_spans_saturating() {
        assert_eq!(LivenessMs(5).saturating_add(10), LivenessMs(15));
        assert_eq!(LivenessMs(u64::MAX).saturating_add(1), LivenessMs(u64::MAX));
        assert_eq!(
            (LivenessMs(15).since(LivenessMs(5)), LivenessMs(5).since(LivenessMs(15))),
            (10, 0)
        );
        assert_eq!(BaseMs(7).saturating_add(3), BaseMs(10));
        assert_eq!((BaseMs(15).since(BaseMs(5)), BaseMs(5).since(BaseMs(15))), (10, 0));
        assert_eq!(Tick::of(LivenessMs(250), 100), Tick(2));
    }

    #[test]
    fn manual_clock_is_monotonic() {
        let c = ManualClock::new(5);
        c.advance_ms(10);
        assert_eq!(c.now_ms(), 15);
        c.set_ms(3);
        assert_eq!(c.now_ms(), 15);
        c.set_ms(40);
        assert_eq!(c.now_ms(), 40);
    }

    #[test]
    fn liveness_clock_subtracts_stalls() {
        let l = LivenessClock::new(ManualClock::new(1_000));
        l.add_stall_ms(300);
        assert_eq!(l.now(), LivenessMs(700));
        assert_eq!(l.base_now(), BaseMs(1_000));
        assert_eq!(l.to_liveness(BaseMs(2_000)), LivenessMs(1_700));
        assert_eq!(l.credit_ms(), 300);
    }
}
