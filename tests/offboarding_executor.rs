//! The asynchronous executor: same job, same steps, same outcome as synchronous mode; shutdown
//! hands back every job it did not complete (invariant 18).

mod common;

use common::executor::{config, offline_jobs, OFFLINE_AT_MS};
use mooncake_liveness::master::{Master, MasterError, MasterEvent, MasterOptions};
use mooncake_liveness::offboarding::executor::{Executor, ExecutorConfig, SharedSteps};
use mooncake_liveness::offboarding::{CleanupError, ClientOffboardingJob, Progress, Step};
use mooncake_liveness::{ClientId, Clock, ManualClock};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn async_mode_offboards_like_sync_mode_with_retries() {
    let clock = Arc::new(ManualClock::new(0));
    // `offboarding_mode: async`: the master starts its own workers and hands them its jobs.
    let master = Master::new(clock.clone() as Arc<dyn Clock>, config(), MasterOptions::default());
    master.mount("big", "sb", 1 << 30).unwrap();
    master.mount("c2", "s2", 1 << 30).unwrap();
    for i in 0..3_000 {
        let key = format!("k{i}");
        master.put(&key, 1, if i % 3 == 0 { 2 } else { 1 }).unwrap();
        master.put_end(&key).unwrap();
    }
    master.fail_step(Step::Segments, 2);
    let s2 = master.segments().id_of("s2").unwrap();
    let on_s2 = master.objects().values().filter(|o| o.on_segment(s2)).count();
    assert!(on_s2 > 1_000 && on_s2 < 3_000);
    let started = Instant::now();
    let mut t = 0;
    let mut attempts = None;
    while attempts.is_none() {
        assert!(started.elapsed() < Duration::from_secs(60), "job never completed");
        t += 100;
        clock.set_ms(t);
        // Ping takes no master lock.
        master.ping("c2");
        master.tick();
        if t > 30_000 && t < 30_500 {
            assert_eq!(master.mount("big", "sb", 1), Err(MasterError::ClientOffboarding));
            assert_eq!(
                master.stats().offline,
                1,
                "an Offline incarnation reported as {:?}",
                master.stats()
            );
        }
        attempts = master.take_events().into_iter().find_map(|e| match e {
            MasterEvent::Offboarded { attempts, .. } => Some(attempts),
            _ => None,
        });
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(attempts, Some(3), "two injected failures, then success");
    let stats = master.stats();
    assert_eq!(
        (stats.jobs_completed, stats.offline, stats.jobs_pending),
        (1, 0, 0),
        "{stats:?}"
    );
    assert_eq!(master.shutdown_offboarding(), 0, "nothing left to hand back");
    let m = &master;
    assert!(m.segments().id_of("sb").is_none());
    assert!(m
        .objects()
        .values()
        .all(|o| o.replicas.iter().all(|r| r.owner().client() != ClientId(1))));
    assert_eq!(
        m.objects().len(),
        on_s2,
        "objects with a replica on s2 survive, the rest go"
    );
    let used: u64 = m.objects().values().map(|o| o.size * o.replicas.len() as u64).sum();
    assert_eq!(m.quota_used(), used);
    assert!(!m.external_metadata().contains("sb"));
}

/// Steps that take a little time, so a shutdown finds work left.
struct Slow(AtomicUsize);

impl SharedSteps for Slow {
    fn run_step(&self, _step: Step, _job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(Duration::from_micros(200));
        Ok(Progress::Done)
    }
}

#[test]
fn shutdown_with_10_000_queued_jobs_completes_or_returns_every_one() {
    let (_, live, jobs) = offline_jobs(10_000);
    let completed = Arc::new(AtomicUsize::new(0));
    let counter = completed.clone();
    let cfg = ExecutorConfig {
        rate_per_sec: 1e9,
        burst: 1 << 20,
        ..ExecutorConfig::from_config(&config())
    };
    let exec = Executor::spawn(Arc::new(Slow(AtomicUsize::new(0))), live.clone(), cfg, move |_| {
        counter.fetch_add(1, Ordering::Relaxed);
    })
    .unwrap();
    for job in jobs {
        exec.submit(job).expect("capacity 65536");
    }
    let left = exec.shutdown(Duration::from_millis(20));
    let done = completed.load(Ordering::Relaxed);
    assert_eq!(done + left.len(), 10_000, "completed {done} + returned {}", left.len());
    assert!(!left.is_empty(), "the deadline should leave work to hand back");
    // Every returned job still holds its barrier: its Offline record is in the registry.
    for job in &left {
        assert!(live.registry().get(job.client()).is_some());
    }
    assert_eq!(live.registry().len(), left.len());
}

/// Steps that always fail: every job ends up parked in the retry table.
struct AlwaysFails;

impl SharedSteps for AlwaysFails {
    fn run_step(&self, step: Step, _job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        Err(CleanupError::new(step, "permanent failure"))
    }
}

#[test]
fn shutdown_hands_back_jobs_waiting_for_a_retry() {
    let (_, live, jobs) = offline_jobs(3);
    let exec = Executor::spawn(
        Arc::new(AlwaysFails),
        live.clone(),
        ExecutorConfig::from_config(&config()),
        |_| panic!("a failing job completed"),
    )
    .unwrap();
    for job in jobs {
        exec.submit(job).unwrap();
    }
    // The manual clock never reaches the retry time: all three wait in the retry table.
    let started = Instant::now();
    while exec.retrying() < 3 {
        assert!(started.elapsed() < Duration::from_secs(30), "jobs never parked");
        std::thread::sleep(Duration::from_millis(1));
    }
    let left = exec.shutdown(Duration::from_millis(50));
    assert_eq!(left.len(), 3, "jobs waiting for a retry were dropped at shutdown");
    assert!(left.iter().all(|j| j.attempts() == 1 && j.last_error().is_some()));
}

/// With no worker running, submitted jobs stay queued: `queued()` counts them, the debug form
/// shows them, and shutdown hands every one back.
#[test]
fn queued_counts_the_jobs_no_worker_took() {
    let (_, live, jobs) = offline_jobs(3);
    let cfg = ExecutorConfig {
        workers: 0,
        ..ExecutorConfig::from_config(&config())
    };
    let exec = Executor::spawn(Arc::new(AlwaysFails), live, cfg, |_| panic!("no worker runs")).unwrap();
    for job in jobs {
        exec.submit(job).unwrap();
    }
    assert_eq!(exec.queued(), 3);
    assert_eq!(format!("{exec:?}"), "Executor { workers: 0, queued: 3 }");
    assert_eq!(exec.shutdown(Duration::ZERO).len(), 3);
}

/// Client 0's first step waits until `open`; every other step succeeds at once.
struct Gate {
    entered: AtomicUsize,
    open: std::sync::atomic::AtomicBool,
}

impl SharedSteps for Gate {
    fn run_step(&self, step: Step, job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        if job.client() == ClientId(0) && step == Step::Metadata {
            self.entered.fetch_add(1, Ordering::SeqCst);
            while !self.open.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        Ok(Progress::Done)
    }
}

/// Client 0's job held in its first step by a [`Gate`], on a one-worker executor that records
/// the clients it completes; returns once the worker holds it (the queue is empty again).
struct HeldJob {
    exec: Executor<Gate>,
    gate: Arc<Gate>,
    completed: Arc<std::sync::Mutex<Vec<ClientId>>>,
}

impl HeldJob {
    fn start(live: Arc<mooncake_liveness::Liveness>, first: ClientOffboardingJob) -> Self {
        assert_eq!(first.client(), ClientId(0));
        let gate = Arc::new(Gate {
            entered: AtomicUsize::new(0),
            open: std::sync::atomic::AtomicBool::new(false),
        });
        let cfg = ExecutorConfig {
            workers: 1,
            batch_size: 1,
            ..ExecutorConfig::from_config(&config())
        };
        let completed = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = completed.clone();
        let exec = Executor::spawn(gate.clone(), live, cfg, move |done| {
            seen.lock().unwrap().push(done.client)
        })
        .unwrap();
        exec.submit(first).unwrap();
        let started = Instant::now();
        while gate.entered.load(Ordering::SeqCst) == 0 {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the worker never took the job"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        Self { exec, gate, completed }
    }

    /// Shuts down with a far deadline on another thread, lets the held job go 100 ms later (the
    /// time a shutdown that does not wait would need to stop the worker), and returns what
    /// shutdown handed back and whether client 0's job completed.
    fn shut_down_then_release(self) -> (Vec<ClientOffboardingJob>, bool) {
        let Self { exec, gate, completed } = self;
        let shutdown = std::thread::spawn(move || exec.shutdown(Duration::from_secs(60)));
        std::thread::sleep(Duration::from_millis(100));
        gate.open.store(true, Ordering::SeqCst);
        let left = shutdown.join().unwrap();
        let done = completed.lock().unwrap().contains(&ClientId(0));
        (left, done)
    }
}

/// Shutdown first lets the workers drain the queue (up to its deadline) and only then stops
/// them: while a job is still queued, the job a worker is running is not interrupted.
#[test]
fn shutdown_lets_the_workers_drain_before_stopping_them() {
    let (_, live, mut jobs) = offline_jobs(2);
    let second = jobs.pop().unwrap();
    let held = HeldJob::start(live, jobs.pop().unwrap());
    held.exec.submit(second).unwrap(); // queued behind the running job
    let (left, done) = held.shut_down_then_release();
    assert!(
        done,
        "the running job was interrupted while a job was still queued (returned: {})",
        left.len()
    );
}

/// The drain covers the jobs the workers hold, not only the queue: a job taken just before
/// shutdown (the queue already empty) runs to completion within the drain deadline instead of
/// being interrupted at its next step and handed back.
#[test]
fn shutdown_lets_the_job_in_hand_finish_within_the_drain() {
    let (_, live, mut jobs) = offline_jobs(1);
    let held = HeldJob::start(live, jobs.pop().unwrap());
    let (left, done) = held.shut_down_then_release();
    assert!(
        left.is_empty() && done,
        "the job in hand was interrupted although the drain deadline was far (returned: {})",
        left.len()
    );
}

/// The rate limit takes a token for a job's *first* attempt: with a burst of one and a clock
/// that never refills the bucket, one job starts and the other two wait (parked, attempt 0).
#[test]
fn only_first_attempts_take_a_rate_limit_token() {
    let (_, live, jobs) = offline_jobs(3);
    let cfg = ExecutorConfig {
        rate_per_sec: 1.0,
        burst: 1,
        ..ExecutorConfig::from_config(&config())
    };
    let completed = Arc::new(AtomicUsize::new(0));
    let counter = completed.clone();
    let exec = Executor::spawn(Arc::new(Slow(AtomicUsize::new(0))), live, cfg, move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    for job in jobs {
        exec.submit(job).unwrap();
    }
    let started = Instant::now();
    while exec.retrying() < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "jobs were not held by the rate limit"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let left = exec.shutdown(Duration::ZERO);
    assert_eq!(completed.load(Ordering::SeqCst), 1);
    assert_eq!(left.len(), 2);
    assert!(left.iter().all(|j| j.attempts() == 0), "held jobs never started");
}

/// Client 0's first attempt fails; every other step succeeds.
struct FailsClient0Once;

impl SharedSteps for FailsClient0Once {
    fn run_step(&self, step: Step, job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        if job.client() == ClientId(0) && job.attempts() == 1 {
            return Err(CleanupError::new(step, "first attempt fails"));
        }
        Ok(Progress::Done)
    }
}

/// One worker, no rate limit, retries 5 ms after a failure.
fn one_worker_retrying_after_5_ms() -> ExecutorConfig {
    ExecutorConfig {
        workers: 1,
        batch_size: 1,
        retry_backoff_ms: 5,
        retry_max_backoff_ms: 5,
        rate_per_sec: 1e9,
        burst: 1 << 20,
        ..ExecutorConfig::from_config(&config())
    }
}

/// Spawns `steps` on `live` and records the clients it completes, in order.
fn spawn_recording<T: SharedSteps>(
    steps: T,
    live: Arc<mooncake_liveness::Liveness>,
    cfg: ExecutorConfig,
) -> (Executor<T>, Arc<std::sync::Mutex<Vec<ClientId>>>) {
    let completed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = completed.clone();
    let exec = Executor::spawn(Arc::new(steps), live, cfg, move |done| {
        seen.lock().unwrap().push(done.client)
    })
    .unwrap();
    (exec, completed)
}

/// Waits (bounded: a deadline for a hung test, not a timing assertion) until `n` jobs completed.
fn wait_for_completions(completed: &std::sync::Mutex<Vec<ClientId>>, n: usize) -> Vec<ClientId> {
    let started = Instant::now();
    loop {
        let done = completed.lock().unwrap().clone();
        if done.len() >= n {
            return done;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{n} jobs never completed (done: {done:?})"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A retry due at `t` is taken when the clock reads exactly `t` (not one ms later): the job
/// fails at 30 000 ms, is due at 30 005 ms, and the clock is held there until it completes.
#[test]
fn a_retry_is_taken_when_the_clock_reaches_its_due_time_exactly() {
    let (clock, live, jobs) = offline_jobs(1);
    let (exec, completed) = spawn_recording(FailsClient0Once, live, one_worker_retrying_after_5_ms());
    exec.submit(jobs.into_iter().next().unwrap()).unwrap();
    let started = Instant::now();
    while exec.retrying() < 1 {
        assert!(started.elapsed() < Duration::from_secs(30), "the job never failed");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(completed.lock().unwrap().is_empty());
    clock.set_ms(OFFLINE_AT_MS + 5);
    assert_eq!(wait_for_completions(&completed, 1), [ClientId(0)]);
    assert!(exec.shutdown(Duration::ZERO).is_empty());
}

/// A job the rate limit held is parked until the bucket next holds a token (`schedule.rs`,
/// rule 2; it was a fixed 10 ms before the executor and the inline driver shared one schedule).
/// At 30 000 ms client 0 takes the only token and fails (retry due at +3 ms); client 1 finds the
/// bucket empty (250 starts/s: the next token at +4 ms). With the clock moved to exactly +4 ms
/// both are due, and the schedule hands them over in due order: client 0's retry first. A
/// recheck parked earlier than the retry would come first; one parked later than the token
/// would not be due.
#[test]
fn a_job_the_rate_limit_held_is_rechecked_when_the_next_token_comes() {
    let (clock, live, jobs) = offline_jobs(2);
    let cfg = ExecutorConfig {
        rate_per_sec: 250.0,
        burst: 1,
        retry_backoff_ms: 3,
        ..one_worker_retrying_after_5_ms()
    };
    let (exec, completed) = spawn_recording(FailsClient0Once, live, cfg);
    for job in jobs {
        exec.submit(job).unwrap();
    }
    let started = Instant::now();
    while exec.retrying() < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the two jobs were never parked"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(completed.lock().unwrap().is_empty());
    clock.set_ms(OFFLINE_AT_MS + 4);
    assert_eq!(
        wait_for_completions(&completed, 2),
        [ClientId(0), ClientId(1)],
        "the retry due at +3 ms runs before the recheck due at the next token, +4 ms"
    );
    assert!(exec.shutdown(Duration::ZERO).is_empty());
}
