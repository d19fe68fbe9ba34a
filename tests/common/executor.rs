//! Offline jobs for the asynchronous executor's tests: clients mounted on a liveness core and
//! left silent until each is committed Offline.

use mooncake_liveness::offboarding::ClientOffboardingJob;
use mooncake_liveness::{ClientId, Clock, Liveness, LivenessConfig, ManualClock, Monitor, MountOutcome};
use std::sync::Arc;

/// Offline 30 s after a silent mount; two workers in `async` mode.
pub fn config() -> LivenessConfig {
    LivenessConfig {
        active_ttl_ms: 10_000,
        suspicion_ttl_ms: 20_000,
        stall_bound_ms: 1 << 40, // the test thread's pace is not a master stall
        mass_suspicion_brake: false,
        offboarding_workers: 2,
        // The configuration switch: the master hands its jobs to the executor.
        offboarding_mode: mooncake_liveness::config::OffboardingMode::Async,
        ..LivenessConfig::default()
    }
}

/// When [`offline_jobs`] leaves the manual clock: every job committed, no retry due yet.
pub const OFFLINE_AT_MS: u64 = 30_000;

/// `n` clients (ids `0..n`) mounted at 0 and left silent until each is committed Offline: the
/// manual clock (left at [`OFFLINE_AT_MS`]), the core, and the `n` jobs in client order.
pub fn offline_jobs(n: u128) -> (Arc<ManualClock>, Arc<Liveness>, Vec<ClientOffboardingJob>) {
    let clock = Arc::new(ManualClock::new(0));
    let live = Arc::new(Liveness::new(clock.clone() as Arc<dyn Clock>, config()));
    let mut monitor = Monitor::new(&live);
    for id in 0..n {
        assert!(matches!(
            live.mount(ClientId(id), None, |_| Ok::<(), ()>(())),
            MountOutcome::Mounted { .. }
        ));
    }
    let mut jobs = Vec::new();
    for t in (100..=OFFLINE_AT_MS).step_by(100) {
        clock.set_ms(t);
        jobs.extend(monitor.tick(&live).jobs);
    }
    assert_eq!(jobs.len() as u128, n);
    jobs.sort_by_key(|j| j.client().0);
    (clock, live, jobs)
}
