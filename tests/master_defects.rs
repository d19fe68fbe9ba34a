//! Regression tests for the defects a line-by-line review against the RFC found (issue 16), one
//! named test per defect. Each fails on the master before its fix (see the notes).

mod common;

use common::master::{config, M};
use mooncake_liveness::config::OffboardingMode;
use mooncake_liveness::master::{Master, MasterError, MasterEvent, MasterOptions, OffboardingDriver, SegmentSpec};
use mooncake_liveness::offboarding::Step;
use mooncake_liveness::snapshot::{Snapshot, SnapshotError};
use mooncake_liveness::{Clock, Incarnation, LivenessConfig, LivenessState, ManualClock, PingStatus};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn config_in(mode: OffboardingMode) -> LivenessConfig {
    LivenessConfig {
        offboarding_mode: mode,
        offboarding_workers: 2,
        ..config()
    }
}

/// A master on a manual clock in `mode`, with its own tick counter.
struct Rig {
    clock: Arc<ManualClock>,
    m: Master,
    next_tick: u64,
    events: Vec<MasterEvent>,
}

impl Rig {
    fn new(mode: OffboardingMode) -> Self {
        let clock = Arc::new(ManualClock::new(0));
        let m = Master::new(
            clock.clone() as Arc<dyn Clock>,
            config_in(mode),
            MasterOptions::default(),
        );
        Self {
            clock,
            m,
            next_tick: 100,
            events: Vec::new(),
        }
    }

    fn restored(&self, mode: OffboardingMode, snap: &Snapshot) -> Self {
        let m = Master::restore(
            self.clock.clone() as Arc<dyn Clock>,
            config_in(mode),
            MasterOptions::default(),
            snap,
        )
        .expect("a snapshot of a live master restores");
        Self {
            clock: self.clock.clone(),
            m,
            next_tick: self.next_tick,
            events: Vec::new(),
        }
    }

    /// Ticks to `t`, keeping `alive` pinging every second.
    fn run_to(&mut self, t: u64, alive: &[&str]) {
        while self.next_tick <= t {
            self.clock.set_ms(self.next_tick);
            if self.next_tick % 1_000 == 0 {
                for c in alive {
                    self.m.ping(c);
                }
            }
            self.m.tick();
            self.events.extend(self.m.take_events());
            self.next_tick += 100;
        }
    }

