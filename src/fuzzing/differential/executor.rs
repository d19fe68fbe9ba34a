//! Async mode's executor, played by the harness deterministically: the master
//! (`OffboardingDriver::Outbox`) collects the jobs its ticks mint, restore or get back, and this
//! executor takes them after each tick and runs them through the master's own steps (the same
//! fault injection `fail_step` drives), in the order the real executor's workers would: due
//! retries first, then the jobs taken from the queue. A failed attempt stays here, waiting for
//! its retry on the backoff schedule; between ticks the due retries run before each operation
//! (the real workers poll their retry table continuously). Every attempt is reported to the
//! master (`report_offboarding`), so events and stats come from the master in both modes.
//!
//! Not emulated: the start rate limit (the fuzz configuration's 1,000 starts/s with a burst of
//! 1,000 never binds) and worker threads (one attempt at a time, in a fixed order).

use crate::master::Master;
use crate::offboarding::{complete_client_offboarding, ClientOffboardingJob};
use std::collections::BTreeMap;

/// The executor's jobs waiting for a retry.
#[derive(Default)]
pub(super) struct Executor {
    /// By (due time, arrival).
    retries: BTreeMap<(u64, u64), ClientOffboardingJob>,
    seq: u64,
}

/// A held job as the checker compares it: (client id, attempts, steps done, next attempt).
pub(super) type Held = (crate::liveness::ClientId, u32, Vec<usize>, u64);

impl Executor {
    /// After a tick at `now`: due retries, then the jobs the tick handed over.
    pub(super) fn after_tick(&mut self, m: &mut Master, now: u64) {
        let mut jobs = self.take_due(now);
        jobs.extend(m.take_jobs());
        for job in jobs {
            self.attempt(m, job, now);
        }
    }

    /// Between ticks at `now`: the due retries.
    pub(super) fn poll(&mut self, m: &mut Master, now: u64) {
        for job in self.take_due(now) {
            self.attempt(m, job, now);
        }
    }

    /// Shutdown: every job held goes back to the master (decisions.md: returned, never dropped).
    pub(super) fn hand_back(&mut self, m: &Master) {
        for job in std::mem::take(&mut self.retries).into_values() {
            m.return_job(job);
        }
    }

    /// The master died: the jobs in this executor's hands die with it (the restored master
    /// re-mints them from its snapshot).
    pub(super) fn crash(&mut self) {
        self.retries.clear();
    }

    /// The jobs held, for the state comparison.
    pub(super) fn held(&self) -> Vec<Held> {
        self.retries
            .iter()
            .map(|((due, _), j)| {
                let done = j.steps_done().iter().map(|s| *s as usize).collect();
                (j.client(), j.attempts(), done, *due)
            })
            .collect()
    }

    fn take_due(&mut self, now: u64) -> Vec<ClientOffboardingJob> {
        let later = self.retries.split_off(&(now + 1, 0));
        std::mem::replace(&mut self.retries, later).into_values().collect()
    }

    fn attempt(&mut self, m: &mut Master, job: ClientOffboardingJob, now: u64) {
        let live = m.liveness_handle();
        match complete_client_offboarding(m, live.registry(), job) {
            Ok(done) => m.report_offboarding(Ok(&done)),
            Err(job) => {
                m.report_offboarding(Err(&job));
                let config = live.config().load();
                let delay = ClientOffboardingJob::backoff_ms(
                    job.attempts(),
                    config.offboarding_retry_backoff_ms,
                    config.offboarding_retry_max_backoff_ms,
                );
                self.seq += 1;
                self.retries.insert((now + delay, self.seq), job);
            }
        }
    }
}
