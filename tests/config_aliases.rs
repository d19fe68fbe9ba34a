//! Public-API tests of configuration resolution: TTL aliases, precedence, validation, the
//! example files, reload, and parser robustness.

use mooncake_liveness::config::{
    resolve, CliOverrides, ConfigError, ConfigHandle, LivenessConfig, OffboardingMode, RawConfig, Resolved,
};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Command line with the three typed TTL flags: `--client_ttl`, `--client_active_ttl_sec`,
/// `--client_suspicion_ttl_sec`.
fn cli(client_ttl: Option<f64>, active: Option<f64>, suspicion: Option<f64>) -> CliOverrides {
    CliOverrides {
        client_ttl,
        client_active_ttl_sec: active,
        client_suspicion_ttl_sec: suspicion,
        ..CliOverrides::default()
    }
}

fn file(v: Value) -> RawConfig {
    RawConfig::from_json_value(&v).expect("test file is an object")
}

fn run(file_v: Option<Value>, cli: &CliOverrides) -> Result<Resolved, ConfigError> {
    let raw = file_v.map(file);
    resolve(raw.as_ref(), cli)
}

// ---------------------------------------------------------------------------------------------
// The data table: tests/data/config_cases.txt (hand-written cases) plus the matrices generated
// below from KEYS (every key x source x form). Its header documents the row format.

/// How a key's value is parsed, and so which wrong values it refuses and how.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Secs,
    Ms,
    Count,
    Rate,
    Fraction,
    Bool,
    Mode,
}

/// Every key resolution reads, with its kind.
const KEYS: [(&str, Kind); 18] = [
    ("client_active_ttl_sec", Kind::Secs),
    ("client_live_ttl_sec", Kind::Secs),
    ("client_suspicion_ttl_sec", Kind::Secs),
    ("client_ttl", Kind::Secs), // command line only: an unknown key in a file
    ("monitor_tick_ms", Kind::Ms),
    ("stall_bound_ms", Kind::Ms),
    ("stall_brake", Kind::Bool),
    ("offboarding_mode", Kind::Mode),
    ("offboarding_workers", Kind::Count),
    ("offboarding_batch_size", Kind::Count),
    ("offboarding_retry_backoff_ms", Kind::Ms),
    ("offboarding_retry_max_backoff_ms", Kind::Ms),
    ("offboarding_rate_per_sec", Kind::Rate),
    ("offboarding_burst", Kind::Count),
    ("mass_suspicion_brake", Kind::Bool),
    ("mass_suspicion_min_clients", Kind::Count),
    ("mass_suspicion_fraction", Kind::Fraction),
    ("shutdown_drain_ms", Kind::Ms),
];

/// The three keys that are typed fields of [`CliOverrides`] (source `flag`).
const FLAG_KEYS: [&str; 3] = ["client_ttl", "client_active_ttl_sec", "client_suspicion_ttl_sec"];

impl Kind {
    /// What a `WrongType` message says the key takes.
    fn expected(self) -> &'static str {
        match self {
            Kind::Secs => "a number of seconds",
            Kind::Ms => "a whole number of milliseconds",
            Kind::Count => "a whole number",
            Kind::Rate | Kind::Fraction => "a number",
            Kind::Bool => "true or false",
            Kind::Mode => "\"sync\" or \"async\"",
        }
    }
    /// Values of the wrong type, as JSON literals (also valid YAML flow syntax).
    fn wrong_types(self) -> &'static [&'static str] {
        match self {
            Kind::Bool => &["\"true\"", "1", "{}", "null"],
            Kind::Mode => &["1", "true", "[\"sync\"]"],
            _ => &["\"10\"", "true", "{\"sec\":10}", "[10]", "null"],
        }
    }
    fn is_number(self) -> bool {
        !matches!(self, Kind::Bool | Kind::Mode)
    }
    /// Two valid values that differ from each other and from the default, as written and as the
    /// resolved field serializes (`None` for the TTL keys, whose rows are hand-written).
    fn two_values(self) -> Option<[(&'static str, &'static str); 2]> {
        match self {
            Kind::Secs => None,
            Kind::Ms => Some([("1000", "1000"), ("3000.0", "3000")]),
            Kind::Count => Some([("2", "2"), ("3", "3")]),
            Kind::Rate => Some([("1.5", "1.5"), ("7", "7.0")]),
            Kind::Fraction => Some([("0.25", "0.25"), ("1", "1.0")]),
            Kind::Bool => Some([("false", "false"), ("true", "true")]),
            Kind::Mode => Some([("\"async\"", "\"async\""), ("\"SYNC\"", "\"sync\"")]),
        }
    }
}

