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

struct Case {
    name: &'static str,
    file: Option<Value>,
    cli: CliOverrides,
    active_ms: u64,
    suspicion_ms: u64,
    /// One entry per expected warning: substrings that warning must contain.
    warnings: &'static [&'static [&'static str]],
}

#[test]
fn ttl_resolution_table() {
    let none = || cli(None, None, None);
    let cases = [
        Case {
            name: "defaults",
            file: None,
            cli: none(),
            active_ms: 10_000,
            suspicion_ms: 20_000,
            warnings: &[],
        },
        Case {
            name: "empty file is defaults",
            file: Some(json!({})),
            cli: none(),
            active_ms: 10_000,
            suspicion_ms: 20_000,
            warnings: &[],
        },
        Case {
            name: "file legacy only",
            file: Some(json!({"client_live_ttl_sec": 60})),
            cli: none(),
            active_ms: 60_000,
            suspicion_ms: 60_000,
            warnings: &[],
        },
        Case {
            name: "--client_ttl only",
            file: None,
            cli: cli(Some(60.0), None, None),
            active_ms: 60_000,
            suspicion_ms: 60_000,
            warnings: &[],
        },
        Case {
            name: "file canonical only",
            file: Some(json!({"client_active_ttl_sec": 30})),
            cli: none(),
            active_ms: 30_000,
            suspicion_ms: 30_000,
            warnings: &[],
        },
        Case {
            name: "--client_active_ttl_sec only",
            file: None,
            cli: cli(None, Some(30.0), None),
            active_ms: 30_000,
            suspicion_ms: 30_000,
            warnings: &[],
        },
        Case {
            name: "file suspicion only",
            file: Some(json!({"client_suspicion_ttl_sec": 5})),
            cli: none(),
            active_ms: 10_000,
            suspicion_ms: 5_000,
            warnings: &[],
        },
        Case {
            name: "--client_suspicion_ttl_sec only",
            file: None,
            cli: cli(None, None, Some(5.0)),
            active_ms: 10_000,
            suspicion_ms: 5_000,
            warnings: &[],
        },
        Case {
            name: "file canonical and legacy differ: canonical wins, warned",
            file: Some(json!({"client_active_ttl_sec": 30, "client_live_ttl_sec": 60})),
            cli: none(),
            active_ms: 30_000,
            suspicion_ms: 30_000,
            warnings: &[&["client_active_ttl_sec=30", "client_live_ttl_sec=60", "config file"]],
        },
        Case {
            name: "file canonical and legacy equal: no warning",
            file: Some(json!({"client_active_ttl_sec": 30, "client_live_ttl_sec": 30.0})),
            cli: none(),
            active_ms: 30_000,
            suspicion_ms: 30_000,
            warnings: &[],
        },
        Case {
            name: "command-line canonical and legacy differ: canonical wins, warned",
            file: None,
            cli: cli(Some(60.0), Some(40.0), None),
            active_ms: 40_000,
            suspicion_ms: 40_000,
            warnings: &[&["--client_active_ttl_sec=40", "--client_ttl=60", "command line"]],
        },
        Case {
            name: "command line beats file, warned",
            file: Some(json!({"client_active_ttl_sec": 30})),
            cli: cli(None, Some(40.0), None),
            active_ms: 40_000,
            suspicion_ms: 40_000,
            warnings: &[&["--client_active_ttl_sec=40", "client_active_ttl_sec=30", "overrides"]],
        },
        Case {
            name: "command line equal to file: no warning",
            file: Some(json!({"client_active_ttl_sec": 30})),
            cli: cli(None, Some(30.0), None),
            active_ms: 30_000,
            suspicion_ms: 30_000,
            warnings: &[],
        },
        Case {
            name: "command-line legacy beats file canonical",
            file: Some(json!({"client_active_ttl_sec": 30})),
            cli: cli(Some(50.0), None, None),
            active_ms: 50_000,
            suspicion_ms: 50_000,
            warnings: &[&["--client_ttl=50", "client_active_ttl_sec=30", "overrides"]],
        },
        Case {
            name: "command-line legacy beats file legacy",
            file: Some(json!({"client_live_ttl_sec": 30})),
            cli: cli(Some(50.0), None, None),
            active_ms: 50_000,
            suspicion_ms: 50_000,
            warnings: &[&["--client_ttl=50", "client_live_ttl_sec=30"]],
        },
        Case {
            name: "both sources conflict internally and with each other",
            file: Some(json!({"client_active_ttl_sec": 30, "client_live_ttl_sec": 60})),
            cli: cli(Some(50.0), Some(40.0), None),
            active_ms: 40_000,
            suspicion_ms: 40_000,
            warnings: &[
                &["client_active_ttl_sec=30", "client_live_ttl_sec=60", "config file"],
                &["--client_active_ttl_sec=40", "--client_ttl=50", "command line"],
                &["--client_active_ttl_sec=40", "overrides", "client_active_ttl_sec=30"],
            ],
        },
        Case {
            name: "file active, command-line suspicion",
            file: Some(json!({"client_active_ttl_sec": 30})),
            cli: cli(None, None, Some(7.0)),
            active_ms: 30_000,
            suspicion_ms: 7_000,
            warnings: &[],
        },
        Case {
            name: "file suspicion, command-line active",
            file: Some(json!({"client_suspicion_ttl_sec": 25})),
            cli: cli(None, Some(40.0), None),
            active_ms: 40_000,
            suspicion_ms: 25_000,
            warnings: &[],
        },
        Case {
            name: "command-line suspicion beats file suspicion",
            file: Some(json!({"client_suspicion_ttl_sec": 25})),
            cli: cli(None, None, Some(35.0)),
            active_ms: 10_000,
            suspicion_ms: 35_000,
            warnings: &[&["--client_suspicion_ttl_sec=35", "client_suspicion_ttl_sec=25"]],
        },
        Case {
            name: "file legacy and suspicion",
            file: Some(json!({"client_live_ttl_sec": 60, "client_suspicion_ttl_sec": 90})),
            cli: none(),
            active_ms: 60_000,
            suspicion_ms: 90_000,
            warnings: &[],
        },
        Case {
            name: "fractional seconds in a file",
            file: Some(json!({"client_active_ttl_sec": 0.5, "client_suspicion_ttl_sec": 1.25})),
            cli: none(),
            active_ms: 500,
            suspicion_ms: 1_250,
            warnings: &[],
        },
        Case {
            name: "fractional --client_ttl is inherited by suspicion",
            file: None,
            cli: cli(Some(2.5), None, None),
            active_ms: 2_500,
            suspicion_ms: 2_500,
            warnings: &[],
        },
        Case {
            name: "smallest TTL: 1 ms",
            file: Some(json!({"client_active_ttl_sec": 0.001})),
            cli: none(),
            active_ms: 1,
            suspicion_ms: 1,
            warnings: &[],
        },
    ];
    for case in cases {
        let r = run(case.file, &case.cli).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let c = &r.config;
        assert_eq!(
            (c.active_ttl_ms, c.suspicion_ttl_ms),
            (case.active_ms, case.suspicion_ms),
            "{}",
            case.name
        );
        assert_eq!(
            c.stall_bound_ms,
            (case.active_ms / 2).max(1),
            "{}: stall bound derives from the resolved active TTL",
            case.name
        );
        assert_eq!(r.warnings.len(), case.warnings.len(), "{}: {:?}", case.name, r.warnings);
        for (got, want) in r.warnings.iter().zip(case.warnings) {
            for part in *want {
                assert!(got.contains(part), "{}: {got:?} lacks {part:?}", case.name);
            }
        }
    }
}

#[test]
fn each_ttl_input_rejects_non_positive_values() {
    let none = || cli(None, None, None);
    let cases = [
        (
            Some(json!({"client_active_ttl_sec": -5})),
            none(),
            "client_active_ttl_sec must be > 0, got -5",
        ),
        (
            Some(json!({"client_active_ttl_sec": 0})),
            none(),
            "client_active_ttl_sec must be > 0, got 0",
        ),
        (
            Some(json!({"client_live_ttl_sec": 0})),
            none(),
            "client_live_ttl_sec must be > 0, got 0",
        ),
        (
            Some(json!({"client_live_ttl_sec": -0.5})),
            none(),
            "client_live_ttl_sec must be > 0, got -0.5",
        ),
        (
            None,
            cli(None, Some(-1.5), None),
            "--client_active_ttl_sec must be > 0, got -1.5",
        ),
        (
            None,
            cli(None, Some(0.0), None),
            "--client_active_ttl_sec must be > 0, got 0",
        ),
        (None, cli(Some(0.0), None, None), "--client_ttl must be > 0, got 0"),
        (None, cli(Some(-60.0), None, None), "--client_ttl must be > 0, got -60"),
        (
            Some(json!({"client_suspicion_ttl_sec": -5})),
            none(),
            "client_suspicion_ttl_sec must be > 0, got -5",
        ),
        (
            Some(json!({"client_suspicion_ttl_sec": 0.0})),
            none(),
            "client_suspicion_ttl_sec must be > 0, got 0.0",
        ),
        (
            None,
            cli(None, None, Some(-2.0)),
            "--client_suspicion_ttl_sec must be > 0, got -2",
        ),
        (
            None,
            cli(None, None, Some(0.0)),
            "--client_suspicion_ttl_sec must be > 0, got 0",
        ),
        // Rejected even when another value would override them.
        (
            Some(json!({"client_active_ttl_sec": 30, "client_live_ttl_sec": -1})),
            none(),
            "client_live_ttl_sec must be > 0, got -1",
        ),
        (
            Some(json!({"client_active_ttl_sec": 0})),
            cli(None, Some(30.0), None),
            "client_active_ttl_sec must be > 0, got 0",
        ),
        (
            Some(json!({"client_live_ttl_sec": -7})),
            cli(Some(30.0), None, None),
            "client_live_ttl_sec must be > 0, got -7",
        ),
        (
            None,
            cli(Some(-1.0), Some(30.0), None),
            "--client_ttl must be > 0, got -1",
        ),
        (
            Some(json!({"client_suspicion_ttl_sec": -3})),
            cli(None, None, Some(5.0)),
            "client_suspicion_ttl_sec must be > 0, got -3",
        ),
    ];
    for (file_v, cli, want) in cases {
        let err = run(file_v, &cli).expect_err(want);
        assert!(matches!(err, ConfigError::NonPositive { .. }), "{want}: {err:?}");
        assert!(err.to_string().contains(want), "{err} lacks {want}");
    }
}

const TTL_KEYS: [&str; 3] = [
    "client_active_ttl_sec",
    "client_live_ttl_sec",
    "client_suspicion_ttl_sec",
];
const NUMBER_KEYS: [&str; 13] = [
    "client_active_ttl_sec",
    "client_live_ttl_sec",
    "client_suspicion_ttl_sec",
    "monitor_tick_ms",
    "stall_bound_ms",
    "offboarding_workers",
    "offboarding_batch_size",
    "offboarding_retry_backoff_ms",
    "offboarding_retry_max_backoff_ms",
    "offboarding_rate_per_sec",
    "offboarding_burst",
    "mass_suspicion_min_clients",
    "mass_suspicion_fraction",
];
const BOOL_KEYS: [&str; 2] = ["stall_brake", "mass_suspicion_brake"];

#[test]
fn wrong_types_are_rejected_with_key_and_value() {
    let mut cases: Vec<(&str, Value)> = Vec::new();
    for key in NUMBER_KEYS.iter().chain(["shutdown_drain_ms"].iter()) {
        for v in [json!("10"), json!(true), json!({"sec": 10}), json!([10]), json!(null)] {
            cases.push((key, v));
        }
    }
    for key in BOOL_KEYS {
        for v in [json!("true"), json!(1), json!({}), json!(null)] {
            cases.push((key, v));
        }
    }
    for v in [json!(1), json!(true), json!(["sync"])] {
        cases.push(("offboarding_mode", v));
    }
    for (key, v) in cases {
        let err = run(Some(json!({ key: v.clone() })), &cli(None, None, None)).expect_err(key);
        assert!(matches!(err, ConfigError::WrongType { .. }), "{key}={v}: {err:?}");
        let msg = err.to_string();
        assert!(msg.starts_with(key), "{msg}");
        assert!(msg.ends_with(&format!("got {v}")), "{msg} lacks {v}");
        // The same value on the command line names the flag.
        let mut other = RawConfig::new();
        other.set(key, v.clone());
        let on_cli = CliOverrides {
            other,
            ..CliOverrides::default()
        };
        let msg = resolve(None, &on_cli).expect_err(key).to_string();
        assert!(msg.starts_with(&format!("--{key} ")), "{msg}");
    }
}

#[test]
fn out_of_range_values_are_rejected_with_key_and_value() {
    let cases = [
        (
            json!({"offboarding_workers": 0}),
            "offboarding_workers must be > 0, got 0",
        ),
        (
            json!({"offboarding_batch_size": 0}),
            "offboarding_batch_size must be > 0, got 0",
        ),
        (json!({"offboarding_burst": 0}), "offboarding_burst must be > 0, got 0"),
        (
            json!({"mass_suspicion_min_clients": 0}),
            "mass_suspicion_min_clients must be > 0, got 0",
        ),
        (json!({"monitor_tick_ms": 0}), "monitor_tick_ms must be > 0, got 0"),
        (
            json!({"monitor_tick_ms": -100}),
            "monitor_tick_ms must be > 0, got -100",
        ),
        (
            json!({"monitor_tick_ms": 100.5}),
            "monitor_tick_ms must be a whole number, got 100.5",
        ),
        (json!({"stall_bound_ms": 0}), "stall_bound_ms must be > 0, got 0"),
        (json!({"shutdown_drain_ms": 0}), "shutdown_drain_ms must be > 0, got 0"),
        (
            json!({"offboarding_retry_backoff_ms": 0}),
            "offboarding_retry_backoff_ms must be > 0, got 0",
        ),
        (
            json!({"offboarding_rate_per_sec": 0}),
            "offboarding_rate_per_sec must be > 0, got 0",
        ),
        (
            json!({"offboarding_rate_per_sec": -2.5}),
            "offboarding_rate_per_sec must be > 0, got -2.5",
        ),
        (
            json!({"mass_suspicion_fraction": 0}),
            "mass_suspicion_fraction must be in (0, 1], got 0",
        ),
        (
            json!({"mass_suspicion_fraction": 1.5}),
            "mass_suspicion_fraction must be in (0, 1], got 1.5",
        ),
        (
            json!({"mass_suspicion_fraction": -0.1}),
            "mass_suspicion_fraction must be in (0, 1], got -0.1",
        ),
        (
            json!({"offboarding_mode": "eager"}),
            "offboarding_mode must be \"sync\" or \"async\", got \"eager\"",
        ),
        (
            json!({"client_active_ttl_sec": 0.0001}),
            "client_active_ttl_sec must be at least 0.001 s (1 ms), got 0.0001",
        ),
        (
            json!({"client_active_ttl_sec": 1e12}),
            "client_active_ttl_sec must be at most",
        ),
        (
            json!({"offboarding_retry_backoff_ms": 500, "offboarding_retry_max_backoff_ms": 200}),
            "offboarding_retry_max_backoff_ms must be >= offboarding_retry_backoff_ms, \
             got offboarding_retry_max_backoff_ms 200 < offboarding_retry_backoff_ms 500",
        ),
        (
            json!({"offboarding_retry_backoff_ms": 6000}),
            "got offboarding_retry_max_backoff_ms 5000 < offboarding_retry_backoff_ms 6000",
        ),
    ];
    for (v, want) in cases {
        let err = run(Some(v.clone()), &cli(None, None, None)).expect_err(want);
        assert!(err.to_string().contains(want), "{v}: {err}");
    }
    // Edges that are valid.
    let r = run(
        Some(
            json!({"mass_suspicion_fraction": 1, "offboarding_retry_max_backoff_ms": 200,
                    "monitor_tick_ms": 100.0, "offboarding_rate_per_sec": 0.5}),
        ),
        &cli(None, None, None),
    )
    .unwrap();
    assert_eq!(r.config.mass_suspicion_fraction, 1.0);
    assert_eq!(r.config.offboarding_retry_max_backoff_ms, 200);
    assert_eq!(r.config.monitor_tick_ms, 100);
    assert_eq!(r.config.offboarding_rate_per_sec, 0.5);
}

#[test]
fn yaml_non_finite_numbers_are_rejected() {
    for key in TTL_KEYS
        .iter()
        .chain(["offboarding_rate_per_sec", "mass_suspicion_fraction", "monitor_tick_ms"].iter())
    {
        for (lit, shown) in [(".nan", "NaN"), (".inf", "inf"), ("-.inf", "-inf")] {
            let raw = RawConfig::from_yaml_str(&format!("{key}: {lit}\n")).unwrap();
            let err = LivenessConfig::from_raw(&raw).expect_err(key);
            assert!(matches!(err, ConfigError::NotFinite { .. }), "{err:?}");
            assert_eq!(err.to_string(), format!("{key} must be a finite number, got {shown}"));
        }
    }
    let err = resolve(None, &cli(None, Some(f64::INFINITY), None)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "--client_active_ttl_sec must be a finite number, got inf"
    );
}

#[test]
fn command_line_beats_file_for_other_keys() {
    let f = file(
        json!({"monitor_tick_ms": 100, "offboarding_mode": "sync", "stall_brake": true,
                        "mass_suspicion_fraction": 0.4}),
    );
    let mut other = RawConfig::new();
    other.set("monitor_tick_ms", json!(50));
    other.set("offboarding_mode", json!("async"));
    other.set("stall_brake", json!(true));
    other.set("offboarding_workers", json!(4));
    let c = CliOverrides {
        other,
        ..CliOverrides::default()
    };
    let r = resolve(Some(&f), &c).unwrap();
    assert_eq!(r.config.monitor_tick_ms, 50);
    assert_eq!(r.config.offboarding_mode, OffboardingMode::Async);
    assert!(r.config.stall_brake);
    assert_eq!(r.config.offboarding_workers, 4);
    assert_eq!(r.config.mass_suspicion_fraction, 0.4);
    assert_eq!(
        r.warnings,
        vec![
            "command line --monitor_tick_ms=50 overrides config file monitor_tick_ms=100".to_owned(),
            "command line --offboarding_mode=\"async\" overrides config file offboarding_mode=\"sync\"".to_owned(),
        ]
    );
    // The backoff order is checked after merging the two sources.
    let f = file(json!({"offboarding_retry_backoff_ms": 1000}));
    let mut other = RawConfig::new();
    other.set("offboarding_retry_max_backoff_ms", json!(500));
    let c = CliOverrides {
        other,
        ..CliOverrides::default()
    };
    assert!(matches!(
        resolve(Some(&f), &c).unwrap_err(),
        ConfigError::BackoffOrder {
            backoff_ms: 1000,
            max_backoff_ms: 500
        }
    ));
}

#[test]
fn stall_bound_derives_from_the_resolved_active_ttl() {
    let r = run(Some(json!({"client_active_ttl_sec": 30})), &cli(Some(8.0), None, None)).unwrap();
    assert_eq!(r.config.stall_bound_ms, 4_000);
    let r = run(
        Some(json!({"client_active_ttl_sec": 30, "stall_bound_ms": 700})),
        &cli(None, None, None),
    )
    .unwrap();
    assert_eq!(r.config.stall_bound_ms, 700);
}

#[test]
fn unknown_keys_are_ignored_with_a_warning_and_matched_exactly() {
    let r = run(
        Some(json!({"rpc_port": 50051, "enable_ha": false, "Client_Active_TTL_Sec": 30})),
        &cli(None, None, None),
    )
    .unwrap();
    assert_eq!(r.config, LivenessConfig::default());
    assert_eq!(
        r.warnings,
        vec![
            "unknown key ignored: Client_Active_TTL_Sec".to_owned(),
            "unknown key ignored: enable_ha".to_owned(),
            "unknown key ignored: rpc_port".to_owned(),
        ]
    );
    let mut other = RawConfig::new();
    other.set("rpc_port", json!(1));
    let c = CliOverrides {
        other,
        ..CliOverrides::default()
    };
    assert_eq!(
        resolve(None, &c).unwrap().warnings,
        vec!["unknown key ignored: --rpc_port".to_owned()]
    );
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

fn only_unknown_key_warnings(r: &Resolved) {
    for w in &r.warnings {
        assert!(w.starts_with("unknown key ignored: "), "{w}");
    }
    for key in ["rpc_port", "enable_ha", "cluster_id"] {
        let want = format!("unknown key ignored: {key}");
        assert!(r.warnings.contains(&want), "{:?} lacks {want}", r.warnings);
    }
}

#[test]
fn example_master_yaml_loads() {
    let raw = RawConfig::from_path(&example("master.yaml")).unwrap();
    let r = LivenessConfig::from_raw(&raw).unwrap();
    only_unknown_key_warnings(&r);
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
    only_unknown_key_warnings(&r);
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
    let known: Vec<String> = NUMBER_KEYS
        .iter()
        .chain(BOOL_KEYS.iter())
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
