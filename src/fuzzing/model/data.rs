//! The model's data path: PutStart (eviction, the quota), PutEnd, PutRevoke, Get (the
//! serving rule), Remove.

use super::{
    Model, Object, PutPlan, State, INVALID_PARAMS, NO_AVAILABLE_HANDLE, OBJECT_ALREADY_EXISTS, OBJECT_NOT_FOUND,
    REPLICA_IS_NOT_READY, SEGMENTS, TENANT_QUOTA_EXCEEDED,
};

impl Model {
    /// Objects a Put may evict: complete, no task in flight, every replica in memory on an
    /// Active owner's segment.
    fn evictable(&self, key: usize, o: &Object) -> bool {
        o.complete
            && !self.has_task(key)
            && o.replicas
                .iter()
                .all(|s| *s < SEGMENTS && self.owner_state(*s) == Some(State::Active))
    }

    /// LRU eviction until some serving segment can take `size` (only if one is big enough).
    fn evict_for(&mut self, size: u64) -> bool {
        let big_enough = self
            .segments
            .iter()
            .any(|(s, seg)| !seg.draining && seg.size >= size && self.owner_state(*s) == Some(State::Active));
        if !big_enough {
            return false;
        }
        let mut victims: Vec<(u64, usize)> = self
            .objects
            .iter()
            .filter(|(k, o)| self.evictable(**k, o))
            .map(|(k, o)| (o.touched, *k))
            .collect();
        victims.sort();
        for (_, key) in victims {
            self.objects.remove(&key);
            if !self.allocatable(size).is_empty() {
                return true;
            }
        }
        false
    }

    /// Would the (one) tenant's limit allow `bytes` more?
    pub(crate) fn quota_fits(&self, bytes: u64) -> bool {
        self.quota_limit.is_none_or(|l| self.quota_used() + bytes <= l)
    }

    /// PutStart, up to the choice of segments (evicts if it has to).
    pub(crate) fn put_plan(&mut self, key: usize, size: u64, n: usize) -> PutPlan {
        if size == 0 || n == 0 {
            return PutPlan::Refused(INVALID_PARAMS);
        }
        if self.objects.contains_key(&key) {
            return PutPlan::Refused(OBJECT_ALREADY_EXISTS);
        }
        let mut eligible = self.allocatable(size);
        // A Put the quota could not take even once evicts nothing.
        if eligible.is_empty() && self.quota_fits(size) && self.evict_for(size) {
            eligible = self.allocatable(size);
        }
        if eligible.is_empty() {
            return PutPlan::Refused(NO_AVAILABLE_HANDLE);
        }
        let count = n.min(eligible.len());
        // The quota must hold every replica handed out.
        if !self.quota_fits(size * count as u64) {
            return PutPlan::Refused(TENANT_QUOTA_EXCEEDED);
        }
        PutPlan::Allocate { eligible, count }
    }

    /// PutStart, the choice made (validated by the caller against the plan).
    pub(crate) fn put_commit(&mut self, key: usize, size: u64, chosen: &[usize]) {
        self.objects.insert(
            key,
            Object {
                size,
                replicas: chosen.to_vec(),
                complete: false,
                touched: 0,
            },
        );
        self.touch(key);
    }

    pub(crate) fn put_end(&mut self, key: usize) -> Result<(), &'static str> {
        let o = self.objects.get_mut(&key).ok_or(OBJECT_NOT_FOUND)?;
        if o.complete {
            return Err(INVALID_PARAMS);
        }
        o.complete = true;
        Ok(())
    }

    pub(crate) fn put_revoke(&mut self, key: usize) -> Result<(), &'static str> {
        let o = self.objects.get(&key).ok_or(OBJECT_NOT_FOUND)?;
        if o.complete {
            return Err(INVALID_PARAMS);
        }
        self.objects.remove(&key);
        Ok(())
    }

    /// Get: the segments of the replicas a reader may use (serving rule), in replica order.
    pub(crate) fn get(&mut self, key: usize) -> Result<Vec<usize>, &'static str> {
        let o = self.objects.get(&key).ok_or(OBJECT_NOT_FOUND)?;
        let serving: Vec<usize> = o
            .replicas
            .iter()
            .copied()
            .filter(|s| self.replica_complete(key, o, *s) && self.owner_state(*s) == Some(State::Active))
            .collect();
        if serving.is_empty() {
            return Err(REPLICA_IS_NOT_READY);
        }
        self.touch(key);
        Ok(serving)
    }

    pub(crate) fn remove(&mut self, key: usize) -> Result<(), &'static str> {
        self.remove_checked(key)
    }
}
