//! The report types: per-policy metrics, the sweep, and their JSON (the text forms are in `text`).

use super::counters::{CrashDetection, Metrics, StateSample};
use super::policy::Policy;
use super::workload::{percentile, secs, Traffic, Trouble, WorkloadSummary};
use crate::config::LivenessConfig;

/// A latency distribution, seconds.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Latency {
    /// Median.
    pub median_s: f64,
    /// 99th percentile (nearest rank).
    pub p99_s: f64,
    /// Largest.
    pub max_s: f64,
}

impl Latency {
    fn of(mut ms: Vec<u64>) -> Option<Self> {
        if ms.is_empty() {
            return None;
        }
        ms.sort_unstable();
        Some(Self {
            median_s: secs(percentile(&ms, 0.5)),
            p99_s: secs(percentile(&ms, 0.99)),
            max_s: secs(*ms.last().unwrap_or(&0)),
        })
    }
}

/// What silenced the healthy clients that were falsely offboarded (the stall kind covering
/// most of the silence between the last ping heard and the Offline commit or expiry), in
/// distinct clients. A crash is never a false offboarding: see the crash rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FalseOffboardCauses {
    /// A client process pause (GC, starved interpreter).
    pub client_pause: u64,
    /// A network partition.
    pub partition: u64,
    /// The whole master process paused.
    pub master_pause: u64,
    /// The master's Ping path blocked while its monitor ran.
    pub heartbeat_blocked: u64,
    /// Lost pings / jitter only.
    pub other: u64,
}

/// One policy's results. Ground-truth fields are `None` in heartbeat mode.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PolicyReport {
    /// The policy.
    pub policy: Policy,
    /// Active TTL, seconds (legacy: main's `client_ttl`).
    pub active_ttl_s: f64,
    /// Suspicion TTL, seconds (legacy: 0, it expires at once).
    pub suspicion_ttl_s: f64,
    /// Stall brake on.
    pub stall_brake: bool,
    /// Mass-suspicion brake on.
    pub mass_suspicion_brake: bool,
    /// Distinct healthy clients with at least one incarnation committed Offline.
    pub healthy_falsely_offboarded: Option<u64>,
    /// Offline commits of healthy clients' incarnations.
    pub false_offboardings: Option<u64>,
    /// What silenced them.
    pub false_offboard_causes: Option<FalseOffboardCauses>,
    /// Offline commits (all incarnations).
    pub offline_commits: u64,
    /// Distinct clients with an incarnation committed Offline.
    pub offboarded_clients: u64,
    /// Clients heard again after one of their incarnations went Offline (they were alive).
    pub offboarded_then_heard_again: u64,
    /// New incarnations mounted after NEED_REMOUNT of an offboarded client (data lost).
    pub remounts: u64,
    /// Objects removed by offboarding (all).
    pub objects_lost: u64,
    /// Objects removed by offboarding that had a replica on a healthy client.
    pub objects_lost_to_false_offboarding: Option<u64>,
    /// Objects removed by offboarding whose every replica was on crashed clients.
    pub objects_lost_with_crashed_clients: Option<u64>,
    /// Offboarding jobs (Offline incarnations) not finished at the end of the run.
    pub offboarding_jobs_pending_at_end: u64,
    /// Objects whose every replica waits on such a job, a healthy owner among them: lost when
    /// it runs (not counted in `objects_lost_to_false_offboarding`).
    pub objects_pending_loss_false: Option<u64>,
    /// ...with only crashed owners (`None` in heartbeat mode: all pending losses are here).
    pub objects_pending_loss_crashed: u64,
    /// Puts attempted.
    pub puts: u64,
    /// Puts refused.
    pub puts_failed: u64,
    /// Puts given a replica on a client that was paused, partitioned or dead.
    pub puts_to_unreachable: Option<u64>,
    /// Objects put again after a Get missed them (`OBJECT_NOT_FOUND`): the cache recomputes.
    pub reputs: u64,
    /// Gets of keys that should exist.
    pub gets: u64,
    /// Get misses: answered `REPLICA_IS_NOT_READY` or `OBJECT_NOT_FOUND` (or another error).
    /// A key found missing is put again, so a dead key is not missed over and over.
    pub get_misses: u64,
    /// Misses / Gets, overall.
    pub miss_rate: f64,
    /// Gets inside an incident window (a partition, master pause or heartbeat block, and the
    /// 30 s after it).
    pub incident_gets: u64,
    /// Misses among them.
    pub incident_misses: u64,
    /// Misses / Gets inside incident windows.
    pub incident_miss_rate: f64,
    /// `REPLICA_IS_NOT_READY` (every replica's owner Suspected or Offline-pending).
    pub gets_not_ready: u64,
    /// `OBJECT_NOT_FOUND` (removed by offboarding).
    pub gets_not_found: u64,
    /// Gets answered with a replica on a client that was paused, partitioned or dead.
    pub gets_to_unreachable: Option<u64>,
    /// Real crashes.
    pub crashes: Option<u64>,
    /// Real crashes committed Offline by the end.
    pub crashes_offline: Option<u64>,
    /// Crash → Suspected.
    pub crash_to_suspected: Option<Latency>,
    /// Crash → Offline.
    pub crash_to_offline: Option<Latency>,
    /// Each crash.
    pub crash_detections: Vec<CrashDetection>,
    /// Active → Suspected commits.
    pub suspicions: u64,
    /// Suspected → Active recoveries.
    pub suspected_then_recovered: u64,
    /// Client-seconds spent Suspected (resources retained, not served).
    pub suspected_client_s: f64,
    /// ...of which by clients already dead.
    pub suspected_client_s_dead: Option<f64>,
    /// ...of which by clients alive.
    pub suspected_client_s_alive: Option<f64>,
    /// Legacy: pings or mounts refused because main's ping queue was full.
    pub pings_rejected: u64,
    /// Stall brake firings: master stalls detected and credited.
    pub stalls_credited: u64,
    /// Stall time credited, seconds.
    pub stall_credit_s: f64,
    /// Mass-suspicion brake engagements.
    pub mass_suspicion_brake_engagements: u64,
    /// Failed offboarding attempts (retried).
    pub offboarding_retries: u64,
    /// Clients per state, once per simulated second.
    pub states: Vec<StateSample>,
}

