//! `serve`'s command line, read as gflags reads the real master's, so that a script that starts
//! `mooncake_master` starts `serve` by changing the binary only.
//!
//! Forms: `--name=value` (or `-name=value`), `--name value` for a flag `serve` implements and
//! that takes a value, `--name` / `--noname` for a boolean. Any flag of the real master
//! ([`upstream_flags`](super::upstream_flags)) is accepted; those `serve` does not implement
//! are listed in one warning. Any other name is an error naming it. The liveness keys of the
//! project's configuration (`monitor_tick_ms`, `offboarding_mode`, ...: see
//! [`config`](crate::config)) are accepted as flags too.
//!
//! `--config_path=master.yaml` reads the file as the project's configuration module does; the
//! serve keys below are read from it as well. A flag given on the command line beats the file
//! (upstream: an explicitly set flag overrides the file; the file overrides flag defaults).
//!
//! | flag / key | default | meaning |
//! |---|---|---|
//! | `rpc_address` | `0.0.0.0` | address the RPC server binds |
//! | `rpc_port` (deprecated alias `port`) | `50051` | its port |
//! | `rpc_thread_num` (deprecated alias `max_threads`) | CPUs | request threads |
//! | `enable_http_metadata_server` | `false` | serve the transfer metadata over HTTP |
//! | `http_metadata_server_host`, `http_metadata_server_port` | `0.0.0.0`, `8080` | where |
//! | `metrics_host`, `metrics_port` | `0.0.0.0`, `9003` | Prometheus `/metrics` (and `/health`) |
//! | `default_kv_lease_ttl` | `10000` | read lease, ms, or with a suffix `ms`, `s`, `m`, `h` |
//! | `client_active_ttl_sec`, `client_suspicion_ttl_sec`, `client_ttl` | 10, 20 | liveness TTLs (see `config`) |
//! | `vmodule` | — | `scoped_vlog_timer=1` (or more) logs every RPC with its latency, as upstream; `monitor=1` logs every monitor tick |
//! | `max_request_bytes` (serve's own) | `67108864` | larger frames close the connection |
//!
//! `offboarding_mode` defaults to `async` here (the offboarding workers), unless given.

use super::upstream_flags::is_upstream;
use crate::config::{keys, resolve, CliOverrides, LivenessConfig, RawConfig};
use serde_json::Value;
use std::collections::BTreeMap;

/// Everything `serve` was asked for.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Address the RPC server binds.
    pub rpc_address: String,
    /// Its port.
    pub rpc_port: u16,
    /// Request threads (0: one per CPU).
    pub rpc_thread_num: usize,
    /// Serve the transfer metadata over HTTP.
    pub enable_http_metadata_server: bool,
    /// Its bind address.
    pub http_metadata_server_host: String,
    /// Its port.
    pub http_metadata_server_port: u16,
    /// The metrics server's bind address.
    pub metrics_host: String,
    /// Its port.
    pub metrics_port: u16,
    /// Read lease granted by GetReplicaList, ms.
    pub default_kv_lease_ttl_ms: u64,
    /// Log every RPC (`--vmodule=scoped_vlog_timer=1`).
    pub rpc_lines: bool,
    /// Log every monitor tick (`--vmodule=monitor=1`).
    pub tick_lines: bool,
    /// Frames larger than this close the connection.
    pub max_request_bytes: u64,
    /// The resolved liveness configuration.
    pub liveness: LivenessConfig,
    /// Warnings to log at start-up (configuration, ignored flags).
    pub warnings: Vec<String>,
}

/// What the command line asked for.
#[derive(Debug)]
pub enum Parsed {
    /// Run with these options.
    Run(Box<ServeOptions>),
    /// Print [`HELP`] and exit.
    Help,
    /// Print the version and exit (`--version`, as gflags answers it for the real master).
    Version,
}

/// `serve --help`.
pub const HELP: &str = "\
Usage: mooncake-liveness serve [--flag=value ...]

