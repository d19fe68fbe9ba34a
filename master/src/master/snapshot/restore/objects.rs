//! The objects phase of a restore: every object into its shard's table and eviction order, its
//! replicas charged to their segments, LocalDisks and tenants, each segment's key index built.
//! It is the failover's critical path (`snapshot/restore_1m`: 1M objects).
//!
//! # Ground rules
//!
//! - Two passes. The *check* pass walks the objects in snapshot order and makes every check
//!   that does not need the shard tables: size and replicas, recency listed twice, unknown
//!   segment or owner, a LocalDisk the owner does not have, a segment or LocalDisk filled past
//!   its size, two replicas in one place. It tallies segment and tenant usage in locals (no
//!   segment lock, no quota map per replica) and applies them once, when the pass is clean; it
//!   then bulk-builds each segment's key index (sorted input, as a snapshot lists its objects,
//!   builds in linear time). The *tables* pass builds the shards: shard by shard, each shard
//!   wholly by one thread, its objects inserted in snapshot order and its eviction order
//!   bulk-built from them at the end, so a shard's table is the same whichever thread built it
//!   and whenever (the restored master does not depend on the scheduling).
//! - Threads: from [`PARALLEL_MIN`] objects on a machine of 2 CPUs or more, the caller and one
//!   scoped helper (`sync::join`). The caller runs the check pass and then claims shards; the
//!   helper claims shards from the start. Shards are claimed [`CLAIM`] at a time from one
//!   counter (`Relaxed`: it only hands out disjoint ranges; the shards are published by their
//!   locks and the scope's join). Below that, or on one CPU, the caller does it all.
//! - Locks: a shard's lock is held while its objects are built (one shard at a time per
//!   thread; the two threads never hold the same one, the counter gives each shard to one);
//!   the LocalDisk table (a leaf) per LocalDisk replica in the check pass; a segment's `alloc`
//!   (a leaf) once per segment to apply its tally. The master is not shared until the restore
//!   returns, so nothing else contends.
//! - Which error: the one a single in-order pass would report, i.e. the first object that is
//!   wrong, and for that object its first check in the order above, a key listed twice last.
//!   The check pass stops at its first error; the tables pass reports, for each shard, the
//!   first object there whose key is already in it; the earliest of these wins, the check
//!   pass's on a tie (its checks come first for one object). An object the tables pass cannot
//!   build is one the check pass refuses too, at or before it.

use super::super::super::object::{Object, Replica, ReplicaKind};
use super::{bad, Restorer};
use crate::snapshot::{ObjectSnap, ReplicaSnap, SnapshotError};
use crate::sync::{self, AtomicUsize, Ordering};
use foldhash::fast::FixedState;
use std::collections::BTreeSet;

/// From this many objects the phase runs on two threads (below, a helper thread costs more
/// than it saves; the fuzz targets restore thousands of small snapshots).
const PARALLEL_MIN: usize = 16_384;

/// Shards a thread claims at a time in the tables pass.
const CLAIM: usize = 16;

/// An error found at an object, by the object's position in the snapshot.
type Found = (usize, SnapshotError);

/// The earlier of two errors; `a` on a tie.
fn earliest(a: Option<Found>, b: Option<Found>) -> Option<Found> {
    match (a, b) {
        (Some(a), Some(b)) if b.0 < a.0 => Some(b),
        (a, b) => a.or(b),
    }
}

/// Where a replica is (two replicas of one object in one place are refused): a segment by its
/// index in the restorer's list, a LocalDisk by its owning incarnation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Segment(u32),
    Disk(u128, u64),
}

/// The objects' positions grouped by shard (a counting sort) and the range of their recencies.
struct Plan {
    /// Shard `s` holds the objects at `order[starts[s]..starts[s + 1]]`, in snapshot order.
    starts: Vec<usize>,
    order: Vec<usize>,
    touched: (u64, u64),
}

/// What the check pass tallies, applied when it is clean.
struct Tally<'a> {
    /// Bytes and keys per segment (by index in the restorer's list).
    used: Vec<u64>,
    keys: Vec<Vec<&'a str>>,
    /// Bytes per tenant.
    quota: hashbrown::HashMap<&'a str, u64, FixedState>,
}

/// The recencies the check pass has seen: a bitmap over their range when it is at most 64
/// values per object (they come from one counter, so a real snapshot's are dense), else a hash
/// set sized up front. The bitmap stays in cache where the set misses on every insert.
enum Seen {
    Bits { min: u64, words: Vec<u64> },
    Set(hashbrown::HashSet<u64, FixedState>),
}

