//! Put, Get, Remove and the allocation and release helpers every path shares.

use super::object::{Object, Replica, ReplicaKind};
use super::segment::{AllocationStrategy, SegmentId};
use super::{Master, MasterError, ReplicaDesc, DEFAULT_TENANT};
use crate::eligibility::Purpose;
use rand::seq::SliceRandom;

/// Below this many segment slots `Random` allocation shuffles every candidate (exact, cheap);
/// from it on it samples (`sample_segments`).
const SAMPLE_MIN_SLOTS: usize = 64;

/// Objects one Put may evict to make room.
const MAX_EVICTIONS_PER_PUT: usize = 64;

impl Master {
    /// PutStart for the default tenant; see [`Master::put_for`].
    pub fn put(&mut self, key: &str, size: u64, replicas: usize) -> Result<Vec<ReplicaDesc>, MasterError> {
        self.put_for(DEFAULT_TENANT, key, size, replicas)
    }

    /// PutStart: allocates `replicas` replicas of `size` bytes on distinct serving segments,
    /// evicting least recently used servable objects when no serving segment has room.
    /// Best effort: fewer than asked is allowed, none is `NO_AVAILABLE_HANDLE`; the tenant's
    /// quota must hold every replica handed out (`TENANT_QUOTA_EXCEEDED`).
    pub fn put_for(
        &mut self,
        tenant: &str,
        key: &str,
        size: u64,
        replicas: usize,
    ) -> Result<Vec<ReplicaDesc>, MasterError> {
        if size == 0 || replicas == 0 {
            return Err(MasterError::InvalidParams);
        }
        if self.objects.contains_key(key) {
            return Err(MasterError::ObjectAlreadyExists);
        }
        let mut chosen = self.choose_segments(size, replicas, &[]);
        if chosen.is_empty() && self.evict_for(size) {
            chosen = self.choose_segments(size, replicas, &[]);
        }
        if chosen.is_empty() {
            return Err(MasterError::NoAvailableHandle);
        }
        let quota = self.quotas.get(tenant).cloned().unwrap_or_default();
        if quota
            .limit
            .is_some_and(|l| quota.used.saturating_add(size.saturating_mul(chosen.len() as u64)) > l)
        {
            return Err(MasterError::TenantQuotaExceeded);
        }
        let mut object = Object {
            tenant: tenant.to_string(),
            size,
            touched: 0,
            replicas: Vec::new(),
            replication_task: None,
            tier_task: None,
        };
        for sid in chosen {
            object.replicas.push(self.allocate_on(sid, tenant, key, size));
        }
        self.objects.insert(key.to_string(), object);
        self.touch(key);
        Ok(self.describe(key, |_| true))
    }

    /// Marks `key` most recently used.
    fn touch(&mut self, key: &str) {
        self.clock_lru += 1;
        let now = self.clock_lru;
        if let Some(obj) = self.objects.get_mut(key) {
            self.lru.remove(&obj.touched);
            obj.touched = now;
            self.lru.insert(now, key.to_string());
        }
    }

    /// Evicts least recently used objects until some serving segment can take `size` bytes.
    /// Only complete objects without tasks whose every replica serves are victims: a Suspected
    /// owner's replicas are retained, not evicted (invariant 9). Returns whether room was made.
    fn evict_for(&mut self, size: u64) -> bool {
        let seam = self.seam();
        let serving_exists = self
            .segments
            .iter()
            .any(|(_, s)| s.size >= size && s.eligibility(seam, Purpose::Allocate, 0).serves());
        if !serving_exists {
            return false;
        }
        let victims: Vec<String> = self
            .lru
            .values()
            .filter(|k| self.objects.get(*k).is_some_and(|o| self.evictable(o)))
            .take(MAX_EVICTIONS_PER_PUT)
            .cloned()
            .collect();
        for key in victims {
            self.remove_object(&key);
            if !self.choose_segments(size, 1, &[]).is_empty() {
                return true;
            }
        }
        false
    }

    fn evictable(&self, o: &Object) -> bool {
        let seam = self.seam();
        o.is_complete()
            && o.replication_task.is_none()
            && o.tier_task.is_none()
            && o.replicas
                .iter()
                .all(|r| r.segment().is_some() && r.eligibility(seam, &self.segments).serves())
    }