/// How `source` shows `key` in messages.
fn shown_key(source: &str, key: &str) -> String {
    match source {
        "flag" | "cli" => format!("--{key}"),
        _ => key.to_owned(),
    }
}

/// The sources a key can be given in (`client_ttl` is not a file key).
fn sources_of(key: &str) -> Vec<&'static str> {
    let mut s = vec!["cli"];
    if key != "client_ttl" {
        s.extend(["file", "yaml"]);
    }
    s
}

/// The generated rows: every key x source x (wrong type, non-positive, non-finite) value, and
/// for every non-TTL key: each valid value from each source, and the command line beating a
/// file (JSON or YAML) with an override warning, or silently when the values are equal.
fn matrix_rows() -> Vec<String> {
    let mut rows = Vec::new();
    for (key, kind) in KEYS {
        if let Some([(a, a_field), (b, b_field)]) = kind.two_values() {
            let override_warning = format!("command line --{key}={b} overrides config file {key}={a}");
            for file in ["file", "yaml"] {
                rows.push(format!("{file}:{key}={a} | ok {key}={a_field}"));
                rows.push(format!(
                    "{file}:{key}={a} cli:{key}={b} | ok {key}={b_field} warn {override_warning}"
                ));
                rows.push(format!("{file}:{key}={b} cli:{key}={b} | ok {key}={b_field}"));
            }
            rows.push(format!("cli:{key}={a} | ok {key}={a_field}"));
        }
        for source in sources_of(key) {
            let k = shown_key(source, key);
            for v in kind.wrong_types() {
                rows.push(format!(
                    "{source}:{key}={v} | err WrongType {k} must be {}, got {v}",
                    kind.expected()
                ));
            }
            if !kind.is_number() {
                continue;
            }
            for v in ["0", "-100", "-0.5"] {
                rows.push(match kind {
                    Kind::Fraction => format!("{source}:{key}={v} | err InvalidValue {k} must be in (0, 1], got {v}"),
                    _ => format!("{source}:{key}={v} | err NonPositive {k} must be > 0, got {v}"),
                });
            }
        }
        if kind.is_number() && key != "client_ttl" {
            for (lit, shown) in [(".nan", "NaN"), (".inf", "inf"), ("-.inf", "-inf")] {
                rows.push(format!(
                    "yaml:{key}={lit} | err NotFinite {key} must be a finite number, got {shown}"
                ));
            }
        }
        if FLAG_KEYS.contains(&key) {
            for v in ["NaN", "inf", "-inf"] {
                rows.push(format!(
                    "flag:{key}={v} | err NotFinite --{key} must be a finite number, got {v}"
                ));
            }
            for v in ["0", "-60"] {
                rows.push(format!("flag:{key}={v} | err NonPositive --{key} must be > 0, got {v}"));
            }
        }
    }
    rows
}

/// Builds the file and command line a row's GIVEN column describes.
fn sources(given: &str) -> (Option<RawConfig>, CliOverrides) {
    let mut json = serde_json::Map::new();
    let (mut yaml, mut is_file) = (String::new(), false);
    let mut cli = CliOverrides::default();
    for token in given.split_whitespace().filter(|t| *t != "-") {
        let (source, assignment) = token
            .split_once(':')
            .unwrap_or_else(|| panic!("no source in {token:?}"));
        let Some((key, value)) = assignment.split_once('=') else {
            is_file |= source == "file"; // `file:` alone: an empty file
            continue;
        };
        match source {
            "file" => {
                is_file = true;
                json.insert(key.to_owned(), serde_json::from_str(value).expect(token));
            }
            "yaml" => yaml.push_str(&format!("{key}: {value}\n")),
            "cli" => cli.other.set(key, serde_json::from_str(value).expect(token)),
            "flag" => {
                let v: f64 = value.parse().expect(token);
                match key {
                    "client_ttl" => cli.client_ttl = Some(v),
                    "client_active_ttl_sec" => cli.client_active_ttl_sec = Some(v),
                    "client_suspicion_ttl_sec" => cli.client_suspicion_ttl_sec = Some(v),
                    _ => panic!("{key} is not a typed flag"),
                }
            }
            _ => panic!("unknown source in {token:?}"),
        }
    }
    let raw = match (is_file, yaml.is_empty()) {
        (true, true) => Some(file(Value::Object(json))),
        (false, false) => Some(RawConfig::from_yaml_str(&yaml).expect(given)),
        (false, true) => None,
        (true, false) => panic!("a row has one file: JSON or YAML, not both"),
    };
    (raw, cli)
}

