//! The packed liveness word and the pure transition function.
//!
//! One 64-bit atomic per incarnation (`sync::Atomic<Word>`) holds everything a transition must
//! decide on, so that a single compare-and-swap settles every race between a signal (Ping, a
//! successful mount) and the monitor.
//!
//! ```text
//!  63  62 61                    40 39                                    0
//! +-----+------------------------+----------------------------------------+
//! |state|    seq (22 bits)       |          deadline_ms (40 bits)         |
//! +-----+------------------------+----------------------------------------+
//! ```
//!
//! | field | bits | meaning |
//! |---|---|---|
//! | `state` | 62..64 | [`LivenessState`]: `Active` = 0, `Suspected` = 1, `Offline` = 2 (3 is never written; it decodes, and is checked, as Offline) |
//! | `seq` | 40..62 | transition sequence: +1 on every state change, wraps at 2^22 |
//! | `deadline_ms` | 0..40 | liveness-clock milliseconds: **Active**: when the incarnation becomes due for suspicion (last accepted signal + active TTL); **Suspected**: when it becomes due for Offline (the tick that *committed* Suspected + suspicion TTL); **Offline**: when Offline was committed |
//!
//! Why the state is in the top bits: the serving check is then one unsigned compare of the
//! whole word against a constant (`raw < 1 << 62`: Active), and the retention check is the
//! sign bit (`raw < 1 << 63`: Active or Suspected). On x86-64 the compare takes its operand
//! straight from memory and feeds a counter or a branch through the carry flag, with no mask:
//! a router's loop over replicas pays one pointer load and one compare per replica (with the
//! state in the low bits it paid a mask and a compare more, ~1.8× the loop without any check;
//! `BENCHMARKS.md`, `eligibility/word`).
//!
//! Why the deadline is in the word rather than in a second atomic: a ping that lands while the
//! monitor is deciding to suspect must make the monitor's CAS fail. With the deadline in the
//! word, a refreshed deadline changes the word and the stale CAS loses; with a separate
//! "last signal" atomic the monitor could suspect an incarnation that pinged a moment ago.
//! Why `seq`: a Suspected → Active → Suspected round trip may produce the same state and, after
//! a configuration reload, even the same deadline; `seq` makes the second Suspected a different
//! word, so an Offline CAS prepared against the first one fails (ABA).
//!
//! The transition logic is [`decide`]: a pure function of the current word, the event, the
//! time and the TTLs. The CAS loops in `record.rs` only apply its [`Decision`]s.

use crate::clock::LivenessMs;
pub use crate::config::Ttls;
use std::fmt;

/// Bits of the state field.
pub const STATE_BITS: u32 = 2;
/// Bits of the transition sequence.
pub const SEQ_BITS: u32 = 22;
/// Bits of the deadline (liveness-clock milliseconds): about 34.8 years.
pub const DEADLINE_BITS: u32 = 64 - STATE_BITS - SEQ_BITS;
const SEQ_SHIFT: u32 = DEADLINE_BITS;
const STATE_SHIFT: u32 = DEADLINE_BITS + SEQ_BITS;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;
const DEADLINE_MASK: u64 = (1 << DEADLINE_BITS) - 1;
/// Raw words below this are Active (state bits 00). Public because the C ABI's header-inline
/// serving check compares a word it loads itself against it (`MLV_WORD_ACTIVE_BELOW`).
pub const ACTIVE_BELOW: u64 = 1 << STATE_SHIFT;
/// Raw words below this are Active or Suspected (state bits 00 or 01): the sign bit is clear.
/// Public for the same reason (`MLV_WORD_RETAINED_BELOW`).
pub const RETAINED_BELOW: u64 = 2 << STATE_SHIFT;
/// The largest representable deadline; later deadlines saturate here.
pub const MAX_DEADLINE_MS: u64 = DEADLINE_MASK;

