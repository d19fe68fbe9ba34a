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

use common::executor::{account, fate, spawn, FailOnce, DRAIN};
use common::{model_covering, Master};
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
        let clients = [ClientId(1)];
        let mut master = Master::new();
        let jobs = master.offline_jobs(&clients);
        let (exec, done) = spawn(&master, FailOnce::new(Step::Segments));
        for job in jobs {
            exec.submit(job).expect("an open queue with room takes the job");
        }
        let returned = exec.shutdown(DRAIN);
        let completed = done.take();
        account(&master, &clients, &completed, &returned, &[]);
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
