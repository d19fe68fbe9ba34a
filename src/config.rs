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
//! | `client_suspicion_ttl_sec` | seconds (integer or fractional) | `20`, or the resolved active TTL (rule 3) | Time a client stays Suspected, counted from the tick that committed Suspected, before it goes Offline and is offboarded. |
//! | `monitor_tick_ms` | ms | `100` | Period of the liveness monitor; transitions commit on ticks. |
//! | `stall_bound_ms` | ms | active TTL / 2 (at least 1) | A monitor tick running later than this is a master stall. |
//! | `stall_brake` | bool | `true` | On a detected stall, extend every deadline by the stall (no client is blamed for time the master could not hear it). `false`: report the stall only. |
//! | `offboarding_mode` | `"sync"` / `"async"` | `"sync"` | `sync`: each job runs inline, at the tick that commits Offline. `async`: jobs are queued to a pool of `offboarding_workers` threads. |
//! | `offboarding_workers` | count, ≥ 1 | `1` | Worker threads in `async` mode. |
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
//!    warned about too. Legacy names: `client_live_ttl_sec` in a file (`client_ttl` there is an
//!    unknown key); `--client_ttl` on the command line, where `client_live_ttl_sec` is also
//!    read (after `client_ttl`) if the binary passes it in [`CliOverrides::other`].
//! 3. Suspicion TTL = command line, else file, else — if any active or legacy value was given
//!    anywhere — the resolved active TTL, else 20 s.
//! 4. The command line beats the file for every other key too (with a warning when the values
//!    differ).
//! 5. Unknown keys are ignored, each with the warning `unknown key ignored: <key>`: Mooncake's
//!    `master.yaml` / `master.json` carry many unrelated keys (`rpc_port`, `enable_ha`, ...).
//! 6. `stall_bound_ms`, unless given, is half the *resolved* active TTL (at least 1 ms).
//!
//! Warnings are returned in [`Resolved::warnings`] and also logged with `tracing::warn!`.
//! Errors name the key and the offending value; a command-line key is shown as `--key`.
//!
//! # Reload
//!
//! [`ConfigHandle`] holds the current [`LivenessConfig`] in an `ArcCell` (arc-swap under std):
//! readers `load()` without locking, [`ConfigHandle::reload`] validates and swaps. A reload
//! never rewrites existing deadlines: new TTLs apply to deadlines computed after the swap (the
//! next liveness signal, or the next Suspected commit for the suspicion window).
#![forbid(unsafe_code)]

use crate::sync::{ArcCell, ArcGuard, AtomicU64, CellArc, Ordering};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Deref;
use std::path::{Path, PathBuf};

/// Names of the configuration keys, as they appear in a file (the command line adds `--`).
pub mod keys {
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
}

/// Largest duration any key accepts: 10 years, in milliseconds. Keeps `now + ttl` far from
/// overflow everywhere downstream.
pub const MAX_DURATION_MS: u64 = 10 * 365 * 24 * 3600 * 1000;

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
    /// `offboarding_workers` (≥ 1).
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
    /// Resolves one source with no command line: `resolve(Some(raw), &CliOverrides::default())`.
    pub fn from_raw(raw: &RawConfig) -> Result<Resolved, ConfigError> {
        resolve(Some(raw), &CliOverrides::default())
    }

    /// Checks every invariant of a resolved configuration. Errors name the field
    /// (e.g. `active_ttl_ms`) and its value. [`resolve`] calls this last; call it yourself on a
    /// configuration built by hand ([`ConfigHandle::reload`] does).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let durations = [
            ("active_ttl_ms", self.active_ttl_ms),
            ("suspicion_ttl_ms", self.suspicion_ttl_ms),
            ("monitor_tick_ms", self.monitor_tick_ms),
            ("stall_bound_ms", self.stall_bound_ms),
            ("offboarding_retry_backoff_ms", self.offboarding_retry_backoff_ms),
            (
                "offboarding_retry_max_backoff_ms",
                self.offboarding_retry_max_backoff_ms,
            ),
            ("shutdown_drain_ms", self.shutdown_drain_ms),
        ];
        for (key, ms) in durations {
            check_whole(key, ms as u128, Some(MAX_DURATION_MS), "ms", &ms.to_string())?;
        }
        let counts = [
            ("offboarding_workers", self.offboarding_workers as u128),
            ("offboarding_batch_size", self.offboarding_batch_size as u128),
            ("offboarding_burst", u128::from(self.offboarding_burst)),
            ("mass_suspicion_min_clients", self.mass_suspicion_min_clients as u128),
        ];
        for (key, n) in counts {
            check_whole(key, n, None, "", &n.to_string())?;
        }
        let rate = self.offboarding_rate_per_sec;
        check_rate("offboarding_rate_per_sec", rate, &rate.to_string())?;
        let fraction = self.mass_suspicion_fraction;
        check_fraction("mass_suspicion_fraction", fraction, &fraction.to_string())?;
        if self.offboarding_retry_max_backoff_ms < self.offboarding_retry_backoff_ms {
            return Err(ConfigError::BackoffOrder {
                backoff_ms: self.offboarding_retry_backoff_ms,
                max_backoff_ms: self.offboarding_retry_max_backoff_ms,
            });
        }
        Ok(())
    }
}

