//! The master's liveness configuration: keys, defaults, resolution from a file and the command
//! line, validation, and reload without restart.
//!
//! # Keys
//!
//! Every key may appear in a configuration file (JSON or YAML, one flat object, next to the
//! master's other keys) and on the command line. Keys are matched exactly (case-sensitive).
//!
//! | key | unit | default | meaning |
//! |---|---|---|---|
//! | `client_active_ttl_sec` | seconds (integer or fractional) | `10` | Silence after which an Active client becomes Suspected. Legacy aliases: `client_live_ttl_sec` (file), `--client_ttl` (command line). |
//! | `client_live_ttl_sec` | seconds | — | Legacy name of `client_active_ttl_sec`, read when the canonical key is absent from the same source. |
//! | `client_ttl` | seconds | — | Legacy command-line name of `client_active_ttl_sec` (`--client_ttl`); in a file it is ignored with a warning (rule 2). |
//! | `client_suspicion_ttl_sec` | seconds (integer or fractional) | `20`, or the resolved active TTL (rule 3) | Time a client stays Suspected, counted from the tick that committed Suspected, before it goes Offline and is offboarded. |
//! | `monitor_tick_ms` | ms | `100` | Period of the liveness monitor; transitions commit on ticks. |
//! | `stall_bound_ms` | ms | active TTL / 2 (at least 1) | A monitor tick running later than this is a master stall. |
//! | `stall_brake` | bool | `true` | On a detected stall, extend every deadline by the stall (no client is blamed for time the master could not hear it). `false`: report the stall only. |
//! | `offboarding_mode` | `"sync"` / `"async"` | `"sync"` | `sync`: each job runs inline, at the tick that commits Offline. `async`: jobs are queued to a pool of `offboarding_workers` threads. |
//! | `offboarding_workers` | count, 1 to 256 | `1` | Worker threads in `async` mode. At most [`MAX_OFFBOARDING_WORKERS`] (256): jobs are rate-limited and run bounded batches, so more threads than cores only wait for each other. |
//! | `offboarding_batch_size` | count, ≥ 1 | `64` | Jobs a worker takes from the queue at a time. |
//! | `offboarding_retry_backoff_ms` | ms | `200` | Delay before the first retry of a failed job; doubles per attempt. |
//! | `offboarding_retry_max_backoff_ms` | ms, ≥ backoff | `5000` | Cap of the retry delay. |
//! | `offboarding_rate_per_sec` | jobs/s (may be fractional) | `100.0` | Refill rate of the offboarding token bucket. |
//! | `offboarding_burst` | jobs, ≥ 1 | `100` | Capacity of the token bucket (jobs that may start at once). |
//! | `mass_suspicion_brake` | bool | `true` | Pause Suspected → Offline commits while a mass suspicion is in progress. |
//! | `mass_suspicion_min_clients` | count, ≥ 1 | `10` | The brake needs at least this many Suspected clients... |
//! | `mass_suspicion_fraction` | fraction in (0, 1] | `0.5` | ...and more than this fraction of all registered clients Suspected. |
//! | `shutdown_drain_ms` | ms | `5000` | Bound on draining the offboarding queue at shutdown; jobs left are handed back, never dropped. |
//!
//! Value rules, for every key: a wrong type (a string, bool, object, array or null where a
//! number is expected, and so on) is an error; so is a number ≤ 0, NaN or infinite. Counts and
//! millisecond keys take whole numbers (`100` or `100.0`, not `100.5`). Seconds may be
//! fractional (`0.5` is 500 ms; integer seconds are converted exactly; fractions are rounded to
//! the nearest millisecond and the result must be at least 1 ms). Durations are capped at
//! [`MAX_DURATION_MS`] (10 years). `offboarding_mode` is `"sync"` or `"async"` (ASCII case is
//! ignored).
//!
//! # Resolution
//!
//! [`resolve`] combines an optional file ([`RawConfig`]) and the command line
//! ([`CliOverrides`]). The rules, as upstream's `ResolveClientLivenessConfig`:
//!
//! 1. Every explicitly given value of the six TTL inputs (file `client_active_ttl_sec`, file
//!    `client_live_ttl_sec`, `--client_active_ttl_sec`, `--client_ttl`, file and command-line
//!    `client_suspicion_ttl_sec`) must be > 0, even one that is overridden. Every other given
//!    value is validated too, overridden or not.
//! 2. Active TTL = command-line canonical, else command-line legacy, else file canonical, else
//!    file legacy, else 10 s. Within one source canonical beats legacy; when both are present
//!    with different values, a warning names both keys and values (one check for the file, one
//!    for the command line). A command-line value that overrides a different file value is
//!    warned about too. Legacy names: `client_live_ttl_sec` in a file (`client_ttl` there is
//!    ignored with a warning naming the file's key; upstream's file loader does not read it
//!    either); `--client_ttl` on the command line, where `client_live_ttl_sec` is also read
//!    (after `client_ttl`) if the binary passes it in [`CliOverrides::other`].
//! 3. Suspicion TTL = command line, else file, else — if any active or legacy value was given
//!    anywhere — the resolved active TTL, else 20 s.
//! 4. The command line beats the file for every other key too (with a warning when the values
//!    differ).
//! 5. Keys that are not ours are ignored, in two kinds. Mooncake's own master keys
//!    ([`MOONCAKE_MASTER_KEYS`]: the flags of the real `mooncake_master`, 0.3.13.post1 and
//!    0.3.14; `rpc_port`, `enable_ha`, ...) are what a `master.yaml` / `master.json` mostly
//!    holds: they are known, listed in [`Resolved::mooncake_keys`] and summarised in one line
//!    ([`Resolved::mooncake_summary`], logged with `tracing::info!`), never warned about. Any
//!    other key is unknown: `unknown key ignored: <key>`, followed by
//!    `(did you mean <ours>?)` when it is a near miss of one of our keys (a few edits away,
//!    ASCII case and `-`/`_` aside: `client_actve_ttl_sec`).
//! 6. `stall_bound_ms`, unless given, is half the *resolved* active TTL (at least 1 ms).
//!
//! Warnings are returned in [`Resolved::warnings`] and also logged with `tracing::warn!`.
//! Errors name the key and the offending value; a command-line key is shown as `--key`.
//!
//! # Reload
//!
//! [`ConfigHandle`] holds the current [`LivenessConfig`] in an `ArcCell` (arc-swap under std):
//! readers `load()` without locking, [`ConfigHandle::reload`] validates and swaps; reloads are
//! serialized (one writer at a time; the ground rules are in `handle.rs`). A reload never
//! rewrites existing deadlines: new TTLs apply to deadlines computed after the swap (the next
//! liveness signal, or the next Suspected commit for the suspicion window).
//!
//! # Files
//!
//! One concern per file, along cargo's `util/context/`:
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | this documentation, [`LivenessConfig`] and its defaults, the re-exports |
//! | `keys.rs` | the key names ([`keys`]); a test checks the table above lists exactly them |
//! | `mooncake.rs` | Mooncake's own master keys ([`MOONCAKE_MASTER_KEYS`]), and where the list comes from |
//! | `error.rs` | [`ConfigError`] |
//! | `source.rs` | reading one source: JSON/YAML text or files, the command line ([`RawConfig`], [`CliOverrides`]) |
//! | `resolve.rs` | precedence, legacy aliases, the inherited suspicion TTL, warnings and suggestions, the Mooncake-key summary ([`resolve`]) |
//! | `parse.rs` | one value of one key → its typed value, and how values are shown in messages |
//! | `validate.rs` | [`LivenessConfig::validate`] and the range checks it shares with `parse.rs` |
//! | `handle.rs` | [`ConfigHandle`]: hot reload, with its ground rules |
//!
//! The `config_parse` fuzz body is `fuzzing::config_parse` (feature `fuzzing`).
//!
//! Owns: the configuration values, their rules and the reloadable handle. Imports only `sync`; may
//! not touch liveness state: the monitor and the signal paths read the current configuration at
//! their next use.
#![forbid(unsafe_code)]