/// Runs one row; `Err` says what differed.
fn check_row(row: &str) -> Result<(), String> {
    let (given, expect) = row.split_once(" | ").ok_or("no ` | `")?;
    let (raw, cli) = sources(given.trim());
    let result = resolve(raw.as_ref(), &cli);
    let expect = expect.trim();
    if let Some(err) = expect.strip_prefix("err ") {
        let (kind, message) = err.split_once(' ').ok_or("err needs KIND MESSAGE")?;
        let e = match result {
            Ok(r) => return Err(format!("resolved {:?}", r.config)),
            Err(e) => e,
        };
        if !format!("{e:?}").starts_with(kind) {
            return Err(format!("got {e:?}, want ConfigError::{kind}"));
        }
        if !e.to_string().contains(message) {
            return Err(format!("message {:?} lacks {message:?}", e.to_string()));
        }
        return Ok(());
    }
    let expect = expect.strip_prefix("ok").ok_or("EXPECT is `ok ...` or `err ...`")?;
    let (fields, warns) = expect.split_once(" warn ").unwrap_or((expect, ""));
    let r = result.map_err(|e| format!("failed: {e}"))?;
    let got = serde_json::to_value(&r.config).unwrap();
    for field in fields.split_whitespace() {
        let (name, want) = field.split_once('=').ok_or("FIELD=VALUE")?;
        let want: Value = serde_json::from_str(want).map_err(|e| format!("{field}: {e}"))?;
        if got[name] != want {
            return Err(format!("{name} = {}, want {want}", got[name]));
        }
    }
    if !given.contains("stall_bound_ms=") && r.config.stall_bound_ms != (r.config.active_ttl_ms / 2).max(1) {
        return Err(format!(
            "stall bound {} does not derive from the active TTL",
            r.config.stall_bound_ms
        ));
    }
    let want: Vec<Vec<&str>> = warns
        .split(" ; ")
        .filter(|w| !w.trim().is_empty())
        .map(|w| w.split(" & ").map(str::trim).collect())
        .collect();
    if r.warnings.len() != want.len() {
        return Err(format!("warnings {:?}, want {} of them", r.warnings, want.len()));
    }
    for (got, parts) in r.warnings.iter().zip(&want) {
        if let Some(part) = parts.iter().find(|p| !got.contains(**p)) {
            return Err(format!("warning {got:?} lacks {part:?}"));
        }
    }
    Ok(())
}

fn table_rows() -> Vec<String> {
    include_str!("data/config_cases.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_row_of_the_data_table_resolves_as_it_says() {
    let rows: Vec<String> = table_rows().into_iter().chain(matrix_rows()).collect();
    let failures: Vec<String> = rows
        .iter()
        .filter_map(|row| check_row(row).err().map(|why| format!("{row}\n    -> {why}")))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
    assert!(rows.len() > 300, "only {} rows", rows.len());
}

/// The runner must be able to fail: a row with a wrong expectation is reported, for each way a
/// row can be wrong.
#[test]
fn a_wrong_row_is_reported() {
    for wrong in [
        "file:client_live_ttl_sec=60 | ok active_ttl_ms=61000",
        "file:client_live_ttl_sec=60 | ok active_ttl_ms=60000 warn nothing",
        "file:client_active_ttl_sec=30 file:client_live_ttl_sec=60 | ok active_ttl_ms=30000",
        "file:client_active_ttl_sec=-5 | err NotFinite client_active_ttl_sec",
        "file:client_active_ttl_sec=-5 | err NonPositive got -6",
        "file:client_active_ttl_sec=5 | err NonPositive got 5",
    ] {
        assert!(check_row(wrong).is_err(), "{wrong}");
    }
}

/// For the table's key list and the proptest key strategy.
fn number_and_bool_keys() -> Vec<&'static str> {
    KEYS.iter()
        .filter(|(k, kind)| *kind != Kind::Mode && *k != "client_ttl")
        .map(|(k, _)| *k)
        .collect()
}

