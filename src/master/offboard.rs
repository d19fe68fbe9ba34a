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
//!   a failed job is parked until `backoff·2^(k−1)` (capped) after failure k and retried by the
//!   first tick at or after that time.
//! - `Workers` (`offboarding_mode: async`): the master starts `offboarding_workers` threads (an
//!   [`Executor`](crate::offboarding::executor::Executor)) and hands them every job its ticks
//!   mint, every job restored from a snapshot and every job handed back; the workers own the
//!   retries. Completions reach the master's events and [`Stats`](crate::telemetry::Stats).
//!   Stopping them parks every job not completed in the master (the next snapshot records it).
//! - `Outbox`: jobs are collected for an embedder's own executor ([`MasterCore::take_jobs`]);
//!   a job it cannot run goes back with [`MasterCore::return_job`].
//!
//! Whatever the driver, a job is in exactly one place — parked here, in the outbox, in the
//! executor, or completed — and switching drivers moves jobs, never drops them. The Offline
//! record stays in the registry (the barrier) until the job completes.
//!
//! Steps run concurrently with serving: `metadata` handles at most [`KEYS_PER_BATCH`] keys per
//! call, taking one shard lock at a time; the steps that unmount take the membership gate
//! shared, so a snapshot never sees a half-unmounted incarnation.

use super::{lock, MasterCore, MasterEvent, Refunds, ReplicaKind};
use crate::liveness::{ClientId, ClientLivenessRecord, Incarnation};
use crate::offboarding::brakes::TokenBucket;
use crate::offboarding::{
    complete_client_offboarding, CleanupError, ClientOffboardingJob, OffboardingSteps, Progress, Step,
};
use crate::sync::Arc;
use std::collections::BTreeMap;

/// Keys (and tasks) the `metadata` step handles per call.
pub(super) const KEYS_PER_BATCH: usize = 1024;

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
    /// Jobs parked: waiting for a retry or a rate-limit token (inline), or handed back /
    /// restored and not yet handed on, by (due time, sequence).
    pending: BTreeMap<(u64, u64), ClientOffboardingJob>,
    seq: u64,
    /// Injected failures left per step (`fail_step`).
    faults: BTreeMap<Step, u32>,
    /// Per-incarnation inputs of the later steps, kept in the master (not in the job) so a
    /// snapshot captures them and a job restarted from fewer steps still converges.
    pub(super) scratch: BTreeMap<(ClientId, Incarnation), Scratch>,
    bucket: Option<TokenBucket>,
    driver: Option<OffboardingDriver>,
    /// `Outbox`: jobs waiting for the embedder's executor.
    outbox: Vec<ClientOffboardingJob>,
}

impl Offboarding {
    fn park(&mut self, job: ClientOffboardingJob, due: u64) {
        self.seq += 1;
        self.pending.insert((due, self.seq), job);
    }

    fn take_due(&mut self, now: u64) -> Vec<ClientOffboardingJob> {
        let due: Vec<(u64, u64)> = self.pending.range(..(now + 1, 0)).map(|(k, _)| *k).collect();
        due.into_iter().filter_map(|k| self.pending.remove(&k)).collect()
    }

    fn driver(&self) -> OffboardingDriver {
        self.driver.unwrap_or(OffboardingDriver::Inline)
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

/// The master's worker pool (`Workers`).
#[cfg(not(loom))]
pub(super) struct Pool(crate::offboarding::executor::Executor<MasterCore>);

/// No worker threads under loom (the models drive jobs by hand).
#[cfg(loom)]
pub(super) struct Pool;

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pool")
    }
}

impl MasterCore {
    fn now_ms(&self) -> u64 {
        self.live.clock().base().now_ms()
    }

    /// Fault injection: the next `times` executions of `step` fail.
    pub fn fail_step(&self, step: Step, times: u32) {
        *lock(&self.offboarding).faults.entry(step).or_default() += times;
    }