const STATE_ACTIVE: u64 = 0;
const STATE_SUSPECTED: u64 = 1;
const STATE_OFFLINE: u64 = 2;

/// The liveness state of one client incarnation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum LivenessState {
    /// Its resources serve new work.
    Active,
    /// Its resources are retained but serve nothing new; a liveness signal recovers it.
    Suspected,
    /// Terminal for this incarnation; offboarding runs, the record is the remount barrier.
    Offline,
}

impl LivenessState {
    /// The name used in events and the diagnostic query.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "Active",
            Self::Suspected => "Suspected",
            Self::Offline => "Offline",
        }
    }

    fn bits(self) -> u64 {
        match self {
            Self::Active => STATE_ACTIVE,
            Self::Suspected => STATE_SUSPECTED,
            Self::Offline => STATE_OFFLINE,
        }
    }

    fn from_bits(bits: u64) -> Self {
        match bits {
            STATE_ACTIVE => Self::Active,
            STATE_SUSPECTED => Self::Suspected,
            // 3 is never written; treating it as Offline fails closed.
            _ => Self::Offline,
        }
    }
}

impl fmt::Display for LivenessState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The transition sequence: 22 bits, wrapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Seq(u32);

impl Seq {
    /// A sequence value, masked to 22 bits.
    pub fn new(v: u32) -> Self {
        Seq((v as u64 & SEQ_MASK) as u32)
    }
    /// The raw value.
    pub fn get(self) -> u32 {
        self.0
    }
    /// The next value, wrapping at 2^22.
    pub fn next(self) -> Self {
        Seq::new(self.0.wrapping_add(1))
    }
}

/// A decoded snapshot of the packed word.
///
/// `repr(transparent)` over `u64` and `bytemuck::Pod`: the atomic that holds it is a typed
/// `sync::Atomic<Word>` (lock-free, the size of a `u64`), so loads return a `Word` and a CAS
/// takes `Word`s: a raw integer cannot be stored into the liveness word by mistake. Every bit
/// pattern is a valid `Word` (state 3 decodes as Offline, failing closed), which is what `Pod`
/// promises.
#[derive(Clone, Copy, PartialEq, Eq, Hash, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(transparent)]
pub struct Word(u64);

// The liveness word must not fall back to a lock inside `atomic::Atomic` (it would for a size
// or alignment no hardware atomic has): Ping's "one CAS" and the serving check's "one load"
// depend on it. Asserted here, beside the word, so that `sync` (the bottom layer) names no
// type above it.
#[cfg(not(loom))]
const _: () = assert!(crate::sync::Atomic::<Word>::is_lock_free());

impl Word {
    /// Packs the three fields; a deadline beyond [`MAX_DEADLINE_MS`] saturates.
    pub fn pack(state: LivenessState, seq: Seq, deadline: LivenessMs) -> Word {
        debug_assert!(u64::from(seq.0) <= SEQ_MASK, "seq {} exceeds {SEQ_BITS} bits", seq.0);
        let deadline = deadline.0.min(MAX_DEADLINE_MS);
        Word((state.bits() << STATE_SHIFT) | (u64::from(seq.0) << SEQ_SHIFT) | deadline)
    }
    /// Reinterprets a raw word (as loaded from the atomic).
    pub fn from_raw(raw: u64) -> Word {
        Word(raw)
    }
    /// The raw bits (as stored in the atomic).
    pub fn raw(self) -> u64 {
        self.0
    }
    /// The state field.
    pub fn state(self) -> LivenessState {
        LivenessState::from_bits(self.0 >> STATE_SHIFT)
    }
    /// The transition sequence.
    pub fn seq(self) -> Seq {
        Seq(((self.0 >> SEQ_SHIFT) & SEQ_MASK) as u32)
    }
    /// The deadline, on the liveness clock (see the module table for its meaning per state).
    pub fn deadline(self) -> LivenessMs {
        LivenessMs(self.0 & DEADLINE_MASK)
    }
    /// A fresh Active word for a new incarnation whose first signal is at `now`.
    pub fn first(now: LivenessMs, active_ttl_ms: u64) -> Word {
        Word::pack(LivenessState::Active, Seq::default(), now.saturating_add(active_ttl_ms))
    }
    /// `true` iff the word is Active: the whole serving check (one load + this compare).
    #[inline]
    pub fn is_active(self) -> bool {
        Self::raw_is_active(self.0)
    }
    /// `true` iff the word is Active or Suspected (resources are kept).
    #[inline]
    pub fn is_retained(self) -> bool {
        Self::raw_is_retained(self.0)
    }
    /// `true` iff the raw word is Active (see [`Word::is_active`]): one compare, no mask.
    #[inline]
    pub fn raw_is_active(raw: u64) -> bool {
        raw < ACTIVE_BELOW
    }
    /// `true` iff the raw word is Active or Suspected (resources are kept): the sign bit.
    #[inline]
    pub fn raw_is_retained(raw: u64) -> bool {
        raw < RETAINED_BELOW
    }
}

