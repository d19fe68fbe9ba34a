//! The state behind one `MlvCore`: the library's [`Liveness`], its monitor, its offboarding
//! [`Executor`] running the caller's step callbacks, and the counters `mlv_stats` reads.
//! No liveness logic lives here: every decision is the library's; this file only routes
//! reports to callbacks and jobs to the executor.
//!
//! # Ground rules
//!
//! - `liveness` is shared by every thread; signals (Ping, mount) touch nothing else here
//!   except, on a recovery, the event callback and one relaxed counter.
//! - `monitor` is `Manual(Monitor)` (stepped by `mlv_tick`), `Thread(MonitorThread)` or
//!   `None` while a tick runs or the thread starts/stops. Its mutex is held only to take or put
//!   back the monitor, never while a tick runs or a callback is called, so no callback can
//!   deadlock on it: `mlv_tick` from the monitor thread's callbacks gets
//!   `MLV_UNAVAILABLE_IN_CURRENT_STATUS`; from an event delivered by `mlv_tick` (delivered after
//!   the monitor is put back) it runs a nested tick.
//! - `executor` is read-locked to submit jobs (the monitor's sink) and read its depth; it is
//!   taken out under the write lock at shutdown and shut down after the lock is released, so a
//!   step callback that reads stats during shutdown does not deadlock.
//! - A job is always in one place: the executor (queued, running, waiting for a retry) or
//!   `held` (a job the executor refused — full or shut down — and every job it returned at
//!   shutdown). None is dropped; `held` jobs go into every snapshot with their progress.
//! - Counters are relaxed atomics: statistics, publishing nothing.
//! - `gate` is closed by `mlv_core_free` before it stops the threads. A pending mount (which
//!   holds this state, so it outlives the core) commits only under a pass of the gate, so once
//!   the free has returned no commit changes a record and no callback runs (`gate.rs`).

use crate::boundary::{invalid, Fail};
use crate::gate::Gate;
use crate::types::*;
use mooncake_liveness_core::clock::{Clock, ManualClock, SystemClock};
use mooncake_liveness_core::config::{keys, resolve, CliOverrides, LivenessConfig, RawConfig};
use mooncake_liveness_core::monitor::{LivenessEvent, Monitor, MonitorThread, TickReport};
use mooncake_liveness_core::offboarding::executor::{spawn_worker, Executor, ExecutorConfig, SharedSteps, WorkerBody};
use mooncake_liveness_core::offboarding::{CleanupError, ClientOffboardingJob, Progress, Step};
use mooncake_liveness_core::{telemetry, Liveness, Transition};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;

/// Relaxed event counters (see `MlvStats`).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) suspicions: AtomicU64,
    pub(crate) recoveries: AtomicU64,
    pub(crate) offline_commits: AtomicU64,
    pub(crate) stalls: AtomicU64,
    pub(crate) stall_ms: AtomicU64,
    pub(crate) brake_engagements: AtomicU64,
    pub(crate) jobs_completed: AtomicU64,
    pub(crate) step_failures: [AtomicU64; 5],
}

fn bump(c: &AtomicU64, by: u64) {
    c.fetch_add(by, Ordering::Relaxed);
}

/// The executor's view of the caller's step callbacks.
pub(crate) struct Steps {
    callbacks: MlvCallbacks,
    counters: Arc<Counters>,
}

impl SharedSteps for Steps {
    fn run_step(&self, step: Step, job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        let Some(f) = self.callbacks.step(step) else {
            return Ok(Progress::Done);
        };
        let info = MlvJob::of(job);
        let mut code = 0i32;
        // SAFETY: `mlv_core_new`'s contract: the callback is valid for the core's lifetime,
        // may run on any thread, and does not unwind; `info` and `code` outlive the call.
        let answer = unsafe { f(self.callbacks.user_data, &info, &mut code) };
        let failure = match answer {
            MLV_STEP_DONE => return Ok(Progress::Done),
            MLV_STEP_MORE => return Ok(Progress::More),
            MLV_STEP_RETRY_LATER => "retry later".to_string(),
            MLV_STEP_FAILED => format!("failed with code {code}"),
            other => format!("invalid step answer {other} (treated as a failure)"),
        };
        bump(&self.counters.step_failures[step_code(step) as usize], 1);
        Err(CleanupError::new(step, failure))
    }
}

