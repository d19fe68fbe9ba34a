//! HA snapshots: restore with fresh TTLs, pending offboarding survives failover, bad input is
//! refused, round trips are exact (invariant 19; decisions.md question 3).

use mooncake_liveness::master::{Master, MasterError, MasterEvent, MasterOptions};
use mooncake_liveness::offboarding::Step;
use mooncake_liveness::snapshot::{Snapshot, SnapshotError, FORMAT_VERSION};
mod common;

use common::master::{config, M};
use mooncake_liveness::{Clock, LivenessState, ManualClock, PingStatus};
use proptest::prelude::*;
use std::sync::Arc;

/// A master restored from `snap` on `clock` with the tests' configuration.
fn restore(clock: &Arc<ManualClock>, snap: &Snapshot) -> Result<Master, SnapshotError> {
    Master::restore(
        clock.clone() as Arc<dyn Clock>,
        config(),
        MasterOptions::default(),
        snap,
    )
}

/// Ticks `m` from time 0 until its first Offline commit; returns the time reached.
fn tick_until_offline(m: &Master, clock: &ManualClock) -> u64 {
    let mut t = 0;
    while m.stats().offline_commits == 0 {
        t = tick(m, clock, t, 1);
        assert!(t < 1_000_000, "c0 never went Offline");
    }
    t
}

/// `n` ticks of `m` from time `t`; returns the time reached.
fn tick(m: &Master, clock: &ManualClock, mut t: u64, n: usize) -> u64 {
    for _ in 0..n {
        t += m.tick_ms();
        clock.set_ms(t);
        m.tick();
    }
    t
}

trait Failover {
    fn failover(&mut self, snap: &Snapshot);
}

impl Failover for M {
    /// Fails over at the current time from `snap` (through the binary encoding).
    fn failover(&mut self, snap: &Snapshot) {
        let decoded = Snapshot::decode(&snap.encode()).unwrap();
        self.m = restore(&self.clock, &decoded).unwrap();
    }
}

#[test]
fn failover_with_a_suspected_client_restores_it_active_with_a_fresh_ttl_not_ready() {
    let mut m = M::new();
    m.at(0).mount("c1", "s1", 1_000).unwrap();
    m.at(0).remount("c1", &[]).unwrap();
    m.at(0).put("k", 10, 1).unwrap();
    m.at(0).put_end("k").unwrap();
    m.at(15_000);
    assert_eq!(m.state("c1"), Some(LivenessState::Suspected));
    assert_eq!(m.at(15_000).get("k"), Err(MasterError::ReplicaIsNotReady));
    let snap = m.m.snapshot();
    m.failover(&snap);
    assert_eq!(m.state("c1"), Some(LivenessState::Active));
    assert!(!m.m.query(Some("c1"), None).clients[0].ready);
    assert_eq!(m.at(15_000).get("k").map(|r| r.len()), Ok(1), "served again");
    // Fresh active TTL from the restore time: silent, it is suspected at 25 s, not before.
    m.at(24_900);
    assert_eq!(m.state("c1"), Some(LivenessState::Active));
    assert_eq!(
        m.at(24_900).ping("c1"),
        PingStatus::NeedRemount,
        "not ready until ReMount"
    );
    m.at(24_900).remount("c1", &[]).unwrap();
    assert_eq!(m.at(24_900).ping("c1"), PingStatus::Ok);
}

