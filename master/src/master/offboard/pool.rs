//! The `Workers` driver: the [`Executor`](crate::offboarding::executor::Executor) a master starts
//! for `offboarding_mode: async`, and how jobs cross between it and the master.
//!
//! Owns: the `pool` leaf (the executor handle) and the [`SharedSteps`] view of the master. The
//! executor's workers call [`MasterCore::run_step_shared`] and report completions through a
//! `Weak` back to the core (so the pool does not keep the master alive: dropping the
//! [`Master`](super::super::Master) stops the pool). A job the queue refuses, and every job not
//! completed when the pool stops, is parked in the master (the `offboarding` leaf, taken
//! *after* the `pool` leaf, never the reverse): never dropped.
//! May not touch: the steps (`steps.rs`) or the liveness words.
//!
//! Under loom there are no worker threads: `Workers` degrades to `Outbox` and the models drive
//! jobs by hand.

#[cfg(not(loom))]
use super::super::Master;
use super::super::MasterCore;
use super::OffboardingDriver;
use crate::offboarding::ClientOffboardingJob;
use crate::sync::Arc;
#[cfg(not(loom))]
use {
    super::super::MasterEvent,
    crate::offboarding::executor::{Executor, ExecutorConfig, SharedSteps},
    crate::offboarding::queue::PushError,
    crate::offboarding::{CleanupError, Progress, Step},
};

/// The master's worker pool (`Workers`).
#[cfg(not(loom))]
pub(in crate::master) struct Pool(crate::offboarding::executor::Executor<MasterCore>);

/// No worker threads under loom (the models drive jobs by hand).
#[cfg(loom)]
pub(in crate::master) struct Pool;

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pool")
    }
}

#[cfg(not(loom))]
/// The workers' view of the master. A failed attempt the executor's [`Schedule`] parks for a
/// retry (and counts in the metrics) is counted in [`Stats`] here, as the inline driver's
/// `offboarding_retry` event counts it, so `stats().step_failures` agrees with the metrics in
/// both offboarding modes.
///
/// [`Stats`]: crate::telemetry::Stats
/// [`Schedule`]: crate::offboarding::schedule::Schedule
impl SharedSteps for MasterCore {
    fn run_step(&self, step: Step, job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        self.run_step_shared(step, job)
    }

    fn on_retry(&self, retry: &crate::offboarding::schedule::Retry) {
        self.journal.count_step_failure(retry.step);
    }
}

#[cfg(not(loom))]
impl Master {
    /// Jobs queued for or waiting for a retry in the workers.
    pub fn jobs_in_workers(&self) -> usize {
        self.core.jobs_in_workers()
    }
}

#[cfg(not(loom))]
impl MasterCore {
    /// Sets who runs jobs; starting or stopping the workers as needed.
    pub(in crate::master) fn set_driver(&self, me: &Arc<MasterCore>, driver: OffboardingDriver) {
        let driver = driver.resolve(&self.live.config().load());
        if driver != OffboardingDriver::Workers {
            self.stop_offboarding_workers();
        }
        {
            let mut off = self.jobs.state();
            off.driver = Some(driver);
            if driver != OffboardingDriver::Outbox {
                let now = self.now_ms();
                for job in std::mem::take(&mut off.outbox) {
                    off.park(job, now);
                }
            }
        }
        if driver == OffboardingDriver::Workers {
            self.start_pool(me);
        }
    }

    fn start_pool(&self, me: &Arc<MasterCore>) {
        let mut pool = self.jobs.pool();
        if pool.is_some() {
            return;
        }
        let config = ExecutorConfig::from_config(&self.live.config().load());
        let weak = Arc::downgrade(me);
        let on_complete = move |done: crate::offboarding::Completed| {
            if let Some(core) = weak.upgrade() {
                let at_ms = core.now_ms();
                core.journal.record(MasterEvent::Offboarded {
                    client: done.client,
                    incarnation: done.incarnation,
                    attempts: done.attempts,
                    at_ms,
                });
            }
        };
        match Executor::spawn(me.clone(), self.live.clone(), config, on_complete) {
            Ok(exec) => *pool = Some(Pool(exec)),
            Err(e) => {
                // No threads: fall back to running jobs inline rather than stranding them.
                tracing::error!(error = %e, "cannot start offboarding workers; running jobs inline");
                self.jobs.state().driver = Some(OffboardingDriver::Inline);
            }
        }
    }

    pub(super) fn submit_to_workers(&self, jobs: Vec<ClientOffboardingJob>, now: u64) {
        let pool = self.jobs.pool();
        for job in jobs {
            let refused = match pool.as_ref() {
                Some(p) => p.0.submit(job).err().map(PushError::into_inner),
                None => Some(job),
            };
            if let Some(job) = refused {
                self.jobs.state().park(job, now + self.tick_ms);
            }
        }
    }

    /// Stops the workers (if running); parks every job they hand back. Returns how many.
    pub(in crate::master) fn stop_offboarding_workers(&self) -> usize {
        let Some(Pool(exec)) = self.jobs.pool().take() else {
            return 0;
        };
        let drain = std::time::Duration::from_millis(self.live.config().load().shutdown_drain_ms);
        let left = exec.shutdown(drain);
        let n = left.len();
        let now = self.now_ms();
        let mut off = self.jobs.state();
        for job in left {
            off.park(job, now);
        }
        n
    }

    /// Jobs queued for the workers and not yet taken (the queue-depth gauge).
    pub(in crate::master) fn worker_queue_depth(&self) -> usize {
        self.jobs.pool().as_ref().map_or(0, |p| p.0.queued())
    }

    /// The work behind [`Master::jobs_in_workers`].
    pub(crate) fn jobs_in_workers(&self) -> usize {
        self.jobs.pool().as_ref().map_or(0, |p| p.0.queued() + p.0.retrying())
    }
}

#[cfg(loom)]
impl MasterCore {
    pub(in crate::master) fn set_driver(&self, _me: &Arc<MasterCore>, driver: OffboardingDriver) {
        let driver = match driver.resolve(&self.live.config().load()) {
            OffboardingDriver::Workers => OffboardingDriver::Outbox,
            d => d,
        };
        self.jobs.state().driver = Some(driver);
    }

    pub(super) fn submit_to_workers(&self, jobs: Vec<ClientOffboardingJob>, _now: u64) {
        self.jobs.state().outbox.extend(jobs);
    }

    pub(in crate::master) fn stop_offboarding_workers(&self) -> usize {
        0
    }

    pub(in crate::master) fn worker_queue_depth(&self) -> usize {
        0
    }
}