    /// PutEnd: the writer finished; the replicas become readable. Accepted whatever the owners'
    /// liveness (invariant 11).
    pub fn put_end(&mut self, key: &str) -> Result<(), MasterError> {
        let obj = self.objects.get_mut(key).ok_or(MasterError::ObjectNotFound)?;
        if obj.is_complete() {
            return Err(MasterError::InvalidParams);
        }
        for r in obj.replicas.iter_mut() {
            r.complete = true;
        }
        Ok(())
    }

    /// PutRevoke: the writer abandoned the put; its allocations are released.
    pub fn put_revoke(&mut self, key: &str) -> Result<(), MasterError> {
        let obj = self.objects.get(key).ok_or(MasterError::ObjectNotFound)?;
        if obj.is_complete() {
            return Err(MasterError::InvalidParams);
        }
        self.remove_object(key);
        Ok(())
    }

    /// GetReplicaList: the replicas a reader may use now; a hit makes the key recently used.
    pub fn get(&mut self, key: &str) -> Result<Vec<ReplicaDesc>, MasterError> {
        let out = self.admin_replicas(key)?;
        self.touch(key);
        Ok(out)
    }

    /// Admin descriptor query: like Get (it follows the serving rule and hides a Suspected
    /// owner's replicas, decisions.md question 1) but changes nothing, not even recency.
    pub fn admin_replicas(&self, key: &str) -> Result<Vec<ReplicaDesc>, MasterError> {
        if !self.objects.contains_key(key) {
            return Err(MasterError::ObjectNotFound);
        }
        let (seam, segments) = (self.seam(), &self.segments);
        let out = self.describe(key, |r| r.eligibility(seam, segments).serves());
        if out.is_empty() {
            return Err(MasterError::ReplicaIsNotReady);
        }
        Ok(out)
    }

    /// Remove: erases a key and releases its replicas.
    pub fn remove(&mut self, key: &str) -> Result<(), MasterError> {
        let obj = self.objects.get(key).ok_or(MasterError::ObjectNotFound)?;
        if obj.replication_task.is_some() {
            return Err(MasterError::ObjectHasReplicationTask);
        }
        self.remove_object(key);
        Ok(())
    }

    /// Descriptors of `key`'s replicas that pass `keep`, in replica order.
    pub(super) fn describe(&self, key: &str, keep: impl Fn(&Replica) -> bool) -> Vec<ReplicaDesc> {
        let Some(obj) = self.objects.get(key) else {
            return Vec::new();
        };
        obj.replicas
            .iter()
            .filter(|r| keep(r))
            .map(|r| ReplicaDesc {
                segment: match r.kind {
                    ReplicaKind::Memory { segment, .. } => {
                        self.segments.get(segment).map(|s| s.name.clone()).unwrap_or_default()
                    }
                    ReplicaKind::LocalDisk { .. } => {
                        format!("local_disk:{}", self.client_name(r.owner().client()))
                    }
                },
                client: self.client_name(r.owner().client()),
            })
            .collect()
    }

    /// Up to `n` distinct segments that may take `size` new bytes now, excluding `exclude`.
    pub(super) fn choose_segments(&mut self, size: u64, n: usize, exclude: &[SegmentId]) -> Vec<SegmentId> {
        if self.options.strategy == AllocationStrategy::Random {
            if let Some(chosen) = self.sample_segments(size, n, exclude) {
                return chosen;
            }
        }
        let seam = self.seam();
        let mut candidates: Vec<(SegmentId, u64, u64)> = self
            .segments
            .iter()
            .filter(|(id, s)| !exclude.contains(id) && s.eligibility(seam, Purpose::Allocate, size).serves())
            .map(|(id, s)| (id, s.free(), s.size))
            .collect();
        match self.options.strategy {
            // Highest free ratio first: free/size compared as free·size' > free'·size; ties keep name order.
            AllocationStrategy::FreeRatioFirst => {
                candidates.sort_by(|a, b| (u128::from(b.1) * u128::from(a.2)).cmp(&(u128::from(a.1) * u128::from(b.2))))
            }
            AllocationStrategy::Random => candidates.shuffle(&mut self.rng),
        }
        candidates.into_iter().take(n).map(|c| c.0).collect()
    }

