//! Put, Get, Remove and the allocation and release helpers every path shares.
//!
//! Locks (see the table in the module doc of [`master`](super)): a path holds its key's shard
//! for its whole critical section; allocation reads the segment table and reserves space in
//! each chosen segment's allocator (check and charge in one critical section, so concurrent
//! Puts never overcommit); quotas are checked and charged in one critical section too.
//! Eviction runs with no shard held and then takes shards one at a time.

use super::object::{Object, Replica, ReplicaKind};
use super::segment::{AllocationStrategy, Segment, SegmentId, Segments};
use super::shard::Shard;
use super::{add_refund, Held, Master, MasterCore, MasterError, Refunds, ReplicaDesc, TenantQuota, DEFAULT_TENANT};
use crate::eligibility::Purpose;
use crate::liveness::ClientLivenessRecord;
use crate::sync::{Arc, MutexGuard};
use rand::seq::SliceRandom;
use rand::Rng;
use std::collections::BTreeMap;

/// The most replicas one Put may ask for: more is `INVALID_PARAMS`, a clear refusal rather than
/// an allocation on every segment of the table (issue 29 defect 6: a huge count overflowed the
/// capacity of the list of chosen segments and panicked).
pub const MAX_REPLICAS: usize = 1024;

/// Objects one Put may evict to make room.
const MAX_EVICTIONS_PER_PUT: usize = 64;

/// Below this many segments the random strategy shuffles them all; above, it samples.
const SAMPLE_ABOVE: usize = 64;

impl Master {
    /// PutStart for the default tenant; see [`Master::put_for`].
    pub fn put(&self, key: &str, size: u64, replicas: usize) -> Result<Vec<ReplicaDesc>, MasterError> {
        self.core.put_start(None, DEFAULT_TENANT, key, size, replicas)
    }

    /// PutStart: allocates `replicas` (1 to [`MAX_REPLICAS`]) replicas of `size` bytes on distinct serving segments,
    /// evicting least recently used servable objects when no serving segment has room.
    /// Best effort: fewer than asked is allowed, none is `NO_AVAILABLE_HANDLE`; the tenant's
    /// quota must hold every replica handed out (`TENANT_QUOTA_EXCEEDED`). A Put whose quota
    /// cannot hold even one replica evicts nothing.
    pub fn put_for(
        &self,
        tenant: &str,
        key: &str,
        size: u64,
        replicas: usize,
    ) -> Result<Vec<ReplicaDesc>, MasterError> {
        self.core.put_start(None, tenant, key, size, replicas)
    }

    /// PutStart by a known writer: as [`Master::put_for`], and the object remembers its
    /// writer so that [`Master::put_end_as`] / [`Master::put_revoke_as`] can refuse
    /// callbacks from anyone else. An unknown writer is `ILLEGAL_CLIENT`; an Offline one is
    /// `UNAVAILABLE_IN_CURRENT_STATUS`.
    pub fn put_as(
        &self,
        writer: &str,
        tenant: &str,
        key: &str,
        size: u64,
        replicas: usize,
    ) -> Result<Vec<ReplicaDesc>, MasterError> {
        self.core.put_as(writer, tenant, key, size, replicas)
    }

    /// PutEnd: the writer finished; the replicas become readable. Accepted whatever the owners'
    /// liveness (invariant 11).
    pub fn put_end(&self, key: &str) -> Result<(), MasterError> {
        self.core.put_callback(None, key, true)
    }

    /// PutRevoke: the writer abandoned the put; its allocations are released.
    pub fn put_revoke(&self, key: &str) -> Result<(), MasterError> {
        self.core.put_callback(None, key, false)
    }

    /// PutEnd from `client`: refused from an unknown (`ILLEGAL_CLIENT`) or Offline
    /// (`UNAVAILABLE_IN_CURRENT_STATUS`) client and from anyone but the object's writer, if it
    /// has one; accepted from a Suspected one (invariant 11).
    pub fn put_end_as(&self, client: &str, key: &str) -> Result<(), MasterError> {
        self.core.put_callback(Some(client), key, true)
    }

    /// PutRevoke from `client`, with the same rules as [`Master::put_end_as`].
    pub fn put_revoke_as(&self, client: &str, key: &str) -> Result<(), MasterError> {
        self.core.put_callback(Some(client), key, false)
    }