/// Keys are matched exactly: a key of ours in another case is unknown (with the key it is a
/// near miss of); Mooncake's own keys are known and summarised, not warned about (rule 5).
#[test]
fn unknown_keys_are_ignored_with_a_warning_and_matched_exactly() {
    let r = run(
        Some(json!({"rpc_port": 50051, "enable_ha": false, "Client_Active_TTL_Sec": 30, "rpc_prot": 1})),
        &cli(None, None, None),
    )
    .unwrap();
    assert_eq!(r.config, LivenessConfig::default());
    assert_eq!(
        r.warnings,
        vec![
            "unknown key ignored: Client_Active_TTL_Sec (did you mean client_active_ttl_sec?)".to_owned(),
            "unknown key ignored: rpc_prot".to_owned(),
        ]
    );
    assert_eq!(r.mooncake_keys, ["enable_ha", "rpc_port"]);
    let mut other = RawConfig::new();
    other.set("rpc_port", json!(1));
    let c = CliOverrides {
        other,
        ..CliOverrides::default()
    };
    let r = resolve(None, &c).unwrap();
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.mooncake_keys, ["rpc_port"]);
}

#[test]
fn defaults_match_the_documented_table() {
    let c = LivenessConfig::default();
    assert_eq!(c.active_ttl_ms, 10_000);
    assert_eq!(c.suspicion_ttl_ms, 20_000);
    assert_eq!(c.monitor_tick_ms, 100);
    assert_eq!(c.stall_bound_ms, 5_000);
    assert!(c.stall_brake);
    assert_eq!(c.offboarding_mode, OffboardingMode::Sync);
    assert_eq!(c.offboarding_workers, 1);
    assert_eq!(c.offboarding_batch_size, 64);
    assert_eq!(c.offboarding_retry_backoff_ms, 200);
    assert_eq!(c.offboarding_retry_max_backoff_ms, 5_000);
    assert_eq!(c.offboarding_rate_per_sec, 100.0);
    assert_eq!(c.offboarding_burst, 100);
    assert!(c.mass_suspicion_brake);
    assert_eq!(c.mass_suspicion_min_clients, 10);
    assert_eq!(c.mass_suspicion_fraction, 0.5);
    assert_eq!(c.shutdown_drain_ms, 5_000);
    c.validate().unwrap();
    let r = resolve(None, &CliOverrides::default()).unwrap();
    assert_eq!(r.config, c);
    assert!(r.warnings.is_empty());
    let v = serde_json::to_value(&c).unwrap();
    assert_eq!(v["offboarding_mode"], json!("sync"));
    assert_eq!(v["active_ttl_ms"], json!(10_000));
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/config").join(name)
}

/// The example files hold Mooncake's own keys beside ours: no warning, each Mooncake key named
/// in the summary.
fn no_warning_and_mooncake_keys_summarised(r: &Resolved) {
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    for key in ["rpc_port", "enable_ha", "cluster_id"] {
        assert!(
            r.mooncake_keys.iter().any(|k| k == key),
            "{:?} lacks {key}",
            r.mooncake_keys
        );
    }
}

#[test]
fn example_master_yaml_loads() {
    let raw = RawConfig::from_path(&example("master.yaml")).unwrap();
    let r = LivenessConfig::from_raw(&raw).unwrap();
    no_warning_and_mooncake_keys_summarised(&r);
    let c = &r.config;
    assert_eq!((c.active_ttl_ms, c.suspicion_ttl_ms), (60_000, 60_000));
    assert_eq!(c.stall_bound_ms, 30_000);
    assert_eq!(c.offboarding_mode, OffboardingMode::Async);
    assert_eq!(c.offboarding_workers, 2);
    // The same text through the string entry point.
    let text = std::fs::read_to_string(example("master.yaml")).unwrap();
    assert_eq!(RawConfig::from_yaml_str(&text).unwrap(), raw);
}

#[test]
fn example_master_json_loads() {
    let raw = RawConfig::from_path(&example("master.json")).unwrap();
    let r = LivenessConfig::from_raw(&raw).unwrap();
    no_warning_and_mooncake_keys_summarised(&r);
    let c = &r.config;
    assert_eq!((c.active_ttl_ms, c.suspicion_ttl_ms), (60_000, 60_000));
    assert_eq!(c.offboarding_mode, OffboardingMode::Sync);
    assert_eq!(c.mass_suspicion_fraction, 0.5);
    // A command line on top of the shipped file.
    let r = resolve(Some(&raw), &cli(Some(15.0), None, None)).unwrap();
    assert_eq!((r.config.active_ttl_ms, r.config.suspicion_ttl_ms), (15_000, 60_000));
    assert!(r.warnings.iter().any(|w| w.contains("--client_ttl=15")));
}

