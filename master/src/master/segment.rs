//! Memory segments: name, size, owner incarnation, lifecycle, per-segment allocator accounting,
//! and the index of objects with a replica on the segment (what offboarding sweeps).
//!
//! # Ground rules
//!
//! - A [`Segment`] is shared (`Arc`) by the segment table, the replicas placed on it and the
//!   tasks that target it. Its name, size and owner never change.
//! - `lifecycle` is a word any path may read with one load; it is written by the membership
//!   paths (mount commit, drain) and by unmount/offboarding, which store `Unmounting` *before*
//!   they remove the segment's replicas, so a replica that still holds the `Arc` of a dropped
//!   segment never serves again. Release/Acquire: a reader that sees `Ok` also sees the
//!   segment's registration.
//! - `alloc` (bytes used and the key index) is a leaf mutex: it is taken last, held for a few
//!   instructions, and no other lock is taken while holding it.
//! - The [`Segments`] table is behind the master's `RwLock`: written by mount, unmount and the
//!   offboarding `segments` step (short), read by allocation and the diagnostic paths. Get never
//!   takes it: a replica reaches its segment through its own `Arc`.

use super::lock_order::{Held, Level};
use crate::eligibility::{Purpose, Seam, ServingEligibility};
use crate::liveness::{ClientId, Owner};
use crate::sync::{Arc, AtomicBool, AtomicU64, CellArc, Mutex, MutexGuard, Ordering};
use std::collections::{BTreeMap, BTreeSet};

pub use crate::resources::Lifecycle;

/// A stable handle of a mounted segment (never reused within a master).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SegmentId(pub(crate) u32);

/// Allocator accounting of one segment (the leaf lock).
#[derive(Debug, Default)]
pub struct SegmentAlloc {
    /// Bytes allocated (including `held`).
    pub used: u64,
    /// Keys with a replica here.
    pub keys: BTreeSet<String>,
    /// Bytes released while a snapshot runs, still counted in `used` until it ends (see
    /// `Segment::hold_frees`).
    pub held: u64,
    /// A snapshot is running: releases are held.
    pub hold: bool,
}

/// One mounted memory segment.
#[derive(Debug)]
pub struct Segment {
    /// Its handle.
    pub id: SegmentId,
    /// Its name (unique among mounted segments).
    pub name: String,
    /// The owning client's name (what descriptors print).
    pub client_name: CellArc<str>,
    /// Capacity, bytes.
    pub size: u64,
    /// The incarnation that mounted it; a later incarnation never makes it serve (invariant 13).
    pub owner: Owner,
    lifecycle: AtomicU64,
    /// Restored from a snapshot and not yet re-announced by its owner's ReMount (the
    /// post-promotion adoption walk runs once per such segment).
    awaiting_adoption: AtomicBool,
    alloc: Mutex<SegmentAlloc>,
}

/// A lifecycle as the segment's atomic word holds it (this file's encoding, nobody else's).
fn word_of(l: Lifecycle) -> u64 {
    match l {
        Lifecycle::Mounting => 0,
        Lifecycle::Ok => 1,
        Lifecycle::Draining => 2,
        Lifecycle::Unmounting => 3,
    }
}

/// The lifecycle a segment's word holds; an out-of-range word fails closed (`Unmounting`:
/// it serves nothing).
fn lifecycle_of(word: u64) -> Lifecycle {
    match word {
        0 => Lifecycle::Mounting,
        1 => Lifecycle::Ok,
        2 => Lifecycle::Draining,
        _ => Lifecycle::Unmounting,
    }
}

impl Segment {
    /// A new segment in `lifecycle`.
    pub(crate) fn new(
        id: SegmentId,
        name: String,
        client_name: CellArc<str>,
        size: u64,
        owner: Owner,
        lifecycle: Lifecycle,
    ) -> Self {
        Self {
            id,
            name,
            client_name,
            size,
            owner,
            lifecycle: AtomicU64::new(word_of(lifecycle)),
            awaiting_adoption: AtomicBool::new(false),
            alloc: Mutex::new(SegmentAlloc::default()),
        }
    }

    /// The lifecycle now (one load).
    pub fn lifecycle(&self) -> Lifecycle {
        lifecycle_of(self.lifecycle.load(Ordering::Acquire))
    }

    /// Marks a segment restored from a snapshot: its owner's next ReMount adopts it.
    pub(crate) fn mark_restored(&self) {
        self.awaiting_adoption.store(true, Ordering::Relaxed);
    }

