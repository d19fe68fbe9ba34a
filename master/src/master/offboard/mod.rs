//! The master's offboarding: the five steps over its metadata, fault injection, retries on the
//! backoff schedule, the start rate limit, and who runs the jobs.
//!
//! Cost is proportional to what the incarnation holds: the per-owner segment index, each
//! segment's key set, the LocalDisk key set and the per-executor task index. Nothing sweeps the
//! whole metadata (upstream walks every shard per batch).
//!
//! # Who runs a job ([`OffboardingDriver`])
//!
//! - `Inline` (`offboarding_mode: sync`): the tick that commits Offline runs the first attempt;
//!   a failed job is parked until `backoff·2^(k−1)` (capped) after failure k, a first attempt
//!   that finds no start token until the bucket next holds one, and the first tick at or after
//!   that time runs it: the rules of [`Schedule`], the same as the `Workers`' executor.
//! - `Workers` (`offboarding_mode: async`): the master starts `offboarding_workers` threads (an
//!   [`Executor`](crate::offboarding::executor::Executor)) and hands them every job its ticks
//!   mint, every job restored from a snapshot and every job handed back; the workers own the
//!   retries. Completions reach the master's events and [`Stats`](crate::telemetry::Stats).
//!   Stopping them parks every job not completed in the master (the next snapshot records it).
//! - `Outbox`: jobs are collected for an embedder's own executor ([`Master::take_jobs`]);
//!   a job it cannot run goes back with [`Master::return_job`].
//!
//! Whatever the driver, a job is in exactly one place — parked here, in the outbox, in the
//! executor, or completed — and switching drivers moves jobs, never drops them. The Offline
//! record stays in the registry (the barrier) until the job completes.
//!
//! Steps run concurrently with serving: `metadata` handles at most [`KEYS_PER_BATCH`](steps::KEYS_PER_BATCH) keys per
//! call, taking one shard lock at a time; the steps that unmount take the membership gate
//! shared, so a snapshot never sees a half-unmounted incarnation.
//!
//! # Files, and who touches what
//!
//! | file | owns | locks |
//! |---|---|---|
//! | `mod.rs` | the `Jobs` room (the offboarding state and the pool, behind their locks), the drivers, the parked jobs (a [`Schedule`]: retries, the start rate limit), the outbox, scratch, the inline attempt | the `offboarding` leaf, alone |
//! | `steps` | the five steps over the master's tables, fault injection | one shard at a time → leaves; the `gate` shared for the unmounting steps |
//! | `pool` | the `Workers` driver: the [`Executor`](crate::offboarding::executor::Executor) the master starts and stops | the `pool` leaf, then the `offboarding` leaf (never the reverse) |
//!
//! No file here writes a liveness word: a job's Offline record is erased only by
//! [`complete_client_offboarding`] (the compare-and-erase), whoever runs it. The parked jobs and
//! the scratch are written only under the `offboarding` leaf, so a job is in exactly one place
//! at any moment a lock is released.

mod pool;
mod steps;

pub(super) use pool::Pool;
use steps::Inline;

use super::lock_order::{lock, Held, Level, Ordered};
use super::{Master, MasterCore, MasterEvent};
use crate::liveness::{ClientId, Incarnation};
use crate::offboarding::schedule::{Limits, Schedule};
use crate::offboarding::{complete_client_offboarding, ClientOffboardingJob, Step};
use crate::sync::{Mutex, MutexGuard};
use std::collections::BTreeMap;

/// Who runs the master's offboarding jobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OffboardingDriver {
    /// `Inline` for `offboarding_mode: sync`, `Workers` for `async`.
    #[default]
    FromConfig,
    /// In the tick, on the caller's thread (deterministic: replay, simulate).
    Inline,
    /// Collected for the embedder's executor.
    Outbox,
    /// The master's own worker threads.
    Workers,
}

impl OffboardingDriver {
    pub(super) fn resolve(self, config: &crate::config::LivenessConfig) -> Self {
        match self {
            Self::FromConfig if config.offboarding_mode == crate::config::OffboardingMode::Async => Self::Workers,
            Self::FromConfig => Self::Inline,
            other => other,
        }
    }
}

/// The master's offboarding state (a leaf lock).
#[derive(Debug, Default)]
pub(super) struct Offboarding {
    /// Jobs parked: waiting for a retry or a start token (inline), or handed back / restored
    /// and not yet handed on; with the inline driver's start bucket.
    schedule: Schedule,
    /// Injected failures left per step (`fail_step`).
    faults: BTreeMap<Step, u32>,
    /// Per-incarnation inputs of the later steps, kept in the master (not in the job) so a
    /// snapshot captures them and a job restarted from fewer steps still converges.
    pub(super) scratch: BTreeMap<(ClientId, Incarnation), Scratch>,
    driver: Option<OffboardingDriver>,
    /// `Outbox`: jobs waiting for the embedder's executor.
    outbox: Vec<ClientOffboardingJob>,
    /// Keys (and tasks) the `metadata` step handles per call; 0: `steps::KEYS_PER_BATCH`.
    keys_per_batch: usize,
}