    /// GetReplicaList: the replicas a reader may use now; a hit makes the key recently used.
    pub fn get(&self, key: &str) -> Result<Vec<ReplicaDesc>, MasterError> {
        self.core.get(key)
    }

    /// Admin descriptor query: like Get (it follows the serving rule and hides a Suspected
    /// owner's replicas, decisions.md question 1) but changes nothing, not even recency.
    pub fn admin_replicas(&self, key: &str) -> Result<Vec<ReplicaDesc>, MasterError> {
        self.core.admin_replicas(key)
    }

    /// Remove: erases a key and releases its replicas.
    pub fn remove(&self, key: &str) -> Result<(), MasterError> {
        self.core.remove(key)
    }

    /// Bytes charged to all tenants (every replica, including ones being written).
    pub fn quota_used(&self) -> u64 {
        self.core.data.quotas().used()
    }

    /// Per-tenant quota accounting (locked).
    pub fn quotas(&self) -> Held<MutexGuard<'_, BTreeMap<String, TenantQuota>>> {
        self.core.data.quotas().table()
    }

    /// Sets (or with `None` removes) a tenant's quota limit, bytes.
    pub fn set_quota_limit(&self, tenant: &str, limit: Option<u64>) {
        self.core.data.quotas().set_limit(tenant, limit)
    }
}

impl MasterCore {
    /// The work behind [`Master::put_as`].
    pub(crate) fn put_as(
        &self,
        writer: &str,
        tenant: &str,
        key: &str,
        size: u64,
        replicas: usize,
    ) -> Result<Vec<ReplicaDesc>, MasterError> {
        let rec = self.callback_record(writer)?;
        self.put_start(Some(rec), tenant, key, size, replicas)
    }

    /// The work behind every PutStart: [`Master::put`], [`Master::put_for`] and, with the
    /// writer's record, [`Master::put_as`].
    fn put_start(
        &self,
        writer: Option<Arc<ClientLivenessRecord>>,
        tenant: &str,
        key: &str,
        size: u64,
        replicas: usize,
    ) -> Result<Vec<ReplicaDesc>, MasterError> {
        if size == 0 || replicas == 0 || replicas > MAX_REPLICAS {
            return Err(MasterError::InvalidParams);
        }
        let si = self.data.shards().index_of(key);
        let mut shard = self.data.shards().lock(si);
        if shard.objects.contains_key(key) {
            return Err(MasterError::ObjectAlreadyExists);
        }
        let mut chosen = self.reserve_segments(key, size, replicas, &[]);
        // Evict only for a Put the quota could take (a refused Put must not have evicted).
        if chosen.is_empty() && self.data.quotas().allows(tenant, size) {
            drop(shard);
            self.evict_for(size);
            shard = self.data.shards().lock(si);
            if shard.objects.contains_key(key) {
                return Err(MasterError::ObjectAlreadyExists);
            }
            chosen = self.reserve_segments(key, size, replicas, &[]);
        }
        if chosen.is_empty() {
            return Err(MasterError::NoAvailableHandle);
        }
        if !self
            .data
            .quotas()
            .try_charge(tenant, size.saturating_mul(chosen.len() as u64))
        {
            for seg in &chosen {
                seg.release(key, size);
            }
            return Err(MasterError::TenantQuotaExceeded);
        }
        let object = Object {
            tenant: tenant.to_string(),
            size,
            touched: 0,
            replicas: chosen.into_iter().map(Replica::memory).collect(),
            replication_task: None,
            tier_task: None,
            writer,
        };
        shard.insert(key, object, self.data.shards().next_touch());
        let mut refunds = Refunds::new();
        self.undo_raced_allocations(&mut shard, key, &mut refunds);
        let out = shard.objects.get(key).map(|o| self.describe(o, |_| true));
        drop(shard);
        self.data.quotas().apply_refunds(refunds);
        out.ok_or(MasterError::NoAvailableHandle)
    }

