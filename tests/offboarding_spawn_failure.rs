//! The executor when it cannot start all its workers (issue 29, defect 5): the workers already
//! started are stopped and joined, nothing they held survives (the target — the master in the
//! master's pool — and the liveness core), and the error says what failed.

use mooncake_liveness::config::MAX_OFFBOARDING_WORKERS;
use mooncake_liveness::offboarding::executor::{Executor, ExecutorConfig, WorkerBody};
use mooncake_liveness::offboarding::{CleanupError, ClientOffboardingJob, Progress, Step};
use mooncake_liveness::{Clock, Liveness, LivenessConfig, ManualClock};
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Stands in for the master: the workers hold it through the executor.
struct Target;

impl mooncake_liveness::offboarding::executor::SharedSteps for Target {
    fn run_step(&self, _: Step, _: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        Ok(Progress::Done)
    }
}

fn liveness() -> Arc<Liveness> {
    Arc::new(Liveness::new(
        Arc::new(ManualClock::new(0)) as Arc<dyn Clock>,
        LivenessConfig::default(),
    ))
}

fn workers(n: usize) -> ExecutorConfig {
    ExecutorConfig {
        workers: n,
        ..ExecutorConfig::from_config(&LivenessConfig::default())
    }
}

#[test]
fn a_failed_spawn_stops_and_joins_the_workers_already_started() {
    let (target, live) = (Arc::new(Target), liveness());
    let (weak_target, weak_live) = (Arc::downgrade(&target), Arc::downgrade(&live));
    let started = Arc::new(AtomicUsize::new(0));
    let exited = Arc::new(AtomicUsize::new(0));
    let (s, e) = (started.clone(), exited.clone());
    let spawn = move |i: usize, body: WorkerBody| {
        if i == 3 {
            return Err(io::Error::other("injected: no more threads"));
        }
        s.fetch_add(1, Ordering::SeqCst);
        let e = e.clone();
        std::thread::Builder::new().spawn(move || {
            body();
            e.fetch_add(1, Ordering::SeqCst);
        })
    };
    let err = Executor::spawn_with(target, live, workers(8), |_| (), spawn).unwrap_err();
    assert_eq!(started.load(Ordering::SeqCst), 3);
    assert_eq!(
        exited.load(Ordering::SeqCst),
        3,
        "spawn returned while started workers still run (detached, never stopped)"
    );
    assert!(
        weak_target.upgrade().is_none(),
        "a leaked worker still holds the target (the master)"
    );
    assert!(
        weak_live.upgrade().is_none(),
        "a leaked worker still holds the liveness core"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("worker 3 of 8") && msg.contains("injected: no more threads"),
        "{msg}"
    );
    assert_eq!(err.kind(), io::ErrorKind::Other, "the spawn error's kind is kept");
}

#[test]
fn more_workers_than_the_bound_are_refused_before_any_starts() {
    let spawned = AtomicUsize::new(0);
    let n = MAX_OFFBOARDING_WORKERS + 1;
    let err = Executor::spawn_with(
        Arc::new(Target),
        liveness(),
        workers(n),
        |_| (),
        |_, _| {
            spawned.fetch_add(1, Ordering::SeqCst);
            Err(io::Error::other("not reached"))
        },
    )
    .unwrap_err();
    assert_eq!(spawned.load(Ordering::SeqCst), 0);
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains(&n.to_string()), "{err}");
}
