//! What the offboarding executor's models share (`loom_tests/executor_*.rs`): a one-worker
//! configuration, the steps the worker runs, and the accounting each model ends with.
//!
//! The executor is the real one (`offboarding::executor`, built with `--cfg loom`): its worker is
//! a loom thread, its mutexes, atomics and queue are loom's, its idle sleep is a yield and its
//! shutdown deadline counts the drain's polls (`sync::sleep`, `sync::Deadline`). What the models
//! supply is only what an embedder supplies: the steps (`SharedSteps`), the completion callback,
//! and Offline jobs minted by the real monitor.

use super::{Master, ACTIVE_TTL_MS, SUSPICION_TTL_MS};
use loom::sync::Arc;
use mooncake_liveness::offboarding::executor::{Executor, ExecutorConfig, SharedSteps};
use mooncake_liveness::offboarding::{CleanupError, ClientOffboardingJob, Completed, Progress, Step};
use mooncake_liveness::{ClientId, LivenessState, MountOutcome};
use std::sync::atomic::{AtomicBool, Ordering};

/// One worker taking one job per batch; retries due at once (the models' clock does not move,
/// so a backoff > 0 would never come due); a rate limit that never holds a job (burst 8).
pub fn one_worker() -> ExecutorConfig {
    ExecutorConfig {
        workers: 1,
        batch_size: 1,
        capacity: 4,
        retry_backoff_ms: 0,
        retry_max_backoff_ms: 0,
        rate_per_sec: 1e6,
        burst: 8,
    }
}

/// The shutdown deadline the models use. Under loom it allows one poll of the drain (one
/// millisecond: `sync::Deadline`), so both the drained and the cut-short shutdown are reached.
pub const DRAIN: std::time::Duration = std::time::Duration::from_millis(1);

/// Steps with nothing to clean: each succeeds at once.
#[derive(Debug, Default)]
pub struct Succeed;

impl SharedSteps for Succeed {
    fn run_step(&self, _step: Step, _job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        Ok(Progress::Done)
    }
}

/// Steps that fail `step` the first time it runs (for any job) and then succeed. Its flag is a
/// plain `std` atomic: only the worker runs steps, so it is bookkeeping, not part of the race.
#[derive(Debug)]
pub struct FailOnce {
    step: Step,
    failed: AtomicBool,
}

impl FailOnce {
    /// Fails `step` once.
    pub fn new(step: Step) -> Self {
        Self {
            step,
            failed: AtomicBool::new(false),
        }
    }
}

impl SharedSteps for FailOnce {
    fn run_step(&self, step: Step, _job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        if step == self.step && !self.failed.swap(true, Ordering::Relaxed) {
            return Err(CleanupError::new(step, "injected failure"));
        }
        Ok(Progress::Done)
    }
}

/// What the executor's `on_complete` saw. A `std` mutex: the worker pushes, the model reads after
/// `shutdown` has joined the worker; no loom operation runs while it is held.
#[derive(Clone, Debug, Default)]
pub struct Completions(std::sync::Arc<std::sync::Mutex<Vec<Completed>>>);

impl Completions {
    /// Everything completed so far.
    pub fn take(&self) -> Vec<Completed> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// Starts the real executor on `master`'s liveness core with `target` and [`one_worker`].
pub fn spawn<T: SharedSteps>(master: &Master, target: T) -> (Executor<T>, Completions) {
    let done = Completions::default();
    let sink = done.clone();
    let exec = Executor::spawn(Arc::new(target), master.liveness.clone(), one_worker(), move |c| {
        sink.0.lock().unwrap().push(c)
    })
    .expect("loom spawns threads");
    (exec, done)
}

impl Master {
    /// Mounts each of `clients` at the current time (0) and ticks them Suspected, then Offline:
    /// the returned jobs (in client order) are the ones the monitor minted. Single-threaded
    /// setup, before the executor's worker exists.
    pub fn offline_jobs(&mut self, clients: &[ClientId]) -> Vec<ClientOffboardingJob> {
        for &c in clients {
            assert!(matches!(
                self.liveness.mount(c, None, |_| Ok::<(), ()>(())),
                MountOutcome::Mounted { created: true, .. }
            ));
        }
        self.tick_at(ACTIVE_TTL_MS);
        let mut jobs = self.tick_at(ACTIVE_TTL_MS + SUSPICION_TTL_MS).jobs;
        assert_eq!(jobs.len(), clients.len());
        jobs.sort_by_key(|j| j.client().0);
        jobs
    }
}

/// The plain run: `clients` go Offline, their jobs are submitted to the real executor running
/// `target`, then `shutdown` with a one-poll drain races the worker; every job is accounted for
/// ([`account`]). Returns what completed and what shutdown handed back.
pub fn submit_all_then_shut_down<T: SharedSteps>(
    clients: &[ClientId],
    target: T,
) -> (Vec<Completed>, Vec<ClientOffboardingJob>) {
    let mut master = Master::new();
    let jobs = master.offline_jobs(clients);
    let (exec, done) = spawn(&master, target);
    for job in jobs {
        exec.submit(job).expect("an open queue with room takes the job");
    }
    let returned = exec.shutdown(DRAIN);
    let completed = done.take();
    account(&master, clients, &completed, &returned, &[]);
    (completed, returned)
}

/// How a job handed back by `shutdown` (or refused by `submit`) got there, as an outcome label.
pub fn fate(job: &ClientOffboardingJob) -> &'static str {
    match (job.attempts(), job.last_error()) {
        (0, _) => "handed back: never run",
        (_, Some(e)) if e.message == "interrupted by shutdown" => "handed back: interrupted",
        (_, Some(_)) => "handed back: failed, waiting for its retry",
        (_, None) => panic!("a job handed back with no failure after {} attempts", job.attempts()),
    }
}

/// Invariant 18 for one run: every job of `clients` is in exactly one of `completed` (seen by
/// `on_complete`), `returned` (handed back by `shutdown`) or `refused` (handed back to its
/// submitter); none is missing and none is twice. A completed job's record was erased from the
/// registry; a job handed back is still Offline and still the client's record there (the
/// remount barrier).
pub fn account(
    master: &Master,
    clients: &[ClientId],
    completed: &[Completed],
    returned: &[ClientOffboardingJob],
    refused: &[ClientOffboardingJob],
) {
    for &c in clients {
        let done = completed.iter().filter(|d| d.client == c).count();
        let back = returned.iter().filter(|j| j.client() == c).count();
        let kept = refused.iter().filter(|j| j.client() == c).count();
        assert_eq!(
            done + back + kept,
            1,
            "job of {c:?}: completed {done}, handed back by shutdown {back}, refused {kept} \
             (0: lost; 2: duplicated)"
        );
    }
    assert_eq!(
        completed.len() + returned.len() + refused.len(),
        clients.len(),
        "a job of an unknown client"
    );
    let registry = master.liveness.registry();
    for d in completed {
        assert!(d.erased, "{d:?} did not erase its record");
        assert!(registry.get(d.client).is_none(), "{d:?} completed, record still there");
    }
    for j in returned.iter().chain(refused) {
        assert_eq!(j.record().state(), LivenessState::Offline);
        let current = registry.get(j.client()).expect("a pending job's record was erased");
        assert!(
            Arc::ptr_eq(&current, j.record()),
            "the registry moved on from a pending job"
        );
    }
}