impl PolicyReport {
    pub(super) fn new(
        policy: Policy,
        config: &LivenessConfig,
        legacy_ttl_ms: Option<u64>,
        m: Metrics,
        truth: bool,
        crashes: usize,
    ) -> Self {
        let known = |v: u64| truth.then_some(v);
        let suspected: Vec<u64> = m
            .crashes
            .iter()
            .filter_map(|c| Some(c.suspected_ms? - c.crash_ms))
            .collect();
        let offline: Vec<u64> = m
            .crashes
            .iter()
            .filter_map(|c| Some(c.offline_ms? - c.crash_ms))
            .collect();
        let [client_pause, partition, master_pause, heartbeat_blocked, other] =
            m.false_by_cause.each_ref().map(|s| s.len() as u64);
        let rate = |part: u64, whole: u64| part as f64 / whole.max(1) as f64;
        Self {
            policy,
            active_ttl_s: secs(legacy_ttl_ms.unwrap_or(config.active_ttl_ms)),
            suspicion_ttl_s: if legacy_ttl_ms.is_some() {
                0.0
            } else {
                secs(config.suspicion_ttl_ms)
            },
            stall_brake: config.stall_brake,
            mass_suspicion_brake: config.mass_suspicion_brake,
            healthy_falsely_offboarded: known(m.false_clients.len() as u64),
            false_offboardings: known(m.false_offboards),
            false_offboard_causes: truth.then_some(FalseOffboardCauses {
                client_pause,
                partition,
                master_pause,
                heartbeat_blocked,
                other,
            }),
            offline_commits: m.offline_commits,
            offboarded_clients: m.offboarded_clients.len() as u64,
            offboarded_then_heard_again: m.returned_clients.len() as u64,
            remounts: m.remounts,
            objects_lost: m.lost_total,
            objects_lost_to_false_offboarding: known(m.lost_false),
            objects_lost_with_crashed_clients: known(m.lost_crash),
            offboarding_jobs_pending_at_end: m.jobs_pending_at_end,
            objects_pending_loss_false: known(m.pending_lost_false),
            objects_pending_loss_crashed: m.pending_lost_crash,
            puts: m.puts,
            puts_failed: m.puts_failed,
            puts_to_unreachable: known(m.puts_unreachable),
            reputs: m.reputs,
            gets: m.gets,
            get_misses: m.misses(),
            miss_rate: rate(m.misses(), m.gets),
            incident_gets: m.incident_gets,
            incident_misses: m.incident_misses,
            incident_miss_rate: rate(m.incident_misses, m.incident_gets),
            gets_not_ready: m.gets_not_ready,
            gets_not_found: m.gets_not_found,
            gets_to_unreachable: known(m.gets_unreachable),
            crashes: known(crashes as u64),
            crashes_offline: known(offline.len() as u64),
            crash_to_suspected: Latency::of(suspected),
            crash_to_offline: Latency::of(offline),
            crash_detections: m.crashes,
            suspicions: m.suspicions,
            suspected_then_recovered: m.recoveries,
            suspected_client_s: secs(m.suspected_ms_alive + m.suspected_ms_dead),
            suspected_client_s_dead: truth.then(|| secs(m.suspected_ms_dead)),
            suspected_client_s_alive: truth.then(|| secs(m.suspected_ms_alive)),
            pings_rejected: m.pings_rejected,
            stalls_credited: m.stalls,
            stall_credit_s: secs(m.stall_ms),
            mass_suspicion_brake_engagements: m.brake_engagements,
            offboarding_retries: m.retries,
            states: m.samples,
        }
    }
}

