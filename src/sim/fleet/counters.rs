//! What one policy's run counted: the raw [`Metrics`] the event loop (`run`) fills and the report
//! (`report`) reads, and the per-crash and per-second records both sides share. Below both, so
//! neither imports the other.

use std::collections::BTreeSet;

/// How one crashed client was detected.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CrashDetection {
    /// The client.
    pub client: String,
    /// When it died, ms.
    pub crash_ms: u64,
    /// Its last ping the master heard, ms.
    pub last_ping_ms: u64,
    /// When the master committed Suspected (after the crash), ms; legacy: its expiry.
    pub suspected_ms: Option<u64>,
    /// When the master committed Offline (legacy: expired it), ms.
    pub offline_ms: Option<u64>,
}

/// The state gauges over one simulated second, at their worst (every monitor tick of the
/// second and its end are looked at): short spikes such as a mass suspicion stay visible.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StateSample {
    /// The second's end, simulated seconds.
    pub t_s: u64,
    /// Fewest Active incarnations (legacy: ready clients).
    pub active: usize,
    /// Most Suspected incarnations.
    pub suspected: usize,
    /// Most Offline incarnations whose offboarding job was still pending.
    pub offline_pending: usize,
}

/// Number of [`Cause`](super::workload::Cause) slots: client pause, partition, master pause,
/// heartbeat blocked, other.
pub(super) const CAUSES: usize = 5;

/// What one policy did, in raw counters.
#[derive(Clone, Debug, Default)]
pub(super) struct Metrics {
    pub(super) suspicions: u64,
    pub(super) recoveries: u64,
    pub(super) offline_commits: u64,
    pub(super) offboarded: u64,
    pub(super) offboarded_clients: BTreeSet<u32>,
    /// Clients heard again after one of their incarnations went Offline (they were alive).
    pub(super) returned_clients: BTreeSet<u32>,
    pub(super) false_offboards: u64,
    pub(super) false_clients: BTreeSet<u32>,
    /// Distinct healthy clients falsely offboarded, by cause slot.
    pub(super) false_by_cause: [BTreeSet<u32>; CAUSES],
    pub(super) lost_false: u64,
    pub(super) lost_crash: u64,
    pub(super) lost_total: u64,
    /// Objects whose every replica sits on an incarnation whose offboarding job had not finished
    /// at the end: lost once it does (healthy owner among them / only crashed owners).
    pub(super) pending_lost_false: u64,
    pub(super) pending_lost_crash: u64,
    /// Offboarding jobs not finished at the end.
    pub(super) jobs_pending_at_end: u64,
    pub(super) puts: u64,
    pub(super) puts_failed: u64,
    pub(super) puts_unreachable: u64,
    /// Re-puts of a key a Get missed (`OBJECT_NOT_FOUND`): the cache recomputes it.
    pub(super) reputs: u64,
    pub(super) gets: u64,
    pub(super) gets_not_ready: u64,
    pub(super) gets_not_found: u64,
    pub(super) gets_other: u64,
    pub(super) gets_unreachable: u64,
    /// Gets, and misses, inside an incident window.
    pub(super) incident_gets: u64,
    pub(super) incident_misses: u64,
    /// Legacy: pings or mounts refused by a full ping queue.
    pub(super) pings_rejected: u64,
    pub(super) remounts: u64,
    pub(super) mount_refusals: u64,
    pub(super) suspected_ms_alive: u64,
    pub(super) suspected_ms_dead: u64,
    pub(super) stalls: u64,
    pub(super) stall_ms: u64,
    pub(super) brake_engagements: u64,
    pub(super) retries: u64,
    pub(super) crashes: Vec<CrashDetection>,
    pub(super) samples: Vec<StateSample>,
}

impl Metrics {
    /// Gets that returned no data.
    pub(super) fn misses(&self) -> u64 {
        self.gets_not_ready + self.gets_not_found + self.gets_other
    }
}
