//! A reference master on a manual clock, stepped tick by tick like `replay` does.

use mooncake_liveness::master::{Master, MasterOptions};
use mooncake_liveness::{Clock, LivenessConfig, LivenessState, ManualClock};
use std::sync::Arc;

/// TTLs 10 s / 20 s, stall bound 5 s, everything else default.
pub fn config() -> LivenessConfig {
    LivenessConfig {
        active_ttl_ms: 10_000,
        suspicion_ttl_ms: 20_000,
        stall_bound_ms: 5_000,
        ..LivenessConfig::default()
    }
}

pub struct M {
    pub clock: Arc<ManualClock>,
    pub m: Master,
    pub next_tick: u64,
}

impl M {
    pub fn new() -> Self {
        Self::with(MasterOptions::default())
    }

    pub fn with(options: MasterOptions) -> Self {
        let clock = Arc::new(ManualClock::new(0));
        let m = Master::new(clock.clone() as Arc<dyn Clock>, config(), options);
        Self {
            clock,
            m,
            next_tick: 100,
        }
    }

    /// Runs every tick up to `t`, sets the clock to `t`, and hands out the master.
    pub fn at(&mut self, t: u64) -> &mut Master {
        while self.next_tick <= t {
            self.clock.set_ms(self.next_tick);
            self.m.tick();
            self.next_tick += 100;
        }
        self.clock.set_ms(t);
        &mut self.m
    }

    /// The liveness state of `client`'s current incarnation (diagnostic query).
    pub fn state(&self, client: &str) -> Option<LivenessState> {
        self.m.query(Some(client), None).clients.first().map(|c| c.state)
    }
}
