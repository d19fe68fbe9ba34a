//! The master's offboarding: the five steps over its metadata, fault injection, retries on the
//! backoff schedule, and the start rate limit.
//!
//! Cost is proportional to what the incarnation holds: the per-owner segment index, each
//! segment's key set, the LocalDisk key set and the per-executor task index. Nothing sweeps the
//! whole metadata (upstream walks every shard per batch).
//!
//! Synchronous mode: the tick that commits Offline runs the first attempt inline; a failed job
//! waits in `pending` until `backoff·2^(k−1)` (capped) after failure k, and is retried by the
//! first tick at or after that time. The Offline record stays in the registry (the barrier)
//! until the job completes.

use super::{Master, MasterEvent, ReplicaKind};
use crate::liveness::{ClientId, Incarnation};
use crate::offboarding::brakes::TokenBucket;
use crate::offboarding::{
    complete_client_offboarding, CleanupError, ClientOffboardingJob, OffboardingSteps, Progress, Step,
};

/// Keys (and tasks) the `metadata` step handles per call.
pub(super) const KEYS_PER_BATCH: usize = 1024;
use crate::sync::Arc;
use std::collections::BTreeMap;

/// The master's offboarding state.
#[derive(Debug, Default)]
pub(super) struct Offboarding {
    /// Jobs waiting for a retry (or a rate-limit token), by (due time, sequence).
    pending: BTreeMap<(u64, u64), ClientOffboardingJob>,
    seq: u64,
    /// Injected failures left per step (`fail_step`).
    faults: BTreeMap<Step, u32>,
    /// While a step runs: where quota refunds go instead of the quota table.
    pub(super) deferred_refunds: Option<BTreeMap<String, u64>>,
    /// Per-incarnation inputs of the later steps, kept in the master (not in the job) so a
    /// snapshot captures them and a job restarted from fewer steps still converges.
    pub(super) scratch: BTreeMap<(ClientId, Incarnation), Scratch>,
    bucket: Option<TokenBucket>,
    /// Asynchronous mode: fresh jobs wait here for the embedder's executor.
    outbox: Option<Vec<ClientOffboardingJob>>,
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
    pub fn fail_step(&mut self, step: Step, times: u32) {
        *self.offboarding.faults.entry(step).or_default() += times;
    }