#[test]
fn failover_with_a_pending_job_resumes_it_and_keeps_the_barrier() {
    let mut m = M::new();
    m.at(0).mount("c1", "s1", 1_000).unwrap();
    m.at(0).mount("c2", "s2", 1_000).unwrap();
    m.m.set_quota_limit("default", Some(10_000));
    for i in 0..10 {
        m.at(0).put(&format!("k{i}"), 10, 2).unwrap();
    }
    m.at(0).fail_step(Step::Segments, 1_000);
    let mut t = 0;
    while t <= 31_000 {
        m.at(t).ping("c2");
        t += 1_000;
    }
    let pending: Vec<_> = m.m.pending_jobs();
    assert_eq!(pending[0].1.steps_done, vec![Step::Metadata]);
    let snap = m.m.snapshot();
    let job = snap.clients.iter().find_map(|c| c.job.clone()).expect("job serialized");
    assert_eq!(job.steps_done, vec![Step::Metadata]);
    m.failover(&snap);
    // The barrier survived: the client id cannot mount until the job completes.
    assert_eq!(
        m.at(31_000).mount("c1", "s1", 1_000),
        Err(MasterError::ClientOffboarding)
    );
    assert_eq!(m.state("c1"), Some(LivenessState::Offline));
    // Faults are not part of a snapshot: the resumed job completes at the next tick.
    m.at(31_100);
    let events = m.m.take_events();
    assert!(events
        .iter()
        .any(|e| matches!(e, MasterEvent::Offboarded { attempts, .. } if *attempts > 1)));
    assert!(m.m.segments().id_of("s1").is_none());
    assert!(!m.m.external_metadata().contains("s1"));
    let used: u64 = m.m.objects().values().map(|o| o.size * o.replicas.len() as u64).sum();
    assert_eq!(
        m.m.quota_used(),
        used,
        "refunds recorded before the snapshot were applied after it"
    );
    m.at(31_100).mount("c1", "s1", 1_000).unwrap();
    assert_eq!(m.m.query(Some("c1"), None).clients[0].incarnation, 2);
}

fn busy_master(objects: usize) -> M {
    let mut m = M::new();
    for c in 0..8 {
        m.at(0).mount(&format!("c{c}"), &format!("s{c}"), 1 << 40).unwrap();
    }
    m.at(0).mount_local_disk("c0", 1 << 40).unwrap();
    m.m.set_quota_limit("t1", Some(1 << 50));
    for i in 0..objects {
        let key = format!("key-{i:07}");
        m.at(0)
            .put_for(
                if i % 3 == 0 { "t1" } else { "default" },
                &key,
                100 + (i as u64 % 97),
                1 + i % 3,
            )
            .unwrap();
        if i % 10 != 0 {
            m.at(0).put_end(&key).unwrap();
        }
    }
    let offloads = m.at(0).offload_heartbeat("c0").unwrap();
    for t in offloads.iter().take(50) {
        m.at(0).task_done("c0", t.task, true).unwrap();
    }
    m.at(0).replicate("key-0000001", "s7", false).ok();
    m.at(0).drain("s5").unwrap();
    m
}

fn without_readiness(mut s: Snapshot) -> Snapshot {
    for c in &mut s.clients {
        c.ready = false;
    }
    s
}

#[test]
fn round_trip_at_100k_objects_is_exact() {
    let m0 = busy_master(100_000);
    let snap = m0.m.snapshot();
    assert_eq!(snap.objects.len(), 100_000);
    let bytes = snap.encode();
    let decoded = Snapshot::decode(&bytes).unwrap();
    assert_eq!(decoded, snap);
    let restored = restore(&m0.clock, &decoded).unwrap();
    assert_eq!(without_readiness(restored.snapshot()), without_readiness(snap.clone()));
    assert_eq!(Snapshot::from_json(&snap.to_json()).unwrap(), snap);
}

