//! The reference master's request paths at their edges: names that do not exist, callbacks of a
//! Suspected or Offline incarnation, quotas, incarnation tokens, promotion to a Suspected
//! target. Regression tests for defects found by a review against the RFC (issue 16) and
//! boundary tests that kill mutants (issue 17, MUTANTS.md).

mod common;

use common::master::{config, M};
use common::stepped::Stepped;
use mooncake_liveness::master::{MasterError, MasterOptions, OffboardingDriver, SegmentSpec};
use mooncake_liveness::offboarding::Step;
use mooncake_liveness::{Incarnation, LivenessState, PingStatus};

/// Defect 4: a Copy whose source owner became Suspected after the task was created, or a
/// promotion whose target owner did, was still delivered.
#[test]
fn promotion_to_a_suspected_target_is_held_until_it_recovers() {
    let mut m = M::new();
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    m.at(0).mount("c2", "s2", 1 << 20).unwrap();
    m.at(0).mount_local_disk("c1", 1 << 20).unwrap();
    m.at(0).put("k", 10, 1).unwrap();
    m.at(0).put_end("k").unwrap();
    let on_c1 = m.m.get("k").unwrap()[0].client == "c1";
    let (holder, seg, other) = if on_c1 { ("c1", "s1", "c2") } else { ("c2", "s2", "c1") };
    if holder == "c2" {
        m.at(0).mount_local_disk("c2", 1 << 20).unwrap();
    }
    let offload = m.at(0).offload_heartbeat(holder).unwrap();
    assert_eq!(offload.len(), 1);
    m.at(0).task_done(holder, offload[0].task, true).unwrap();
    m.at(0).unmount(holder, seg).unwrap();
    let task = m.at(0).promote("k").unwrap();
    // The holder keeps pinging; the promotion's target owner goes silent and Suspected.
    for t in (1_000..=11_000).step_by(1_000) {
        m.at(t).ping(holder);
    }
    assert_eq!(m.state(other), Some(mooncake_liveness::LivenessState::Suspected));
    assert!(
        m.at(11_000).fetch_tasks(holder).is_empty(),
        "promotion onto a Suspected target delivered"
    );
    m.at(11_100).ping(other);
    let got = m.at(11_100).fetch_tasks(holder);
    assert_eq!(got.iter().map(|t| t.task).collect::<Vec<_>>(), vec![task]);
}

/// Defect 7: any name the master heard was interned forever and persisted.
#[test]
fn unknown_names_create_nothing() {
    let mut m = M::new();
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    let before = m.m.snapshot().names;
    for i in 0..100 {
        let name = format!("stranger{i}");
        assert_eq!(m.m.ping(&name), PingStatus::NeedRemount);
        assert!(m.m.fetch_tasks(&name).is_empty());
        assert_eq!(m.m.task_done(&name, 1, true), Err(MasterError::IllegalClient));
        assert_eq!(m.m.offload_heartbeat(&name), Err(MasterError::SegmentNotFound));
        assert_eq!(
            m.m.mount(&name, "s1", 1 << 20),
            Err(MasterError::InvalidParams),
            "s1 is c1's"
        );
        assert!(m.m.known_client_id(&name).is_none());
    }
    assert_eq!(m.m.snapshot().names, before, "strangers were interned");
}

/// Defect 8a: `put_end`/`put_revoke` could not refuse an Offline, unknown or foreign writer.
#[test]
fn put_callbacks_know_their_writer() {
    let mut m = M::new();
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    m.at(0).mount("c2", "s2", 1 << 20).unwrap();
    m.at(0).put_as("c1", "default", "k", 10, 1).unwrap();
    m.at(0).put_as("c1", "default", "j", 10, 1).unwrap();
    assert_eq!(m.m.put_end_as("nobody", "k"), Err(MasterError::IllegalClient));
    assert_eq!(
        m.m.put_end_as("c2", "k"),
        Err(MasterError::IllegalClient),
        "not the writer"
    );
    m.m.fail_step(Step::Segments, 100);
    for t in (1_000..=11_000).step_by(1_000) {
        m.at(t).ping("c2");
    }
    assert_eq!(m.state("c1"), Some(mooncake_liveness::LivenessState::Suspected));
    m.at(11_000)
        .put_end_as("c1", "k")
        .expect("a Suspected writer's PutEnd converges");
    for t in (12_000..=32_000).step_by(1_000) {
        m.at(t).ping("c2");
    }
    assert_eq!(m.state("c1"), Some(mooncake_liveness::LivenessState::Offline));
    assert_eq!(
        m.m.put_revoke_as("c1", "j"),
        Err(MasterError::UnavailableInCurrentStatus)
    );
}

/// Defect 8b: a Put evicted before its quota check, so a refused Put could already have
/// evicted objects.
#[test]
fn a_put_refused_by_its_quota_evicts_nothing() {
    let mut m = M::new();
    m.at(0).mount("c1", "s1", 100).unwrap();
    for i in 0..10 {
        let k = format!("a{i}");
        m.at(0).put_for("a", &k, 10, 1).unwrap();
        m.at(0).put_end(&k).unwrap();
    }
    m.m.set_quota_limit("b", Some(5));
    assert!(m.at(0).put_for("b", "big", 10, 1).is_err());
    assert_eq!(m.m.objects().len(), 10, "the refused Put evicted objects");
}

