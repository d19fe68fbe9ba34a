//! The asynchronous offboarding executor: N worker threads take jobs in batches from the
//! lock-free MPSC [`queue`], run them with the *same* job type and step semantics
//! as synchronous mode, retry failed jobs and rate-limit first attempts by the same
//! [`Schedule`] as synchronous mode, and on shutdown hand back every job they did not finish —
//! never dropping one (invariant 18).
//!
//! # Ground rules
//!
//! - Producers (the monitor's sink, any thread) only `submit`, which pushes onto the queue and
//!   hands the job back if the queue is full or closed.
//! - The one queue consumer is shared by the workers behind a mutex held only for a
//!   `pop_batch`; no worker holds it while running a job.
//! - Steps run through [`SharedSteps`] (`&self`): the target takes whatever fine-grained locks
//!   one bounded batch needs (the reference master: one metadata shard at a time), so
//!   data-plane work interleaves with a large job. Ping never takes any of them.
//! - A job is always in exactly one place: the queue, a worker's hands, the schedule (waiting for
//!   a retry or a start token), the returned list, or completed. Shutdown collects the first
//!   four.
//! - `busy` counts the jobs in workers' hands that came from the queue. A worker adds a batch
//!   to it under the consumer lock, in the same critical section as the `pop_batch`, and
//!   subtracts each job once it is processed; shutdown's drain reads the queue and `busy` under
//!   that lock, so it never sees a job neither queued nor counted. (A retry a worker took just
//!   before the drain began is not counted: shutdown may interrupt it, and it is handed back.)
//! - `draining` and `stop` are written only by `shutdown` (`Release`) and read by the workers
//!   (`Acquire`). They publish no data: jobs move only under the consumer, schedule and
//!   returned-list mutexes, and shutdown collects those only after joining every worker (the
//!   join is its happens-before edge with everything a worker did). A worker that reads a flag
//!   late takes one more batch or runs one more step, which the drain or the interruption
//!   handles, so `Relaxed` would be as correct (the executor's loom models, next rule, pass with
//!   every ordering of this file weakened to `Relaxed`; MUTANTS.md). Jobs move only under the
//!   consumer, schedule and returned-list mutexes, one at a time.
//! - `submit` borrows the executor and `shutdown` consumes it, so every submit is ordered before
//!   the close by the types; a handle that lets several threads submit and one shut down (the
//!   master's pool) is a lock around an `Option`, which orders them by the lock. The queue's
//!   `PushError::Closed` therefore reaches no caller of this API today; `Full` does.
//! - Start-up is all or nothing: if a worker cannot be started, `spawn_with` sets `stop` and
//!   joins the workers already started before it returns the error (no job exists yet), so no
//!   thread outlives a failed start holding the target or the liveness core.
//! - Time: the idle sleep and the drain's deadline go through `sync::sleep` and
//!   `sync::Deadline`, so under `--cfg loom` (no clock) they are a yield and a count of polls and
//!   no `Instant` decides a branch. The loom models `loom_tests/executor_*.rs` (shutdown drain,
//!   retry, submit vs shutdown; one worker, batches of one) check the exactly-one-place rule on
//!   every interleaving they reach.

use super::queue::{self, Consumer, Producer, PushError};
use super::schedule::{Limits, Retry, Schedule};
use super::{
    complete_client_offboarding, CleanupError, ClientOffboardingJob, Completed, OffboardingSteps, Progress, Step,
};
use crate::clock::Clock;
use crate::config::{LivenessConfig, MAX_OFFBOARDING_WORKERS};
use crate::liveness::Liveness;
use crate::sync::{self, thread, Arc, AtomicBool, AtomicUsize, Deadline, Mutex, Ordering};
use std::fmt;
use std::time::Duration;

