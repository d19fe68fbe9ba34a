//! What every group of the hot-path bench shares: sizes, the note line, deterministic ids, a
//! liveness core on a manual clock, and upstream's per-record mutex (the baseline of both the
//! `eligibility` and the `monitor` groups).

use mooncake_liveness::liveness::Registry;
use mooncake_liveness::{ClientId, ClientLivenessRecord, Clock, Liveness, LivenessConfig, ManualClock, MountOutcome};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// Resources scanned by one `eligibility` iteration (the criterion throughput).
pub(crate) const RESOURCES: usize = 1024;
/// Distinct owners of those resources: each owner holds `RESOURCES / OWNERS` replicas.
pub(crate) const OWNERS: usize = 256;
/// Client ids in Mooncake main's `ok_client_` set.
pub(crate) const OK_CLIENTS: usize = 10_000;
/// Registered clients Ping cycles through.
pub(crate) const PING_CLIENTS: usize = 10_000;
/// Mooncake main's `client_ping_queue_` capacity (`128 * 1024`).
pub(crate) const PING_QUEUE_CAPACITY: usize = 131_072;
/// Clients armed for the idle-tick and full-scan benches.
pub(crate) const SCAN_CLIENTS: usize = 1_000_000;
/// Clients that all fall due in one tick.
pub(crate) const EXPIRE_CLIENTS: usize = 100_000;
/// Production tick (`monitor_tick_ms` default).
pub(crate) const TICK_MS: u64 = 100;
/// The manual clocks start here (any value far from 0 works).
pub(crate) const START_MS: u64 = 1_000_000;

pub(crate) fn note(key: &str, value: impl std::fmt::Display) {
    println!("hot_path-note: {key}={value}");
}

/// splitmix64: deterministic, well-spread pseudo-random numbers.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// UUID-like client ids: `n` distinct random `u128`s (seeded by `salt`).
pub(crate) fn client_ids(n: usize, salt: u64) -> Vec<u128> {
    let ids: Vec<u128> = (0..n as u64)
        .map(|i| {
            let k = i.wrapping_mul(2).wrapping_add(salt << 40);
            (u128::from(mix(k)) << 64) | u128::from(mix(k + 1))
        })
        .collect();
    debug_assert_eq!(ids.iter().collect::<HashSet<_>>().len(), n);
    ids
}

/// Production defaults with the given TTLs and tick (stall bound: half the active TTL).
pub(crate) fn config(active_ttl_ms: u64, suspicion_ttl_ms: u64, tick_ms: u64) -> LivenessConfig {
    let cfg = LivenessConfig {
        active_ttl_ms,
        suspicion_ttl_ms,
        monitor_tick_ms: tick_ms,
        stall_bound_ms: (active_ttl_ms / 2).max(1),
        ..LivenessConfig::default()
    };
    cfg.validate().expect("bench configuration is valid");
    cfg
}

/// A liveness core on a manual clock reading [`START_MS`].
pub(crate) fn liveness(cfg: LivenessConfig, shards: usize) -> (Arc<ManualClock>, Liveness) {
    let clock = Arc::new(ManualClock::new(START_MS));
    let dyn_clock: Arc<dyn Clock> = clock.clone();
    (
        clock,
        Liveness::with_registry(dyn_clock, cfg, Registry::with_shards(shards)),
    )
}

/// Mounts `id` (first incarnation, work that always succeeds) and marks it ready.
pub(crate) fn mount(live: &Liveness, id: u128) -> Arc<ClientLivenessRecord> {
    match live.mount(ClientId(id), None, |_| Ok::<(), ()>(())) {
        MountOutcome::Mounted { record, .. } => {
            record.set_ready(true);
            record
        }
        other => panic!("mount of {id:032x} failed: {other:?}"),
    }
}

/// Upstream's liveness state, read and written under the record's transition mutex.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum UpState {
    Active,
    Suspected,
    #[allow(dead_code)]
    Offline,
}

pub(crate) struct UpInner {
    pub(crate) last_ping_ms: u64,
    pub(crate) state: UpState,
}

/// Upstream's per-record `std::mutex` + state. Cache-line aligned like our record, so neither
/// design pays for false sharing between neighbouring records.
#[repr(align(64))]
pub(crate) struct UpRecord {
    pub(crate) m: Mutex<UpInner>,
}

impl UpRecord {
    pub(crate) fn new(now_ms: u64) -> Self {
        Self {
            m: Mutex::new(UpInner {
                last_ping_ms: now_ms,
                state: UpState::Active,
            }),
        }
    }
}
