//! `replay`: runs the reference master on a virtual clock from a JSON-Lines trace and prints one
//! JSON line per operation and per master event, as the trace-format contract specifies.
//!
//! The pipeline is line by line: **parse** a line into a typed op (every reason for a malformed
//! line is found here, so nothing of a malformed line is ever applied or printed), **run** the
//! monitor ticks due up to its `t_ms`, **apply** it to the [`Master`], **render** the events the
//! ticks and the op produced, then the op's own line.
//!
//! Two things sit around that pipeline: a `block_heartbeats` line makes the loop hold every
//! `ping` until the block ends and then apply them as lines at its end (`Block`); and the
//! master's liveness is either the library's (`--policy rfc`, `Sim`) or Mooncake main's client
//! monitor (`ReplayPolicy::Legacy`, `legacy::LegacySim`), behind one `Engine`.
//!
//! ```
//! let trace = r#"{"config": {"client_active_ttl_sec": 10}}
//! {"t_ms": 100, "op": "mount", "client": "c1", "segment": "s1", "size": 1024}
//! {"t_ms": 10100, "op": "ping", "client": "c1"}"#;
//! let mut out = Vec::new();
//! mooncake_liveness::sim::replay(trace.as_bytes(), &mut out).unwrap();
//! let out = String::from_utf8(out).unwrap();
//! assert!(out.contains(r#""to":"Suspected""#));
//! assert!(out.ends_with("\"ok\":true,\"status\":\"NEED_REMOUNT\"}\n"));
//! ```
#![forbid(unsafe_code)]

mod legacy;
mod parse;
mod render;

use crate::clock::{Clock, ManualClock};
use crate::config::{LivenessConfig, RawConfig};
use crate::master::{Master, MasterError, MasterOptions};
use crate::snapshot::Snapshot;
use parse::{Line, Op, OpLine, Parser};
use render::{Answer, Outcome, SNAPSHOT_INVALID};
use std::io::{BufRead, Write};
use std::sync::Arc;

/// Why a replay stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// Line `line` (1-based) of the trace is malformed: bad JSON, unknown op, missing or wrongly
    /// typed field, `t_ms` going backwards or inside a stall, invalid configuration. Nothing of
    /// this line or later ones was applied or printed.
    #[error("line {line}: {message}")]
    Malformed {
        /// The 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// Reading the trace or writing the output failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// Which liveness policy a replay runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplayPolicy {
    /// The library's recoverable liveness (Active → Suspected → Offline), as configured.
    #[default]
    Rfc,
    /// Mooncake main's client monitor ([`LegacyMonitor`](crate::sim::legacy::LegacyMonitor)):
    /// one TTL (the active TTL of the configuration), a 1 s tick, expiry in one batch.
    Legacy,
}

impl std::str::FromStr for ReplayPolicy {
    type Err = String;

    /// `rfc` or `legacy` (ASCII case ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "rfc" => Ok(Self::Rfc),
            "legacy" => Ok(Self::Legacy),
            other => Err(format!("unknown replay policy `{other}` (expected rfc or legacy)")),
        }
    }
}

/// Replays `input` (a trace) and writes the output lines to `out`. Warnings (unknown
/// configuration keys, unknown op fields) are dropped; see [`replay_with_warnings`].
pub fn replay(input: impl BufRead, out: &mut impl Write) -> Result<(), ReplayError> {
    replay_with_warnings(input, out, |_| {})
}

/// [`replay`], handing every warning (`line N: ...`) to `warn` as it is found. Blank lines are
/// skipped; the configuration line, if any, must be the first non-blank line.
pub fn replay_with_warnings(
    input: impl BufRead,
    out: &mut impl Write,
    warn: impl FnMut(&str),
) -> Result<(), ReplayError> {
    replay_policy(input, out, ReplayPolicy::Rfc, warn)
}

/// [`replay_with_warnings`] under `policy`.
pub fn replay_policy(
    mut input: impl BufRead,
    out: &mut impl Write,
    policy: ReplayPolicy,
    mut warn: impl FnMut(&str),
) -> Result<(), ReplayError> {
    let mut parser = Parser::default();
    let mut engine: Option<Engine> = None;
    let mut block = Block::default();
    let mut buf = Vec::new();
    let mut n = 0;
    loop {
        buf.clear();
        if input.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        n += 1;
        let malformed = |message: String| ReplayError::Malformed { line: n, message };
        let text = std::str::from_utf8(&buf).map_err(|e| malformed(format!("not UTF-8: {e}")))?;
        if text.trim().is_empty() {
            continue;
        }
        match parser.line(n, text).map_err(malformed)? {
            Line::Config(value) => {
                let (config, warnings) = resolve_config(&value).map_err(malformed)?;
                for w in warnings {
                    warn(&format!("line {n}: config: {w}"));
                }
                if policy == ReplayPolicy::Legacy {
                    for w in legacy::ignored_keys(&value) {
                        warn(&format!("line {n}: config: {w}"));
                    }
                }
                engine = Some(Engine::new(policy, config));
            }
            Line::Op(op) => {
                for field in &parser.unknown_fields {
                    warn(&format!("line {n}: ignoring unknown field {field:?}"));
                }
                let engine = engine.get_or_insert_with(|| Engine::new(policy, default_config()));
                if op.t_ms >= block.end_ms {
                    block.release(engine, out)?;
                }
                match op.op {
                    Op::Ping { .. } if op.t_ms < block.end_ms => block.held.push(op),
                    Op::Stall { .. } if op.t_ms < block.end_ms => {
                        return Err(malformed(format!(
                            "a stall inside the heartbeat block that lasts until {} is not supported",
                            block.end_ms
                        )));
                    }
                    _ => {
                        out.write_all(engine.step(&op).map_err(malformed)?.as_bytes())?;
                        if let Op::BlockHeartbeats { ms } = op.op {
                            block.end_ms = block.end_ms.max(op.t_ms + ms);
                        }
                    }
                }
            }
        }
    }
    if let Some(engine) = engine.as_mut() {
        block.release(engine, out)?;
    }
    out.flush()?;
    Ok(())
}

