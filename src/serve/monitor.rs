//! `serve`'s monitor thread: every `monitor_tick_ms` it runs the master's tick (the liveness
//! monitor, then offboarding: inline, or handed to the offboarding workers in `async` mode),
//! logs every event the master recorded since the last tick (transitions, stalls, brakes,
//! offboarding retries and completions, whichever thread produced them, each stamped with the
//! time it happened), and every [`RECONCILE_EVERY`] retires the address spaces of segments the
//! master dropped and, when the master dropped replicas on its own since the last walk (an
//! unmount, an offboarding's completion, which this thread reads among the events), frees the
//! placements no object backs any more (see [`Objects`](super::objects),
//! [`State::reconcile`]).
//!
//! Schedule: it logs `action=client_monitor_started` as it starts, and ticks on a grid from
//! then, one tick every `monitor_tick_ms` (the work of a tick does not delay the next). A tick
//! that wakes more than [`LATE`] after its slot (the machine was busy, the process was stopped)
//! starts the grid again from its wake-up: missed slots are not made up (a burst of catch-up
//! ticks would only repeat the first one's work), and no tick ever comes less than a period
//! (less [`LATE`]) after the one before, so a stopped master ticks once when it resumes and every
//! tick after follows from that one, as `replay`'s `stall` with `wake_ms` models it. With
//! `--vmodule=monitor=1` each tick logs `action=client_monitor_tick, us=<how long it ran>`,
//! stamped when it woke, after the events it recorded.
//!
//! Ground rules: one thread; it shares [`State`] with the request threads on the master's and
//! the state's own terms; it stops when the flag is raised (checked every tick) and is joined.

use super::log::{event, info, Level, WallClock};
use super::state::State;
use crate::liveness::LivenessState;
use crate::master::MasterEvent;
use crate::sync::{sleep, thread, Arc, AtomicBool, Ordering};
use crate::LivenessEvent;
use std::time::{Duration, Instant};

/// How often placements are reconciled with the master.
const RECONCILE_EVERY: Duration = Duration::from_secs(1);

/// A tick that wakes later than this after its slot restarts the grid (the sleep's own
/// overshoot, tens of microseconds, does not).
const LATE: Duration = Duration::from_millis(1);

/// The running thread.
#[derive(Debug)]
pub(crate) struct MonitorThread {
    stop: Arc<AtomicBool>,
    handle: Option<thread::JoinHandle<()>>,
}

impl MonitorThread {
    /// Starts it; `tick_lines` logs every tick (`--vmodule=monitor=1`).
    pub(crate) fn spawn(state: Arc<State>, tick_lines: bool) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = thread::Builder::new().name("serve-monitor".into()).spawn(move || {
            let tick = Duration::from_millis(state.master.tick_ms());
            // On the phase (log.rs `WallClock::on_phase`): every slot below is then too, the
            // tick being a whole number of milliseconds.
            let start = state.wall.on_phase(Instant::now());
            // The grid's origin, which a reader of the log locates the ticks from: stamped at
            // `start` itself, on the same pairing as the events' stamps.
            event!(
                state.wall.of(start),
                Level::Info,
                "monitor_tick_ms={}, action=client_monitor_started",
                tick.as_millis()
            );
            let mut next = start + tick;
            let mut reconciled = start;
            // Acquire: pairs with the Release store in `stop`.
            while !flag.load(Ordering::Acquire) {
                let now = Instant::now();
                if next > now {
                    sleep(next - now);
                }
                let woke = Instant::now();
                let slot = slot_of(next, woke, state.wall);
                state.master.tick();
                let ran = woke.elapsed();
                log_events(&state);
                if tick_lines {
                    event!(
                        state.wall.of(woke),
                        Level::Info,
                        "action=client_monitor_tick, us={}",
                        ran.as_micros()
                    );
                }
                next = slot + tick;
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

/// The slot a tick due at `due` that woke at `woke` ran in: `due`, or, if it woke more than
/// [`LATE`] after it, the last instant on the phase before its wake-up (the grid starts again
/// from there, on the phase).
fn slot_of(due: Instant, woke: Instant, wall: WallClock) -> Instant {
    if woke > due + LATE {
        wall.on_phase(woke)
    } else {
        due
    }
}

fn state_name(s: LivenessState) -> &'static str {
    match s {
        LivenessState::Active => "active",
        LivenessState::Suspected => "suspected",
        LivenessState::Offline => "offline",
    }
}

/// Logs the master's events, with upstream's RFC action names, each stamped with the time the
/// master recorded it.
fn log_events(state: &State) {
    let wall: WallClock = state.wall;
    for ev in state.master.take_events() {
        match ev {
            MasterEvent::Liveness(LivenessEvent::Transition(t)) => {
                let action = match t.to {
                    LivenessState::Suspected => "client_liveness_suspected",
                    LivenessState::Active => "client_liveness_recovered",
                    LivenessState::Offline => "client_liveness_offline",
                };
                event!(
                    wall.at(t.at_ms),
                    Level::Info,
                    "client_id={}, action={action}, incarnation={}, from={}, to={}, cause={:?}",
                    state.master.client_name(t.client),
                    t.incarnation,
                    state_name(t.from),
                    state_name(t.to),
                    t.cause
                );
            }
            MasterEvent::Offboarded { client, incarnation, attempts, at_ms } => {
                // The job dropped the client's replicas: the next reconcile walks every space.
                state.note_drops();
                event!(
                    wall.at(at_ms),
                    Level::Info,
                    "client_id={}, action=client_offboarding_complete, incarnation={incarnation}, attempts={attempts}",
                    state.master.client_name(client)
                )
            }
            MasterEvent::OffboardingRetry { client, incarnation, step, attempt, at_ms } => event!(
                wall.at(at_ms),
                Level::Warn,
                "client_id={}, action=client_offboarding_retry, incarnation={incarnation}, step={step:?}, attempt={attempt}",
                state.master.client_name(client)
            ),
            MasterEvent::Liveness(LivenessEvent::StallDetected { ms, at_ms }) => event!(
                wall.at(at_ms),
                Level::Warn,
                "stall_ms={ms}, action=master_stall_credited"
            ),
            MasterEvent::Liveness(LivenessEvent::MassSuspicionBrake {
                engaged,
                suspected,
                registered,
                at_ms,
            }) => event!(
                wall.at(at_ms),
                Level::Warn,
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_grid_is_kept_while_ticks_are_on_time_and_restarts_on_the_phase_from_a_late_one() {
        let t0 = Instant::now();
        let wall = WallClock::new(t0);
        let us = |n: u64| t0 + Duration::from_micros(n);
        let phase = super::super::log::PHASE.as_micros() as u64;
        let due = us(100_000 + phase);
        assert_eq!(wall.on_phase(due), due, "a due slot is on the phase");
        // On time, or within the sleep's overshoot: the slot stays where it was due.
        assert_eq!(slot_of(due, due, wall), due);
        assert_eq!(slot_of(due, us(100_900 + phase), wall), due);
        // Late (a busy machine, a stopped process): the grid starts again from the last instant
        // on the phase before the wake-up, so the next tick is a whole period after this one,
        // no slot is made up, and every tick stays on the phase.
        assert_eq!(slot_of(due, us(160_000 + phase + 500), wall), us(160_000 + phase));
        assert_eq!(slot_of(due, us(160_000), wall), us(159_000 + phase));
        assert_eq!(slot_of(due, us(8_100_000 + phase), wall), us(8_100_000 + phase));
    }
}