A Mooncake master that the 0.3.13.post1 client talks to, built on the lock-free liveness core.
Takes the real mooncake_master's flags (unknown ones are refused; the ones not implemented here
are accepted and named in a warning). Implemented:
  --rpc_address=0.0.0.0  --rpc_port=50051  --rpc_thread_num=N
  --enable_http_metadata_server=true --http_metadata_server_host=H --http_metadata_server_port=8080
  --metrics_host=0.0.0.0 --metrics_port=9003   (GET /metrics, GET /health)
  --default_kv_lease_ttl=10000 (ms, or 500ms / 10s / 1m / 1h)
  --client_active_ttl_sec=10 --client_suspicion_ttl_sec=20 (--client_ttl: deprecated alias)
  --config_path=master.yaml   (the same keys; flags on the command line win)
  --vmodule=scoped_vlog_timer=1,monitor=1   (a log line per RPC, per monitor tick)
  --max_request_bytes=67108864   (serve's own)
  --help, --version
  and every key of `mooncake-liveness config` (e.g. --offboarding_mode=sync).";

/// Flags `serve` implements beyond the liveness keys, with whether they take a value.
const OWN: &[&str] = &[
    "rpc_address",
    "rpc_port",
    "port",
    "rpc_thread_num",
    "max_threads",
    "enable_http_metadata_server",
    "http_metadata_server_host",
    "http_metadata_server_port",
    "metrics_host",
    "metrics_port",
    "default_kv_lease_ttl",
    "vmodule",
    "max_request_bytes",
    "config_path",
];

/// Liveness keys read through the configuration module (TTL flags included).
fn is_liveness_key(name: &str) -> bool {
    name == keys::CLIENT_TTL || keys_table().contains(&name)
}

fn keys_table() -> [&'static str; 17] {
    [
        keys::CLIENT_ACTIVE_TTL_SEC,
        keys::CLIENT_LIVE_TTL_SEC,
        keys::CLIENT_SUSPICION_TTL_SEC,
        keys::MONITOR_TICK_MS,
        keys::STALL_BOUND_MS,
        keys::STALL_BRAKE,
        keys::OFFBOARDING_MODE,
        keys::OFFBOARDING_WORKERS,
        keys::OFFBOARDING_BATCH_SIZE,
        keys::OFFBOARDING_RETRY_BACKOFF_MS,
        keys::OFFBOARDING_RETRY_MAX_BACKOFF_MS,
        keys::OFFBOARDING_RATE_PER_SEC,
        keys::OFFBOARDING_BURST,
        keys::MASS_SUSPICION_BRAKE,
        keys::MASS_SUSPICION_MIN_CLIENTS,
        keys::MASS_SUSPICION_FRACTION,
        keys::SHUTDOWN_DRAIN_MS,
    ]
}

/// Splits the arguments into `name → value` (last one wins), gflags style.
fn tokenize(args: &[String]) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let Some(flag) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
            return Err(format!("unexpected argument {arg:?}: flags are --name=value"));
        };
        if flag == "help" || flag == "helpfull" || flag == "helpshort" {
            out.insert("help".to_string(), "true".to_string());
            continue;
        }
        if flag == "version" {
            out.insert("version".to_string(), "true".to_string());
            continue;
        }
        let (name, value) = match flag.split_once('=') {
            Some((n, v)) => (n.to_string(), v.to_string()),
            None if OWN.contains(&flag) && !is_bool_flag(flag) || is_liveness_key(flag) => {
                let v = it.next().ok_or_else(|| format!("--{flag} needs a value"))?;
                (flag.to_string(), v.clone())
            }
            None => match flag.strip_prefix("no") {
                Some(n) if is_bool_flag(n) || (is_upstream(n) && !is_upstream(flag)) => (n.to_string(), "false".into()),
                _ => (flag.to_string(), "true".into()),
            },
        };
        if !(OWN.contains(&name.as_str()) || is_liveness_key(&name) || is_upstream(&name)) {
            return Err(format!("unknown command line flag '{name}'"));
        }
        out.insert(name, value);
    }
    Ok(out)
}

fn is_bool_flag(name: &str) -> bool {
    name == "enable_http_metadata_server"
}

/// A gflags boolean.
fn parse_bool(name: &str, v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "t" | "yes" | "y" | "1" => Ok(true),
        "false" | "f" | "no" | "n" | "0" => Ok(false),
        _ => Err(format!("--{name}: expected true or false, got {v:?}")),
    }
}

fn parse_num<T: std::str::FromStr>(name: &str, v: &str, what: &str) -> Result<T, String> {
    v.trim()
        .parse()
        .map_err(|_| format!("--{name}: expected {what}, got {v:?}"))
}

/// `default_kv_lease_ttl`: ms, or a duration with `ms`, `s`, `m` or `h`.
fn parse_lease(v: &str) -> Result<u64, String> {
    let v = v.trim();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (digits, unit) = v.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("--default_kv_lease_ttl: expected ms or a duration (10s), got {v:?}"))?;
    let scale = match unit {
        "" | "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(format!("--default_kv_lease_ttl: unknown unit {unit:?} in {v:?}")),
    };
    n.checked_mul(scale)
        .filter(|ms| *ms > 0)
        .ok_or_else(|| format!("--default_kv_lease_ttl: {v:?} is out of range (> 0 ms)"))
}