impl Seen {
    /// For `n` objects whose recencies lie in `min..=max`.
    fn new(n: usize, (min, max): (u64, u64)) -> Self {
        let words = (max.saturating_sub(min) / 64).saturating_add(1);
        if n > 0 && words <= n as u64 {
            Seen::Bits {
                min,
                words: vec![0; words as usize],
            }
        } else {
            Seen::Set(hashbrown::HashSet::with_capacity_and_hasher(n, FixedState::default()))
        }
    }

    /// Adds `t` (within the range given to [`Seen::new`]); `false` if it was there.
    fn insert(&mut self, t: u64) -> bool {
        match self {
            Seen::Bits { min, words } => {
                let d = t - *min;
                let (word, bit) = (&mut words[(d / 64) as usize], 1u64 << (d % 64));
                let fresh = *word & bit == 0;
                *word |= bit;
                fresh
            }
            Seen::Set(set) => set.insert(t),
        }
    }
}

impl<'a> Restorer<'_, 'a> {
    /// Objects, with their replicas charged to segments, disks and quotas (see the module doc).
    pub(super) fn objects(&mut self) -> Result<(), SnapshotError> {
        let plan = self.plan();
        let next = AtomicUsize::new(0);
        let this = &*self;
        let helper = || this.tables(&plan, &next);
        let caller = || {
            let checked = this.check(&plan).map(|tally| this.settle_segments(tally));
            (checked, this.tables(&plan, &next))
        };
        let parallel = plan.order.len() >= PARALLEL_MIN && sync::cpus() >= 2;
        let (theirs, (checked, mine)) = if parallel {
            sync::join(helper, caller)
        } else {
            (None, caller())
        };
        let quota = match (checked, earliest(mine, theirs)) {
            (Err(c), Some(t)) if t.0 < c.0 => return Err(t.1),
            (Err(c), _) => return Err(c.1),
            (Ok(_), Some(t)) => return Err(t.1),
            (Ok(quota), None) => quota,
        };
        for (tenant, bytes) in quota {
            self.charge(tenant, bytes);
        }
        Ok(())
    }

    /// Groups the objects by shard and finds the range of their recencies (one pass).
    fn plan(&self) -> Plan {
        let shards = &self.m.data.shards();
        let objects = &self.snap.objects;
        let mut starts = vec![0usize; shards.len() + 1];
        let mut touched = (u64::MAX, 0);
        let shard_of: Vec<u32> = objects
            .iter()
            .map(|o| {
                touched = (touched.0.min(o.touched), touched.1.max(o.touched));
                let s = shards.index_of(&o.key);
                starts[s + 1] += 1;
                s as u32
            })
            .collect();
        for s in 0..shards.len() {
            starts[s + 1] += starts[s];
        }
        let mut fill = starts.clone();
        let mut order = vec![0; objects.len()];
        for (i, s) in shard_of.into_iter().enumerate() {
            order[fill[s as usize]] = i;
            fill[s as usize] += 1;
        }
        Plan { starts, order, touched }
    }

    /// The check pass (see the module doc): the first error, or the tally.
    fn check(&self, plan: &Plan) -> Result<Tally<'a>, Found> {
        let objects = &self.snap.objects;
        let mut seen = Seen::new(objects.len(), plan.touched);
        let mut tally = Tally {
            used: vec![0; self.segments.len()],
            keys: vec![Vec::new(); self.segments.len()],
            quota: hashbrown::HashMap::default(),
        };
        let mut places = Vec::new();
        for (i, o) in objects.iter().enumerate() {
            if o.replicas.is_empty() || o.size == 0 {
                return Err((i, bad(format!("object {:?} has no replica or size 0", o.key))));
            }
            if !seen.insert(o.touched) {
                let msg = format!("object {:?} (or its recency {}) listed twice", o.key, o.touched);
                return Err((i, bad(msg)));
            }
            places.clear();
            for r in &o.replicas {
                let place = self.place(o, r, &mut tally).map_err(|e| (i, e))?;
                if places.contains(&place) {
                    return Err((i, bad(format!("object {:?} has two replicas in one place", o.key))));
                }
                places.push(place);
            }
        }
        Ok(tally)
    }

    /// One replica's place, charged to its segment or LocalDisk and to the tenant's quota.
    fn place(&self, o: &'a ObjectSnap, r: &'a ReplicaSnap, tally: &mut Tally<'a>) -> Result<Place, SnapshotError> {
        let key = &o.key;
        let place = match r {
            ReplicaSnap::Memory { segment, .. } => {
                let &id = self
                    .segment_ids
                    .get(segment.as_str())
                    .ok_or_else(|| bad(format!("object {key} on unknown segment {segment}")))?;
                let (used, size) = (&mut tally.used[id as usize], self.segments[id as usize].size);
                *used = used.saturating_add(o.size);
                if *used > size {
                    return Err(bad(format!("segment {segment} holds more than its size {size}")));
                }
                tally.keys[id as usize].push(key);
                Place::Segment(id)
            }
            ReplicaSnap::LocalDisk { owner, incarnation, .. } => {
                self.charge_disk(o, *owner, *incarnation)?;
                Place::Disk(*owner, *incarnation)
            }
        };
        let q = tally.quota.entry(o.tenant.as_str()).or_default();
        *q = q.saturating_add(o.size);
        Ok(place)
    }

    /// A LocalDisk replica of `o`, charged to the disk of incarnation (`owner`, `inc`).
    fn charge_disk(&self, o: &ObjectSnap, owner: u128, inc: u64) -> Result<(), SnapshotError> {
        let key = &o.key;
        let owner = self.owner(owner, inc, key)?;
        let mut disks = self.m.membership.local_disks();
        let disk = disks
            .get_mut(&owner.client())
            .filter(|d| d.owner.is(&owner))
            .ok_or_else(|| {
                bad(format!(
                    "object {key} on the LocalDisk of client {}, which has none",
                    owner.client()
                ))
            })?;
        disk.used = disk.used.saturating_add(o.size);
        if disk.used > disk.capacity {
            return Err(bad(format!(
                "LocalDisk of client {} holds more than its capacity {}",
                owner.client(),
                disk.capacity
            )));
        }
        disk.keys.insert(key.clone());
        Ok(())
    }

    /// Applies a clean check pass's segment tally (usage, bulk-built key indexes); returns the
    /// tenant tally.
    fn settle_segments(&self, tally: Tally<'a>) -> hashbrown::HashMap<&'a str, u64, FixedState> {
        for ((seg, used), keys) in self.segments.iter().zip(tally.used).zip(tally.keys) {
            let index: BTreeSet<String> = keys.into_iter().map(str::to_owned).collect();
            let mut a = seg.alloc();
            a.used = used;
            a.keys = index;
        }
        tally.quota
    }

    /// The tables pass on this thread: claims shards until none is left; the first key listed
    /// twice (or object it cannot build) among them.
    fn tables(&self, plan: &Plan, next: &AtomicUsize) -> Option<Found> {
        let shards = plan.starts.len() - 1;
        let mut first = None;
        loop {
            let from = next.fetch_add(CLAIM, Ordering::Relaxed);
            if from >= shards {
                return first;
            }
            for s in from..(from + CLAIM).min(shards) {
                let positions = &plan.order[plan.starts[s]..plan.starts[s + 1]];
                if !positions.is_empty() {
                    first = earliest(first, self.shard(s, positions));
                }
            }
        }
    }

    /// Builds shard `s` from the objects at `positions` (ascending).
    fn shard(&self, s: usize, positions: &[usize]) -> Option<Found> {
        let objects = &self.snap.objects;
        let mut shard = self.m.data.shards().lock(s);
        shard.objects.reserve(positions.len());
        let mut lru = Vec::with_capacity(positions.len());
        let mut found = None;
        for &i in positions {
            let o = &objects[i];
            let object = match self.object(o) {
                Ok(object) => object,
                Err(e) => {
                    found = Some((i, e));
                    break;
                }
            };
            if !shard.insert_absent(&o.key, object) {
                found = Some((i, bad(format!("object {:?} listed twice", o.key))));
                break;
            }
            lru.push((o.touched, o.key.clone()));
        }
        shard.restore_lru(lru);
        found
    }

    /// The object `o` describes, its replicas bound to the restored segments and records.
    fn object(&self, o: &ObjectSnap) -> Result<Object, SnapshotError> {
        let mut replicas = Vec::with_capacity(o.replicas.len());
        for r in &o.replicas {
            replicas.push(match r {
                ReplicaSnap::Memory { segment, complete } => {
                    let seg = self
                        .segment_ids
                        .get(segment.as_str())
                        .map(|&id| &self.segments[id as usize])
                        .ok_or_else(|| bad(format!("object {} on unknown segment {segment}", o.key)))?;
                    let mut rep = Replica::memory(seg.clone());
                    rep.complete = *complete;
                    rep
                }
                ReplicaSnap::LocalDisk {
                    owner,
                    incarnation,
                    complete,
                } => Replica {
                    kind: ReplicaKind::LocalDisk {
                        owner: self.owner(*owner, *incarnation, &o.key)?.into(),
                    },
                    complete: *complete,
                },
            });
        }
        Ok(Object {
            tenant: o.tenant.clone(),
            size: o.size,
            touched: o.touched,
            replicas,
            replication_task: o.replication_task,
            tier_task: o.tier_task,
            writer: None,
        })
    }
}