impl fmt::Debug for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Word")
            .field("state", &self.state())
            .field("seq", &self.seq().0)
            .field("deadline_ms", &self.deadline().0)
            .finish()
    }
}

/// What happened to a record, as seen by the decision function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A liveness signal: Ping, or a mount / ReMount / LocalDisk mount that succeeded.
    Signal,
    /// The monitor evaluates the record at a tick.
    Expire,
    /// As [`Event::Expire`], but Suspected → Offline commits are paused (mass-suspicion brake).
    ExpireHoldingOffline,
    /// The brake released: a Suspected record gets a fresh suspicion window from now, unless
    /// its window already ends later (a renewal never shortens a window).
    RenewSuspicion,
    /// `prepare_client_offboarding`: commit Suspected → Offline if it is due; never suspects.
    CommitOffline,
}

/// Why a word changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Active, deadline pushed out by a signal.
    Refreshed,
    /// Suspected → Active by a signal.
    Recovered,
    /// Active → Suspected: the active deadline passed.
    Suspected,
    /// Suspected → Offline: the suspicion deadline passed.
    WentOffline,
    /// Suspected, new suspicion window after a brake released.
    SuspicionRenewed,
}

/// The outcome of [`decide`]; the CAS loop applies it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Replace the current word with `next` (by CAS); `change` says why.
    Commit {
        /// The word to install.
        next: Word,
        /// The reason.
        change: Change,
    },
    /// Nothing is due before `deadline`; the monitor re-arms its entry there.
    Wait {
        /// The liveness-clock deadline the word implies.
        deadline: LivenessMs,
    },
    /// Suspected → Offline is due but the brake holds it; the monitor parks the entry.
    Held,
    /// A signal on an Offline incarnation: refused, nothing changes.
    RefuseOffline,
    /// The monitor's entry for an Offline incarnation: drop it.
    Retire,
}

