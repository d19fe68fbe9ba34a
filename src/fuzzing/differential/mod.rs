//! The `differential` fuzz body: random operation sequences with random timing against the
//! reference master and the sequential model of `model.rs`, compared answer by answer and
//! event by event, with the externally checkable invariants asserted after every step.
//!
//! The input decodes (with `arbitrary`) to a small configuration (TTLs of a few hundred ms to a
//! few seconds, a 10–100 ms tick, a retry backoff) and up to [`MAX_OPS`] operations over 4
//! clients, 6 segments and 8 keys, within [`MAX_TIME_MS`] of virtual time. Time advances like
//! `replay` and `tests/common/master.rs`: every tick at a multiple of `monitor_tick_ms` up to the
//! target time runs, then the clock is set to it, then the operation applies.
//!
//! Checked (invariant numbers of `contract/invariants.md`):
//! - every answer (ok / error code, Ping status) equals the model's; a Put's replicas are
//!   validated (distinct segments, each Allocatable in the model — owner Active, room — and as
//!   many as the model says), a Get's replicas equal the model's exactly;
//! - every event equals the model's: transitions with their times (a tick's transitions as a set,
//!   their order within the tick is the monitor's), the mass-suspicion brake's engage/release
//!   (before the tick's transitions), `offboarding_retry` with step and attempt,
//!   `offboarded` with attempts; jobs due at one tick may run in any order (the model replays the
//!   observed order after checking it is exactly the set of due jobs, retries before fresh jobs);
//! - 1 (only Active→Suspected, Suspected→Active, Suspected→Offline, from the state the model
//!   holds), 2 and 3 (against the model's last signal and committed suspicion), 4 (a transition
//!   the model expects at this tick and the master did not commit is a late commit), 6 (failed
//!   mounts change nothing: full state comparison), 7 (Ping answers), 9/10 (no served or
//!   allocated replica on a non-Active owner's segment), 13 (a client's incarnation only
//!   increases, by one per offboarding), 14 (barrier answers), 15 (one Offline commit and one
//!   `offboarded` per incarnation), 16 (after `offboarded`: none of its segments, replicas or
//!   LocalDisk left; quota total and external metadata equal the model's at every step), 17
//!   (retries on the backoff schedule, resuming at the failed step), 19 (failover keeps every
//!   object, segment and pending job, restores clients Active and not ready), 21 (the input is
//!   run a second time, master only: identical answers and events);
//! - after every operation (and every tick with events) the whole observable state equals the
//!   model's: diagnostic query, segment table (owner incarnation, size, usage, keys), objects
//!   (replicas in order, completion), pending jobs (attempts, steps done, next attempt), stats.
//!
//! Both offboarding modes: the input's setup byte picks inline offboarding (the tick runs each
//! job) or the asynchronous path (the master's `Outbox` driver, with [`executor`] playing the
//! executor deterministically: jobs taken after each tick, retries on the backoff schedule
//! between ticks, a failover losing the jobs it held, the shutdown hand-back). In async mode
//! the model follows the contract's async rules (`model.rs`: the barrier until completion,
//! retries owned by the executor, a failover restarting a job the executor held from its
//! snapshot record, a hand-back keeping progress), and the jobs the executor holds are compared
//! as the master's parked jobs are.
//!
//! The model follows the contract, not the implementation: where they differed, the fuzz
//! target failed and the minimized input became a seed (`bug1_*`: a segment name unmounted by a
//! still-pending offboarding job could be mounted by another client; fixed in the master).
//!
//! A finding reads best through [`differential_explain`], which prints the decoded configuration
//! and operations with their virtual times.
//!
//! Layout: [`decode`] turns bytes into a configuration and operations; [`run`] drives the real
//! master (and, with the checker, the model) through them, with [`executor`] in async mode; [`check`] compares events and the
//! invariants that span steps, [`answers`] each operation's answer, [`state`] the whole
//! observable state; [`names`] maps the model's indices to the master's names; [`counts`] tallies
//! what an input exercised.

mod answers;
mod check;
mod counts;
mod decode;
mod executor;
mod names;
mod run;
mod state;

pub use counts::Counts;
use decode::{decode, Cmd, Input};

/// Operations per input, at most.
const MAX_OPS: usize = 96;
/// Virtual time per input, at most (ms).
const MAX_TIME_MS: u64 = 30_000;
/// Ticks per input, at most, once long TTLs are in force (see [`time_limit`]).
const MAX_LONG_TICKS: u64 = 12_000;
/// Failovers per input, at most.
const MAX_FAILOVERS: usize = 2;

/// The virtual time limit after `cmd` ran at `now` under `limit`: [`MAX_TIME_MS`], extended by
/// a reload to TTLs of wheel level 2 (`ReloadTtlsLong`) so that windows it starts can expire,
/// up to [`MAX_LONG_TICKS`] ticks. Short reloads never extend it (old seeds run as before).
fn time_limit(limit: u64, now: u64, cmd: &Cmd, tick_ms: u64) -> u64 {
    match cmd {
        Cmd::ReloadTtls(active, suspicion) if active.max(suspicion) >= &(decode::LEVEL_2_TICKS * tick_ms) => {
            limit.max((now + active + suspicion + MAX_TIME_MS).min(MAX_LONG_TICKS * tick_ms))
        }
        _ => limit,
    }
}

/// Random operations on the reference master and the sequential model, compared after every
/// step; then the same input on a second master must produce the same answers and events.
pub fn differential(data: &[u8]) {
    let Some(input) = decode(data) else { return };
    let (first, _) = run::run(&input, true);
    let (second, _) = run::run(&input, false);
    if first != second {
        let at = first
            .iter()
            .zip(&second)
            .position(|(a, b)| a != b)
            .unwrap_or(first.len().min(second.len()));
        panic!(
            "invariant 21: the same input gave a different log at entry {at}: {:?} vs {:?}",
            first.get(at),
            second.get(at)
        );
    }
}

/// What `data` exercises (it is run once, checked): operations per mode and the offboarding
/// events they led to.
pub fn differential_counts(data: &[u8]) -> Counts {
    let Some(input) = decode(data) else {
        return Counts::default();
    };
    let (_, mut counts) = run::run(&input, true);
    counts.input(input.async_mode);
    counts
}

/// The configuration and operations `data` decodes to, for reading a finding (`None` if it
/// decodes to nothing).
pub fn differential_explain(data: &[u8]) -> Option<String> {
    let Input {
        config,
        async_mode,
        cmds,
    } = decode(data)?;
    let mut out = format!(
        "active {} ms, suspicion {} ms, tick {} ms, retry backoff {}..{} ms, offboarding {}\n",
        config.active_ttl_ms,
        config.suspicion_ttl_ms,
        config.monitor_tick_ms,
        config.offboarding_retry_backoff_ms,
        config.offboarding_retry_max_backoff_ms,
        match (async_mode, config.stall_brake) {
            (true, false) => "async (outbox + the harness's executor)",
            (true, true) => "async (outbox + the harness's executor), stall brake on",
            (false, false) => "sync (inline)",
            (false, true) => "sync (inline), stall brake on",
        }
    );
    let (mut now, mut limit) = (0, MAX_TIME_MS);
    for cmd in &cmds {
        if let Cmd::Advance(dt) | Cmd::Stall(dt) = cmd {
            now += dt;
            if now > limit {
                break;
            }
        }
        limit = time_limit(limit, now, cmd, config.monitor_tick_ms);
        out.push_str(&format!("t={now:>6} {cmd:?}\n"));
    }
    Some(out)
}