    /// Takes the adoption mark (`true` once, for the first ReMount after a restore). Relaxed:
    /// it only decides whether a read-only walk runs.
    pub(crate) fn take_adoption(&self) -> bool {
        self.awaiting_adoption.swap(false, Ordering::Relaxed)
    }

    /// Sets the lifecycle. A swap, not a store: every write of the lifecycle is a
    /// read-modify-write, so an unmount's `Unmounting` and a drain's CAS ([`Segment::begin_drain`])
    /// are totally ordered and the CAS always compares against the latest value. (With a plain
    /// store, loom explored a schedule where the drain's CAS, run after the unmount's store,
    /// still succeeded from `Ok` and the unmounted segment ended `Draining`:
    /// loom_tests/master_drain_vs_unmount.rs.)
    pub(crate) fn set_lifecycle(&self, l: Lifecycle) {
        self.lifecycle.swap(word_of(l), Ordering::AcqRel);
    }

    /// Drain's start: `Ok` → `Draining` by CAS (`Draining` stays), or `false` if the segment
    /// is `Mounting` or `Unmounting`. A CAS, not a check then a store: an unmount storing
    /// `Unmounting` between the two would have been overwritten with `Draining`, and a segment
    /// being unmounted would serve reads again (issue 29).
    pub(crate) fn begin_drain(&self) -> bool {
        let (ok, draining) = (word_of(Lifecycle::Ok), word_of(Lifecycle::Draining));
        match self
            .lifecycle
            .compare_exchange(ok, draining, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(now) => now == draining,
        }
    }

    /// The allocator accounting (a leaf lock: take nothing else while holding it).
    pub fn alloc(&self) -> Held<MutexGuard<'_, SegmentAlloc>> {
        Held::take(Level::Leaf, || self.alloc.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The allocator's lock taken past the order check (a test holding every lock at once).
    #[cfg(test)]
    pub(crate) fn alloc_raw(&self) -> MutexGuard<'_, SegmentAlloc> {
        self.alloc.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes allocated.
    pub fn used(&self) -> u64 {
        self.alloc().used
    }

    /// Free bytes.
    pub fn free(&self) -> u64 {
        self.size.saturating_sub(self.used())
    }

    /// Objects with a replica here.
    pub fn key_count(&self) -> usize {
        self.alloc().keys.len()
    }

    /// The seam's answer for using this segment for `purpose`, needing `bytes` free to allocate.
    /// The free-space term takes the allocator's lock, so it is asked only of an Active owner's
    /// segment (an allocation scan over a fleet that is mostly Suspected skips the locks).
    pub fn eligibility(&self, seam: Seam, purpose: Purpose, bytes: u64) -> ServingEligibility {
        let lifecycle_ok = self.lifecycle().permits(purpose);
        seam.decide_with(
            &self.owner,
            || purpose == Purpose::Read || self.free() >= bytes,
            lifecycle_ok,
        )
    }

    /// Reserves `size` bytes for `key` if the segment has room: the check and the charge are
    /// one critical section, so two concurrent allocations never overcommit.
    pub(crate) fn try_reserve(&self, key: &str, size: u64) -> bool {
        if !self.lifecycle().permits(Purpose::Allocate) {
            return false;
        }
        let mut a = self.alloc();
        if self.size.saturating_sub(a.used) < size {
            return false;
        }
        a.used += size;
        a.keys.insert(key.to_string());
        true
    }

    /// Releases `size` bytes of `key` (held until the running snapshot ends, if one runs).
    pub(crate) fn release(&self, key: &str, size: u64) {
        let mut a = self.alloc();
        if a.hold {
            a.held = a.held.saturating_add(size);
        } else {
            a.used = a.used.saturating_sub(size);
        }
        a.keys.remove(key);
    }

    /// Starts (`true`) or ends (`false`) holding releases for a snapshot. While it holds, space
    /// freed here cannot be allocated again: a snapshot copies shards one at a time, and space
    /// freed by a Remove in a shard already copied, then taken by a Put in a shard copied
    /// later, would be counted twice in the snapshot, which restore refuses as a segment
    /// holding more than its size (found by `tests/master_stress.rs`). Ending releases what
    /// was held. The flag and the bytes live under the allocator lock, as `used` does.
    pub(crate) fn hold_frees(&self, hold: bool) {
        let mut a = self.alloc();
        a.hold = hold;
        if !hold {
            a.used = a.used.saturating_sub(std::mem::take(&mut a.held));
        }
    }
}

/// The segment table: a slab addressed by [`SegmentId`] plus name and owner indexes.
#[derive(Debug, Default)]
pub struct Segments {
    slab: Vec<Option<Arc<Segment>>>,
    by_name: BTreeMap<String, SegmentId>,
    by_owner: BTreeMap<ClientId, BTreeSet<SegmentId>>,
}

impl Segments {
    /// The segment with this id, if still mounted.
    pub fn get(&self, id: SegmentId) -> Option<&Arc<Segment>> {
        self.slab.get(id.0 as usize).and_then(Option::as_ref)
    }

