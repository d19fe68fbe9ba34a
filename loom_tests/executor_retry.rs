//! Race: the offboarding executor's retry path (a failed job parked in the retry table, taken
//! again when due) against `shutdown`, which stops retries when its drain begins and collects
//! the retry table after the worker is joined.
//!
//! Invariant 18 with retries (the executor's ground rules: "a job is always in exactly one
//! place: the queue, a worker's hands, the retry table, the returned list, or completed"): a job
//! whose first attempt fails is either retried and completed (`on_complete` sees attempt 2,
//! resumed at the failed step: invariant 17) or handed back by `shutdown` — from the retry
//! table, from the queue or interrupted — exactly once, never lost, never duplicated.
//!
//! Allowed outcomes: completed after the retry; handed back waiting for its retry, never run,
//! or interrupted.
#![cfg(loom)]

mod common;

use common::executor::{fate, submit_all_then_shut_down, FailOnce};
use common::model_covering;
use mooncake_liveness::offboarding::Step;
use mooncake_liveness::ClientId;

const COMPLETED: &str = "completed after a retry";
const WAITING: &str = "handed back: failed, waiting for its retry";

/// One job whose `Segments` step fails on its first run, submitted, then `shutdown` with a
/// one-poll drain, racing the one worker (retries are due at once: backoff 0).
#[test]
fn failed_job_is_retried_or_handed_back() {
    let expected = [COMPLETED, WAITING, "handed back: never run", "handed back: interrupted"];
    model_covering("failed_job_is_retried_or_handed_back", &expected, |seen| {
        let (completed, returned) = submit_all_then_shut_down(&[ClientId(1)], FailOnce::new(Step::Segments));
        for d in &completed {
            assert_eq!(d.attempts, 2, "{d:?}: the first attempt fails");
            seen.saw(COMPLETED);
        }
        for job in &returned {
            let fate = fate(job);
            if fate == WAITING {
                // The failed attempt's progress is kept: the retry would resume at `Segments`.
                assert_eq!(job.steps_done(), [Step::Metadata], "{job:?}");
            }
            seen.saw(fate);
        }
    });
}