pub mod keys;

mod error;
mod handle;
mod mooncake;
mod parse;
mod resolve;
mod source;
mod validate;

pub use error::ConfigError;
pub use handle::{ConfigGuard, ConfigHandle};
pub use mooncake::MOONCAKE_MASTER_KEYS;
pub use resolve::{resolve, Resolved};
pub use source::{CliOverrides, RawConfig};

/// Largest duration any key accepts: 10 years, in milliseconds. Keeps `now + ttl` far from
/// overflow everywhere downstream.
pub const MAX_DURATION_MS: u64 = 10 * 365 * 24 * 3600 * 1000;

/// Most `offboarding_workers` any configuration accepts: 256 threads. Jobs are rate-limited
/// (`offboarding_rate_per_sec`, `offboarding_burst`) and each runs bounded batches, so workers
/// beyond the master's cores only wait for the queue and the metadata shards; the bound keeps
/// a typo (`1e6`) from trying to start a million threads.
pub const MAX_OFFBOARDING_WORKERS: usize = 256;

const DEFAULT_ACTIVE_TTL_MS: u64 = 10_000;
const DEFAULT_SUSPICION_TTL_MS: u64 = 20_000;

/// Fully resolved, validated configuration. All durations in milliseconds.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LivenessConfig {
    /// `client_active_ttl_sec`: silence before Active → Suspected.
    pub active_ttl_ms: u64,
    /// `client_suspicion_ttl_sec`: time in Suspected before Offline.
    pub suspicion_ttl_ms: u64,
    /// `monitor_tick_ms`: monitor period.
    pub monitor_tick_ms: u64,
    /// `stall_bound_ms`: lateness that counts as a master stall.
    pub stall_bound_ms: u64,
    /// `stall_brake`: extend deadlines by a detected stall.
    pub stall_brake: bool,
    /// `offboarding_mode`.
    pub offboarding_mode: OffboardingMode,
    /// `offboarding_workers` (1 to [`MAX_OFFBOARDING_WORKERS`]).
    pub offboarding_workers: usize,
    /// `offboarding_batch_size` (≥ 1).
    pub offboarding_batch_size: usize,
    /// `offboarding_retry_backoff_ms`: first retry delay.
    pub offboarding_retry_backoff_ms: u64,
    /// `offboarding_retry_max_backoff_ms`: retry delay cap (≥ backoff).
    pub offboarding_retry_max_backoff_ms: u64,
    /// `offboarding_rate_per_sec`: token-bucket refill.
    pub offboarding_rate_per_sec: f64,
    /// `offboarding_burst`: token-bucket capacity (≥ 1).
    pub offboarding_burst: u64,
    /// `mass_suspicion_brake`.
    pub mass_suspicion_brake: bool,
    /// `mass_suspicion_min_clients` (≥ 1).
    pub mass_suspicion_min_clients: usize,
    /// `mass_suspicion_fraction`, in (0, 1].
    pub mass_suspicion_fraction: f64,
    /// `shutdown_drain_ms`: bound on draining the offboarding queue at shutdown.
    pub shutdown_drain_ms: u64,
}

