//! Mount, ReMount, Unmount, LocalDisk mount and Ping: the paths that carry liveness signals.
//!
//! Every mount runs its work inside [`Liveness::mount`](crate::liveness::Liveness::mount): the
//! work registers the segment (lifecycle `Mounting`) under the incarnation it is handed, and
//! only when it succeeded is the signal committed and the segment switched to `Ok`. A failed
//! mount changes nothing and, for a new client, creates no record and interns no name.
//!
//! Locks: a membership path holds its client's stripe (two mounts of one client run one after
//! the other; other clients' mounts and every request proceed) and the gate shared (a snapshot
//! waits for it), and writes the segment table briefly. Ping takes nothing: a name lookup and
//! the registry are lock-free, the signal is one CAS loop on the word.

use super::segment::{Lifecycle, Segment, Segments};
use super::{LocalDisk, Master, MasterCore, MasterError};
use crate::eligibility::Purpose;
use crate::liveness::{ClientId, ClientLivenessRecord, Incarnation, MountOutcome, PingStatus};
use crate::sync::{Arc, CellArc};
use std::collections::BTreeMap;

/// A segment the ReMount protocol re-announces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentSpec {
    /// Name.
    pub segment: String,
    /// Size, bytes.
    pub size: u64,
}

/// Checks that `client` may (re)mount `name` of `size`.
fn check_segment(segments: &Segments, client: ClientId, name: &str, size: u64) -> Result<(), MasterError> {
    if size == 0 {
        return Err(MasterError::InvalidParams);
    }
    match segments.by_name(name) {
        Some(seg) if seg.owner.client() != client || seg.size != size => Err(MasterError::InvalidParams),
        _ => Ok(()),
    }
}

/// Registers the segments of `specs` not yet held by `rec` as `Mounting`; returns them.
fn add_segments(
    segments: &mut Segments,
    rec: &Arc<ClientLivenessRecord>,
    client_name: &CellArc<str>,
    specs: &[SegmentSpec],
) -> Vec<Arc<Segment>> {
    let mut added = Vec::new();
    for s in specs {
        if segments.id_of(&s.segment).is_none() {
            added.push(segments.insert_with(|id| {
                Segment::new(
                    id,
                    s.segment.clone(),
                    client_name.clone(),
                    s.size,
                    rec.clone().into(),
                    Lifecycle::Mounting,
                )
            }));
        }
    }
    added
}

impl Master {
    /// MountSegment: a liveness signal when it succeeds (or the segment is already this client's).
    pub fn mount(&self, client: &str, segment: &str, size: u64) -> Result<(), MasterError> {
        self.core.mount_with_token(client, None, segment, size)
    }

    /// MountSegment with the caller's incarnation token (decisions.md question 4): a token
    /// naming an incarnation that is not the current one is refused (`INVALID_PARAMS`, the
    /// client must mount without it to start a new incarnation).
    pub fn mount_with_token(
        &self,
        client: &str,
        token: Option<Incarnation>,
        segment: &str,
        size: u64,
    ) -> Result<(), MasterError> {
        self.core.mount_with_token(client, token, segment, size)
    }

    /// ReMount after `NEED_REMOUNT`: re-announces `specs` (an empty list is valid) and makes the
    /// incarnation ready. All-or-nothing: one invalid segment fails the whole call. Like
    /// Mooncake's post-promotion ReMount, when a re-announced segment was restored from a
    /// snapshot and not adopted yet, it then walks every metadata shard (one at a time,
    /// [`Master::adoption_walk`]); the walk holds no lock a Ping or another client needs.
    pub fn remount(&self, client: &str, specs: &[SegmentSpec]) -> Result<(), MasterError> {
        self.core.remount(client, specs)
    }

    /// The post-promotion adoption walk of `client`'s ReMount of `specs` (see
    /// [`Master::remount`]); callable on its own (the load test's join storm runs it for
    /// every joiner, as main's ReMount does after an HA promotion). Returns the replicas matched.
    pub fn adoption_walk(&self, client: &str, specs: &[SegmentSpec]) -> usize {
        self.core.adoption_walk(client, specs)
    }

    /// MountLocalDiskSegment: registers the client's SSD; a liveness signal when it succeeds.
    pub fn mount_local_disk(&self, client: &str, capacity: u64) -> Result<(), MasterError> {
        self.core.mount_local_disk(client, capacity)
    }