    /// `Random` on a large pool: `n` distinct eligible segments drawn by rejection sampling over
    /// the slab (uniform over eligible segments, O(n) expected) instead of shuffling them all
    /// (O(segments) per Put). `None` — fall back to the full scan — below
    /// [`SAMPLE_MIN_SLOTS`] slots or when a bounded number of draws finds fewer than `n`.
    fn sample_segments(&mut self, size: u64, n: usize, exclude: &[SegmentId]) -> Option<Vec<SegmentId>> {
        use rand::Rng;
        let slots = self.segments.slots();
        if slots < SAMPLE_MIN_SLOTS {
            return None;
        }
        let seam = self.seam();
        let mut chosen = Vec::with_capacity(n);
        for _ in 0..4 * n + 32 {
            if chosen.len() == n {
                break;
            }
            let id = SegmentId(self.rng.random_range(0..slots) as u32);
            let ok = !chosen.contains(&id)
                && !exclude.contains(&id)
                && self
                    .segments
                    .get(id)
                    .is_some_and(|s| s.eligibility(seam, Purpose::Allocate, size).serves());
            if ok {
                chosen.push(id);
            }
        }
        (chosen.len() == n).then_some(chosen)
    }

    /// Allocates `size` bytes for `key` on `sid`, charged to `tenant`; returns the (incomplete) replica.
    pub(super) fn allocate_on(&mut self, sid: SegmentId, tenant: &str, key: &str, size: u64) -> Replica {
        let seg = self.segments.get_mut(sid).expect("allocating on a chosen segment");
        seg.used += size;
        seg.keys.insert(key.to_string());
        let owner = seg.owner.clone();
        self.charge(tenant, size);
        Replica {
            kind: ReplicaKind::Memory { segment: sid, owner },
            complete: false,
        }
    }

    /// Releases the storage of one replica of `key` (its segment or LocalDisk accounting).
    pub(super) fn release_replica(&mut self, key: &str, tenant: &str, size: u64, replica: &Replica) {
        self.refund(tenant, size);
        match &replica.kind {
            ReplicaKind::Memory { segment, .. } => {
                if let Some(seg) = self.segments.get_mut(*segment) {
                    seg.used = seg.used.saturating_sub(size);
                    seg.keys.remove(key);
                }
            }
            ReplicaKind::LocalDisk { owner } => {
                if let Some(disk) = self.local_disks.get_mut(&owner.client()) {
                    disk.used = disk.used.saturating_sub(size);
                    disk.keys.remove(key);
                }
            }
        }
    }

    /// Removes the replicas of `key` matching `gone`; removes the object if none is left.
    pub(super) fn remove_replicas(&mut self, key: &str, gone: impl Fn(&Replica) -> bool) {
        let Some(obj) = self.objects.get_mut(key) else {
            return;
        };
        let (size, tenant) = (obj.size, obj.tenant.clone());
        let (dropped, kept): (Vec<_>, Vec<_>) = obj.replicas.drain(..).partition(|r| gone(r));
        obj.replicas = kept;
        let empty = obj.replicas.is_empty();
        for r in &dropped {
            self.release_replica(key, &tenant, size, r);
        }
        if empty {
            self.remove_object(key);
        }
    }

    /// Removes an object with all its replicas and tasks.
    pub(super) fn remove_object(&mut self, key: &str) {
        let Some(obj) = self.objects.get(key) else {
            return;
        };
        let tasks: Vec<u64> = obj.replication_task.into_iter().chain(obj.tier_task).collect();
        for t in tasks {
            self.cancel_task(t);
        }
        if let Some(obj) = self.objects.remove(key) {
            self.lru.remove(&obj.touched);
            for r in &obj.replicas {
                self.release_replica(key, &obj.tenant, obj.size, r);
            }
        }
    }

    /// Unmounts a segment now: replicas on it, tasks touching it and then the segment go.
    /// Returns the segment's name (its external metadata entry is the caller's to delete).
    pub(super) fn drop_segment(&mut self, sid: SegmentId) -> Option<String> {
        let keys: Vec<String> = match self.segments.get(sid) {
            Some(seg) => seg.keys.iter().cloned().collect(),
            None => return None,
        };
        for key in keys {
            self.cancel_tasks_touching(&key, sid);
            self.remove_replicas(&key, |r| r.segment() == Some(sid));
        }
        self.segments.remove(sid).map(|seg| seg.name)
    }
}