/// The two TTLs a liveness decision needs, ms (durations, on the liveness clock): what
/// [`ConfigHandle::ttls`] hands the signal paths and the monitor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ttls {
    /// Active → Suspected after this long without a signal (`client_active_ttl_sec`).
    pub active_ms: u64,
    /// Suspected → Offline after this long since the committed suspicion
    /// (`client_suspicion_ttl_sec`).
    pub suspicion_ms: u64,
}

/// Where offboarding jobs run (`offboarding_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OffboardingMode {
    /// Inline, at the tick that commits Offline (`"sync"`).
    Sync,
    /// On `offboarding_workers` worker threads (`"async"`).
    Async,
}

impl Default for LivenessConfig {
    fn default() -> Self {
        Self {
            active_ttl_ms: DEFAULT_ACTIVE_TTL_MS,
            suspicion_ttl_ms: DEFAULT_SUSPICION_TTL_MS,
            monitor_tick_ms: 100,
            stall_bound_ms: DEFAULT_ACTIVE_TTL_MS / 2,
            stall_brake: true,
            offboarding_mode: OffboardingMode::Sync,
            offboarding_workers: 1,
            offboarding_batch_size: 64,
            offboarding_retry_backoff_ms: 200,
            offboarding_retry_max_backoff_ms: 5000,
            offboarding_rate_per_sec: 100.0,
            offboarding_burst: 100,
            mass_suspicion_brake: true,
            mass_suspicion_min_clients: 10,
            mass_suspicion_fraction: 0.5,
            shutdown_drain_ms: 5000,
        }
    }
}

impl LivenessConfig {
    /// The two TTLs.
    pub fn ttls(&self) -> Ttls {
        Ttls {
            active_ms: self.active_ttl_ms,
            suspicion_ms: self.suspicion_ttl_ms,
        }
    }

    /// Resolves one source with no command line: `resolve(Some(raw), &CliOverrides::default())`.
    pub fn from_raw(raw: &RawConfig) -> Result<Resolved, ConfigError> {
        resolve(Some(raw), &CliOverrides::default())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::collections::BTreeSet;

    /// The key table of the module documentation lists exactly the constants of [`keys`](super::keys):
    /// a key added to one and not the other fails here.
    #[test]
    fn doc_key_table_lists_exactly_the_keys_constants() {
        let documented: BTreeSet<&str> = include_str!("mod.rs")
            .lines()
            .skip_while(|l| *l != "//! # Keys")
            .skip(1)
            .take_while(|l| !l.starts_with("//! # "))
            .filter_map(|l| l.strip_prefix("//! | `"))
            .filter_map(|row| row.split('`').next())
            .collect();
        let constants: BTreeSet<&str> = include_str!("keys.rs")
            .lines()
            .filter_map(|l| l.trim().strip_prefix("pub const "))
            .filter_map(|decl| decl.split('"').nth(1))
            .collect();
        assert_eq!(documented, constants, "doc table (left) vs keys::* (right)");
        assert_eq!(constants.len(), 18, "{constants:?}");
        let all: BTreeSet<&str> = super::keys::ALL.into_iter().collect();
        assert_eq!(all, constants, "keys::ALL lists every key constant");
    }
}
