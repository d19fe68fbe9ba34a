//! The journal: the master's event log and counters, the lock-free side every path (Ping
//! included) writes to. Every event goes to the event log, the `metrics` facade and the
//! counters behind [`Stats`], whichever thread produced it (a tick, a request, an offboarding
//! worker, Ping).
//!
//! Owns: the event log ([`EventLog`](super::super::event_log)) and the counters; no lock.
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

use super::super::event_log::EventLog;
use super::super::MasterEvent;
use crate::liveness::{Cause, Liveness};
use crate::offboarding::Step;
use crate::sync::{AtomicU64, Ordering};
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