/// The whole liveness state machine: `(word, event, now, ttls) → decision`. Pure. `now` is
/// liveness time, as every deadline in a word is.
///
/// Boundaries are inclusive: a deadline is due when `now >= deadline`.
pub fn decide(cur: Word, ev: Event, now: LivenessMs, ttls: Ttls) -> Decision {
    use LivenessState::*;
    let due = now >= cur.deadline();
    match (cur.state(), ev) {
        (Active, Event::Signal) => {
            let deadline = cur.deadline().max(now.saturating_add(ttls.active_ms));
            commit(Word::pack(Active, cur.seq(), deadline), Change::Refreshed)
        }
        (Suspected, Event::Signal) => commit(
            Word::pack(Active, cur.seq().next(), now.saturating_add(ttls.active_ms)),
            Change::Recovered,
        ),
        (Offline, Event::Signal) => Decision::RefuseOffline,
        (Offline, _) => Decision::Retire,
        // A renewal or an explicit Offline commit only ever concerns Suspected words; an
        // Active one is left to the monitor.
        (Active, Event::RenewSuspicion | Event::CommitOffline) => Decision::Wait {
            deadline: cur.deadline(),
        },
        (Active, _) if due => commit(
            Word::pack(Suspected, cur.seq().next(), now.saturating_add(ttls.suspicion_ms)),
            Change::Suspected,
        ),
        // The mass-suspicion brake's release renews a paused window; it never shortens one.
        // (The brake's list can hold an incarnation that recovered and was suspected again
        // with a longer window since: renewing it to `now + TTL` cut that window short, and
        // the monitor's wheel entry, armed for the longer one, then committed Offline late;
        // found by the differential fuzz target.)
        (Suspected, Event::RenewSuspicion) if now.saturating_add(ttls.suspicion_ms) > cur.deadline() => commit(
            Word::pack(Suspected, cur.seq().next(), now.saturating_add(ttls.suspicion_ms)),
            Change::SuspicionRenewed,
        ),
        (Suspected, Event::Expire | Event::CommitOffline) if due => {
            commit(Word::pack(Offline, cur.seq().next(), now), Change::WentOffline)
        }
        (Suspected, Event::ExpireHoldingOffline) if due => Decision::Held,
        (Active | Suspected, _) => Decision::Wait {
            deadline: cur.deadline(),
        },
    }
}

