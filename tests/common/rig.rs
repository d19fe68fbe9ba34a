//! `Rig`: a reference master on a manual clock in either offboarding mode, ticked every 100 ms,
//! with its events kept; it can be restored from a snapshot (failover) and run until a client's
//! job completes (letting real workers run in async mode).

use super::master::config;
use mooncake_liveness::config::OffboardingMode;
use mooncake_liveness::master::{Master, MasterEvent, MasterOptions};
use mooncake_liveness::snapshot::Snapshot;
use mooncake_liveness::{Clock, LivenessConfig, ManualClock};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub fn config_in(mode: OffboardingMode) -> LivenessConfig {
    LivenessConfig {
        offboarding_mode: mode,
        offboarding_workers: 2,
        ..config()
    }
}

/// A master on a manual clock in `mode`, with its own tick counter.
pub struct Rig {
    pub clock: Arc<ManualClock>,
    pub m: Master,
    pub next_tick: u64,
    pub events: Vec<MasterEvent>,
}

impl Rig {
    pub fn new(mode: OffboardingMode) -> Self {
        let clock = Arc::new(ManualClock::new(0));
        let m = Master::new(
            clock.clone() as Arc<dyn Clock>,
            config_in(mode),
            MasterOptions::default(),
        );
        Self {
            clock,
            m,
            next_tick: 100,
            events: Vec::new(),
        }
    }

    pub fn restored(&self, mode: OffboardingMode, snap: &Snapshot) -> Self {
        let m = Master::restore(
            self.clock.clone() as Arc<dyn Clock>,
            config_in(mode),
            MasterOptions::default(),
            snap,
        )
        .expect("a snapshot of a live master restores");
        Self {
            clock: self.clock.clone(),
            m,
            next_tick: self.next_tick,
            events: Vec::new(),
        }
    }

    /// Ticks to `t`, keeping `alive` pinging every second.
    pub fn run_to(&mut self, t: u64, alive: &[&str]) {
        while self.next_tick <= t {
            self.clock.set_ms(self.next_tick);
            if self.next_tick % 1_000 == 0 {
                for c in alive {
                    self.m.ping(c);
                }
            }
            self.m.tick();
            self.events.extend(self.m.take_events());
            self.next_tick += 100;
        }
    }

    /// Ticks (100 ms of virtual time per step, letting real workers run) until `client`'s job
    /// completes; bounded.
    pub fn until_offboarded(&mut self, client: &str, alive: &[&str]) -> u32 {
        let started = Instant::now();
        loop {
            if let Some(a) = self.events.iter().find_map(|e| match e {
                MasterEvent::Offboarded {
                    client: c, attempts, ..
                } if self.m.client_name(*c) == client => Some(*attempts),
                _ => None,
            }) {
                return a;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{client}'s job never completed"
            );
            let t = self.next_tick;
            self.run_to(t, alive);
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