#[test]
fn legacy_yaml_file_resolves_like_upstream() {
    // The shape Mooncake shipped before the dual TTLs.
    let raw = RawConfig::from_yaml_str("rpc_port: 50051\nenable_ha: false\nclient_live_ttl_sec: 60\n").unwrap();
    let r = LivenessConfig::from_raw(&raw).unwrap();
    assert_eq!((r.config.active_ttl_ms, r.config.suspicion_ttl_ms), (60_000, 60_000));
}

/// A scratch file under the target directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str, text: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("config_aliases_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        Scratch(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn from_path_picks_the_format_by_extension() {
    let yml = Scratch::new("a.yml", "client_active_ttl_sec: 3\n");
    let conf_json = Scratch::new("b.conf", r#"{"client_active_ttl_sec": 4}"#);
    let conf_yaml = Scratch::new("c.conf", "client_active_ttl_sec: 5\n");
    for (s, want) in [(&yml, 3_000), (&conf_json, 4_000), (&conf_yaml, 5_000)] {
        let raw = RawConfig::from_path(&s.0).unwrap();
        assert_eq!(LivenessConfig::from_raw(&raw).unwrap().config.active_ttl_ms, want);
    }
    // YAML text in a .json file is a JSON error naming the file.
    let wrong = Scratch::new("d.json", "client_active_ttl_sec: 5\n");
    let err = RawConfig::from_path(&wrong.0).unwrap_err();
    assert!(matches!(err, ConfigError::Parse { format: "JSON", .. }), "{err:?}");
    assert!(err.to_string().contains("d.json"), "{err}");
    let bad = Scratch::new("e.yaml", "a: [1\n");
    let err = RawConfig::from_path(&bad.0).unwrap_err();
    assert!(matches!(err, ConfigError::Parse { format: "YAML", .. }), "{err:?}");
    let neither = Scratch::new("f.conf", "{{{");
    let err = RawConfig::from_path(&neither.0).unwrap_err();
    assert!(
        matches!(
            err,
            ConfigError::Parse {
                format: "JSON or YAML",
                ..
            }
        ),
        "{err:?}"
    );
    let missing = yml.0.with_file_name("does-not-exist.yaml");
    let err = RawConfig::from_path(&missing).unwrap_err();
    assert!(matches!(err, ConfigError::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("does-not-exist.yaml"), "{err}");
}

#[test]
fn replay_config_object_resolves_like_a_file() {
    let line: Value = serde_json::from_str(
        r#"{"config": {"client_active_ttl_sec": 10, "client_suspicion_ttl_sec": 20, "monitor_tick_ms": 100}}"#,
    )
    .unwrap();
    let raw = RawConfig::from_json_value(&line["config"]).unwrap();
    let r = LivenessConfig::from_raw(&raw).unwrap();
    assert_eq!(r.config, LivenessConfig::default());
    assert!(RawConfig::from_json_value(&json!([1, 2])).is_err());
}

#[test]
fn reload_swaps_and_rejects_invalid() {
    let handle = ConfigHandle::new(LivenessConfig::default());
    let before = handle.snapshot();
    assert_eq!(handle.load().active_ttl_ms, 10_000);

    let next = LivenessConfig::from_raw(&file(json!({"client_active_ttl_sec": 30})))
        .unwrap()
        .config;
    handle.reload(next.clone()).unwrap();
    assert_eq!(*handle.load(), next);
    assert_eq!(handle.snapshot().suspicion_ttl_ms, 30_000);
    assert_eq!(before.active_ttl_ms, 10_000, "an old snapshot is unchanged");

    for bad in [
        LivenessConfig {
            offboarding_workers: 0,
            ..next.clone()
        },
        LivenessConfig {
            active_ttl_ms: 0,
            ..next.clone()
        },
        LivenessConfig {
            mass_suspicion_fraction: f64::NAN,
            ..next.clone()
        },
        LivenessConfig {
            offboarding_retry_max_backoff_ms: 1,
            ..next.clone()
        },
    ] {
        assert!(handle.reload(bad).is_err());
        assert_eq!(*handle.load(), next, "a rejected reload keeps the current config");
    }
}

#[test]
fn readers_never_see_a_torn_config() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ConfigHandle>();

    let handle = std::sync::Arc::new(ConfigHandle::new(LivenessConfig::default()));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let h = handle.clone();
            std::thread::spawn(move || {
                for _ in 0..2_000 {
                    let c = h.load();
                    // Every published config keeps stall_bound = active / 2.
                    assert_eq!(c.stall_bound_ms * 2, c.active_ttl_ms);
                }
            })
        })
        .collect();
    for secs in 1..200u64 {
        let c = LivenessConfig::from_raw(&file(json!({ "client_active_ttl_sec": secs })))
            .unwrap()
            .config;
        handle.reload(c).unwrap();
    }
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(handle.load().active_ttl_ms, 199_000);
}