/// Why a configuration was rejected. Every message names the key and the value it got.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A value that must be positive is zero or negative (e.g. `client_active_ttl_sec: -5`,
    /// `offboarding_workers: 0`). Give a value > 0; for a TTL that would be overridden anyway,
    /// remove the key instead.
    #[error("{key} must be > 0, got {value}")]
    NonPositive {
        /// The key as given (`--key` for the command line).
        key: String,
        /// The value as given.
        value: String,
    },
    /// A number is NaN or infinite (YAML `.nan`, `.inf`, or an out-of-range literal such as
    /// `1e400`). Give a finite number.
    #[error("{key} must be a finite number, got {value}")]
    NotFinite {
        /// The key as given.
        key: String,
        /// The value as given.
        value: String,
    },
    /// The value has the wrong type (a string, bool, object, array or null where a number is
    /// expected; a number where a bool is expected, ...). Write the value unquoted with the
    /// type named in the message.
    #[error("{key} must be {expected}, got {value}")]
    WrongType {
        /// The key as given.
        key: String,
        /// The type the key takes.
        expected: &'static str,
        /// The value as given.
        value: String,
    },
    /// The value has the right type but is out of range: a fraction outside (0, 1], a
    /// fractional number of milliseconds, a TTL below 1 ms or above [`MAX_DURATION_MS`], an
    /// unknown `offboarding_mode`. The message says which range applies.
    #[error("{key} {requirement}, got {value}")]
    InvalidValue {
        /// The key as given.
        key: String,
        /// What the key requires, e.g. `must be in (0, 1]`.
        requirement: String,
        /// The value as given.
        value: String,
    },
    /// `offboarding_retry_max_backoff_ms` is smaller than `offboarding_retry_backoff_ms` after
    /// resolution. Raise the maximum or lower the initial backoff.
    #[error(
        "offboarding_retry_max_backoff_ms must be >= offboarding_retry_backoff_ms, \
         got offboarding_retry_max_backoff_ms {max_backoff_ms} < offboarding_retry_backoff_ms {backoff_ms}"
    )]
    BackoffOrder {
        /// Resolved `offboarding_retry_backoff_ms`.
        backoff_ms: u64,
        /// Resolved `offboarding_retry_max_backoff_ms`.
        max_backoff_ms: u64,
    },
    /// The configuration file could not be read (missing, unreadable, not UTF-8). Check the
    /// path and permissions.
    #[error("cannot read configuration file {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The text is not valid JSON/YAML, or its top level is not an object of keys. Fix the
    /// syntax at the position the message gives.
    #[error("cannot parse {format} configuration{}: {message}", show_path(.path.as_ref()))]
    Parse {
        /// The file, when parsing one.
        path: Option<PathBuf>,
        /// `"JSON"`, `"YAML"`, or `"JSON or YAML"`.
        format: &'static str,
        /// What the parser said.
        message: String,
    },
}

fn show_path(path: Option<&PathBuf>) -> String {
    match path {
        Some(p) => format!(" {}", p.display()),
        None => String::new(),
    }
}

/// One value as read from a source. JSON cannot hold NaN or infinities, YAML can; those are kept
/// aside so that the error says `got inf` rather than `got null`.
#[derive(Clone, Debug, PartialEq)]
enum RawValue {
    Json(Value),
    NonFinite(f64),
}

/// Raw values as they appear in one source (a file, a trace's `config` object, or the command
/// line), before resolution. Nothing is validated until [`resolve`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawConfig {
    map: BTreeMap<String, RawValue>,
}

impl RawConfig {
    /// An empty source.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses a JSON object (`{"client_active_ttl_sec": 30, ...}`).
    pub fn from_json_str(s: &str) -> Result<Self, ConfigError> {
        let v: Value = serde_json::from_str(s).map_err(|e| parse_error("JSON", e.to_string()))?;
        Self::from_json_value(&v)
    }

    /// Parses a YAML mapping (`client_active_ttl_sec: 30`). An empty document is an empty source.
    pub fn from_yaml_str(s: &str) -> Result<Self, ConfigError> {
        let v: serde_yaml::Value = serde_yaml::from_str(s).map_err(|e| parse_error("YAML", e.to_string()))?;
        let map = yaml_top_level(v).map_err(|m| parse_error("YAML", m))?;
        Ok(Self { map })
    }

    /// Takes a JSON object, such as the `config` object of a replay trace's first line.
    pub fn from_json_value(v: &Value) -> Result<Self, ConfigError> {
        match v {
            Value::Object(m) => Ok(Self {
                map: m.iter().map(|(k, v)| (k.clone(), RawValue::Json(v.clone()))).collect(),
            }),
            other => Err(parse_error(
                "JSON",
                format!("expected an object of configuration keys, got {}", json_kind(other)),
            )),
        }
    }

    /// Reads a file: `.json` as JSON, `.yaml` / `.yml` as YAML, anything else as JSON, then YAML.
    pub fn from_path(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        let parsed = match ext.as_deref() {
            Some("json") => Self::from_json_str(&text),
            Some("yaml" | "yml") => Self::from_yaml_str(&text),
            _ => Self::from_json_str(&text).or_else(|json_err| {
                Self::from_yaml_str(&text).map_err(|yaml_err| {
                    parse_error("JSON or YAML", format!("not JSON ({json_err}); not YAML ({yaml_err})"))
                })
            }),
        };
        parsed.map_err(|e| match e {
            ConfigError::Parse { format, message, .. } => ConfigError::Parse {
                path: Some(path.to_path_buf()),
                format,
                message,
            },
            other => other,
        })
    }

    /// Sets `key` (replacing any value): how the command-line layer fills
    /// [`CliOverrides::other`].
    pub fn set(&mut self, key: &str, value: Value) {
        self.map.insert(key.to_owned(), RawValue::Json(value));
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    /// The keys present, in sorted order.
    pub fn keys(&self) -> impl Iterator<Item = &str> + '_ {
        self.map.keys().map(String::as_str)
    }

    /// Number of keys present.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no key is present.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Sets a number given as `f64` (the command-line TTL flags): integral values are stored
    /// as integers, NaN and infinities kept so validation can name them.
    fn set_number(&mut self, key: &str, v: f64) {
        const EXACT_INT: f64 = 9_007_199_254_740_992.0; // 2^53
        let raw = if !v.is_finite() {
            RawValue::NonFinite(v)
        } else if v.fract() == 0.0 && v.abs() < EXACT_INT {
            RawValue::Json(Value::from(v as i64))
        } else {
            RawValue::Json(Value::from(v))
        };
        self.map.insert(key.to_owned(), raw);
    }
}

