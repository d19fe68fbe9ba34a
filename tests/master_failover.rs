//! Failover of the reference master: a snapshot taken while requests and offboarding run,
//! restored into a new master (in either offboarding mode), resumes every job with its progress
//! and refuses what it cannot honour. Regression tests for defects a line-by-line review against
//! the RFC found (issue 16); each failed on the master before its fix.

mod common;

use common::master::{config, M};
use common::rig::Rig;
use mooncake_liveness::config::OffboardingMode;
use mooncake_liveness::master::{Master, MasterError, MasterOptions, OffboardingDriver};
use mooncake_liveness::offboarding::Step;
use mooncake_liveness::snapshot::{Snapshot, SnapshotError};
use mooncake_liveness::{Clock, Incarnation, ManualClock};
use std::sync::Arc;

/// c1 holds objects (some also on c2) and goes silent; its job fails at `segments` until the
/// failover; a snapshot is taken mid-job and restored in `mode`.
fn failover_mid_job(mode: OffboardingMode) {
    let mut r = Rig::new(mode);
    r.m.mount("c1", "s1", 1 << 20).unwrap();
    r.m.mount("c2", "s2", 1 << 20).unwrap();
    for i in 0..50 {
        let k = format!("k{i}");
        r.m.put(&k, 100, 2).unwrap();
        r.m.put_end(&k).unwrap();
    }
    r.m.fail_step(Step::Segments, 1_000);
    r.run_to(31_000, &["c2"]);
    assert_eq!(r.m.mount("c1", "s1", 1 << 20), Err(MasterError::ClientOffboarding));
    assert_eq!(r.m.stats().offline, 1, "{mode:?}: {:?}", r.m.stats());
    let snap = Snapshot::decode(&r.m.snapshot().encode()).unwrap();
    let mut restored = r.restored(mode, &snap);
    drop(r);
    assert_eq!(
        restored.m.mount("c1", "s1", 1 << 20),
        Err(MasterError::ClientOffboarding),
        "{mode:?}: the barrier must survive failover"
    );
    restored.until_offboarded("c1", &["c2"]);
    restored
        .m
        .mount("c1", "s1", 1 << 20)
        .expect("barrier lifted after the resumed job");
    assert_eq!(restored.m.incarnation_of("c1"), Some(Incarnation(2)));
    let objects = restored.m.objects();
    assert_eq!(objects.len(), 50, "every object keeps its c2 replica");
    assert!(objects.values().all(|o| o.replicas.len() == 1));
    assert_eq!(restored.m.quota_used(), 50 * 100, "quota = remaining replicas");
    assert!(!restored.m.external_metadata().contains("s1") || restored.m.segments().id_of("s1").is_some());
    assert_eq!(restored.m.stats().offline, 0);
}

#[test]
fn restored_sync_master_resumes_a_job_interrupted_by_failover() {
    failover_mid_job(OffboardingMode::Sync);
}

/// Defects 1 and 2: a restored async master parked restored jobs where nothing ever looked, and
/// a job in flight in the executor at failover was stranded.
#[test]
fn restored_async_master_resumes_a_job_interrupted_by_failover() {
    failover_mid_job(OffboardingMode::Async);
}

fn one_client_snapshot() -> (M, Snapshot) {
    let mut m = M::new();
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    m.at(0).mount_local_disk("c1", 1 << 20).unwrap();
    m.at(0).put("k", 10, 1).unwrap();
    m.at(0).put_end("k").unwrap();
    let snap = m.m.snapshot();
    (m, snap)
}

fn restore(m: &M, snap: &Snapshot) -> Result<Master, SnapshotError> {
    let bytes = snap.encode();
    let snap = Snapshot::decode(&bytes)?;
    Master::restore(
        m.clock.clone() as Arc<dyn Clock>,
        config(),
        MasterOptions::default(),
        &snap,
    )
}

fn refused(r: Result<Master, SnapshotError>, what: &str) {
    match r {
        Err(SnapshotError::Inconsistent(msg)) => assert!(msg.contains(what), "{msg:?} does not name {what:?}"),
        Err(e) => panic!("refused for the wrong reason: {e}"),
        Ok(_) => panic!("an inconsistent snapshot was restored ({what})"),
    }
}

/// Defect 6a: 1,024+ stale LocalDisk keys made the metadata step return `More` forever.
#[test]
fn restore_refuses_stale_local_disk_keys() {
    let (m, mut snap) = one_client_snapshot();
    snap.local_disks[0].keys = (0..2_000).map(|i| format!("stale{i}")).collect();
    refused(restore(&m, &snap), "LocalDisk of client");
}

/// Defect 6b: task and replication references were not validated.
#[test]
fn restore_refuses_dangling_task_references() {
    let (m, mut snap) = one_client_snapshot();
    snap.objects[0].replication_task = Some(99);
    refused(restore(&m, &snap), "names task 99");
}

/// Defect 6c: non-dense client ids collided with later allocations.
#[test]
fn restore_with_sparse_client_ids_never_reuses_them() {
    let (m, mut snap) = one_client_snapshot();
    let id = 2u128;
    snap.names = vec![("c1".into(), id)];
    snap.clients[0].id = id;
    snap.segments[0].owner = id;
    snap.local_disks[0].client = id;
    let restored = restore(&m, &snap).expect("sparse ids are consistent");
    restored.mount("z", "sz", 1 << 20).unwrap();
    assert_ne!(restored.known_client_id("z"), restored.known_client_id("c1"));
    assert_eq!(restored.get("k").unwrap()[0].client, "c1");
}

/// Defect 6d: a restored NoF failure count of `u32::MAX` overflowed on the next failure.
#[test]
fn restored_nof_failure_count_at_max_does_not_overflow() {
    let (m, mut snap) = one_client_snapshot();
    snap.nof = vec![("nof1".into(), 1 << 20, u32::MAX)];
    let restored = restore(&m, &snap).unwrap();
    assert!(restored.nof().probe("nof1", false), "past the threshold: unmounted");
}

/// Defect 9b: restored jobs kept the old process's commit time, so job-age metrics were off
/// after failover.
#[test]
fn restored_jobs_are_stamped_with_the_restoring_clock() {
    let mut m = M::new();
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    m.m.fail_step(Step::Segments, 100);
    m.at(30_100);
    let snap = m.m.snapshot();
    // A new process: its clock starts again.
    let clock = Arc::new(ManualClock::new(5));
    let options = MasterOptions {
        offboarding: OffboardingDriver::Outbox,
        ..MasterOptions::default()
    };
    let restored = Master::restore(clock.clone() as Arc<dyn Clock>, config(), options, &snap).unwrap();
    clock.set_ms(100);
    restored.tick();
    let jobs = restored.take_jobs();
    assert_eq!(jobs.len(), 1);
    assert_eq!(
        jobs[0].committed_at_ms(),
        5,
        "stamped with the restoring master's clock"
    );
}