/// The result of [`run`](super::run): the scenario and one report per policy.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SimReport {
    /// `synthetic` (built-in scenario, ground truth known) or `heartbeats` (recorded log).
    pub mode: &'static str,
    /// The scenario's name (`stress`, `quiet`, ...), `custom` for other trouble, or
    /// `recorded heartbeats`.
    pub scenario: &'static str,
    /// Fleet size.
    pub clients: usize,
    /// Simulated time, seconds.
    pub duration_s: f64,
    /// Seed.
    pub seed: u64,
    /// The trouble distributions (synthetic mode).
    pub trouble: Option<Trouble>,
    /// The traffic.
    pub traffic: Traffic,
    /// The trouble drawn from the seed.
    pub workload: WorkloadSummary,
    /// One entry per policy, in the order asked.
    pub policies: Vec<PolicyReport>,
}

impl SimReport {
    /// The report as pretty JSON (`report.json`); deterministic for a seed.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report serializes")
    }
}

/// One cell of a TTL sweep (policy `rfc+brakes`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SweepCell {
    /// Active TTL, seconds.
    pub active_ttl_s: f64,
    /// Suspicion TTL, seconds.
    pub suspicion_ttl_s: f64,
    /// Healthy clients falsely offboarded (n/a in heartbeat mode).
    pub healthy_falsely_offboarded: Option<u64>,
    /// Clients offboarded (any).
    pub offboarded_clients: u64,
    /// Objects removed by offboarding.
    pub objects_lost: u64,
    /// Objects removed by offboarding that had a replica on a healthy client.
    pub objects_lost_to_false_offboarding: Option<u64>,
    /// Get misses.
    pub get_misses: u64,
    /// Gets routed to an unreachable owner.
    pub gets_to_unreachable: Option<u64>,
    /// Crash → Suspected.
    pub crash_to_suspected: Option<Latency>,
    /// Crash → Offline.
    pub crash_to_offline: Option<Latency>,
    /// Client-seconds dead clients sat Suspected.
    pub suspected_client_s_dead: Option<f64>,
}

impl SweepCell {
    pub(super) fn of(r: &PolicyReport) -> Self {
        Self {
            active_ttl_s: r.active_ttl_s,
            suspicion_ttl_s: r.suspicion_ttl_s,
            healthy_falsely_offboarded: r.healthy_falsely_offboarded,
            offboarded_clients: r.offboarded_clients,
            objects_lost: r.objects_lost,
            objects_lost_to_false_offboarding: r.objects_lost_to_false_offboarding,
            get_misses: r.get_misses,
            gets_to_unreachable: r.gets_to_unreachable,
            crash_to_suspected: r.crash_to_suspected,
            crash_to_offline: r.crash_to_offline,
            suspected_client_s_dead: r.suspected_client_s_dead,
        }
    }
}

/// The result of [`sweep`](super::sweep): one cell per (active, suspicion) pair, active-major.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SweepReport {
    /// The policy swept (`rfc+brakes`).
    pub policy: Policy,
    /// Fleet size.
    pub clients: usize,
    /// Simulated time, seconds.
    pub duration_s: f64,
    /// Seed.
    pub seed: u64,
    /// The trouble drawn from the seed (the same for every cell).
    pub workload: WorkloadSummary,
    /// Cells, active-major.
    pub cells: Vec<SweepCell>,
}
impl SweepReport {
    /// The sweep as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a sweep serializes")
    }
}