    /// Ticks (100 ms of virtual time per step, letting real workers run) until `client`'s job
    /// completes; bounded.
    fn until_offboarded(&mut self, client: &str, alive: &[&str]) -> u32 {
        let started = Instant::now();
        loop {
            if let Some(a) = self.events.iter().find_map(|e| match e {
                MasterEvent::Offboarded {
                    client: c, attempts, ..
                } if self.m.client_name(*c) == client => Some(*attempts),
                _ => None,
            }) {
                return a;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{client}'s job never completed"
            );
            let t = self.next_tick;
            self.run_to(t, alive);
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

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

/// Defect 3: async mode was invisible to the master's own accounting.
#[test]
fn async_mode_counts_offline_completions_and_lock_free_recoveries() {
    let mut r = Rig::new(OffboardingMode::Async);
    r.m.mount("c1", "s1", 1 << 20).unwrap();
    r.m.mount("c2", "s2", 1 << 20).unwrap();
    r.m.fail_step(Step::Quota, 3);
    r.run_to(11_000, &["c2"]);
    // A recovery through the lock-free Ping path, straight on the liveness core.
    let id = r.m.client_id("c1").unwrap();
    r.m.liveness_handle().ping(id, None);
    assert_eq!(r.m.stats().recoveries, 1, "{:?}", r.m.stats());
    r.run_to(41_500, &["c2"]);
    let s = r.m.stats();
    assert_eq!(
        (s.offline, s.jobs_pending),
        (1, 1),
        "an Offline incarnation is not Active: {s:?}"
    );
    assert_eq!(s.active, 1);
    let attempts = r.until_offboarded("c1", &["c2"]);
    assert_eq!(attempts, 4, "three injected failures, then success");
    let s = r.m.stats();
    assert_eq!((s.offline, s.jobs_completed, s.active), (0, 1, 1), "{s:?}");
}

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

/// Defect 5: switching the driver again dropped jobs not taken yet, and a job an executor
/// refused could not be given back.
#[test]
fn jobs_survive_driver_switches_and_can_be_given_back() {
    let mut m = M::with(MasterOptions {
        offboarding: OffboardingDriver::Outbox,
        ..MasterOptions::default()
    });
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    m.at(31_000);
    m.m.hand_jobs_to_executor(true);
    let mut jobs = m.m.take_jobs();
    assert_eq!(jobs.len(), 1, "the job minted before the switch is still there");
    m.m.return_job(jobs.pop().unwrap());
    assert!(m.m.take_jobs().is_empty(), "a returned job waits for the next tick");
    m.at(31_100);
    let job = m.m.take_jobs().pop().expect("handed on again at the next tick");
    m.m.return_job(job);
    m.m.hand_jobs_to_executor(false);
    m.at(31_200);
    assert!(m
        .m
        .take_events()
        .iter()
        .any(|e| matches!(e, MasterEvent::Offboarded { .. })));
    m.at(31_200).mount("c1", "s1", 1 << 20).unwrap();
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

/// Defect 9a: the diagnostic query showed `offboarding: bool` but not the job's attempts and
/// last error.
#[test]
fn query_shows_the_parked_jobs_attempts_and_last_error() {
    let mut m = M::new();
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    m.m.fail_step(Step::Segments, 2);
    m.at(30_100);
    let q = m.m.query(Some("c1"), None);
    let job = q.clients[0].job.as_ref().expect("the parked job is shown");
    assert_eq!(job.attempts, 1);
    assert!(job.last_error.as_deref().unwrap_or("").contains("segments"), "{job:?}");
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

/// Found by the `differential` fuzz target in async mode (seeds `async_*`, e.g. `async_completion`):
/// with the `Outbox` driver the embedder's executor runs the jobs, and the master had no way
/// to hear how an attempt ended: no `offboarded` or `offboarding_retry` event, and `stats()`
/// counted a job completed elsewhere as Offline and pending for ever (the Active count short by
/// one). Before the fix `report_offboarding` did not exist and the embedder could not report.
#[test]
fn an_outbox_executors_attempts_reach_the_masters_events_and_stats() {
    use mooncake_liveness::offboarding::complete_client_offboarding;
    let mut m = M::with(MasterOptions {
        offboarding: OffboardingDriver::Outbox,
        ..MasterOptions::default()
    });
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    m.at(0).mount("c2", "s2", 1 << 20).unwrap();
    m.m.fail_step(Step::Segments, 1);
    for t in (1_000..=31_000).step_by(1_000) {
        m.at(t).ping("c2");
    }
    let live = m.m.liveness_handle();
    let job = m.m.take_jobs().pop().expect("c1's job in the outbox");
    let job = match complete_client_offboarding(&mut m.m, live.registry(), job) {
        Err(job) => job,
        Ok(_) => panic!("the injected failure did not fail the attempt"),
    };
    m.m.report_offboarding(Err(&job));
    let done = complete_client_offboarding(&mut m.m, live.registry(), job).expect("second attempt completes");
    m.m.report_offboarding(Ok(&done));
    let jobs: Vec<_> =
        m.m.take_events()
            .into_iter()
            .filter(|e| !matches!(e, MasterEvent::Transition(_)))
            .collect();
    assert!(
        matches!(
            jobs.as_slice(),
            [
                MasterEvent::OffboardingRetry {
                    step: Step::Segments,
                    attempt: 1,
                    ..
                },
                MasterEvent::Offboarded { attempts: 2, .. }
            ]
        ),
        "{jobs:?}"
    );
    let s = m.m.stats();
    assert_eq!(
        (
            s.active,
            s.offline,
            s.jobs_pending,
            s.jobs_completed,
            s.step_failures[1]
        ),
        (1, 0, 0, 1, 1),
        "{s:?}"
    );
}

/// Finding of the `differential` fuzz target (TTL reload): when the active TTL shrinks while an
/// incarnation is Suspected, the monitor's wake-up for it was armed with the old TTL
/// (`min(suspicion deadline, commit + old active TTL)`); a recovery after the reload sets the
/// new, earlier active deadline, and the monitor looked again only at the old wake-up, so the
/// incarnation went Suspected late (invariant 4: no later than one tick after its deadline).
/// Fixed: the monitor pulls every entry in when a reload shortens the active TTL.
#[test]
fn a_client_recovered_after_the_active_ttl_shrinks_is_suspected_on_time() {
    let mut m = M::new();
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    m.at(10_000);
    assert_eq!(m.m.stats().suspected, 1, "Suspected at its 10 s deadline");
    let shorter = LivenessConfig {
        active_ttl_ms: 2_000,
        stall_bound_ms: 1_000,
        ..config()
    };
    m.m.liveness().config().reload(shorter).unwrap();
    m.at(11_000).ping("c1");
    assert_eq!(m.m.stats().suspected, 0, "recovered at 11 s");
    // New active deadline: 11 s + 2 s. Due no later than one tick (100 ms) after it.
    m.at(13_100);
    assert_eq!(
        m.m.stats().suspected,
        1,
        "Suspected by 13.1 s (before the fix: still Active, the monitor woke at 20 s)"
    );
}

/// An Active incarnation's window keeps the TTL it started with (a signal only moves its
/// deadline later): a shortening reload pulls its wheel entry in (it fires early and re-arms),
/// and it is still suspected exactly at its old deadline, not before and not late.
#[test]
fn an_active_window_keeps_its_ttl_across_a_shortening_reload() {
    let mut m = M::new();
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    m.at(1_000).ping("c1"); // deadline 11 s, under the 10 s TTL
    let shorter = LivenessConfig {
        active_ttl_ms: 2_000,
        stall_bound_ms: 1_000,
        ..config()
    };
    m.m.liveness().config().reload(shorter).unwrap();
    m.at(1_500).ping("c1"); // max(11 s, 1.5 s + 2 s): still 11 s
    m.at(10_900);
    assert_eq!(m.m.stats().suspected, 0, "its window runs to 11 s");
    m.at(11_100);
    assert_eq!(m.m.stats().suspected, 1, "Suspected by 11.1 s (one tick after 11 s)");
}

/// The same late commit through a reload that shortens the active TTL and a second reload that
/// lengthens it again before the next tick (found by `tests/fuzz_smoke.rs`'s random bytes, issue
/// 17 §3): the monitor compared only the configurations of consecutive ticks, saw no
/// shortening, and left the Suspected entry asleep at commit + the long TTL, while the recovery
/// between the reloads started a window under the short TTL (invariant 4). Fixed: the
/// configuration handle remembers the shortest active TTL published since the monitor last
/// looked, and the monitor pulls its entries in to that.
#[test]
fn a_recovery_under_a_briefly_shorter_active_ttl_is_suspected_on_time() {
    let mut m = M::new();
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    m.at(10_000);
    assert_eq!(m.m.stats().suspected, 1, "Suspected at its 10 s deadline");
    let shorter = LivenessConfig {
        active_ttl_ms: 2_000,
        stall_bound_ms: 1_000,
        ..config()
    };
    // Between two ticks: shorter, a recovery under it, back to the long TTL.
    m.at(11_000);
    m.m.liveness().config().reload(shorter).unwrap();
    m.m.ping("c1");
    assert_eq!(m.m.stats().suspected, 0, "recovered at 11 s");
    m.m.liveness().config().reload(config()).unwrap();
    m.at(13_100);
    assert_eq!(
        m.m.stats().suspected,
        1,
        "Suspected by 13.1 s (before the fix: still Active, the monitor woke at 20 s)"
    );
}

/// The mass-suspicion brake's release gives each paused incarnation a fresh suspicion window
/// (decisions.md, "Mass offboarding"), and invariant 4 holds again once the brake is released:
/// Offline no later than one tick after that window ends. The monitor parked a paused entry one
/// active TTL out, so with an active TTL longer than the suspicion TTL the renewed window ended
/// long before anyone looked (found by the differential fuzzer once its inputs could enable
/// the brake, issue 17 §3). Fixed: a paused entry wakes within the shorter of the two TTLs.
#[test]
fn a_client_paused_by_the_mass_suspicion_brake_goes_offline_on_time_after_the_release() {
    let mut m = M::new();
    let braked = LivenessConfig {
        active_ttl_ms: 30_000,
        suspicion_ttl_ms: 2_000,
        stall_bound_ms: 15_000,
        mass_suspicion_brake: true,
        mass_suspicion_min_clients: 2,
        mass_suspicion_fraction: 0.5,
        ..config()
    };
    m.m.liveness().config().reload(braked).unwrap();
    for (c, s) in [("c1", "s1"), ("c2", "s2"), ("c3", "s3"), ("c4", "s4")] {
        m.at(0).mount(c, s, 1 << 20).unwrap();
    }
    m.at(20_000).ping("c4");
    // 30 s: c1..c3 Suspected; 30.1 s: 3 of 4 > half, the brake engages; 32 s: their Offline
    // commits are paused. 33 s: c1 recovers, 2 of 4 is not more than half: released at 33.1 s,
    // c2 and c3 get the window [33.1 s, 35.1 s).
    m.at(33_000).ping("c1");
    m.at(33_100);
    assert_eq!(m.m.monitor().stats().brake_engagements, 1, "engaged once");
    assert_eq!(m.state("c2"), Some(LivenessState::Suspected), "renewed at 33.1 s");
    m.at(35_200);
    let offline: Vec<String> =
        m.m.take_events()
            .iter()
            .filter_map(|e| match e {
                MasterEvent::Transition(t) if t.to == LivenessState::Offline => Some(m.m.client_name(t.client)),
                _ => None,
            })
            .collect();
    assert_eq!(
        offline,
        ["c2", "c3"],
        "Offline by 35.2 s, one tick after the renewed window (before the fix: at 62 s)"
    );
}

/// The reload pull-in must follow each TTL: an active TTL shrinking (100 s → 2 s) while the
/// shorter TTL grows (1 s → 2 s) left a Suspected entry asleep one long active TTL out past a
/// recovery's 2 s window (found by the libFuzzer campaign of issue 17 §3, a regression of the
/// brake fix; invariant 4).
#[test]
fn an_active_ttl_shrink_is_followed_even_when_the_shorter_ttl_grows() {
    let mut m = M::new();
    let ttls = |active_ttl_ms, suspicion_ttl_ms| LivenessConfig {
        active_ttl_ms,
        suspicion_ttl_ms,
        stall_bound_ms: active_ttl_ms / 2,
        ..config()
    };
    m.m.liveness().config().reload(ttls(10_000, 100_000)).unwrap();
    m.at(0).mount("c1", "s1", 1 << 20).unwrap();
    m.at(10_000);
    assert_eq!(
        m.state("c1"),
        Some(LivenessState::Suspected),
        "Suspected at 10 s, window to 110 s"
    );
    m.m.liveness().config().reload(ttls(100_000, 1_000)).unwrap();
    m.at(20_000); // the entry re-arms at min(110 s, 20 s + 100 s)
    m.m.liveness().config().reload(ttls(2_000, 3_000)).unwrap();
    m.m.ping("c1"); // recovered: Active until 22 s
    m.at(22_100);
    assert_eq!(
        m.state("c1"),
        Some(LivenessState::Suspected),
        "Suspected by 22.1 s (before the fix: the entry slept until 110 s)"
    );
}
