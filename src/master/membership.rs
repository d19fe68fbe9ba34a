//! Mount, ReMount, Unmount, LocalDisk mount and Ping: the paths that carry liveness signals.
//!
//! Every mount runs its work inside [`Liveness::mount`](crate::liveness::Liveness::mount): the
//! work registers the segment (lifecycle `Mounting`) under the incarnation it is handed, and
//! only when it succeeded is the signal committed and the segment switched to `Ok`. A failed
//! mount changes nothing and, for a new client, creates no record.

use super::segment::{Lifecycle, Segment, SegmentId, Segments};
use super::{LocalDisk, Master, MasterError};
use crate::liveness::{ClientId, ClientLivenessRecord, MountOutcome, PingStatus};
use crate::sync::Arc;
use std::collections::BTreeMap;

/// A segment the ReMount protocol re-announces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentSpec {
    /// Name.
    pub segment: String,
    /// Size, bytes.
    pub size: u64,
}

/// Checks that `client` may (re)mount `name` of `size`: `Ok(true)` if it already holds it.
fn check_segment(segments: &Segments, client: ClientId, name: &str, size: u64) -> Result<bool, MasterError> {
    if size == 0 {
        return Err(MasterError::InvalidParams);
    }
    match segments.id_of(name).and_then(|id| segments.get(id)) {
        None => Ok(false),
        Some(seg) if seg.owner.client() != client || seg.size != size => Err(MasterError::InvalidParams),
        Some(_) => Ok(true),
    }
}

/// Registers the segments of `specs` not yet held by `rec` as `Mounting`; returns the new ids.
fn add_segments(segments: &mut Segments, rec: &Arc<ClientLivenessRecord>, specs: &[SegmentSpec]) -> Vec<SegmentId> {
    let mut added = Vec::new();
    for s in specs {
        if segments.id_of(&s.segment).is_none() {
            added.push(segments.insert(Segment {
                name: s.segment.clone(),
                size: s.size,
                used: 0,
                owner: rec.clone(),
                lifecycle: Lifecycle::Mounting,
                keys: Default::default(),
            }));
        }
    }
    added
}

impl Master {
    /// MountSegment: a liveness signal when it succeeds (or the segment is already this client's).
    pub fn mount(&mut self, client: &str, segment: &str, size: u64) -> Result<(), MasterError> {
        let specs = [SegmentSpec {
            segment: segment.to_string(),
            size,
        }];
        self.mount_segments(client, &specs, false)
    }

    /// ReMount after `NEED_REMOUNT`: re-announces `specs` (an empty list is valid) and makes the
    /// incarnation ready. All-or-nothing: one invalid segment fails the whole call.
    pub fn remount(&mut self, client: &str, specs: &[SegmentSpec]) -> Result<(), MasterError> {
        self.mount_segments(client, specs, true)
    }

    fn mount_segments(&mut self, client: &str, specs: &[SegmentSpec], remount: bool) -> Result<(), MasterError> {
        let id = self.client_id(client);
        let mut unique = BTreeMap::new();
        for s in specs {
            if unique
                .insert(s.segment.as_str(), s.size)
                .is_some_and(|prev| prev != s.size)
            {
                return Err(MasterError::InvalidParams);
            }
        }
        // A name unmounted by another client's offboarding job that is still pending stays taken
        // until the job completes (trace-format.md; found by the differential fuzz target). It is
        // checked inside the mount work, after the barrier: a client whose own incarnation is
        // being offboarded hears CLIENT_OFFBOARDING first.
        let reserved = specs.iter().any(|s| self.held_by_pending_offboarding(&s.segment, id));
        let segments = &mut self.segments;
        let external = &mut self.external;
        let outcome = self.live.mount(id, None, |rec| {
            for s in specs {
                check_segment(segments, id, &s.segment, s.size)?;
            }
            if reserved {
                return Err(MasterError::InvalidParams);
            }
            // A segment this client already holds must belong to this very incarnation.
            if specs.iter().any(|s| {
                segments
                    .id_of(&s.segment)
                    .and_then(|i| segments.get(i))
                    .is_some_and(|seg| !Arc::ptr_eq(&seg.owner, rec))
            }) {
                return Err(MasterError::InvalidParams);
            }
            let added = add_segments(segments, rec, specs);
            for sid in &added {
                if let Some(seg) = segments.get(*sid) {
                    external.put(&seg.name);
                }
            }
            Ok(added)
        });
        self.finish_mount(outcome, remount)
    }

