//! The `snapshot_restore` oracle over a restored master: its derived state balances, an
//! unmutated snapshot round-trips, and with nobody pinging every client is offboarded within
//! [`MAX_TICKS`] ticks, leaving the master empty (see [the module doc](super)).
//!
//! Owns: [`check_restored`], [`check_round_trip`], [`drain`]. Drives one restored master from
//! the calling thread only (inline or outbox jobs, run by hand right after each tick). May not
//! touch: the snapshot being checked (read only).

use super::{MAX_TICKS, TICK_MS};
use crate::clock::ManualClock;
use crate::master::{Master, TaskKind};
use crate::offboarding::complete_client_offboarding;
use crate::snapshot::Snapshot;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The restored master's derived state balances (see the module doc).
pub(super) fn check_restored(m: &Master, snap: &Snapshot) {
    let registry = m.liveness().registry();
    let current = |rec: &crate::liveness::ClientLivenessRecord, what: &str| {
        let now = registry.get(rec.client());
        assert!(
            now.is_some_and(|r| std::ptr::eq(&*r, rec)),
            "{what} owned by client {} incarnation {}, not the restored incarnation",
            rec.client(),
            rec.incarnation()
        );
        assert!(
            snap.clients
                .iter()
                .any(|c| c.id == rec.client().0 && c.incarnation == rec.incarnation().0),
            "{what} owned by an incarnation the snapshot does not list"
        );
    };
    let objects = m.objects();
    let tasks: Vec<crate::master::Task> = m.tasks().iter().cloned().collect();
    let segments = m.segments();
    for seg in segments.iter() {
        current(&seg.owner, &format!("segment {}", seg.name));
        let on: Vec<u64> = objects
            .values()
            .filter(|o| o.on_segment(seg.id))
            .map(|o| o.size)
            .collect();
        let sum = on.iter().fold(0u64, |a, b| a.saturating_add(*b));
        assert_eq!(
            seg.used(),
            sum,
            "segment {} usage is not the sum of its replicas",
            seg.name
        );
        assert_eq!(seg.key_count(), on.len(), "segment {} key index", seg.name);
        assert!(seg.used() <= seg.size, "segment {} over its size", seg.name);
    }
    let mut quota: BTreeMap<String, u64> = BTreeMap::new();
    for (k, o) in &objects {
        for r in &o.replicas {
            current(r.owner(), &format!("a replica of {k}"));
            if let Some(id) = r.segment() {
                let seg = segments.get(id).unwrap_or_else(|| panic!("{k} on a missing segment"));
                assert!(Arc::ptr_eq(seg, r.segment_ref().expect("memory replica")));
            }
            let q = quota.entry(o.tenant.clone()).or_default();
            *q = q.saturating_add(o.size);
        }
        for id in o.replication_task.iter().chain(o.tier_task.iter()) {
            let t = tasks.iter().find(|t| t.id == *id);
            assert!(
                t.is_some_and(|t| &t.key == k),
                "{k} names task {id}, which does not name it"
            );
        }
    }
    for t in &tasks {
        current(&t.executor, &format!("task {}", t.id));
        let o = objects
            .get(&t.key)
            .unwrap_or_else(|| panic!("task {} on a missing object", t.id));
        let named = match t.kind {
            TaskKind::Copy | TaskKind::Move => o.replication_task,
            TaskKind::Offload | TaskKind::Promote => o.tier_task,
        };
        assert_eq!(named, Some(t.id), "task {} not named by its object", t.id);
        for s in t.source.iter().chain(t.target.iter()) {
            assert!(
                segments.get(s.id).is_some_and(|x| Arc::ptr_eq(x, s)),
                "task {} names a missing segment",
                t.id
            );
        }
    }
    drop(segments);
    for (id, d) in m.local_disks().iter() {
        current(&d.owner, &format!("the LocalDisk of {id}"));
        let mut used = 0u64;
        let mut keys = std::collections::BTreeSet::new();
        for (k, o) in &objects {
            if o.replicas
                .iter()
                .any(|r| r.segment().is_none() && r.owner().is(&d.owner))
            {
                used = used.saturating_add(o.size);
                keys.insert(k.clone());
            }
        }
        for t in tasks
            .iter()
            .filter(|t| t.kind == TaskKind::Offload && t.executor.is(&d.owner))
        {
            used = used.saturating_add(objects[&t.key].size);
        }
        assert_eq!(
            d.used, used,
            "LocalDisk of {id}: usage is not its replicas and offloads"
        );
        assert_eq!(d.keys, keys, "LocalDisk of {id}: key index (stale keys kept?)");
        assert!(d.used <= d.capacity, "LocalDisk of {id} over its capacity");
    }
    for s in &snap.scratch {
        for (t, b) in &s.refunds {
            let q = quota.entry(t.clone()).or_default();
            *q = q.saturating_add(*b);
        }
    }
    let used: BTreeMap<String, u64> = m
        .quotas()
        .iter()
        .filter(|(_, q)| q.used > 0)
        .map(|(t, q)| (t.clone(), q.used))
        .collect();
    quota.retain(|_, v| *v > 0);
    assert_eq!(used, quota, "quota usage is not replicas plus refunds owed");
}

/// An unmutated snapshot restores to the same metadata.
pub(super) fn check_round_trip(m: &Master, valid: &Snapshot) {
    let mut again = m.snapshot();
    let mut want = valid.clone();
    for s in [&mut again, &mut want] {
        for c in &mut s.clients {
            c.ready = false;
            if let Some(j) = &mut c.job {
                j.committed_at_ms = 0;
            }
        }
        s.clients.sort_by_key(|c| c.id);
    }
    assert_eq!(again, want, "restore changed an unmutated snapshot");
}

/// Nobody pings: everyone goes Offline and every job completes within [`MAX_TICKS`]; then
/// nothing is left.
pub(super) fn drain(mut m: Master, clock: &ManualClock, outbox: bool) {
    let live = m.liveness_handle();
    let mut ticks = 0;
    while !live.registry().records().is_empty() {
        assert!(
            ticks < MAX_TICKS,
            "livelock: {} incarnations left after {MAX_TICKS} ticks: {:?}",
            live.registry().len(),
            live.registry()
                .records()
                .iter()
                .map(|r| (r.client(), r.state()))
                .collect::<Vec<_>>()
        );
        ticks += 1;
        clock.advance_ms(TICK_MS);
        m.tick();
        if outbox {
            for job in m.take_jobs() {
                if let Err(job) = complete_client_offboarding(&mut m, live.registry(), job) {
                    m.return_job(job);
                }
            }
        }
    }
    let left: Vec<_> = m
        .segments()
        .iter()
        .map(|s| (s.name.clone(), s.owner.client(), s.owner.incarnation(), s.owner.state()))
        .collect();
    assert!(left.is_empty(), "segments left after everyone was offboarded: {left:?}");
    assert!(m.objects().is_empty(), "objects left after everyone was offboarded");
    assert_eq!(m.tasks().iter().count(), 0, "tasks left after everyone was offboarded");
    assert!(
        m.local_disks().is_empty(),
        "LocalDisks left after everyone was offboarded"
    );
    assert_eq!(m.quota_used(), 0, "quota still charged after everyone was offboarded");
}