#[test]
fn bad_snapshots_are_refused_and_the_running_master_is_untouched() {
    let m = busy_master(200);
    let bytes = m.m.snapshot().encode();
    let before = m.m.snapshot();
    let decode = |b: &[u8]| Snapshot::decode(b);
    assert!(matches!(decode(&bytes[..10]), Err(SnapshotError::Truncated(_))));
    assert!(matches!(
        decode(&bytes[..bytes.len() - 1]),
        Err(SnapshotError::Truncated(_))
    ));
    let mut corrupt = bytes.clone();
    corrupt[40] ^= 0x55;
    assert!(matches!(decode(&corrupt), Err(SnapshotError::Checksum { .. })));
    let mut future = bytes.clone();
    future[4..8].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    let err = decode(&future).unwrap_err();
    assert!(err.to_string().contains("version 2"), "{err}");
    let mut magic = bytes.clone();
    magic[0] = b'X';
    assert!(matches!(decode(&magic), Err(SnapshotError::BadMagic(_))));
    // Decodes but contradicts itself.
    let mut snap = m.m.snapshot();
    snap.segments.retain(|s| s.name != "s1");
    let err = restore(&m.clock, &snap).unwrap_err();
    assert!(matches!(err, SnapshotError::Inconsistent(_)), "{err}");
    assert_eq!(m.m.snapshot(), before);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn random_masters_round_trip(ops in proptest::collection::vec((0u8..6, 0u8..4, 0u16..200), 1..120)) {
        let mut m = M::new();
        let mut t = 0;
        for (op, c, k) in ops {
            t += 150;
            let client = format!("c{c}");
            let key = format!("k{k}");
            let master = m.at(t);
            let _ = match op {
                0 => master.mount(&client, &format!("s{c}"), 10_000).map(|_| ()),
                1 => master.put(&key, 1 + u64::from(k % 9), 1 + usize::from(c % 2)).map(|_| ()),
                2 => master.put_end(&key),
                3 => { master.ping(&client); Ok(()) }
                4 => master.mount_local_disk(&client, 1_000),
                _ => master.remove(&key),
            };
        }
        let snap = m.m.snapshot();
        let decoded = Snapshot::decode(&snap.encode()).unwrap();
        prop_assert_eq!(&decoded, &snap);
        let restored = restore(&m.clock, &decoded).unwrap();
        prop_assert_eq!(without_readiness(restored.snapshot()), without_readiness(snap));
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_decoder(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = Snapshot::decode(&bytes);
    }
}

/// A snapshot can only be taken between two batches of an offboarding job (a batch holds the
/// master). Take one at *every* such point of a job running on the asynchronous path (where
/// the job's own progress is not in the master), restore each, finish, and check that every
/// restored master converges to the same clean state: no snapshot is torn.
#[test]
fn a_snapshot_between_any_two_batches_of_a_job_restores_to_a_converging_master() {
    use mooncake_liveness::offboarding::{
        complete_client_offboarding, CleanupError, ClientOffboardingJob, OffboardingSteps, Progress,
    };

    /// Runs the master's steps and snapshots the master after every batch.
    struct Snapshotting<'a> {
        master: &'a mut Master,
        snaps: Vec<Snapshot>,
    }
    impl OffboardingSteps for Snapshotting<'_> {
        fn run_step(&mut self, step: Step, job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
            let r = self.master.run_step(step, job);
            self.snaps.push(self.master.snapshot());
            r
        }
    }

    let mut m = M::new();
    m.at(0).mount("c1", "s1", 1 << 30).unwrap();
    m.at(0).mount("c2", "s2", 1 << 30).unwrap();
    m.at(0).mount_local_disk("c1", 1 << 30).unwrap();
    for i in 0..2_500 {
        let key = format!("k{i}");
        m.at(0).put(&key, 10, 1 + i % 2).unwrap();
        m.at(0).put_end(&key).unwrap();
    }
    let offloads = m.at(0).offload_heartbeat("c1").unwrap();
    for t in offloads.iter().take(20) {
        m.at(0).task_done("c1", t.task, true).unwrap();
    }
    m.m.hand_jobs_to_executor(true);
    let mut t = 0;
    let job = loop {
        t += 1_000;
        m.at(t).ping("c2");
        if let Some(job) = m.m.take_jobs().pop() {
            break job;
        }
    };
    let live = m.m.liveness_handle();
    let mut runner = Snapshotting {
        master: &mut m.m,
        snaps: Vec::new(),
    };
    let done = complete_client_offboarding(&mut runner, live.registry(), job).expect("no injected faults");
    assert!(done.erased);
    let snaps = runner.snaps;
    assert!(
        snaps.len() >= 7,
        "metadata ran in several batches: {} points",
        snaps.len()
    );
    let clean = |master: &Master| {
        let used: u64 = master
            .objects()
            .values()
            .map(|o| o.size * o.replicas.len() as u64)
            .sum();
        assert_eq!(master.quota_used(), used);
        assert!(master.segments().id_of("s1").is_none());
        assert!(!master.external_metadata().contains("s1"));
        assert!(master.local_disks().is_empty());
        assert!(master
            .objects()
            .values()
            .all(|o| o.replicas.iter().all(|r| r.owner().client().0 != 1)));
        master.objects().len()
    };
    let survivors = clean(&m.m);
    for (i, snap) in snaps.iter().enumerate() {
        let mut r = M::new();
        r.clock.set_ms(t);
        r.next_tick = t + 100;
        r.m = restore(&r.clock, snap).unwrap();
        // Every snapshot but the last (taken after the final step, before the erase) still shows
        // the incarnation Offline with a job; the restored master finishes it at the next tick.
        r.at(t + 100);
        assert!(
            r.m.query(Some("c1"), None).clients.is_empty(),
            "snapshot {i}: job not resumed"
        );
        assert_eq!(clean(&r.m), survivors, "snapshot {i} restored to a different end state");
    }
}

