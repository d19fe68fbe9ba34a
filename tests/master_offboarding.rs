//! The reference master's offboarding: who runs the jobs (inline, an outbox, its workers) and
//! switching between them, the start rate limit, what the master counts and shows of a job.
//! Regression tests for defects found by a review against the RFC (issue 16) and boundary tests
//! that kill mutants (issue 17, MUTANTS.md).

mod common;

use common::master::{config, M};
use common::rig::Rig;
use common::stepped::Stepped;
use mooncake_liveness::config::OffboardingMode;
use mooncake_liveness::master::{MasterEvent, MasterOptions, OffboardingDriver};
use mooncake_liveness::offboarding::Step;
use mooncake_liveness::LivenessConfig;
use mooncake_liveness::LivenessEvent;

/// Defect 3: async mode was invisible to the master's own accounting.
#[test]
fn async_mode_counts_offline_completions_and_lock_free_recoveries() {
    let mut r = Rig::new(OffboardingMode::Async);
    r.m.mount("c1", "s1", 1 << 20).unwrap();
    r.m.mount("c2", "s2", 1 << 20).unwrap();
    r.m.fail_step(Step::Quota, 3);
    r.run_to(11_000, &["c2"]);
    // A recovery through the lock-free Ping path, straight on the liveness core.
    let id = r.m.client_id("c1").unwrap();
    r.m.liveness_handle().ping(id, None);
    assert_eq!(r.m.stats().recoveries, 1, "{:?}", r.m.stats());
    r.run_to(41_500, &["c2"]);
    let s = r.m.stats();
    assert_eq!(
        (s.offline, s.jobs_pending),
        (1, 1),
        "an Offline incarnation is not Active: {s:?}"
    );
    assert_eq!(s.active, 1);
    let attempts = r.until_offboarded("c1", &["c2"]);
    assert_eq!(attempts, 4, "three injected failures, then success");
    let s = r.m.stats();
    assert_eq!((s.offline, s.jobs_completed, s.active), (0, 1, 1), "{s:?}");
}

/// Defect 5: switching the driver again dropped jobs not taken yet, and a job an executor
/// refused could not be given back.
#[test]
fn jobs_survive_driver_switches_and_can_be_given_back() {
    let mut m = M::with(MasterOptions {
        offboarding: OffboardingDriver::Outbox,
        ..MasterOptions::default()
    });
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    m.at(31_000);
    m.m.hand_jobs_to_executor(true);
    let mut jobs = m.m.take_jobs();
    assert_eq!(jobs.len(), 1, "the job minted before the switch is still there");
    m.m.return_job(jobs.pop().unwrap());
    assert!(m.m.take_jobs().is_empty(), "a returned job waits for the next tick");
    m.at(31_100);
    let job = m.m.take_jobs().pop().expect("handed on again at the next tick");
    m.m.return_job(job);
    m.m.hand_jobs_to_executor(false);
    m.at(31_200);
    assert!(m
        .m
        .take_events()
        .iter()
        .any(|e| matches!(e, MasterEvent::Offboarded { .. })));
    m.at(31_200).mount("c1", "s1", 1 << 20).unwrap();
}

/// Defect 9a: the diagnostic query showed `offboarding: bool` but not the job's attempts and
/// last error.
#[test]
fn query_shows_the_parked_jobs_attempts_and_last_error() {
    let mut m = M::new();
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    m.m.fail_step(Step::Segments, 2);
    m.at(30_100);
    let q = m.m.query(Some("c1"), None);
    let job = q.clients[0].job.as_ref().expect("the parked job is shown");
    assert_eq!(job.attempts, 1);
    assert!(job.last_error.as_deref().unwrap_or("").contains("segments"), "{job:?}");
}

/// Found by the `differential` fuzz target in async mode (seeds `async_*`, e.g. `async_completion`):
/// with the `Outbox` driver the embedder's executor runs the jobs, and the master had no way
/// to hear how an attempt ended: no `offboarded` or `offboarding_retry` event, and `stats()`
/// counted a job completed elsewhere as Offline and pending for ever (the Active count short by
/// one). Before the fix `report_offboarding` did not exist and the embedder could not report.
#[test]
fn an_outbox_executors_attempts_reach_the_masters_events_and_stats() {
    use mooncake_liveness::offboarding::complete_client_offboarding;
    let mut m = M::with(MasterOptions {
        offboarding: OffboardingDriver::Outbox,
        ..MasterOptions::default()
    });
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    m.at(0).mount("c2", "s2", 1 << 20).unwrap();
    m.m.fail_step(Step::Segments, 1);
    for t in (1_000..=31_000).step_by(1_000) {
        m.at(t).ping("c2");
    }
    let live = m.m.liveness_handle();
    let job = m.m.take_jobs().pop().expect("c1's job in the outbox");
    let job = match complete_client_offboarding(&mut m.m, live.registry(), job) {
        Err(job) => job,
        Ok(_) => panic!("the injected failure did not fail the attempt"),
    };
    m.m.report_offboarding(Err(&job));
    let done = complete_client_offboarding(&mut m.m, live.registry(), job).expect("second attempt completes");
    m.m.report_offboarding(Ok(&done));
    let jobs: Vec<_> =
        m.m.take_events()
            .into_iter()
            .filter(|e| !matches!(e, MasterEvent::Liveness(LivenessEvent::Transition(_))))
            .collect();
    assert!(
        matches!(
            jobs.as_slice(),
            [
                MasterEvent::OffboardingRetry {
                    step: Step::Segments,
                    attempt: 1,
                    ..
                },
                MasterEvent::Offboarded { attempts: 2, .. }
            ]
        ),
        "{jobs:?}"
    );
    let s = m.m.stats();
    assert_eq!(
        (
            s.active,
            s.offline,
            s.jobs_pending,
            s.jobs_completed,
            s.step_failures[1]
        ),
        (1, 0, 0, 1, 1),
        "{s:?}"
    );
}

/// decisions.md "Mass offboarding": job starts are rate-limited (1 per second, burst 1): three
/// clients committed Offline at the same tick start their jobs one second apart.
#[test]
fn offboarding_job_starts_follow_the_rate_limit() {
    let config = LivenessConfig {
        offboarding_rate_per_sec: 1.0,
        offboarding_burst: 1,
        ..config()
    };
    let options = MasterOptions {
        offboarding: OffboardingDriver::Inline,
        ..MasterOptions::default()
    };
    let mut s = Stepped::new(config, options);
    for (c, seg) in [("c1", "s1"), ("c2", "s2"), ("c3", "s3")] {
        s.at(0, &[]).mount(c, seg, 1_000).unwrap();
    }
    s.at(40_000, &[]);
    let mut offboarded: Vec<u64> =
        s.m.take_events()
            .into_iter()
            .filter_map(|e| match e {
                MasterEvent::Offboarded { at_ms, .. } => Some(at_ms),
                _ => None,
            })
            .collect();
    offboarded.sort_unstable();
    assert_eq!(offboarded, vec![30_000, 31_000, 32_000]);
}
