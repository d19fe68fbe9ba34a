//! Trace lines → typed [`OpLine`]s. Everything that makes a line malformed is found here, before
//! anything is applied: JSON syntax, unknown ops, missing or wrongly typed fields, `t_ms` order
//! and the end of a `stall`.

use crate::config::MAX_DURATION_MS;
use crate::master::SegmentSpec;
use crate::offboarding::Step;
use serde_json::{Map, Value};

/// What a malformed line is reported as (the caller adds the line number).
pub(super) type ParseResult<T> = Result<T, String>;

/// One operation of the trace, with its fields typed. Optional fields keep `None` when the line
/// left them out, so that the output echoes exactly what was given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Mount {
        client: String,
        segment: String,
        size: u64,
    },
    Remount {
        client: String,
        segments: Vec<SegmentSpec>,
    },
    Unmount {
        client: String,
        segment: String,
    },
    Ping {
        client: String,
    },
    MountLocalDisk {
        client: String,
        capacity: u64,
    },
    Put {
        key: String,
        size: u64,
        replicas: Option<u64>,
    },
    PutEnd {
        key: String,
    },
    PutRevoke {
        key: String,
    },
    Get {
        key: String,
    },
    Remove {
        key: String,
    },
    Copy {
        key: String,
        to: String,
    },
    Move {
        key: String,
        to: String,
    },
    FetchTasks {
        client: String,
    },
    TaskDone {
        client: String,
        task: u64,
        ok: Option<bool>,
    },
    Drain {
        segment: String,
    },
    OffloadHeartbeat {
        client: String,
    },
    Promote {
        key: String,
    },
    Query {
        client: Option<String>,
        segment: Option<String>,
    },
    Snapshot,
    Failover,
    Advance,
    Stall {
        ms: u64,
        /// When the monitor ticks again, ms after `t_ms` (at least `ms`): a monitor thread that
        /// slept through the stall wakes when the master resumes, and its later ticks follow
        /// from then. `None`: the first tick time at or after the stall's end.
        wake_ms: Option<u64>,
    },
    BlockHeartbeats {
        ms: u64,
    },
    FailStep {
        step: Step,
        times: u32,
    },
}

impl Op {
    /// The op's name as written in traces.
    pub(super) fn name(&self) -> &'static str {
        match self {
            Op::Mount { .. } => "mount",
            Op::Remount { .. } => "remount",
            Op::Unmount { .. } => "unmount",
            Op::Ping { .. } => "ping",
            Op::MountLocalDisk { .. } => "mount_local_disk",
            Op::Put { .. } => "put",
            Op::PutEnd { .. } => "put_end",
            Op::PutRevoke { .. } => "put_revoke",
            Op::Get { .. } => "get",
            Op::Remove { .. } => "remove",
            Op::Copy { .. } => "copy",
            Op::Move { .. } => "move",
            Op::FetchTasks { .. } => "fetch_tasks",
            Op::TaskDone { .. } => "task_done",
            Op::Drain { .. } => "drain",
            Op::OffloadHeartbeat { .. } => "offload_heartbeat",
            Op::Promote { .. } => "promote",
            Op::Query { .. } => "query",
            Op::Snapshot => "snapshot",
            Op::Failover => "failover",
            Op::Advance => "advance",
            Op::Stall { .. } => "stall",
            Op::BlockHeartbeats { .. } => "block_heartbeats",
            Op::FailStep { .. } => "fail_step",
        }
    }
}

/// A parsed operation line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct OpLine {
    pub(super) t_ms: u64,
    pub(super) op: Op,
}

/// What a line is: the configuration object (first line only) or an operation.
#[derive(Debug)]
pub(super) enum Line {
    Config(Value),
    Op(OpLine),
}

/// Line-to-line state of the parser: the ordering rules span lines.
#[derive(Debug, Default)]
pub(super) struct Parser {
    seen_line: bool,
    prev_t_ms: Option<u64>,
    /// `(line, end)` of the last line's `stall`, if it was one.
    stall: Option<(usize, u64)>,
    /// Fields of the last line that the parser did not know (ignored, for warnings).
    pub(super) unknown_fields: Vec<String>,
}

impl Parser {
    /// Parses line `n` (1-based) of the trace; `text` is the line without its newline.
    pub(super) fn line(&mut self, n: usize, text: &str) -> ParseResult<Line> {
        self.unknown_fields.clear();
        let value: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
        let Value::Object(map) = value else {
            return Err(format!("expected a JSON object, got {}", kind(&value)));
        };
        let first = !std::mem::replace(&mut self.seen_line, true);
        if map.contains_key("config") {
            return self.config(first, map);
        }
        let op = self.op_line(n, &map)?;
        Ok(Line::Op(op))
    }

