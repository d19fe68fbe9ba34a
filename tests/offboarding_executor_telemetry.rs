//! The asynchronous executor's metrics: the queue-depth gauge follows what the workers take, and
//! a job interrupted by shutdown is not counted as a failed step.
//!
//! The workers record on their own threads, so a thread-local recorder would miss them: this
//! binary installs one global `DebuggingRecorder`, and its tests take turns (`SERIAL`) so that
//! one test's executor does not set the gauges another reads. Reading a snapshot resets the
//! values (the debugging snapshotter swaps them out).

mod common;

use common::executor::{config, offline_jobs};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use mooncake_liveness::offboarding::executor::{Executor, ExecutorConfig, SharedSteps};
use mooncake_liveness::offboarding::{CleanupError, ClientOffboardingJob, Progress, Step};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

/// The binary's one recorder, installed on first use.
fn snapshotter() -> &'static Snapshotter {
    static SNAPSHOTTER: OnceLock<Snapshotter> = OnceLock::new();
    SNAPSHOTTER.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::set_global_recorder(recorder).expect("the only recorder of this test binary");
        snapshotter
    })
}

/// Every value recorded since the last read, by metric name (a read resets them all).
fn read() -> Vec<(String, DebugValue)> {
    snapshotter()
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(k, _, _, v)| (k.key().name().to_string(), v))
        .collect()
}

/// The values of `name` in `snapshot` (one per label set).
fn values<'a>(snapshot: &'a [(String, DebugValue)], name: &'a str) -> impl Iterator<Item = &'a DebugValue> {
    snapshot.iter().filter(move |(n, _)| n == name).map(|(_, v)| v)
}

/// The gauges named `name` (one per label set).
fn gauges(snapshot: &[(String, DebugValue)], name: &str) -> Vec<f64> {
    values(snapshot, name)
        .map(|v| match v {
            DebugValue::Gauge(g) => g.into_inner(),
            other => panic!("{name} is not a gauge: {other:?}"),
        })
        .collect()
}

/// A counter summed over its label sets (0 if never incremented).
fn counter(snapshot: &[(String, DebugValue)], name: &str) -> u64 {
    values(snapshot, name)
        .map(|v| match v {
            DebugValue::Counter(c) => *c,
            _ => 0,
        })
        .sum()
}

/// Waits (bounded: a deadline for a hung test, not a timing assertion) until `done`.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(30), "{what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn one_worker_taking_one_job_at_a_time() -> ExecutorConfig {
    ExecutorConfig {
        workers: 1,
        batch_size: 1,
        rate_per_sec: 1e9,
        burst: 1 << 20,
        ..ExecutorConfig::from_config(&config())
    }
}

/// The `i`-th job to reach its first step waits there until more than `i` permits were given.
struct Turnstile {
    entered: AtomicUsize,
    permits: AtomicUsize,
}

impl SharedSteps for Turnstile {
    fn run_step(&self, step: Step, _job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        if step == Step::ALL[0] {
            let i = self.entered.fetch_add(1, Ordering::SeqCst);
            while self.permits.load(Ordering::SeqCst) <= i {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        Ok(Progress::Done)
    }
}

/// A worker that takes a job from the queue publishes the exact depth it leaves: job 0 runs
/// (held), jobs 1 and 2 are queued behind it (the submits publish the producer's count, which
/// may still include job 0: the queue's lazy release); once job 0 is let go, the worker takes
/// job 1 and the gauge reads 1 while job 1 is held.
#[test]
fn the_queue_depth_gauge_follows_the_jobs_a_worker_takes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let depth = "mooncake_liveness_offboarding_queue_depth";
    let (_, live, jobs) = offline_jobs(3);
    let _ = read();
    let turnstile = Arc::new(Turnstile {
        entered: AtomicUsize::new(0),
        permits: AtomicUsize::new(0),
    });
    let exec = Executor::spawn(turnstile.clone(), live, one_worker_taking_one_job_at_a_time(), |_| ()).unwrap();
    let mut jobs = jobs.into_iter();
    exec.submit(jobs.next().unwrap()).unwrap();
    wait_until("the worker never took job 0", || {
        turnstile.entered.load(Ordering::SeqCst) == 1
    });
    for job in jobs {
        exec.submit(job).unwrap();
    }
    let after_submits = gauges(&read(), depth);
    assert!(
        after_submits.len() == 1 && after_submits[0] >= 2.0,
        "after the submits: {after_submits:?}"
    );
    turnstile.permits.store(1, Ordering::SeqCst);
    wait_until("the worker never took job 1", || {
        turnstile.entered.load(Ordering::SeqCst) == 2
    });
    assert_eq!(
        gauges(&read(), depth),
        [1.0],
        "a worker took job 1 and left job 2 queued"
    );
    turnstile.permits.store(3, Ordering::SeqCst);
    assert!(exec.shutdown(Duration::from_secs(30)).is_empty());
}

/// Steps that never finish: every call does one more batch.
struct Endless(AtomicUsize);

impl SharedSteps for Endless {
    fn run_step(&self, _step: Step, _job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_micros(100));
        Ok(Progress::More)
    }
}

/// Shutdown interrupts a running job between two batches and hands it back; that is not a
/// failed step: no step failure or retry is counted.
#[test]
fn a_job_interrupted_by_shutdown_is_not_a_failed_step() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (_, live, jobs) = offline_jobs(1);
    let _ = read();
    let endless = Arc::new(Endless(AtomicUsize::new(0)));
    let exec = Executor::spawn(endless.clone(), live, one_worker_taking_one_job_at_a_time(), |_| {
        panic!("an endless job completed")
    })
    .unwrap();
    exec.submit(jobs.into_iter().next().unwrap()).unwrap();
    wait_until("the worker never ran the job", || endless.0.load(Ordering::SeqCst) > 0);
    let left = exec.shutdown(Duration::ZERO);
    assert_eq!(left.len(), 1, "the interrupted job is handed back");
    let error = left[0].last_error().expect("interrupted between batches");
    assert_eq!(error.message, "interrupted by shutdown");
    let snapshot = read();
    assert_eq!(
        counter(&snapshot, "mooncake_liveness_offboarding_step_failures_total"),
        0,
        "an interruption is not a step failure"
    );
    assert_eq!(
        counter(&snapshot, "mooncake_liveness_offboarding_retries_total"),
        0,
        "an interrupted job is not scheduled for a retry"
    );
}
