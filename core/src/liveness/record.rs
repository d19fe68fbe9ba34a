//! `ClientLivenessRecord`: one incarnation's liveness word, readiness flag and identity.
//!
//! # Ground rules
//!
//! - **Who writes `word`.** Signal paths (Ping, a successful mount) and the monitor, only ever by
//!   compare-and-swap of a word computed by [`decide`] from the word they read. No path stores
//!   blindly, so every write is decided on the latest value in the word's modification order.
//! - **Which race each CAS settles.** (a) A signal against the Active → Suspected commit: the
//!   signal moves the deadline, so the monitor's CAS (prepared against the old deadline) fails
//!   and the monitor re-reads and re-arms. (b) A signal against the Suspected → Offline commit
//!   (invariant 7): exactly one of the two CASes succeeds on the same Suspected word; the loser
//!   re-reads and sees Active (the monitor waits) or Offline (the signal is refused). `seq`
//!   makes a stale Suspected word differ from a later one (ABA).
//! - **Orderings.** Every CAS is `AcqRel`/`Acquire`: the Offline commit *releases* everything the
//!   monitor did before it and the offboarding job that follows *acquires* through the same
//!   word; a signal's CAS acquires the Offline commit it loses to. The serving check is one
//!   `Acquire` load: a reader that sees Active also sees everything published before the last
//!   recovery. Readers never need a total order across records, so no `SeqCst`.
//! - **`ready`** (remount readiness) is an independent axis (invariant 8): written by the
//!   master's ReMount path (`Release`), read by Ping (`Acquire`); it never decides serving.
//! - **Identity** (`client`, `incarnation`) is immutable. Resources keep a count of the record
//!   that created them, so a later incarnation is a different record and can never make them
//!   serve again (invariant 13).
//!
//! **Placement.** The word is not in the record: it lives in the word slab (`slab.rs`), eight
//! words to a cache line, and the record holds a reference to its slot (freed by the record's
//! `Drop`). Resources hold an [`Owner`](super::Owner), which reads the slot directly, so a
//! router's serving checks over many owners touch one line per eight owners instead of one line
//! per owner wherever the allocator put the records (that spread made `eligibility/word`
//! 1.2–2.0× its floor from run to run; BENCHMARKS.md, issue 18). Signal paths and the monitor
//! reach the word through the record (its line, then the slot's): one more dependent load, which
//! the monitor hides by prefetching both (`monitor/lookahead.rs`). The record itself is 48 bytes
//! (align 16), so with `Arc`'s counters its allocation is one 64-byte line.

use super::slab::{self, WordRef};
use super::word::{decide, Change, Decision, Event, LivenessState, Ttls, Word};
use super::{ClientId, Incarnation};
use crate::clock::LivenessMs;
use crate::sync::{AtomicBool, Backoff, Ordering};
use std::fmt;

/// The liveness record of one client incarnation (48 bytes: with `Arc`'s counters, one line;
/// its word lives in the word slab).
pub struct ClientLivenessRecord {
    word: WordRef,
    ready: AtomicBool,
    client: ClientId,
    incarnation: Incarnation,
}

/// Result of applying an event to a record.
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    /// The CAS installed `to` over `from`.
    Committed {
        /// The word replaced.
        from: Word,
        /// The word installed.
        to: Word,
        /// Why.
        change: Change,
    },
    /// Nothing due; re-arm by the word's deadline.
    Wait {
        /// The word the decision was made on.
        word: Word,
    },
    /// Offline is due but held by the mass-suspicion brake.
    Held,
    /// The incarnation is Offline: a signal is refused / the monitor entry retires.
    Offline,
}