fn parse_error(format: &'static str, message: String) -> ConfigError {
    ConfigError::Parse {
        path: None,
        format,
        message,
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The top level of a YAML document: a mapping of keys, or nothing at all.
fn yaml_top_level(v: serde_yaml::Value) -> Result<BTreeMap<String, RawValue>, String> {
    use serde_yaml::Value as Y;
    match v {
        Y::Null => Ok(BTreeMap::new()),
        Y::Tagged(t) => yaml_top_level(t.value),
        Y::Mapping(m) => {
            let mut map = BTreeMap::new();
            for (k, v) in m {
                let raw = match v {
                    Y::Number(n) if n.is_nan() || n.is_infinite() => {
                        RawValue::NonFinite(n.as_f64().unwrap_or(f64::NAN))
                    }
                    other => RawValue::Json(yaml_to_json(other)),
                };
                map.insert(yaml_key(k)?, raw);
            }
            Ok(map)
        }
        Y::Bool(_) | Y::Number(_) | Y::String(_) | Y::Sequence(_) => {
            Err("expected a mapping of configuration keys".to_owned())
        }
    }
}

fn yaml_key(k: serde_yaml::Value) -> Result<String, String> {
    use serde_yaml::Value as Y;
    match k {
        Y::String(s) => Ok(s),
        Y::Number(n) => Ok(n.to_string()),
        Y::Bool(b) => Ok(b.to_string()),
        Y::Null => Ok("null".to_owned()),
        Y::Tagged(t) => yaml_key(t.value),
        Y::Sequence(_) | Y::Mapping(_) => Err("configuration keys must be scalars".to_owned()),
    }
}

/// Nested YAML values matter only as "the wrong type"; a NaN nested inside becomes null.
fn yaml_to_json(v: serde_yaml::Value) -> Value {
    use serde_yaml::Value as Y;
    match v {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(u) = n.as_u64() {
                Value::from(u)
            } else if let Some(i) = n.as_i64() {
                Value::from(i)
            } else {
                n.as_f64().map_or(Value::Null, Value::from)
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(s) => Value::Array(s.into_iter().map(yaml_to_json).collect()),
        Y::Mapping(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| (yaml_key(k).unwrap_or_else(|_| "?".to_owned()), yaml_to_json(v)))
                .collect(),
        ),
        Y::Tagged(t) => yaml_to_json(t.value),
    }
}

/// Command-line overrides. The binary maps `--client_ttl`, `--client_active_ttl_sec` and
/// `--client_suspicion_ttl_sec` onto the typed fields and every other flag (`--monitor_tick_ms`,
/// ...) onto [`other`](Self::other) under its key name. A typed field replaces the same key in
/// `other`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CliOverrides {
    /// `--client_ttl`: legacy active TTL, seconds.
    pub client_ttl: Option<f64>,
    /// `--client_active_ttl_sec`, seconds.
    pub client_active_ttl_sec: Option<f64>,
    /// `--client_suspicion_ttl_sec`, seconds.
    pub client_suspicion_ttl_sec: Option<f64>,
    /// Every other key given on the command line.
    pub other: RawConfig,
}

impl CliOverrides {
    fn to_raw(&self) -> RawConfig {
        let mut raw = self.other.clone();
        let typed = [
            (keys::CLIENT_TTL, self.client_ttl),
            (keys::CLIENT_ACTIVE_TTL_SEC, self.client_active_ttl_sec),
            (keys::CLIENT_SUSPICION_TTL_SEC, self.client_suspicion_ttl_sec),
        ];
        for (key, v) in typed {
            if let Some(v) = v {
                raw.set_number(key, v);
            }
        }
        raw
    }
}

/// A resolved configuration and the warnings resolution produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    /// The validated configuration.
    pub config: LivenessConfig,
    /// Human-readable warnings (conflicting aliases, overrides, unknown keys), in the order
    /// they were found; each was also logged with `tracing::warn!`.
    pub warnings: Vec<String>,
}

/// Resolves the file (if any) and the command line into a validated [`LivenessConfig`], by the
/// rules in the [module documentation](self).
pub fn resolve(file: Option<&RawConfig>, cli: &CliOverrides) -> Result<Resolved, ConfigError> {
    let mut warnings = Warnings::default();
    let file = match file {
        Some(raw) => parse_source(raw, Source::File, &mut warnings)?,
        None => Partial::default(),
    };
    let cli = parse_source(&cli.to_raw(), Source::Cli, &mut warnings)?;

    let file_active = choose_within(file.active, Source::File, &mut warnings);
    let cli_active = choose_within(cli.active, Source::Cli, &mut warnings);
    let any_active = file_active.is_some() || cli_active.is_some();
    let active_ttl_ms = merge(cli_active, file_active, &mut warnings).unwrap_or(DEFAULT_ACTIVE_TTL_MS);
    let inherited = if any_active {
        active_ttl_ms
    } else {
        DEFAULT_SUSPICION_TTL_MS
    };
    let suspicion_ttl_ms = merge(cli.suspicion, file.suspicion, &mut warnings).unwrap_or(inherited);

    let d = LivenessConfig::default();
    let w = &mut warnings;
    let config = LivenessConfig {
        active_ttl_ms,
        suspicion_ttl_ms,
        monitor_tick_ms: merge(cli.monitor_tick_ms, file.monitor_tick_ms, w).unwrap_or(d.monitor_tick_ms),
        stall_bound_ms: merge(cli.stall_bound_ms, file.stall_bound_ms, w).unwrap_or((active_ttl_ms / 2).max(1)),
        stall_brake: merge(cli.stall_brake, file.stall_brake, w).unwrap_or(d.stall_brake),
        offboarding_mode: merge(cli.offboarding_mode, file.offboarding_mode, w).unwrap_or(d.offboarding_mode),
        offboarding_workers: merge(cli.offboarding_workers, file.offboarding_workers, w)
            .unwrap_or(d.offboarding_workers),
        offboarding_batch_size: merge(cli.offboarding_batch_size, file.offboarding_batch_size, w)
            .unwrap_or(d.offboarding_batch_size),
        offboarding_retry_backoff_ms: merge(cli.retry_backoff_ms, file.retry_backoff_ms, w)
            .unwrap_or(d.offboarding_retry_backoff_ms),
        offboarding_retry_max_backoff_ms: merge(cli.retry_max_backoff_ms, file.retry_max_backoff_ms, w)
            .unwrap_or(d.offboarding_retry_max_backoff_ms),
        offboarding_rate_per_sec: merge(cli.rate_per_sec, file.rate_per_sec, w).unwrap_or(d.offboarding_rate_per_sec),
        offboarding_burst: merge(cli.burst, file.burst, w).unwrap_or(d.offboarding_burst),
        mass_suspicion_brake: merge(cli.mass_brake, file.mass_brake, w).unwrap_or(d.mass_suspicion_brake),
        mass_suspicion_min_clients: merge(cli.mass_min_clients, file.mass_min_clients, w)
            .unwrap_or(d.mass_suspicion_min_clients),
        mass_suspicion_fraction: merge(cli.mass_fraction, file.mass_fraction, w).unwrap_or(d.mass_suspicion_fraction),
        shutdown_drain_ms: merge(cli.shutdown_drain_ms, file.shutdown_drain_ms, w).unwrap_or(d.shutdown_drain_ms),
    };
    config.validate()?;
    Ok(Resolved {
        config,
        warnings: warnings.0,
    })
}