/// The pings a `block_heartbeats` holds until `end_ms` (0 when no block was ever in force).
#[derive(Debug, Default)]
struct Block {
    end_ms: u64,
    held: Vec<OpLine>,
}

impl Block {
    /// Applies the held pings as lines at `end_ms`, in input order.
    fn release(&mut self, engine: &mut Engine, out: &mut impl Write) -> Result<(), ReplayError> {
        for mut line in std::mem::take(&mut self.held) {
            line.t_ms = self.end_ms;
            // A held line is a ping, which every engine applies.
            let text = engine.step(&line).unwrap_or_default();
            out.write_all(text.as_bytes())?;
        }
        Ok(())
    }
}

/// The master a replay drives, under its policy.
#[derive(Debug)]
enum Engine {
    Rfc(Box<Sim>),
    Legacy(Box<legacy::LegacySim>),
}

impl Engine {
    fn new(policy: ReplayPolicy, config: LivenessConfig) -> Self {
        match policy {
            ReplayPolicy::Rfc => Self::Rfc(Box::new(Sim::new(config))),
            ReplayPolicy::Legacy => Self::Legacy(Box::new(legacy::LegacySim::new(config))),
        }
    }

    /// The output of one line; `Err` for an op the policy does not model (a malformed trace).
    fn step(&mut self, line: &OpLine) -> Result<String, String> {
        match self {
            Self::Rfc(sim) => Ok(sim.step(line)),
            Self::Legacy(sim) => sim.step(line),
        }
    }
}

/// The configuration of a trace without a `config` line: an empty source, resolved.
fn default_config() -> LivenessConfig {
    LivenessConfig::from_raw(&RawConfig::new())
        .map(|r| r.config)
        .unwrap_or_default()
}

/// Resolves a trace's `config` object by the configuration file's rules.
fn resolve_config(value: &serde_json::Value) -> Result<(LivenessConfig, Vec<String>), String> {
    let raw = RawConfig::from_json_value(value).map_err(|e| format!("invalid config: {e}"))?;
    let resolved = LivenessConfig::from_raw(&raw).map_err(|e| format!("invalid config: {e}"))?;
    Ok((resolved.config, resolved.warnings))
}

/// The master on its virtual clock, the tick schedule and the latest HA snapshot.
#[derive(Debug)]
struct Sim {
    clock: Arc<ManualClock>,
    config: LivenessConfig,
    master: Master,
    tick_ms: u64,
    /// The next tick to run (ticks at multiples of `tick_ms`; 0 is the master's start).
    next_tick_ms: u64,
    /// The latest `snapshot`, in the binary HA encoding.
    snapshot: Option<Vec<u8>>,
}

/// Replay's master: one metadata shard (its eviction order is the exact LRU order the example
/// traces pin) and jobs run at the tick whatever `offboarding_mode` says (replay's executor is
/// the virtual clock).
fn replay_options() -> MasterOptions {
    MasterOptions {
        metadata_shards: 1,
        offboarding: crate::master::OffboardingDriver::Inline,
        // Replay drains the log after every line and prints every event: it must never drop one.
        event_log_capacity: usize::MAX,
        ..MasterOptions::default()
    }
}

impl Sim {
    fn new(config: LivenessConfig) -> Self {
        let clock = Arc::new(ManualClock::new(0));
        let master = Master::new(clock.clone() as Arc<dyn Clock>, config.clone(), replay_options());
        let tick_ms = master.monitor().tick_ms();
        Self {
            clock,
            config,
            master,
            tick_ms,
            next_tick_ms: tick_ms,
            snapshot: None,
        }
    }

    /// Runs the ticks due by `line.t_ms`, applies the op; returns the events and the op's line.
    fn step(&mut self, line: &OpLine) -> String {
        self.run_ticks_to(line.t_ms);
        // The ticks' events are rendered before the op runs: `failover` replaces the master.
        let mut text = self.take_events();
        let outcome = self.apply(line);
        text.push_str(&self.take_events());
        text.push_str(&render::op_line(line, &outcome));
        text
    }

