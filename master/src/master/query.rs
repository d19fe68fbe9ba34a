//! The diagnostic status query: shows every incarnation and segment whatever its state
//! (decisions.md, question 1), unlike descriptor queries, which follow the serving rule.

use super::segment::Lifecycle;
use super::{Master, MasterCore};
use crate::liveness::LivenessState;

/// One client in the diagnostic query.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ClientStatus {
    /// Name.
    pub client: String,
    /// Incarnation number.
    pub incarnation: u64,
    /// Liveness state.
    pub state: LivenessState,
    /// Remount readiness.
    pub ready: bool,
    /// An offboarding job is pending (state Offline).
    pub offboarding: bool,
    /// Mounted memory segments.
    pub segments: usize,
    /// Tasks queued for or held by this client.
    pub tasks: usize,
    /// Has a LocalDisk registration.
    pub local_disk: bool,
    /// The parked offboarding job (attempts made, last error, next attempt), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<super::PendingJob>,
}

/// One segment in the diagnostic query.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SegmentStatus {
    /// Name.
    pub segment: String,
    /// Owner name.
    pub client: String,
    /// Owner's incarnation.
    pub incarnation: u64,
    /// Owner's liveness state.
    pub owner_state: LivenessState,
    /// Lifecycle.
    pub lifecycle: Lifecycle,
    /// Capacity.
    pub size: u64,
    /// Allocated bytes.
    pub used: u64,
    /// Objects with a replica here.
    pub objects: usize,
}

/// The answer to `query`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct QueryReport {
    /// Clients (every live incarnation, Offline-pending included), by name.
    pub clients: Vec<ClientStatus>,
    /// The requested segment's status.
    pub segment: Option<SegmentStatus>,
}

impl Master {
    /// Diagnostic status, optionally restricted to one client and/or describing one segment.
    pub fn query(&self, client: Option<&str>, segment: Option<&str>) -> QueryReport {
        self.core.query(client, segment)
    }
}

impl MasterCore {
    /// The work behind [`Master::query`].
    pub(crate) fn query(&self, client: Option<&str>, segment: Option<&str>) -> QueryReport {
        let mut clients: Vec<ClientStatus> = self
            .live
            .registry()
            .records()
            .iter()
            .map(|rec| {
                let id = rec.client();
                // One lock per statement: in a struct literal every guard would live until the
                // literal is built, nesting leaves the lock order keeps apart.
                let segments = self.data.segments().owned_by(id).len();
                let tasks = self.work.tasks().of_client(id).len();
                let local_disk = self.membership.local_disks().contains_key(&id);
                let job = self.pending_job_of(id, rec.incarnation());
                ClientStatus {
                    client: self.membership.client_name(id),
                    incarnation: rec.incarnation().0,
                    state: rec.state(),
                    ready: rec.is_ready(),
                    offboarding: rec.state() == LivenessState::Offline,
                    segments,
                    tasks,
                    local_disk,
                    job,
                }
            })
            .filter(|c| client.is_none_or(|name| c.client == name))
            .collect();
        clients.sort_by(|a, b| a.client.cmp(&b.client));
        let segment = segment.and_then(|name| {
            let seg = self.data.segments().by_name(name)?.clone();
            Some(SegmentStatus {
                segment: seg.name.clone(),
                client: seg.client_name.to_string(),
                incarnation: seg.owner.incarnation().0,
                owner_state: seg.owner.state(),
                lifecycle: seg.lifecycle(),
                size: seg.size,
                used: seg.used(),
                objects: seg.key_count(),
            })
        });
        QueryReport { clients, segment }
    }
}
