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
    for args in [&["--active-ttl", "-1"][..], &["--policy", "nope"], &["--clients", "0"]] {
        let out = bin().arg("simulate").args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: "), "{args:?}");
    }
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
