//! The journal: the master's event log and counters, the lock-free side every path (Ping
//! included) writes to. Every event goes to the event log, the `metrics` facade and the
//! counters behind [`Stats`], whichever thread produced it (a tick, a request, an offboarding
//! worker, Ping).
//!
//! Owns: the event log ([`EventLog`], below) and the counters; no lock.
//! May not touch: any other room (it is handed the liveness core to read when it sums
//! [`Stats`]).
//!
//! Ground rules (issue 29: Ping takes no lock on any outcome):
//! - Every counter is an atomic, bumped with one `fetch_add`; [`Journal::record`] takes no
//!   lock, and the event log it appends to is lock-free.
//! - Ping's recoveries do not go through the `metrics` facade on Ping's thread: a recorder is
//!   the embedder's code and may lock (a Prometheus registry registering a series does). They
//!   are counted here and in the liveness core, and published as absolute counter values at
//!   every tick (the master's `publish_gauges`, through [`Journal::recovered_by_ping`]); every
//!   other event reaches the facade where it happens.
//! - Orderings are `Relaxed` except for the two counters [`Journal::stats`] subtracts: a
//!   job's completion is counted `Release` after its Offline commit was counted, and `stats`
//!   loads completions `Acquire` before commits, so it never sees a completion without its
//!   commit (Offline is never "−1").
//!
//! ## The event log
//! A bounded, lock-free queue of [`MasterEvent`]s that
//! [`Master::take_events`](super::super::Master::take_events) drains.
//!
//! Why bounded and lock-free (issue 29): every path records events — the monitor's tick, the
//! offboarding workers, mounts and Ping's recoveries. Ping must wait for nothing (a partition
//! healing is thousands of recoveries at once), so the log takes no lock; and an embedder that
//! never drains it must not grow the master without bound, so it keeps at most `capacity`
//! events and drops the *oldest* beyond that, counting each drop ([`EventLog::dropped`], exported
//! as `mooncake_liveness_events_dropped_total` and in [`Stats`](crate::telemetry::Stats)). We chose
//! a bounded log over a subscriber callback: a callback would run the embedder's code on Ping's
//! path, which could block it. An embedder that needs every event drains at least every
//! `capacity` events (replay and simulate drain after every operation and tick).
//!
//! Ground rules of the event log:
//! - The store is crossbeam's lock-free `SegQueue` (FIFO; memory grows by blocks as used, so a
//!   large bound costs nothing until it is reached). `len` counts what was pushed and not yet
//!   popped; it is an estimate while pushes and pops race, and only decides when to drop.
//! - `push` pushes first, then increments `len`; if the count it replaced was at or past the
//!   bound, it pops one event (the oldest) and counts it dropped. Concurrent pushes at the
//!   bound may each drop one, so the log may briefly hold `capacity` plus the number of
//!   pushing threads; nothing is ever lost without being counted.
//! - Orderings are `Relaxed`: `len` and `dropped` are statistics; the queue itself orders its
//!   events (its own pushes and pops synchronize), and events from one thread stay in order.
//! - Under loom the queue is `sync`'s modelled stand-in, like the offboarding queue's.

use super::super::MasterEvent;
use crate::liveness::{Cause, Liveness, Transition};
use crate::offboarding::Step;
use crate::sync::{AtomicU64, AtomicUsize, Ordering, SegQueue};
use crate::telemetry::{self, Stats};
use crate::LivenessEvent;

/// The master's event log and counters (see the module doc).
#[derive(Debug)]
pub(crate) struct Journal {
    events: EventLog,
    counters: Counters,
}

/// The master's counters.
#[derive(Debug, Default)]
struct Counters {
    suspicions: AtomicU64,
    offline_commits: AtomicU64,
    stalls: AtomicU64,
    stall_ms: AtomicU64,
    brake_engagements: AtomicU64,
    jobs_completed: AtomicU64,
    step_failures: [AtomicU64; 5],
    /// Recoveries committed by Ping through the master (published at each tick).
    recovered_by_ping: AtomicU64,
    /// Incarnations restored Offline (their jobs re-minted by a restore, not by a commit).
    restored_offline: AtomicU64,
}

fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