// One per core, inside a mutex: its size does not matter, and boxing the monitor would add a
// pointer chase to every `mlv_tick`.
#[allow(clippy::large_enum_variant)]
pub(crate) enum MonitorSlot {
    Manual(Monitor),
    Thread(MonitorThread),
}

pub(crate) type Exec = Executor<Steps>;

/// Everything one core owns.
pub(crate) struct Shared {
    pub(crate) liveness: Arc<Liveness>,
    pub(crate) manual_clock: Option<Arc<ManualClock>>,
    pub(crate) callbacks: MlvCallbacks,
    pub(crate) counters: Arc<Counters>,
    pub(crate) monitor: Mutex<Option<MonitorSlot>>,
    pub(crate) executor: RwLock<Option<Exec>>,
    pub(crate) held: Mutex<Vec<ClientOffboardingJob>>,
    pub(crate) drain_ms: u64,
    /// Closed by `mlv_core_free`: a pending mount that outlives the core is inert (`gate.rs`).
    pub(crate) gate: Gate,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Resolves `text` (YAML or JSON; JSON is YAML) and the struct's given fields by the binary's
/// rules: the struct plays the command line, the text the file.
pub(crate) fn resolve_config(config: &MlvConfig, text: Option<&[u8]>) -> Result<LivenessConfig, Fail> {
    let file = match text {
        Some(bytes) => {
            let s = std::str::from_utf8(bytes).map_err(|e| invalid(format!("configuration text is not UTF-8: {e}")))?;
            Some(RawConfig::from_yaml_str(s).map_err(|e| invalid(format!("configuration text: {e}")))?)
        }
        None => None,
    };
    // Each field given (non-zero) is the command-line value of its key; durations go in as whole
    // milliseconds whatever the key's unit (`RawConfig::set_ms`: no round trip through seconds).
    let mut cli = CliOverrides::default();
    let durations = [
        (keys::CLIENT_ACTIVE_TTL_SEC, config.active_ttl_ms),
        (keys::CLIENT_SUSPICION_TTL_SEC, config.suspicion_ttl_ms),
        (keys::MONITOR_TICK_MS, config.monitor_tick_ms),
        (keys::OFFBOARDING_RETRY_BACKOFF_MS, config.offboarding_retry_backoff_ms),
        (
            keys::OFFBOARDING_RETRY_MAX_BACKOFF_MS,
            config.offboarding_retry_max_backoff_ms,
        ),
        (keys::SHUTDOWN_DRAIN_MS, config.shutdown_drain_ms),
    ];
    for (key, ms) in durations.into_iter().filter(|(_, ms)| *ms != 0) {
        cli.other.set_ms(key, ms);
    }
    if config.offboarding_workers != 0 {
        cli.other
            .set(keys::OFFBOARDING_WORKERS, config.offboarding_workers.into());
    }
    resolve(file.as_ref(), &cli)
        .map(|r| r.config)
        .map_err(|e| invalid(format!("configuration: {e}")))
}

impl Shared {
    /// A core on `clock` with `config`; starts the executor's workers.
    pub(crate) fn new(config: LivenessConfig, clock: MlvClockKind, callbacks: MlvCallbacks) -> Result<Arc<Self>, Fail> {
        Self::new_with(config, clock, callbacks, spawn_worker)
    }

