//! Metrics (through the `metrics` facade) and the plain [`Stats`] snapshot for embedders.
//!
//! Names, all prefixed `mooncake_liveness_`:
//!
//! | name | kind | labels | meaning |
//! |---|---|---|---|
//! | `clients` | gauge | `state` = active, suspected, offline | incarnations per state (offline = offboarding pending) |
//! | `transitions_total` | counter | `from`, `to`, `cause` = timeout, recovered_by_ping, recovered_by_mount | committed transitions (`recovered_by_ping` published at each tick: Ping's path never calls the facade) |
//! | `recovered_false_positives_total` | counter | | Suspected → Active: a suspicion the recovery window absorbed (published at each tick) |
//! | `events_dropped_total` | counter | | events the master's bounded event log dropped because nobody drained it (published at each tick) |
//! | `stalls_total`, `stall_ms_total` | counter | | master stalls detected and the time credited (`stall-extended` deadlines) |
//! | `brake_engagements_total` | counter | `brake` = mass_suspicion | brake engagements |
//! | `offboarding_jobs_completed_total` | counter | | jobs completed |
//! | `offboarding_step_failures_total` | counter | `step` | failed step executions |
//! | `offboarding_retries_total` | counter | | attempts scheduled after a failure |
//! | `offboarding_pending_jobs` | gauge | | jobs waiting for a retry or a token |
//! | `offboarding_queue_depth` | gauge | | jobs queued for the asynchronous executor (set on submit and on every batch taken) |
//! | `offboarding_retrying_jobs` | gauge | | jobs in the asynchronous executor's retry table |
//! | `offboarding_oldest_job_age_ms` | gauge | | age of the oldest pending job |
//! | `offboarding_job_latency_ms` | histogram | | Offline commit → completion |
//!
//! With no recorder installed every call is a no-op; the binary installs a Prometheus recorder
//! (`--metrics`).
//!
//! # What this module may touch
//!
//! Telemetry sits below offboarding and the master: it *receives values* (counts, latencies,
//! label strings) and imports nothing above the liveness core. The offboarding layer hands it a
//! step's label through `From<Step> for &'static str`, so this module never names the job, its
//! steps or the queue.

use crate::liveness::{Cause, LivenessState, Transition};

fn state_label(s: LivenessState) -> &'static str {
    match s {
        LivenessState::Active => "active",
        LivenessState::Suspected => "suspected",
        LivenessState::Offline => "offline",
    }
}

fn cause_label(c: Cause) -> &'static str {
    match c {
        Cause::Timeout => "timeout",
        Cause::RecoveredByPing => "recovered_by_ping",
        Cause::RecoveredByMount => "recovered_by_mount",
        Cause::BrakeReleased => "brake_released",
    }
}

/// Which of [`Stats`]'s transition counters a committed transition adds to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    /// Active → Suspected.
    Suspicion,
    /// → Offline.
    OfflineCommit,
    /// Anything else (recoveries are counted by the liveness core).
    Other,
}

impl Counted {
    /// The counter `t` adds to.
    pub fn of(t: &Transition) -> Self {
        match (t.from, t.to) {
            (LivenessState::Active, LivenessState::Suspected) => Self::Suspicion,
            (_, LivenessState::Offline) => Self::OfflineCommit,
            _ => Self::Other,
        }
    }
}

/// A committed transition (but a recovery by Ping: [`ping_recoveries`]).
pub fn transition(t: &Transition) {
    metrics::counter!("mooncake_liveness_transitions_total",
        "from" => state_label(t.from), "to" => state_label(t.to), "cause" => cause_label(t.cause))
    .increment(1);
}

/// Recoveries committed by Ping so far (an absolute value: Ping's path counts them in an
/// atomic and never calls the facade, whose recorder may lock; the master publishes the count
/// at every tick).
pub fn ping_recoveries(total: u64) {
    metrics::counter!("mooncake_liveness_transitions_total",
        "from" => "suspected", "to" => "active", "cause" => cause_label(Cause::RecoveredByPing))
    .absolute(total);
}

