//! `serve`'s monitor thread: every `monitor_tick_ms` it runs the master's tick (the liveness
//! monitor, then offboarding: inline, or handed to the offboarding workers in `async` mode),
//! logs every event the master recorded since the last tick (transitions, stalls, brakes,
//! offboarding retries and completions, whichever thread produced them), and every
//! [`RECONCILE_EVERY`] retires the address spaces of segments the master dropped and frees the
//! placements no object backs any more (see [`Objects`](super::objects)).
//!
//! Ground rules: one thread; it shares [`State`] with the request threads on the master's and
//! the state's own terms; it stops when the flag is raised (checked every tick) and is joined.

use super::log::{info, warning};
use super::state::State;
use crate::liveness::LivenessState;
use crate::master::MasterEvent;
use crate::sync::{sleep, thread, Arc, AtomicBool, Ordering};
use crate::LivenessEvent;
use std::time::{Duration, Instant};

/// How often placements are reconciled with the master.
const RECONCILE_EVERY: Duration = Duration::from_secs(1);

/// The running thread.
#[derive(Debug)]
pub(crate) struct MonitorThread {
    stop: Arc<AtomicBool>,
    handle: Option<thread::JoinHandle<()>>,
}

impl MonitorThread {
    /// Starts it.
    pub(crate) fn spawn(state: Arc<State>) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = thread::Builder::new().name("serve-monitor".into()).spawn(move || {
            let tick = Duration::from_millis(state.master.tick_ms());
            let mut next = Instant::now() + tick;
            let mut reconciled = Instant::now();
            // Acquire: pairs with the Release store in `stop`.
            while !flag.load(Ordering::Acquire) {
                let now = Instant::now();
                if next > now {
                    sleep(next - now);
                }
                next += tick;
                state.master.tick();
                log_events(&state);
                if reconciled.elapsed() >= RECONCILE_EVERY {
                    reconciled = Instant::now();
                    let (spaces, freed) = state.reconcile();
                    if spaces + freed > 0 {
                        info!("spaces_released={spaces}, placements_freed={freed}, action=reconcile");
                    }
                    publish(&state);
                }
            }
            log_events(&state);
        })?;
        Ok(Self {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops and joins it.
    pub(crate) fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn state_name(s: LivenessState) -> &'static str {
    match s {
        LivenessState::Active => "active",
        LivenessState::Suspected => "suspected",
        LivenessState::Offline => "offline",
    }
}

/// Logs the master's events, with upstream's RFC action names.
fn log_events(state: &State) {
    for ev in state.master.take_events() {
        match ev {
            MasterEvent::Liveness(LivenessEvent::Transition(t)) => {
                let action = match t.to {
                    LivenessState::Suspected => "client_liveness_suspected",
                    LivenessState::Active => "client_liveness_recovered",
                    LivenessState::Offline => "client_liveness_offline",
                };
                info!(
                    "client_id={}, incarnation={}, from={}, to={}, cause={:?}, action={action}",
                    state.master.client_name(t.client),
                    t.incarnation,
                    state_name(t.from),
                    state_name(t.to),
                    t.cause
                );
            }
            MasterEvent::Offboarded { client, incarnation, attempts, .. } => info!(
                "client_id={}, incarnation={incarnation}, attempts={attempts}, action=client_offboarding_complete",
                state.master.client_name(client)
            ),
            MasterEvent::OffboardingRetry { client, incarnation, step, attempt, .. } => warning!(
                "client_id={}, incarnation={incarnation}, step={step:?}, attempt={attempt}, action=client_offboarding_retry",
                state.master.client_name(client)
            ),
            MasterEvent::Liveness(LivenessEvent::StallDetected { ms, .. }) => warning!("stall_ms={ms}, action=master_stall_credited"),
            MasterEvent::Liveness(LivenessEvent::MassSuspicionBrake { engaged, suspected, registered, .. }) => warning!(
                "engaged={engaged}, suspected={suspected}, registered={registered}, action=mass_suspicion_brake"
            ),
        }
    }
}

/// Gauges of what `serve` holds beside the master.
fn publish(state: &State) {
    let spaces = state.spaces.all();
    let free: u64 = spaces.iter().map(|s| s.free_bytes()).sum();
    let total: u64 = spaces.iter().map(|s| s.size).sum();
    metrics::gauge!("mooncake_liveness_serve_segments").set(spaces.len() as f64);
    metrics::gauge!("mooncake_liveness_serve_segment_bytes", "kind" => "total").set(total as f64);
    metrics::gauge!("mooncake_liveness_serve_segment_bytes", "kind" => "free").set(free as f64);
    metrics::gauge!("mooncake_liveness_serve_keys").set(state.objects.len() as f64);
    metrics::gauge!("mooncake_liveness_serve_metadata_keys").set(state.metadata.len() as f64);
}
