//! `replay` end to end: every example trace against its expected output (library and binary),
//! malformed traces (exit 2, `line N`, nothing printed after the bad line), determinism, and a
//! property test that no input panics the replayer.
//!
//! `REPLAY_BLESS=1 cargo test --test sim_replay` rewrites the expected files from the current
//! output; read every changed line against the trace format before keeping them.
#![cfg(not(loom))]

use mooncake_liveness::sim::{replay, replay_policy, ReplayError, ReplayPolicy};
use proptest::prelude::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn traces_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/traces")
}

/// The `*.jsonl` traces of `dir` (not the `*.expected.jsonl` files), sorted.
fn traces_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".jsonl") && !name.ends_with(".expected.jsonl")
        })
        .collect();
    out.sort();
    out
}

fn expected_path(trace: &Path) -> PathBuf {
    trace.with_extension("expected.jsonl")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Replays `input` through the library: the output, and the error if any.
fn run_lib(input: &[u8]) -> (String, Option<ReplayError>) {
    let mut out = Vec::new();
    let err = replay(input, &mut out).err();
    (String::from_utf8(out).expect("output is UTF-8"), err)
}

/// A readable diff: the first differing line with its neighbours, and the line counts.
fn diff(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let first = e
        .iter()
        .zip(&a)
        .position(|(x, y)| x != y)
        .unwrap_or(e.len().min(a.len()));
    let mut msg = format!(
        "expected {} lines, got {}; first difference at output line {}\n",
        e.len(),
        a.len(),
        first + 1
    );
    for i in first.saturating_sub(2)..(first + 3).min(e.len().max(a.len())) {
        let (x, y) = (
            e.get(i).copied().unwrap_or("<none>"),
            a.get(i).copied().unwrap_or("<none>"),
        );
        if x == y {
            msg.push_str(&format!("  {:>3}   {x}\n", i + 1));
        } else {
            msg.push_str(&format!("  {:>3} - {x}\n  {:>3} + {y}\n", i + 1, i + 1));
        }
    }
    msg
}

fn check_expected(trace: &Path, actual: &str) {
    let path = expected_path(trace);
    if std::env::var_os("REPLAY_BLESS").is_some() {
        std::fs::write(&path, actual).expect("write expected output");
        return;
    }
    let expected = read(&path);
    assert!(
        expected == actual,
        "{} does not match {}:\n{}",
        trace.display(),
        path.display(),
        diff(&expected, actual)
    );
}

fn bin(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mooncake-liveness"))
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the binary");
    if let Some(bytes) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(bytes)
            .expect("write stdin");
    }
    child.wait_with_output().expect("binary output")
}

#[test]
fn example_traces_match_their_expected_output() {
    let traces = traces_in(&traces_dir());
    assert!(
        traces.len() >= 8,
        "expected at least 8 example traces, found {}",
        traces.len()
    );
    for trace in traces {
        let (out, err) = run_lib(read(&trace).as_bytes());
        assert!(err.is_none(), "{}: {:?}", trace.display(), err);
        check_expected(&trace, &out);
    }
}

#[test]
fn replay_is_deterministic() {
    for trace in traces_in(&traces_dir()) {
        let input = read(&trace);
        let (a, _) = run_lib(input.as_bytes());
        let (b, _) = run_lib(input.as_bytes());
        assert_eq!(a, b, "{}: two runs differ", trace.display());
    }
}

#[test]
fn binary_reads_a_file_or_stdin_and_writes_stdout_or_a_file() {
    let trace = traces_dir().join("gc_pause_no_loss.jsonl");
    let expected = read(&expected_path(&trace));
    let path = trace.to_str().expect("UTF-8 path");

    let from_file = bin(&["replay", path], None);
    assert!(from_file.status.success(), "{from_file:?}");
    assert_eq!(String::from_utf8_lossy(&from_file.stdout), expected);

    let from_stdin = bin(&["replay", "-"], Some(read(&trace).as_bytes()));
    assert!(from_stdin.status.success(), "{from_stdin:?}");
    assert_eq!(from_stdin.stdout, from_file.stdout);

    let out = std::env::temp_dir().join(format!("sim_replay_{}.jsonl", std::process::id()));
    let to_file = bin(&["replay", path, "--output", out.to_str().expect("UTF-8 path")], None);
    assert!(to_file.status.success(), "{to_file:?}");
    assert!(to_file.stdout.is_empty());
    assert_eq!(read(&out), expected);
    let _ = std::fs::remove_file(out);
}