    /// The id of the segment named `name`.
    pub fn id_of(&self, name: &str) -> Option<SegmentId> {
        self.by_name.get(name).copied()
    }

    /// The segment named `name`.
    pub fn by_name(&self, name: &str) -> Option<&Arc<Segment>> {
        self.id_of(name).and_then(|id| self.get(id))
    }

    /// The id the next inserted segment gets.
    pub(crate) fn next_id(&self) -> SegmentId {
        SegmentId(self.slab.len() as u32)
    }

    /// Adds a segment built by `make` for the next id (the name must be free).
    pub(crate) fn insert_with(&mut self, make: impl FnOnce(SegmentId) -> Segment) -> Arc<Segment> {
        let segment = Arc::new(make(self.next_id()));
        self.by_name.insert(segment.name.clone(), segment.id);
        self.by_owner
            .entry(segment.owner.client())
            .or_default()
            .insert(segment.id);
        self.slab.push(Some(segment.clone()));
        segment
    }

    /// Removes a segment, returning it.
    pub(crate) fn remove(&mut self, id: SegmentId) -> Option<Arc<Segment>> {
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
    pub fn owned_by(&self, client: ClientId) -> Vec<Arc<Segment>> {
        self.by_owner
            .get(&client)
            .map(|s| s.iter().filter_map(|id| self.get(*id).cloned()).collect())
            .unwrap_or_default()
    }

    /// Slots of the slab (mounted or not): the range [`Segments::slot`] samples.
    pub(crate) fn slot_count(&self) -> usize {
        self.slab.len()
    }

    /// The segment in slab slot `i`, if still mounted.
    pub(crate) fn slot(&self, i: usize) -> Option<&Arc<Segment>> {
        self.slab.get(i).and_then(Option::as_ref)
    }

    /// Every mounted segment in name order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Segment>> {
        self.by_name.values().filter_map(move |id| self.get(*id))
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
    /// Uniformly random among serving segments (seeded): samples a bounded number of
    /// candidates, so its cost does not grow with the number of segments.
    Random,
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::liveness::{ClientId, ClientLivenessRecord, Incarnation};

    fn segment(l: Lifecycle) -> Segment {
        let rec = Arc::new(ClientLivenessRecord::new(
            ClientId(1),
            Incarnation::FIRST,
            crate::clock::LivenessMs(0),
            1_000,
        ));
        Segment::new(SegmentId(0), "s".into(), "c".into(), 10, rec.into(), l)
    }

    /// Drain starts only from `Ok` (or stays `Draining`), and never overwrites a lifecycle an
    /// unmount or a mount wrote: the CAS of `begin_drain` (issue 29: drain checked, then
    /// stored `Draining` over whatever was there by then).
    #[test]
    fn drain_starts_only_from_ok_and_never_overwrites_unmounting() {
        for (from, started, after) in [
            (Lifecycle::Ok, true, Lifecycle::Draining),
            (Lifecycle::Draining, true, Lifecycle::Draining),
            (Lifecycle::Mounting, false, Lifecycle::Mounting),
            (Lifecycle::Unmounting, false, Lifecycle::Unmounting),
        ] {
            let s = segment(from);
            assert_eq!(s.begin_drain(), started, "{from:?}");
            assert_eq!(s.lifecycle(), after, "{from:?}");
        }
    }

    /// Every lifecycle survives the segment's word, and a word no lifecycle writes fails closed.
    #[test]
    fn the_lifecycle_word_round_trips_and_an_unknown_word_serves_nothing() {
        for l in [
            Lifecycle::Mounting,
            Lifecycle::Ok,
            Lifecycle::Draining,
            Lifecycle::Unmounting,
        ] {
            assert_eq!(lifecycle_of(word_of(l)), l);
            assert_eq!(segment(l).lifecycle(), l);
        }
        for word in [4, 17, u64::MAX] {
            assert_eq!(lifecycle_of(word), Lifecycle::Unmounting, "word {word}");
        }
    }
}
