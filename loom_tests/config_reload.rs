//! Race: two `ConfigHandle::reload`s with different TTLs at the same time.
//!
//! `ConfigHandle` keeps the published configuration in an `ArcCell` and a cache of its two TTLs
//! in two atomics (the signal path reads those). A reload writes all three. Without the
//! handle's reload lock the stores of two reloads can interleave (the atomics of one, the cell
//! of the other), leaving `ttls()` disagreeing with `load()` until some later reload.
//!
//! Checked: after both reloads return, `ttls()` equals the TTLs of `load()`, and the
//! winner is one of the two configurations. Both winners must be reachable (the race is real).
//! Remove the lock in `core/src/config/handle.rs` and this model fails.
#![cfg(loom)]

mod common;

use common::model_covering;
use loom::sync::Arc;
use loom::thread;
use mooncake_liveness::{ConfigHandle, LivenessConfig};

const FIRST_WINS: &str = "the first reload is published last";
const SECOND_WINS: &str = "the second reload is published last";

fn config_with_ttls(active_ttl_ms: u64, suspicion_ttl_ms: u64) -> LivenessConfig {
    LivenessConfig {
        active_ttl_ms,
        suspicion_ttl_ms,
        stall_bound_ms: active_ttl_ms / 2,
        ..LivenessConfig::default()
    }
}

#[test]
fn racing_reloads_keep_the_ttl_cache_equal_to_the_config() {
    model_covering(
        "racing_reloads_keep_the_ttl_cache_equal_to_the_config",
        &[FIRST_WINS, SECOND_WINS],
        |seen| {
            let handle = Arc::new(ConfigHandle::new(LivenessConfig::default()));
            let other = handle.clone();
            let t = thread::spawn(move || other.reload(config_with_ttls(1_000, 2_000)).unwrap());
            handle.reload(config_with_ttls(3_000, 4_000)).unwrap();
            t.join().unwrap();

            let published = handle.load();
            let ttls = (published.active_ttl_ms, published.suspicion_ttl_ms);
            assert_eq!(
                (handle.ttls().active_ms, handle.ttls().suspicion_ms),
                ttls,
                "the TTL cache disagrees with the published config"
            );
            match ttls {
                (1_000, 2_000) => seen.saw(FIRST_WINS),
                (3_000, 4_000) => seen.saw(SECOND_WINS),
                other => panic!("published TTLs {other:?} are neither reload's"),
            }
        },
    );
}
