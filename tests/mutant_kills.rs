//! Boundary tests that kill mutants which survived the rest of the suite (issue 17, MUTANTS.md).
//!
//! Each test pins a line of the contract at its edge: exactly at a bound, one millisecond under
//! and one over; the clock a time is read from (base vs credited); which counter a path moves;
//! which callbacks an Offline incarnation with a pending job may still make. MUTANTS.md names
//! the mutant each one kills.

mod common;

use common::{config, Harness};
use mooncake_liveness::clock::LivenessMs;
use mooncake_liveness::master::{Master, MasterError, MasterEvent, MasterOptions, OffboardingDriver};
use mooncake_liveness::offboarding::{
    complete_client_offboarding, prepare_client_offboarding, CleanupError, ClientOffboardingJob, OffboardingSteps,
    Progress, Step,
};
use mooncake_liveness::{
    ClientId, Clock, Incarnation, LivenessConfig, LivenessEvent, LivenessState, ManualClock, MountOutcome,
};
use std::sync::Arc;

const A: u64 = 10_000;
const S: u64 = 20_000;
/// `config(A, S)`: stall bound A / 2, tick 100 ms.
const BOUND: u64 = A / 2;
const TICK: u64 = 100;

/// A tick that runs `late` ms after it was due (the previous tick ran at 1_000).
fn tick_late_by(late: u64) -> Harness {
    let mut h = Harness::new(config(A, S));
    h.mount(1); // deadline 10_000
    h.run_to(1_000);
    h.stall_to(1_000 + TICK + late);
    h
}

/// Invariant 5 / decisions.md "Master stalls": lateness *longer than* the bound is a stall; a
/// tick exactly at the bound, or under it, is not. Lateness is measured from when the tick was
/// due (last tick + one tick), not from the last tick.
#[test]
fn stall_threshold_is_exclusive_and_counts_from_the_due_tick() {
    let at = tick_late_by(BOUND);
    assert!(at.stalls().is_empty(), "a tick exactly at the bound is not a stall");
    let under = tick_late_by(BOUND - 1);
    assert!(under.stalls().is_empty(), "a tick under the bound is not a stall");
    let over = tick_late_by(BOUND + 1);
    // The whole gap since the last tick is credited.
    let resumed = 1_000 + TICK + BOUND + 1;
    assert_eq!(over.stalls(), vec![(resumed, resumed - 1_000)]);
    assert_eq!(over.live.clock().credit_ms(), resumed - 1_000);
}

/// The credited gap moves the deadline by exactly the gap: a client mounted at 0 (due at 10_000
/// liveness) is suspected at the first tick whose liveness time reaches 10_000.
#[test]
fn a_stall_moves_deadlines_by_exactly_the_gap() {
    let mut over = tick_late_by(BOUND + 1); // resumed at 6_101, credit 5_101
    over.run_to(20_000);
    // liveness = base - 5_101: 10_000 is reached at base 15_101, first tick at 15_200.
    assert_eq!(over.transitions(), vec![(15_200, 1, "Active", "Suspected")]);
    let mut at = tick_late_by(BOUND); // no credit: suspected on time
    at.run_to(20_000);
    assert_eq!(at.transitions(), vec![(10_000, 1, "Active", "Suspected")]);
}

/// Mounts `n` clients at 0; those in `silent` never ping again, the others ping every second
/// until `until`.
fn fleet(cfg: LivenessConfig, n: u128, silent: u128, until: u64) -> Harness {
    let mut h = Harness::new(cfg);
    for id in 0..n {
        h.mount(id);
    }
    for t in (1_000..=until).step_by(1_000) {
        h.run_to(t);
        for id in silent..n {
            h.ping(id);
        }
    }
    h
}

fn brake_events(h: &Harness) -> Vec<(u64, bool, usize, usize)> {
    h.events
        .iter()
        .filter_map(|e| match e {
            LivenessEvent::MassSuspicionBrake {
                at_ms,
                engaged,
                suspected,
                registered,
            } => Some((*at_ms, *engaged, *suspected, *registered)),
            _ => None,
        })
        .collect()
}

fn offline_count(h: &Harness) -> usize {
    h.transitions().iter().filter(|t| t.3 == "Offline").count()
}