    /// The re-check of the allocation protocol (module doc): drops `key`'s incomplete memory
    /// replicas whose segment stopped allocating or whose owner stopped being Active since they
    /// were chosen. Runs under the shard lock, right after the object was published.
    pub(super) fn undo_raced_allocations(&self, shard: &mut Shard, key: &str, refunds: &mut Refunds) {
        let seam = self.seam();
        if !seam.enabled {
            return;
        }
        let raced = |r: &Replica| {
            !r.complete
                && r.segment_ref()
                    .is_some_and(|s| !s.lifecycle().permits(Purpose::Allocate) || !seam.executor(&s.owner).serves())
        };
        if shard.objects.get(key).is_some_and(|o| o.replicas.iter().any(raced)) {
            self.remove_replicas_in(shard, key, raced, refunds);
        }
    }

    /// Evicts least recently used objects until some serving segment can take `size` bytes.
    /// Only complete objects without tasks whose every replica serves are victims: a Suspected
    /// owner's replicas are retained, not evicted (invariant 9). Shards are visited one at a
    /// time from a rotating start (a one-shard master evicts in exact LRU order). Returns
    /// whether room was made.
    fn evict_for(&self, size: u64) -> bool {
        let seam = self.seam();
        let serving_exists = self
            .data
            .segments()
            .iter()
            .any(|s| s.size >= size && s.eligibility(seam, Purpose::Allocate, 0).serves());
        if !serving_exists {
            return false;
        }
        let n = self.data.shards().len();
        let start = self.data.next_evict_start();
        let mut budget = MAX_EVICTIONS_PER_PUT;
        for j in 0..n {
            let i = (start + j) % n;
            let mut shard = self.data.shards().lock(i);
            let victims: Vec<String> = shard
                .lru
                .values()
                .filter(|k| shard.objects.get(*k).is_some_and(|o| self.evictable(o)))
                .take(budget)
                .cloned()
                .collect();
            for key in victims {
                budget -= 1;
                let mut refunds = Refunds::new();
                self.remove_object_in(&mut shard, &key, &mut refunds);
                self.data.quotas().apply_refunds(refunds);
                if self.room_for(size) {
                    return true;
                }
            }
            if budget == 0 {
                break;
            }
        }
        false
    }

    fn room_for(&self, size: u64) -> bool {
        let seam = self.seam();
        self.data
            .segments()
            .iter()
            .any(|s| s.eligibility(seam, Purpose::Allocate, size).serves())
    }

    fn evictable(&self, o: &Object) -> bool {
        let seam = self.seam();
        o.is_complete()
            && o.replication_task.is_none()
            && o.tier_task.is_none()
            && o.replicas
                .iter()
                .all(|r| r.segment().is_some() && r.eligibility(seam).serves())
    }

    /// The work behind PutEnd (`end`) and PutRevoke, from `client` if one is named.
    fn put_callback(&self, client: Option<&str>, key: &str, end: bool) -> Result<(), MasterError> {
        let caller = client.map(|c| self.callback_record(c)).transpose()?;
        let mut shard = self.data.shards().lock_key(key);
        let obj = shard.objects.get_mut(key).ok_or(MasterError::ObjectNotFound)?;
        if let (Some(caller), Some(writer)) = (&caller, &obj.writer) {
            if !Arc::ptr_eq(caller, writer) {
                return Err(MasterError::IllegalClient);
            }
        }
        // Not `is_complete`: a Copy in flight adds an incomplete replica to an ended Put, and a
        // second PutEnd must not mark it written (nor a late PutRevoke erase the object).
        if obj.put_ended() {
            return Err(MasterError::InvalidParams);
        }
        if end {
            for r in obj.replicas.iter_mut() {
                r.complete = true;
            }
            return Ok(());
        }
        let mut refunds = Refunds::new();
        self.remove_object_in(&mut shard, key, &mut refunds);
        drop(shard);
        self.data.quotas().apply_refunds(refunds);
        Ok(())
    }

    /// The work behind [`Master::get`].
    pub(crate) fn get(&self, key: &str) -> Result<Vec<ReplicaDesc>, MasterError> {
        let mut shard = self.data.shards().lock_key(key);
        let out = self.readable(&shard, key)?;
        shard.touch(key, self.data.shards().next_touch());
        Ok(out)
    }

