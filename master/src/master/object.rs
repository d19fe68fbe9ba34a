//! Objects and their replicas.
//!
//! An object lives in exactly one metadata shard (by the hash of its key) and is read and
//! written only under that shard's lock. A replica holds the `Arc`s it needs to answer the
//! serving question without any other lock: its segment (lifecycle: one load) and its owner
//! incarnation (liveness: one load).

use super::segment::{Segment, SegmentId};
use crate::eligibility::{Purpose, Seam, ServingEligibility};
use crate::liveness::{ClientLivenessRecord, Owner};
use crate::sync::Arc;

/// Where a replica lives.
#[derive(Clone, Debug)]
pub enum ReplicaKind {
    /// In a memory segment; `owner` is the segment's owning incarnation, copied at allocation
    /// so the serving check is one load on a record the replica holds.
    Memory {
        /// The segment.
        segment: Arc<Segment>,
        /// The segment's owner.
        owner: Owner,
    },
    /// On a client's LocalDisk (SSD), written by offload.
    LocalDisk {
        /// The registering incarnation.
        owner: Owner,
    },
}

/// One copy of an object.
#[derive(Clone, Debug)]
pub struct Replica {
    /// Location.
    pub kind: ReplicaKind,
    /// Written and acknowledged (PutEnd / task completion).
    pub complete: bool,
}

impl Replica {
    /// A memory replica on `segment`, not yet written.
    pub(crate) fn memory(segment: Arc<Segment>) -> Self {
        let owner = segment.owner.clone();
        Self {
            kind: ReplicaKind::Memory { segment, owner },
            complete: false,
        }
    }

    /// The incarnation that owns the replica's storage.
    pub fn owner(&self) -> &Owner {
        match &self.kind {
            ReplicaKind::Memory { owner, .. } | ReplicaKind::LocalDisk { owner } => owner,
        }
    }

    /// The memory segment's id, if any.
    pub fn segment(&self) -> Option<SegmentId> {
        self.segment_ref().map(|s| s.id)
    }

    /// The memory segment, if any.
    pub fn segment_ref(&self) -> Option<&Arc<Segment>> {
        match &self.kind {
            ReplicaKind::Memory { segment, .. } => Some(segment),
            ReplicaKind::LocalDisk { .. } => None,
        }
    }

    /// The seam's answer for handing this replica out to a reader.
    pub fn eligibility(&self, seam: Seam) -> ServingEligibility {
        let lifecycle_ok = match &self.kind {
            ReplicaKind::Memory { segment, .. } => segment.lifecycle().permits(Purpose::Read),
            ReplicaKind::LocalDisk { .. } => true,
        };
        seam.decide(self.owner(), self.complete, lifecycle_ok)
    }
}

/// One key's metadata.
#[derive(Clone, Debug)]
pub struct Object {
    /// The tenant whose quota the replicas are charged to.
    pub tenant: String,
    /// Size in bytes (every replica holds all of it).
    pub size: u64,
    /// Position in its shard's eviction order (larger = used more recently).
    pub touched: u64,
    /// Replicas, in the order they were added.
    pub replicas: Vec<Replica>,
    /// The Copy/Move task in flight for this key, if any.
    pub replication_task: Option<u64>,
    /// The offload or promotion task in flight, if any.
    pub tier_task: Option<u64>,
    /// The incarnation that started the Put, when the caller named it (`put_as`); its
    /// `put_end_as`/`put_revoke_as` are the only ones accepted. Not persisted in snapshots.
    pub writer: Option<Arc<ClientLivenessRecord>>,
}

impl Object {
    /// Is every replica written?
    pub fn is_complete(&self) -> bool {
        !self.replicas.is_empty() && self.replicas.iter().all(|r| r.complete)
    }

    /// Has the Put ended (PutEnd)? PutEnd completes every replica of the Put at once, and a
    /// Copy/Move/promotion or offload only starts from a complete replica, so one complete
    /// replica means the Put is over, whatever a task in flight has added since (its target is
    /// incomplete until the task is done: `is_complete` is then false).
    pub fn put_ended(&self) -> bool {
        self.replicas.iter().any(|r| r.complete)
    }

    /// Has a replica on `segment`?
    pub fn on_segment(&self, segment: SegmentId) -> bool {
        self.replicas.iter().any(|r| r.segment() == Some(segment))
    }

    /// Has a LocalDisk replica?
    pub fn has_local_disk(&self) -> bool {
        self.replicas
            .iter()
            .any(|r| matches!(r.kind, ReplicaKind::LocalDisk { .. }))
    }

    /// Has a memory replica?
    pub fn has_memory(&self) -> bool {
        self.replicas.iter().any(|r| r.segment().is_some())
    }
}
