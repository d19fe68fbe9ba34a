//! The master's statistics and gauges, and the reports of an embedder's executor: the paths
//! over the journal room ([`Journal`](super::rooms::Journal), which owns the counters and the
//! event log and documents their ground rules) that also read the liveness core and the
//! offboarding state.

use super::{Master, MasterCore, MasterEvent};
use crate::offboarding::{ClientOffboardingJob, Completed, Step};
use crate::telemetry::{self, Stats};

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
        self.core.journal.stats(&self.core.live)
    }
}

impl MasterCore {
    /// The work behind [`Master::report_offboarding`].
    pub(crate) fn report_offboarding(&self, attempt: Result<&Completed, &ClientOffboardingJob>) {
        let at_ms = self.live.clock().base().now_ms();
        if let Err(job) = attempt {
            // No schedule of ours parked it: count the metric `Schedule::retry` would have.
            telemetry::step_failed(job.last_error().map_or(Step::Metadata, |e| e.step));
        }
        self.journal.record(match attempt {
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

    /// Publishes the gauges, and the counters the lock-free paths keep to themselves (Ping's
    /// recoveries, dropped events), as absolute values. Called at every tick.
    pub(super) fn publish_gauges(&self) {
        let s = self.journal.stats(&self.live);
        telemetry::clients(s.active, s.suspected, s.offline);
        telemetry::ping_recoveries(self.journal.recovered_by_ping());
        telemetry::recovered_false_positives(s.recoveries);
        telemetry::events_dropped(s.events_dropped);
        let now = self.live.clock().base().now_ms();
        telemetry::pending_jobs(s.jobs_pending, self.oldest_pending_age(now));
        // Also here, not only at submit: the gauge falls back as the workers take jobs.
        telemetry::queue_depth(self.worker_queue_depth());
    }
}
