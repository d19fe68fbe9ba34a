//! The master's cross-table invariants, checked from its public API once it is quiescent (no
//! request in flight). Shared by the stress test (`tests/master_stress.rs`) and the loom models
//! over the real master (`loom_tests/master_*.rs`, through `#[path]`), so it names no `Arc`
//! type: identity is compared by address, which works for std's and loom's `Arc` alike.
//!
//! Checked (invariants 9, 10, 13, 16 of the contract):
//! - every replica's owner is the registry's current record of its client, Active or Suspected;
//!   an Offline owner is allowed only with `offline_ok` (its job is pending);
//! - every mounted segment belongs to the registry's current record of its client (fencing),
//!   not Offline unless `offline_ok`;
//! - every memory replica's segment is the mounted segment of that id, not `Unmounting`, owned
//!   by the same incarnation as the replica;
//! - each mounted segment's used bytes equal the sum of the sizes of the replicas on it, and its
//!   key index equals the keys of those replicas; a LocalDisk's key index equals its replicas'
//!   keys and its used bytes are at least theirs (offloads in flight hold more);
//! - each tenant's quota equals the sum of the sizes of its remaining replicas plus `pending`
//!   (refunds an Offline incarnation's job has not applied yet: 0 when nothing is Offline);
//! - every task names an object that exists and references the task, and its executor is the
//!   registry's current record of its client (no task outlives its incarnation);
//! - with nothing Offline, the external metadata entries are exactly the mounted segments.
#![allow(dead_code)]

use mooncake_liveness::master::{Lifecycle, Master, ReplicaKind};
use mooncake_liveness::{ClientLivenessRecord, LivenessState};
use std::collections::{BTreeMap, BTreeSet};

fn same<T>(a: &T, b: &T) -> bool {
    std::ptr::eq(a, b)
}

/// The same incarnation: one record (an `Owner` or an `Arc` coerces to the record it holds).
fn same_record(a: &ClientLivenessRecord, b: &ClientLivenessRecord) -> bool {
    std::ptr::eq(a, b)
}