/// What the monitor (or `prepare_client_offboarding`, or the brake's release) learns from
/// applying its event to a record.
#[derive(Debug)]
pub(crate) enum Evaluation {
    /// Not due; re-arm by this word's deadline.
    Wait {
        /// The word the decision was made on.
        word: Word,
    },
    /// This call committed Active → Suspected; re-arm at `to`'s deadline.
    Suspected {
        /// The Active word replaced.
        from: Word,
        /// The Suspected word installed.
        to: Word,
    },
    /// This call gave a Suspected word a fresh suspicion window (the mass-suspicion brake
    /// released); re-arm at `to`'s deadline.
    Renewed {
        /// The Suspected word replaced.
        from: Word,
        /// The Suspected word installed, with the new window.
        to: Word,
    },
    /// This call won the Suspected → Offline commit; `proof` mints the incarnation's one job.
    Offline {
        /// The Suspected word replaced.
        from: Word,
        /// The Offline word installed.
        to: Word,
        /// The proof of the commit.
        proof: OfflineCommitted,
    },
    /// Offline is held by the brake.
    Held,
    /// Already Offline (committed by someone else, or earlier): drop the entry.
    Retired,
}

/// Proof that the holder won the Suspected → Offline CAS of one record. Only
/// [`ClientLivenessRecord::evaluate`] can make one, and minting an offboarding job consumes it:
/// this is how "exactly one job per incarnation" (invariant 15) is enforced by the type system.
#[derive(Debug)]
pub(crate) struct OfflineCommitted(());

impl ClientLivenessRecord {
    /// A new Active, not-ready incarnation whose first signal is at `now`.
    #[doc(hidden)] // the reference master's unit tests build a record directly; not public API
    pub fn new(client: ClientId, incarnation: Incarnation, now: LivenessMs, active_ttl_ms: u64) -> Self {
        Self::with_word(client, incarnation, Word::first(now, active_ttl_ms))
    }

    /// A record starting from an arbitrary word (tests, models, restore).
    pub(crate) fn with_word(client: ClientId, incarnation: Incarnation, word: Word) -> Self {
        Self {
            word: slab::alloc(word),
            ready: AtomicBool::new(false),
            client,
            incarnation,
        }
    }

    /// The client id.
    pub fn client(&self) -> ClientId {
        self.client
    }

    /// This incarnation's number (1 for a client's first incarnation).
    pub fn incarnation(&self) -> Incarnation {
        self.incarnation
    }

    /// A reference to the word's slot, for an [`Owner`](super::Owner) (which also holds a strong
    /// count of this record, so the slot outlives it) and for `Owner::is`.
    pub(super) fn word_ref(&self) -> WordRef {
        slab::share(&self.word)
    }

    /// Starts loading the word's cache line (a hint; see [`crate::sync::prefetch`]). Reads the
    /// slot's address from this record's line, so prefetch the record first
    /// ([`Self::prefetch_record`]) when that line may be cold.
    #[inline(always)]
    pub(crate) fn prefetch(&self) {
        crate::sync::prefetch(slab::slot(&self.word));
    }

    /// Starts loading this record's own cache line (a hint).
    #[inline(always)]
    pub(crate) fn prefetch_record(&self) {
        crate::sync::prefetch(self);
    }

    /// The current word (one `Acquire` load).
    pub fn word(&self) -> Word {
        self.word.load(Ordering::Acquire)
    }

    /// The current state.
    pub fn state(&self) -> LivenessState {
        self.word().state()
    }

    /// May this incarnation's resources serve new work? One `Acquire` load and a compare.
    #[inline]
    pub fn is_serving(&self) -> bool {
        self.word.load(Ordering::Acquire).is_active()
    }

    /// Must this incarnation's resources be kept? One `Acquire` load and a compare.
    #[inline]
    pub fn should_retain(&self) -> bool {
        self.word.load(Ordering::Acquire).is_retained()
    }