/// decisions.md "Mass offboarding": the brake needs *at least* `mass_suspicion_min_clients`
/// Suspected: exactly 10 of 15 (10 ≥ 10, 10 > 7.5) engage it and no one goes Offline.
#[test]
fn mass_suspicion_brake_engages_at_exactly_the_minimum() {
    let h = fleet(config(A, S), 15, 10, 40_000);
    assert_eq!(brake_events(&h), vec![(10_100, true, 10, 15)]);
    assert_eq!(h.monitor.stats().brake_engagements, 1);
    assert_eq!(offline_count(&h), 0, "Offline committed while the brake held");
    // Each held evaluation counts: the 10 are due at 30_000, held, re-armed one active TTL out
    // and held again at 40_000.
    assert_eq!(h.monitor.stats().offline_held, 20);
}

/// ... and *more than* `mass_suspicion_fraction` of the registered: exactly half (10 of 20) does
/// not engage it, and the 10 go Offline on time.
#[test]
fn mass_suspicion_brake_needs_more_than_the_fraction() {
    let h = fleet(config(A, S), 20, 10, 40_000);
    assert!(brake_events(&h).is_empty(), "{:?}", brake_events(&h));
    assert_eq!(offline_count(&h), 10);
    // One more Suspected (11 of 20) is more than half: it engages.
    let h = fleet(config(A, S), 20, 11, 40_000);
    assert_eq!(brake_events(&h), vec![(10_100, true, 11, 20)]);
}

/// decisions.md question 4: a token naming an incarnation that no longer exists (offboarded and
/// erased, or never existed) is `StaleToken`; the work does not run and nothing is created.
#[test]
fn mount_with_a_token_of_an_erased_or_unknown_incarnation_is_stale() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.run_to(30_000);
    assert_eq!(h.complete_jobs(), 1);
    assert!(h.live.registry().get(ClientId(1)).is_none());
    let mut ran = false;
    let out = h.live.mount(ClientId(1), Some(Incarnation(1)), |_| {
        ran = true;
        Ok::<(), ()>(())
    });
    assert!(matches!(out, MountOutcome::StaleToken), "{out:?}");
    assert!(!ran, "the work ran for a stale token");
    let out = h.live.mount(ClientId(7), Some(Incarnation(1)), |_| Ok::<(), ()>(()));
    assert!(matches!(out, MountOutcome::StaleToken), "{out:?}");
    assert!(h.live.registry().get(ClientId(7)).is_none());
    assert!(h.live.registry().get(ClientId(1)).is_none());
    // Without a token the next incarnation starts.
    match h.live.mount(ClientId(1), None, |_| Ok::<(), ()>(())) {
        MountOutcome::Mounted { record, created, .. } => {
            assert!(created);
            assert_eq!(record.incarnation(), Incarnation(2));
        }
        other => panic!("{other:?}"),
    }
}

/// `prepare_client_offboarding` commits Suspected → Offline: the Suspected count (which the
/// mass-suspicion brake reads) drops by one.
#[test]
fn prepare_client_offboarding_decrements_the_suspected_count() {
    let mut h = Harness::new(config(A, S));
    let rec = h.mount(1);
    h.mount(2);
    h.run_to(10_000);
    assert_eq!(h.live.suspected_count(), 2);
    h.clock.set_ms(30_000);
    prepare_client_offboarding(&h.live, &rec).expect("due");
    assert_eq!(h.live.suspected_count(), 1);
}

/// The first signal of a new incarnation is the mount's commit, not its begin: a mount whose work
/// took 4 s is due for suspicion one active TTL after the work finished.
#[test]
fn first_mount_deadline_counts_from_the_commit() {
    let mut h = Harness::new(config(A, S));
    let pending = h.live.begin_mount(ClientId(1), None).expect("begin");
    h.run_to(4_000); // the mount work runs
    let done = h.live.commit_mount(pending).expect("commit");
    assert_eq!(done.record.word().deadline(), LivenessMs(4_000 + A));
    h.run_to(13_900);
    assert!(
        h.transitions().is_empty(),
        "suspected before the active TTL since the mount"
    );
    h.run_to(14_000);
    assert_eq!(h.transitions(), vec![(14_000, 1, "Active", "Suspected")]);
}