/// Suspected → Active recoveries so far, by any signal (absolute, published at every tick).
pub fn recovered_false_positives(total: u64) {
    metrics::counter!("mooncake_liveness_recovered_false_positives_total").absolute(total);
}

/// Events the master's bounded event log dropped so far (absolute, published at every tick).
pub fn events_dropped(total: u64) {
    metrics::counter!("mooncake_liveness_events_dropped_total").absolute(total);
}

/// A detected master stall of `ms`.
pub fn stall(ms: u64) {
    metrics::counter!("mooncake_liveness_stalls_total").increment(1);
    metrics::counter!("mooncake_liveness_stall_ms_total").increment(ms);
}

/// A brake engaged.
pub fn brake_engaged(brake: &'static str) {
    metrics::counter!("mooncake_liveness_brake_engagements_total", "brake" => brake).increment(1);
}

/// Per-state gauges.
pub fn clients(active: usize, suspected: usize, offline: usize) {
    metrics::gauge!("mooncake_liveness_clients", "state" => "active").set(active as f64);
    metrics::gauge!("mooncake_liveness_clients", "state" => "suspected").set(suspected as f64);
    metrics::gauge!("mooncake_liveness_clients", "state" => "offline").set(offline as f64);
}

/// A job completed `latency_ms` after its Offline commit.
pub fn job_completed(latency_ms: u64) {
    metrics::counter!("mooncake_liveness_offboarding_jobs_completed_total").increment(1);
    metrics::histogram!("mooncake_liveness_offboarding_job_latency_ms").record(latency_ms as f64);
}

/// A step failed and the job was scheduled for a retry. `step` is the step's label
/// (`"metadata"`, `"segments"`, ...): an offboarding `Step` converts into it.
pub fn step_failed(step: impl Into<&'static str>) {
    let step: &'static str = step.into();
    metrics::counter!("mooncake_liveness_offboarding_step_failures_total", "step" => step).increment(1);
    metrics::counter!("mooncake_liveness_offboarding_retries_total").increment(1);
}

/// Pending jobs and the age of the oldest.
pub fn pending_jobs(count: usize, oldest_age_ms: u64) {
    metrics::gauge!("mooncake_liveness_offboarding_pending_jobs").set(count as f64);
    metrics::gauge!("mooncake_liveness_offboarding_oldest_job_age_ms").set(oldest_age_ms as f64);
}

/// Depth of the asynchronous executor's queue.
pub fn queue_depth(depth: usize) {
    metrics::gauge!("mooncake_liveness_offboarding_queue_depth").set(depth as f64);
}

/// Jobs waiting in the asynchronous executor's retry table.
pub fn retrying_jobs(count: usize) {
    metrics::gauge!("mooncake_liveness_offboarding_retrying_jobs").set(count as f64);
}

/// A plain snapshot of the master's liveness and offboarding counters, for embedders that do
/// not use the `metrics` facade.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Active incarnations.
    pub active: usize,
    /// Suspected incarnations.
    pub suspected: usize,
    /// Offline incarnations whose offboarding is pending.
    pub offline: usize,
    /// Active → Suspected commits.
    pub suspicions: u64,
    /// Suspected → Active recoveries (false positives absorbed).
    pub recoveries: u64,
    /// Suspected → Offline commits.
    pub offline_commits: u64,
    /// Master stalls detected.
    pub stalls: u64,
    /// Total stall time credited, ms.
    pub stall_ms: u64,
    /// Mass-suspicion brake engagements.
    pub brake_engagements: u64,
    /// Offboarding jobs completed.
    pub jobs_completed: u64,
    /// Failed step executions, by step, in execution order (the offboarding `Step::ALL`).
    pub step_failures: [u64; 5],
    /// Jobs pending a retry or a token.
    pub jobs_pending: usize,
    /// Events the master's bounded event log dropped because it was full (nobody drained it).
    pub events_dropped: u64,
}