/// Found by the `snapshot_restore` fuzz target: with no task left at snapshot time, restore
/// forgot `next_task_id`, so the restored master handed out task ids the old one had used (a
/// late `task_done` for an old id would then complete the new task).
#[test]
fn task_ids_are_not_reused_after_failover_with_no_task_left() {
    let clock = Arc::new(ManualClock::new(0));
    let m = Master::new(clock.clone() as Arc<dyn Clock>, config(), MasterOptions::default());
    m.mount("c0", "s0", 1_000).unwrap();
    m.mount("c1", "s1", 1_000).unwrap();
    m.put("k", 10, 1).unwrap();
    m.put_end("k").unwrap();
    let to = if m.get("k").unwrap()[0].segment == "s0" {
        "s1"
    } else {
        "s0"
    };
    let first = m.replicate("k", to, false).unwrap();
    let executor = if to == "s0" { "c0" } else { "c1" };
    m.task_done(executor, first, true).unwrap();
    let snap = m.snapshot();
    assert!(snap.tasks.is_empty() && snap.next_task_id >= first);
    let restored = restore(&clock, &snap).unwrap();
    assert_eq!(restored.snapshot().next_task_id, snap.next_task_id, "next task id lost");
    restored.remove("k").unwrap();
    restored.put("k", 10, 1).unwrap();
    restored.put_end("k").unwrap();
    let to = if restored.get("k").unwrap()[0].segment == "s0" {
        "s1"
    } else {
        "s0"
    };
    let second = restored.replicate("k", to, false).unwrap();
    assert!(second > first, "task id {second} reused after failover (old {first})");
}

#[test]
fn a_next_task_id_with_no_room_left_is_refused() {
    let clock = Arc::new(ManualClock::new(0));
    let snap = Snapshot {
        version: FORMAT_VERSION,
        next_task_id: u64::MAX,
        ..Snapshot::default()
    };
    let r = restore(&clock, &snap);
    assert!(
        matches!(r, Err(SnapshotError::Inconsistent(ref m)) if m.contains("next task id")),
        "{r:?}"
    );
}

/// An incarnation with no successor (`u64::MAX`) is refused, vacant or live: restored, the
/// client's next mount would reuse its number and a token of the old incarnation would match
/// the new one (issue 29; before, the restore accepted it and `Incarnation::next` saturated, so
/// the next mount was incarnation u64::MAX again). One below restores, and once that client's
/// last incarnation is offboarded, its next mount is refused.
#[test]
fn an_incarnation_with_no_successor_is_refused() {
    let clock = Arc::new(ManualClock::new(0));
    let name = |id: u128| ("c1".to_string(), id);
    let vacant = Snapshot {
        version: FORMAT_VERSION,
        names: vec![name(1)],
        vacant: vec![(1, u64::MAX)],
        ..Snapshot::default()
    };
    let r = restore(&clock, &vacant);
    assert!(
        matches!(r, Err(SnapshotError::Inconsistent(ref m)) if m.contains("no successor")),
        "{r:?}"
    );
    let live = Snapshot {
        version: FORMAT_VERSION,
        names: vec![name(1)],
        clients: vec![mooncake_liveness::snapshot::ClientSnap {
            id: 1,
            incarnation: u64::MAX,
            ready: true,
            job: None,
        }],
        ..Snapshot::default()
    };
    let r = restore(&clock, &live);
    assert!(
        matches!(r, Err(SnapshotError::Inconsistent(ref m)) if m.contains("no successor")),
        "{r:?}"
    );
    let fine = Snapshot {
        vacant: vec![(1, u64::MAX - 1)],
        ..vacant
    };
    let m = restore(&clock, &fine).expect("u64::MAX - 1 has a successor");
    m.mount("c1", "s1", 100).unwrap();
    assert_eq!(m.incarnation_of("c1").map(|i| i.0), Some(u64::MAX));
    // That last incarnation goes Offline and is offboarded: the next mount is refused, never
    // handed u64::MAX again.
    let t = tick_until_offline(&m, &clock);
    tick(&m, &clock, t, 10);
    assert_eq!(m.incarnation_of("c1"), None, "the last incarnation was not offboarded");
    assert_eq!(m.mount("c1", "s1", 100), Err(MasterError::InvalidParams));
    assert_eq!(m.incarnation_of("c1"), None);
}