/// After a credited stall, signals are timed on the liveness clock (base minus credit) and
/// transitions are reported on the base clock.
#[test]
fn after_a_stall_signals_use_the_credited_clock_and_events_the_base_clock() {
    let mut h = Harness::new(config(A, S));
    h.mount(1); // due at 10_000 liveness
    h.run_to(1_000);
    h.stall_to(13_000); // 11_900 ms late: credit 12_000
    assert_eq!(h.stalls(), vec![(13_000, 12_000)]);
    h.run_to(22_000); // liveness 10_000
    assert_eq!(h.transitions(), vec![(22_000, 1, "Active", "Suspected")]);
    h.run_to(23_050);
    let out = h.live.ping(ClientId(1), None);
    let t = out.recovered.expect("recovered");
    assert_eq!(t.at_ms, 23_050, "the recovery is reported at base time");
    // Recovered at liveness 11_050: due at 21_050 liveness = 33_050 base, first tick 33_100.
    // (The recovery itself is the ping's outcome, not a monitor event.)
    h.run_to(33_000);
    assert_eq!(h.transitions().len(), 1);
    h.run_to(33_100);
    assert_eq!(h.transitions()[1], (33_100, 1, "Active", "Suspected"));
    // A mount's signal too: recover by mount at 34_000 base = 22_000 liveness, due 32_000.
    h.run_to(34_000);
    match h.live.mount(ClientId(1), None, |_| Ok::<(), ()>(())) {
        MountOutcome::Mounted { recovered, record, .. } => {
            assert_eq!(recovered.map(|t| t.at_ms), Some(34_000));
            assert_eq!(record.word().deadline(), LivenessMs(22_000 + A));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(h.live.recoveries_total(), 2, "one by ping, one by mount");
    // The core's debug form shows the liveness clock (base minus the credit) and the registry.
    let shown = format!("{:?}", h.live);
    assert_eq!(shown, "Liveness { now_ms: 22000, registry: Registry { shards: 1024 } }");
}

// ---- the reference master -------------------------------------------------------------------

fn master_config() -> LivenessConfig {
    LivenessConfig {
        active_ttl_ms: A,
        suspicion_ttl_ms: S,
        stall_bound_ms: BOUND,
        ..LivenessConfig::default()
    }
}

struct Stepped {
    clock: Arc<ManualClock>,
    m: Master,
    next_tick: u64,
}

impl Stepped {
    fn new(config: LivenessConfig, options: MasterOptions) -> Self {
        let clock = Arc::new(ManualClock::new(0));
        let m = Master::new(clock.clone() as Arc<dyn Clock>, config, options);
        Self {
            clock,
            m,
            next_tick: 100,
        }
    }

    /// Runs every tick up to `t` (pinging `alive` each second), then sets the clock to `t`.
    fn at(&mut self, t: u64, alive: &[&str]) -> &Master {
        while self.next_tick <= t {
            self.clock.set_ms(self.next_tick);
            if self.next_tick % 1_000 == 0 {
                for c in alive {
                    self.m.ping(c);
                }
            }
            self.m.tick();
            self.next_tick += 100;
        }
        self.clock.set_ms(t);
        &self.m
    }

    fn state(&self, client: &str) -> Option<LivenessState> {
        self.m.query(Some(client), None).clients.first().map(|c| c.state)
    }
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
    let mut s = Stepped::new(master_config(), options);
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

/// decisions.md "Mass offboarding": job starts are rate-limited (1 per second, burst 1): three
/// clients committed Offline at the same tick start their jobs one second apart.
#[test]
fn offboarding_job_starts_follow_the_rate_limit() {
    let config = LivenessConfig {
        offboarding_rate_per_sec: 1.0,
        offboarding_burst: 1,
        ..master_config()
    };
    let options = MasterOptions {
        offboarding: OffboardingDriver::Inline,
        ..MasterOptions::default()
    };
    let mut s = Stepped::new(config, options);
    for (c, seg) in [("c1", "s1"), ("c2", "s2"), ("c3", "s3")] {
        s.at(0, &[]).mount(c, seg, 1_000).unwrap();
    }
    s.at(40_000, &[]);
    let mut offboarded: Vec<u64> =
        s.m.take_events()
            .into_iter()
            .filter_map(|e| match e {
                MasterEvent::Offboarded { at_ms, .. } => Some(at_ms),
                _ => None,
            })
            .collect();
    offboarded.sort_unstable();
    assert_eq!(offboarded, vec![30_000, 31_000, 32_000]);
}

/// Invariant 4 with the brake engaged: an entry whose Offline commit the brake held is re-armed
/// one *active* TTL out, so a client that recovers by one ping and goes silent again is
/// re-suspected on time (the entry must not sleep a suspicion TTL).
#[test]
fn a_held_entry_rearms_within_one_active_ttl() {
    let mut h = fleet(config(A, S), 15, 10, 30_000);
    assert_eq!(brake_events(&h)[0], (10_100, true, 10, 15));
    assert_eq!(offline_count(&h), 0, "held at 30_000");
    h.run_to(30_500);
    assert!(h.live.ping(ClientId(0), None).recovered.is_some());
    for t in (31_000..=50_000).step_by(1_000) {
        h.run_to(t);
        for id in 10..15u128 {
            h.ping(id);
        }
    }
    let again: Vec<_> = h
        .transitions()
        .into_iter()
        .filter(|t| t.1 == 0 && t.0 > 10_000)
        .collect();
    assert_eq!(again, vec![(40_500, 0, "Active", "Suspected")]);
}

/// Log lines name a client by its id as 32 hex digits (Mooncake's UUID pair) and an incarnation
/// by its number.
#[test]
fn client_ids_and_incarnations_display_as_logged() {
    assert_eq!(ClientId(0xab).to_string(), format!("{:0>32}", "ab"));
    assert_eq!(ClientId(u128::MAX).to_string(), "f".repeat(32));
    assert_eq!(Incarnation(3).to_string(), "3");
}

/// The monitor holds one wheel entry per Active or Suspected incarnation, and none for an
/// Offline one (its entry retires at the Offline commit).
#[test]
fn the_monitor_arms_one_entry_per_retained_incarnation() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.mount(2);
    h.run_to(100);
    assert_eq!(h.monitor.armed(), 2);
    h.run_to(10_000); // both Suspected
    assert_eq!(h.monitor.armed(), 2);
    for t in (11_000..=30_000).step_by(1_000) {
        h.run_to(t);
        h.ping(2);
    }
    assert_eq!(offline_count(&h), 1);
    assert_eq!(h.monitor.armed(), 1, "client 1 is Offline");
}

/// The monitor's counters (exported as metrics): ticks run, wheel entries examined (only the due
/// ones: O(due), not O(clients)), and the transitions and stalls it committed.
#[test]
fn monitor_stats_count_ticks_examined_entries_and_commits() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.run_to(10_000); // 100 ticks; the entry is due once, at 10_000, and is suspected
    let s = h.monitor.stats();
    assert_eq!((s.ticks, s.entries_examined, s.suspected, s.offline), (100, 1, 1, 0));
    // Re-armed at min(30_000, 10_000 + A) = 20_000 (a recovery could make it due then), then
    // Offline at 30_000.
    h.run_to(30_000);
    let s = h.monitor.stats();
    assert_eq!((s.ticks, s.entries_examined, s.suspected, s.offline), (300, 3, 1, 1));
    h.stall_to(40_000);
    let s = h.monitor.stats();
    assert_eq!((s.ticks, s.stalls, s.stall_ms), (301, 1, 10_000));
}

/// Invariant 4 across a reload that shortens the active TTL (`Monitor::follow_ttl_reload`): the
/// entry of a Suspected incarnation was armed for `min(suspicion deadline, commit + old TTL)`;
/// a recovery after the reload sets the new, earlier Active deadline, so the monitor must pull
/// the entry in or it re-suspects the client late (here at 20_000 instead of 13_000).
#[test]
fn a_recovery_after_the_active_ttl_shrinks_is_resuspected_on_time() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.run_to(10_000); // Suspected; its entry wakes at min(30_000, 10_000 + A) = 20_000
    let shorter = LivenessConfig {
        active_ttl_ms: 2_000,
        stall_bound_ms: 1_000,
        ..config(A, S)
    };
    h.live.config().reload(shorter).unwrap();
    h.run_to(11_000);
    assert!(
        h.live.ping(ClientId(1), None).recovered.is_some(),
        "Active until 13_000"
    );
    h.run_to(14_000);
    let after: Vec<_> = h.transitions().into_iter().filter(|t| t.0 > 10_000).collect();
    assert_eq!(after, vec![(13_000, 1, "Active", "Suspected")]);
}

