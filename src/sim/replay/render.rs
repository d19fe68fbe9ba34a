//! Output lines: `{"t_ms":N,"op"|"event":...}` followed by fixed-order fields. Keys are written
//! in the order the code writes them (no map iteration), so output is byte-for-byte
//! deterministic; values are serialized by `serde_json` (structs keep declaration order).

use super::parse::{Op, OpLine};
use crate::liveness::PingStatus;
use crate::master::{Master, MasterEvent, QueryReport, ReplicaDesc, TaskDesc};
use crate::sim::legacy::{Expiry, LegacyClient};
use crate::LivenessEvent;
use serde::Serialize;

/// One JSON object under construction.
#[derive(Debug)]
pub(super) struct JsonLine {
    buf: String,
}

impl JsonLine {
    /// `{"t_ms":t,"<tag>":"<name>"`.
    fn new(t_ms: u64, tag: &str, name: &str) -> Self {
        let mut line = Self {
            buf: format!("{{\"t_ms\":{t_ms}"),
        };
        line.str(tag, name);
        line
    }

    /// Adds `"key":<value as JSON>`.
    pub(super) fn field(&mut self, key: &str, value: &impl Serialize) -> &mut Self {
        self.buf.push(',');
        self.buf.push_str(&json(&key));
        self.buf.push(':');
        self.buf.push_str(&json(value));
        self
    }

    fn str(&mut self, key: &str, value: &str) -> &mut Self {
        self.field(key, &value)
    }

    /// The finished line, newline included.
    pub(super) fn finish(mut self) -> String {
        self.buf.push_str("}\n");
        self.buf
    }
}

/// Serializes a value that cannot fail to serialize (strings, numbers, derived structs).
fn json(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_string())
}

/// What the master answered to one operation (the `Ok` part of an [`Outcome`]).
#[derive(Debug)]
pub(super) enum Answer {
    /// Done, nothing to add.
    Done,
    /// `ping`'s status.
    Status(PingStatus),
    /// `put` / `get`: the replicas handed out.
    Replicas(Vec<ReplicaDesc>),
    /// `fetch_tasks` / `offload_heartbeat` / `drain`: the tasks handed out.
    Tasks(Vec<TaskDesc>),
    /// `copy` / `move` / `promote`: the task created.
    Task(u64),
    /// `query`: the report (`segment_status` printed when a segment was asked for).
    Query(QueryReport),
    /// `query` under `--policy legacy`: the monitor's view of every client it knows.
    LegacyQuery(Vec<LegacyClient>),
}

/// The outcome of one operation: an answer, or the upper-case code of a refusal (the master's
/// [`MasterError::code`](crate::master::MasterError::code), or [`SNAPSHOT_INVALID`]).
pub(super) type Outcome = Result<Answer, &'static str>;

/// `failover` could not restore the latest snapshot (it did not decode or contradicted itself);
/// the running master stays in place.
pub(super) const SNAPSHOT_INVALID: &str = "SNAPSHOT_INVALID";

/// The output line of `op`: the op echoed, then `ok`, `error` and the outcome fields.
pub(super) fn op_line(line: &OpLine, outcome: &Outcome) -> String {
    let mut out = JsonLine::new(line.t_ms, "op", line.op.name());
    echo(&line.op, &mut out);
    out.field("ok", &outcome.is_ok());
    match outcome {
        Ok(answer) => answer_fields(&line.op, answer, &mut out),
        Err(e) => {
            out.str("error", e);
            refusal_fields(&line.op, &mut out);
        }
    }
    out.finish()
}

/// The input fields, in the table's order. Fields an outcome replaces (`put`'s `replicas`,
/// `task_done`'s `ok`) are not echoed; optional fields are echoed only when given.
fn echo(op: &Op, out: &mut JsonLine) {
    match op {
        Op::Mount { client, segment, size } => {
            out.str("client", client).str("segment", segment).field("size", size);
        }
        Op::Remount { client, segments } => {
            let specs: Vec<SpecOut<'_>> = segments
                .iter()
                .map(|s| SpecOut {
                    segment: &s.segment,
                    size: s.size,
                })
                .collect();
            out.str("client", client).field("segments", &specs);
        }
        Op::Unmount { client, segment } => {
            out.str("client", client).str("segment", segment);
        }
        Op::Ping { client } | Op::FetchTasks { client } | Op::OffloadHeartbeat { client } => {
            out.str("client", client);
        }
        Op::MountLocalDisk { client, capacity } => {
            out.str("client", client).field("capacity", capacity);
        }
        Op::Put { key, size, .. } => {
            out.str("key", key).field("size", size);
        }
        Op::PutEnd { key } | Op::PutRevoke { key } | Op::Get { key } | Op::Remove { key } | Op::Promote { key } => {
            out.str("key", key);
        }
        Op::Copy { key, to } | Op::Move { key, to } => {
            out.str("key", key).str("to", to);
        }
        Op::TaskDone { client, task, .. } => {
            out.str("client", client).field("task", task);
        }
        Op::Drain { segment } => {
            out.str("segment", segment);
        }
        Op::Query { client, segment } => {
            if let Some(c) = client {
                out.str("client", c);
            }
            if let Some(s) = segment {
                out.str("segment", s);
            }
        }
        Op::Snapshot | Op::Failover | Op::Advance => {}
        Op::Stall { ms, wake_ms } => {
            out.field("ms", ms);
            if let Some(w) = wake_ms {
                out.field("wake_ms", w);
            }
        }
        Op::BlockHeartbeats { ms } => {
            out.field("ms", ms);
        }
        Op::FailStep { step, times } => {
            out.str("step", step.as_str()).field("times", times);
        }
    }
}

