//! Resolution: the file and the command line into one validated [`LivenessConfig`], by the
//! rules in the [module documentation](super#resolution): precedence, legacy aliases, the
//! inherited suspicion TTL, and the warnings for conflicts, overrides and unknown keys.
//!
//! What this file owns: which source wins and what is warned about, and how a key none of ours
//! is told apart: one of Mooncake's master keys (`mooncake.rs`; summarised, not warned about)
//! or unknown (warned about, with the nearest of ours for a near miss). Each value's parsing
//! and range check is `parse.rs`'s; the cross-field checks are [`LivenessConfig::validate`].

use super::error::ConfigError;
use super::keys;
use super::mooncake::MOONCAKE_MASTER_KEYS;
use super::parse::{
    parse_bool, parse_count, parse_count_u64, parse_fraction, parse_mode, parse_ms, parse_rate, parse_secs, show_value,
    truncate,
};
use super::source::{CliOverrides, RawConfig, RawValue};
use super::{LivenessConfig, OffboardingMode, DEFAULT_ACTIVE_TTL_MS, DEFAULT_SUSPICION_TTL_MS};
use std::collections::BTreeSet;

/// A resolved configuration and the warnings resolution produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    /// The validated configuration.
    pub config: LivenessConfig,
    /// Human-readable warnings (conflicting aliases, overrides, unknown keys), in the order
    /// they were found; each was also logged with `tracing::warn!`.
    pub warnings: Vec<String>,
    /// Mooncake's own master keys the sources carried ([`MOONCAKE_MASTER_KEYS`](super::MOONCAKE_MASTER_KEYS)):
    /// known, not used by the liveness core, not warned about. Sorted, each once.
    pub mooncake_keys: Vec<String>,
}

impl Resolved {
    /// One line naming the Mooncake master keys the sources carried, or `None` when there were
    /// none: `13 Mooncake master keys not used by the liveness core: cluster_id, ...`.
    pub fn mooncake_summary(&self) -> Option<String> {
        let n = self.mooncake_keys.len();
        let keys = match n {
            0 => return None,
            1 => "key",
            _ => "keys",
        };
        Some(format!(
            "{n} Mooncake master {keys} not used by the liveness core: {}",
            self.mooncake_keys.join(", ")
        ))
    }
}

/// Resolves the file (if any) and the command line into a validated [`LivenessConfig`], by the
/// rules in the [module documentation](super#resolution).
pub fn resolve(file: Option<&RawConfig>, cli: &CliOverrides) -> Result<Resolved, ConfigError> {
    let mut warnings = Warnings::default();
    let mut mooncake = BTreeSet::new();
    let file = match file {
        Some(raw) => parse_source(raw, Source::File, &mut warnings, &mut mooncake)?,
        None => Partial::default(),
    };
    let cli = parse_source(&cli.to_raw(), Source::Cli, &mut warnings, &mut mooncake)?;

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
    let resolved = Resolved {
        config,
        warnings: warnings.0,
        mooncake_keys: mooncake.into_iter().collect(),
    };
    if let Some(summary) = resolved.mooncake_summary() {
        tracing::info!("{}", summary);
    }
    Ok(resolved)
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

/// Parses and validates every key of ours in one source; collects Mooncake's own keys into
/// `mooncake` and warns about the unknown ones.
fn parse_source(
    raw: &RawConfig,
    source: Source,
    warnings: &mut Warnings,
    mooncake: &mut BTreeSet<String>,
) -> Result<Partial, ConfigError> {
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
            other if MOONCAKE_MASTER_KEYS.binary_search(&other).is_ok() && other != keys::CLIENT_TTL => {
                mooncake.insert(other.to_owned());
            }
            other => warnings.push(unknown_key(other, source)),
        }
    }
    ranked.sort_by_key(|(rank, _)| *rank);
    p.active = ranked.into_iter().map(|(_, g)| g).collect();
    Ok(p)
}

/// The warning for a key that is neither ours (in this source) nor Mooncake's: it is ignored,
/// and a near miss of one of ours is told which.
fn unknown_key(key: &str, source: Source) -> String {
    if key == keys::CLIENT_TTL {
        // Ours and Mooncake's flag, but a command-line name only: upstream's file loader does not
        // read it either.
        return format!(
            "{key} in a config file is ignored: it is the command-line name of the active TTL \
             (--{key}); the file's key is {}",
            keys::CLIENT_ACTIVE_TTL_SEC
        );
    }
    let shown = source.show_key(key);
    match nearest_key(key, source) {
        Some(near) => format!("unknown key ignored: {shown} (did you mean {}?)", source.show_key(near)),
        None => format!("unknown key ignored: {shown}"),
    }
}