    /// Remount readiness (the client finished ReMount in this incarnation).
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Sets remount readiness; never changes liveness.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Release);
    }

    /// Applies `ev` at `now` by CAS until the decision is settled on the latest word.
    pub(crate) fn apply(&self, ev: Event, now: LivenessMs, ttls: Ttls) -> Applied {
        self.apply_at(ev, || now, ttls)
    }

    /// Applies `ev` by CAS, reading the time with `now` *after* each load of the word.
    ///
    /// Signals use this: a signal whose time was read before the monitor committed Suspected
    /// at tick τ could otherwise recover with a deadline earlier than τ + active TTL, which is
    /// the earliest the monitor re-arms a Suspected entry for (`monitor::wake`). Reading the
    /// time after the load that saw the commit (Acquire; the monitor read its own time before
    /// its CAS) gives a time ≥ τ. Found by the `stale_ping_time_vs_suspect_rearm` loom model.
    pub(crate) fn apply_at(&self, ev: Event, now: impl Fn() -> LivenessMs, ttls: Ttls) -> Applied {
        let backoff = Backoff::new();
        let mut word = self.word.load(Ordering::Acquire);
        loop {
            let (next, change) = match decide(word, ev, now(), ttls) {
                Decision::Commit { next, change } => (next, change),
                Decision::Wait { .. } => return Applied::Wait { word },
                Decision::Held => return Applied::Held,
                Decision::RefuseOffline | Decision::Retire => return Applied::Offline,
            };
            // AcqRel: publish what this thread did before the transition; acquire the
            // transition we may have raced (see the ground rules).
            match self
                .word
                .compare_exchange_weak(word, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    return Applied::Committed {
                        from: word,
                        to: next,
                        change,
                    }
                }
                Err(actual) => {
                    word = actual;
                    backoff.spin();
                }
            }
        }
    }

    /// A liveness signal at `now`: refreshes Active, recovers Suspected, refused if Offline.
    pub(crate) fn signal(&self, now: LivenessMs, ttls: Ttls) -> Applied {
        self.apply(Event::Signal, now, ttls)
    }

    /// A liveness signal timed by `now`, read after each load of the word (see [`Self::apply_at`]).
    pub(crate) fn signal_at(&self, now: impl Fn() -> LivenessMs, ttls: Ttls) -> Applied {
        self.apply_at(Event::Signal, now, ttls)
    }

    /// The monitor's evaluation at a tick.
    pub(crate) fn evaluate(&self, now: LivenessMs, ttls: Ttls, hold_offline: bool) -> Evaluation {
        let ev = if hold_offline {
            Event::ExpireHoldingOffline
        } else {
            Event::Expire
        };
        self.evaluation_of(self.apply(ev, now, ttls))
    }

    /// Commits Suspected → Offline if the suspicion deadline has passed; never suspects an
    /// Active record (`prepare_client_offboarding`).
    pub(crate) fn commit_offline(&self, now: LivenessMs, ttls: Ttls) -> Evaluation {
        self.evaluation_of(self.apply(Event::CommitOffline, now, ttls))
    }

    /// Gives a Suspected record a fresh suspicion window from `now` (the mass-suspicion brake
    /// released); an Active record is only re-read.
    pub(crate) fn renew_suspicion(&self, now: LivenessMs, ttls: Ttls) -> Evaluation {
        self.evaluation_of(self.apply(Event::RenewSuspicion, now, ttls))
    }

    fn evaluation_of(&self, applied: Applied) -> Evaluation {
        match applied {
            Applied::Committed { from, to, change } => match change {
                Change::WentOffline => Evaluation::Offline {
                    from,
                    to,
                    proof: OfflineCommitted(()),
                },
                Change::Suspected => Evaluation::Suspected { from, to },
                Change::SuspicionRenewed => Evaluation::Renewed { from, to },
                // Only a signal refreshes or recovers, and no signal is evaluated here.
                Change::Refreshed | Change::Recovered => {
                    debug_assert!(false, "a monitor event committed a signal's change {change:?}");
                    Evaluation::Wait { word: to }
                }
            },
            Applied::Wait { word } => Evaluation::Wait { word },
            Applied::Held => Evaluation::Held,
            Applied::Offline => Evaluation::Retired,
        }
    }
}

impl Drop for ClientLivenessRecord {
    /// The last reference is gone (every `Owner` holds a strong count of the record): the slot is free.
    fn drop(&mut self) {
        slab::release(&self.word);
    }
}