/// Only a reload that *shortens* the active TTL pulls the wheel's entries in: on any other tick
/// an entry sleeps to its deadline. Here a client mounts between a tick at 100 and a late tick
/// at 2_000 (late by less than the stall bound), so its deadline (11_900) lies beyond the last
/// tick + the TTL (10_100): pulling in would fire it early, at 10_100, and count it examined.
#[test]
fn only_a_shortening_reload_pulls_entries_in() {
    let mut h = Harness::new(config(A, S));
    h.run_to(100);
    h.clock.set_ms(1_900);
    h.mount(1);
    h.stall_to(2_000);
    assert!(h.stalls().is_empty(), "1_800 ms late is under the bound");
    h.run_to(11_800);
    assert_eq!(
        h.monitor.stats().entries_examined,
        0,
        "nothing fires before the deadline"
    );
    h.run_to(11_900);
    assert_eq!(h.monitor.stats().entries_examined, 1);
    assert_eq!(h.transitions(), vec![(11_900, 1, "Active", "Suspected")]);
}

/// `Monitor::rearm` files an entry strictly after the tick being processed: an entry that waits
/// (its deadline moved, but still within the current tick) does not come back when the same tick
/// runs again (a repeated tick, e.g. a timer that fires twice at one clock reading), and fires
/// at the next tick.
#[test]
fn a_waiting_entry_is_rearmed_after_the_tick_being_processed() {
    let mut h = Harness::new(config(A, S));
    h.mount(1); // deadline 10_000
    h.run_to(50);
    h.ping(1); // deadline 10_050: still in the tick of 10_000
    h.run_to(10_000);
    assert_eq!(h.monitor.stats().entries_examined, 1, "fired at 10_000 and waits");
    h.stall_to(10_000); // the same tick again
    assert_eq!(
        h.monitor.stats().entries_examined,
        1,
        "not re-armed at the tick being processed"
    );
    h.run_to(10_100);
    assert_eq!(h.monitor.stats().entries_examined, 2);
    assert_eq!(h.transitions(), vec![(10_100, 1, "Active", "Suspected")]);
}

