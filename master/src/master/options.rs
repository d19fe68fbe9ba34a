//! How a master is built beyond its liveness configuration ([`MasterOptions`]) and the defaults
//! it shares with replay and the simulator.
//!
//! Owns: option types and constants only, read once by [`Master::new`](super::Master::new).
//! May not touch: the master's state.

use super::{AllocationStrategy, OffboardingDriver};

/// The tenant every trace `put` uses.
pub const DEFAULT_TENANT: &str = "default";

/// Default number of metadata shards (Mooncake's `kNumShards`).
pub const DEFAULT_METADATA_SHARDS: usize = 1024;
/// Options of the reference master beyond the liveness configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MasterOptions {
    /// How allocation chooses segments.
    pub strategy: AllocationStrategy,
    /// Seed of the master's RNG (random strategy).
    pub seed: u64,
    /// Turn the seam off: owners are treated as Active everywhere (benchmarks and the
    /// "liveness changes nothing when everyone is Active" test only).
    pub seam_disabled: bool,
    /// Shards of the liveness registry and of the client name table (rounded up to a power of
    /// two, at least 1). The default suits a fleet of thousands to a million; a master of a
    /// handful of clients (the differential fuzz target builds several per input) can take a few.
    pub registry_shards: usize,
    /// Metadata shards (rounded up to a power of two, at least 1). One shard evicts in exact
    /// global LRU order (replay uses one, as its examples pin that order).
    pub metadata_shards: usize,
    /// Who runs offboarding jobs (default: what `offboarding_mode` says).
    pub offboarding: OffboardingDriver,
    /// Objects the master expects to hold: a capacity hint, each metadata shard's table is
    /// pre-sized to its share so that a bulk load (a promotion, a warm-up) does not rehash every
    /// table a dozen times on the way. 0 (the default) grows the tables on demand.
    pub expected_objects: usize,
    /// Events the master's log keeps until [`take_events`](super::Master::take_events)
    /// drains it; beyond that the oldest are dropped and counted (`Stats::events_dropped`).
    pub event_log_capacity: usize,
}

impl Default for MasterOptions {
    fn default() -> Self {
        Self {
            strategy: AllocationStrategy::FreeRatioFirst,
            seed: 0,
            seam_disabled: false,
            registry_shards: crate::liveness::DEFAULT_SHARDS,
            metadata_shards: DEFAULT_METADATA_SHARDS,
            offboarding: OffboardingDriver::FromConfig,
            expected_objects: 0,
            event_log_capacity: super::DEFAULT_EVENT_LOG_CAPACITY,
        }
    }
}