    /// Ping: takes no lock (a lock-free name lookup, the lock-free registry, one CAS loop on the
    /// word). An unknown name is `NEED_REMOUNT` and creates nothing.
    pub fn ping(&self, client: &str) -> PingStatus {
        self.core.ping_with_token(client, None)
    }

    /// Ping with the caller's incarnation token: a stale token is `NEED_REMOUNT`.
    pub fn ping_with_token(&self, client: &str, token: Option<Incarnation>) -> PingStatus {
        self.core.ping_with_token(client, token)
    }

    /// Ping by client id, as Mooncake's Ping does (it carries the client's UUID): the same
    /// answer as [`Master::ping_with_token`] for the name that [`Master::client_id`]
    /// resolves to `id` (an id never interned answers `NEED_REMOUNT`), without the name lookup.
    /// A driver that resolves a client's name once (`simulate`) pings with this. Lock-free.
    pub fn ping_id(&self, id: ClientId, token: Option<Incarnation>) -> PingStatus {
        self.core.ping_id(id, token)
    }

    /// Voluntary unmount of one of the client's segments: its replicas and tasks go with it.
    pub fn unmount(&self, client: &str, segment: &str) -> Result<(), MasterError> {
        self.core.unmount(client, segment)
    }
}

impl MasterCore {
    /// The work behind [`Master::mount_with_token`].
    pub(crate) fn mount_with_token(
        &self,
        client: &str,
        token: Option<Incarnation>,
        segment: &str,
        size: u64,
    ) -> Result<(), MasterError> {
        let specs = [SegmentSpec {
            segment: segment.to_string(),
            size,
        }];
        self.mount_segments(client, token, &specs, false)
    }

    /// The work behind [`Master::remount`].
    pub(crate) fn remount(&self, client: &str, specs: &[SegmentSpec]) -> Result<(), MasterError> {
        self.mount_segments(client, None, specs, true)?;
        let adopt = {
            let segments = self.data.segments();
            specs
                .iter()
                .filter_map(|s| segments.by_name(&s.segment))
                .fold(false, |any, seg| seg.take_adoption() | any)
        };
        if adopt {
            self.adoption_walk(client, specs);
        }
        Ok(())
    }

    /// The work behind [`Master::adoption_walk`].
    pub(crate) fn adoption_walk(&self, client: &str, specs: &[SegmentSpec]) -> usize {
        self.membership
            .names()
            .lookup(client)
            .map_or(0, |id| self.reconcile_walk(id, specs))
    }

    fn mount_segments(
        &self,
        client: &str,
        token: Option<Incarnation>,
        specs: &[SegmentSpec],
        remount: bool,
    ) -> Result<(), MasterError> {
        let mut unique = BTreeMap::new();
        for s in specs {
            if unique
                .insert(s.segment.as_str(), s.size)
                .is_some_and(|prev| prev != s.size)
            {
                return Err(MasterError::InvalidParams);
            }
        }
        self.membership_change(client, |id, client_name| {
            let outcome = self.live.mount(id, token, |rec| {
                let mut segments = self.data.segments_mut();
                for s in specs {
                    check_segment(&segments, id, &s.segment, s.size)?;
                }
                // A name unmounted by another client's offboarding job that is still pending stays
                // taken until the job completes (trace-format.md; found by the differential fuzz
                // target). Checked inside the mount work, after the barrier (a client whose own
                // incarnation is being offboarded hears CLIENT_OFFBOARDING first), and under the
                // table's write lock: the job records the name before the segment leaves the table
                // (`drop_segment`), so either the table or the job's record holds the name at every
                // moment, and a mount that reads both under this lock cannot slip between them
                // (issue 29 defect 2: checked before the lock, a mount could take the name in that
                // gap and the job's late delete then erased the new owner's external entry).
                if specs.iter().any(|s| self.held_by_pending_offboarding(&s.segment, id)) {
                    return Err(MasterError::InvalidParams);
                }
                // A segment this client already holds must belong to this very incarnation.
                if specs
                    .iter()
                    .any(|s| segments.by_name(&s.segment).is_some_and(|seg| !seg.owner.is(rec)))
                {
                    return Err(MasterError::InvalidParams);
                }
                let added = add_segments(&mut segments, rec, &client_name, specs);
                drop(segments);
                let mut external = self.membership.external();
                for seg in &added {
                    external.put(&seg.name);
                }
                Ok(added)
            });
            self.finish_mount(outcome, remount)
        })
    }