/// Defect 8c: Copy/Move, promotion and offload charged quota without checking the limit.
#[test]
fn copy_and_offload_respect_the_quota_limit() {
    let mut m = M::new();
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    m.at(0).mount("c2", "s2", 1 << 20).unwrap();
    m.at(0).mount_local_disk("c1", 1 << 20).unwrap();
    m.at(0).mount_local_disk("c2", 1 << 20).unwrap();
    m.at(0).put_for("t", "k", 10, 1).unwrap();
    m.at(0).put_end("k").unwrap();
    m.m.set_quota_limit("t", Some(10));
    let target = if m.m.get("k").unwrap()[0].segment == "s1" {
        "s2"
    } else {
        "s1"
    };
    assert_eq!(m.m.replicate("k", target, false), Err(MasterError::TenantQuotaExceeded));
    assert_eq!(m.m.objects()["k"].replicas.len(), 1, "a refused Copy allocated");
    assert!(m.m.offload_heartbeat("c1").unwrap().is_empty());
    assert!(m.m.offload_heartbeat("c2").unwrap().is_empty());
    assert_eq!(m.m.quota_used(), 10);
}

/// Defect 9c: the `Master` API did not expose the incarnation tokens decisions.md promises.
#[test]
fn incarnation_tokens_fence_stale_callers() {
    let mut m = M::new();
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    let token = m.m.incarnation_of("c1");
    assert_eq!(token, Some(Incarnation(1)));
    assert_eq!(m.m.ping_with_token("c1", Some(Incarnation(2))), PingStatus::NeedRemount);
    m.m.remount(
        "c1",
        &[SegmentSpec {
            segment: "s1".into(),
            size: 1 << 20,
        }],
    )
    .unwrap();
    assert_eq!(m.m.ping_with_token("c1", token), PingStatus::Ok);
    assert_eq!(
        m.m.mount_with_token("c1", Some(Incarnation(7)), "s9", 1 << 20),
        Err(MasterError::InvalidParams)
    );
    m.m.mount_with_token("c1", token, "s9", 1 << 20).unwrap();
}

/// decisions.md "Tasks": every callback kind (PutEnd, PutRevoke, task completion, task failure,
/// unmount, offload heartbeat) is accepted from a Suspected client and refused from an Offline
/// one whose offboarding job is still pending (the record is still registered), and from an
/// unknown one (invariant 11).
#[test]
fn every_callback_kind_is_accepted_while_suspected_and_refused_while_offline_pending() {
    let options = MasterOptions {
        offboarding: OffboardingDriver::Outbox, // the job waits for an embedder: Offline stays pending
        ..MasterOptions::default()
    };
    let mut s = Stepped::new(config(), options);
    let alive = ["c2"];
    {
        let m = s.at(0, &alive);
        m.mount("c2", "s2", 10_000).unwrap();
        m.remount("c2", &[]).unwrap();
        for k in ["k1", "k2", "k3"] {
            m.put(k, 10, 1).unwrap(); // on s2: c1 has no segment yet
            m.put_end(k).unwrap();
        }
        m.mount("c1", "s1", 10_000).unwrap();
        m.remount("c1", &[]).unwrap();
        m.mount_local_disk("c1", 1_000).unwrap();
        for k in ["a", "b", "c", "d"] {
            m.put_as("c1", "default", k, 10, 1).unwrap();
        }
    }
    let (t1, t2, t3) = {
        let m = s.at(0, &alive);
        (
            m.replicate("k1", "s1", false).unwrap(),
            m.replicate("k2", "s1", false).unwrap(),
            m.replicate("k3", "s1", false).unwrap(),
        )
    };
    assert_eq!(s.at(100, &alive).fetch_tasks("c1").len(), 3);
    s.at(10_500, &alive);
    assert_eq!(s.state("c1"), Some(LivenessState::Suspected));
    {
        let m = s.at(10_500, &alive);
        assert_eq!(m.put_end_as("c1", "a"), Ok(()));
        assert_eq!(m.put_revoke_as("c1", "b"), Ok(()));
        assert_eq!(m.task_done("c1", t1, true), Ok(()));
        assert_eq!(m.task_done("c1", t2, false), Ok(()));
        assert_eq!(
            m.offload_heartbeat("c1"),
            Ok(Vec::new()),
            "Suspected: accepted, handed nothing"
        );
    }
    s.at(30_500, &alive);
    assert_eq!(s.state("c1"), Some(LivenessState::Offline));
    let jobs = s.m.take_jobs();
    assert_eq!(jobs.len(), 1, "the job waits in the outbox");
    jobs.into_iter().for_each(|j| s.m.return_job(j));
    let m = s.at(30_500, &alive);
    let refused = Err(MasterError::UnavailableInCurrentStatus);
    assert_eq!(m.put_end_as("c1", "c"), refused);
    assert_eq!(m.put_revoke_as("c1", "d"), refused);
    assert_eq!(m.task_done("c1", t3, true), refused);
    assert_eq!(m.task_done("c1", t3, false), refused);
    assert_eq!(m.offload_heartbeat("c1"), Err(MasterError::UnavailableInCurrentStatus));
    assert_eq!(m.unmount("c1", "s1"), Err(MasterError::ClientOffboarding));
    assert_eq!(m.put_end_as("nobody", "c"), Err(MasterError::IllegalClient));
    assert_eq!(m.task_done("nobody", t3, true), Err(MasterError::IllegalClient));
    // Nothing the refused callbacks named changed.
    assert!(!m.object("c").unwrap().replicas.iter().any(|r| r.complete));
    assert!(m.object("d").is_some());
}