    fn config(&mut self, first: bool, mut map: Map<String, Value>) -> ParseResult<Line> {
        if !first {
            return Err("a \"config\" line is only allowed as the first line".into());
        }
        if let Some(other) = map.keys().find(|k| *k != "config") {
            return Err(format!("unexpected field {other:?} on the config line"));
        }
        let config = map.remove("config").unwrap_or(Value::Null);
        if !config.is_object() {
            return Err(format!("field \"config\" must be an object, got {}", kind(&config)));
        }
        Ok(Line::Config(config))
    }

    fn op_line(&mut self, n: usize, map: &Map<String, Value>) -> ParseResult<OpLine> {
        let f = Fields { map };
        let t_ms = f.u64("t_ms")?;
        if t_ms > MAX_DURATION_MS {
            return Err(format!(
                "field \"t_ms\" must be at most {MAX_DURATION_MS} (10 years), got {t_ms}"
            ));
        }
        let name = f.str("op")?;
        let op = parse_op(&f, &name)?;
        self.check_order(t_ms)?;
        self.stall = match op {
            Op::Stall { ms, .. } => Some((n, t_ms + ms)),
            _ => None,
        };
        self.prev_t_ms = Some(t_ms);
        self.unknown_fields = unknown_fields(&op, map);
        Ok(OpLine { t_ms, op })
    }

    fn check_order(&self, t_ms: u64) -> ParseResult<()> {
        if let Some(prev) = self.prev_t_ms.filter(|prev| t_ms < *prev) {
            return Err(format!("t_ms {t_ms} is before the previous line's {prev}"));
        }
        if let Some((line, end)) = self.stall.filter(|(_, end)| t_ms < *end) {
            return Err(format!(
                "t_ms {t_ms} is inside the stall of line {line}, which lasts until {end}"
            ));
        }
        Ok(())
    }
}

fn parse_op(f: &Fields<'_>, name: &str) -> ParseResult<Op> {
    Ok(match name {
        "mount" => Op::Mount {
            client: f.str("client")?,
            segment: f.str("segment")?,
            size: f.u64("size")?,
        },
        "remount" => Op::Remount {
            client: f.str("client")?,
            segments: f.segments("segments")?,
        },
        "unmount" => Op::Unmount {
            client: f.str("client")?,
            segment: f.str("segment")?,
        },
        "ping" => Op::Ping {
            client: f.str("client")?,
        },
        "mount_local_disk" => Op::MountLocalDisk {
            client: f.str("client")?,
            capacity: f.u64("capacity")?,
        },
        "put" => Op::Put {
            key: f.str("key")?,
            size: f.u64("size")?,
            replicas: f.replicas("replicas")?,
        },
        "put_end" => Op::PutEnd { key: f.str("key")? },
        "put_revoke" => Op::PutRevoke { key: f.str("key")? },
        "get" => Op::Get { key: f.str("key")? },
        "remove" => Op::Remove { key: f.str("key")? },
        "copy" => Op::Copy {
            key: f.str("key")?,
            to: f.str("to")?,
        },
        "move" => Op::Move {
            key: f.str("key")?,
            to: f.str("to")?,
        },
        "fetch_tasks" => Op::FetchTasks {
            client: f.str("client")?,
        },
        "task_done" => Op::TaskDone {
            client: f.str("client")?,
            task: f.u64("task")?,
            ok: f.opt_bool("ok")?,
        },
        "drain" => Op::Drain {
            segment: f.str("segment")?,
        },
        "offload_heartbeat" => Op::OffloadHeartbeat {
            client: f.str("client")?,
        },
        "promote" => Op::Promote { key: f.str("key")? },
        "query" => Op::Query {
            client: f.opt_str("client")?,
            segment: f.opt_str("segment")?,
        },
        "snapshot" => Op::Snapshot,
        "failover" => Op::Failover,
        "advance" => Op::Advance,
        "stall" => {
            let ms = f.duration("ms")?;
            let wake_ms = f.opt_duration("wake_ms")?;
            if let Some(w) = wake_ms.filter(|w| *w < ms) {
                return Err(format!("field \"wake_ms\" ({w}) must be at least \"ms\" ({ms})"));
            }
            Op::Stall { ms, wake_ms }
        }
        "block_heartbeats" => Op::BlockHeartbeats { ms: f.duration("ms")? },
        "fail_step" => Op::FailStep {
            step: f.step("step")?,
            times: f.u32("times")?,
        },
        other => return Err(format!("unknown op {other:?}")),
    })
}

