//! `Stepped`: a reference master on a manual clock, ticked every 100 ms up to a time while the
//! given clients ping each second.

use mooncake_liveness::master::{Master, MasterOptions};
use mooncake_liveness::{Clock, LivenessConfig, LivenessState, ManualClock};
use std::sync::Arc;

pub struct Stepped {
    pub clock: Arc<ManualClock>,
    pub m: Master,
    pub next_tick: u64,
}

impl Stepped {
    pub fn new(config: LivenessConfig, options: MasterOptions) -> Self {
        let clock = Arc::new(ManualClock::new(0));
        let m = Master::new(clock.clone() as Arc<dyn Clock>, config, options);
        Self {
            clock,
            m,
            next_tick: 100,
        }
    }

    /// Runs every tick up to `t` (pinging `alive` each second), then sets the clock to `t`.
    pub fn at(&mut self, t: u64, alive: &[&str]) -> &Master {
        while self.next_tick <= t {
            self.clock.set_ms(self.next_tick);
            if self.next_tick % 1_000 == 0 {
                for c in alive {
                    self.m.ping(c);
                }
            }
            self.m.tick();
            self.next_tick += 100;
        }
        self.clock.set_ms(t);
        &self.m
    }

    pub fn state(&self, client: &str) -> Option<LivenessState> {
        self.m.query(Some(client), None).clients.first().map(|c| c.state)
    }
}