/// Found by the `snapshot_restore` fuzz target: a restored job with `attempts = u32::MAX`
/// overflowed (a panic in debug builds) at its next attempt; attempts now saturate.
#[test]
fn a_restored_job_at_u32_max_attempts_runs_without_overflow() {
    let clock = Arc::new(ManualClock::new(0));
    let m = Master::new(clock.clone() as Arc<dyn Clock>, config(), MasterOptions::default());
    m.mount("c0", "s0", 1_000).unwrap();
    m.fail_step(Step::Segments, 1_000);
    let t = tick_until_offline(&m, &clock);
    let mut snap = m.snapshot();
    snap.clients[0].job.as_mut().expect("pending job").attempts = u32::MAX;
    let r = restore(&clock, &snap).unwrap();
    tick(&r, &clock, t, 100);
    assert_eq!((r.stats().jobs_completed, r.stats().offline), (1, 0), "{:?}", r.stats());
}

/// Found by the `snapshot_restore` fuzz target: a restored job claiming its `segments` step done
/// while the snapshot still lists a segment of that incarnation skipped the step, completed,
/// lifted the barrier and left the segment mounted for ever under a gone owner. Restore now
/// drops claims its tables contradict and runs those steps again.
#[test]
fn a_job_claiming_a_step_whose_resources_are_still_there_runs_it_again() {
    claimed_steps_are_checked(&[Step::Metadata, Step::Segments]);
    // A claim after a step not done (here `quota` before `metadata`) would skip the refunds
    // the re-run `metadata` records.
    claimed_steps_are_checked(&[Step::Quota]);
}

fn claimed_steps_are_checked(claim: &[Step]) {
    let clock = Arc::new(ManualClock::new(0));
    let m = Master::new(clock.clone() as Arc<dyn Clock>, config(), MasterOptions::default());
    m.mount("c0", "s0", 1_000).unwrap();
    m.put_as("c0", "t", "k", 10, 1).unwrap();
    m.fail_step(Step::Metadata, 1_000);
    let t = tick_until_offline(&m, &clock);
    let mut snap = m.snapshot();
    assert_eq!(snap.segments.len(), 1);
    snap.clients[0].job.as_mut().expect("pending job").steps_done = claim.to_vec();
    let r = restore(&clock, &snap).unwrap();
    tick(&r, &clock, t, 100);
    assert_eq!(r.stats().jobs_completed, 1, "{:?}", r.stats());
    assert!(
        r.segments().is_empty(),
        "{claim:?}: segment s0 leaked by a trusted claim"
    );
    assert_eq!(r.quota_used(), 0, "{claim:?}: quota leaked by a trusted claim");
}

/// Found by the `snapshot_restore` fuzz target: an object naming another object's task was
/// restored, and kept that task id for ever (blocking its own offload or promotion).
#[test]
fn an_object_naming_another_objects_task_is_refused() {
    let clock = Arc::new(ManualClock::new(0));
    let m = Master::new(clock.clone() as Arc<dyn Clock>, config(), MasterOptions::default());
    m.mount("c0", "s0", 1_000).unwrap();
    m.mount("c1", "s1", 1_000).unwrap();
    for k in ["a", "b"] {
        m.put(k, 10, 1).unwrap();
        m.put_end(k).unwrap();
    }
    let to = if m.get("a").unwrap()[0].segment == "s0" {
        "s1"
    } else {
        "s0"
    };
    let task = m.replicate("a", to, false).unwrap();
    let mut snap = m.snapshot();
    let b = snap.objects.iter_mut().find(|o| o.key == "b").unwrap();
    b.tier_task = Some(task);
    let r = restore(&clock, &snap);
    assert!(
        matches!(r, Err(SnapshotError::Inconsistent(ref msg)) if msg.contains("\"b\" names task")),
        "{r:?}"
    );
}