    /// Jobs parked in the master (failed or rate-limited, handed back or restored).
    pub fn pending_jobs(&self) -> Vec<(ClientId, PendingJob)> {
        lock(&self.offboarding)
            .pending
            .iter()
            .map(|((due, _), job)| (job.client(), pending_job(job, *due)))
            .collect()
    }

    /// The parked job of `(client, incarnation)`, as the diagnostic query shows it.
    pub(super) fn pending_job_of(&self, client: ClientId, inc: Incarnation) -> Option<PendingJob> {
        let off = lock(&self.offboarding);
        let parked = off.pending.iter().map(|((due, _), j)| (j, *due));
        let queued = off.outbox.iter().map(|j| (j, 0));
        parked
            .chain(queued)
            .find(|(j, _)| j.client() == client && j.incarnation() == inc)
            .map(|(j, due)| pending_job(j, due))
    }

    /// Was `segment` unmounted by an offboarding job of a client other than `asker` that has not
    /// completed? Its name stays taken until then.
    pub(super) fn held_by_pending_offboarding(&self, segment: &str, asker: ClientId) -> bool {
        lock(&self.offboarding)
            .scratch
            .iter()
            .any(|((c, _), s)| *c != asker && s.segment_names.iter().any(|n| n == segment))
    }

    /// Offboarding scratch (snapshot capture).
    pub(super) fn scratch(&self) -> BTreeMap<(ClientId, Incarnation), Scratch> {
        lock(&self.offboarding).scratch.clone()
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
            let mut off = lock(&self.offboarding);
            off.scratch = scratch;
            for job in jobs {
                off.park(job, now);
            }
        }
    }

    /// Age of the oldest parked job (since its Offline commit), ms.
    pub(super) fn oldest_pending_age(&self, now: u64) -> u64 {
        let off = lock(&self.offboarding);
        let oldest = off
            .pending
            .values()
            .chain(off.outbox.iter())
            .map(|j| j.committed_at_ms())
            .min();
        oldest.map_or(0, |t| now.saturating_sub(t))
    }

    /// Takes the jobs collected for the embedder's executor since the last call (`Outbox`).
    pub fn take_jobs(&self) -> Vec<ClientOffboardingJob> {
        std::mem::take(&mut lock(&self.offboarding).outbox)
    }

    /// Gives a job back (e.g. after the embedder's executor refused it): it is parked and handed
    /// on again at the next tick, to whoever runs jobs then. Never dropped.
    pub fn return_job(&self, job: ClientOffboardingJob) {
        let now = self.now_ms();
        lock(&self.offboarding).park(job, now);
    }

    /// Runs due parked jobs, then `fresh` ones (first attempt at the committing tick), through
    /// the current driver.
    pub(super) fn run_offboarding(&self, fresh: Vec<ClientOffboardingJob>) {
        let now = self.now_ms();
        let (driver, mut jobs) = {
            let mut off = lock(&self.offboarding);
            (off.driver(), off.take_due(now))
        };
        jobs.extend(fresh);
        match driver {
            OffboardingDriver::Outbox => lock(&self.offboarding).outbox.extend(jobs),
            OffboardingDriver::Workers => self.submit_to_workers(jobs, now),
            _ => {
                for job in jobs {
                    self.attempt(job, now);
                }
            }
        }
    }

    /// Inline: one attempt of `job` now; a failure is parked on the backoff schedule.
    fn attempt(&self, job: ClientOffboardingJob, now: u64) {
        if job.attempts() == 0 && !self.take_start_token(now) {
            lock(&self.offboarding).park(job, now + self.tick_ms);
            return;
        }
        let committed_at = job.committed_at_ms();
        match complete_client_offboarding(&mut Inline(self), self.live.registry(), job) {
            Ok(done) => {
                crate::telemetry::job_completed(now.saturating_sub(committed_at));
                self.record(MasterEvent::Offboarded {
                    client: done.client,
                    incarnation: done.incarnation,
                    attempts: done.attempts,
                    at_ms: now,
                })
            }
            Err(job) => {
                let step = job.last_error().map_or(Step::Metadata, |e| e.step);
                self.record(MasterEvent::OffboardingRetry {
                    client: job.client(),
                    incarnation: job.incarnation(),
                    step,
                    attempt: job.attempts(),
                    at_ms: now,
                });
                let config = self.live.config().load();
                let delay = ClientOffboardingJob::backoff_ms(
                    job.attempts(),
                    config.offboarding_retry_backoff_ms,
                    config.offboarding_retry_max_backoff_ms,
                );
                drop(config);
                lock(&self.offboarding).park(job, now.saturating_add(delay));
            }
        }
    }

    fn take_start_token(&self, now: u64) -> bool {
        let config = self.live.config().load();
        let mut off = lock(&self.offboarding);
        let bucket = off
            .bucket
            .get_or_insert_with(|| TokenBucket::new(config.offboarding_rate_per_sec, config.offboarding_burst, now));
        bucket.try_take(now)
    }

    fn check_fault(&self, step: Step) -> Result<(), CleanupError> {
        match lock(&self.offboarding).faults.get_mut(&step) {
            Some(n) if *n > 0 => {
                *n -= 1;
                Err(CleanupError::new(step, "injected failure"))
            }
            _ => Ok(()),
        }
    }

    /// Runs one bounded batch of `step` for `job` (the body of both the inline runner and the
    /// workers' [`SharedSteps`](crate::offboarding::executor::SharedSteps)).
    pub(super) fn run_step_shared(&self, step: Step, job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        if job.step_batches == 0 {
            // An injected failure hits an execution of the step, not one of its batches.
            self.check_fault(step)?;
        }
        match step {
            Step::Metadata => return Ok(self.step_metadata(job)),
            Step::Segments => self.step_segments(job),
            Step::LocalDisk => self.step_local_disk(job),
            Step::Quota => self.step_quota(job),
            Step::ExternalMetadata => self.step_external(job)?,
        }
        Ok(Progress::Done)
    }

    /// `metadata`: tasks the incarnation executes, tasks touching its segments, replicas on its
    /// segments and its LocalDisk replicas, at most [`KEYS_PER_BATCH`] keys per call, one shard
    /// lock at a time (compare-and-erase per object: only this incarnation's replicas go).
    /// Quota refunds are recorded in the scratch for the `quota` step.
    fn step_metadata(&self, job: &mut ClientOffboardingJob) -> Progress {
        let record = job.record().clone();
        let client = record.client();
        let mut refunds = Refunds::new();
        let mut budget = KEYS_PER_BATCH;
        let tasks: Vec<(u64, Option<usize>)> = {
            let tasks = lock(&self.tasks);
            tasks
                .of_client(client)
                .into_iter()
                .take(budget)
                .map(|id| {
                    let own = tasks.get(id).filter(|t| Arc::ptr_eq(&t.executor, &record));
                    (id, own.map(|t| t.shard))
                })
                .collect()
        };
        for (id, shard) in tasks {
            budget -= 1;
            if let Some(si) = shard {
                let mut shard = self.shards.lock(si);
                self.cancel_task_in(&mut shard, id, &mut refunds);
            }
        }
        for seg in self.owned_segments(&record) {
            let keys = take_keys(&mut seg.alloc().keys, budget);
            budget -= keys.len();
            for key in &keys {
                let mut shard = self.shards.lock_key(key);
                self.cancel_tasks_touching_in(&mut shard, key, seg.id, &mut refunds);
                self.remove_replicas_in(&mut shard, key, |r| r.segment() == Some(seg.id), &mut refunds);
            }
        }
        let disk_keys = match lock(&self.local_disks).get_mut(&client) {
            Some(d) if Arc::ptr_eq(&d.owner, &record) => take_keys(&mut d.keys, budget),
            _ => Default::default(),
        };
        budget -= disk_keys.len();
        let mine =
            |r: &super::Replica| matches!(&r.kind, ReplicaKind::LocalDisk { owner } if Arc::ptr_eq(owner, &record));
        for key in &disk_keys {
            let mut shard = self.shards.lock_key(key);
            self.remove_replicas_in(&mut shard, key, mine, &mut refunds);
        }
        let mut off = lock(&self.offboarding);
        let scratch = off.scratch.entry((client, record.incarnation())).or_default();
        for (tenant, bytes) in refunds {
            super::add_refund(&mut scratch.refunds, &tenant, bytes);
        }
        if budget == 0 {
            Progress::More
        } else {
            Progress::Done
        }
    }

    fn owned_segments(&self, record: &Arc<ClientLivenessRecord>) -> Vec<Arc<super::Segment>> {
        self.segments()
            .owned_by(record.client())
            .into_iter()
            .filter(|s| Arc::ptr_eq(&s.owner, record))
            .collect()
    }

    /// `segments`: unmount the (now empty) segments; remember their names.
    fn step_segments(&self, job: &mut ClientOffboardingJob) {
        let _gate = self.gate_shared();
        let record = job.record().clone();
        for seg in self.owned_segments(&record) {
            if let Some(name) = self.drop_segment(&seg) {
                let key = (job.client(), job.incarnation());
                lock(&self.offboarding)
                    .scratch
                    .entry(key)
                    .or_default()
                    .segment_names
                    .push(name);
            }
        }
    }

    /// `local_disk`: the registration goes (its replicas and offloads went with `metadata`).
    fn step_local_disk(&self, job: &mut ClientOffboardingJob) {
        let _gate = self.gate_shared();
        let mut disks = lock(&self.local_disks);
        if disks
            .get(&job.client())
            .is_some_and(|d| Arc::ptr_eq(&d.owner, job.record()))
        {
            disks.remove(&job.client());
        }
    }

    /// `quota`: apply the refunds recorded by `metadata`.
    fn step_quota(&self, job: &mut ClientOffboardingJob) {
        let key = (job.client(), job.incarnation());
        let refunds = {
            let mut off = lock(&self.offboarding);
            std::mem::take(&mut off.scratch.entry(key).or_default().refunds)
        };
        self.apply_refunds(refunds);
    }

    /// `external_metadata`: delete the unmounted segments' entries (idempotent).
    fn step_external(&self, job: &mut ClientOffboardingJob) -> Result<(), CleanupError> {
        let _gate = self.gate_shared();
        let key = (job.client(), job.incarnation());
        let names = lock(&self.offboarding)
            .scratch
            .get(&key)
            .map(|s| s.segment_names.clone())
            .unwrap_or_default();
        {
            let mut external = lock(&self.external);
            for name in &names {
                external
                    .delete(name)
                    .map_err(|e| CleanupError::new(Step::ExternalMetadata, e))?;
            }
        }
        // Every input consumed: nothing of this incarnation is left in the master.
        lock(&self.offboarding).scratch.remove(&key);
        Ok(())
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

/// Takes up to `budget` keys out of a key index (the segment or disk is being emptied; moving
/// the strings out avoids cloning them).
fn take_keys(keys: &mut std::collections::BTreeSet<String>, budget: usize) -> std::collections::BTreeSet<String> {
    match keys.iter().nth(budget).cloned() {
        Some(first_left) => {
            let rest = keys.split_off(&first_left);
            std::mem::replace(keys, rest)
        }
        None => std::mem::take(keys),
    }
}

/// A master runs its own steps (tests and embedders stepping a job by hand).
impl OffboardingSteps for super::Master {
    fn run_step(&mut self, step: Step, job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        self.run_step_shared(step, job)
    }
}

/// The inline runner's view of the master.
struct Inline<'a>(&'a MasterCore);

