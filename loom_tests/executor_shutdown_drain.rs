//! Race: the offboarding executor's worker against `shutdown` (close, drain, stop, join, collect)
//! with two jobs submitted just before it.
//!
//! Invariant 18 (the executor's ground rules: "a job is always in exactly one place"): every
//! job ends either completed (`on_complete` saw it, its record erased) or handed back by
//! `shutdown` (still Offline, still the client's record), exactly once: never both, never
//! neither. The worker may complete a job before the drain, during it, or be stopped with it in
//! hand (before running it: the returned list; between two steps: interrupted, the returned
//! list); what it never took comes back from the queue.
//!
//! Allowed outcomes: 2, 1 or 0 jobs completed (the rest handed back), and among the handed-back
//! jobs both one never run and one interrupted between steps.
#![cfg(loom)]

mod common;

use common::executor::{fate, submit_all_then_shut_down, Succeed};
use common::model_covering;
use mooncake_liveness::ClientId;

/// Two jobs submitted, then `shutdown` with a one-poll drain, racing the one worker.
#[test]
fn shutdown_completes_or_hands_back_every_job() {
    let expected = [
        "completed 2, handed back 0",
        "completed 1, handed back 1",
        "completed 0, handed back 2",
        "handed back: never run",
        "handed back: interrupted",
    ];
    model_covering("shutdown_completes_or_hands_back_every_job", &expected, |seen| {
        let (completed, returned) = submit_all_then_shut_down(&[ClientId(1), ClientId(2)], Succeed);
        for d in &completed {
            assert_eq!(d.attempts, 1, "{d:?}: no step fails");
        }
        seen.saw(format!("completed {}, handed back {}", completed.len(), returned.len()));
        for job in &returned {
            seen.saw(fate(job));
        }
    });
}