/// The monitor's debug form names its tick, its armed entries and its counters.
#[test]
fn monitor_debug_shows_tick_armed_and_stats() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.run_to(100);
    let s = format!("{:?}", h.monitor);
    assert!(
        s.starts_with("Monitor { tick_ms: 100, armed: 1, stats: MonitorStats { ticks: 1,"),
        "{s}"
    );
}

/// Runs every step at once, except that `fail` fails on its first call; records each call.
struct FailOnce {
    fail: Step,
    failed: bool,
    calls: Vec<Step>,
}

impl OffboardingSteps for FailOnce {
    fn run_step(&mut self, step: Step, _job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        self.calls.push(step);
        if step == self.fail && !self.failed {
            self.failed = true;
            return Err(CleanupError::new(step, "injected"));
        }
        Ok(Progress::Done)
    }
}

/// Invariant 17: a failed attempt keeps every step it completed, and the retry runs only the
/// failed step and those after it (each step has its own bit in the job's progress).
#[test]
fn a_retry_runs_only_the_failed_step_and_the_later_ones() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.run_to(30_000);
    let job = h.jobs.pop().expect("Offline at 30_000");
    let mut steps = FailOnce {
        fail: Step::Quota,
        failed: false,
        calls: Vec::new(),
    };
    let job = complete_client_offboarding(&mut steps, h.live.registry(), job).unwrap_err();
    assert_eq!(job.steps_done(), [Step::Metadata, Step::Segments, Step::LocalDisk]);
    assert!(!job.is_done(Step::Quota) && !job.is_done(Step::ExternalMetadata));
    let done = complete_client_offboarding(&mut steps, h.live.registry(), job).unwrap();
    assert_eq!((done.attempts, done.erased), (2, true));
    let retry = &steps.calls[4..];
    assert_eq!(retry, [Step::Quota, Step::ExternalMetadata]);
}

/// Telemetry receives a step as its trace-format name.
#[test]
fn a_step_label_is_its_name() {
    let labels: Vec<&'static str> = Step::ALL.into_iter().map(Into::into).collect();
    assert_eq!(
        labels,
        ["metadata", "segments", "local_disk", "quota", "external_metadata"]
    );
}

/// The metadata step answers `More` `left` times, recording how many batches the job says ran.
struct Batched {
    left: u32,
    seen: Vec<u32>,
}

impl OffboardingSteps for Batched {
    fn run_step(&mut self, step: Step, job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
        if step != Step::Metadata {
            return Ok(Progress::Done);
        }
        self.seen.push(job.step_batches());
        if self.left == 0 {
            return Ok(Progress::Done);
        }
        self.left -= 1;
        Ok(Progress::More)
    }
}

/// A step done in bounded batches sees how many of its batches already ran (a `Progress::More`
/// answer counts one), so it can resume where it stands.
#[test]
fn a_batched_step_sees_its_batch_count() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.run_to(30_000);
    let job = h.jobs.pop().expect("Offline at 30_000");
    let mut steps = Batched {
        left: 2,
        seen: Vec::new(),
    };
    assert!(complete_client_offboarding(&mut steps, h.live.registry(), job).is_ok());
    assert_eq!(steps.seen, [0, 1, 2]);
}