/// Collects warnings and logs each one as it is found.
#[derive(Default)]
struct Warnings(Vec<String>);

impl Warnings {
    fn push(&mut self, message: String) {
        tracing::warn!("{}", message);
        self.0.push(message);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    File,
    Cli,
}

impl Source {
    /// How a key of this source is shown in messages.
    fn show_key(self, key: &str) -> String {
        let key = truncate(key);
        match self {
            Source::File => key,
            Source::Cli => format!("--{key}"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Source::File => "config file",
            Source::Cli => "command line",
        }
    }

    /// Precedence of an active-TTL key within this source (lower wins); `None`: not an
    /// active-TTL key here.
    fn active_rank(self, key: &str) -> Option<u8> {
        match (self, key) {
            (_, keys::CLIENT_ACTIVE_TTL_SEC) => Some(0),
            (Source::Cli, keys::CLIENT_TTL) => Some(1),
            (_, keys::CLIENT_LIVE_TTL_SEC) => Some(2),
            _ => None,
        }
    }
}

/// One explicitly given value: the key as shown, the parsed value, the value as written.
struct Given<T> {
    key: String,
    value: T,
    shown: String,
}

/// The typed, validated values of one source.
#[derive(Default)]
struct Partial {
    /// Active-TTL values (canonical and legacy) in precedence order.
    active: Vec<Given<u64>>,
    suspicion: Option<Given<u64>>,
    monitor_tick_ms: Option<Given<u64>>,
    stall_bound_ms: Option<Given<u64>>,
    stall_brake: Option<Given<bool>>,
    offboarding_mode: Option<Given<OffboardingMode>>,
    offboarding_workers: Option<Given<usize>>,
    offboarding_batch_size: Option<Given<usize>>,
    retry_backoff_ms: Option<Given<u64>>,
    retry_max_backoff_ms: Option<Given<u64>>,
    rate_per_sec: Option<Given<f64>>,
    burst: Option<Given<u64>>,
    mass_brake: Option<Given<bool>>,
    mass_min_clients: Option<Given<usize>>,
    mass_fraction: Option<Given<f64>>,
    shutdown_drain_ms: Option<Given<u64>>,
}

/// Parses and validates every known key of one source; warns about the unknown ones.
fn parse_source(raw: &RawConfig, source: Source, warnings: &mut Warnings) -> Result<Partial, ConfigError> {
    let mut p = Partial::default();
    let mut ranked = Vec::new();
    for (key, value) in &raw.map {
        let k = source.show_key(key);
        if let Some(rank) = source.active_rank(key) {
            ranked.push((rank, given(k, value, parse_secs)?));
            continue;
        }
        match key.as_str() {
            keys::CLIENT_SUSPICION_TTL_SEC => p.suspicion = Some(given(k, value, parse_secs)?),
            keys::MONITOR_TICK_MS => p.monitor_tick_ms = Some(given(k, value, parse_ms)?),
            keys::STALL_BOUND_MS => p.stall_bound_ms = Some(given(k, value, parse_ms)?),
            keys::STALL_BRAKE => p.stall_brake = Some(given(k, value, parse_bool)?),
            keys::OFFBOARDING_MODE => p.offboarding_mode = Some(given(k, value, parse_mode)?),
            keys::OFFBOARDING_WORKERS => p.offboarding_workers = Some(given(k, value, parse_count)?),
            keys::OFFBOARDING_BATCH_SIZE => p.offboarding_batch_size = Some(given(k, value, parse_count)?),
            keys::OFFBOARDING_RETRY_BACKOFF_MS => p.retry_backoff_ms = Some(given(k, value, parse_ms)?),
            keys::OFFBOARDING_RETRY_MAX_BACKOFF_MS => p.retry_max_backoff_ms = Some(given(k, value, parse_ms)?),
            keys::OFFBOARDING_RATE_PER_SEC => p.rate_per_sec = Some(given(k, value, parse_rate)?),
            keys::OFFBOARDING_BURST => p.burst = Some(given(k, value, parse_count_u64)?),
            keys::MASS_SUSPICION_BRAKE => p.mass_brake = Some(given(k, value, parse_bool)?),
            keys::MASS_SUSPICION_MIN_CLIENTS => p.mass_min_clients = Some(given(k, value, parse_count)?),
            keys::MASS_SUSPICION_FRACTION => p.mass_fraction = Some(given(k, value, parse_fraction)?),
            keys::SHUTDOWN_DRAIN_MS => p.shutdown_drain_ms = Some(given(k, value, parse_ms)?),
            _ => warnings.push(format!("unknown key ignored: {k}")),
        }
    }
    ranked.sort_by_key(|(rank, _)| *rank);
    p.active = ranked.into_iter().map(|(_, g)| g).collect();
    Ok(p)
}

fn given<T>(
    key: String,
    value: &RawValue,
    parse: fn(&str, &RawValue, &str) -> Result<T, ConfigError>,
) -> Result<Given<T>, ConfigError> {
    let shown = show_value(value);
    let value = parse(&key, value, &shown)?;
    Ok(Given { key, value, shown })
}

/// Within one source the first (canonical) value wins; a different shadowed value is warned
/// about.
fn choose_within(candidates: Vec<Given<u64>>, source: Source, warnings: &mut Warnings) -> Option<Given<u64>> {
    let mut it = candidates.into_iter();
    let first = it.next()?;
    for other in it {
        if other.value != first.value {
            warnings.push(format!(
                "{}={} and {}={} are both set in the {} with different values; using {}={}",
                first.key,
                first.shown,
                other.key,
                other.shown,
                source.name(),
                first.key,
                first.shown
            ));
        }
    }
    Some(first)
}

/// The command line beats the file; overriding a different value is warned about.
fn merge<T: PartialEq>(cli: Option<Given<T>>, file: Option<Given<T>>, warnings: &mut Warnings) -> Option<T> {
    match (cli, file) {
        (Some(c), Some(f)) => {
            if c.value != f.value {
                warnings.push(format!(
                    "command line {}={} overrides config file {}={}",
                    c.key, c.shown, f.key, f.shown
                ));
            }
            Some(c.value)
        }
        (Some(c), None) => Some(c.value),
        (None, f) => f.map(|f| f.value),
    }
}

/// Longest value or key rendering kept in a message, in characters.
const SHOWN_MAX_CHARS: usize = 64;

fn truncate(s: &str) -> String {
    if s.chars().count() <= SHOWN_MAX_CHARS {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(SHOWN_MAX_CHARS).collect();
        t.push('…');
        t
    }
}

/// The value as the user wrote it (JSON rendering; `inf`, `-inf`, `NaN` for YAML specials).
fn show_value(v: &RawValue) -> String {
    match v {
        RawValue::Json(j) => truncate(&j.to_string()),
        RawValue::NonFinite(f) => f.to_string(),
    }
}

/// A number as read: an exact integer or a float.
enum Num {
    Int(i128),
    Float(f64),
}

fn number(v: &RawValue) -> Option<Num> {
    match v {
        RawValue::NonFinite(f) => Some(Num::Float(*f)),
        RawValue::Json(Value::Number(n)) => {
            if let Some(u) = n.as_u64() {
                Some(Num::Int(u.into()))
            } else if let Some(i) = n.as_i64() {
                Some(Num::Int(i.into()))
            } else {
                n.as_f64().map(Num::Float)
            }
        }
        RawValue::Json(_) => None,
    }
}

fn wrong_type(key: &str, expected: &'static str, shown: &str) -> ConfigError {
    ConfigError::WrongType {
        key: key.to_owned(),
        expected,
        value: shown.to_owned(),
    }
}

fn non_positive(key: &str, shown: &str) -> ConfigError {
    ConfigError::NonPositive {
        key: key.to_owned(),
        value: shown.to_owned(),
    }
}

fn not_finite(key: &str, shown: &str) -> ConfigError {
    ConfigError::NotFinite {
        key: key.to_owned(),
        value: shown.to_owned(),
    }
}

fn invalid(key: &str, requirement: String, shown: &str) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.to_owned(),
        requirement,
        value: shown.to_owned(),
    }
}