    /// [`new`](Self::new), starting the workers with `spawn` (the executor's seam: tests
    /// inject a failure). If one cannot start, the executor stops and joins the others, so a
    /// failed `mlv_core_new` leaves no thread holding the callbacks.
    fn new_with(
        config: LivenessConfig,
        clock: MlvClockKind,
        callbacks: MlvCallbacks,
        spawn: impl FnMut(usize, WorkerBody) -> std::io::Result<JoinHandle<()>>,
    ) -> Result<Arc<Self>, Fail> {
        let (base, manual): (Arc<dyn Clock>, _) = match clock {
            MLV_CLOCK_SYSTEM => (Arc::new(SystemClock::new()), None),
            MLV_CLOCK_MANUAL => {
                let c = Arc::new(ManualClock::new(0));
                (c.clone(), Some(c))
            }
            other => {
                return Err(invalid(format!(
                    "clock kind {other} is not MLV_CLOCK_SYSTEM or MLV_CLOCK_MANUAL"
                )))
            }
        };
        let drain_ms = config.shutdown_drain_ms;
        let exec_config = ExecutorConfig::from_config(&config);
        let liveness = Arc::new(Liveness::new(base, config));
        let counters = Arc::new(Counters::default());
        let steps = Arc::new(Steps {
            callbacks,
            counters: counters.clone(),
        });
        let done = counters.clone();
        let on_complete = move |c: mooncake_liveness_core::offboarding::Completed| {
            bump(&done.jobs_completed, 1);
            let callbacks: &MlvCallbacks = &callbacks; // capture the whole (Sync) struct
            if let Some(f) = callbacks.on_offboarded {
                let job = MlvJob {
                    client: c.client.into(),
                    incarnation: c.incarnation.0,
                    attempt: c.attempts,
                    ..MlvJob::default()
                };
                // SAFETY: `mlv_core_new`'s contract (valid, thread-safe, no unwinding).
                unsafe { f(callbacks.user_data, &job) };
            }
        };
        let executor = Executor::spawn_with(steps, liveness.clone(), exec_config, on_complete, spawn)
            .map_err(|e| Fail(MLV_INTERNAL_ERROR, format!("cannot start offboarding workers: {e}")))?;
        let monitor = Monitor::new(&liveness);
        Ok(Arc::new(Shared {
            liveness,
            manual_clock: manual,
            callbacks,
            counters,
            monitor: Mutex::new(Some(MonitorSlot::Manual(monitor))),
            executor: RwLock::new(Some(executor)),
            held: Mutex::new(Vec::new()),
            drain_ms,
            gate: Gate::default(),
        }))
    }

    /// Delivers one event to the callback and the metrics facade, and counts it.
    pub(crate) fn deliver(&self, event: &LivenessEvent) {
        let out = match event {
            LivenessEvent::Transition(t) => {
                self.count_transition(t);
                MlvEvent::from(t)
            }
            LivenessEvent::StallDetected { at_ms, ms } => {
                telemetry::stall(*ms);
                bump(&self.counters.stalls, 1);
                bump(&self.counters.stall_ms, *ms);
                MlvEvent {
                    kind: MLV_EVENT_STALL,
                    at_ms: *at_ms,
                    stall_ms: *ms,
                    ..MlvEvent::default()
                }
            }
            LivenessEvent::MassSuspicionBrake {
                at_ms,
                engaged,
                suspected,
                ..
            } => {
                if *engaged {
                    telemetry::brake_engaged("mass_suspicion");
                    bump(&self.counters.brake_engagements, 1);
                }
                MlvEvent {
                    kind: MLV_EVENT_BRAKE,
                    at_ms: *at_ms,
                    brake_engaged: *engaged,
                    suspected: *suspected as u64,
                    ..MlvEvent::default()
                }
            }
        };
        self.call_on_event(&out);
    }

    /// A recovery committed by a signal (Ping or mount) on the calling thread.
    pub(crate) fn deliver_recovery(&self, t: &Transition) {
        self.count_transition(t);
        self.call_on_event(&MlvEvent::from(t));
    }

    fn count_transition(&self, t: &Transition) {
        telemetry::transition(t);
        use mooncake_liveness_core::LivenessState::*;
        match (t.from, t.to) {
            (Active, Suspected) => bump(&self.counters.suspicions, 1),
            (Suspected, Active) => bump(&self.counters.recoveries, 1),
            (_, Offline) => bump(&self.counters.offline_commits, 1),
            _ => {}
        }
    }

    fn call_on_event(&self, e: &MlvEvent) {
        if let Some(f) = self.callbacks.on_event {
            // SAFETY: `mlv_core_new`'s contract (valid, thread-safe, no unwinding); `e`
            // outlives the call.
            unsafe { f(self.callbacks.user_data, e) };
        }
    }