impl OffboardingSteps for Inline<'_> {
    fn run_step(&mut self, step: Step, job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        self.0.run_step_shared(step, job)
    }
}

#[cfg(not(loom))]
mod pool {
    use super::*;
    use crate::offboarding::executor::{Executor, ExecutorConfig, SharedSteps};
    use crate::offboarding::queue::PushError;

    /// The workers' view of the master. A failed step is counted in [`Stats`] here (the
    /// executor exports the metric and schedules the retry), so `stats().step_failures` agrees
    /// with the metrics in both offboarding modes.
    ///
    /// [`Stats`]: crate::telemetry::Stats
    impl SharedSteps for MasterCore {
        fn run_step(&self, step: Step, job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
            let r = self.run_step_shared(step, job);
            if r.is_err() {
                lock(&self.stats).stats.step_failures[step as usize] += 1;
            }
            r
        }
    }

    impl MasterCore {
        /// Sets who runs jobs; starting or stopping the workers as needed.
        pub(in crate::master) fn set_driver(&self, me: &Arc<MasterCore>, driver: OffboardingDriver) {
            let driver = driver.resolve(&self.live.config().load());
            if driver != OffboardingDriver::Workers {
                self.stop_offboarding_workers();
            }
            {
                let mut off = lock(&self.offboarding);
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
            let mut pool = lock(&self.pool);
            if pool.is_some() {
                return;
            }
            let config = ExecutorConfig::from_config(&self.live.config().load());
            let weak = Arc::downgrade(me);
            let on_complete = move |done: crate::offboarding::Completed| {
                if let Some(core) = weak.upgrade() {
                    let at_ms = core.now_ms();
                    core.record(MasterEvent::Offboarded {
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
                    lock(&self.offboarding).driver = Some(OffboardingDriver::Inline);
                }
            }
        }

        pub(super) fn submit_to_workers(&self, jobs: Vec<ClientOffboardingJob>, now: u64) {
            let pool = lock(&self.pool);
            for job in jobs {
                let refused = match pool.as_ref() {
                    Some(p) => p.0.submit(job).err().map(|e| match e {
                        PushError::Full(j) | PushError::Closed(j) => j,
                    }),
                    None => Some(job),
                };
                if let Some(job) = refused {
                    lock(&self.offboarding).park(job, now + self.tick_ms);
                }
            }
        }

        /// Stops the workers (if running); parks every job they hand back. Returns how many.
        pub(in crate::master) fn stop_offboarding_workers(&self) -> usize {
            let Some(Pool(exec)) = lock(&self.pool).take() else {
                return 0;
            };
            let drain = std::time::Duration::from_millis(self.live.config().load().shutdown_drain_ms);
            let left = exec.shutdown(drain);
            let n = left.len();
            let now = self.now_ms();
            let mut off = lock(&self.offboarding);
            for job in left {
                off.park(job, now);
            }
            n
        }

        /// Jobs queued for the workers and not yet taken (the queue-depth gauge).
        pub(in crate::master) fn worker_queue_depth(&self) -> usize {
            lock(&self.pool).as_ref().map_or(0, |p| p.0.queued())
        }

        /// Jobs queued for or waiting for a retry in the workers.
        pub fn jobs_in_workers(&self) -> usize {
            lock(&self.pool).as_ref().map_or(0, |p| p.0.queued() + p.0.retrying())
        }
    }
}

#[cfg(loom)]
impl MasterCore {
    pub(in crate::master) fn set_driver(&self, _me: &Arc<MasterCore>, driver: OffboardingDriver) {
        let driver = match driver.resolve(&self.live.config().load()) {
            OffboardingDriver::Workers => OffboardingDriver::Outbox,
            d => d,
        };
        lock(&self.offboarding).driver = Some(driver);
    }

    pub(super) fn submit_to_workers(&self, jobs: Vec<ClientOffboardingJob>, _now: u64) {
        lock(&self.offboarding).outbox.extend(jobs);
    }

    pub(in crate::master) fn stop_offboarding_workers(&self) -> usize {
        0
    }

    pub(in crate::master) fn worker_queue_depth(&self) -> usize {
        0
    }
}