/// A TTL in seconds (integer or fractional) → milliseconds, in [1, MAX_DURATION_MS].
fn parse_secs(key: &str, v: &RawValue, shown: &str) -> Result<u64, ConfigError> {
    let too_large = || {
        invalid(
            key,
            format!("must be at most {} s (10 years)", MAX_DURATION_MS / 1000),
            shown,
        )
    };
    let ms = match number(v).ok_or_else(|| wrong_type(key, "a number of seconds", shown))? {
        Num::Int(s) if s <= 0 => return Err(non_positive(key, shown)),
        Num::Int(s) => s.checked_mul(1000).ok_or_else(too_large)?,
        Num::Float(f) if !f.is_finite() => return Err(not_finite(key, shown)),
        Num::Float(f) if f <= 0.0 => return Err(non_positive(key, shown)),
        Num::Float(f) => {
            let ms = (f * 1000.0).round();
            if ms < 1.0 {
                let req = "must be at least 0.001 s (1 ms)".to_owned();
                return Err(invalid(key, req, shown));
            }
            if ms > MAX_DURATION_MS as f64 {
                return Err(too_large());
            }
            ms as i128
        }
    };
    u64::try_from(ms)
        .ok()
        .filter(|ms| *ms <= MAX_DURATION_MS)
        .ok_or_else(too_large)
}

/// A positive whole number (`100` or `100.0`), as `u128` so every input fits.
fn parse_whole(key: &str, v: &RawValue, shown: &str, expected: &'static str) -> Result<u128, ConfigError> {
    match number(v).ok_or_else(|| wrong_type(key, expected, shown))? {
        Num::Int(n) if n <= 0 => Err(non_positive(key, shown)),
        Num::Int(n) => Ok(n as u128),
        Num::Float(f) if !f.is_finite() => Err(not_finite(key, shown)),
        Num::Float(f) if f <= 0.0 => Err(non_positive(key, shown)),
        Num::Float(f) if f.fract() != 0.0 => Err(invalid(key, "must be a whole number".to_owned(), shown)),
        // Saturating float → int cast; values beyond u128 are rejected by the range check.
        Num::Float(f) => Ok(f as u128),
    }
}

/// Checks a whole number is ≥ 1 and at most `max` (`unit` names the unit in the message).
fn check_whole(key: &str, n: u128, max: Option<u64>, unit: &str, shown: &str) -> Result<(), ConfigError> {
    if n == 0 {
        return Err(non_positive(key, shown));
    }
    if let Some(max) = max {
        if n > u128::from(max) {
            let req = format!("must be at most {max} {unit} (10 years)");
            return Err(invalid(key, req.trim_end().to_owned(), shown));
        }
    }
    Ok(())
}

fn parse_ms(key: &str, v: &RawValue, shown: &str) -> Result<u64, ConfigError> {
    let n = parse_whole(key, v, shown, "a whole number of milliseconds")?;
    check_whole(key, n, Some(MAX_DURATION_MS), "ms", shown)?;
    Ok(u64::try_from(n).unwrap_or(MAX_DURATION_MS)) // n <= MAX_DURATION_MS: always Ok
}

fn parse_count(key: &str, v: &RawValue, shown: &str) -> Result<usize, ConfigError> {
    let n = parse_whole(key, v, shown, "a whole number")?;
    check_whole(key, n, None, "", shown)?;
    usize::try_from(n).map_err(|_| invalid(key, format!("must be at most {}", usize::MAX), shown))
}

fn parse_count_u64(key: &str, v: &RawValue, shown: &str) -> Result<u64, ConfigError> {
    let n = parse_whole(key, v, shown, "a whole number")?;
    check_whole(key, n, None, "", shown)?;
    u64::try_from(n).map_err(|_| invalid(key, format!("must be at most {}", u64::MAX), shown))
}

