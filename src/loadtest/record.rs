//! [`Record`]: the behaviour of upstream's `ClientLivenessRecord` (PR #2991's squash
//! `c19e7c52f`, `mooncake-store/include/client_liveness.h`), written from its code for the
//! `upstream-main` design. Cited lines are of that file at that commit.
//!
//! - `state()` is an acquire load, no lock (`client_liveness.h:56-58`).
//! - Every other operation holds the record's transition mutex for its whole duration:
//!   `ObserveAndRun` (`:86-107`: Offline rejects without running the operation; a failed
//!   operation withholds the observation; success stamps `now` and recovers a Suspected record),
//!   `RunUnlessOffline` (`:120-129`), `EvaluateAndRetire` (`:137-163`: Active → Suspected once
//!   `now − last ≥ active TTL`, stamping `suspected_since = now`; Suspected → Offline once
//!   `now − suspected_since ≥ suspicion TTL`, running the retire operation under the same mutex;
//!   never two steps in one call).
//! - `now` is always the caller's (upstream passes `Clock::now()` read by the caller), so a
//!   caller that read the clock before waiting for a lock judges with that earlier time.
//!
//! # Ground rules
//! - `state` is written only with the transition mutex held (release), read anywhere (acquire),
//!   as upstream's `state_`.
//! - `inner` is the transition mutex and the data it guards (`last_liveness_at_`,
//!   `suspected_since_`, and, standing in for the segment manager's per-client segment list,
//!   the segments the client mounted). glibc's `std::mutex` and Rust's `Mutex` are both
//!   non-fair futex mutexes.

use crate::sync::{AtomicU64, Mutex, MutexGuard, Ordering};
use std::time::{Duration, Instant};

/// `ClientLivenessState` (`client_liveness.h:11-15`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    /// Serving.
    Active,
    /// Missed the active TTL; recoverable.
    Suspected,
    /// Terminal.
    Offline,
}

impl State {
    fn from_u64(v: u64) -> Self {
        match v {
            0 => State::Active,
            1 => State::Suspected,
            _ => State::Offline,
        }
    }

    fn to_u64(self) -> u64 {
        match self {
            State::Active => 0,
            State::Suspected => 1,
            State::Offline => 2,
        }
    }
}

/// `ClientLivenessObservation` (`client_liveness.h:23-31`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Observation {
    /// Active, stamped.
    Refreshed,
    /// Suspected → Active.
    Recovered,
    /// Offline: nothing ran.
    RejectedOffline,
    /// The operation failed: nothing changed.
    Withheld,
}

/// `ClientLivenessTransition` (`client_liveness.h:17-21`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Transition {
    /// Nothing changed.
    None,
    /// Active → Suspected.
    BecameSuspected,
    /// Suspected → Offline (the retire operation ran).
    BecameOffline,
}

/// What the transition mutex guards.
#[derive(Debug)]
pub(super) struct Inner {
    last: Instant,
    suspected_since: Instant,
    /// The client's mounted segments (what upstream's retire operation asks the segment manager
    /// for, `master_service.cpp:11122-11126`).
    pub(super) segments: Vec<String>,
}

/// One client incarnation's record.
#[derive(Debug)]
pub(super) struct Record {
    /// Identity of this incarnation (upstream compares `shared_ptr`s).
    pub(super) serial: u64,
    state: AtomicU64,
    inner: Mutex<Inner>,
}

impl Record {
    /// A fresh Active record observed at `now` (`client_liveness.h:38-39`).
    pub(super) fn new(serial: u64, now: Instant) -> Self {
        Self {
            serial,
            state: AtomicU64::new(State::Active.to_u64()),
            inner: Mutex::new(Inner {
                last: now,
                suspected_since: now,
                segments: Vec::new(),
            }),
        }
    }

    /// `state()`: no lock.
    pub(super) fn state(&self) -> State {
        State::from_u64(self.state.load(Ordering::Acquire))
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, s: State) {
        self.state.store(s.to_u64(), Ordering::Release);
    }

    /// `Observe(now)` (`:77-79`): `ObserveAndRun` with an operation that succeeds.
    pub(super) fn observe(&self, now: Instant) -> Observation {
        self.observe_and_run(now, |_| true)
    }

    /// `ObserveAndRun(now, op)` (`:86-107`): `op` runs under the transition mutex.
    pub(super) fn observe_and_run(&self, now: Instant, op: impl FnOnce(&mut Inner) -> bool) -> Observation {
        let mut g = self.lock();
        let current = self.state();
        if current == State::Offline {
            return Observation::RejectedOffline;
        }
        if !op(&mut g) {
            return Observation::Withheld;
        }
        g.last = now;
        if current == State::Suspected {
            self.set(State::Active);
            return Observation::Recovered;
        }
        Observation::Refreshed
    }

    /// `RunUnlessOffline(op)` (`:120-129`).
    pub(super) fn run_unless_offline(&self, op: impl FnOnce(&mut Inner)) -> bool {
        let mut g = self.lock();
        if self.state() == State::Offline {
            return false;
        }
        op(&mut g);
        true
    }

    /// `EvaluateAndRetire(now, active, suspicion, retire)` (`:137-163`); `Evaluate` is this
    /// with a retire operation that does nothing (`:131-135`).
    pub(super) fn evaluate_and_retire(
        &self,
        now: Instant,
        active: Duration,
        suspicion: Duration,
        retire: impl FnOnce(&mut Inner),
    ) -> Transition {
        let mut g = self.lock();
        match self.state() {
            State::Active if now.saturating_duration_since(g.last) >= active => {
                g.suspected_since = now;
                self.set(State::Suspected);
                Transition::BecameSuspected
            }
            State::Suspected if now.saturating_duration_since(g.suspected_since) >= suspicion => {
                self.set(State::Offline);
                retire(&mut g);
                Transition::BecameOffline
            }
            _ => Transition::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_moves_one_step_per_evaluation_and_a_signal_recovers_it() {
        let t0 = Instant::now();
        let (a, s) = (Duration::from_millis(10), Duration::from_millis(20));
        let r = Record::new(1, t0);
        let none = |_: &mut Inner| {};
        assert_eq!(r.evaluate_and_retire(t0 + a / 2, a, s, none), Transition::None);
        assert_eq!(r.evaluate_and_retire(t0 + a, a, s, none), Transition::BecameSuspected);
        // The suspicion window counts from the evaluation's `now`, not from `last + active`.
        assert_eq!(r.evaluate_and_retire(t0 + a + s / 2, a, s, none), Transition::None);
        assert_eq!(r.observe(t0 + a + s / 2), Observation::Recovered);
        assert_eq!(r.state(), State::Active);
        let t1 = t0 + a + s / 2;
        assert_eq!(r.evaluate_and_retire(t1 + a, a, s, none), Transition::BecameSuspected);
        let mut retired = false;
        assert_eq!(
            r.evaluate_and_retire(t1 + a + s, a, s, |_| retired = true),
            Transition::BecameOffline
        );
        assert!(retired);
        assert_eq!(r.observe(t1 + a + s), Observation::RejectedOffline);
        assert!(!r.run_unless_offline(|_| unreachable!("ran on an Offline record")));
    }

    #[test]
    fn a_failed_operation_withholds_the_observation() {
        let t0 = Instant::now();
        let a = Duration::from_millis(10);
        let r = Record::new(1, t0);
        assert_eq!(r.observe_and_run(t0 + a, |_| false), Observation::Withheld);
        assert_eq!(
            r.evaluate_and_retire(t0 + a, a, a, |_| {}),
            Transition::BecameSuspected,
            "the withheld observation did not refresh"
        );
    }
}