impl fmt::Debug for ClientLivenessRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientLivenessRecord")
            .field("client", &self.client)
            .field("incarnation", &self.incarnation)
            .field("word", &self.word())
            .field("ready", &self.is_ready())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::liveness::word::Seq;

    const TTLS: Ttls = Ttls {
        active_ms: 10_000,
        suspicion_ms: 20_000,
    };

    fn rec() -> ClientLivenessRecord {
        ClientLivenessRecord::new(ClientId(7), Incarnation(1), LivenessMs(0), TTLS.active_ms)
    }

    #[test]
    fn record_in_its_arc_is_one_cache_line() {
        // `Arc`'s allocation: strong and weak counts, then the record (module doc, "Placement").
        assert_eq!(std::mem::size_of::<ClientLivenessRecord>(), 48);
        assert_eq!(
            2 * std::mem::size_of::<usize>() + std::mem::size_of::<ClientLivenessRecord>(),
            64
        );
        assert!(std::mem::align_of::<ClientLivenessRecord>() <= 16);
    }

    /// The debug form (logs, assertion messages) names the incarnation and its decoded word.
    #[test]
    fn debug_names_the_incarnation_and_its_word() {
        let shown = format!("{:?}", rec());
        assert!(
            shown.starts_with("ClientLivenessRecord { client: ClientId(7), incarnation: Incarnation(1)"),
            "{shown}"
        );
        assert!(
            shown.contains("state: Active")
                && shown.contains("deadline_ms: 10000")
                && shown.ends_with("ready: false }"),
            "{shown}"
        );
    }

    #[test]
    fn new_record_is_active_not_ready() {
        let r = rec();
        assert!(r.is_serving() && r.should_retain() && !r.is_ready());
        assert_eq!(
            r.word(),
            Word::pack(LivenessState::Active, Seq::default(), LivenessMs(10_000))
        );
    }

    #[test]
    fn full_lifecycle_and_terminal_offline() {
        let r = rec();
        assert!(
            matches!(r.evaluate(LivenessMs(9_999), TTLS, false), Evaluation::Wait { word } if word.deadline() == LivenessMs(10_000))
        );
        assert!(matches!(
            r.evaluate(LivenessMs(10_000), TTLS, false),
            Evaluation::Suspected { .. }
        ));
        assert!(!r.is_serving() && r.should_retain());
        assert!(
            matches!(r.evaluate(LivenessMs(29_999), TTLS, false), Evaluation::Wait { word } if word.deadline() == LivenessMs(30_000))
        );
        assert!(matches!(r.evaluate(LivenessMs(30_000), TTLS, true), Evaluation::Held));
        assert!(matches!(
            r.evaluate(LivenessMs(30_000), TTLS, false),
            Evaluation::Offline { .. }
        ));
        assert!(!r.should_retain());
        assert_eq!(r.signal(LivenessMs(30_001), TTLS), Applied::Offline);
        assert!(matches!(
            r.evaluate(LivenessMs(40_000), TTLS, false),
            Evaluation::Retired
        ));
    }

    #[test]
    fn signal_recovers_suspected() {
        let r = rec();
        r.evaluate(LivenessMs(10_000), TTLS, false);
        let applied = r.signal(LivenessMs(12_000), TTLS);
        assert!(matches!(
            applied,
            Applied::Committed {
                change: Change::Recovered,
                ..
            }
        ));
        assert!(r.is_serving());
        assert_eq!(r.word().deadline(), LivenessMs(22_000));
    }

    #[test]
    fn readiness_is_independent_of_liveness() {
        let r = rec();
        r.set_ready(true);
        r.evaluate(LivenessMs(10_000), TTLS, false);
        assert!(r.is_ready() && !r.is_serving());
        r.set_ready(false);
        r.signal(LivenessMs(11_000), TTLS);
        assert!(!r.is_ready() && r.is_serving());
    }
}
