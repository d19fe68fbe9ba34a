//! The steady state at 1M clients on production settings (10 s TTL, 100 ms tick): the fleet
//! behind `monitor/worst_tick_1m` and the hand-timed `steady_tick_1m` note.

use crate::common::*;
use mooncake_liveness::{ClientId, Liveness, LivenessConfig, ManualClock, Monitor};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

/// One tick of a [`Steady`] fleet.
pub(crate) struct Step {
    pub(crate) tick_ns: u64,
    pub(crate) examined: u64,
    pub(crate) ping_ns: u64,
    pub(crate) pings: u64,
}

/// 1M healthy clients mounted evenly over one TTL, each pinging every `period` ticks (a
/// `period`-th of them between any two ticks). Nothing is ever due, but every wheel entry still
/// wakes once per TTL (lazy rescheduling: Ping never touches the wheel) and re-arms a TTL ahead,
/// into a level-1 slot that is later cascaded into level 0.
pub(crate) struct Steady {
    clock: Arc<ManualClock>,
    live: Liveness,
    pub(crate) monitor: Monitor,
    ids: Vec<ClientId>,
    period: usize,
    phase: usize,
}

impl Steady {
    /// Mounts the fleet over one TTL (ticking as it goes), then runs `warm` more ticks.
    pub(crate) fn build(period: usize, warm: usize) -> Self {
        let cfg = LivenessConfig::default();
        let ttl_ticks = (cfg.active_ttl_ms / cfg.monitor_tick_ms) as usize;
        let (clock, live) = liveness(cfg, 65_536);
        let monitor = Monitor::new(&live);
        let ids: Vec<ClientId> = client_ids(SCAN_CLIENTS, 7).into_iter().map(ClientId).collect();
        let mut fleet = Self {
            clock,
            live,
            monitor,
            ids,
            period,
            phase: 0,
        };
        let per_tick = SCAN_CLIENTS / ttl_ticks;
        for k in 0..ttl_ticks {
            for id in &fleet.ids[k * per_tick..(k + 1) * per_tick] {
                mount(&fleet.live, id.0);
            }
            fleet.step((k + 1) * per_tick);
        }
        for _ in 0..warm {
            fleet.step(SCAN_CLIENTS);
        }
        fleet
    }

    /// One tick: the clients of this phase ping (of the first `mounted`), time moves one tick,
    /// the monitor ticks (timed).
    pub(crate) fn step(&mut self, mounted: usize) -> Step {
        let ping_start = Instant::now();
        let mut pings = 0u64;
        for &id in self.ids[..mounted].iter().skip(self.phase).step_by(self.period) {
            black_box(self.live.ping(id, None));
            pings += 1;
        }
        let ping_ns = ping_start.elapsed().as_nanos() as u64;
        self.phase = (self.phase + 1) % self.period;
        self.clock.advance_ms(TICK_MS);
        let examined = self.monitor.stats().entries_examined;
        let start = Instant::now();
        let report = self.monitor.tick(&self.live);
        let ns = start.elapsed().as_nanos() as u64;
        assert!(report.events.is_empty(), "healthy clients never expire");
        Step {
            tick_ns: ns,
            examined: self.monitor.stats().entries_examined - examined,
            ping_ns,
            pings,
        }
    }
}

/// Not a criterion benchmark (context for `monitor/idle_tick_1m`): the tick in steady state,
/// hand-timed, with every client pinging every 5 s. The pings are timed too: the same
/// `Liveness::ping` as `ping/word`, with 1M clients instead of 10k.
pub(crate) fn steady_tick_note() {
    const PING_PERIOD_TICKS: usize = 50;
    const WARM_TICKS: usize = 110; // > TTL: every entry has been re-armed at least once
    const MEASURED_TICKS: usize = 320; // five level-1 slots
    let t = Instant::now();
    let mut fleet = Steady::build(PING_PERIOD_TICKS, WARM_TICKS);
    let ticks: Vec<Step> = (0..MEASURED_TICKS).map(|_| fleet.step(SCAN_CLIENTS)).collect();
    let mut ns: Vec<u64> = ticks.iter().map(|t| t.tick_ns).collect();
    ns.sort_unstable();
    let mean = ns.iter().sum::<u64>() as f64 / ns.len() as f64;
    let examined: u64 = ticks.iter().map(|t| t.examined).sum();
    let max_examined = ticks.iter().map(|t| t.examined).max().unwrap_or(0);
    let ping_ns: u64 = ticks.iter().map(|t| t.ping_ns).sum();
    let pings: u64 = ticks.iter().map(|t| t.pings).sum();
    note("steady_tick_1m.mean_ns", format!("{mean:.0}"));
    note("steady_tick_1m.p50_ns", ns[ns.len() / 2]);
    note("steady_tick_1m.p99_ns", ns[ns.len() * 99 / 100]);
    note("steady_tick_1m.max_ns", ns[ns.len() - 1]);
    note(
        "steady_tick_1m.entries_examined_per_tick",
        examined / MEASURED_TICKS as u64,
    );
    note("steady_tick_1m.max_entries_examined_in_a_tick", max_examined);
    note(
        "steady_ping_1m.mean_ns",
        format!("{:.1}", ping_ns as f64 / pings.max(1) as f64),
    );
    note("steady_tick_1m.wall_ms", t.elapsed().as_millis());
}