    /// Runs a membership change of `client` as every mount does: under its stripe and the gate
    /// (shared), with the client's id (interned if the name is new) and name; a name interned for
    /// a change that failed is forgotten again, still under both.
    fn membership_change<T>(
        &self,
        client: &str,
        change: impl FnOnce(ClientId, CellArc<str>) -> Result<T, MasterError>,
    ) -> Result<T, MasterError> {
        let _stripe = self.membership.stripe(client);
        let _gate = self.membership.gate_shared();
        let (id, fresh) = self.id_for_mount(client);
        let client_name = self
            .membership
            .names()
            .name(id)
            .unwrap_or_else(|| CellArc::from(client));
        let result = change(id, client_name);
        if result.is_err() && fresh {
            self.forget_if_unused(client, id);
        }
        result
    }

    /// The id a mount of `name` runs under, interning the name if it is new (`true`).
    fn id_for_mount(&self, name: &str) -> (ClientId, bool) {
        match self.membership.names().lookup(name) {
            Some(id) => (id, false),
            None => (self.membership.names().intern(name), true),
        }
    }

    /// A first mount that failed leaves no name behind (item: unknown names create nothing).
    fn forget_if_unused(&self, name: &str, id: ClientId) {
        if self.live.registry().slot(id).is_none() {
            self.membership.names().forget(name, id);
        }
    }

    fn finish_mount(
        &self,
        outcome: MountOutcome<Vec<Arc<Segment>>, MasterError>,
        remount: bool,
    ) -> Result<(), MasterError> {
        match outcome {
            MountOutcome::Mounted {
                value,
                record,
                recovered,
                ..
            } => {
                for seg in value {
                    seg.set_lifecycle(Lifecycle::Ok);
                }
                if remount {
                    record.set_ready(true);
                }
                self.journal.record_transition(recovered);
                Ok(())
            }
            MountOutcome::Failed(e) => Err(e),
            MountOutcome::Offboarding(_) => Err(MasterError::ClientOffboarding),
            MountOutcome::StaleToken => Err(MasterError::InvalidParams),
            MountOutcome::Lost(added, _) => {
                for seg in added {
                    // The entry goes while the segment still holds its name (see `unmount`).
                    let _ = self.membership.external().delete(&seg.name);
                    self.data.segments_mut().remove(seg.id);
                }
                Err(MasterError::ClientOffboarding)
            }
        }
    }

    /// The post-promotion reconciliation pass of ReMount, shaped after main's HA standby
    /// adoption (`ReMountSegment` step 6: walk all shards, match each memory replica to the
    /// remounted segments by name, rebuild those segments' allocator view from the matches):
    /// every shard, one lock at a time, every replica's segment name compared with `specs`, and
    /// the matched keys and bytes gathered into a rebuilt view per segment. Unlike main it swaps
    /// nothing in — a restore already rebuilt the live allocators from the snapshot — so it
    /// only checks the rebuilt view against them and returns the replicas matched.
    pub(super) fn reconcile_walk(&self, client: ClientId, specs: &[SegmentSpec]) -> usize {
        let mut rebuilt: BTreeMap<&str, (u64, std::collections::BTreeSet<String>)> = BTreeMap::new();
        for i in 0..self.data.shards().len() {
            let shard = self.data.shards().lock(i);
            for (key, obj) in shard.objects.iter() {
                for r in &obj.replicas {
                    let Some(seg) = r.segment_ref() else { continue };
                    if let Some(spec) = specs.iter().find(|s| s.segment == seg.name) {
                        if seg.owner.client() == client && seg.lifecycle().permits(Purpose::Read) {
                            let view = rebuilt.entry(spec.segment.as_str()).or_default();
                            view.0 += obj.size;
                            view.1.insert(key.clone());
                        }
                    }
                }
            }
        }
        let matched = rebuilt.values().map(|v| v.1.len()).sum();
        for (name, (bytes, keys)) in &rebuilt {
            if let Some(seg) = self.data.segments().by_name(name).cloned() {
                let live = seg.alloc();
                // Concurrent requests may have moved the live view since a shard was walked:
                // a difference is reported, never "repaired" over their changes.
                if live.keys.len() != keys.len() || live.used < *bytes {
                    tracing::debug!(segment = %name, walked = keys.len(), live = live.keys.len(),
                        "remount walk saw a different allocator view (concurrent requests)");
                }
            }
        }
        matched
    }

