//! The master's event log and counters: every event goes to the log, the `metrics` facade and
//! [`Stats`], whichever thread produced it (a tick, a request, an offboarding worker).

use super::{lock, MasterCore, MasterEvent};
use crate::offboarding::{ClientOffboardingJob, Completed, Step};
use crate::telemetry::{self, Stats};

/// Counters behind the `stats` leaf mutex.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) stats: Stats,
    /// Incarnations restored Offline (their jobs re-minted by a restore, not by a commit).
    pub(super) restored_offline: u64,
}

impl MasterCore {
    /// Records an event: the event log, the `metrics` facade and [`Stats`].
    pub(crate) fn record(&self, ev: MasterEvent) {
        {
            let mut c = lock(&self.stats);
            let s = &mut c.stats;
            match &ev {
                MasterEvent::Transition(t) => {
                    telemetry::transition(t);
                    s.count_transition(t);
                }
                MasterEvent::StallDetected { ms, .. } => {
                    telemetry::stall(*ms);
                    s.stalls += 1;
                    s.stall_ms += ms;
                }
                MasterEvent::MassSuspicionBrake { engaged: true, .. } => {
                    telemetry::brake_engaged("mass_suspicion");
                    s.brake_engagements += 1;
                }
                MasterEvent::MassSuspicionBrake { .. } => {}
                MasterEvent::OffboardingRetry { step, .. } => {
                    telemetry::step_failed(*step);
                    s.step_failures[*step as usize] += 1;
                }
                MasterEvent::Offboarded { .. } => s.jobs_completed += 1,
            }
        }
        lock(&self.events).push(ev);
    }

    /// An embedder's executor (the `Outbox` driver: [`MasterCore::take_jobs`]) reports one
    /// attempt it ran: a completion becomes the `offboarded` event, a failure the
    /// `offboarding_retry` event (its step and attempt), each at the clock's now and counted in
    /// [`Stats`], exactly as when the master runs the job itself. Without it the master never
    /// hears of a job completed elsewhere, and [`MasterCore::stats`] counts it Offline and
    /// pending for ever.
    pub fn report_offboarding(&self, attempt: Result<&Completed, &ClientOffboardingJob>) {
        let at_ms = self.live.clock().base().now_ms();
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
        lock(&self.stats).restored_offline += n;
    }

    /// The liveness and offboarding counters now, in either offboarding mode: Offline counts
    /// every incarnation whose job has not completed (inline, parked, queued, on a worker or
    /// waiting for a retry); recoveries include those of the lock-free Ping path
    /// ([`MasterCore::liveness_handle`]).
    pub fn stats(&self) -> Stats {
        let c = lock(&self.stats);
        let registered = self.live.registry().len();
        let suspected = self.live.suspected_count();
        let minted = c.stats.offline_commits + c.restored_offline;
        let offline = minted.saturating_sub(c.stats.jobs_completed) as usize;
        Stats {
            active: registered.saturating_sub(suspected + offline),
            suspected,
            offline,
            jobs_pending: offline,
            recoveries: self.live.recoveries_total(),
            ..c.stats.clone()
        }
    }

    pub(super) fn publish_gauges(&self) {
        let s = self.stats();
        telemetry::clients(s.active, s.suspected, s.offline);
        let now = self.live.clock().base().now_ms();
        telemetry::pending_jobs(s.jobs_pending, self.oldest_pending_age(now));
        // Also here, not only at submit: the gauge falls back as the workers take jobs.
        telemetry::queue_depth(self.worker_queue_depth());
    }
}