/// Steps that can be run from several worker threads: each call locks what it needs for one
/// bounded batch.
pub trait SharedSteps: Send + Sync + 'static {
    /// Runs one bounded batch of `step` for `job`.
    fn run_step(&self, step: Step, job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError>;

    /// An attempt failed and its job is parked for a retry ([`Schedule::retry`], which has
    /// counted it in the metrics already). Called on the worker, with no lock held; the default
    /// does nothing. The reference master counts the failure in its `Stats` here.
    fn on_retry(&self, retry: &Retry) {
        let _ = retry;
    }
}

/// Adapts `SharedSteps` to the job's runner, and interrupts between batches at shutdown.
struct Batches<'a, T: ?Sized> {
    target: &'a T,
    stop: &'a AtomicBool,
}

impl<T: SharedSteps + ?Sized> OffboardingSteps for Batches<'_, T> {
    fn run_step(&mut self, step: Step, job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        if self.stop.load(Ordering::Acquire) {
            return Err(CleanupError::new(step, "interrupted by shutdown"));
        }
        self.target.run_step(step, job)
    }
}

/// Sizing and schedule of an [`Executor`].
#[derive(Clone, Debug, PartialEq)]
pub struct ExecutorConfig {
    /// Worker threads.
    pub workers: usize,
    /// Jobs a worker takes per `pop_batch`.
    pub batch_size: usize,
    /// Queue capacity.
    pub capacity: usize,
    /// First retry delay.
    pub retry_backoff_ms: u64,
    /// Retry delay cap.
    pub retry_max_backoff_ms: u64,
    /// Job starts per second.
    pub rate_per_sec: f64,
    /// Job starts allowed at once.
    pub burst: u64,
}

impl ExecutorConfig {
    /// The schedule's knobs: start rate, burst, retry backoff and its cap.
    pub fn limits(&self) -> Limits {
        Limits {
            rate_per_sec: self.rate_per_sec,
            burst: self.burst,
            retry_backoff_ms: self.retry_backoff_ms,
            retry_max_backoff_ms: self.retry_max_backoff_ms,
        }
    }

    /// The executor part of a liveness configuration.
    pub fn from_config(c: &LivenessConfig) -> Self {
        Self {
            workers: c.offboarding_workers.max(1),
            batch_size: c.offboarding_batch_size.max(1),
            capacity: 1 << 16,
            retry_backoff_ms: c.offboarding_retry_backoff_ms,
            retry_max_backoff_ms: c.offboarding_retry_max_backoff_ms,
            rate_per_sec: c.offboarding_rate_per_sec,
            burst: c.offboarding_burst,
        }
    }
}

type OnComplete = Box<dyn Fn(Completed) + Send + Sync>;

/// A worker thread's body, handed to the spawner of [`Executor::spawn_with`].
pub type WorkerBody = Box<dyn FnOnce() + Send + 'static>;

/// Starts worker `index` running `body` on a thread named `offboarding-{index}`: the spawner
/// [`Executor::spawn`] uses.
pub fn spawn_worker(index: usize, body: WorkerBody) -> std::io::Result<thread::JoinHandle<()>> {
    thread::Builder::new().name(format!("offboarding-{index}")).spawn(body)
}

struct Inner<T: ?Sized> {
    consumer: Mutex<Consumer<ClientOffboardingJob>>,
    /// Jobs waiting for a retry or a start token, and the start bucket.
    schedule: Mutex<Schedule>,
    returned: Mutex<Vec<ClientOffboardingJob>>,
    /// Jobs taken from the queue and not yet processed (see the ground rules).
    busy: AtomicUsize,
    /// Workers stop taking new work from the queue once it is empty (shutdown drain).
    draining: AtomicBool,
    /// Workers stop now; jobs in hand are interrupted between batches and returned.
    stop: AtomicBool,
    liveness: Arc<Liveness>,
    config: ExecutorConfig,
    limits: Limits,
    on_complete: OnComplete,
    target: Arc<T>,
}

/// The running executor.
pub struct Executor<T: SharedSteps + ?Sized> {
    producer: Producer<ClientOffboardingJob>,
    inner: Arc<Inner<T>>,
    workers: Vec<thread::JoinHandle<()>>,
}