/// The input fields each op reads, besides `t_ms` and `op`.
pub(super) fn known_fields(op: &Op) -> &'static [&'static str] {
    match op {
        Op::Mount { .. } => &["client", "segment", "size"],
        Op::Remount { .. } => &["client", "segments"],
        Op::Unmount { .. } => &["client", "segment"],
        Op::Ping { .. } | Op::FetchTasks { .. } | Op::OffloadHeartbeat { .. } => &["client"],
        Op::MountLocalDisk { .. } => &["client", "capacity"],
        Op::Put { .. } => &["key", "size", "replicas"],
        Op::PutEnd { .. } | Op::PutRevoke { .. } | Op::Get { .. } => &["key"],
        Op::Remove { .. } | Op::Promote { .. } => &["key"],
        Op::Copy { .. } | Op::Move { .. } => &["key", "to"],
        Op::TaskDone { .. } => &["client", "task", "ok"],
        Op::Drain { .. } => &["segment"],
        Op::Query { .. } => &["client", "segment"],
        Op::Snapshot | Op::Failover | Op::Advance => &[],
        Op::Stall { .. } => &["ms", "wake_ms"],
        Op::BlockHeartbeats { .. } => &["ms"],
        Op::FailStep { .. } => &["step", "times"],
    }
}

fn unknown_fields(op: &Op, map: &Map<String, Value>) -> Vec<String> {
    let known = known_fields(op);
    map.keys()
        .filter(|k| *k != "t_ms" && *k != "op" && !known.contains(&k.as_str()))
        .cloned()
        .collect()
}

/// Typed access to one line's fields, with the error messages of the trace format.
struct Fields<'a> {
    map: &'a Map<String, Value>,
}

impl Fields<'_> {
    fn get(&self, key: &str) -> ParseResult<&Value> {
        self.map.get(key).ok_or_else(|| format!("missing field {key:?}"))
    }

    fn opt(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn str(&self, key: &str) -> ParseResult<String> {
        as_str(key, self.get(key)?)
    }

    fn opt_str(&self, key: &str) -> ParseResult<Option<String>> {
        self.opt(key).map(|v| as_str(key, v)).transpose()
    }

    fn u64(&self, key: &str) -> ParseResult<u64> {
        as_u64(key, self.get(key)?)
    }

    fn u32(&self, key: &str) -> ParseResult<u32> {
        let n = self.u64(key)?;
        u32::try_from(n).map_err(|_| format!("field {key:?} must be at most {}, got {n}", u32::MAX))
    }

    fn opt_u64(&self, key: &str) -> ParseResult<Option<u64>> {
        self.opt(key).map(|v| as_u64(key, v)).transpose()
    }

    /// An optional replica count, at most the master's [`MAX_REPLICAS`](crate::master::MAX_REPLICAS)
    /// (a larger one is a bad value, named with its line, not a request to allocate on every
    /// segment; 0 stays the master's `INVALID_PARAMS` answer, as the real master gives it).
    fn replicas(&self, key: &str) -> ParseResult<Option<u64>> {
        let n = self.opt_u64(key)?;
        let max = crate::master::MAX_REPLICAS as u64;
        match n {
            Some(n) if n > max => Err(format!("field {key:?} must be at most {max}, got {n}")),
            _ => Ok(n),
        }
    }

    fn opt_duration(&self, key: &str) -> ParseResult<Option<u64>> {
        self.opt(key).map(|_| self.duration(key)).transpose()
    }

    fn duration(&self, key: &str) -> ParseResult<u64> {
        let ms = self.u64(key)?;
        if ms > MAX_DURATION_MS {
            return Err(format!(
                "field {key:?} must be at most {MAX_DURATION_MS} (10 years), got {ms}"
            ));
        }
        Ok(ms)
    }

    fn opt_bool(&self, key: &str) -> ParseResult<Option<bool>> {
        match self.opt(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(format!("field {key:?} must be a boolean, got {}", kind(other))),
        }
    }

    fn step(&self, key: &str) -> ParseResult<Step> {
        let name = self.str(key)?;
        Step::ALL.into_iter().find(|s| s.as_str() == name).ok_or_else(|| {
            let names: Vec<&str> = Step::ALL.iter().map(|s| s.as_str()).collect();
            format!("field {key:?} must be one of {}, got {name:?}", names.join(", "))
        })
    }

    fn segments(&self, key: &str) -> ParseResult<Vec<SegmentSpec>> {
        let Value::Array(items) = self.get(key)? else {
            return Err(format!(
                "field {key:?} must be an array of {{\"segment\", \"size\"}} objects"
            ));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let Value::Object(map) = item else {
                    return Err(format!("field {key:?}[{i}] must be an object, got {}", kind(item)));
                };
                let f = Fields { map };
                let at = |e: String| format!("{key:?}[{i}]: {e}");
                Ok(SegmentSpec {
                    segment: f.str("segment").map_err(at)?,
                    size: f.u64("size").map_err(at)?,
                })
            })
            .collect()
    }
}

