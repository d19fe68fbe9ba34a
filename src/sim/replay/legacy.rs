//! `replay --policy legacy`: the same trace on the same reference master, with Mooncake main's
//! client monitor ([`LegacyMonitor`]) deciding liveness instead of the library.
//!
//! The master's data paths (put, get, copy, drain, ...) answer as under `rfc`; `mount`,
//! `remount`, `unmount` and `ping` go through the monitor (main's ping queue and ready set);
//! `stall` skips the monitor's ticks; an expiry prints
//! `{"t_ms","event":"expired","client","segments","objects_lost"}`. The TTL is the
//! configuration's active TTL (`client_live_ttl_sec`, `client_ttl` or `client_active_ttl_sec`;
//! main's default is 10 s too); the tick is main's 1 s whatever `monitor_tick_ms` says. Ops main's
//! monitor has no counterpart for in this model (LocalDisk, offload, promotion, snapshots,
//! failover, offboarding fault injection) make the trace malformed.

use super::parse::{Op, OpLine};
use super::render::{self, Answer, Outcome};
use crate::clock::{Clock, ManualClock};
use crate::config::{keys, LivenessConfig};
use crate::liveness::PingStatus;
use crate::master::{Master, MasterOptions};
use crate::sim::legacy::{LegacyError, LegacyMonitor, LegacyPing};
use std::sync::Arc;

/// Configuration keys a legacy replay reads nothing from, as warnings.
pub(super) fn ignored_keys(config: &serde_json::Value) -> Vec<String> {
    [keys::MONITOR_TICK_MS, keys::CLIENT_SUSPICION_TTL_SEC]
        .iter()
        .filter(|k| config.get(**k).is_some())
        .map(|k| format!("{k} is ignored by --policy legacy (one TTL, a 1 s tick)"))
        .collect()
}

/// The reference master driven by main's monitor on a virtual clock.
#[derive(Debug)]
pub(super) struct LegacySim {
    clock: Arc<ManualClock>,
    master: Master,
    monitor: LegacyMonitor,
}

impl LegacySim {
    pub(super) fn new(config: LivenessConfig) -> Self {
        let clock = Arc::new(ManualClock::new(0));
        let monitor = LegacyMonitor::new(config.active_ttl_ms);
        // Replay's shape (one metadata shard: exact LRU eviction; jobs at the tick).
        let master = Master::new(
            clock.clone() as Arc<dyn Clock>,
            LegacyMonitor::master_config(&config),
            MasterOptions {
                metadata_shards: 1,
                offboarding: crate::master::OffboardingDriver::Inline,
                event_log_capacity: usize::MAX, // drained after every line; never drops
                ..MasterOptions::default()
            },
        );
        Self { clock, master, monitor }
    }

    /// Runs the monitor's ticks due by `line.t_ms`, applies the op; returns the expiries and the
    /// op's line, or why the op is not modelled.
    pub(super) fn step(&mut self, line: &OpLine) -> Result<String, String> {
        let expired = self.monitor.run_ticks_to(&mut self.master, line.t_ms);
        self.clock.set_ms(line.t_ms);
        let mut text: String = expired.iter().map(render::expiry_line).collect();
        let outcome = self.apply(line)?;
        text.push_str(&render::op_line(line, &outcome));
        Ok(text)
    }

    fn apply(&mut self, line: &OpLine) -> Result<Outcome, String> {
        let (m, mon) = (&mut self.master, &mut self.monitor);
        let done = |r: Result<(), LegacyError>| r.map(|()| Answer::Done).map_err(LegacyError::code);
        Ok(match &line.op {
            Op::Mount { client, segment, size } => done(mon.mount(m, client, segment, *size)),
            Op::Remount { client, segments } => done(mon.remount(m, client, segments)),
            Op::Unmount { client, segment } => done(mon.unmount(m, client, segment)),
            Op::Ping { client } => mon
                .ping(m, client)
                .map(|s| {
                    Answer::Status(match s {
                        LegacyPing::Ok => PingStatus::Ok,
                        LegacyPing::NeedRemount => PingStatus::NeedRemount,
                    })
                })
                .map_err(LegacyError::code),
            Op::Query { .. } => Ok(Answer::LegacyQuery(mon.clients())),
            Op::Stall { ms, wake_ms } => {
                match wake_ms {
                    Some(w) => mon.wake_at(line.t_ms.saturating_add(*w)),
                    None => mon.skip_ticks(line.t_ms.saturating_add(*ms)),
                }
                Ok(Answer::Done)
            }
            op => match super::apply_data(m, op) {
                Some(outcome) => outcome,
                None => return Err(format!("op {:?} is not modelled by --policy legacy", op.name())),
            },
        })
    }
}
