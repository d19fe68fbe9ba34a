//! What the full-stack loom models share, whether they race the bare core (`common`) or the
//! reference master (`master_common`): the TTLs, the configuration and the outcome recorder.

use mooncake_liveness::LivenessConfig;
use std::collections::BTreeSet;

/// Active TTL of every model, liveness-clock ms.
pub const ACTIVE_TTL_MS: u64 = 10;
/// Suspicion TTL of every model, liveness-clock ms.
pub const SUSPICION_TTL_MS: u64 = 20;

/// The configuration of every full-stack model: 1 ms ticks (so a tick is a millisecond), tiny
/// TTLs (two ticks walk a silent client to Offline), no stall brake and no mass-suspicion brake
/// unless a model turns them on.
pub fn config() -> LivenessConfig {
    LivenessConfig {
        active_ttl_ms: ACTIVE_TTL_MS,
        suspicion_ttl_ms: SUSPICION_TTL_MS,
        monitor_tick_ms: 1,
        stall_brake: false,
        stall_bound_ms: 1_000,
        mass_suspicion_brake: false,
        ..LivenessConfig::default()
    }
}

/// The outcomes a model's iterations reached (plain std types: it outlives the iterations).
#[derive(Clone, Debug, Default)]
pub struct Seen(std::sync::Arc<std::sync::Mutex<BTreeSet<String>>>);

impl Seen {
    /// Records this iteration's outcome.
    pub fn saw(&self, outcome: impl Into<String>) {
        self.0.lock().unwrap().insert(outcome.into());
    }

    /// Every outcome recorded so far.
    pub fn outcomes(&self) -> BTreeSet<String> {
        self.0.lock().unwrap().clone()
    }
}