impl<T: SharedSteps + ?Sized> fmt::Debug for Executor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Executor")
            .field("workers", &self.workers.len())
            .field("queued", &self.producer.len())
            .finish()
    }
}

impl<T: SharedSteps + ?Sized> Executor<T> {
    /// Starts `config.workers` workers running jobs against `target`; `liveness` provides the
    /// registry (compare-and-erase) and the clock (retry schedule); `on_complete` sees every
    /// completed job.
    ///
    /// Errors: more than [`MAX_OFFBOARDING_WORKERS`] workers (`InvalidInput`, before any
    /// starts); a worker that cannot be started (the spawn error's kind, the message naming the
    /// worker). In both cases no thread is left behind: the workers already started are stopped
    /// and joined before it returns, so nothing they held (`target`, `liveness`) is kept.
    pub fn spawn(
        target: Arc<T>,
        liveness: Arc<Liveness>,
        config: ExecutorConfig,
        on_complete: impl Fn(Completed) + Send + Sync + 'static,
    ) -> std::io::Result<Self> {
        Self::spawn_with(target, liveness, config, on_complete, spawn_worker)
    }

    /// [`spawn`](Self::spawn), starting each worker with `spawn(index, body)` instead of
    /// [`spawn_worker`] (a seam: tests inject a failure; an embedder may set a stack size or
    /// pin threads).
    pub fn spawn_with(
        target: Arc<T>,
        liveness: Arc<Liveness>,
        config: ExecutorConfig,
        on_complete: impl Fn(Completed) + Send + Sync + 'static,
        mut spawn: impl FnMut(usize, WorkerBody) -> std::io::Result<thread::JoinHandle<()>>,
    ) -> std::io::Result<Self> {
        if config.workers > MAX_OFFBOARDING_WORKERS {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{} offboarding workers requested, more than the limit of {MAX_OFFBOARDING_WORKERS}",
                    config.workers
                ),
            ));
        }
        let (producer, consumer) = queue::channel(config.capacity.max(1));
        let inner = Arc::new(Inner {
            consumer: Mutex::new(consumer),
            schedule: Mutex::new(Schedule::new()),
            returned: Mutex::new(Vec::new()),
            busy: AtomicUsize::new(0),
            draining: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            liveness,
            on_complete: Box::new(on_complete),
            target,
            limits: config.limits(),
            config,
        });
        let n = inner.config.workers;
        let mut workers = Vec::with_capacity(n);
        for i in 0..n {
            let body = {
                let inner = inner.clone();
                Box::new(move || inner.work())
            };
            match spawn(i, body) {
                Ok(handle) => workers.push(handle),
                Err(e) => {
                    // No job was submitted yet: stopping is all the started workers need.
                    inner.stop.store(true, Ordering::Release);
                    for w in workers {
                        let _ = w.join();
                    }
                    let msg = format!(
                        "cannot start offboarding worker {i} of {n}: {e} (the {i} started were stopped and joined)"
                    );
                    return Err(std::io::Error::new(e.kind(), msg));
                }
            }
        }
        Ok(Self {
            producer,
            inner,
            workers,
        })
    }

    /// Queues a job; hands it back if the queue is full or shut down (never drops it).
    pub fn submit(&self, job: ClientOffboardingJob) -> Result<(), PushError<ClientOffboardingJob>> {
        let r = self.producer.push(job);
        crate::telemetry::queue_depth(self.producer.len());
        r
    }

    /// Jobs queued (not yet taken by a worker).
    pub fn queued(&self) -> usize {
        self.producer.len()
    }

    /// Jobs waiting for a retry or a start token.
    pub fn retrying(&self) -> usize {
        lock(&self.inner.schedule).len()
    }

    /// Stops accepting jobs, lets the workers drain the queue and finish the jobs they took from
    /// it until none is left or `deadline` passes, then stops them and returns every job not
    /// completed — queued, waiting for a retry, or interrupted — so the caller can persist it
    /// (e.g. in the next snapshot). Under loom the deadline counts the drain's polls, one per
    /// millisecond (`sync::Deadline`).
    pub fn shutdown(mut self, deadline: Duration) -> Vec<ClientOffboardingJob> {
        let mut wait = Deadline::after(deadline);
        self.producer.close();
        self.inner.draining.store(true, Ordering::Release);
        while !wait.passed() && self.inner.holds_work() {
            wait.pause();
        }
        self.inner.stop.store(true, Ordering::Release);
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
        let mut left = std::mem::take(&mut *lock(&self.inner.returned));
        let drain = lock(&self.inner.consumer).drain_after_close(&mut left, || true);
        debug_assert!(drain.is_complete());
        left.extend(lock(&self.inner.schedule).take_all());
        tracing::info!(returned = left.len(), "offboarding executor stopped");
        left
    }
}