/// A `remount` segment as echoed.
#[derive(Serialize)]
struct SpecOut<'a> {
    segment: &'a str,
    size: u64,
}

fn answer_fields(op: &Op, answer: &Answer, out: &mut JsonLine) {
    match answer {
        Answer::Done => {}
        Answer::Status(status) => {
            out.field("status", status);
        }
        Answer::Replicas(replicas) => {
            out.field("replicas", replicas);
        }
        Answer::Tasks(tasks) => {
            out.field("tasks", tasks);
        }
        Answer::Task(id) => {
            out.field("task", id);
        }
        Answer::LegacyQuery(clients) => {
            out.field("clients", clients);
        }
        Answer::Query(report) => {
            // The contract pins `query`'s fields; the parked job's detail (attempts, last error)
            // is `Master::query`'s, not replay's.
            let clients: Vec<_> = report
                .clients
                .iter()
                .map(|c| crate::master::ClientStatus { job: None, ..c.clone() })
                .collect();
            out.field("clients", &clients);
            if matches!(op, Op::Query { segment: Some(_), .. }) {
                out.field("segment_status", &report.segment);
            }
        }
    }
}

/// The list fields an op prints even when refused (`[]`).
fn refusal_fields(op: &Op, out: &mut JsonLine) {
    let empty: [(); 0] = [];
    match op {
        Op::Put { .. } | Op::Get { .. } => {
            out.field("replicas", &empty);
        }
        Op::FetchTasks { .. } | Op::OffloadHeartbeat { .. } | Op::Drain { .. } => {
            out.field("tasks", &empty);
        }
        _ => {}
    }
}

/// The output line of one master event; names are resolved through the master.
pub(super) fn event_line(master: &Master, event: &MasterEvent) -> String {
    match event {
        MasterEvent::Liveness(LivenessEvent::Transition(t)) => {
            let mut out = JsonLine::new(t.at_ms, "event", "transition");
            out.str("client", &master.client_name(t.client))
                .field("incarnation", &t.incarnation.0)
                .str("from", t.from.as_str())
                .str("to", t.to.as_str());
            out.finish()
        }
        MasterEvent::Offboarded {
            client,
            incarnation,
            attempts,
            at_ms,
        } => {
            let mut out = JsonLine::new(*at_ms, "event", "offboarded");
            out.str("client", &master.client_name(*client))
                .field("incarnation", &incarnation.0)
                .field("attempts", attempts);
            out.finish()
        }
        MasterEvent::OffboardingRetry {
            client,
            incarnation,
            step,
            attempt,
            at_ms,
        } => {
            let mut out = JsonLine::new(*at_ms, "event", "offboarding_retry");
            out.str("client", &master.client_name(*client))
                .field("incarnation", &incarnation.0)
                .str("step", step.as_str())
                .field("attempt", attempt);
            out.finish()
        }
        MasterEvent::Liveness(LivenessEvent::MassSuspicionBrake {
            at_ms,
            engaged,
            suspected,
            registered,
        }) => {
            let mut out = JsonLine::new(*at_ms, "event", "mass_suspicion_brake");
            out.field("engaged", engaged)
                .field("suspected", suspected)
                .field("registered", registered);
            out.finish()
        }
        MasterEvent::Liveness(LivenessEvent::StallDetected { at_ms, ms }) => {
            let mut out = JsonLine::new(*at_ms, "event", "stall_detected");
            out.field("ms", ms);
            out.finish()
        }
    }
}

/// The output line of a legacy expiry: `{"t_ms","event":"expired","client","segments","objects_lost"}`.
pub(super) fn expiry_line(e: &Expiry) -> String {
    let mut out = JsonLine::new(e.at_ms, "event", "expired");
    out.str("client", &e.client)
        .field("segments", &e.segments)
        .field("objects_lost", &e.objects_lost);
    out.finish()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::master::MasterError;

    #[test]
    fn t_ms_first_then_fixed_order() {
        let line = OpLine {
            t_ms: 1200,
            op: Op::Put {
                key: "k\"1".into(),
                size: 10,
                replicas: Some(2),
            },
        };
        let ok = op_line(&line, &Ok(Answer::Replicas(vec![])));
        assert_eq!(
            ok,
            "{\"t_ms\":1200,\"op\":\"put\",\"key\":\"k\\\"1\",\"size\":10,\"ok\":true,\"replicas\":[]}\n"
        );
        let refused = op_line(&line, &Err(MasterError::NoAvailableHandle.code()));
        assert!(refused.ends_with(",\"ok\":false,\"error\":\"NO_AVAILABLE_HANDLE\",\"replicas\":[]}\n"));
    }
}