fn commit(next: Word, change: Change) -> Decision {
    Decision::Commit { next, change }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use LivenessState::*;

    const TTLS: Ttls = Ttls {
        active_ms: 10_000,
        suspicion_ms: 20_000,
    };

    fn w(state: LivenessState, seq: u32, deadline: u64) -> Word {
        Word::pack(state, Seq::new(seq), LivenessMs(deadline))
    }

    fn c(next: Word, change: Change) -> Decision {
        Decision::Commit { next, change }
    }

    #[test]
    fn layout_constants() {
        assert_eq!(STATE_BITS + SEQ_BITS + DEADLINE_BITS, 64);
        assert_eq!(MAX_DEADLINE_MS, (1u64 << 40) - 1);
        assert_eq!(w(Offline, 0, 0).raw(), 2 << 62);
        assert_eq!(w(Suspected, 0, 0).raw(), 1 << 62);
        assert_eq!(w(Active, 1, 0).raw(), 1 << 40);
        assert_eq!(w(Active, 0, 1).raw(), 1);
        // The extreme Active and Suspected words stay below their thresholds.
        assert!(w(Active, (1 << SEQ_BITS) - 1, u64::MAX).is_active());
        assert!(w(Suspected, (1 << SEQ_BITS) - 1, u64::MAX).is_retained());
        assert!(!w(Suspected, 0, 0).is_active());
        assert!(!w(Offline, 0, 0).is_retained());
    }

    #[test]
    fn deadline_saturates_and_seq_wraps() {
        assert_eq!(w(Active, 0, u64::MAX).deadline(), LivenessMs(MAX_DEADLINE_MS));
        assert_eq!(Seq::new((1 << SEQ_BITS) - 1).next(), Seq::new(0));
        assert_eq!(Seq::new(1 << SEQ_BITS), Seq::new(0));
    }

    #[test]
    fn raw_predicates() {
        for (s, active, retained) in [(Active, true, true), (Suspected, false, true), (Offline, false, false)] {
            let raw = w(s, 7, 99).raw();
            assert_eq!(Word::raw_is_active(raw), active, "{s:?}");
            assert_eq!(Word::raw_is_retained(raw), retained, "{s:?}");
            assert_eq!(w(s, 7, 99).state(), s);
            assert_eq!(Word::from_raw(raw).is_active(), active, "{s:?}");
            assert_eq!(Word::from_raw(raw).is_retained(), retained, "{s:?}");
        }
        // State 3 is never written; it fails closed everywhere: decoded, served and retained
        // as Offline.
        let three = Word::from_raw((3 << 62) | 99);
        assert_eq!(three.state(), Offline);
        assert!(!three.is_active() && !three.is_retained());
    }

    /// The state names are part of the event and diagnostic-query output (trace format).
    #[test]
    fn state_names_are_the_trace_formats() {
        for (s, name) in [(Active, "Active"), (Suspected, "Suspected"), (Offline, "Offline")] {
            assert_eq!(s.as_str(), name);
            assert_eq!(s.to_string(), name);
        }
    }

    /// A word's debug form (assertion messages, logs) shows the decoded fields, not raw bits.
    #[test]
    fn debug_shows_the_decoded_fields() {
        let shown = format!("{:?}", w(Suspected, 7, 99));
        assert_eq!(shown, "Word { state: Suspected, seq: 7, deadline_ms: 99 }");
    }

    /// Every (state, event) pair, before and at/after the deadline.
    #[test]
    fn decision_table() {
        let d = 50_000; // the word's deadline
        #[rustfmt::skip]
        let table: Vec<(Word, Event, u64, Decision)> = vec![
            // Active
            (w(Active, 3, d), Event::Signal, 45_000, c(w(Active, 3, 55_000), Change::Refreshed)),
            (w(Active, 3, d), Event::Signal, 30_000, c(w(Active, 3, d), Change::Refreshed)),
            (w(Active, 3, d), Event::Expire, d - 1, Decision::Wait { deadline: LivenessMs(d) }),
            (w(Active, 3, d), Event::Expire, d, c(w(Suspected, 4, d + 20_000), Change::Suspected)),
            (w(Active, 3, d), Event::Expire, d + 7, c(w(Suspected, 4, d + 7 + 20_000), Change::Suspected)),
            (w(Active, 3, d), Event::ExpireHoldingOffline, d, c(w(Suspected, 4, d + 20_000), Change::Suspected)),
            (w(Active, 3, d), Event::ExpireHoldingOffline, d - 1, Decision::Wait { deadline: LivenessMs(d) }),
            (w(Active, 3, d), Event::RenewSuspicion, d - 1, Decision::Wait { deadline: LivenessMs(d) }),
            (w(Active, 3, d), Event::RenewSuspicion, d, Decision::Wait { deadline: LivenessMs(d) }),
            // Suspected
            (w(Suspected, 4, d), Event::Signal, d - 1, c(w(Active, 5, d - 1 + 10_000), Change::Recovered)),
            (w(Suspected, 4, d), Event::Signal, d + 5, c(w(Active, 5, d + 5 + 10_000), Change::Recovered)),
            (w(Suspected, 4, d), Event::Expire, d - 1, Decision::Wait { deadline: LivenessMs(d) }),
            (w(Suspected, 4, d), Event::Expire, d, c(w(Offline, 5, d), Change::WentOffline)),
            (w(Suspected, 4, d), Event::ExpireHoldingOffline, d - 1, Decision::Wait { deadline: LivenessMs(d) }),
            (w(Suspected, 4, d), Event::ExpireHoldingOffline, d, Decision::Held),
            (w(Suspected, 4, d), Event::RenewSuspicion, d, c(w(Suspected, 5, d + 20_000), Change::SuspicionRenewed)),
            (w(Suspected, 4, d), Event::RenewSuspicion, d - 9, c(w(Suspected, 5, d - 9 + 20_000), Change::SuspicionRenewed)),
            // A renewal never shortens a window (a longer one started since the pause).
            (w(Suspected, 4, d + 30_000), Event::RenewSuspicion, d, Decision::Wait { deadline: LivenessMs(d + 30_000) }),
            (w(Suspected, 4, d + 20_000), Event::RenewSuspicion, d, Decision::Wait { deadline: LivenessMs(d + 20_000) }),
            // Offline
            (w(Offline, 5, d), Event::Signal, d, Decision::RefuseOffline),
            (w(Offline, 5, d), Event::Expire, d, Decision::Retire),
            (w(Offline, 5, d), Event::ExpireHoldingOffline, d, Decision::Retire),
            (w(Offline, 5, d), Event::RenewSuspicion, d, Decision::Retire),
            (w(Active, 3, d), Event::CommitOffline, d, Decision::Wait { deadline: LivenessMs(d) }),
            (w(Suspected, 4, d), Event::CommitOffline, d - 1, Decision::Wait { deadline: LivenessMs(d) }),
            (w(Suspected, 4, d), Event::CommitOffline, d, c(w(Offline, 5, d), Change::WentOffline)),
            (w(Offline, 5, d), Event::CommitOffline, d, Decision::Retire),
        ];
        for (cur, ev, now, want) in table {
            assert_eq!(decide(cur, ev, LivenessMs(now), TTLS), want, "{cur:?} {ev:?} at {now}");
        }
    }

    fn state() -> impl Strategy<Value = LivenessState> {
        prop_oneof![Just(Active), Just(Suspected), Just(Offline)]
    }

    fn event() -> impl Strategy<Value = Event> {
        prop_oneof![
            Just(Event::Signal),
            Just(Event::Expire),
            Just(Event::ExpireHoldingOffline),
            Just(Event::RenewSuspicion),
            Just(Event::CommitOffline)
        ]
    }

    proptest! {
        #[test]
        fn pack_unpack_round_trip(s in state(), seq in 0u32..(1 << SEQ_BITS), d in 0..=MAX_DEADLINE_MS) {
            let word = Word::pack(s, Seq::new(seq), LivenessMs(d));
            prop_assert_eq!(word.state(), s);
            prop_assert_eq!(word.seq(), Seq::new(seq));
            prop_assert_eq!(word.seq().get(), seq);
            prop_assert_eq!(word.deadline(), LivenessMs(d));
            prop_assert_eq!(Word::from_raw(word.raw()), word);
        }

        /// Invariants 1-3 on one record under random events and monotone time: only the allowed
        /// transitions, Offline is terminal, no suspicion before the active TTL since the last
        /// signal, no Offline before the suspicion TTL since the committed suspicion.
        #[test]
        fn random_events_keep_invariants_1_to_3(
            steps in proptest::collection::vec((event(), 0u64..15_000), 1..200),
            active in 1u64..20_000, suspicion in 1u64..20_000,
        ) {
            let ttls = Ttls { active_ms: active, suspicion_ms: suspicion };
            let mut now = 1_000u64;
            let mut word = Word::first(LivenessMs(now), active);
            let mut last_signal = now;
            let mut suspected_at = None;
            for (ev, dt) in steps {
                now += dt;
                let before = word.state();
                if let Decision::Commit { next, change } = decide(word, ev, LivenessMs(now), ttls) {
                    let after = next.state();
                    let allowed = matches!((before, after),
                        (Active, Active) | (Active, Suspected) | (Suspected, Active)
                        | (Suspected, Suspected) | (Suspected, Offline));
                    prop_assert!(allowed, "{:?} -> {:?} by {:?}", before, after, ev);
                    match change {
                        Change::Suspected => {
                            prop_assert!(now - last_signal >= active, "suspected {} ms after signal", now - last_signal);
                            suspected_at = Some(now);
                        }
                        Change::SuspicionRenewed => suspected_at = Some(now),
                        Change::WentOffline => {
                            let since = suspected_at.expect("offline without suspicion");
                            prop_assert!(now - since >= suspicion, "offline {} ms after suspicion", now - since);
                        }
                        Change::Refreshed | Change::Recovered => last_signal = now,
                    }
                    if before != after || change == Change::SuspicionRenewed {
                        prop_assert_ne!(next.seq(), word.seq());
                    }
                    word = next;
                } else if before == Offline {
                    prop_assert!(matches!(decide(word, ev, LivenessMs(now), ttls), Decision::RefuseOffline | Decision::Retire));
                }
            }
        }
    }
}
