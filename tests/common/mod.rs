//! Shared harness for integration tests: a liveness core on a manual clock, stepped tick by tick.
#![allow(dead_code, unreachable_pub)]

pub mod executor;
pub mod master;
pub mod rig;
pub mod rng;
pub mod stepped;

use mooncake_liveness::liveness::LostReason;
use mooncake_liveness::{
    ClientId, ClientLivenessRecord, Clock, Incarnation, Liveness, LivenessConfig, LivenessEvent, ManualClock, Monitor,
    MountOutcome, PingStatus, TickReport,
};
use std::sync::Arc;

pub struct Harness {
    pub clock: Arc<ManualClock>,
    pub live: Liveness,
    pub monitor: Monitor,
    pub events: Vec<LivenessEvent>,
    pub jobs: Vec<mooncake_liveness::ClientOffboardingJob>,
}

pub fn config(active_ms: u64, suspicion_ms: u64) -> LivenessConfig {
    LivenessConfig {
        active_ttl_ms: active_ms,
        suspicion_ttl_ms: suspicion_ms,
        stall_bound_ms: active_ms / 2,
        monitor_tick_ms: 100,
        ..LivenessConfig::default()
    }
}

impl Harness {
    pub fn new(config: LivenessConfig) -> Self {
        let clock = Arc::new(ManualClock::new(0));
        let live = Liveness::new(clock.clone() as Arc<dyn Clock>, config);
        let monitor = Monitor::new(&live);
        Self {
            clock,
            live,
            monitor,
            events: Vec::new(),
            jobs: Vec::new(),
        }
    }

    pub fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Runs every tick boundary in (now, t], like `replay` does, then sets the clock to t.
    pub fn run_to(&mut self, t: u64) {
        let tick = self.monitor.tick_ms();
        let mut next = (self.now() / tick + 1) * tick;
        while next <= t {
            self.clock.set_ms(next);
            let report = self.monitor.tick(&self.live);
            self.absorb(report);
            next += tick;
        }
        self.clock.set_ms(t);
    }

    /// Jumps the clock to t without running the ticks in between (a stalled master), then runs one tick at t.
    pub fn stall_to(&mut self, t: u64) {
        self.clock.set_ms(t);
        let report = self.monitor.tick(&self.live);
        self.absorb(report);
    }

    fn absorb(&mut self, report: TickReport) {
        self.events.extend(report.events);
        self.jobs.extend(report.jobs);
    }

    pub fn mount(&self, id: u128) -> Arc<ClientLivenessRecord> {
        match self.live.mount(ClientId(id), None, |_| Ok::<(), ()>(())) {
            MountOutcome::Mounted { record, .. } => record,
            other => panic!("mount of {id} failed: {other:?}"),
        }
    }

    pub fn try_mount(&self, id: u128, ok: bool) -> MountOutcome<(), &'static str> {
        self.live
            .mount(ClientId(id), None, |_| if ok { Ok(()) } else { Err("mount failed") })
    }

    pub fn ping(&self, id: u128) -> PingStatus {
        self.live.ping(ClientId(id), None).status
    }

    /// (time, client, from, to) of every transition so far.
    pub fn transitions(&self) -> Vec<(u64, u128, &'static str, &'static str)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                LivenessEvent::Transition(t) => Some((t.at_ms, t.client.0, t.from.as_str(), t.to.as_str())),
                _ => None,
            })
            .collect()
    }

    pub fn stalls(&self) -> Vec<(u64, u64)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                LivenessEvent::StallDetected { at_ms, ms } => Some((*at_ms, *ms)),
                _ => None,
            })
            .collect()
    }

    pub fn complete_jobs(&mut self) -> usize {
        let jobs = std::mem::take(&mut self.jobs);
        let n = jobs.len();
        for job in jobs {
            let done = mooncake_liveness::complete_client_offboarding(
                &mut mooncake_liveness::offboarding::NoResources,
                self.live.registry(),
                job,
            );
            assert!(done.is_ok_and(|d| d.erased));
        }
        n
    }
}

pub fn lost_reason<T: std::fmt::Debug, E: std::fmt::Debug>(o: &MountOutcome<T, E>) -> Option<LostReason> {
    match o {
        MountOutcome::Lost(_, r) => Some(*r),
        _ => None,
    }
}

pub fn incarnation_of(o: &MountOutcome<(), &'static str>) -> Option<Incarnation> {
    match o {
        MountOutcome::Mounted { record, .. } => Some(record.incarnation()),
        _ => None,
    }
}
