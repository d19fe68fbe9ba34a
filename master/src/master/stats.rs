//! The master's counters: every event goes to the event log, the `metrics` facade and
//! [`Stats`], whichever thread produced it (a tick, a request, an offboarding worker, Ping).
//!
//! Ground rules (issue 29: Ping takes no lock on any outcome):
//! - Every counter is an atomic, bumped with one `fetch_add`; [`MasterCore::record`] takes no
//!   lock, and the event log it appends to is lock-free ([`EventLog`](super::event_log)).
//! - Ping's recoveries do not go through the `metrics` facade on Ping's thread: a recorder is
//!   the embedder's code and may lock (a Prometheus registry registering a series does). They
//!   are counted here and in the liveness core, and published as absolute counter values at
//!   every tick ([`MasterCore::publish_gauges`]); every other event reaches the facade where it
//!   happens.
//! - Orderings are `Relaxed` except for the two counters [`Master::stats`] subtracts: a
//!   job's completion is counted `Release` after its Offline commit was counted, and `stats`
//!   loads completions `Acquire` before commits, so it never sees a completion without its
//!   commit (Offline is never "−1").

use super::{Master, MasterCore, MasterEvent};
use crate::liveness::Cause;
use crate::offboarding::{ClientOffboardingJob, Completed, Step};
use crate::sync::{AtomicU64, Ordering};
use crate::telemetry::{self, Stats};
use crate::LivenessEvent;

/// The master's counters (see the module doc).
#[derive(Debug, Default)]
pub(super) struct Counters {
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

impl Master {
    /// An embedder's executor (the `Outbox` driver: [`Master::take_jobs`]) reports one
    /// attempt it ran: a completion becomes the `offboarded` event, a failure the
    /// `offboarding_retry` event (its step and attempt), each at the clock's now and counted in
    /// [`Stats`], exactly as when the master runs the job itself. Without it the master never
    /// hears of a job completed elsewhere, and [`Master::stats`] counts it Offline and
    /// pending for ever.
    pub fn report_offboarding(&self, attempt: Result<&Completed, &ClientOffboardingJob>) {
        self.core.report_offboarding(attempt)
    }

    /// The liveness and offboarding counters now, in either offboarding mode: Offline counts
    /// every incarnation whose job has not completed (inline, parked, queued, on a worker or
    /// waiting for a retry); recoveries include those of the lock-free Ping path
    /// ([`Master::liveness_handle`]). Takes no lock.
    pub fn stats(&self) -> Stats {
        self.core.stats()
    }
}

impl MasterCore {
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

    /// A failed attempt counted without an event (the workers' executor schedules its own
    /// retries and reports each through `SharedSteps::on_retry`).
    #[cfg_attr(loom, allow(dead_code))] // no worker pool under loom
    pub(super) fn count_step_failure(&self, step: Step) {
        bump(&self.counters.step_failures[step as usize], 1);
    }

    /// The work behind [`Master::report_offboarding`].
    pub(crate) fn report_offboarding(&self, attempt: Result<&Completed, &ClientOffboardingJob>) {
        let at_ms = self.live.clock().base().now_ms();
        if let Err(job) = attempt {
            // No schedule of ours parked it: count the metric `Schedule::retry` would have.
            telemetry::step_failed(job.last_error().map_or(Step::Metadata, |e| e.step));
        }
        self.record(match attempt {
            Ok(done) => MasterEvent::Offboarded {
                client: done.client,
                incarnation: done.incarnation,
                attempts: done.attempts,
                at_ms,
            },
            Err(job) => MasterEvent::OffboardingRetry {
                client: job.client(),
                incarnation: job.incarnation(),
                step: job.last_error().map_or(Step::Metadata, |e| e.step),
                attempt: job.attempts(),
                at_ms,
            },
        });
    }

    pub(super) fn note_restored_offline(&self, n: u64) {
        self.counters.restored_offline.fetch_add(n, Ordering::Relaxed);
    }

    /// The work behind [`Master::stats`].
    pub(crate) fn stats(&self) -> Stats {
        let c = &self.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let jobs_completed = c.jobs_completed.load(Ordering::Acquire);
        let minted = load(&c.offline_commits) + load(&c.restored_offline);
        let offline = minted.saturating_sub(jobs_completed) as usize;
        let registered = self.live.registry().len();
        let suspected = self.live.suspected_count();
        Stats {
            active: registered.saturating_sub(suspected + offline),
            suspected,
            offline,
            suspicions: load(&c.suspicions),
            recoveries: self.live.recoveries_total(),
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

    /// Publishes the gauges, and the counters the lock-free paths keep to themselves (Ping's
    /// recoveries, dropped events), as absolute values. Called at every tick.
    pub(super) fn publish_gauges(&self) {
        let s = self.stats();
        telemetry::clients(s.active, s.suspected, s.offline);
        telemetry::ping_recoveries(self.counters.recovered_by_ping.load(Ordering::Relaxed));
        telemetry::recovered_false_positives(s.recoveries);
        telemetry::events_dropped(s.events_dropped);
        let now = self.live.clock().base().now_ms();
        telemetry::pending_jobs(s.jobs_pending, self.oldest_pending_age(now));
        // Also here, not only at submit: the gauge falls back as the workers take jobs.
        telemetry::queue_depth(self.worker_queue_depth());
    }
}
