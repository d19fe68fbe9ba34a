//! The data RPCs: PutStart/PutEnd/PutRevoke, GetReplicaList, ExistKey, Remove, RemoveAll and
//! their Batch forms (each key of a batch as its single form, in order).
//!
//! Each key's request holds the key's stripe ([`Objects`](super::objects)) around the master
//! call, so the master's object and the key's placements change together. PutStart asks the
//! master for replicas (it chooses segments by its accounting and the owners' liveness), then
//! places each in its segment's address space; if a space has no free range large enough the
//! Put is revoked in the master, that segment's placements the master no longer backs are
//! freed (eviction inside the Put may have removed some objects there) and the Put is tried
//! once more.
//!
//! Leases as the client observes them (upstream `MasterService`): GetReplicaList and ExistKey
//! grant `default_kv_lease_ttl`; Remove without `force` is refused with `OBJECT_HAS_LEASE`
//! while it runs; RemoveAll skips leased objects (and objects still being written).

use super::objects::{Record, Stripe};
use super::space::{charged_bytes, SegmentSpace};
use super::state::{error_code, name_of, State};
use crate::master::ReplicaDesc;
use crate::sync::Arc;
use mooncake_liveness_wire::enums::{ErrorCode, ReplicaStatus, ReplicaType};
use mooncake_liveness_wire::rpc::Expected;
use mooncake_liveness_wire::types::{
    BufferDescriptor, DescriptorVariant, GetReplicaListResponse, MemoryDescriptor, ObjectMeta, ReplicaDescriptor,
    ReplicateConfig, Uuid,
};
use std::time::{Duration, Instant};

/// The descriptor of replica `id` placed at `p`.
fn descriptor(id: u64, p: &super::space::Placement, status: ReplicaStatus) -> ReplicaDescriptor {
    ReplicaDescriptor {
        id,
        descriptor: DescriptorVariant::Memory(MemoryDescriptor {
            buffer_descriptor: BufferDescriptor {
                size: p.size,
                buffer_address: p.address(),
                protocol: p.space().protocol.clone(),
                transport_endpoint: p.space().te_endpoint.clone(),
            },
        }),
        status,
    }
}

/// Why one attempt of a Put failed.
enum PutFailure {
    /// The master refused: final.
    Refused(ErrorCode),
    /// This space had no free range: reconcile it and try again.
    NoRange(Arc<SegmentSpace>),
}

impl State {
    /// PutStart.
    pub(crate) fn put_start(
        &self,
        (client, key, size, config, tenant): (Uuid, String, u64, ReplicateConfig, String),
    ) -> Expected<Vec<ReplicaDescriptor>> {
        // The real master's request counters (its `/metrics` names).
        metrics::counter!("master_put_start_requests_total").increment(1);
        let replicas = usize::try_from(config.replica_num).map_err(|_| ErrorCode::INVALID_PARAMS)?;
        let cname = name_of(&client);
        match self.try_put(&cname, &tenant, &key, size, replicas) {
            // The master may have evicted to make room: its victims' placements are freed here.
            Err(PutFailure::NoRange(space)) => {
                self.reconcile_space(&space);
            }
            Err(PutFailure::Refused(e)) => return Err(e),
            Ok(d) => return Ok(d),
        }
        self.try_put(&cname, &tenant, &key, size, replicas)
            .map_err(|f| match f {
                PutFailure::Refused(e) => e,
                PutFailure::NoRange(_) => ErrorCode::NO_AVAILABLE_HANDLE,
            })
    }

    fn try_put(
        &self,
        client: &str,
        tenant: &str,
        key: &str,
        size: u64,
        replicas: usize,
    ) -> Result<Vec<ReplicaDescriptor>, PutFailure> {
        let mut stripe = self.objects.lock(key);
        let descs = self
            .master
            .put_as(client, tenant, key, charged_bytes(size), replicas)
            .map_err(|e| PutFailure::Refused(error_code(e)))?;
        // The master had no such key: a record left for it is stale (evicted or offboarded).
        if let Some(stale) = stripe.remove(key) {
            stale.free();
        }
        let mut rec = Record::default();
        for d in &descs {
            let space = self.space(&d.segment);
            match space.as_ref().and_then(|s| s.allocate(key, size)) {
                Some(p) => rec.placements.push((self.replica_id(), p)),
                None => {
                    rec.free();
                    let _ = self.master.put_revoke_as(client, key);
                    return match space {
                        Some(space) => Err(PutFailure::NoRange(space)),
                        // Mounted in the master but not here: only while a mount is under way.
                        None => Err(PutFailure::Refused(ErrorCode::NO_AVAILABLE_HANDLE)),
                    };
                }
            }
        }
        let out = rec
            .placements
            .iter()
            .map(|(id, p)| descriptor(*id, p, ReplicaStatus::PROCESSING))
            .collect();
        stripe.insert(key.to_string(), rec);
        Ok(out)
    }

    /// PutEnd: the replicas become readable; the checksum is kept for GetReplicaList.
    pub(crate) fn put_end(&self, (client, meta, _, _): (Uuid, ObjectMeta, ReplicaType, String)) -> Expected<()> {
        metrics::counter!("master_put_end_requests_total").increment(1);
        let mut stripe = self.objects.lock(&meta.key);
        self.master
            .put_end_as(&name_of(&client), &meta.key)
            .map_err(error_code)?;
        if let Some(rec) = stripe.get_mut(&meta.key) {
            rec.checksum = meta.object_checksum;
        }
        Ok(())
    }

