//! The job: its steps, their progress, retries, and completion.

use crate::clock::BaseMs;
use crate::liveness::record::OfflineCommitted;
use crate::liveness::{ClientId, ClientLivenessRecord, Incarnation, Registry};
use crate::sync::Arc;
use std::fmt;

/// One step of offboarding, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Objects, replicas and tasks that reference the incarnation.
    Metadata,
    /// Unmount its memory segments and release their allocator registrations.
    Segments,
    /// Its LocalDisk registration, offload and promotion work.
    LocalDisk,
    /// Converge tenant quotas (apply the refunds the earlier steps recorded).
    Quota,
    /// Delete its segments' entries in the external metadata store.
    ExternalMetadata,
}

impl Step {
    /// Every step, in execution order.
    pub const ALL: [Step; 5] = [
        Step::Metadata,
        Step::Segments,
        Step::LocalDisk,
        Step::Quota,
        Step::ExternalMetadata,
    ];

    /// The name used by `fail_step` and events.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Metadata => "metadata",
            Self::Segments => "segments",
            Self::LocalDisk => "local_disk",
            Self::Quota => "quota",
            Self::ExternalMetadata => "external_metadata",
        }
    }

    /// Parses a step name.
    pub fn parse(name: &str) -> Option<Step> {
        Step::ALL.into_iter().find(|s| s.as_str() == name)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A step's label (its [`Step::as_str`]): how telemetry receives a step without importing it.
impl From<Step> for &'static str {
    fn from(step: Step) -> Self {
        step.as_str()
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A step that failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("offboarding step {step} failed: {message}")]
#[non_exhaustive]
pub struct CleanupError {
    /// The step.
    pub step: Step,
    /// What went wrong.
    pub message: String,
}

impl CleanupError {
    /// A failure of `step`.
    pub fn new(step: Step, message: impl Into<String>) -> Self {
        Self {
            step,
            message: message.into(),
        }
    }
}

/// How far one call of [`OffboardingSteps::run_step`] got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// The step is complete.
    Done,
    /// A bounded batch was done; call again (locks may be released in between).
    More,
}

/// What runs the steps: the master's metadata, or [`NoResources`] for a liveness-only embedding.
///
/// Every step must be idempotent: a retry runs it again only if it did not complete, and a
/// step interrupted after some batches resumes where the metadata now stands. A call should
/// do a bounded amount of work and answer [`Progress::More`] when there is more, so that no
/// lock is held across a whole job.
pub trait OffboardingSteps {
    /// Runs (a bounded batch of) `step` for `job`'s incarnation.
    fn run_step(&mut self, step: Step, job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError>;
}

/// No resources to clean: every step succeeds at once.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoResources;

impl OffboardingSteps for NoResources {
    fn run_step(&mut self, _step: Step, _job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        Ok(Progress::Done)
    }
}

/// The retryable terminal cleanup of one Offline incarnation.
///
/// A capability: not `Clone`, no public constructor; minted only from the proof of winning the
/// Suspected → Offline commit, so there is exactly one per incarnation (invariant 15).
#[derive(Debug)]
pub struct ClientOffboardingJob {
    record: Arc<ClientLivenessRecord>,
    committed_at_ms: u64,
    attempts: u32,
    done: u8,
    last_error: Option<CleanupError>,
    /// Batches already run of the step in progress (0: the step has not started).
    pub(crate) step_batches: u32,
}

/// A job that completed: its record was compare-and-erased.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completed {
    /// The client.
    pub client: ClientId,
    /// The incarnation.
    pub incarnation: Incarnation,
    /// Attempts it took (1 = first try).
    pub attempts: u32,
    /// Whether the registry still mapped the client to this record (it should, barring a
    /// restore that replaced it).
    pub erased: bool,
}

impl ClientOffboardingJob {
    /// Marks the steps of a restored job done and sets its attempt count (snapshot restore).
    /// Restored progress is a lower bound: steps re-run are idempotent.
    pub(crate) fn restore_progress(&mut self, steps: &[Step], attempts: u32) {
        for s in steps {
            self.done |= s.bit();
        }
        self.attempts = attempts;
    }

    /// Keeps only `steps` as done (restore dropping claims the snapshot contradicts).
    #[doc(hidden)] // for the reference master's restore, not public API
    pub fn reset_progress(&mut self, steps: &[Step]) {
        self.done = 0;
        for s in steps {
            self.done |= s.bit();
        }
    }

    /// Mints the job for `record` from the proof that the caller committed it Offline.
    pub(crate) fn from_commit(record: Arc<ClientLivenessRecord>, _proof: OfflineCommitted, at: BaseMs) -> Self {
        Self {
            record,
            committed_at_ms: at.0,
            attempts: 0,
            done: 0,
            last_error: None,
            step_batches: 0,
        }
    }

    /// The client being offboarded.
    pub fn client(&self) -> ClientId {
        self.record.client()
    }

    /// The incarnation being offboarded.
    pub fn incarnation(&self) -> Incarnation {
        self.record.incarnation()
    }

    /// The Offline record (the remount barrier while the job is pending).
    pub fn record(&self) -> &Arc<ClientLivenessRecord> {
        &self.record
    }

    /// Base-clock time at which Offline was committed.
    pub fn committed_at_ms(&self) -> u64 {
        self.committed_at_ms
    }

    /// Attempts made so far.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Batches of the step in progress already run in this attempt ([`Progress::More`] answers).
    pub fn step_batches(&self) -> u32 {
        self.step_batches
    }

    /// Has `step` completed?
    pub fn is_done(&self, step: Step) -> bool {
        self.done & step.bit() != 0
    }