    /// The master's events so far, rendered, in the order they happened.
    fn take_events(&mut self) -> String {
        let events = self.master.take_events();
        events.iter().map(|e| render::event_line(&self.master, e)).collect()
    }

    /// Every tick at a multiple of `tick_ms` that is `<= t_ms` and not run yet, then the clock to
    /// `t_ms`.
    fn run_ticks_to(&mut self, t_ms: u64) {
        while self.next_tick_ms <= t_ms {
            self.clock.set_ms(self.next_tick_ms);
            self.master.tick();
            self.next_tick_ms += self.tick_ms;
        }
        self.clock.set_ms(t_ms);
    }

    /// A stall from now for `ms`: the ticks in `(now, now + ms)` never run. The monitor notices
    /// the gap itself (its own lateness) at the first tick after the stall: the first tick time
    /// at or after its end, or, with `wake_ms`, `t_ms + wake_ms` (a monitor asleep past it
    /// wakes at its own time), and every tick after that.
    fn stall(&mut self, t_ms: u64, ms: u64, wake_ms: Option<u64>) {
        let resume = match wake_ms {
            Some(w) => t_ms + w,
            None => (t_ms + ms).div_ceil(self.tick_ms) * self.tick_ms,
        };
        self.next_tick_ms = self.next_tick_ms.max(resume);
    }

    /// Restarts the master from the latest snapshot (or empty, if none was taken) at the current
    /// time. A snapshot that does not restore leaves the running master in place.
    fn failover(&mut self) -> Outcome {
        let clock = self.clock.clone() as Arc<dyn Clock>;
        let (config, options) = (self.config.clone(), replay_options());
        let master = match &self.snapshot {
            None => Master::new(clock, config, options),
            Some(bytes) => Snapshot::decode(bytes)
                .and_then(|snap| Master::restore(clock, config, options, &snap))
                .map_err(|_| SNAPSHOT_INVALID)?,
        };
        self.master = master;
        Ok(Answer::Done)
    }

    fn apply(&mut self, line: &OpLine) -> Outcome {
        let m = &mut self.master;
        let done = |r: Result<(), MasterError>| r.map(|()| Answer::Done).map_err(MasterError::code);
        match &line.op {
            Op::Mount { client, segment, size } => done(m.mount(client, segment, *size)),
            Op::Remount { client, segments } => done(m.remount(client, segments)),
            Op::Unmount { client, segment } => done(m.unmount(client, segment)),
            Op::Ping { client } => Ok(Answer::Status(m.ping(client))),
            Op::MountLocalDisk { client, capacity } => done(m.mount_local_disk(client, *capacity)),
            Op::OffloadHeartbeat { client } => m
                .offload_heartbeat(client)
                .map(Answer::Tasks)
                .map_err(MasterError::code),
            Op::Promote { key } => m.promote(key).map(Answer::Task).map_err(MasterError::code),
            Op::Query { client, segment } => Ok(Answer::Query(m.query(client.as_deref(), segment.as_deref()))),
            Op::Stall { ms, wake_ms } => {
                self.stall(line.t_ms, *ms, *wake_ms);
                Ok(Answer::Done)
            }
            Op::FailStep { step, times } => {
                m.fail_step(*step, *times);
                Ok(Answer::Done)
            }
            Op::Snapshot => {
                self.snapshot = Some(m.snapshot().encode());
                Ok(Answer::Done)
            }
            Op::Failover => self.failover(),
            op => apply_data(m, op).unwrap_or(Ok(Answer::Done)),
        }
    }
}

/// The ops every policy sends straight to the master's data paths (`None` for the others).
fn apply_data(m: &mut Master, op: &Op) -> Option<Outcome> {
    let done = |r: Result<(), MasterError>| r.map(|()| Answer::Done).map_err(MasterError::code);
    let code = |e: MasterError| e.code();
    Some(match op {
        Op::Put { key, size, replicas } => {
            let n = usize::try_from(replicas.unwrap_or(1)).unwrap_or(usize::MAX);
            m.put(key, *size, n).map(Answer::Replicas).map_err(code)
        }
        Op::PutEnd { key } => done(m.put_end(key)),
        Op::PutRevoke { key } => done(m.put_revoke(key)),
        Op::Get { key } => m.get(key).map(Answer::Replicas).map_err(code),
        Op::Remove { key } => done(m.remove(key)),
        Op::Copy { key, to } => m.replicate(key, to, false).map(Answer::Task).map_err(code),
        Op::Move { key, to } => m.replicate(key, to, true).map(Answer::Task).map_err(code),
        Op::FetchTasks { client } => Ok(Answer::Tasks(m.fetch_tasks(client))),
        Op::TaskDone { client, task, ok } => done(m.task_done(client, *task, ok.unwrap_or(true))),
        Op::Drain { segment } => m.drain(segment).map(Answer::Tasks).map_err(code),
        // A `block_heartbeats` line itself changes nothing; the replay loop holds the pings.
        Op::Advance | Op::BlockHeartbeats { .. } => Ok(Answer::Done),
        _ => return None,
    })
}