    /// Pending (failed or rate-limited) offboarding jobs.
    pub fn pending_jobs(&self) -> impl Iterator<Item = (ClientId, PendingJob)> + '_ {
        self.offboarding.pending.iter().map(|((due, _), job)| {
            let status = PendingJob {
                attempts: job.attempts(),
                steps_done: job.steps_done(),
                last_error: job.last_error().map(|e| e.to_string()),
                next_attempt_ms: *due,
            };
            (job.client(), status)
        })
    }

    /// The progress of the pending job of `(client, incarnation)` (snapshot capture).
    pub(super) fn pending_progress(&self, client: ClientId, inc: Incarnation) -> Option<(Vec<Step>, u32, u64)> {
        self.offboarding
            .pending
            .values()
            .find(|j| j.client() == client && j.incarnation() == inc)
            .map(|j| (j.steps_done(), j.attempts(), j.committed_at_ms()))
    }

    /// Was `segment` unmounted by an offboarding job of a client other than `asker` that has not
    /// completed? Its name stays taken until then.
    pub(super) fn held_by_pending_offboarding(&self, segment: &str, asker: ClientId) -> bool {
        self.offboarding
            .scratch
            .iter()
            .any(|((c, _), s)| *c != asker && s.segment_names.iter().any(|n| n == segment))
    }

    /// Offboarding scratch (snapshot capture).
    pub(super) fn scratch(&self) -> &BTreeMap<(ClientId, Incarnation), Scratch> {
        &self.offboarding.scratch
    }

    /// Restores scratch and a pending job, due at `due` (snapshot restore).
    pub(super) fn restore_offboarding(
        &mut self,
        scratch: BTreeMap<(ClientId, Incarnation), Scratch>,
        jobs: Vec<ClientOffboardingJob>,
        due: u64,
    ) {
        self.offboarding.scratch = scratch;
        for job in jobs {
            self.park(job, due);
        }
    }

    /// Jobs pending a retry or a token.
    pub(super) fn offboarding_pending(&self) -> usize {
        self.offboarding.pending.len()
    }

    /// Age of the oldest pending job (since its Offline commit), ms.
    pub(super) fn oldest_pending_age(&self, now: u64) -> u64 {
        let oldest = self.offboarding.pending.values().map(|j| j.committed_at_ms()).min();
        oldest.map_or(0, |t| now.saturating_sub(t))
    }

    /// Asynchronous mode: jobs minted by `tick` are not run inline but collected for an
    /// [`Executor`](crate::offboarding::executor::Executor), with the same job type and steps
    /// (the executor runs them against `Mutex<Master>`). Replay keeps the synchronous mode: its
    /// executor is the virtual clock.
    pub fn hand_jobs_to_executor(&mut self, on: bool) {
        self.offboarding.outbox = on.then(Vec::new);
    }

    /// Takes the jobs collected for the executor since the last call.
    pub fn take_jobs(&mut self) -> Vec<ClientOffboardingJob> {
        self.offboarding.outbox.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Runs due retries, then first attempts of `fresh` jobs.
    pub(super) fn run_offboarding(&mut self, fresh: Vec<ClientOffboardingJob>) {
        if let Some(outbox) = self.offboarding.outbox.as_mut() {
            outbox.extend(fresh);
            return;
        }
        let now = self.live.clock().base().now_ms();
        let due: Vec<(u64, u64)> = self
            .offboarding
            .pending
            .range(..(now + 1, 0))
            .map(|(k, _)| *k)
            .collect();
        for key in due {
            if let Some(job) = self.offboarding.pending.remove(&key) {
                self.attempt(job, now);
            }
        }
        for job in fresh {
            self.attempt(job, now);
        }
    }

    fn attempt(&mut self, job: ClientOffboardingJob, now: u64) {
        if job.attempts() == 0 && !self.take_start_token(now) {
            self.park(job, now + self.monitor.tick_ms());
            return;
        }
        let live = self.live.clone();
        let committed_at = job.committed_at_ms();
        match complete_client_offboarding(self, live.registry(), job) {
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
                self.park(job, now.saturating_add(delay));
            }
        }
    }

    fn park(&mut self, job: ClientOffboardingJob, due: u64) {
        self.offboarding.seq += 1;
        self.offboarding.pending.insert((due, self.offboarding.seq), job);
    }

    fn take_start_token(&mut self, now: u64) -> bool {
        let config = self.live.config().load();
        let bucket = self
            .offboarding
            .bucket
            .get_or_insert_with(|| TokenBucket::new(config.offboarding_rate_per_sec, config.offboarding_burst, now));
        bucket.try_take(now)
    }

    fn check_fault(&mut self, step: Step) -> Result<(), CleanupError> {
        match self.offboarding.faults.get_mut(&step) {
            Some(n) if *n > 0 => {
                *n -= 1;
                Err(CleanupError::new(step, "injected failure"))
            }
            _ => Ok(()),
        }
    }

    /// `metadata`: tasks the incarnation executes, tasks touching its segments, replicas on its
    /// segments and its LocalDisk replicas, at most [`KEYS_PER_BATCH`] keys per call. Quota
    /// refunds are recorded in the job.
    fn step_metadata(&mut self, job: &mut ClientOffboardingJob) -> Progress {
        let record = job.record().clone();
        let client = record.client();
        let key = (client, record.incarnation());
        let refunds = std::mem::take(&mut self.offboarding.scratch.entry(key).or_default().refunds);
        self.offboarding.deferred_refunds = Some(refunds);
        let mut budget = KEYS_PER_BATCH;
        for task in self.tasks.of_client(client).into_iter().take(budget) {
            budget -= 1;
            if self.tasks.get(task).is_some_and(|t| Arc::ptr_eq(&t.executor, &record)) {
                self.cancel_task(task);
            }
        }
        for sid in self.owned_segments(&record) {
            let keys = self.take_keys(sid, budget);
            budget -= keys.len();
            for key in &keys {
                self.cancel_tasks_touching(key, sid);
                self.remove_replicas(key, |r| r.segment() == Some(sid));
            }
        }
        if let Some(disk) = self.local_disks.get(&client).filter(|d| Arc::ptr_eq(&d.owner, &record)) {
            let keys: Vec<String> = disk.keys.iter().take(budget).cloned().collect();
            budget -= keys.len();
            for key in keys {
                self.remove_replicas(
                    &key,
                    |r| matches!(&r.kind, ReplicaKind::LocalDisk { owner } if Arc::ptr_eq(owner, &record)),
                );
            }
        }
        self.offboarding.scratch.entry(key).or_default().refunds =
            self.offboarding.deferred_refunds.take().unwrap_or_default();
        if budget == 0 {
            Progress::More
        } else {
            Progress::Done
        }
    }

    /// Takes up to `budget` keys out of a segment's key index (the segment is being emptied;
    /// moving the strings out avoids cloning them).
    fn take_keys(&mut self, sid: super::SegmentId, budget: usize) -> std::collections::BTreeSet<String> {
        let Some(seg) = self.segments.get_mut(sid) else {
            return Default::default();
        };
        match seg.keys.iter().nth(budget).cloned() {
            Some(first_left) => {
                let rest = seg.keys.split_off(&first_left);
                std::mem::replace(&mut seg.keys, rest)
            }
            None => std::mem::take(&mut seg.keys),
        }
    }

    fn owned_segments(&self, record: &Arc<crate::liveness::ClientLivenessRecord>) -> Vec<super::SegmentId> {
        self.segments
            .owned_by(record.client())
            .into_iter()
            .filter(|sid| self.segments.get(*sid).is_some_and(|s| Arc::ptr_eq(&s.owner, record)))
            .collect()
    }

    /// `segments`: unmount the (now empty) segments; remember their names.
    fn step_segments(&mut self, job: &mut ClientOffboardingJob) {
        let record = job.record().clone();
        for sid in self.owned_segments(&record) {
            if let Some(name) = self.drop_segment(sid) {
                let key = (job.client(), job.incarnation());
                self.offboarding
                    .scratch
                    .entry(key)
                    .or_default()
                    .segment_names
                    .push(name);
            }
        }
    }

    /// `local_disk`: the registration goes (its replicas and offloads went with `metadata`).
    fn step_local_disk(&mut self, job: &mut ClientOffboardingJob) {
        let client = job.client();
        if self
            .local_disks
            .get(&client)
            .is_some_and(|d| Arc::ptr_eq(&d.owner, job.record()))
        {
            self.local_disks.remove(&client);
        }
    }

    /// `quota`: apply the refunds recorded by `metadata`.
    fn step_quota(&mut self, job: &mut ClientOffboardingJob) {
        let key = (job.client(), job.incarnation());
        let refunds = std::mem::take(&mut self.offboarding.scratch.entry(key).or_default().refunds);
        for (tenant, bytes) in refunds {
            self.refund(&tenant, bytes);
        }
    }

    /// `external_metadata`: delete the unmounted segments' entries (idempotent).
    fn step_external(&mut self, job: &mut ClientOffboardingJob) -> Result<(), CleanupError> {
        let key = (job.client(), job.incarnation());
        let names = self
            .offboarding
            .scratch
            .get(&key)
            .map(|s| s.segment_names.clone())
            .unwrap_or_default();
        for name in &names {
            self.external
                .delete(name)
                .map_err(|e| CleanupError::new(Step::ExternalMetadata, e))?;
        }
        // Every input consumed: nothing of this incarnation is left in the master.
        self.offboarding.scratch.remove(&key);
        Ok(())
    }
}

impl OffboardingSteps for Master {
    fn run_step(&mut self, step: Step, job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
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
}