impl Offboarding {
    fn park(&mut self, job: ClientOffboardingJob, due: u64) {
        self.schedule.park(job, due);
    }

    fn driver(&self) -> OffboardingDriver {
        self.driver.unwrap_or(OffboardingDriver::Inline)
    }
}

impl Ordered for Offboarding {
    const LEVEL: Level = Level::Leaf;
}
impl Ordered for Option<Pool> {
    const LEVEL: Level = Level::Pool;
}

/// The Jobs room: the offboarding state (the driver, the outbox, the parked jobs and their
/// schedule, the per-job scratch, injected faults) and the worker pool, behind their locks.
///
/// Owns: the `pool` level and the offboarding-state leaf. The pool is taken before the
/// offboarding state, never the reverse (`Level::Pool` sits above `Level::Leaf`). Only this
/// folder opens the state; the steps a job runs call the other rooms' methods.
#[derive(Debug, Default)]
pub(crate) struct Jobs {
    state: Mutex<Offboarding>,
    #[cfg_attr(loom, allow(dead_code))] // no worker pool under loom
    pool: Mutex<Option<Pool>>,
}

impl Jobs {
    /// The offboarding state (the leaf, locked).
    fn state(&self) -> Held<MutexGuard<'_, Offboarding>> {
        lock(&self.state)
    }

    /// The worker pool, if started (locked).
    #[cfg_attr(loom, allow(dead_code))] // no worker pool under loom
    pub(in crate::master) fn pool(&self) -> Held<MutexGuard<'_, Option<Pool>>> {
        lock(&self.pool)
    }

    /// Each lock of the room, taken raw past the order check (a test holding every lock of
    /// the master at once, in the order it chooses).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn state_raw(&self) -> MutexGuard<'_, Offboarding> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// See [`Jobs::state_raw`].
    #[cfg(all(test, not(loom)))]
    pub(crate) fn pool_raw(&self) -> MutexGuard<'_, Option<Pool>> {
        self.pool.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What earlier steps leave for later ones: quota refunds (applied by `quota`) and unmounted
/// segment names (deleted by `external_metadata`). Each step consumes its input, so re-running
/// a step finds nothing left to do.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Scratch {
    /// Tenant → bytes to refund.
    pub(crate) refunds: BTreeMap<String, u64>,
    /// Segment names whose external entries must go.
    pub(crate) segment_names: Vec<String>,
}

/// A pending job as the diagnostic query shows it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PendingJob {
    /// Attempts made.
    pub attempts: u32,
    /// Steps completed.
    pub steps_done: Vec<Step>,
    /// The last failure.
    pub last_error: Option<String>,
    /// When the next attempt may run (base clock).
    pub next_attempt_ms: u64,
}

impl Master {
    /// Fault injection: the next `times` executions of `step` fail.
    pub fn fail_step(&self, step: Step, times: u32) {
        self.core.fail_step(step, times)
    }

    /// Sets how many keys (and tasks) one call of the `metadata` step handles before it answers
    /// [`Progress::More`](crate::offboarding::Progress::More) (at least 1; default
    /// 1,024). Batching bounds how long a step holds the master's locks; tests and the
    /// `differential` fuzz target set it small so that an incarnation of a few keys needs
    /// several batches.
    pub fn set_offboarding_batch_keys(&self, keys: usize) {
        self.core.set_offboarding_batch_keys(keys)
    }

    /// Jobs parked in the master (failed or rate-limited, handed back or restored).
    pub fn pending_jobs(&self) -> Vec<(ClientId, PendingJob)> {
        self.core.pending_jobs()
    }

    /// Takes the jobs collected for the embedder's executor since the last call (`Outbox`).
    pub fn take_jobs(&self) -> Vec<ClientOffboardingJob> {
        self.core.take_jobs()
    }

    /// Gives a job back (e.g. after the embedder's executor refused it): it is parked and handed
    /// on again at the next tick, to whoever runs jobs then. Never dropped.
    pub fn return_job(&self, job: ClientOffboardingJob) {
        self.core.return_job(job)
    }
}

impl MasterCore {
    fn now_ms(&self) -> u64 {
        self.live.clock().base().now_ms()
    }

    /// The work behind [`Master::fail_step`].
    pub(crate) fn fail_step(&self, step: Step, times: u32) {
        *self.jobs.state().faults.entry(step).or_default() += times;
    }

    /// The work behind [`Master::set_offboarding_batch_keys`].
    pub(crate) fn set_offboarding_batch_keys(&self, keys: usize) {
        self.jobs.state().keys_per_batch = keys.max(1);
    }

    /// The work behind [`Master::pending_jobs`].
    pub(crate) fn pending_jobs(&self) -> Vec<(ClientId, PendingJob)> {
        self.jobs
            .state()
            .schedule
            .parked()
            .map(|(due, job)| (job.client(), pending_job(job, due)))
            .collect()
    }