/// A file value as the string a flag would carry.
fn file_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Parses `serve`'s arguments (everything after `serve`).
pub fn parse(args: &[String]) -> Result<Parsed, String> {
    let mut flags = tokenize(args)?;
    if flags.contains_key("help") {
        return Ok(Parsed::Help);
    }
    if flags.contains_key("version") {
        return Ok(Parsed::Version);
    }
    let mut file = match flags.get("config_path").filter(|p| !p.is_empty()) {
        Some(path) => Some(RawConfig::from_path(std::path::Path::new(path)).map_err(|e| e.to_string())?),
        None => None,
    };
    // The serve keys of the file, under the flags given on the command line.
    let mut own: BTreeMap<String, String> = BTreeMap::new();
    for name in OWN.iter().filter(|n| **n != "config_path") {
        if let Some(v) = file.as_mut().and_then(|f| f.take(name)) {
            own.insert((*name).to_string(), file_string(&v));
        }
    }
    let mut ignored = Vec::new();
    let mut cli = CliOverrides::default();
    for (name, value) in std::mem::take(&mut flags) {
        if OWN.contains(&name.as_str()) {
            own.insert(name, value);
        } else if is_liveness_key(&name) {
            liveness_flag(&mut cli, &name, &value)?;
        } else {
            ignored.push(name);
        }
    }
    let mut options = own_options(&own)?;
    if !ignored.is_empty() {
        options.warnings.push(format!(
            "flags of mooncake_master not implemented by serve, ignored: {}",
            ignored.join(", ")
        ));
    }
    let explicit_mode = cli.other.contains_key(keys::OFFBOARDING_MODE)
        || file.as_ref().is_some_and(|f| f.contains_key(keys::OFFBOARDING_MODE));
    if !explicit_mode {
        cli.other.set(keys::OFFBOARDING_MODE, Value::String("async".into()));
    }
    let resolved = resolve(file.as_ref(), &cli).map_err(|e| e.to_string())?;
    options.liveness = resolved.config;
    options.warnings.extend(resolved.warnings);
    Ok(Parsed::Run(Box::new(options)))
}

fn liveness_flag(cli: &mut CliOverrides, name: &str, value: &str) -> Result<(), String> {
    let secs = || parse_num::<f64>(name, value, "seconds");
    match name {
        keys::CLIENT_TTL => cli.client_ttl = Some(secs()?),
        keys::CLIENT_ACTIVE_TTL_SEC => cli.client_active_ttl_sec = Some(secs()?),
        keys::CLIENT_SUSPICION_TTL_SEC => cli.client_suspicion_ttl_sec = Some(secs()?),
        _ => {
            let v = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_string()));
            cli.other.set(name, v);
        }
    }
    Ok(())
}

