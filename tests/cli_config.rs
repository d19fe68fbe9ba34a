//! The binary's `config` and `simulate` subcommands, end to end.

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mooncake-liveness"))
}

fn example(name: &str) -> String {
    format!("{}/examples/config/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn flag_beats_file_with_a_warning() {
    let out = bin()
        .args(["config", "--config", &example("master.yaml"), "--client_ttl", "30"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let cfg: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cfg["active_ttl_ms"], 30_000);
    assert_eq!(
        cfg["suspicion_ttl_ms"], 60_000,
        "the file's explicit suspicion TTL stays"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--client_ttl=30 overrides config file client_active_ttl_sec=60"),
        "{err}"
    );
}

/// The first thing a Mooncake operator runs: the example master.yaml / master.json (Mooncake's
/// own keys beside ours) resolve with no warning, and Mooncake's keys are named in one line.
#[test]
fn the_example_master_files_resolve_without_a_warning() {
    let want = [
        (
            "master.yaml",
            "13 Mooncake master keys not used by the liveness core: cluster_id, default_kv_lease_ttl, \
          enable_ha, enable_metric_reporting, etcd_endpoints, eviction_high_watermark_ratio, eviction_ratio, \
          memory_allocator, metrics_port, rpc_address, rpc_enable_tcp_no_delay, rpc_port, rpc_thread_num\n",
        ),
        (
            "master.json",
            "11 Mooncake master keys not used by the liveness core: cluster_id, default_kv_lease_ttl, \
          enable_ha, enable_metric_reporting, etcd_endpoints, eviction_ratio, memory_allocator, metrics_port, \
          rpc_address, rpc_port, rpc_thread_num\n",
        ),
    ];
    for (file, summary) in want {
        let out = bin().args(["config", "--config", &example(file)]).output().unwrap();
        assert!(out.status.success(), "{file}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("warning"), "{file}: {err}");
        assert_eq!(err, summary, "{file}: the whole of standard error");
        let cfg: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(cfg["active_ttl_ms"], 60_000, "{file}");
    }
}

#[test]
fn a_misspelt_key_of_ours_is_warned_about_with_the_nearest_key() {
    let dir = std::env::temp_dir().join(format!("mooncake-liveness-typo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("master.yaml");
    std::fs::write(&file, "rpc_port: 50051\nclient_actve_ttl_sec: 30\nno_such_key: 1\n").unwrap();
    let out = bin()
        .args(["config", "--config"])
        .arg(&file)
        .args(["--set", "monitor_tik_ms=50"])
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            "warning: unknown key ignored: client_actve_ttl_sec (did you mean client_active_ttl_sec?)",
            "warning: unknown key ignored: no_such_key",
            "warning: unknown key ignored: --monitor_tik_ms (did you mean --monitor_tick_ms?)",
            "1 Mooncake master key not used by the liveness core: rpc_port",
        ]
    );
    let cfg: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cfg["active_ttl_ms"], 10_000, "the misspelt key is ignored");
}

#[test]
fn non_positive_flag_is_rejected_naming_key_and_value() {
    let out = bin().args(["config", "--client_ttl", "-3"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--client_ttl") && err.contains("-3"), "{err}");
}

#[test]
fn defaults_without_sources() {
    let out = bin().arg("config").output().unwrap();
    let cfg: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (cfg["active_ttl_ms"].as_u64(), cfg["suspicion_ttl_ms"].as_u64()),
        (Some(10_000), Some(20_000))
    );
}

#[test]
fn simulate_small_fleet_writes_its_report_and_is_deterministic() {
    let dir = std::env::temp_dir().join(format!("mooncake-liveness-sim-{}", std::process::id()));
    let run = |out: Option<&std::path::Path>| {
        let mut cmd = bin();
        cmd.args([
            "simulate",
            "--clients",
            "60",
            "--duration",
            "60",
            "--seed",
            "7",
            "--policy",
            "legacy,rfc+brakes",
        ]);
        if let Some(out) = out {
            cmd.arg("--out").arg(out);
        }
        cmd.output().unwrap()
    };
    let a = run(Some(&dir));
    let b = run(None);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let text = String::from_utf8_lossy(&a.stdout);
    assert!(text.contains("legacy") && text.contains("rfc+brakes"), "{text}");
    assert!(String::from_utf8_lossy(&b.stdout).starts_with(text.lines().next().unwrap()));
    for f in ["report.md", "report.json", "states.svg"] {
        assert!(dir.join(f).exists(), "{f} missing");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn simulate_rejects_bad_flags_with_exit_2() {
    for args in [
        &["--active-ttl", "-1"][..],
        &["--client_suspicion_ttl_sec", "0"],
        &["--set", "monitor_tick_ms=0.5"],
        &["--policy", "nope"],
        &["--clients", "0"],
    ] {
        let out = bin().arg("simulate").args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: "), "{args:?}");
    }
    // Resolution's own message, naming the key (`--active-ttl` is an alias of it).
    let out = bin().args(["simulate", "--active-ttl", "-1"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err, "error: --client_active_ttl_sec must be > 0, got -1\n");
}

/// `simulate` resolves its configuration through the same door as `config` (and the master):
/// the same file and flags give the same TTLs, the same stall bound, the same notes.
#[test]
fn simulate_resolves_its_configuration_as_config_does() {
    let args = [
        "--config",
        &example("master.yaml"),
        "--active-ttl",
        "5",
        "--set",
        "mass_suspicion_min_clients=3",
    ];
    let out = bin().arg("config").args(args).output().unwrap();
    assert!(out.status.success());
    let cfg: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&cfg["active_ttl_ms"], &cfg["suspicion_ttl_ms"], &cfg["stall_bound_ms"]),
        (&5_000.into(), &60_000.into(), &2_500.into()),
        "the flag over the file; the file's suspicion TTL; half the resolved active TTL"
    );
    let sim = bin()
        .arg("simulate")
        .args(args)
        .args(["--clients", "20", "--duration", "20", "--policy", "legacy,rfc", "--out"])
        .arg(std::env::temp_dir().join(format!("mooncake-liveness-simcfg-{}", std::process::id())))
        .output()
        .unwrap();
    assert!(sim.status.success(), "{}", String::from_utf8_lossy(&sim.stderr));
    assert_eq!(sim.stderr, out.stderr, "the same warnings and summary");
    let dir = std::env::temp_dir().join(format!("mooncake-liveness-simcfg-{}", std::process::id()));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let ttls: Vec<(f64, f64)> = report["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["active_ttl_s"].as_f64().unwrap(),
                p["suspicion_ttl_s"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(ttls[1], (5.0, 60.0), "rfc runs the resolved TTLs: {ttls:?}");
    assert_eq!(
        ttls[0].0, 5.0,
        "legacy's client_ttl is the resolved active TTL: {ttls:?}"
    );
}

#[test]
fn replay_writes_prometheus_metrics_on_request() {
    let trace = format!(
        "{}/examples/traces/offboarding_barrier.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = std::env::temp_dir().join(format!("mooncake-liveness-metrics-{}.prom", std::process::id()));
    let status = bin()
        .args(["replay", &trace, "--metrics"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    assert!(
        text.contains("# TYPE mooncake_liveness_transitions_total counter"),
        "{text}"
    );
    assert!(
        text.contains(r#"mooncake_liveness_offboarding_step_failures_total{step="segments"} 2"#),
        "{text}"
    );
    assert!(
        text.contains("mooncake_liveness_offboarding_jobs_completed_total 1"),
        "{text}"
    );
}