    /// The parked job of `(client, incarnation)`, as the diagnostic query shows it.
    pub(super) fn pending_job_of(&self, client: ClientId, inc: Incarnation) -> Option<PendingJob> {
        let off = self.jobs.state();
        let parked = off.schedule.parked().map(|(due, j)| (j, due));
        let mut jobs = parked.chain(off.outbox.iter().map(|j| (j, 0)));
        jobs.find(|(j, _)| j.client() == client && j.incarnation() == inc)
            .map(|(j, due)| pending_job(j, due))
    }

    /// The snapshot's `clients` and `vacant` sections ([`crate::persist::client_sections`]),
    /// with the progress of the jobs parked here or waiting in the outbox (a job on a worker
    /// is listed "not started": steps are idempotent). Holds the `offboarding` leaf while it
    /// reads the registry, which takes no lock.
    pub(super) fn client_sections(&self) -> (Vec<crate::snapshot::ClientSnap>, Vec<(u128, u64)>) {
        let off = self.jobs.state();
        crate::persist::client_sections(
            &self.live,
            off.schedule.parked().map(|(_, j)| j).chain(off.outbox.iter()),
        )
    }

    /// Was `segment` unmounted by an offboarding job of a client other than `asker` that has not
    /// completed? Its name stays taken until then.
    pub(super) fn held_by_pending_offboarding(&self, segment: &str, asker: ClientId) -> bool {
        self.jobs
            .state()
            .scratch
            .iter()
            .any(|((c, _), s)| *c != asker && s.segment_names.iter().any(|n| n == segment))
    }

    /// Offboarding scratch (snapshot capture).
    pub(super) fn scratch(&self) -> BTreeMap<(ClientId, Incarnation), Scratch> {
        self.jobs.state().scratch.clone()
    }

    /// Restores scratch and the restored jobs (snapshot restore): parked, due at once, so the
    /// first tick hands them to whoever runs jobs then (inline, the outbox or the workers).
    pub(super) fn restore_offboarding(
        &self,
        scratch: BTreeMap<(ClientId, Incarnation), Scratch>,
        jobs: Vec<ClientOffboardingJob>,
    ) {
        let now = self.now_ms();
        {
            let mut off = self.jobs.state();
            off.scratch = scratch;
            for job in jobs {
                off.park(job, now);
            }
        }
    }

    /// Age of the oldest parked job (since its Offline commit), ms.
    pub(super) fn oldest_pending_age(&self, now: u64) -> u64 {
        let off = self.jobs.state();
        let oldest = off
            .schedule
            .parked()
            .map(|(_, j)| j)
            .chain(off.outbox.iter())
            .map(|j| j.committed_at_ms())
            .min();
        oldest.map_or(0, |t| now.saturating_sub(t))
    }

    /// The work behind [`Master::take_jobs`].
    pub(crate) fn take_jobs(&self) -> Vec<ClientOffboardingJob> {
        std::mem::take(&mut self.jobs.state().outbox)
    }

    /// The work behind [`Master::return_job`].
    pub(crate) fn return_job(&self, job: ClientOffboardingJob) {
        let now = self.now_ms();
        self.jobs.state().park(job, now);
    }

    /// Runs due parked jobs, then `fresh` ones (first attempt at the committing tick), through
    /// the current driver.
    pub(super) fn run_offboarding(&self, fresh: Vec<ClientOffboardingJob>) {
        let now = self.now_ms();
        let (driver, mut jobs) = {
            let mut off = self.jobs.state();
            (off.driver(), off.schedule.take_due(now))
        };
        jobs.extend(fresh);
        match driver {
            OffboardingDriver::Outbox => self.jobs.state().outbox.extend(jobs),
            OffboardingDriver::Workers => self.submit_to_workers(jobs, now),
            _ => {
                for job in jobs {
                    self.attempt(job, now);
                }
            }
        }
    }

    /// Inline: one attempt of `job` now, if the [`Schedule`] admits it (a first attempt needs a
    /// start token); a failure is parked for its retry.
    fn attempt(&self, job: ClientOffboardingJob, now: u64) {
        let limits = Limits::from_config(&self.live.config().load());
        let Some(job) = self.jobs.state().schedule.admit(job, now, &limits) else {
            return;
        };
        let committed_at = job.committed_at_ms();
        match complete_client_offboarding(&mut Inline(self), self.live.registry(), job) {
            Ok(done) => {
                crate::telemetry::job_completed(now.saturating_sub(committed_at));
                self.journal.record(MasterEvent::Offboarded {
                    client: done.client,
                    incarnation: done.incarnation,
                    attempts: done.attempts,
                    at_ms: now,
                })
            }
            Err(job) => {
                let retry = self.jobs.state().schedule.retry(job, now, &limits);
                self.journal.record(MasterEvent::OffboardingRetry {
                    client: retry.client,
                    incarnation: retry.incarnation,
                    step: retry.step,
                    attempt: retry.attempt,
                    at_ms: now,
                });
            }
        }
    }
}

fn pending_job(job: &ClientOffboardingJob, due: u64) -> PendingJob {
    PendingJob {
        attempts: job.attempts(),
        steps_done: job.steps_done(),
        last_error: job.last_error().map(|e| e.to_string()),
        next_attempt_ms: due,
    }
}