    /// The steps completed so far, in order.
    pub fn steps_done(&self) -> Vec<Step> {
        Step::ALL.into_iter().filter(|s| self.is_done(*s)).collect()
    }

    /// The last failure, if the last attempt failed.
    pub fn last_error(&self) -> Option<&CleanupError> {
        self.last_error.as_ref()
    }

    /// The delay before retry number `attempt` (1 = after the first failure):
    /// `base · 2^(attempt−1)`, capped at `max`.
    pub fn backoff_ms(attempt: u32, base_ms: u64, max_ms: u64) -> u64 {
        let shift = attempt.saturating_sub(1).min(63);
        base_ms
            .checked_shl(shift)
            .filter(|v| v >> shift == base_ms)
            .unwrap_or(u64::MAX)
            .min(max_ms)
    }
}

/// Runs the steps of `job` that are not done yet, in order, then compare-and-erases its record.
///
/// On a failed step the job comes back (`Err`) with the attempt counted and the failure
/// recorded; completed steps stay done, so the retry resumes at the failed step. The record
/// stays in the registry, Offline, as the remount barrier until this returns `Ok`.
pub fn complete_client_offboarding<S: OffboardingSteps + ?Sized>(
    steps: &mut S,
    registry: &Registry,
    mut job: ClientOffboardingJob,
) -> Result<Completed, ClientOffboardingJob> {
    job.attempts = job.attempts.saturating_add(1);
    for step in Step::ALL {
        if job.is_done(step) {
            continue;
        }
        loop {
            match steps.run_step(step, &mut job) {
                Ok(Progress::Done) => break,
                Ok(Progress::More) => job.step_batches += 1,
                Err(e) => {
                    tracing::warn!(client = %job.client(), incarnation = job.incarnation().0, step = %step,
                        attempt = job.attempts, error = %e.message, "offboarding step failed");
                    job.last_error = Some(e);
                    job.step_batches = 0;
                    return Err(job);
                }
            }
        }
        job.step_batches = 0;
        job.done |= step.bit();
    }
    job.last_error = None;
    let erased = registry.compare_and_erase(&job.record);
    tracing::info!(client = %job.client(), incarnation = job.incarnation().0, attempts = job.attempts, "offboarded");
    Ok(Completed {
        client: job.client(),
        incarnation: job.incarnation(),
        attempts: job.attempts,
        erased,
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let table = [
            (1, 200),
            (2, 400),
            (3, 800),
            (4, 1_600),
            (5, 3_200),
            (6, 5_000),
            (40, 5_000),
            (200, 5_000),
        ];
        for (attempt, want) in table {
            assert_eq!(
                ClientOffboardingJob::backoff_ms(attempt, 200, 5_000),
                want,
                "attempt {attempt}"
            );
        }
        assert_eq!(ClientOffboardingJob::backoff_ms(0, 200, 5_000), 200);
    }

    /// The one job of client 1, whose record committed Suspected at 1_000 and Offline at 2_000.
    fn offline_job() -> ClientOffboardingJob {
        let (_registry, mut jobs) = tests_support::jobs(1);
        jobs.pop().expect("one job")
    }

    /// Restore keeps exactly the steps the snapshot's claims support: `reset_progress` replaces
    /// the progress (it does not add to it), and leaves the attempt count alone.
    #[test]
    fn reset_progress_keeps_exactly_the_given_steps() {
        let mut job = offline_job();
        job.restore_progress(&[Step::Metadata, Step::Segments, Step::Quota], 2);
        assert_eq!(job.steps_done(), [Step::Metadata, Step::Segments, Step::Quota]);
        job.reset_progress(&[Step::Metadata, Step::LocalDisk]);
        assert_eq!(job.steps_done(), [Step::Metadata, Step::LocalDisk]);
        assert_eq!(job.attempts(), 2);
    }

    /// The job carries the base-clock time of its Offline commit (the completion latency
    /// telemetry and the snapshot count from it).
    #[test]
    fn a_job_knows_when_it_was_committed() {
        assert_eq!(offline_job().committed_at_ms(), 2_000);
    }

    #[test]
    fn step_names_round_trip() {
        for s in Step::ALL {
            assert_eq!(Step::parse(s.as_str()), Some(s));
        }
        assert_eq!(Step::parse("nope"), None);
    }
}

/// Jobs for the tests of the offboarding modules: minted by each record's own evaluation, as the
/// monitor applies it (building them through the monitor would make `offboarding` import the
/// monitor, which imports it).
#[cfg(all(test, not(loom)))]
pub(super) mod tests_support {
    use super::*;
    use crate::clock::LivenessMs;
    use crate::liveness::record::Evaluation;
    use crate::liveness::Ttls;

    /// The one job of each of clients `1..=n` (Suspected at 1_000, Offline at 2_000; not in any
    /// registry) and an empty registry to complete them against.
    pub(in crate::offboarding) fn jobs(n: u128) -> (Registry, Vec<ClientOffboardingJob>) {
        let ttls = Ttls {
            active_ms: 1_000,
            suspicion_ms: 1_000,
        };
        let jobs = (1..=n)
            .map(|id| {
                let rec = Arc::new(ClientLivenessRecord::new(
                    ClientId(id),
                    Incarnation(1),
                    LivenessMs(0),
                    ttls.active_ms,
                ));
                assert!(matches!(
                    rec.evaluate(LivenessMs(1_000), ttls, false),
                    Evaluation::Suspected { .. }
                ));
                match rec.evaluate(LivenessMs(2_000), ttls, false) {
                    Evaluation::Offline { proof, .. } => ClientOffboardingJob::from_commit(rec, proof, BaseMs(2_000)),
                    other => panic!("expected the Offline commit at 2_000, got {other:?}"),
                }
            })
            .collect();
        (Registry::default(), jobs)
    }
}
