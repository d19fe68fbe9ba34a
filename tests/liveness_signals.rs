//! The liveness core's signal and offboarding entry points at their edges: a mount with a token
//! of an erased or unknown incarnation, `prepare_client_offboarding`'s count, how ids are shown,
//! and a job's steps (a retry resumes at the failed step; a step's label; its batch count).
//! Boundary tests that kill mutants (issue 17, MUTANTS.md).

mod common;

use common::{config, Harness};
use mooncake_liveness::offboarding::{
    complete_client_offboarding, prepare_client_offboarding, CleanupError, ClientOffboardingJob, OffboardingSteps,
    Progress, Step,
};
use mooncake_liveness::{ClientId, Incarnation, MountOutcome};

const A: u64 = 10_000;
const S: u64 = 20_000;

/// decisions.md question 4: a token naming an incarnation that no longer exists (offboarded and
/// erased, or never existed) is `StaleToken`; the work does not run and nothing is created.
#[test]
fn mount_with_a_token_of_an_erased_or_unknown_incarnation_is_stale() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.run_to(30_000);
    assert_eq!(h.complete_jobs(), 1);
    assert!(h.live.registry().get(ClientId(1)).is_none());
    let mut ran = false;
    let out = h.live.mount(ClientId(1), Some(Incarnation(1)), |_| {
        ran = true;
        Ok::<(), ()>(())
    });
    assert!(matches!(out, MountOutcome::StaleToken), "{out:?}");
    assert!(!ran, "the work ran for a stale token");
    let out = h.live.mount(ClientId(7), Some(Incarnation(1)), |_| Ok::<(), ()>(()));
    assert!(matches!(out, MountOutcome::StaleToken), "{out:?}");
    assert!(h.live.registry().get(ClientId(7)).is_none());
    assert!(h.live.registry().get(ClientId(1)).is_none());
    // Without a token the next incarnation starts.
    match h.live.mount(ClientId(1), None, |_| Ok::<(), ()>(())) {
        MountOutcome::Mounted { record, created, .. } => {
            assert!(created);
            assert_eq!(record.incarnation(), Incarnation(2));
        }
        other => panic!("{other:?}"),
    }
}

/// `prepare_client_offboarding` commits Suspected → Offline: the Suspected count (which the
/// mass-suspicion brake reads) drops by one.
#[test]
fn prepare_client_offboarding_decrements_the_suspected_count() {
    let mut h = Harness::new(config(A, S));
    let rec = h.mount(1);
    h.mount(2);
    h.run_to(10_000);
    assert_eq!(h.live.suspected_count(), 2);
    h.clock.set_ms(30_000);
    prepare_client_offboarding(&h.live, &rec).expect("due");
    assert_eq!(h.live.suspected_count(), 1);
}

/// Log lines name a client by its id as 32 hex digits (Mooncake's UUID pair) and an incarnation
/// by its number.
#[test]
fn client_ids_and_incarnations_display_as_logged() {
    assert_eq!(ClientId(0xab).to_string(), format!("{:0>32}", "ab"));
    assert_eq!(ClientId(u128::MAX).to_string(), "f".repeat(32));
    assert_eq!(Incarnation(3).to_string(), "3");
}

/// Runs every step at once, except that `fail` fails on its first call; records each call.
struct FailOnce {
    fail: Step,
    failed: bool,
    calls: Vec<Step>,
}

impl OffboardingSteps for FailOnce {
    fn run_step(&mut self, step: Step, _job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        self.calls.push(step);
        if step == self.fail && !self.failed {
            self.failed = true;
            return Err(CleanupError::new(step, "injected"));
        }
        Ok(Progress::Done)
    }
}

/// Invariant 17: a failed attempt keeps every step it completed, and the retry runs only the
/// failed step and those after it (each step has its own bit in the job's progress).
#[test]
fn a_retry_runs_only_the_failed_step_and_the_later_ones() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.run_to(30_000);
    let job = h.jobs.pop().expect("Offline at 30_000");
    let mut steps = FailOnce {
        fail: Step::Quota,
        failed: false,
        calls: Vec::new(),
    };
    let job = complete_client_offboarding(&mut steps, h.live.registry(), job).unwrap_err();
    assert_eq!(job.steps_done(), [Step::Metadata, Step::Segments, Step::LocalDisk]);
    assert!(!job.is_done(Step::Quota) && !job.is_done(Step::ExternalMetadata));
    let done = complete_client_offboarding(&mut steps, h.live.registry(), job).unwrap();
    assert_eq!((done.attempts, done.erased), (2, true));
    let retry = &steps.calls[4..];
    assert_eq!(retry, [Step::Quota, Step::ExternalMetadata]);
}

/// Telemetry receives a step as its trace-format name.
#[test]
fn a_step_label_is_its_name() {
    let labels: Vec<&'static str> = Step::ALL.into_iter().map(Into::into).collect();
    assert_eq!(
        labels,
        ["metadata", "segments", "local_disk", "quota", "external_metadata"]
    );
}

/// The metadata step answers `More` `left` times, recording how many batches the job says ran.
struct Batched {
    left: u32,
    seen: Vec<u32>,
}

impl OffboardingSteps for Batched {
    fn run_step(&mut self, step: Step, job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        if step != Step::Metadata {
            return Ok(Progress::Done);
        }
        self.seen.push(job.step_batches());
        if self.left == 0 {
            return Ok(Progress::Done);
        }
        self.left -= 1;
        Ok(Progress::More)
    }
}

/// A step done in bounded batches sees how many of its batches already ran (a `Progress::More`
/// answer counts one), so it can resume where it stands.
#[test]
fn a_batched_step_sees_its_batch_count() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.run_to(30_000);
    let job = h.jobs.pop().expect("Offline at 30_000");
    let mut steps = Batched {
        left: 2,
        seen: Vec::new(),
    };
    assert!(complete_client_offboarding(&mut steps, h.live.registry(), job).is_ok());
    assert_eq!(steps.seen, [0, 1, 2]);
}