fn parse_bool(key: &str, v: &RawValue, shown: &str) -> Result<bool, ConfigError> {
    match v {
        RawValue::Json(Value::Bool(b)) => Ok(*b),
        _ => Err(wrong_type(key, "true or false", shown)),
    }
}

fn parse_mode(key: &str, v: &RawValue, shown: &str) -> Result<OffboardingMode, ConfigError> {
    match v {
        RawValue::Json(Value::String(s)) if s.eq_ignore_ascii_case("sync") => Ok(OffboardingMode::Sync),
        RawValue::Json(Value::String(s)) if s.eq_ignore_ascii_case("async") => Ok(OffboardingMode::Async),
        RawValue::Json(Value::String(_)) => Err(invalid(key, "must be \"sync\" or \"async\"".to_owned(), shown)),
        _ => Err(wrong_type(key, "\"sync\" or \"async\"", shown)),
    }
}

fn finite(key: &str, v: &RawValue, shown: &str) -> Result<f64, ConfigError> {
    let f = match number(v).ok_or_else(|| wrong_type(key, "a number", shown))? {
        Num::Int(n) => n as f64,
        Num::Float(f) => f,
    };
    if f.is_finite() {
        Ok(f)
    } else {
        Err(not_finite(key, shown))
    }
}

fn check_rate(key: &str, f: f64, shown: &str) -> Result<(), ConfigError> {
    if !f.is_finite() {
        Err(not_finite(key, shown))
    } else if f <= 0.0 {
        Err(non_positive(key, shown))
    } else {
        Ok(())
    }
}

fn parse_rate(key: &str, v: &RawValue, shown: &str) -> Result<f64, ConfigError> {
    let f = finite(key, v, shown)?;
    check_rate(key, f, shown)?;
    Ok(f)
}

fn check_fraction(key: &str, f: f64, shown: &str) -> Result<(), ConfigError> {
    if !f.is_finite() {
        Err(not_finite(key, shown))
    } else if f <= 0.0 || f > 1.0 {
        Err(invalid(key, "must be in (0, 1]".to_owned(), shown))
    } else {
        Ok(())
    }
}

fn parse_fraction(key: &str, v: &RawValue, shown: &str) -> Result<f64, ConfigError> {
    let f = finite(key, v, shown)?;
    check_fraction(key, f, shown)?;
    Ok(f)
}

/// Shared, hot-swappable configuration.
///
/// Readers call [`load`](Self::load) (lock-free, for a short read) or
/// [`snapshot`](Self::snapshot) (an `Arc` to keep); [`reload`](Self::reload) validates a new
/// configuration and publishes it atomically. Readers see the old or the new configuration,
/// never a mix. New TTLs apply to deadlines computed after the swap: a deadline already stored
/// (a client's `last signal + active TTL`, a running suspicion window) keeps the TTL it was
/// computed with until the next signal or transition recomputes it.
///
/// The two TTLs are also kept in two plain atomics, a cache derived from the published
/// configuration: the signal path reads them with two loads instead of an arc-swap load
/// (15 ns of a ~45 ns Ping, measured). A reader racing a reload may pair a new active TTL with
/// an old suspicion TTL for that one decision; each is a valid TTL, so no deadline is wrong.
#[derive(Debug)]
pub struct ConfigHandle {
    cell: ArcCell<LivenessConfig>,
    active_ttl_ms: AtomicU64,
    suspicion_ttl_ms: AtomicU64,
}

/// A short-lived read of the current configuration, from [`ConfigHandle::load`]. Do not hold
/// it across blocking work; take a [`ConfigHandle::snapshot`] instead.
pub struct ConfigGuard {
    inner: ArcGuard<LivenessConfig>,
}

impl Deref for ConfigGuard {
    type Target = LivenessConfig;

    fn deref(&self) -> &LivenessConfig {
        let arc: &CellArc<LivenessConfig> = &self.inner;
        arc
    }
}

impl fmt::Debug for ConfigGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ConfigGuard").field(&**self).finish()
    }
}

impl ConfigHandle {
    /// Publishes `config`. It should come from [`resolve`] (or pass
    /// [`LivenessConfig::validate`]); it is not checked here.
    pub fn new(config: LivenessConfig) -> Self {
        Self {
            active_ttl_ms: AtomicU64::new(config.active_ttl_ms),
            suspicion_ttl_ms: AtomicU64::new(config.suspicion_ttl_ms),
            cell: ArcCell::new(CellArc::new(config)),
        }
    }

    /// The active and suspicion TTLs, ms: two loads (see the type's doc).
    #[inline]
    pub fn ttls_ms(&self) -> (u64, u64) {
        // Relaxed: the values are self-contained numbers; nothing else is published with them.
        (
            self.active_ttl_ms.load(Ordering::Relaxed),
            self.suspicion_ttl_ms.load(Ordering::Relaxed),
        )
    }

    /// The current configuration, lock-free.
    pub fn load(&self) -> ConfigGuard {
        ConfigGuard {
            inner: self.cell.load(),
        }
    }

    /// The current configuration as an `Arc` that stays valid across reloads.
    pub fn snapshot(&self) -> CellArc<LivenessConfig> {
        let guard = self.cell.load();
        let arc: &CellArc<LivenessConfig> = &guard;
        CellArc::clone(arc)
    }

    /// Validates `config` and, if valid, swaps it in; an invalid one leaves the current
    /// configuration in place. New TTLs apply to deadlines computed after the swap.
    pub fn reload(&self, config: LivenessConfig) -> Result<(), ConfigError> {
        config.validate()?;
        self.active_ttl_ms.store(config.active_ttl_ms, Ordering::Relaxed);
        self.suspicion_ttl_ms.store(config.suspicion_ttl_ms, Ordering::Relaxed);
        self.cell.store(CellArc::new(config));
        Ok(())
    }
}