fn lock<M>(m: &Mutex<M>) -> crate::sync::MutexGuard<'_, M> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<T: SharedSteps + ?Sized> Inner<T> {
    fn now(&self) -> u64 {
        self.liveness.clock().base().now_ms()
    }

    fn work(&self) {
        let mut batch = Vec::with_capacity(self.config.batch_size);
        while !self.stop.load(Ordering::Acquire) {
            let mut idle = true;
            if !self.draining.load(Ordering::Acquire) {
                for job in self.take_due_retries() {
                    idle = false;
                    self.process(job);
                }
            }
            let depth = {
                let mut consumer = lock(&self.consumer);
                consumer.pop_batch(self.config.batch_size, &mut batch);
                // Relaxed: published to shutdown by the consumer lock it reads `busy` under.
                self.busy.fetch_add(batch.len(), Ordering::Relaxed);
                consumer.len()
            };
            if !batch.is_empty() {
                crate::telemetry::queue_depth(depth);
            }
            for job in batch.drain(..) {
                idle = false;
                self.process(job);
                // Release: whatever processing the job did happens before shutdown sees it done.
                self.busy.fetch_sub(1, Ordering::Release);
            }
            if idle {
                sync::sleep(Duration::from_millis(1));
            }
        }
    }

    /// Is a job still queued or in a worker's hands (from the queue)? Shutdown's drain waits
    /// while it is.
    fn holds_work(&self) -> bool {
        let consumer = lock(&self.consumer);
        !consumer.is_empty() || self.busy.load(Ordering::Acquire) > 0
    }

    fn take_due_retries(&self) -> Vec<ClientOffboardingJob> {
        let now = self.now();
        let mut schedule = lock(&self.schedule);
        let jobs = schedule.take_due(now);
        if !jobs.is_empty() {
            crate::telemetry::retrying_jobs(schedule.len());
        }
        jobs
    }

    fn process(&self, job: ClientOffboardingJob) {
        if self.stop.load(Ordering::Acquire) {
            lock(&self.returned).push(job);
            return;
        }
        let now = self.now();
        let admitted = {
            let mut schedule = lock(&self.schedule);
            let admitted = schedule.admit(job, now, &self.limits);
            if admitted.is_none() {
                crate::telemetry::retrying_jobs(schedule.len());
            }
            admitted
        };
        let Some(job) = admitted else {
            return;
        };
        let committed = job.committed_at_ms();
        let mut steps = Batches {
            target: &*self.target,
            stop: &self.stop,
        };
        match complete_client_offboarding(&mut steps, self.liveness.registry(), job) {
            Ok(done) => {
                crate::telemetry::job_completed(self.now().saturating_sub(committed));
                (self.on_complete)(done);
            }
            Err(job) if self.stop.load(Ordering::Acquire) => lock(&self.returned).push(job),
            Err(job) => {
                let now = self.now();
                let retry = {
                    let mut schedule = lock(&self.schedule);
                    let retry = schedule.retry(job, now, &self.limits);
                    crate::telemetry::retrying_jobs(schedule.len());
                    retry
                };
                self.target.on_retry(&retry);
            }
        }
    }
}
