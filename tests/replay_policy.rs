//! `replay --policy legacy|rfc` and the `block_heartbeats` op.
//!
//! - Every example trace with a `NAME.legacy.expected.jsonl` sibling replays under
//!   `--policy legacy` to exactly that file (library and binary); `--policy rfc` prints exactly
//!   what the default prints (`NAME.expected.jsonl`, pinned by `tests/sim_replay.rs`).
//! - `block_heartbeats` as the trace contract specifies: held pings are applied at `T + D`, in
//!   input order, after the ticks `<= T + D` and before any line at or after `T + D`; their echo
//!   carries `T + D`; other ops apply at their own time; ticks are never late.
//!
//! `REPLAY_BLESS=1 cargo test --test replay_policy` rewrites the legacy expected files.
#![cfg(not(loom))]

use mooncake_liveness::sim::{replay_policy, ReplayError, ReplayPolicy};
use std::path::{Path, PathBuf};
use std::process::Command;

fn traces_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/traces")
}

/// `(trace, legacy expected)` for every trace that has a legacy expected file, sorted.
fn legacy_traces() -> Vec<(PathBuf, PathBuf)> {
    let mut out: Vec<(PathBuf, PathBuf)> = std::fs::read_dir(traces_dir())
        .expect("examples/traces")
        .map(|e| e.expect("dir entry").path())
        .filter_map(|p| {
            let name = p
                .file_name()?
                .to_str()?
                .strip_suffix(".legacy.expected.jsonl")?
                .to_string();
            Some((p.with_file_name(format!("{name}.jsonl")), p))
        })
        .collect();
    out.sort();
    out
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn run(policy: ReplayPolicy, trace: &str) -> (String, Option<ReplayError>) {
    let mut out = Vec::new();
    let err = replay_policy(trace.as_bytes(), &mut out, policy, |_| {}).err();
    (String::from_utf8(out).expect("UTF-8"), err)
}

fn ok(policy: ReplayPolicy, trace: &str) -> Vec<String> {
    let (out, err) = run(policy, trace);
    assert!(err.is_none(), "{err:?}");
    out.lines().map(str::to_string).collect()
}

fn bin(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mooncake-liveness"))
        .args(args)
        .output()
        .expect("run the binary")
}

#[test]
fn legacy_example_traces_match_their_expected_output() {
    let traces = legacy_traces();
    assert!(
        traces.len() >= 4,
        "expected at least 4 legacy traces, found {}",
        traces.len()
    );
    for (trace, expected) in traces {
        let (out, err) = run(ReplayPolicy::Legacy, &read(&trace));
        assert!(err.is_none(), "{}: {err:?}", trace.display());
        if std::env::var_os("REPLAY_BLESS").is_some() {
            std::fs::write(&expected, &out).expect("bless");
            continue;
        }
        assert_eq!(read(&expected), out, "{} (library)", trace.display());
        let o = bin(&["replay", "--policy", "legacy", trace.to_str().expect("path")]);
        assert!(
            o.status.success(),
            "{}: {}",
            trace.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(
            read(&expected),
            String::from_utf8_lossy(&o.stdout),
            "{} (binary)",
            trace.display()
        );
    }
}

#[test]
fn policy_rfc_is_the_default_byte_for_byte() {
    let mut n = 0;
    for entry in std::fs::read_dir(traces_dir()).expect("examples/traces") {
        let path = entry.expect("dir entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
        if !name.ends_with(".jsonl") || name.ends_with(".expected.jsonl") {
            continue;
        }
        let o = bin(&["replay", "--policy", "rfc", path.to_str().expect("path")]);
        assert!(o.status.success(), "{name}");
        assert_eq!(
            read(&path.with_extension("expected.jsonl")),
            String::from_utf8_lossy(&o.stdout),
            "{name}"
        );
        n += 1;
    }
    assert!(n >= 8, "only {n} traces");
}

#[test]
fn an_unknown_policy_is_a_usage_error_naming_it() {
    let trace = traces_dir().join("offline_timeline.jsonl");
    let o = bin(&["replay", "--policy", "main", trace.to_str().expect("path")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("main"));
}

#[test]
fn legacy_refuses_ops_it_does_not_model_as_malformed_lines() {
    let trace = "{\"t_ms\": 0, \"op\": \"mount\", \"client\": \"c\", \"segment\": \"s\", \"size\": 1}\n\
                 {\"t_ms\": 5, \"op\": \"snapshot\"}\n";
    let (out, err) = run(ReplayPolicy::Legacy, trace);
    match err {
        Some(ReplayError::Malformed { line: 2, message }) => assert!(message.contains("snapshot"), "{message}"),
        other => panic!("expected line 2 malformed, got {other:?}"),
    }
    assert_eq!(out.lines().count(), 1);
}

const MOUNT_C1: &str = "{\"config\": {\"client_active_ttl_sec\": 10, \"client_suspicion_ttl_sec\": 20}}\n\
    {\"t_ms\": 0, \"op\": \"mount\", \"client\": \"c1\", \"segment\": \"s1\", \"size\": 1024}\n";

#[test]
fn held_pings_apply_at_the_end_in_input_order_after_its_ticks() {
    // Last signal at 0, so the tick at 10000 = T + D commits Suspected; the held pings follow
    // it (ticks <= T + D run first), recover c1 and echo with t_ms 10000, before the line at 10000.
    let trace = format!(
        "{MOUNT_C1}{}",
        [
            r#"{"t_ms": 1000, "op": "block_heartbeats", "ms": 9000}"#,
            r#"{"t_ms": 1000, "op": "ping", "client": "c1"}"#,
            r#"{"t_ms": 2000, "op": "mount", "client": "c2", "segment": "s2", "size": 1024}"#,
            r#"{"t_ms": 9999, "op": "ping", "client": "c2"}"#,
            r#"{"t_ms": 10000, "op": "query", "client": "c1"}"#,
        ]
        .join("\n")
    );
    let lines = ok(ReplayPolicy::Rfc, &trace);
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle} in {lines:#?}"))
    };
    let mount2 = at(r#""t_ms":2000,"op":"mount","client":"c2""#);
    let suspected =
        at(r#""t_ms":10000,"event":"transition","client":"c1","incarnation":1,"from":"Active","to":"Suspected""#);
    let recovered =
        at(r#""t_ms":10000,"event":"transition","client":"c1","incarnation":1,"from":"Suspected","to":"Active""#);
    let ping1 = at(r#""t_ms":10000,"op":"ping","client":"c1""#);
    let ping2 = at(r#""t_ms":10000,"op":"ping","client":"c2""#);
    let query = at(r#""t_ms":10000,"op":"query""#);
    assert!(mount2 < suspected && suspected < recovered && recovered < ping1 && ping1 < ping2 && ping2 < query);
    assert!(lines[query].contains(r#""state":"Active""#), "{}", lines[query]);
    assert!(
        !lines.iter().any(|l| l.contains("stall_detected")),
        "ticks are never late"
    );
    assert!(
        !lines.iter().any(|l| l.contains(r#""t_ms":1000,"op":"ping""#)),
        "the ping was held"
    );
}

#[test]
fn a_block_shorter_than_both_ttls_suspects_but_never_offboards_under_rfc_and_expires_under_legacy() {
    let mut trace = MOUNT_C1.to_string();
    trace.push_str("{\"t_ms\": 0, \"op\": \"remount\", \"client\": \"c1\", \"segments\": [{\"segment\": \"s1\", \"size\": 1024}]}\n");
    trace.push_str("{\"t_ms\": 500, \"op\": \"block_heartbeats\", \"ms\": 25000}\n");
    for t in (1000..=40_000).step_by(1000) {
        trace.push_str(&format!("{{\"t_ms\": {t}, \"op\": \"ping\", \"client\": \"c1\"}}\n"));
    }
    let rfc = ok(ReplayPolicy::Rfc, &trace);
    assert!(rfc.iter().any(|l| l.contains(
        r#""t_ms":10000,"event":"transition","client":"c1","incarnation":1,"from":"Active","to":"Suspected""#
    )));
    assert!(rfc.iter().any(|l| l.contains(
        r#""t_ms":25500,"event":"transition","client":"c1","incarnation":1,"from":"Suspected","to":"Active""#
    )));
    assert!(!rfc.iter().any(|l| l.contains("Offline") || l.contains("offboarded")));
    let legacy = ok(ReplayPolicy::Legacy, &trace);
    // Mount and ReMount at 0 are drained by the tick at 1000: deadline 11000.
    assert!(
        legacy
            .iter()
            .any(|l| l == r#"{"t_ms":11000,"event":"expired","client":"c1","segments":["s1"],"objects_lost":0}"#),
        "{legacy:#?}"
    );
    assert!(legacy
        .iter()
        .any(|l| l == r#"{"t_ms":25500,"op":"ping","client":"c1","ok":true,"status":"NEED_REMOUNT"}"#));
}

#[test]
fn held_pings_are_released_at_the_end_of_input() {
    let trace = format!(
        "{MOUNT_C1}{}\n{}\n",
        r#"{"t_ms": 100, "op": "block_heartbeats", "ms": 400}"#, r#"{"t_ms": 200, "op": "ping", "client": "c1"}"#
    );
    let lines = ok(ReplayPolicy::Rfc, &trace);
    assert_eq!(
        lines.last().map(String::as_str),
        Some(r#"{"t_ms":500,"op":"ping","client":"c1","ok":true,"status":"NEED_REMOUNT"}"#)
    );
}

#[test]
fn overlapping_blocks_extend_to_the_later_end() {
    let trace = format!(
        "{MOUNT_C1}{}",
        [
            r#"{"t_ms": 100, "op": "block_heartbeats", "ms": 400}"#,
            r#"{"t_ms": 200, "op": "ping", "client": "c1"}"#,
            r#"{"t_ms": 300, "op": "block_heartbeats", "ms": 700}"#,
            r#"{"t_ms": 600, "op": "ping", "client": "c1"}"#,
            r#"{"t_ms": 1000, "op": "advance"}"#,
        ]
        .join("\n")
    );
    let lines = ok(ReplayPolicy::Rfc, &trace);
    let pings: Vec<&String> = lines.iter().filter(|l| l.contains(r#""op":"ping""#)).collect();
    assert_eq!(pings.len(), 2);
    assert!(pings.iter().all(|l| l.starts_with(r#"{"t_ms":1000,"#)), "{pings:?}");
}

#[test]
fn a_stall_inside_a_block_is_malformed() {
    let trace = format!(
        "{MOUNT_C1}{}\n{}\n",
        r#"{"t_ms": 100, "op": "block_heartbeats", "ms": 400}"#, r#"{"t_ms": 200, "op": "stall", "ms": 100}"#
    );
    match run(ReplayPolicy::Rfc, &trace).1 {
        Some(ReplayError::Malformed { line: 4, message }) => assert!(message.contains("heartbeat block"), "{message}"),
        other => panic!("expected line 4 malformed, got {other:?}"),
    }
}

/// `stall` with `wake_ms`: the monitor, asleep through the stall, ticks again at `t_ms + wake_ms`
/// and every tick after that (the real masters' monitors wake when the process resumes); under
/// both policies. Without it the next tick is the first tick time at or after the stall's end.
#[test]
fn a_stall_with_wake_ms_restarts_the_ticks_at_the_wake() {
    let lines = |policy, wake: &str| {
        let trace = format!(
            "{{\"config\": {{\"client_active_ttl_sec\": 3, \"client_suspicion_ttl_sec\": 4, \"monitor_tick_ms\": 1000, \"stall_brake\": false}}}}\n\
             {{\"t_ms\": 100, \"op\": \"mount\", \"client\": \"c\", \"segment\": \"s\", \"size\": 10}}\n\
             {{\"t_ms\": 1500, \"op\": \"stall\", \"ms\": 5000{wake}}}\n\
             {{\"t_ms\": 11000, \"op\": \"advance\"}}\n"
        );
        ok(policy, &trace)
    };
    let woke = lines(ReplayPolicy::Rfc, ", \"wake_ms\": 5250");
    assert!(woke[1].ends_with(r#""ms":5000,"wake_ms":5250,"ok":true}"#), "{woke:?}");
    assert!(woke[2].starts_with(r#"{"t_ms":6750,"event":"transition""#), "{woke:?}");
    // The ticks after the wake keep its phase: Offline a suspicion TTL after the commit.
    assert!(
        woke[3].starts_with(r#"{"t_ms":10750,"event":"transition""#) && woke[3].contains("Offline"),
        "{woke:?}"
    );
    let plain = lines(ReplayPolicy::Rfc, "");
    assert!(
        plain[2].starts_with(r#"{"t_ms":7000,"event":"transition""#),
        "{plain:?}"
    );
    let legacy = lines(ReplayPolicy::Legacy, ", \"wake_ms\": 5250");
    assert!(legacy[2].starts_with(r#"{"t_ms":6750,"event":"expired""#), "{legacy:?}");
    let legacy_plain = lines(ReplayPolicy::Legacy, "");
    assert!(
        legacy_plain[2].starts_with(r#"{"t_ms":7000,"event":"expired""#),
        "{legacy_plain:?}"
    );
}

#[test]
fn a_wake_before_the_stall_ends_is_malformed() {
    let trace = "{\"t_ms\": 1500, \"op\": \"stall\", \"ms\": 5000, \"wake_ms\": 4999}\n";
    let (_, err) = run(ReplayPolicy::Rfc, trace);
    let msg = err.expect("malformed").to_string();
    assert!(
        msg.starts_with("line 1:") && msg.contains("wake_ms") && msg.contains("4999"),
        "{msg}"
    );
}