/// Fuzz body: bytes → UTF-8 → JSON and YAML → resolve (as the file and as the command line),
/// ignoring every result. Must never panic.
#[doc(hidden)]
pub fn fuzz_config_parse(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = [RawConfig::from_json_str(text), RawConfig::from_yaml_str(text)];
    for raw in parsed.into_iter().flatten() {
        let _ = resolve(Some(&raw), &CliOverrides::default());
        let cli = CliOverrides {
            other: raw,
            ..CliOverrides::default()
        };
        let _ = resolve(None, &cli);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use serde_json::json;

    fn secs(v: Value) -> Result<u64, ConfigError> {
        let raw = RawValue::Json(v);
        parse_secs("k", &raw, &show_value(&raw))
    }

    #[test]
    fn seconds_to_ms_table() {
        let ok = [
            (json!(1), 1_000),
            (json!(60), 60_000),
            (json!(0.5), 500),
            (json!(0.1), 100),
            (json!(1.25), 1_250),
            (json!(0.001), 1),
            (json!(0.0005), 1), // rounds to 1 ms
            (json!(60.0), 60_000),
            (json!(315_360_000), MAX_DURATION_MS),
        ];
        for (v, want) in ok {
            assert_eq!(secs(v.clone()).unwrap(), want, "{v}");
        }
        let bad = [
            (json!(0), "k must be > 0, got 0"),
            (json!(-5), "k must be > 0, got -5"),
            (json!(-0.5), "k must be > 0, got -0.5"),
            (json!(0.0), "k must be > 0, got 0.0"),
            (json!(0.0004), "k must be at least 0.001 s (1 ms), got 0.0004"),
            (
                json!(315_360_001),
                "k must be at most 315360000 s (10 years), got 315360001",
            ),
            (json!(u64::MAX), "k must be at most"),
            (json!(1e300), "k must be at most"),
            (json!("10"), "k must be a number of seconds, got \"10\""),
            (json!(true), "k must be a number of seconds, got true"),
            (json!(null), "got null"),
            (json!({"a": 1}), "got {\"a\":1}"),
            (json!([1]), "got [1]"),
        ];
        for (v, want) in bad {
            let msg = secs(v.clone()).unwrap_err().to_string();
            assert!(msg.contains(want), "{v}: {msg}");
        }
    }

    #[test]
    fn non_finite_seconds_are_named() {
        for (f, shown) in [(f64::NAN, "NaN"), (f64::INFINITY, "inf"), (f64::NEG_INFINITY, "-inf")] {
            let raw = RawValue::NonFinite(f);
            let err = parse_secs("k", &raw, &show_value(&raw)).unwrap_err();
            assert!(matches!(err, ConfigError::NotFinite { .. }), "{err:?}");
            assert_eq!(err.to_string(), format!("k must be a finite number, got {shown}"));
        }
    }

    #[test]
    fn whole_numbers_table() {
        let ms = |v: Value| {
            let raw = RawValue::Json(v);
            parse_ms("m", &raw, &show_value(&raw))
        };
        assert_eq!(ms(json!(100)).unwrap(), 100);
        assert_eq!(ms(json!(100.0)).unwrap(), 100);
        assert_eq!(
            ms(json!(100.5)).unwrap_err().to_string(),
            "m must be a whole number, got 100.5"
        );
        assert_eq!(ms(json!(0)).unwrap_err().to_string(), "m must be > 0, got 0");
        assert_eq!(ms(json!(-3)).unwrap_err().to_string(), "m must be > 0, got -3");
        assert!(ms(json!(1e30)).unwrap_err().to_string().contains("at most"));
        assert!(ms(json!(i64::MIN)).is_err());
        assert_eq!(
            ms(json!("100")).unwrap_err().to_string(),
            "m must be a whole number of milliseconds, got \"100\""
        );
    }

    #[test]
    fn yaml_specials_and_shapes() {
        let raw = RawConfig::from_yaml_str("client_active_ttl_sec: .inf\nx: .nan\n").unwrap();
        assert_eq!(raw.map["client_active_ttl_sec"], RawValue::NonFinite(f64::INFINITY));
        let err = LivenessConfig::from_raw(&raw).unwrap_err().to_string();
        assert_eq!(err, "client_active_ttl_sec must be a finite number, got inf");

        // Empty document and a bare null are empty sources.
        assert!(RawConfig::from_yaml_str("").unwrap().is_empty());
        assert!(RawConfig::from_yaml_str("~").unwrap().is_empty());
        // Top level must be a mapping.
        for bad in ["- 1\n- 2", "42", "hello"] {
            let err = RawConfig::from_yaml_str(bad).unwrap_err();
            assert!(
                matches!(err, ConfigError::Parse { format: "YAML", .. }),
                "{bad}: {err:?}"
            );
        }
        // Scalar keys are stringified; tags are looked through.
        let raw = RawConfig::from_yaml_str("1: a\ntrue: b\nmonitor_tick_ms: !!int 50\n").unwrap();
        assert!(raw.contains_key("1") && raw.contains_key("true"));
        assert_eq!(LivenessConfig::from_raw(&raw).unwrap().config.monitor_tick_ms, 50);
        // Complex keys are a parse error, not a panic.
        assert!(RawConfig::from_yaml_str("? [1, 2]\n: x\n").is_err());
        // Nested values are kept as values of the wrong type.
        let raw = RawConfig::from_yaml_str("stall_brake: {a: .nan}\n").unwrap();
        let err = LivenessConfig::from_raw(&raw).unwrap_err().to_string();
        assert_eq!(err, "stall_brake must be true or false, got {\"a\":null}");
    }

    #[test]
    fn json_top_level_must_be_an_object() {
        for bad in ["[]", "1", "null", "\"x\""] {
            let err = RawConfig::from_json_str(bad).unwrap_err();
            assert!(matches!(err, ConfigError::Parse { format: "JSON", .. }), "{bad}");
            assert!(err.to_string().contains("expected an object"), "{err}");
        }
        let err = RawConfig::from_json_str("{").unwrap_err().to_string();
        assert!(err.starts_with("cannot parse JSON configuration: "), "{err}");
        // serde_json refuses out-of-range literals instead of producing inf.
        assert!(RawConfig::from_json_str(r#"{"client_active_ttl_sec": 1e400}"#).is_err());
    }

    #[test]
    fn cli_numbers_keep_their_shape() {
        let mut raw = RawConfig::new();
        raw.set_number("a", 60.0);
        raw.set_number("b", 0.5);
        raw.set_number("c", f64::NAN);
        raw.set_number("d", -0.0);
        assert_eq!(raw.map["a"], RawValue::Json(json!(60)));
        assert_eq!(raw.map["b"], RawValue::Json(json!(0.5)));
        assert!(matches!(raw.map["c"], RawValue::NonFinite(f) if f.is_nan()));
        assert_eq!(raw.map["d"], RawValue::Json(json!(0)));
        let cli = CliOverrides {
            client_ttl: Some(f64::NAN),
            ..Default::default()
        };
        let err = resolve(None, &cli).unwrap_err().to_string();
        assert_eq!(err, "--client_ttl must be a finite number, got NaN");
    }

    #[test]
    fn typed_cli_field_replaces_the_same_key_in_other() {
        let mut other = RawConfig::new();
        other.set(keys::CLIENT_ACTIVE_TTL_SEC, json!(99));
        let cli = CliOverrides {
            client_active_ttl_sec: Some(7.0),
            other,
            ..Default::default()
        };
        let r = resolve(None, &cli).unwrap();
        assert_eq!(r.config.active_ttl_ms, 7_000);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }

    #[test]
    fn legacy_names_per_source() {
        // `client_ttl` is a command-line name; in a file it is an unknown key.
        let file = RawConfig::from_json_str(r#"{"client_ttl": 60}"#).unwrap();
        let r = LivenessConfig::from_raw(&file).unwrap();
        assert_eq!(r.config.active_ttl_ms, DEFAULT_ACTIVE_TTL_MS);
        assert_eq!(r.warnings, vec!["unknown key ignored: client_ttl".to_owned()]);
        // On the command line, client_ttl beats client_live_ttl_sec.
        let mut other = RawConfig::new();
        other.set(keys::CLIENT_LIVE_TTL_SEC, json!(70));
        let cli = CliOverrides {
            client_ttl: Some(60.0),
            other,
            ..Default::default()
        };
        let r = resolve(None, &cli).unwrap();
        assert_eq!((r.config.active_ttl_ms, r.config.suspicion_ttl_ms), (60_000, 60_000));
        assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
        assert!(r.warnings[0].contains("--client_ttl=60") && r.warnings[0].contains("--client_live_ttl_sec=70"));
    }

    #[test]
    fn mode_and_bools() {
        for (v, want) in [("sync", OffboardingMode::Sync), ("ASYNC", OffboardingMode::Async)] {
            let raw = RawConfig::from_json_value(&json!({"offboarding_mode": v})).unwrap();
            assert_eq!(LivenessConfig::from_raw(&raw).unwrap().config.offboarding_mode, want);
        }
        let raw = RawConfig::from_json_value(&json!({"offboarding_mode": "fast"})).unwrap();
        assert_eq!(
            LivenessConfig::from_raw(&raw).unwrap_err().to_string(),
            "offboarding_mode must be \"sync\" or \"async\", got \"fast\""
        );
        let raw = RawConfig::from_json_value(&json!({"offboarding_mode": 1})).unwrap();
        assert!(matches!(
            LivenessConfig::from_raw(&raw).unwrap_err(),
            ConfigError::WrongType { .. }
        ));
        // YAML 1.2: `yes` is a string, not a bool.
        let raw = RawConfig::from_yaml_str("stall_brake: yes").unwrap();
        assert_eq!(
            LivenessConfig::from_raw(&raw).unwrap_err().to_string(),
            "stall_brake must be true or false, got \"yes\""
        );
        assert_eq!(serde_json::to_value(OffboardingMode::Async).unwrap(), json!("async"));
    }

    #[test]
    fn long_values_are_truncated_in_messages() {
        let long = "x".repeat(10_000);
        let raw = RawConfig::from_json_value(&json!({ "monitor_tick_ms": long })).unwrap();
        let msg = LivenessConfig::from_raw(&raw).unwrap_err().to_string();
        assert!(msg.len() < 200, "{msg}");
        assert!(msg.ends_with('…'), "{msg}");
    }

    #[test]
    fn validate_names_fields() {
        let bad = [
            (
                LivenessConfig {
                    active_ttl_ms: 0,
                    ..Default::default()
                },
                "active_ttl_ms must be > 0, got 0",
            ),
            (
                LivenessConfig {
                    monitor_tick_ms: 0,
                    ..Default::default()
                },
                "monitor_tick_ms must be > 0, got 0",
            ),
            (
                LivenessConfig {
                    offboarding_workers: 0,
                    ..Default::default()
                },
                "offboarding_workers must be > 0, got 0",
            ),
            (
                LivenessConfig {
                    offboarding_rate_per_sec: f64::NAN,
                    ..Default::default()
                },
                "offboarding_rate_per_sec must be a finite number, got NaN",
            ),
            (
                LivenessConfig {
                    mass_suspicion_fraction: 1.5,
                    ..Default::default()
                },
                "mass_suspicion_fraction must be in (0, 1], got 1.5",
            ),
            (
                LivenessConfig {
                    suspicion_ttl_ms: u64::MAX,
                    ..Default::default()
                },
                "suspicion_ttl_ms must be at most 315360000000 ms (10 years)",
            ),
            (
                LivenessConfig {
                    offboarding_retry_max_backoff_ms: 100,
                    ..Default::default()
                },
                "got offboarding_retry_max_backoff_ms 100 < offboarding_retry_backoff_ms 200",
            ),
        ];
        for (c, want) in bad {
            let msg = c.validate().unwrap_err().to_string();
            assert!(msg.contains(want), "{msg}");
        }
        LivenessConfig::default().validate().unwrap();
    }

    #[test]
    fn fuzz_body_survives_odd_inputs() {
        let inputs: [&[u8]; 8] = [
            b"",
            b"\xff\xfe",
            b"{\"client_active_ttl_sec\": -1e308}",
            b"client_active_ttl_sec: -.inf\nclient_suspicion_ttl_sec: .nan",
            b"a: &a [*a]",
            b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
            b"{\"offboarding_burst\": 18446744073709551615, \"offboarding_workers\": 1e19}",
            b"? {a: 1}\n: 2\n",
        ];
        for data in inputs {
            fuzz_config_parse(data);
        }
    }
}
