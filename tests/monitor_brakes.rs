//! The monitor's two brakes at their edges: a stall is lateness beyond the bound, credited
//! exactly (signals on the credited clock, events on the base clock); the mass-suspicion brake
//! engages at exactly its minimum and fraction, and a paused client goes Offline on time after
//! the release. Boundary tests that kill mutants (issue 17, MUTANTS.md) and a regression test
//! for a defect found by the differential fuzz target.

mod common;

use common::{config, master, Harness};
use mooncake_liveness::clock::LivenessMs;
use mooncake_liveness::master::MasterEvent;
use mooncake_liveness::{ClientId, LivenessConfig, LivenessEvent, LivenessState, MountOutcome};

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

/// The mass-suspicion brake's release gives each paused incarnation a fresh suspicion window
/// (decisions.md, "Mass offboarding"), and invariant 4 holds again once the brake is released:
/// Offline no later than one tick after that window ends. The monitor parked a paused entry one
/// active TTL out, so with an active TTL longer than the suspicion TTL the renewed window ended
/// long before anyone looked (found by the differential fuzzer once its inputs could enable
/// the brake, issue 17 §3). Fixed: a paused entry wakes within the shorter of the two TTLs.
#[test]
fn a_client_paused_by_the_mass_suspicion_brake_goes_offline_on_time_after_the_release() {
    let mut m = master::M::new();
    let braked = LivenessConfig {
        active_ttl_ms: 30_000,
        suspicion_ttl_ms: 2_000,
        stall_bound_ms: 15_000,
        mass_suspicion_brake: true,
        mass_suspicion_min_clients: 2,
        mass_suspicion_fraction: 0.5,
        ..master::config()
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
                MasterEvent::Liveness(LivenessEvent::Transition(t)) if t.to == LivenessState::Offline => {
                    Some(m.m.client_name(t.client))
                }
                _ => None,
            })
            .collect();
    assert_eq!(
        offline,
        ["c2", "c3"],
        "Offline by 35.2 s, one tick after the renewed window (before the fix: at 62 s)"
    );
}
