//! Names of the configuration keys, as they appear in a file (the command line adds `--`).
//!
//! Each constant is one row of the key table in the [module documentation](super); a test
//! there checks the table and these constants list the same keys.

/// Active TTL, seconds.
pub const CLIENT_ACTIVE_TTL_SEC: &str = "client_active_ttl_sec";
/// Legacy file name of the active TTL, seconds.
pub const CLIENT_LIVE_TTL_SEC: &str = "client_live_ttl_sec";
/// Legacy command-line name of the active TTL (`--client_ttl`), seconds.
pub const CLIENT_TTL: &str = "client_ttl";
/// Suspicion TTL, seconds.
pub const CLIENT_SUSPICION_TTL_SEC: &str = "client_suspicion_ttl_sec";
/// Monitor tick, ms.
pub const MONITOR_TICK_MS: &str = "monitor_tick_ms";
/// Stall bound, ms.
pub const STALL_BOUND_MS: &str = "stall_bound_ms";
/// Stall brake switch.
pub const STALL_BRAKE: &str = "stall_brake";
/// `"sync"` or `"async"`.
pub const OFFBOARDING_MODE: &str = "offboarding_mode";
/// Offboarding worker threads.
pub const OFFBOARDING_WORKERS: &str = "offboarding_workers";
/// Jobs per queue pop.
pub const OFFBOARDING_BATCH_SIZE: &str = "offboarding_batch_size";
/// First retry delay, ms.
pub const OFFBOARDING_RETRY_BACKOFF_MS: &str = "offboarding_retry_backoff_ms";
/// Retry delay cap, ms.
pub const OFFBOARDING_RETRY_MAX_BACKOFF_MS: &str = "offboarding_retry_max_backoff_ms";
/// Token-bucket refill, jobs per second.
pub const OFFBOARDING_RATE_PER_SEC: &str = "offboarding_rate_per_sec";
/// Token-bucket capacity, jobs.
pub const OFFBOARDING_BURST: &str = "offboarding_burst";
/// Mass-suspicion brake switch.
pub const MASS_SUSPICION_BRAKE: &str = "mass_suspicion_brake";
/// Minimum Suspected clients for the brake.
pub const MASS_SUSPICION_MIN_CLIENTS: &str = "mass_suspicion_min_clients";
/// Suspected fraction for the brake, in (0, 1].
pub const MASS_SUSPICION_FRACTION: &str = "mass_suspicion_fraction";
/// Shutdown drain bound, ms.
pub const SHUTDOWN_DRAIN_MS: &str = "shutdown_drain_ms";

/// Every key above, in the order of the key table. Resolution reads exactly these; a key of a
/// source that is none of them is one of Mooncake's own ([`super::MOONCAKE_MASTER_KEYS`]) or
/// unknown (warned about, with the nearest of these suggested for a near miss).
pub const ALL: [&str; 18] = [
    CLIENT_ACTIVE_TTL_SEC,
    CLIENT_LIVE_TTL_SEC,
    CLIENT_TTL,
    CLIENT_SUSPICION_TTL_SEC,
    MONITOR_TICK_MS,
    STALL_BOUND_MS,
    STALL_BRAKE,
    OFFBOARDING_MODE,
    OFFBOARDING_WORKERS,
    OFFBOARDING_BATCH_SIZE,
    OFFBOARDING_RETRY_BACKOFF_MS,
    OFFBOARDING_RETRY_MAX_BACKOFF_MS,
    OFFBOARDING_RATE_PER_SEC,
    OFFBOARDING_BURST,
    MASS_SUSPICION_BRAKE,
    MASS_SUSPICION_MIN_CLIENTS,
    MASS_SUSPICION_FRACTION,
    SHUTDOWN_DRAIN_MS,
];