    fn finish_mount(
        &mut self,
        outcome: MountOutcome<Vec<SegmentId>, MasterError>,
        remount: bool,
    ) -> Result<(), MasterError> {
        match outcome {
            MountOutcome::Mounted {
                value,
                record,
                recovered,
                ..
            } => {
                for sid in value {
                    if let Some(seg) = self.segments.get_mut(sid) {
                        seg.lifecycle = Lifecycle::Ok;
                    }
                }
                if remount {
                    record.set_ready(true);
                }
                self.push_transition(recovered);
                Ok(())
            }
            MountOutcome::Failed(e) => Err(e),
            MountOutcome::Offboarding(_) => Err(MasterError::ClientOffboarding),
            MountOutcome::StaleToken => Err(MasterError::InvalidParams),
            MountOutcome::Lost(added, _) => {
                for sid in added {
                    if let Some(seg) = self.segments.remove(sid) {
                        let _ = self.external.delete(&seg.name);
                    }
                }
                Err(MasterError::ClientOffboarding)
            }
        }
    }

    /// MountLocalDiskSegment: registers the client's SSD; a liveness signal when it succeeds.
    pub fn mount_local_disk(&mut self, client: &str, capacity: u64) -> Result<(), MasterError> {
        if capacity == 0 {
            return Err(MasterError::InvalidParams);
        }
        let id = self.client_id(client);
        let disks = &mut self.local_disks;
        let outcome = self.live.mount(id, None, |rec| match disks.get(&id) {
            Some(d) if Arc::ptr_eq(&d.owner, rec) => Ok(false),
            Some(_) => Err(MasterError::InvalidParams),
            None => {
                disks.insert(
                    id,
                    LocalDisk {
                        owner: rec.clone(),
                        capacity,
                        used: 0,
                        keys: Default::default(),
                    },
                );
                Ok(true)
            }
        });
        match outcome {
            MountOutcome::Mounted { recovered, .. } => {
                self.push_transition(recovered);
                Ok(())
            }
            MountOutcome::Failed(e) => Err(e),
            MountOutcome::Offboarding(_) | MountOutcome::Lost(..) => Err(MasterError::ClientOffboarding),
            MountOutcome::StaleToken => Err(MasterError::InvalidParams),
        }
    }

    /// Ping (not a path that touches any master structure besides the liveness core).
    pub fn ping(&mut self, client: &str) -> PingStatus {
        let id = self.client_id(client);
        let out = self.live.ping(id, None);
        self.push_transition(out.recovered);
        out.status
    }

    /// Voluntary unmount of one of the client's segments: its replicas and tasks go with it.
    pub fn unmount(&mut self, client: &str, segment: &str) -> Result<(), MasterError> {
        let id = self.client_id(client);
        let sid = self.segments.id_of(segment).ok_or(MasterError::SegmentNotFound)?;
        let owner = self
            .segments
            .get(sid)
            .map(|s| s.owner.clone())
            .ok_or(MasterError::SegmentNotFound)?;
        if owner.client() != id {
            return Err(MasterError::InvalidParams);
        }
        if !crate::eligibility::accepts_callbacks(&owner) {
            return Err(MasterError::ClientOffboarding);
        }
        if let Some(name) = self.drop_segment(sid) {
            let _ = self.external.delete(&name);
        }
        Ok(())
    }
}
