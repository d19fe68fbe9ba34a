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
//! - `drops` says the master may have dropped replicas on its own since the last full
//!   reconcile: set (`Release`) by whoever learns of it after the drop is done — an Unmount
//!   after the master's, the monitor when it reads an offboarding's completion — and taken
//!   (`swap`, `AcqRel`) by the reconcile before it walks, so a drop that lands during a walk
//!   sets it again for the next. Eviction inside a Put does not set it: a Put that finds its
//!   space full reconciles that space itself (`data.rs`), the only space where room is wanted.

use super::log::WallClock;
use super::metadata::MetadataStore;
use super::objects::Objects;
use super::space::{SegmentSpace, Spaces};
use crate::master::{Master, MasterError};
use crate::sync::{Arc, AtomicBool, AtomicU64, Ordering};
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
    drops: AtomicBool,
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
            drops: AtomicBool::new(false),
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

    /// The master dropped replicas on its own (an unmount, an offboarding): the next
    /// [`reconcile`](Self::reconcile) walks every space. Call after the drop is done.
    pub(crate) fn note_drops(&self) {
        // Release: pairs with the AcqRel swap in `reconcile`.
        self.drops.store(true, Ordering::Release);
    }

    /// Retires the spaces of segments the master no longer has and frees their placements;
    /// then, if a space was retired or the master dropped replicas on its own since the last
    /// walk ([`note_drops`](Self::note_drops)), reconciles every live space. Costs one look at
    /// the segment table when nothing was dropped. Returns (spaces retired, placements freed).
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
        // AcqRel: sees every drop noted before it (Acquire), and a note after it is not lost.
        let dropped = self.drops.swap(false, Ordering::AcqRel);
        if retired.is_empty() && !dropped {
            return (0, 0);
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::{Clock, SystemClock};
    use crate::config::LivenessConfig;
    use crate::master::MasterOptions;
    use mooncake_liveness_wire::types::{ReplicateConfig, Segment};

    fn state() -> State {
        let system = SystemClock::new();
        let wall = WallClock::new(system.epoch());
        let clock: Arc<dyn Clock> = Arc::new(system);
        let master = Master::new(clock, LivenessConfig::default(), MasterOptions::default());
        State::new(master, 5_000, wall)
    }

    fn segment(n: u64) -> Segment {
        Segment {
            id: Uuid {
                first: 1000 + n,
                second: 0,
            },
            name: format!("127.0.0.1:{}", 20_000 + n),
            base: n << 30,
            size: 1 << 20,
            te_endpoint: format!("127.0.0.1:{}", 30_000 + n),
            protocol: "tcp".into(),
            host_id: "127.0.0.1".into(),
        }
    }

    #[test]
    fn the_reconcile_walks_only_after_the_master_dropped_something_on_its_own() {
        let s = state();
        let client = Uuid { first: 7, second: 7 };
        s.mount((segment(1), client)).expect("mount");
        s.put_start((client, "k".into(), 4096, ReplicateConfig::memory(1), "default".into()))
            .expect("put");
        assert_eq!(s.reconcile(), (0, 0), "nothing placed is stale");
        // The master drops the object behind serve's back (as an offboarding's revoke would):
        // until someone says so, the walk is skipped and the placement stays.
        s.master.remove("k").expect("remove in the master");
        assert_eq!(s.reconcile(), (0, 0), "no walk without a noted drop");
        s.note_drops();
        assert_eq!(s.reconcile(), (0, 1), "the noted drop frees the placement");
        assert_eq!(s.reconcile(), (0, 0), "and the note is taken once");
    }
}