impl Journal {
    /// An empty journal whose event log keeps at most `capacity` events.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            events: EventLog::new(capacity),
            counters: Counters::default(),
        }
    }

    /// Records an event: the event log, the counters and (but for Ping's recoveries, see the
    /// module doc) the `metrics` facade. Takes no lock.
    pub(crate) fn record(&self, ev: MasterEvent) {
        let c = &self.counters;
        match &ev {
            MasterEvent::Liveness(LivenessEvent::Transition(t)) => {
                match telemetry::Counted::of(t) {
                    telemetry::Counted::Suspicion => bump(&c.suspicions, 1),
                    telemetry::Counted::OfflineCommit => bump(&c.offline_commits, 1),
                    telemetry::Counted::Other => {}
                }
                if t.cause == Cause::RecoveredByPing {
                    bump(&c.recovered_by_ping, 1);
                } else {
                    telemetry::transition(t);
                }
            }
            MasterEvent::Liveness(LivenessEvent::StallDetected { ms, .. }) => {
                telemetry::stall(*ms);
                bump(&c.stalls, 1);
                bump(&c.stall_ms, *ms);
            }
            MasterEvent::Liveness(LivenessEvent::MassSuspicionBrake { engaged: true, .. }) => {
                telemetry::brake_engaged("mass_suspicion");
                bump(&c.brake_engagements, 1);
            }
            MasterEvent::Liveness(LivenessEvent::MassSuspicionBrake { .. }) => {}
            // The metric is counted where the retry is scheduled (`Schedule::retry`), or by
            // `report_offboarding` for an attempt run outside the master.
            MasterEvent::OffboardingRetry { step, .. } => bump(&c.step_failures[*step as usize], 1),
            MasterEvent::Offboarded { .. } => {
                c.jobs_completed.fetch_add(1, Ordering::Release);
            }
        }
        self.events.push(ev);
    }

    /// Records a committed liveness transition, if there is one (Ping's recovery, a mount's,
    /// the monitor's commits). Takes no lock.
    pub(crate) fn record_transition(&self, t: Option<Transition>) {
        if let Some(t) = t {
            self.record(MasterEvent::Liveness(LivenessEvent::Transition(t)));
        }
    }

    /// Takes the events recorded since the last call, in the order they happened.
    pub(crate) fn take(&self) -> Vec<MasterEvent> {
        self.events.take()
    }

    /// A failed attempt counted without an event (the workers' executor schedules its own
    /// retries and reports each through `SharedSteps::on_retry`).
    #[cfg_attr(loom, allow(dead_code))] // no worker pool under loom
    pub(crate) fn count_step_failure(&self, step: Step) {
        bump(&self.counters.step_failures[step as usize], 1);
    }

    /// `n` incarnations restored Offline (their jobs re-minted by a restore).
    pub(crate) fn note_restored_offline(&self, n: u64) {
        self.counters.restored_offline.fetch_add(n, Ordering::Relaxed);
    }

    /// Recoveries committed by Ping through the master so far.
    pub(crate) fn recovered_by_ping(&self) -> u64 {
        self.counters.recovered_by_ping.load(Ordering::Relaxed)
    }

    /// The liveness and offboarding counters now, with the client counts read from `live`.
    /// Takes no lock.
    pub(crate) fn stats(&self, live: &Liveness) -> Stats {
        let c = &self.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let jobs_completed = c.jobs_completed.load(Ordering::Acquire);
        let minted = load(&c.offline_commits) + load(&c.restored_offline);
        let offline = minted.saturating_sub(jobs_completed) as usize;
        let registered = live.registry().len();
        let suspected = live.suspected_count();
        Stats {
            active: registered.saturating_sub(suspected + offline),
            suspected,
            offline,
            suspicions: load(&c.suspicions),
            recoveries: live.recoveries_total(),
            offline_commits: load(&c.offline_commits),
            stalls: load(&c.stalls),
            stall_ms: load(&c.stall_ms),
            brake_engagements: load(&c.brake_engagements),
            jobs_completed,
            step_failures: std::array::from_fn(|i| load(&c.step_failures[i])),
            jobs_pending: offline,
            events_dropped: self.events.dropped(),
        }
    }
}

/// Default bound of the event log, in events (a few MB at most).
pub const DEFAULT_EVENT_LOG_CAPACITY: usize = 65_536;

/// A bounded multi-producer queue of events; see the module doc.
#[derive(Debug)]
struct EventLog {
    queue: SegQueue<MasterEvent>,
    len: AtomicUsize,
    capacity: usize,
    dropped: AtomicU64,
}

impl EventLog {
    /// A log keeping at most `capacity` events (at least 1).
    fn new(capacity: usize) -> Self {
        Self {
            queue: SegQueue::new(),
            len: AtomicUsize::new(0),
            capacity: capacity.max(1),
            dropped: AtomicU64::new(0),
        }
    }

    /// Appends `ev`; beyond the bound the oldest event is dropped and counted. Lock-free.
    fn push(&self, ev: MasterEvent) {
        self.queue.push(ev);
        if self.len.fetch_add(1, Ordering::Relaxed) >= self.capacity && self.queue.pop().is_some() {
            self.len.fetch_sub(1, Ordering::Relaxed);
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Takes every event logged so far, oldest first.
    fn take(&self) -> Vec<MasterEvent> {
        let mut out = Vec::new();
        while let Some(ev) = self.queue.pop() {
            self.len.fetch_sub(1, Ordering::Relaxed);
            out.push(ev);
        }
        out
    }

    /// Events dropped so far because the log was full.
    fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn stall(ms: u64) -> MasterEvent {
        MasterEvent::Liveness(LivenessEvent::StallDetected { at_ms: ms, ms })
    }

    #[test]
    fn keeps_order_and_drops_the_oldest_beyond_the_bound() {
        let log = EventLog::new(3);
        for ms in 1..=5 {
            log.push(stall(ms));
        }
        assert_eq!(log.dropped(), 2);
        assert_eq!(log.take(), vec![stall(3), stall(4), stall(5)]);
        assert!(log.take().is_empty());
        log.push(stall(6));
        assert_eq!((log.take(), log.dropped()), (vec![stall(6)], 2));
    }

    #[test]
    fn concurrent_pushes_lose_nothing_uncounted() {
        let log = EventLog::new(1_000);
        crate::sync::thread::scope(|s| {
            for t in 0..4u64 {
                let log = &log;
                s.spawn(move || (0..2_000).for_each(|i| log.push(stall(t * 10_000 + i))));
            }
        });
        let kept = log.take();
        assert_eq!(kept.len() as u64 + log.dropped(), 8_000);
        assert!(kept.len() <= 1_000 + 4, "{} kept", kept.len());
        // Each thread's events stay in its order.
        for t in 0..4u64 {
            let mine: Vec<u64> = kept
                .iter()
                .filter_map(|e| match e {
                    MasterEvent::Liveness(LivenessEvent::StallDetected { ms, .. }) if ms / 10_000 == t => Some(*ms),
                    _ => None,
                })
                .collect();
            assert!(mine.windows(2).all(|w| w[0] < w[1]), "thread {t} out of order");
        }
    }
}