    /// The work behind [`Master::mount_local_disk`].
    pub(crate) fn mount_local_disk(&self, client: &str, capacity: u64) -> Result<(), MasterError> {
        if capacity == 0 {
            return Err(MasterError::InvalidParams);
        }
        self.membership_change(client, |id, client_name| {
            let outcome = self.live.mount(id, None, |rec| {
                let mut disks = self.membership.local_disks();
                match disks.get(&id) {
                    Some(d) if d.owner.is(rec) => Ok(false),
                    Some(_) => Err(MasterError::InvalidParams),
                    None => {
                        disks.insert(
                            id,
                            LocalDisk {
                                owner: rec.clone().into(),
                                client_name: client_name.clone(),
                                capacity,
                                used: 0,
                                keys: Default::default(),
                                held: 0,
                                hold: false,
                            },
                        );
                        Ok(true)
                    }
                }
            });
            match outcome {
                MountOutcome::Mounted { recovered, .. } => {
                    self.journal.record_transition(recovered);
                    Ok(())
                }
                MountOutcome::Failed(e) => Err(e),
                MountOutcome::Lost(true, _) => {
                    self.membership.local_disks().remove(&id);
                    Err(MasterError::ClientOffboarding)
                }
                MountOutcome::Offboarding(_) | MountOutcome::Lost(..) => Err(MasterError::ClientOffboarding),
                MountOutcome::StaleToken => Err(MasterError::InvalidParams),
            }
        })
    }

    /// The work behind [`Master::ping_with_token`].
    pub(crate) fn ping_with_token(&self, client: &str, token: Option<Incarnation>) -> PingStatus {
        match self.membership.names().lookup(client) {
            Some(id) => self.ping_id(id, token),
            None => PingStatus::NeedRemount,
        }
    }

    /// The work behind [`Master::ping_id`].
    pub(crate) fn ping_id(&self, id: ClientId, token: Option<Incarnation>) -> PingStatus {
        let out = self.live.ping(id, token);
        self.journal.record_transition(out.recovered);
        out.status
    }

    /// The work behind [`Master::unmount`].
    pub(crate) fn unmount(&self, client: &str, segment: &str) -> Result<(), MasterError> {
        let _stripe = self.membership.stripe(client);
        let _gate = self.membership.gate_shared();
        let seg = self
            .data
            .segments()
            .by_name(segment)
            .cloned()
            .ok_or(MasterError::SegmentNotFound)?;
        if self.membership.names().lookup(client) != Some(seg.owner.client()) {
            return Err(MasterError::InvalidParams);
        }
        if !crate::eligibility::accepts_callbacks(&seg.owner) {
            return Err(MasterError::ClientOffboarding);
        }
        // The external entry goes while the segment still holds its name in the table: another
        // client mounting the same name (a restarted client under a new id) is refused until
        // the segment is gone, so this delete can never erase that client's new entry (issue
        // 29 defect 2: deleted after the table let go of the name, it could).
        self.drop_segment(&seg, |name| {
            let _ = self.membership.external().delete(name);
        });
        Ok(())
    }

    /// The current record of `client` for a callback: unknown names are `ILLEGAL_CLIENT`, an
    /// Offline (or offboarded) incarnation `UNAVAILABLE_IN_CURRENT_STATUS` (decisions.md:
    /// callbacks from a Suspected client are accepted, from Offline or unknown ones refused).
    pub(super) fn callback_record(&self, client: &str) -> Result<Arc<ClientLivenessRecord>, MasterError> {
        let id = self
            .membership
            .names()
            .lookup(client)
            .ok_or(MasterError::IllegalClient)?;
        let rec = self.live.registry().get(id).ok_or(MasterError::IllegalClient)?;
        if !crate::eligibility::accepts_callbacks(&rec) {
            return Err(MasterError::UnavailableInCurrentStatus);
        }
        Ok(rec)
    }
}
