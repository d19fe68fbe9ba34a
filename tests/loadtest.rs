//! `mooncake-liveness loadtest`, end to end on tiny sizes: every scenario under both designs
//! runs, writes one JSON object per run with the pinned field names, and one SVG per run.

use std::path::PathBuf;
use std::process::Command;

const FIELDS: [&str; 20] = [
    "scenario",
    "design",
    "ping_thread",
    "serve_order",
    "threads",
    "seed",
    "ping_interval_ms",
    "active_ttl_ms",
    "keys",
    "walk_ms",
    "storm_walk",
    "ops",
    "ops_per_s",
    "latency_us",
    "phase_latency_us",
    "ping_gap_ms",
    "false_suspected",
    "false_offline",
    "keys_lost",
    "rss_bytes",
];

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loadtest-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("tmp dir");
    dir
}

fn tiny(ping_thread: &str, dir: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mooncake-liveness"))
        .args([
            "loadtest",
            "--scenario",
            "all",
            "--design",
            "both",
            "--ping-thread",
            ping_thread,
        ])
        .args([
            "--keys",
            "2000",
            "--victim-keys",
            "2000",
            "--clients",
            "40",
            "--segment-clients",
            "4",
        ])
        .args(["--joiners", "3", "--duration-s", "1", "--threads", "2", "--quiet"])
        .args([
            "--ping-interval-ms",
            "20",
            "--active-ttl-ms",
            "200",
            "--suspicion-ttl-ms",
            "400",
        ])
        .arg("--json")
        .arg(dir.join("runs.json"))
        .arg("--out")
        .arg(dir)
        .output()
        .expect("run the binary")
}

fn check_runs(dir: &std::path::Path, ping_thread: &str) {
    let text = std::fs::read_to_string(dir.join("runs.json")).expect("json written");
    let runs: serde_json::Value = serde_json::from_str(&text).expect("valid json");
    let runs = runs.as_array().expect("one array of runs");
    assert_eq!(runs.len(), 8, "4 scenarios x 2 designs");
    let mut seen = Vec::new();
    for run in runs {
        let obj = run.as_object().expect("object per run");
        let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        keys.sort_unstable();
        let mut want = FIELDS.to_vec();
        want.sort_unstable();
        assert_eq!(keys, want);
        for kind in ["put", "get", "remove", "ping", "mount"] {
            for q in ["p50", "p99", "p999", "max"] {
                assert!(run["latency_us"][kind][q].is_u64(), "latency_us.{kind}.{q} in {run}");
            }
        }
        let scenario = run["scenario"].as_str().expect("scenario");
        let phased = scenario == "offboard-big" || scenario == "snapshot";
        assert_eq!(run["phase_latency_us"].is_object(), phased, "{scenario}");
        if phased {
            for phase in ["before", "during"] {
                assert!(run["phase_latency_us"][phase]["get"]["p99"].is_u64());
            }
        }
        assert!(run["ping_gap_ms"]["p99"].is_number() && run["ping_gap_ms"]["max"].is_number());
        assert!(run["ops"].as_u64().expect("ops") > 0, "the data plane ran: {run}");
        assert!(
            run["latency_us"]["ping"]["max"].as_u64().expect("ping") > 0,
            "pings ran"
        );
        assert!(run["rss_bytes"].as_u64().expect("rss") > 0);
        assert_eq!(run["ping_thread"], ping_thread);
        assert_eq!(run["ping_interval_ms"], 20);
        if scenario == "join-storm" {
            assert!(
                run["latency_us"]["mount"]["max"].as_u64().expect("mount") > 0,
                "joiners remounted"
            );
        }
        let design = run["design"].as_str().expect("design").to_string();
        assert!(dir.join(format!("{scenario}-{design}.svg")).exists());
        seen.push((scenario.to_string(), design));
    }
    for scenario in ["steady", "join-storm", "offboard-big", "snapshot"] {
        for design in ["ours", "upstream-main"] {
            assert!(
                seen.contains(&(scenario.to_string(), design.to_string())),
                "{scenario}/{design}"
            );
        }
    }
}