    /// The work behind [`Master::admin_replicas`].
    pub(crate) fn admin_replicas(&self, key: &str) -> Result<Vec<ReplicaDesc>, MasterError> {
        let shard = self.data.shards().lock_key(key);
        self.readable(&shard, key)
    }

    fn readable(&self, shard: &Shard, key: &str) -> Result<Vec<ReplicaDesc>, MasterError> {
        let obj = shard.objects.get(key).ok_or(MasterError::ObjectNotFound)?;
        let seam = self.seam();
        let out = self.describe(obj, |r| r.eligibility(seam).serves());
        if out.is_empty() {
            return Err(MasterError::ReplicaIsNotReady);
        }
        Ok(out)
    }

    /// The work behind [`Master::remove`].
    pub(crate) fn remove(&self, key: &str) -> Result<(), MasterError> {
        let mut shard = self.data.shards().lock_key(key);
        let obj = shard.objects.get(key).ok_or(MasterError::ObjectNotFound)?;
        if obj.replication_task.is_some() {
            return Err(MasterError::ObjectHasReplicationTask);
        }
        let mut refunds = Refunds::new();
        self.remove_object_in(&mut shard, key, &mut refunds);
        drop(shard);
        self.data.quotas().apply_refunds(refunds);
        Ok(())
    }

    /// Descriptors of `obj`'s replicas that pass `keep`, in replica order.
    pub(super) fn describe(&self, obj: &Object, keep: impl Fn(&Replica) -> bool) -> Vec<ReplicaDesc> {
        obj.replicas
            .iter()
            .filter(|r| keep(r))
            .map(|r| match &r.kind {
                ReplicaKind::Memory { segment, .. } => ReplicaDesc {
                    segment: segment.name.clone(),
                    client: segment.client_name.to_string(),
                },
                ReplicaKind::LocalDisk { owner } => {
                    let name = self.membership.client_name(owner.client());
                    ReplicaDesc {
                        segment: format!("local_disk:{name}"),
                        client: name,
                    }
                }
            })
            .collect()
    }

    /// Chooses up to `n` distinct segments that may take `size` new bytes now (excluding
    /// `exclude`) and reserves `size` bytes for `key` in each.
    pub(super) fn reserve_segments(&self, key: &str, size: u64, n: usize, exclude: &[SegmentId]) -> Vec<Arc<Segment>> {
        let seam = self.seam();
        let segments = self.data.segments();
        let eligible =
            |s: &Arc<Segment>| !exclude.contains(&s.id) && s.eligibility(seam, Purpose::Allocate, size).serves();
        let candidates: Vec<Arc<Segment>> = match self.options.strategy {
            // Highest free ratio first: free/size compared as free·size' > free'·size; ties keep name order.
            AllocationStrategy::FreeRatioFirst => {
                let mut c: Vec<(Arc<Segment>, u64)> = segments
                    .iter()
                    .filter(|s| eligible(s))
                    .map(|s| (s.clone(), s.free()))
                    .collect();
                c.sort_by(|a, b| {
                    (u128::from(b.1) * u128::from(a.0.size)).cmp(&(u128::from(a.1) * u128::from(b.0.size)))
                });
                c.into_iter().map(|c| c.0).collect()
            }
            AllocationStrategy::Random => self.random_candidates(&segments, n, &eligible),
        };
        drop(segments);
        let mut out = Vec::with_capacity(n.min(candidates.len()));
        for seg in candidates {
            if out.len() == n {
                break;
            }
            if seg.try_reserve(key, size) {
                out.push(seg);
            }
        }
        out
    }