fn own_options(own: &BTreeMap<String, String>) -> Result<ServeOptions, String> {
    let get = |k: &str| own.get(k).map(String::as_str);
    let port = |k: &str, default: u16| -> Result<u16, String> {
        get(k).map_or(Ok(default), |v| parse_num(k, v, "a port (0-65535)"))
    };
    // Upstream: `rpc_port` > 0 wins, else the deprecated `port` (default 50051).
    let rpc_port = match get("rpc_port").map(|v| parse_num::<u16>("rpc_port", v, "a port")) {
        Some(Ok(p)) if p > 0 => p,
        Some(Err(e)) => return Err(e),
        _ => port("port", 50051)?,
    };
    let threads = match get("rpc_thread_num").or(get("max_threads")) {
        Some(v) => parse_num::<usize>("rpc_thread_num", v, "a thread count")?,
        None => 0,
    };
    // glog's `--vmodule=module=level,...` (a module is a source file's base name).
    let verbose = |name: &str| {
        get("vmodule").is_some_and(|v| {
            v.split(',').any(|m| {
                m.split_once('=')
                    .is_some_and(|(module, level)| module == name && level.parse::<i32>().is_ok_and(|l| l >= 1))
            })
        })
    };
    let rpc_lines = verbose("scoped_vlog_timer");
    let tick_lines = verbose("monitor");
    Ok(ServeOptions {
        rpc_address: get("rpc_address").unwrap_or("0.0.0.0").to_string(),
        rpc_port,
        rpc_thread_num: threads,
        enable_http_metadata_server: get("enable_http_metadata_server")
            .map_or(Ok(false), |v| parse_bool("enable_http_metadata_server", v))?,
        http_metadata_server_host: get("http_metadata_server_host").unwrap_or("0.0.0.0").to_string(),
        http_metadata_server_port: port("http_metadata_server_port", 8080)?,
        metrics_host: get("metrics_host").unwrap_or("0.0.0.0").to_string(),
        metrics_port: port("metrics_port", 9003)?,
        default_kv_lease_ttl_ms: get("default_kv_lease_ttl").map_or(Ok(10_000), parse_lease)?,
        rpc_lines,
        tick_lines,
        max_request_bytes: get("max_request_bytes").map_or(Ok(64 << 20), |v| {
            parse_num::<u64>("max_request_bytes", v, "bytes").and_then(|n| {
                if n >= 1024 {
                    Ok(n)
                } else {
                    Err(format!("--max_request_bytes: {n} is below 1024"))
                }
            })
        })?,
        liveness: LivenessConfig::default(),
        warnings: Vec::new(),
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<ServeOptions, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse(&args)? {
            Parsed::Run(o) => Ok(*o),
            Parsed::Help => Err("help".into()),
            Parsed::Version => Err("version".into()),
        }
    }

    /// The flags `conformance/realmaster.py` starts the real master with start `serve`.
    #[test]
    fn the_conformance_harness_flags_are_accepted() {
        let o = run(&[
            "--rpc_port=50052",
            "--client_ttl=2",
            "--enable_http_metadata_server=true",
            "--http_metadata_server_port=18081",
            "--http_metadata_server_host=192.0.2.1",
            "--metrics_port=19004",
            "--vmodule=scoped_vlog_timer=1,monitor=1",
        ])
        .unwrap();
        assert_eq!(
            (o.rpc_port, o.http_metadata_server_port, o.metrics_port),
            (50052, 18081, 19004)
        );
        assert!(o.enable_http_metadata_server && o.rpc_lines && o.tick_lines);
        assert_eq!(o.http_metadata_server_host, "192.0.2.1");
        assert_eq!(o.liveness.active_ttl_ms, 2_000);
        assert_eq!(
            o.liveness.suspicion_ttl_ms, 2_000,
            "inherits the active TTL (config rule 3)"
        );
        assert_eq!(o.liveness.offboarding_mode, crate::config::OffboardingMode::Async);
    }

    #[test]
    fn forms_defaults_and_errors() {
        let o = run(&[
            "-rpc_port",
            "6000",
            "--enable_http_metadata_server",
            "--client_active_ttl_sec=3",
        ])
        .unwrap();
        assert_eq!(o.rpc_port, 6000);
        assert!(o.enable_http_metadata_server);
        assert_eq!((o.liveness.active_ttl_ms, o.liveness.suspicion_ttl_ms), (3_000, 3_000));
        let d = run(&[]).unwrap();
        assert_eq!(
            (d.rpc_port, d.metrics_port, d.default_kv_lease_ttl_ms),
            (50051, 9003, 10_000)
        );
        assert_eq!(run(&["--port=7000"]).unwrap().rpc_port, 7000);
        assert_eq!(
            run(&["--default_kv_lease_ttl=2s"]).unwrap().default_kv_lease_ttl_ms,
            2_000
        );
        let warned = run(&["--eviction_ratio=0.2", "--enable_ha=false"]).unwrap();
        assert!(warned.warnings[0].contains("eviction_ratio"), "{:?}", warned.warnings);
        assert!(run(&["--rpc_prot=1"]).unwrap_err().contains("rpc_prot"));
        assert!(run(&["--rpc_port=x"]).unwrap_err().contains("--rpc_port"));
        assert!(run(&["--default_kv_lease_ttl=5d"]).unwrap_err().contains("unit"));
        assert!(run(&["--client_ttl=-1"]).is_err());
        assert!(
            run(&["--offboarding_mode=sync"]).unwrap().liveness.offboarding_mode
                == crate::config::OffboardingMode::Sync
        );
        assert!(matches!(parse(&["--help".to_string()]), Ok(Parsed::Help)));
        // `--version` prints and exits, as the real master's does, instead of serving.
        assert!(matches!(
            parse(&["--rpc_port=1".to_string(), "--version".to_string()]),
            Ok(Parsed::Version)
        ));
    }

    #[test]
    fn a_master_yaml_is_read_and_the_command_line_wins() {
        let dir = std::env::temp_dir().join(format!("serve-flags-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("master.yaml");
        std::fs::write(
            &path,
            "rpc_port: 6001\nmetrics_port: 6002\nclient_live_ttl_sec: 4\nenable_http_metadata_server: true\n",
        )
        .unwrap();
        let arg = format!("--config_path={}", path.display());
        let o = run(&[&arg, "--metrics_port=6003"]).unwrap();
        assert_eq!((o.rpc_port, o.metrics_port), (6001, 6003));
        assert!(o.enable_http_metadata_server);
        assert_eq!(o.liveness.active_ttl_ms, 4_000);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