/// Every violation found (empty: the master balances).
pub fn violations(m: &Master, offline_ok: bool) -> Vec<String> {
    let mut out = Vec::new();
    let objects = m.objects();
    let registry = m.liveness().registry();
    let mut seg_use: BTreeMap<String, (u64, BTreeSet<String>)> = BTreeMap::new();
    let mut disk_use: BTreeMap<u128, (u64, BTreeSet<String>)> = BTreeMap::new();
    let mut quota: BTreeMap<String, u64> = BTreeMap::new();
    let segments = m.segments();
    for (key, obj) in &objects {
        for r in &obj.replicas {
            *quota.entry(obj.tenant.clone()).or_default() += obj.size;
            let owner = r.owner();
            let current = registry.get(owner.client());
            if !current.as_ref().is_some_and(|c| same_record(c, owner)) {
                out.push(format!(
                    "{key}: a replica of {:?}/{:?} which is not the registry's current record",
                    owner.client(),
                    owner.incarnation()
                ));
            }
            let state = owner.state();
            if state == LivenessState::Offline && !offline_ok {
                out.push(format!(
                    "{key}: a replica of Offline {:?}/{:?}",
                    owner.client(),
                    owner.incarnation()
                ));
            }
            match &r.kind {
                ReplicaKind::Memory { segment, .. } => {
                    match segments.get(segment.id) {
                        Some(s) if same(&**s, &**segment) => {}
                        _ => out.push(format!("{key}: a replica on {} which is not mounted", segment.name)),
                    }
                    if segment.lifecycle() == Lifecycle::Unmounting && !offline_ok {
                        out.push(format!("{key}: a replica on Unmounting {}", segment.name));
                    }
                    if !same_record(&segment.owner, owner) {
                        out.push(format!("{key}: replica owner differs from its segment's owner"));
                    }
                    let e = seg_use.entry(segment.name.clone()).or_default();
                    e.0 += obj.size;
                    e.1.insert(key.clone());
                }
                ReplicaKind::LocalDisk { owner } => {
                    let e = disk_use.entry(owner.client().0).or_default();
                    e.0 += obj.size;
                    e.1.insert(key.clone());
                }
            }
        }
    }
    for s in segments.iter() {
        let current = registry.get(s.owner.client());
        if !current.as_ref().is_some_and(|c| same_record(c, &s.owner)) {
            out.push(format!(
                "segment {} is mounted for an incarnation that is not current",
                s.name
            ));
        }
        if s.owner.state() == LivenessState::Offline && !offline_ok {
            out.push(format!("segment {} is mounted for an Offline incarnation", s.name));
        }
        let (used, keys) = seg_use.remove(&s.name).unwrap_or_default();
        let alloc = s.alloc();
        if alloc.used != used {
            out.push(format!(
                "segment {}: {} bytes used, its replicas hold {used}",
                s.name, alloc.used
            ));
        }
        if alloc.keys != keys {
            out.push(format!(
                "segment {}: key index {:?}, its replicas {:?}",
                s.name, alloc.keys, keys
            ));
        }
    }
    drop(segments);
    for (name, (used, _)) in seg_use {
        out.push(format!(
            "{used} bytes of replicas on {name}, which is not in the segment table"
        ));
    }
    for (client, disk) in m.local_disks().iter() {
        let (used, keys) = disk_use.remove(&client.0).unwrap_or_default();
        if disk.used < used || disk.keys != keys {
            out.push(format!(
                "local disk of {client:?}: {} used / {:?}, replicas {used} / {keys:?}",
                disk.used, disk.keys
            ));
        }
    }
    for (client, (used, _)) in disk_use {
        out.push(format!(
            "{used} bytes of LocalDisk replicas of client {client} with no registration"
        ));
    }
    if !offline_ok {
        for (tenant, q) in m.quotas().iter() {
            let want = quota.remove(tenant).unwrap_or(0);
            if q.used != want {
                out.push(format!(
                    "tenant {tenant}: quota charges {} bytes, its replicas hold {want}",
                    q.used
                ));
            }
        }
        for (tenant, want) in quota {
            out.push(format!("tenant {tenant}: {want} bytes of replicas with no quota entry"));
        }
    }
    for t in m.tasks().iter() {
        match objects.get(&t.key) {
            Some(o) if o.replication_task == Some(t.id) || o.tier_task == Some(t.id) => {}
            _ => out.push(format!("task {} names {:?}, which does not reference it", t.id, t.key)),
        }
        // Fencing: a task's executor is the registry's current record of its client (an
        // Offline one stays registered until its job completes, and its job cancels the task).
        let client = t.executor.client();
        if !registry.get(client).is_some_and(|r| same_record(&r, &t.executor)) {
            out.push(format!(
                "task {} ({:?}) names incarnation {} of client {}, which is not its current record",
                t.id,
                t.key,
                t.executor.incarnation().0,
                client.0
            ));
        }
    }
    if !offline_ok {
        // The external metadata mirrors the mounted segments exactly (a pending job may still
        // owe the deletes of the segments it unmounted, hence only when nothing is Offline).
        let mounted: BTreeSet<String> = m.segments().iter().map(|s| s.name.clone()).collect();
        let external: BTreeSet<String> = m.external_metadata().entries().into_iter().collect();
        for name in mounted.difference(&external) {
            out.push(format!("segment {name} is mounted but has no external metadata entry"));
        }
        for name in external.difference(&mounted) {
            out.push(format!("external metadata entry {name} names no mounted segment"));
        }
    }
    out
}

/// Panics with every violation (after a quiescent run: nothing Offline is left).
pub fn assert_clean(m: &Master) {
    let v = violations(m, false);
    assert!(v.is_empty(), "master invariants violated:\n  {}", v.join("\n  "));
}