/// The key of ours closest to `key` (Damerau–Levenshtein distance over ASCII-lowercased names
/// with `-` read as `_`), if it is a near miss: at most 3 edits and at most one per 4
/// characters of the key of ours. `client_ttl` is a candidate on the command line only.
fn nearest_key(key: &str, source: Source) -> Option<&'static str> {
    let typed = key.to_ascii_lowercase().replace('-', "_");
    keys::ALL
        .into_iter()
        .filter(|k| source == Source::Cli || *k != keys::CLIENT_TTL)
        .map(|k| (strsim::damerau_levenshtein(&typed, k), k))
        .min_by_key(|(d, _)| *d)
        .filter(|(d, k)| *d <= 3 && d * 4 <= k.len())
        .map(|(_, k)| k)
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use serde_json::json;

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
        assert_eq!(
            r.warnings,
            vec![
                "client_ttl in a config file is ignored: it is the command-line name of the active TTL \
                 (--client_ttl); the file's key is client_active_ttl_sec"
                    .to_owned()
            ]
        );
        assert!(r.mooncake_keys.is_empty(), "ours, misplaced: not one of Mooncake's");
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
    fn mooncake_keys_are_summarised_and_unknown_ones_warned_about() {
        let file = RawConfig::from_yaml_str("rpc_port: 50051\nenable_ha: false\nrpc_port_x: 1\nmonitor_tick_ms: 50\n")
            .unwrap();
        let mut other = RawConfig::new();
        other.set("etcd_endpoints", json!("http://e:2379"));
        other.set("rpc_port", json!(1));
        let cli = CliOverrides {
            other,
            ..Default::default()
        };
        let r = resolve(Some(&file), &cli).unwrap();
        assert_eq!(r.config.monitor_tick_ms, 50);
        assert_eq!(
            r.mooncake_keys,
            ["enable_ha", "etcd_endpoints", "rpc_port"],
            "both sources, each once"
        );
        assert_eq!(r.warnings, ["unknown key ignored: rpc_port_x"]);
        assert_eq!(
            r.mooncake_summary().unwrap(),
            "3 Mooncake master keys not used by the liveness core: enable_ha, etcd_endpoints, rpc_port"
        );
        let one = LivenessConfig::from_raw(&RawConfig::from_yaml_str("rpc_port: 1").unwrap()).unwrap();
        assert_eq!(
            one.mooncake_summary().unwrap(),
            "1 Mooncake master key not used by the liveness core: rpc_port"
        );
        assert_eq!(
            LivenessConfig::from_raw(&RawConfig::new()).unwrap().mooncake_summary(),
            None
        );
    }

    #[test]
    fn a_near_miss_of_ours_gets_the_nearest_key() {
        let cases = [
            ("client_actve_ttl_sec", Some("client_active_ttl_sec")),
            ("client_active_ttl_secs", Some("client_active_ttl_sec")),
            ("Client-Suspicion-TTL-Sec", Some("client_suspicion_ttl_sec")),
            ("monitor_tick", Some("monitor_tick_ms")),
            ("stall_brkae", Some("stall_brake")),
            ("offboarding_worker", Some("offboarding_workers")),
            ("client_tll", None), // a command-line name: no suggestion in a file
            ("brake", None),
            ("totally_unrelated", None),
        ];
        for (typed, want) in cases {
            assert_eq!(nearest_key(typed, Source::File), want, "{typed}");
        }
        assert_eq!(nearest_key("client_tll", Source::Cli), Some("client_ttl"));
        let raw = RawConfig::from_yaml_str("client_actve_ttl_sec: 30").unwrap();
        let r = LivenessConfig::from_raw(&raw).unwrap();
        assert_eq!(r.config.active_ttl_ms, DEFAULT_ACTIVE_TTL_MS, "ignored");
        assert_eq!(
            r.warnings,
            ["unknown key ignored: client_actve_ttl_sec (did you mean client_active_ttl_sec?)"]
        );
        let mut other = RawConfig::new();
        other.set("monitor_tik_ms", json!(5));
        let r = resolve(
            None,
            &CliOverrides {
                other,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(
            r.warnings,
            ["unknown key ignored: --monitor_tik_ms (did you mean --monitor_tick_ms?)"]
        );
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

    // Whole sources through resolution: the YAML and command-line shapes `source.rs` reads, as
    // the resolved configuration (or its error) shows them.
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
    fn a_nan_on_the_command_line_is_refused_naming_the_flag() {
        let cli = CliOverrides {
            client_ttl: Some(f64::NAN),
            ..Default::default()
        };
        let err = resolve(None, &cli).unwrap_err().to_string();
        assert_eq!(err, "--client_ttl must be a finite number, got NaN");
    }
}