/// The line number in a message `... line N: ...`.
fn line_number(stderr: &str) -> usize {
    let rest = &stderr[stderr.find("line ").expect("`line N` in the message") + 5..];
    rest.chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .expect("a line number")
}

#[test]
fn malformed_traces_exit_2_and_print_nothing_after_the_bad_line() {
    let dir = traces_dir().join("malformed");
    let traces = traces_in(&dir);
    assert!(!traces.is_empty());
    for trace in traces {
        let want = read(&trace.with_extension("expected_error"));
        let out = bin(&["replay", trace.to_str().expect("UTF-8 path")], None);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(2), "{}: {stderr}", trace.display());
        assert!(
            stderr.contains(want.trim()),
            "{}: stderr {stderr:?} lacks {want:?}",
            trace.display()
        );
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line on stderr: {stderr:?}");

        let bad = line_number(&stderr);
        let input = read(&trace);
        // Nothing after the bad line: the output equals that of the lines before it.
        let before: String = input.lines().take(bad - 1).map(|l| format!("{l}\n")).collect();
        let (prefix_out, prefix_err) = run_lib(before.as_bytes());
        assert!(prefix_err.is_none(), "{}: {prefix_err:?}", trace.display());
        assert_eq!(
            stdout,
            prefix_out,
            "{}: output beyond line {}",
            trace.display(),
            bad - 1
        );
        check_expected(&trace, &stdout);

        match run_lib(input.as_bytes()) {
            (lib_out, Some(ReplayError::Malformed { line, .. })) => {
                assert_eq!(line, bad, "{}", trace.display());
                assert_eq!(lib_out, stdout, "{}", trace.display());
            }
            other => panic!("{}: expected Malformed, got {other:?}", trace.display()),
        }
    }
}

#[test]
fn errors_name_the_line() {
    let cases: [(&str, usize, &str); 5] = [
        ("{\"t_ms\":0,\"op\":\"advance\"}\nnot json\n", 2, "invalid JSON"),
        ("\n{\"t_ms\":0,\"op\":\"ping\"}\n", 2, "missing field \"client\""),
        (
            "{\"t_ms\":0,\"op\":\"put\",\"key\":\"k\",\"size\":1,\"replicas\":true}",
            1,
            "\"replicas\"",
        ),
        ("{\"t_ms\":0,\"op\":\"advance\"}\n{\"config\":{}}", 2, "first line"),
        (
            "{\"t_ms\":0,\"op\":\"fail_step\",\"step\":\"quota\"}",
            1,
            "missing field \"times\"",
        ),
    ];
    for (input, want_line, want) in cases {
        match run_lib(input.as_bytes()) {
            (_, Some(e @ ReplayError::Malformed { line, .. })) => {
                assert_eq!(line, want_line, "{input:?}: {e}");
                let text = e.to_string();
                assert!(text.starts_with(&format!("line {want_line}: ")), "{text}");
                assert!(text.contains(want), "{input:?}: {text}");
            }
            other => panic!("{input:?}: {other:?}"),
        }
    }
}

#[test]
fn invalid_utf8_is_a_malformed_line() {
    let (_, err) = run_lib(b"{\"t_ms\":0,\"op\":\"advance\"}\n\xff\xfe\n");
    assert!(matches!(err, Some(ReplayError::Malformed { line: 2, .. })), "{err:?}");
}

