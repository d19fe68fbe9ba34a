//! Memory segments: name, size, owner incarnation, lifecycle, per-segment allocator accounting,
//! and the index of objects with a replica on the segment (what offboarding sweeps).

use crate::eligibility::{Purpose, Seam, ServingEligibility};
use crate::liveness::{ClientId, ClientLivenessRecord};
use crate::sync::Arc;
use std::collections::{BTreeMap, BTreeSet};

/// A segment's lifecycle, independent of its owner's liveness (invariant 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Lifecycle {
    /// Being mounted: serves nothing yet.
    Mounting,
    /// Allocatable and readable.
    Ok,
    /// Readable, not allocatable; its objects are being moved away.
    Draining,
    /// Being unmounted: serves nothing.
    Unmounting,
}

impl Lifecycle {
    /// Does this lifecycle allow `purpose`?
    pub fn permits(self, purpose: Purpose) -> bool {
        matches!(
            (self, purpose),
            (Lifecycle::Ok, _) | (Lifecycle::Draining, Purpose::Read)
        )
    }
}

/// A stable handle of a mounted segment (never reused within a master).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SegmentId(pub(crate) u32);

/// One mounted memory segment.
#[derive(Debug)]
pub struct Segment {
    /// Its name (unique among mounted segments).
    pub name: String,
    /// Capacity, bytes.
    pub size: u64,
    /// Bytes allocated.
    pub used: u64,
    /// The incarnation that mounted it; a later incarnation never makes it serve (invariant 13).
    pub owner: Arc<ClientLivenessRecord>,
    /// Lifecycle.
    pub lifecycle: Lifecycle,
    /// Keys with a replica here.
    pub keys: BTreeSet<String>,
}

impl Segment {
    /// Free bytes.
    pub fn free(&self) -> u64 {
        self.size - self.used
    }

    /// The seam's answer for using this segment for `purpose`, needing `bytes` free to allocate.
    pub fn eligibility(&self, seam: Seam, purpose: Purpose, bytes: u64) -> ServingEligibility {
        let valid = purpose == Purpose::Read || self.free() >= bytes;
        seam.decide(&self.owner, valid, self.lifecycle.permits(purpose))
    }
}

/// The segment table: a slab addressed by [`SegmentId`] plus a name index.
#[derive(Debug, Default)]
pub struct Segments {
    slab: Vec<Option<Segment>>,
    by_name: BTreeMap<String, SegmentId>,
    by_owner: BTreeMap<ClientId, BTreeSet<SegmentId>>,
}

impl Segments {
    /// The segment with this id, if still mounted.
    pub fn get(&self, id: SegmentId) -> Option<&Segment> {
        self.slab.get(id.0 as usize).and_then(Option::as_ref)
    }

    /// Mutable access.
    pub fn get_mut(&mut self, id: SegmentId) -> Option<&mut Segment> {
        self.slab.get_mut(id.0 as usize).and_then(Option::as_mut)
    }

    /// The id of the segment named `name`.
    pub fn id_of(&self, name: &str) -> Option<SegmentId> {
        self.by_name.get(name).copied()
    }

    /// Adds a segment (the name must be free).
    pub fn insert(&mut self, segment: Segment) -> SegmentId {
        let id = SegmentId(self.slab.len() as u32);
        self.by_name.insert(segment.name.clone(), id);
        self.by_owner.entry(segment.owner.client()).or_default().insert(id);
        self.slab.push(Some(segment));
        id
    }

    /// Removes a segment, returning it.
    pub fn remove(&mut self, id: SegmentId) -> Option<Segment> {
        let seg = self.slab.get_mut(id.0 as usize)?.take()?;
        self.by_name.remove(&seg.name);
        let owner = seg.owner.client();
        if let Some(set) = self.by_owner.get_mut(&owner) {
            set.remove(&id);
            if set.is_empty() {
                self.by_owner.remove(&owner);
            }
        }
        Some(seg)
    }

    /// The segments a client's incarnations own (the per-owner index offboarding uses).
    pub fn owned_by(&self, client: ClientId) -> Vec<SegmentId> {
        self.by_owner
            .get(&client)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Every mounted segment in name order.
    pub fn iter(&self) -> impl Iterator<Item = (SegmentId, &Segment)> {
        self.by_name
            .values()
            .filter_map(move |id| self.get(*id).map(|s| (*id, s)))
    }

    /// Slots in the slab (mounted or not): every [`SegmentId`] ever handed out is below it.
    pub(crate) fn slots(&self) -> usize {
        self.slab.len()
    }

    /// Number of mounted segments.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// No segment mounted.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

/// How Put and the other allocation paths choose among serving segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AllocationStrategy {
    /// Highest free ratio first (ties by name): deterministic.
    #[default]
    FreeRatioFirst,
    /// Uniformly random among serving segments (seeded).
    Random,
}
