//! The state one `serve` process shares between its request threads, its monitor thread and
//! its HTTP servers: the reference master and what the wire needs beside it.
//!
//! # Ground rules
//!
//! - [`State`] is `Sync`; every request path takes `&State`. Which locks each path takes is
//!   the master's lock table plus, here: a key's stripe ([`Objects`]) around the master call
//!   for that key, then a segment space's allocator ([`Spaces`]), in that order.
//! - Ping takes none of them: it is the master's lock-free Ping.
//! - Client and segment names: the master knows a client by its Mooncake id printed as
//!   Mooncake prints it (`first-second`, what the client logs), and a segment by its id in the
//!   same form; the segment's transport endpoint and base live in its [`SegmentSpace`].
//! - Replica ids come from one counter, as upstream's (a fresh master starts again at 1).

use super::log::WallClock;
use super::metadata::MetadataStore;
use super::objects::Objects;
use super::space::{SegmentSpace, Spaces};
use crate::master::{Master, MasterError};
use crate::sync::{Arc, AtomicU64, Ordering};
use mooncake_liveness_wire::enums::ErrorCode;
use mooncake_liveness_wire::types::Uuid;

/// Everything the request paths share.
#[derive(Debug)]
pub(crate) struct State {
    /// The reference master.
    pub(crate) master: Master,
    /// The address spaces of the mounted segments.
    pub(crate) spaces: Spaces,
    /// Per-key placements and leases.
    pub(crate) objects: Objects,
    /// The transfer metadata (`/metadata`).
    pub(crate) metadata: Arc<MetadataStore>,
    /// The read lease GetReplicaList grants, ms.
    pub(crate) lease_ms: u64,
    /// The master's clock on the wall clock (the log stamps each master event with it).
    pub(crate) wall: WallClock,
    next_replica: AtomicU64,
}

impl State {
    /// State around `master`, whose clock's epoch is `wall`.
    pub(crate) fn new(master: Master, lease_ms: u64, wall: WallClock) -> Self {
        Self {
            master,
            wall,
            spaces: Spaces::default(),
            objects: Objects::default(),
            metadata: Arc::new(MetadataStore::default()),
            lease_ms,
            next_replica: AtomicU64::new(1),
        }
    }

    /// A fresh replica id. Relaxed: ids only need to be distinct.
    pub(crate) fn replica_id(&self) -> u64 {
        self.next_replica.fetch_add(1, Ordering::Relaxed)
    }

    /// The live space of the master's segment `name`.
    pub(crate) fn space(&self, name: &str) -> Option<Arc<SegmentSpace>> {
        self.spaces.get(name)
    }

    /// Retires the spaces of segments the master no longer has and frees their placements,
    /// then reconciles every live space; returns (spaces retired, placements freed).
    pub(crate) fn reconcile(&self) -> (usize, usize) {
        let mounted: std::collections::HashSet<String> =
            self.master.segments().iter().map(|s| s.name.clone()).collect();
        let retired = self.spaces.retain(|name| mounted.contains(name));
        for s in &retired {
            super::log::info!(
                "segment_name={}, segment_id={}, action=segment_space_released",
                s.endpoint,
                s.name
            );
        }
        let spaces = retired
            .iter()
            .chain(self.spaces.all().iter())
            .cloned()
            .collect::<Vec<_>>();
        let freed = spaces.iter().map(|s| self.reconcile_space(s)).sum();
        (retired.len(), freed)
    }

    /// Frees the placements in `space` whose key the master no longer has on that segment
    /// (evicted, removed by an offboarding, the segment gone); returns how many. Costs one
    /// lookup per key placed in the segment, and a stripe lock per stale one.
    pub(crate) fn reconcile_space(&self, space: &Arc<SegmentSpace>) -> usize {
        let segment = self.master.segments().by_name(&space.name).cloned();
        let listed = |key: &str| segment.as_ref().is_some_and(|s| s.alloc().keys.contains(key));
        let backed = |key: &str| {
            self.master.object(key).is_some_and(|o| {
                o.replicas
                    .iter()
                    .any(|r| r.segment_ref().is_some_and(|s| s.name == space.name))
            })
        };
        space
            .keys()
            .into_iter()
            .filter(|k| !listed(k))
            .filter(|k| self.objects.drop_unbacked(k, space, || backed(k)))
            .count()
    }
}

/// The master's name of a client or segment id.
pub(crate) fn name_of(id: &Uuid) -> String {
    id.to_string()
}

/// The wire code of a master refusal (Mooncake's `ErrorCode`; `CLIENT_OFFBOARDING` has no code
/// in 0.3.13.post1 and goes out as `UNAVAILABLE_IN_CURRENT_STATUS`, as upstream's RFC
/// implementation answers a mount during offboarding).
pub(crate) fn error_code(e: MasterError) -> ErrorCode {
    match e {
        MasterError::NoAvailableHandle => ErrorCode::NO_AVAILABLE_HANDLE,
        MasterError::ObjectNotFound => ErrorCode::OBJECT_NOT_FOUND,
        MasterError::ObjectAlreadyExists => ErrorCode::OBJECT_ALREADY_EXISTS,
        MasterError::ReplicaIsNotReady => ErrorCode::REPLICA_IS_NOT_READY,
        MasterError::ReplicaNotFound => ErrorCode::REPLICA_NOT_FOUND,
        MasterError::SegmentNotFound => ErrorCode::SEGMENT_NOT_FOUND,
        MasterError::InvalidParams => ErrorCode::INVALID_PARAMS,
        MasterError::ObjectHasReplicationTask => ErrorCode::OBJECT_HAS_REPLICATION_TASK,
        MasterError::IllegalClient => ErrorCode::ILLEGAL_CLIENT,
        MasterError::UnavailableInCurrentStatus | MasterError::ClientOffboarding => {
            ErrorCode::UNAVAILABLE_IN_CURRENT_STATUS
        }
        MasterError::TaskNotFound => ErrorCode::TASK_NOT_FOUND,
        MasterError::TenantQuotaExceeded => ErrorCode::TENANT_QUOTA_EXCEEDED,
        // `MasterError` is `#[non_exhaustive]` (another crate): a refusal this table does not
        // know yet goes out as the master's generic error, never as success.
        _ => ErrorCode::INTERNAL_ERROR,
    }
}