    /// Random candidates: every eligible segment shuffled when there are few; otherwise a
    /// sample of `4n + 16` slots (O(n), not O(segments)), falling back to all of them only when
    /// the sample found fewer than `n`.
    fn random_candidates(
        &self,
        segments: &Segments,
        n: usize,
        eligible: &impl Fn(&Arc<Segment>) -> bool,
    ) -> Vec<Arc<Segment>> {
        // The RNG is a leaf and so is each segment's allocator (which `eligible` reads): the
        // draws are taken first and the RNG released, so no two leaves are ever held at once.
        // The draws are the same, in the same order, as when they were interleaved.
        let slots = segments.slot_count();
        if slots > SAMPLE_ABOVE {
            let draws: Vec<usize> = {
                let mut rng = self.data.rng();
                (0..n.saturating_mul(4).saturating_add(16))
                    .map(|_| rng.random_range(0..slots))
                    .collect()
            };
            let mut picked: Vec<Arc<Segment>> = Vec::new();
            for i in draws {
                if let Some(s) = segments.slot(i).filter(|s| eligible(s)) {
                    if !picked.iter().any(|p| p.id == s.id) {
                        picked.push(s.clone());
                    }
                }
            }
            if picked.len() >= n {
                return picked;
            }
        }
        // In name order, as `Segments::iter` gives, but found by a walk of the slab (a scan of
        // every slot costs no tree walk; only the eligible few, if any, are sorted).
        let mut all: Vec<Arc<Segment>> = (0..slots)
            .filter_map(|i| segments.slot(i))
            .filter(|s| eligible(s))
            .cloned()
            .collect();
        all.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        all.shuffle(&mut *self.data.rng());
        all
    }

    /// Releases the storage of one replica of `key` (its segment or LocalDisk accounting) and
    /// records the quota refund.
    pub(super) fn release_replica(&self, key: &str, tenant: &str, size: u64, replica: &Replica, refunds: &mut Refunds) {
        add_refund(refunds, tenant, size);
        match &replica.kind {
            ReplicaKind::Memory { segment, .. } => segment.release(key, size),
            ReplicaKind::LocalDisk { owner } => {
                if let Some(disk) = self.membership.local_disks().get_mut(&owner.client()) {
                    disk.release(size);
                    disk.keys.remove(key);
                }
            }
        }
    }

    /// Removes the replicas of `key` matching `gone`; removes the object if none is left.
    pub(super) fn remove_replicas_in(
        &self,
        shard: &mut Shard,
        key: &str,
        gone: impl Fn(&Replica) -> bool,
        refunds: &mut Refunds,
    ) {
        let Some(obj) = shard.objects.get_mut(key) else {
            return;
        };
        let (size, tenant) = (obj.size, obj.tenant.clone());
        let (dropped, kept): (Vec<_>, Vec<_>) = obj.replicas.drain(..).partition(|r| gone(r));
        obj.replicas = kept;
        let empty = obj.replicas.is_empty();
        for r in &dropped {
            self.release_replica(key, &tenant, size, r, refunds);
        }
        if empty {
            self.remove_object_in(shard, key, refunds);
        }
    }

    /// Removes an object with all its replicas and tasks.
    pub(super) fn remove_object_in(&self, shard: &mut Shard, key: &str, refunds: &mut Refunds) {
        let Some(obj) = shard.objects.get(key) else {
            return;
        };
        let tasks: Vec<u64> = obj.replication_task.into_iter().chain(obj.tier_task).collect();
        for t in tasks {
            self.cancel_task_in(shard, t, refunds);
        }
        if let Some(obj) = shard.take(key) {
            for r in &obj.replicas {
                self.release_replica(key, &obj.tenant, obj.size, r, refunds);
            }
        }
    }

    /// Unmounts a segment now: it stops serving, then the replicas on it and the tasks touching
    /// it go (one shard at a time), then `retire(name)` runs (the caller deletes the segment's
    /// external entry, or records that its offboarding job will), then the segment leaves the
    /// table. `retire` runs while the table still holds the name, so no other client can mount
    /// that name before the caller has dealt with it. The caller holds the membership gate.
    pub(super) fn drop_segment(&self, seg: &Arc<Segment>, retire: impl FnOnce(&str)) {
        seg.set_lifecycle(super::Lifecycle::Unmounting);
        let sid = seg.id;
        loop {
            let keys = std::mem::take(&mut seg.alloc().keys);
            if keys.is_empty() {
                break;
            }
            for key in keys {
                let mut refunds = Refunds::new();
                let mut shard = self.data.shards().lock_key(&key);
                self.cancel_tasks_touching_in(&mut shard, &key, sid, &mut refunds);
                self.remove_replicas_in(&mut shard, &key, |r| r.segment() == Some(sid), &mut refunds);
                drop(shard);
                self.data.quotas().apply_refunds(refunds);
            }
        }
        retire(&seg.name);
        self.data.segments_mut().remove(sid);
    }
}