/// The `config_parse` fuzz body's path through the public API (the body itself,
/// `fuzzing::config_parse`, is smoke-run by `tests/fuzz_smoke.rs`): bytes → UTF-8 → JSON and
/// YAML → resolve as the file and as the command line. Must never panic.
fn fuzz_config_parse(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for raw in [RawConfig::from_json_str(text), RawConfig::from_yaml_str(text)]
        .into_iter()
        .flatten()
    {
        let _ = resolve(Some(&raw), &CliOverrides::default());
        let on_cli = CliOverrides {
            other: raw,
            ..CliOverrides::default()
        };
        let _ = resolve(None, &on_cli);
    }
}

fn any_json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        (-5.0f64..100.0).prop_map(Value::from),
        (0u64..200).prop_map(Value::from),
        ".{0,8}".prop_map(Value::String),
        Just(json!("async")),
    ]
}

fn any_key() -> impl Strategy<Value = String> {
    let known: Vec<String> = number_and_bool_keys()
        .iter()
        .chain(["offboarding_mode", "shutdown_drain_ms", "client_ttl", "rpc_port"].iter())
        .map(|k| k.to_string())
        .collect();
    prop_oneof![proptest::sample::select(known), "[a-z_]{1,12}"]
}

proptest! {
    #[test]
    fn parsers_never_panic_on_arbitrary_strings(s in any::<String>()) {
        fuzz_config_parse(s.as_bytes());
    }

    #[test]
    fn parsers_never_panic_on_config_like_text(s in "[a-z_:{}\\[\\]\",.0-9 \\n!&*~-]{0,80}") {
        fuzz_config_parse(s.as_bytes());
        let _ = RawConfig::from_json_str(&s).map(|r| LivenessConfig::from_raw(&r));
        let _ = RawConfig::from_yaml_str(&s).map(|r| LivenessConfig::from_raw(&r));
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64)) {
        fuzz_config_parse(&data);
    }

    #[test]
    fn resolved_configs_are_always_valid(
        file_map in proptest::collection::btree_map(any_key(), any_json_leaf(), 0..6),
        cli_map in proptest::collection::btree_map(any_key(), any_json_leaf(), 0..3),
        ttl in proptest::option::of(-2.0f64..100.0),
    ) {
        let f = file(Value::Object(file_map.into_iter().collect()));
        let c = CliOverrides {
            client_ttl: ttl,
            other: RawConfig::from_json_value(&Value::Object(cli_map.into_iter().collect())).unwrap(),
            ..CliOverrides::default()
        };
        if let Ok(r) = resolve(Some(&f), &c) {
            prop_assert!(r.config.validate().is_ok());
            prop_assert!(r.config.active_ttl_ms >= 1 && r.config.stall_bound_ms >= 1);
        }
    }

    #[test]
    fn integer_seconds_are_exact(secs in 1u64..=315_360_000) {
        let r = LivenessConfig::from_raw(&file(json!({"client_live_ttl_sec": secs}))).unwrap();
        prop_assert_eq!(r.config.active_ttl_ms, secs * 1000);
        prop_assert_eq!(r.config.suspicion_ttl_ms, secs * 1000);
    }

    #[test]
    fn fractional_seconds_round_to_the_nearest_ms(secs in 0.001f64..100_000.0) {
        let r = resolve(None, &cli(None, Some(secs), None)).unwrap();
        prop_assert_eq!(r.config.active_ttl_ms, (secs * 1000.0).round() as u64);
    }
}