    /// Routes one tick's report: events to the callback, jobs to the executor.
    pub(crate) fn sink(&self, report: TickReport) -> MlvTickSummary {
        for e in &report.events {
            self.deliver(e);
        }
        let summary = MlvTickSummary {
            events: report.events.len() as u32,
            jobs: report.jobs.len() as u32,
        };
        self.submit(report.jobs);
        summary
    }

    /// Hands jobs to the executor; whatever it refuses is held, never dropped.
    pub(crate) fn submit(&self, jobs: Vec<ClientOffboardingJob>) {
        if jobs.is_empty() {
            return;
        }
        let refused: Vec<_> = {
            let exec = self.executor.read().unwrap_or_else(|e| e.into_inner());
            match exec.as_ref() {
                Some(x) => jobs
                    .into_iter()
                    .filter_map(|j| x.submit(j).err().map(|e| e.into_inner()))
                    .collect(),
                None => jobs,
            }
        };
        lock(&self.held).extend(refused);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The struct's durations reach the configuration exactly, in milliseconds, whatever the
    /// key's unit (no round trip through fractional seconds), and the text is the file beneath.
    #[test]
    fn struct_durations_resolve_exactly_over_the_text() {
        let given = MlvConfig {
            active_ttl_ms: 1_234_567,
            suspicion_ttl_ms: 1,
            monitor_tick_ms: 7,
            offboarding_workers: 3,
            ..MlvConfig::default()
        };
        let text = b"client_active_ttl_sec: 99\nstall_bound_ms: 42\nrpc_port: 50051\n";
        let c = resolve_config(&given, Some(text)).unwrap();
        assert_eq!(
            (c.active_ttl_ms, c.suspicion_ttl_ms, c.monitor_tick_ms),
            (1_234_567, 1, 7)
        );
        assert_eq!(
            (c.offboarding_workers, c.stall_bound_ms),
            (3, 42),
            "the text fills the rest"
        );
        let c = resolve_config(&MlvConfig::default(), None).unwrap();
        assert_eq!(c, LivenessConfig::default(), "zero fields are not given");
        let too_long = MlvConfig {
            active_ttl_ms: mooncake_liveness_core::config::MAX_DURATION_MS + 1,
            ..MlvConfig::default()
        };
        let Err(Fail(code, msg)) = resolve_config(&too_long, None) else {
            panic!("an active TTL over 10 years was accepted")
        };
        assert_eq!(code, MLV_INVALID_PARAMS);
        assert!(
            msg.contains("client_active_ttl_sec") && msg.contains("315360000001 ms"),
            "{msg}"
        );
    }

    /// Issue 29, defect 5 through the C ABI's constructor: the third of four workers cannot
    /// start; the two started are stopped and joined before the error comes back.
    #[test]
    fn a_core_whose_workers_cannot_all_start_leaves_no_thread_behind() {
        let config = LivenessConfig {
            offboarding_workers: 4,
            ..LivenessConfig::default()
        };
        let started = Arc::new(AtomicU64::new(0));
        let exited = Arc::new(AtomicU64::new(0));
        let (s, e) = (started.clone(), exited.clone());
        let spawn = move |i: usize, body: WorkerBody| {
            if i == 2 {
                return Err(std::io::Error::other("injected"));
            }
            s.fetch_add(1, Ordering::SeqCst);
            let e = e.clone();
            std::thread::Builder::new().spawn(move || {
                body();
                e.fetch_add(1, Ordering::SeqCst);
            })
        };
        let r = Shared::new_with(config, MLV_CLOCK_MANUAL, MlvCallbacks::default(), spawn);
        let Err(Fail(code, msg)) = r else {
            panic!("the core was made without its workers")
        };
        assert_eq!(code, MLV_INTERNAL_ERROR);
        assert_eq!(started.load(Ordering::SeqCst), 2);
        assert_eq!(exited.load(Ordering::SeqCst), 2, "started workers left running");
        assert!(msg.contains("worker 2 of 4") && msg.contains("injected"), "{msg}");
    }
}