/// Found by the `snapshot_restore` fuzz target: LocalDisk replicas beyond the disk's capacity
/// were restored (only offloads in flight were checked); refused like an overfull segment.
#[test]
fn a_local_disk_over_its_capacity_is_refused() {
    let clock = Arc::new(ManualClock::new(0));
    let snap = Snapshot {
        version: FORMAT_VERSION,
        names: vec![("c0".into(), 1)],
        clients: vec![mooncake_liveness::snapshot::ClientSnap {
            id: 1,
            incarnation: 1,
            ready: false,
            job: None,
        }],
        local_disks: vec![mooncake_liveness::snapshot::LocalDiskSnap {
            client: 1,
            incarnation: 1,
            capacity: 5,
            used: 0,
            keys: vec![],
        }],
        objects: vec![mooncake_liveness::snapshot::ObjectSnap {
            key: "k".into(),
            tenant: "t".into(),
            size: 10,
            touched: 1,
            replicas: vec![mooncake_liveness::snapshot::ReplicaSnap::LocalDisk {
                owner: 1,
                incarnation: 1,
                complete: true,
            }],
            replication_task: None,
            tier_task: None,
        }],
        ..Snapshot::default()
    };
    let r = restore(&clock, &snap);
    assert!(
        matches!(r, Err(SnapshotError::Inconsistent(ref msg)) if msg.contains("capacity")),
        "{r:?}"
    );
}

/// A snapshot that binds one name to two ids, or one id to two names, is refused: each alone
/// (the other binding free) must be enough (`Names::restore` refuses when *either* side is
/// bound; issue 17 round 5 found `||` → `&&` surviving).
#[test]
fn a_name_or_an_id_bound_twice_is_refused() {
    let clock = Arc::new(ManualClock::new(0));
    let named = |names: Vec<(String, u128)>| Snapshot {
        version: FORMAT_VERSION,
        names,
        ..Snapshot::default()
    };
    let ok = restore(&clock, &named(vec![("a".into(), 1), ("b".into(), 2)]));
    assert!(ok.is_ok(), "two distinct bindings: {:?}", ok.err());
    for (names, why) in [
        (vec![("a".into(), 1), ("a".into(), 2)], "one name, two ids"),
        (vec![("a".into(), 1), ("b".into(), 1)], "one id, two names"),
    ] {
        let r = restore(&clock, &named(names));
        assert!(
            matches!(r, Err(SnapshotError::Inconsistent(ref msg)) if msg.contains("named twice")),
            "{why}: {:?}",
            r.err()
        );
    }
}

/// A task not yet delivered when the snapshot was cut is delivered by the restored master, once;
/// one delivered before the cut is not queued again (issue 17 round 5: `!task.delivered` →
/// `task.delivered` in `Tasks::restore` survived the suite).
#[test]
fn a_restored_master_delivers_only_the_tasks_not_delivered_before() {
    let mut m = M::new();
    m.at(0).mount("c1", "s1", 1_000).unwrap();
    m.at(0).remount("c1", &[]).unwrap();
    for k in ["k1", "k2"] {
        m.at(0).put(k, 10, 1).unwrap(); // on s1, the only segment
        m.at(0).put_end(k).unwrap();
    }
    m.at(0).mount("c2", "s2", 1_000).unwrap();
    m.at(0).remount("c2", &[]).unwrap();
    let delivered = m.at(0).replicate("k1", "s2", false).unwrap(); // executor c2
    assert_eq!(
        m.at(0).fetch_tasks("c2").iter().map(|t| t.task).collect::<Vec<_>>(),
        [delivered]
    );
    let pending = m.at(0).replicate("k2", "s2", false).unwrap();
    let restored = restore(&m.clock, &m.m.snapshot()).unwrap();
    let got: Vec<u64> = restored.fetch_tasks("c2").iter().map(|t| t.task).collect();
    assert_eq!(got, [pending], "the restored master's deliveries");
    assert!(restored.fetch_tasks("c2").is_empty(), "delivered twice");
}

/// A restored master can evict restored objects (issue 17 round 6: `Shard::restore_lru` → `()`
/// survived: the restored eviction order was empty, so a full restored master refused every Put
/// that needed room). Which one goes is the LRU of the shard the eviction visits first (exact
/// LRU only with one metadata shard, `master/data.rs`).
#[test]
fn a_restored_master_evicts_restored_objects_to_make_room() {
    let mut m = M::new();
    m.at(0).mount("c1", "s1", 100).unwrap();
    for k in ["a", "b"] {
        m.at(0).put(k, 50, 1).unwrap();
        m.at(0).put_end(k).unwrap();
    }
    let restored = restore(&m.clock, &m.m.snapshot()).unwrap();
    restored
        .put("k", 50, 1)
        .expect("room made by evicting a restored object");
    let left = ["a", "b"].iter().filter(|k| restored.get(k).is_ok()).count();
    assert_eq!(left, 1, "one restored object evicted, one kept");
}