fn as_str(key: &str, v: &Value) -> ParseResult<String> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("field {key:?} must be a string, got {}", kind(v)))
}

fn as_u64(key: &str, v: &Value) -> ParseResult<u64> {
    v.as_u64()
        .ok_or_else(|| format!("field {key:?} must be a non-negative integer, got {v}"))
}

/// A JSON value's kind, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn parse(lines: &[&str]) -> Vec<ParseResult<Line>> {
        let mut p = Parser::default();
        lines.iter().enumerate().map(|(i, l)| p.line(i + 1, l)).collect()
    }

    fn err(lines: &[&str]) -> String {
        parse(lines)
            .into_iter()
            .find_map(Result::err)
            .expect("a malformed line")
    }

    #[test]
    fn typed_ops_with_optional_fields() {
        let out = parse(&[r#"{"t_ms": 5, "op": "put", "key": "k", "size": 3}"#]);
        match &out[0] {
            Ok(Line::Op(OpLine { t_ms: 5, op })) => assert_eq!(
                op,
                &Op::Put {
                    key: "k".into(),
                    size: 3,
                    replicas: None
                }
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn messages_name_the_problem() {
        assert_eq!(err(&[r#"{"t_ms": 1, "op": "pong"}"#]), r#"unknown op "pong""#);
        assert_eq!(
            err(&[r#"{"t_ms": 1, "op": "put", "key": "k", "size": -1}"#]),
            r#"field "size" must be a non-negative integer, got -1"#
        );
        assert_eq!(
            err(&[
                r#"{"t_ms": 1000, "op": "advance"}"#,
                r#"{"t_ms": 900, "op": "advance"}"#
            ]),
            "t_ms 900 is before the previous line's 1000"
        );
        assert_eq!(err(&[r#"{"t_ms": 1, "op": "ping"}"#]), r#"missing field "client""#);
        assert!(
            err(&[r#"{"t_ms": 1, "op": "fail_step", "step": "x", "times": 1}"#]).contains("must be one of metadata")
        );
        assert!(err(&["{"]).starts_with("invalid JSON"));
        assert!(err(&["[1]"]).contains("expected a JSON object"));
    }

    #[test]
    fn stall_bounds_the_next_line() {
        let lines = [
            r#"{"t_ms": 100, "op": "stall", "ms": 500}"#,
            r#"{"t_ms": 599, "op": "advance"}"#,
        ];
        assert!(err(&lines).contains("inside the stall of line 1"));
        let ok = [lines[0], r#"{"t_ms": 600, "op": "advance"}"#];
        assert!(parse(&ok).iter().all(Result::is_ok));
    }

    #[test]
    fn config_only_first() {
        let cfg = r#"{"config": {}}"#;
        assert!(matches!(parse(&[cfg])[0], Ok(Line::Config(_))));
        assert!(err(&[r#"{"t_ms": 0, "op": "advance"}"#, cfg]).contains("first line"));
        assert!(err(&[r#"{"config": 3}"#]).contains("must be an object"));
    }

    #[test]
    fn fail_step_takes_the_offboarding_steps() {
        for step in Step::ALL {
            let line = format!(
                r#"{{"t_ms": 1, "op": "fail_step", "step": "{}", "times": 2}}"#,
                step.as_str()
            );
            match &parse(&[&line])[0] {
                Ok(Line::Op(OpLine { op, .. })) => assert_eq!(op, &Op::FailStep { step, times: 2 }),
                other => panic!("{other:?}"),
            }
        }
        assert!(
            err(&[r#"{"t_ms": 1, "op": "fail_step", "step": "quota", "times": 4294967296}"#])
                .contains("must be at most 4294967295")
        );
    }
}