#[test]
fn every_scenario_runs_tiny_under_both_designs_with_a_dedicated_ping_thread() {
    let dir = tmp("dedicated");
    let out = tiny("dedicated", &dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("join-storm") && table.contains("upstream-main"),
        "{table}"
    );
    check_runs(&dir, "dedicated");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_scenario_runs_tiny_with_pings_on_the_worker_pool() {
    let dir = tmp("shared");
    let out = tiny("shared", &dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    check_runs(&dir, "shared");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_values_are_refused_naming_the_flag() {
    let out = Command::new(env!("CARGO_BIN_EXE_mooncake-liveness"))
        .args(["loadtest", "--ping-interval-ms", "5000", "--quiet"])
        .output()
        .expect("run the binary");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--ping-interval-ms"));
}

/// The fields of one table row, with every number replaced by `#` (its shape). A duration
/// keeps that it is one: the table prints `123us` below 10 ms and `12.3ms` above.
fn shape(row: &str) -> Vec<String> {
    row.split_whitespace()
        .map(|f| {
            let unit: String = f.chars().skip_while(|c| c.is_ascii_digit() || *c == '.').collect();
            match unit.as_str() {
                _ if unit.len() == f.len() => f.to_string(),
                "us" | "ms" => "#time".to_string(),
                _ => format!("#{unit}"),
            }
        })
        .collect()
}

/// README.md's load-test tables (the fenced blocks after `<!-- loadtest-output -->`) are what
/// the binary prints now: the same header, and rows of the same shape (scenario, design, ping
/// setup, then numbers with the same units) as a row the binary prints.
#[test]
fn the_readme_shows_the_table_the_binary_prints() {
    let dir = tmp("readme");
    let out = tiny("shared", &dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8_lossy(&out.stdout).to_string();
    let header = printed.lines().next().expect("a header line");
    let row_shapes: Vec<Vec<String>> = printed
        .lines()
        .skip(1)
        .filter(|l| !l.trim_start().starts_with("p99"))
        .map(shape)
        .collect();
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README.md");
    let mut blocks = 0;
    for part in readme.split("<!-- loadtest-output -->").skip(1) {
        let block = part
            .split("```")
            .nth(1)
            .expect("a fenced block after the marker")
            .trim_start_matches("text")
            .trim();
        let mut lines = block.lines();
        assert_eq!(lines.next(), Some(header), "README header differs from the binary's");
        for line in lines {
            let s = shape(line);
            let same = row_shapes
                .iter()
                .any(|r| r.len() == s.len() && r.iter().zip(&s).skip(3).all(|(a, b)| a == b));
            assert!(
                same,
                "README row {line:?} has no counterpart of its shape in:\n{printed}"
            );
            assert!(
                ["ours", "upstream-main"].contains(&s[1].as_str()) && ["dedicated", "shared"].contains(&s[2].as_str()),
                "{line:?}"
            );
        }
        blocks += 1;
    }
    assert!(blocks > 0, "README.md shows no load-test output block");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Without `--ping-thread` each design runs its own setup: ours on a thread of its own,
/// upstream-main on the worker pool (upstream main has no heartbeat server).
#[test]
fn each_design_pings_its_own_way_by_default() {
    let dir = tmp("defaults");
    let out = Command::new(env!("CARGO_BIN_EXE_mooncake-liveness"))
        .args(["loadtest", "--scenario", "steady", "--design", "both", "--quiet"])
        .args([
            "--keys",
            "1000",
            "--clients",
            "20",
            "--segment-clients",
            "2",
            "--duration-s",
            "1",
        ])
        .args([
            "--ping-interval-ms",
            "20",
            "--active-ttl-ms",
            "200",
            "--suspicion-ttl-ms",
            "400",
        ])
        .arg("--json")
        .arg(dir.join("runs.json"))
        .output()
        .expect("run the binary");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let runs: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("runs.json")).expect("json")).expect("valid json");
    let setups: Vec<(String, String)> = runs
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| (r["design"].to_string(), r["ping_thread"].to_string()))
        .collect();
    assert_eq!(
        setups,
        vec![
            ("\"ours\"".to_string(), "\"dedicated\"".to_string()),
            ("\"upstream-main\"".to_string(), "\"shared\"".to_string())
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