    /// PutRevoke: the master drops the object, its placements are freed.
    pub(crate) fn put_revoke(&self, (client, key, _, _): (Uuid, String, ReplicaType, String)) -> Expected<()> {
        let mut stripe = self.objects.lock(&key);
        self.master.put_revoke_as(&name_of(&client), &key).map_err(error_code)?;
        if let Some(rec) = stripe.remove(&key) {
            rec.free();
        }
        Ok(())
    }

    /// The lease a read grants from now.
    fn lease(&self) -> Instant {
        Instant::now() + Duration::from_millis(self.lease_ms)
    }

    /// GetReplicaList: the replicas the master lets a reader use now, where they are, and a lease.
    pub(crate) fn get_replica_list(&self, (key, _tenant): (String, String)) -> Expected<GetReplicaListResponse> {
        let mut stripe = self.objects.lock(&key);
        let descs = self.master.get(&key).map_err(error_code)?;
        let rec = stripe.get_mut(&key).ok_or(ErrorCode::REPLICA_IS_NOT_READY)?;
        let replicas = readable(rec, &descs);
        if replicas.is_empty() {
            return Err(ErrorCode::REPLICA_IS_NOT_READY);
        }
        rec.lease_until = Some(self.lease());
        Ok(GetReplicaListResponse {
            replicas,
            lease_ttl_ms: self.lease_ms,
            object_checksum: rec.checksum,
        })
    }

    /// ExistKey: true when the key has a readable replica now (which grants a lease, as
    /// upstream's); changes no recency.
    pub(crate) fn exist_key(&self, (key, _tenant): (String, String)) -> Expected<bool> {
        let mut stripe = self.objects.lock(&key);
        if self.master.admin_replicas(&key).is_err() {
            return Ok(false);
        }
        if let Some(rec) = stripe.get_mut(&key) {
            rec.lease_until = Some(self.lease());
        }
        Ok(true)
    }

    /// Remove: refused during the lease unless `force`.
    pub(crate) fn remove(&self, (key, force, _tenant): (String, bool, String)) -> Expected<()> {
        let mut stripe = self.objects.lock(&key);
        self.remove_in(&mut stripe, &key, force)
    }

    fn remove_in(&self, stripe: &mut Stripe, key: &str, force: bool) -> Expected<()> {
        if !force && stripe.get(key).is_some_and(|r| r.leased(Instant::now())) {
            return Err(ErrorCode::OBJECT_HAS_LEASE);
        }
        self.master.remove(key).map_err(error_code)?;
        if let Some(rec) = stripe.remove(key) {
            rec.free();
        }
        Ok(())
    }

    /// RemoveAll: every complete object without a running lease (any complete object when
    /// `force`); returns how many were removed.
    pub(crate) fn remove_all(&self, (force, _tenant): (bool, String)) -> i64 {
        let mut n = 0;
        for key in self.master.objects().into_keys() {
            let mut stripe = self.objects.lock(&key);
            if self.master.object(&key).is_some_and(|o| o.is_complete())
                && self.remove_in(&mut stripe, &key, force).is_ok()
            {
                n += 1;
            }
        }
        n
    }

    /// BatchPutStart.
    pub(crate) fn batch_put_start(
        &self,
        (client, keys, sizes, config, tenant): (Uuid, Vec<String>, Vec<u64>, ReplicateConfig, String),
    ) -> Vec<Expected<Vec<ReplicaDescriptor>>> {
        if keys.len() != sizes.len() {
            return keys.iter().map(|_| Err(ErrorCode::INVALID_PARAMS)).collect();
        }
        keys.into_iter()
            .zip(sizes)
            .map(|(k, s)| self.put_start((client, k, s, config.clone(), tenant.clone())))
            .collect()
    }

    /// BatchPutEnd.
    pub(crate) fn batch_put_end(
        &self,
        (c, metas, t, tenant): (Uuid, Vec<ObjectMeta>, ReplicaType, String),
    ) -> Vec<Expected<()>> {
        metas
            .into_iter()
            .map(|m| self.put_end((c, m, t, tenant.clone())))
            .collect()
    }

    /// BatchPutRevoke.
    pub(crate) fn batch_put_revoke(
        &self,
        (c, keys, t, tenant): (Uuid, Vec<String>, ReplicaType, String),
    ) -> Vec<Expected<()>> {
        keys.into_iter()
            .map(|k| self.put_revoke((c, k, t, tenant.clone())))
            .collect()
    }

    /// BatchGetReplicaList.
    pub(crate) fn batch_get_replica_list(
        &self,
        (keys, tenant): (Vec<String>, String),
    ) -> Vec<Expected<GetReplicaListResponse>> {
        keys.into_iter()
            .map(|k| self.get_replica_list((k, tenant.clone())))
            .collect()
    }

    /// BatchExistKey.
    pub(crate) fn batch_exist_key(&self, (keys, tenant): (Vec<String>, String)) -> Vec<Expected<bool>> {
        keys.into_iter().map(|k| self.exist_key((k, tenant.clone()))).collect()
    }

    /// BatchRemove.
    pub(crate) fn batch_remove(&self, (keys, force, tenant): (Vec<String>, bool, String)) -> Vec<Expected<()>> {
        keys.into_iter()
            .map(|k| self.remove((k, force, tenant.clone())))
            .collect()
    }
}

/// The descriptors of `rec`'s placements on the segments the master named (in its order).
fn readable(rec: &Record, descs: &[ReplicaDesc]) -> Vec<ReplicaDescriptor> {
    descs
        .iter()
        .filter_map(|d| rec.placements.iter().find(|(_, p)| p.space().name == d.segment))
        .map(|(id, p)| descriptor(*id, p, ReplicaStatus::COMPLETE))
        .collect()
}