#[test]
fn huge_sizes_do_not_panic() {
    let max = u64::MAX;
    let trace = format!(
        "{{\"t_ms\":0,\"op\":\"mount\",\"client\":\"c1\",\"segment\":\"s1\",\"size\":{max}}}\n\
         {{\"t_ms\":0,\"op\":\"mount\",\"client\":\"c2\",\"segment\":\"s2\",\"size\":{max}}}\n\
         {{\"t_ms\":0,\"op\":\"put\",\"key\":\"k\",\"size\":{max},\"replicas\":2}}\n"
    );
    let (_, err) = run_lib(trace.as_bytes());
    assert!(err.is_none());
}

/// A JSON-ish trace line: mostly well-formed ops with random fields, sometimes junk.
fn line_strategy() -> impl Strategy<Value = String> {
    let ops = prop::sample::select(vec![
        "mount",
        "remount",
        "unmount",
        "ping",
        "mount_local_disk",
        "put",
        "put_end",
        "put_revoke",
        "get",
        "remove",
        "copy",
        "move",
        "fetch_tasks",
        "task_done",
        "drain",
        "offload_heartbeat",
        "promote",
        "query",
        "snapshot",
        "failover",
        "advance",
        "stall",
        "block_heartbeats",
        "fail_step",
        "pong",
    ]);
    let value = prop_oneof![
        prop::sample::select(vec!["c1", "c2", "s1", "s2", "k1", "k2", "metadata", "quota"])
            .prop_map(|s| format!("{s:?}")),
        // Sizes stay far below u64::MAX: huge ones hit the master bug `huge_sizes_do_not_panic` pins.
        (0u64..(1 << 40)).prop_map(|n| n.to_string()),
        (0u64..8).prop_map(|n| n.to_string()),
        Just("true".to_string()),
        Just("null".to_string()),
        Just("-1".to_string()),
        Just("1.5".to_string()),
        Just("[{\"segment\":\"s1\",\"size\":64}]".to_string()),
        Just("[]".to_string()),
    ];
    let fields = prop::sample::select(vec![
        "client", "segment", "size", "segments", "capacity", "key", "replicas", "to", "task", "ok", "ms", "step",
        "times",
    ]);
    let op_line = (0u64..5_000, ops, prop::collection::vec((fields, value), 0..5)).prop_map(|(t, op, fields)| {
        let mut s = format!("{{\"t_ms\":{t},\"op\":\"{op}\"");
        for (k, v) in fields {
            s.push_str(&format!(",\"{k}\":{v}"));
        }
        s.push('}');
        s
    });
    prop_oneof![
        8 => op_line,
        1 => Just("{\"config\":{\"client_active_ttl_sec\":1,\"client_suspicion_ttl_sec\":1}}".to_string()),
        1 => "[ -~]{0,40}",
    ]
}

/// Makes `t_ms` non-decreasing most of the time, so that traces get past the first lines.
fn monotone(lines: Vec<String>) -> String {
    let mut t = 0u64;
    let mut out = String::new();
    for (i, line) in lines.into_iter().enumerate() {
        let line = match line.strip_prefix("{\"t_ms\":") {
            Some(rest) if i % 7 != 6 => {
                t += 250;
                let digits = rest.chars().take_while(char::is_ascii_digit).count();
                format!("{{\"t_ms\":{t}{}", &rest[digits..])
            }
            _ => line,
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = run_lib(&bytes);
    }

    #[test]
    fn random_json_lines_never_panic(lines in prop::collection::vec(line_strategy(), 0..40)) {
        let input = monotone(lines);
        for policy in [ReplayPolicy::Rfc, ReplayPolicy::Legacy] {
            let mut out = Vec::new();
            let err = replay_policy(input.as_bytes(), &mut out, policy, |_| {}).err();
            let out = String::from_utf8(out).expect("output is UTF-8");
            // Every output line is a JSON object with t_ms first.
            for line in out.lines() {
                prop_assert!(line.starts_with("{\"t_ms\":"), "{}", line);
                prop_assert!(serde_json::from_str::<serde_json::Value>(line).is_ok(), "{}", line);
            }
            if let Some(e) = err {
                prop_assert!(matches!(e, ReplayError::Malformed { .. }), "{}", e);
            }
        }
    }
}
