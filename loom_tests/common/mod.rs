//! Shared harness for the loom models: the `model(name, f)` runner, a tiny master (liveness
//! core + monitor) on a `ManualClock`, built inside each model iteration, and the races several
//! models share ([`race_evaluate_vs_signal`], [`Master::race_tick_vs_ping`], [`race_producers`]).
//! Each race helper performs exactly the loom operations the models used to write out (gate,
//! clones, spawn, pass, join, in that order, on the same threads), so the explored interleavings,
//! and the iteration counts `model` prints, are those of the hand-written setup.
//!
//! Everything that takes part in a race (the clock's atomic, the records' words, the registry
//! and inbox locks) is a loom type once the crate is built with `--cfg loom`, so it must be
//! created inside the model closure: [`Master::new`] is called at the top of every iteration.
#![allow(dead_code, unreachable_pub)]

pub mod executor;
mod stack;

pub use stack::{config, Seen, ACTIVE_TTL_MS, SUSPICION_TTL_MS};

use loom::sync::atomic::AtomicUsize as AtomicUsizeLoom;
use loom::sync::Arc;
use loom::thread::{self, JoinHandle};
use mooncake_liveness::__private::loom::{evaluate, signal, Eval};
use mooncake_liveness::liveness::{Applied, Registry, Ttls, Word};
use mooncake_liveness::offboarding::queue::Producer;
use mooncake_liveness::offboarding::{complete_client_offboarding, NoResources};
use mooncake_liveness::{
    ClientId, ClientLivenessRecord, ClientOffboardingJob, Clock, Liveness, LivenessConfig, LivenessEvent,
    LivenessState, ManualClock, Monitor, MountOutcome, PingOutcome, TickReport,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Preemption bound when `LOOM_MAX_PREEMPTIONS` is not set.
pub const DEFAULT_PREEMPTIONS: usize = 3;

/// The TTLs as the record API takes them.
pub const TTLS: Ttls = Ttls {
    active_ms: ACTIVE_TTL_MS,
    suspicion_ms: SUSPICION_TTL_MS,
};
/// The client every model races on.
pub const CLIENT: ClientId = ClientId(7);

/// Runs `f` under loom's exhaustive scheduler (bounded by `LOOM_MAX_PREEMPTIONS`, default
/// [`DEFAULT_PREEMPTIONS`]) and prints one line: the model's name, iterations and time.
///
/// With `LOOM_LOG` set it goes through `loom::model`, which installs the tracing subscriber that
/// prints loom's per-operation log; `LOOM_CHECKPOINT_FILE`, `LOOM_CHECKPOINT_INTERVAL` and
/// `LOOM_LOCATION` are read by `loom::model::Builder::new` in both cases.
pub fn model<F>(name: &str, f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    let iterations = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = iterations.clone();
    let counted = move || {
        counter.fetch_add(1, Ordering::Relaxed);
        f();
    };
    let mut builder = loom::model::Builder::new();
    let bound = *builder.preemption_bound.get_or_insert(DEFAULT_PREEMPTIONS);
    let start = Instant::now();
    if builder.log {
        if std::env::var_os("LOOM_MAX_PREEMPTIONS").is_none() {
            std::env::set_var("LOOM_MAX_PREEMPTIONS", bound.to_string());
        }
        loom::model(counted);
    } else {
        builder.check(counted);
    }
    println!(
        "loom model {name}: {} iterations, preemption bound {bound}, {:.2?}",
        iterations.load(Ordering::Relaxed),
        start.elapsed()
    );
}

/// As [`model`], and afterwards checks that the iterations together reached every outcome in
/// `expected` (each iteration reports its outcome with [`Seen::saw`]).
///
/// This keeps a model from passing vacuously: if loom stopped exploring the orders that produce
/// some allowed outcome (see [`Gate`]), the model fails instead of checking one interleaving.
/// The check is skipped when the exploration is cut short on purpose (`LOOM_MAX_PERMUTATIONS`,
/// `LOOM_MAX_DURATION`, `LOOM_CHECKPOINT_FILE`, or a preemption bound below 2).
pub fn model_covering<F>(name: &str, expected: &[&str], f: F)
where
    F: Fn(&Seen) + Sync + Send + 'static,
{
    let seen = Seen::default();
    let inner = seen.clone();
    model(name, move || f(&inner));
    let builder = loom::model::Builder::new();
    let cut_short = builder.max_permutations.is_some()
        || builder.max_duration.is_some()
        || builder.checkpoint_file.is_some()
        || builder.preemption_bound.is_some_and(|b| b < 2);
    let seen = seen.outcomes();
    println!("loom model {name}: outcomes {seen:?}");
    if !cut_short {
        let missing: Vec<_> = expected.iter().filter(|e| !seen.contains(**e)).collect();
        assert!(
            missing.is_empty(),
            "model {name} never reached {missing:?} (reached {seen:?})"
        );
    }
    let unexpected: Vec<_> = seen.iter().filter(|s| !expected.contains(&s.as_str())).collect();
    assert!(
        unexpected.is_empty(),
        "model {name} reached unlisted outcomes {unexpected:?}"
    );
}

/// A start line for the racing threads of a model: each racing thread calls [`Gate::pass`]
/// before anything else.
///
/// Why: loom's DPOR remembers only the *last* access of each object, and a load is not
/// dependent on a load. When a thread's first operations are loads (the monitor reads the clock,
/// a ping or a mount reads the word before its CAS), the conflict with the other thread's
/// earlier load is masked and loom never schedules that thread first (tokio-rs/loom#166,
/// tokio-rs/loom#392: without the gate `failed_mount_vs_offline` ran 1 iteration and
/// `mount_vs_offline_sweep` never let the monitor go first). A relaxed read-modify-write on one
/// shared atomic, as the first operation of every racing thread, is a conflict loom always sees,
/// so it tries each thread first; the interleavings after that come from the conflicts loom
/// does see (the CASes, the locks). Relaxed, so it adds no happens-before edge between the
/// threads. [`model_covering`] checks that the outcomes this is meant to reach are reached.
#[derive(Debug, Default)]
pub struct Gate(AtomicUsizeLoom);

impl Gate {
    /// A gate nobody has passed.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Crosses the start line (one relaxed read-modify-write).
    pub fn pass(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Spawns a monitor thread that passes `gate`, then evaluates `rec` at liveness time `now_ms`.
pub fn spawn_evaluate(rec: &Arc<ClientLivenessRecord>, gate: &Arc<Gate>, now_ms: u64) -> JoinHandle<Eval> {
    let (rec, gate) = (rec.clone(), gate.clone());
    thread::spawn(move || {
        gate.pass();
        evaluate(&rec, now_ms, TTLS, false)
    })
}

/// Races the monitor's `evaluate` of `rec` at `eval_ms` (on a spawned thread) against a `signal`
/// at `signal_ms` (on the calling thread), both behind a [`Gate`], with [`TTLS`] and no brake.
/// Returns the evaluation, the signal's answer and the word after both.
pub fn race_evaluate_vs_signal(rec: &Arc<ClientLivenessRecord>, eval_ms: u64, signal_ms: u64) -> (Eval, Applied, Word) {
    let gate = Gate::new();
    let monitor = spawn_evaluate(rec, &gate, eval_ms);
    gate.pass();
    let applied = signal(rec, signal_ms, TTLS);
    let eval = monitor.join().unwrap();
    (eval, applied, rec.word())
}

/// The producer threads of a queue model, started by [`race_producers`].
pub struct Producers<R> {
    /// Kept until the threads are joined, as the hand-written models kept it to the end: dropping
    /// it while they run would add a race on its reference count to the state space.
    gate: Arc<Gate>,
    threads: Vec<JoinHandle<R>>,
}

impl<R> Producers<R> {
    /// Joins the producers in spawn order; returns what each one returned.
    pub fn join(self) -> Vec<R> {
        self.threads.into_iter().map(|t| t.join().unwrap()).collect()
    }
}

/// Spawns one producer thread per job of `jobs`, each with its own clone of `producer`, passing a
/// [`Gate`] and then running `push(&producer, job)`; then drops the caller's `producer` (so only
/// the producer threads hold one) and passes the gate. The caller goes on as the consumer,
/// racing the producers.
pub fn race_producers<T, J, R, F>(producer: Producer<T>, jobs: impl IntoIterator<Item = J>, push: F) -> Producers<R>
where
    T: Send + 'static,
    J: Send + 'static,
    R: Send + 'static,
    F: Fn(&Producer<T>, J) -> R + Clone + Send + 'static,
{
    let gate = Gate::new();
    let threads = jobs
        .into_iter()
        .map(|job| {
            let (producer, gate, push) = (producer.clone(), gate.clone(), push.clone());
            thread::spawn(move || {
                gate.pass();
                push(&producer, job)
            })
        })
        .collect();
    drop(producer);
    gate.pass();
    Producers { gate, threads }
}

/// A liveness core (one registry shard) and its monitor on a manual clock starting at 0.
pub struct Master {
    /// The base clock; models move it only before spawning or after joining (or on the monitor's
    /// thread, through [`Master::race_tick_vs_ping`]).
    pub clock: std::sync::Arc<ManualClock>,
    /// Shared with the model's threads.
    pub liveness: Arc<Liveness>,
    /// Single-owner: moved into the thread that plays the monitor, then handed back.
    pub monitor: Monitor,
}

impl Master {
    /// A master with [`config`].
    pub fn new() -> Self {
        Self::with_config(config())
    }

    /// A master with `config`.
    pub fn with_config(config: LivenessConfig) -> Self {
        let clock = std::sync::Arc::new(ManualClock::new(0));
        let base: std::sync::Arc<dyn Clock> = clock.clone();
        let liveness = Arc::new(Liveness::with_registry(base, config, Registry::with_shards(1)));
        let monitor = Monitor::new(&liveness);
        Self {
            clock,
            liveness,
            monitor,
        }
    }

    /// Sets the base clock to `ms` and runs one monitor tick.
    pub fn tick_at(&mut self, ms: u64) -> TickReport {
        self.clock.set_ms(ms);
        self.monitor.tick(&self.liveness)
    }

    /// Races one monitor tick against a ping of [`CLIENT`] (no token), behind a [`Gate`]: the
    /// monitor moves to a spawned thread, which sets the base clock to `tick_ms` if given (else
    /// ticks at the current time) and ticks; the calling thread pings. The monitor comes back with
    /// the join, so this takes and returns the master. Returns the tick's report and the ping's.
    pub fn race_tick_vs_ping(self, tick_ms: Option<u64>) -> (Self, TickReport, PingOutcome) {
        self.race_clock_steps_tick_vs_ping(tick_ms.as_slice())
    }

    /// As [`Master::race_tick_vs_ping`], but the monitor's thread moves the base clock through
    /// each of `steps` in turn (one `set_ms` each, so each is a separate store a racing reader
    /// may see) and then ticks. `&[]` and `&[ms]` are `race_tick_vs_ping(None)` and `(Some(ms))`.
    pub fn race_clock_steps_tick_vs_ping(mut self, steps: &[u64]) -> (Self, TickReport, PingOutcome) {
        let gate = Gate::new();
        let steps = steps.to_vec();
        let monitor = {
            let (liveness, gate, mut mon) = (self.liveness.clone(), gate.clone(), self.monitor);
            let clock = self.clock.clone();
            thread::spawn(move || {
                gate.pass();
                for ms in steps {
                    clock.set_ms(ms);
                }
                let report = mon.tick(&liveness);
                (mon, report)
            })
        };
        gate.pass();
        let ping = self.liveness.ping(CLIENT, None);
        let (mon, report) = monitor.join().unwrap();
        self.monitor = mon;
        (self, report, ping)
    }

    /// First mount of `client` at the current time, whose work succeeds and registers nothing.
    pub fn mount_new(&self, client: ClientId) -> Arc<ClientLivenessRecord> {
        match self.liveness.mount(client, None, |_| Ok::<(), ()>(())) {
            MountOutcome::Mounted {
                record, created: true, ..
            } => record,
            other => panic!("setup mount failed: {other:?}"),
        }
    }

    /// Mounts `client` at 0 and ticks at its active deadline: the record is Suspected with its
    /// suspicion deadline at `ACTIVE_TTL_MS + SUSPICION_TTL_MS`.
    pub fn suspected(&mut self, client: ClientId) -> Arc<ClientLivenessRecord> {
        let rec = self.mount_new(client);
        let report = self.tick_at(ACTIVE_TTL_MS);
        assert_eq!(
            transitions(&report),
            vec![(LivenessState::Active, LivenessState::Suspected)]
        );
        assert_eq!(rec.state(), LivenessState::Suspected);
        rec
    }

    /// As [`Master::suspected`], then ticks at the suspicion deadline: the record is Offline and
    /// the returned job is its one offboarding job.
    pub fn offline(&mut self, client: ClientId) -> ClientOffboardingJob {
        self.suspected(client);
        let mut report = self.tick_at(ACTIVE_TTL_MS + SUSPICION_TTL_MS);
        assert_eq!(
            transitions(&report),
            vec![(LivenessState::Suspected, LivenessState::Offline)]
        );
        assert_eq!(report.jobs.len(), 1);
        report.jobs.pop().unwrap()
    }
}

/// Completes `job` with no resources to clean (every step succeeds): runs the real completion,
/// whose last act is the compare-and-erase of the record. Returns whether it erased.
pub fn complete(registry: &Registry, job: ClientOffboardingJob) -> bool {
    match complete_client_offboarding(&mut NoResources, registry, job) {
        Ok(done) => done.erased,
        Err(job) => panic!("a step of a resource-less job failed: {job:?}"),
    }
}

/// The `(from, to)` of every transition event of a tick, in order.
pub fn transitions(report: &TickReport) -> Vec<(LivenessState, LivenessState)> {
    report
        .events
        .iter()
        .filter_map(|e| match e {
            LivenessEvent::Transition(t) => Some((t.from, t.to)),
            _ => None,
        })
        .collect()
}
