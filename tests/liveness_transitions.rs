//! RFC timing rules on the manual clock (invariants 1-7, 14, 15).

mod common;

use common::{config, incarnation_of, Harness};
use mooncake_liveness::{ClientId, Incarnation, LivenessState, MountOutcome, PingStatus};

const A: u64 = 10_000;
const S: u64 = 20_000;

#[test]
fn silent_client_goes_suspected_then_offline_on_the_tick_grid() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.run_to(60_000);
    assert_eq!(
        h.transitions(),
        vec![(10_000, 1, "Active", "Suspected"), (30_000, 1, "Suspected", "Offline")]
    );
    assert_eq!(h.jobs.len(), 1, "exactly one job per incarnation");
}

#[test]
fn boundaries_are_inclusive_and_never_early() {
    let mut h = Harness::new(config(A, S));
    h.run_to(5_050);
    h.mount(1); // signal at 5_050: deadline 15_050, first tick >= it is 15_100
    h.run_to(15_099);
    assert!(h.transitions().is_empty(), "suspected before the active TTL passed");
    h.run_to(15_100);
    assert_eq!(h.transitions(), vec![(15_100, 1, "Active", "Suspected")]);
    h.run_to(35_099);
    assert_eq!(h.transitions().len(), 1, "offline before the suspicion TTL passed");
    h.run_to(35_100);
    assert_eq!(h.transitions()[1], (35_100, 1, "Suspected", "Offline"));
}

#[test]
fn exact_deadline_on_a_tick_commits_at_that_tick() {
    let mut h = Harness::new(config(A, S));
    h.run_to(2_000);
    h.mount(1);
    h.run_to(12_000);
    assert_eq!(h.transitions(), vec![(12_000, 1, "Active", "Suspected")]);
}

#[test]
fn suspicion_counts_from_the_commit_not_from_the_deadline() {
    // No stall brake here: a monitor late by less than the bound commits late, and the
    // suspicion window must still be a full S from that late commit.
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.run_to(9_900);
    h.stall_to(14_900); // 4_900 ms late: below the 5_000 ms stall bound, so no credit
    assert!(h.stalls().is_empty());
    assert_eq!(h.transitions(), vec![(14_900, 1, "Active", "Suspected")]);
    h.run_to(34_899);
    assert_eq!(h.transitions().len(), 1, "window shortened by the late monitor");
    h.run_to(34_900);
    assert_eq!(h.transitions()[1], (34_900, 1, "Suspected", "Offline"));
}

#[test]
fn ping_recovers_then_resuspicion_gets_a_full_window() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.run_to(12_000);
    assert_eq!(
        h.live.registry().get(ClientId(1)).unwrap().state(),
        LivenessState::Suspected
    );
    let out = h.live.ping(ClientId(1), None);
    let rec = out.recovered.expect("ping recovers a Suspected client");
    assert_eq!(
        (rec.from, rec.to, rec.at_ms),
        (LivenessState::Suspected, LivenessState::Active, 12_000)
    );
    assert_eq!(
        out.status,
        PingStatus::NeedRemount,
        "recovered but never remounted: not ready"
    );
    h.run_to(80_000);
    assert_eq!(
        h.transitions(),
        vec![
            (10_000, 1, "Active", "Suspected"),
            (22_000, 1, "Active", "Suspected"),
            (42_000, 1, "Suspected", "Offline"),
        ]
    );
}

#[test]
fn pinging_client_stays_active() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    for t in (1_000..=120_000).step_by(1_000) {
        h.run_to(t);
        h.ping(1);
    }
    assert!(h.transitions().is_empty());
}

#[test]
fn ready_active_client_gets_ok_and_readiness_survives_suspicion() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    assert_eq!(h.ping(1), PingStatus::NeedRemount, "new incarnation starts not ready");
    assert!(h.live.set_ready(ClientId(1), true));
    assert_eq!(h.ping(1), PingStatus::Ok);
    h.run_to(11_000);
    assert_eq!(h.ping(1), PingStatus::Ok, "Suspected + ready: recovered, then OK");
}

#[test]
fn unknown_client_ping_creates_nothing() {
    let h = Harness::new(config(A, S));
    assert_eq!(h.ping(42), PingStatus::NeedRemount);
    assert!(h.live.registry().slot(ClientId(42)).is_none());
}

#[test]
fn failed_first_mount_creates_no_record() {
    let h = Harness::new(config(A, S));
    assert!(matches!(h.try_mount(7, false), MountOutcome::Failed(_)));
    assert!(h.live.registry().slot(ClientId(7)).is_none());
    assert!(h.live.registry().records().is_empty());
}

#[test]
fn failed_mount_neither_refreshes_nor_recovers() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.run_to(9_000);
    assert!(matches!(h.try_mount(1, false), MountOutcome::Failed(_)));
    h.run_to(10_000);
    assert_eq!(
        h.transitions(),
        vec![(10_000, 1, "Active", "Suspected")],
        "failed mount refreshed"
    );
    assert!(matches!(h.try_mount(1, false), MountOutcome::Failed(_)));
    assert_eq!(
        h.live.registry().get(ClientId(1)).unwrap().state(),
        LivenessState::Suspected
    );
    h.run_to(30_000);
    assert_eq!(h.transitions()[1], (30_000, 1, "Suspected", "Offline"));
}

#[test]
fn successful_mount_recovers_a_suspected_client() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.run_to(15_000);
    match h.try_mount(1, true) {
        MountOutcome::Mounted { recovered, created, .. } => {
            assert!(!created);
            assert_eq!(recovered.unwrap().to, LivenessState::Active);
        }
        other => panic!("{other:?}"),
    }
    h.run_to(24_900);
    assert_eq!(h.transitions().len(), 1);
    h.run_to(25_000);
    assert_eq!(h.transitions()[1], (25_000, 1, "Active", "Suspected"));
}

#[test]
fn offline_is_a_barrier_until_the_job_completes_then_next_incarnation() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.run_to(30_000);
    assert_eq!(h.ping(1), PingStatus::NeedRemount, "Offline client");
    let rec = h.live.registry().get(ClientId(1)).unwrap();
    assert_eq!(rec.state(), LivenessState::Offline);
    assert!(matches!(
        h.try_mount(1, true),
        MountOutcome::Offboarding(Incarnation(1))
    ));
    assert_eq!(h.ping(1), PingStatus::NeedRemount);
    assert_eq!(h.complete_jobs(), 1);
    assert!(h.live.registry().get(ClientId(1)).is_none());
    let out = h.try_mount(1, true);
    assert_eq!(incarnation_of(&out), Some(Incarnation(2)));
    // The old record stays Offline: a new incarnation never revives it (invariant 13).
    assert_eq!(rec.state(), LivenessState::Offline);
    assert!(!rec.is_serving());
}

#[test]
fn stale_incarnation_token_gets_need_remount() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.live.set_ready(ClientId(1), true);
    assert_eq!(h.live.ping(ClientId(1), Some(Incarnation(1))).status, PingStatus::Ok);
    assert_eq!(
        h.live.ping(ClientId(1), Some(Incarnation(9))).status,
        PingStatus::NeedRemount
    );
    assert!(matches!(
        h.live.mount(ClientId(1), Some(Incarnation(9)), |_| Ok::<(), ()>(())),
        MountOutcome::StaleToken
    ));
    // A stale token does not refresh: the client is suspected on its original deadline.
    h.run_to(5_000);
    h.live.ping(ClientId(1), Some(Incarnation(9)));
    h.run_to(10_000);
    assert_eq!(h.transitions(), vec![(10_000, 1, "Active", "Suspected")]);
}

#[test]
fn master_stall_is_credited_not_charged() {
    let mut h = Harness::new(config(A, S));
    h.run_to(4_999);
    h.mount(1); // deadline 14_999
    h.run_to(5_000);
    h.stall_to(17_000); // the master did not run for 12 s
    assert_eq!(h.stalls(), vec![(17_000, 12_000)]);
    assert!(
        h.transitions().is_empty(),
        "a client was charged for the master's stall"
    );
    h.run_to(26_900);
    assert!(h.transitions().is_empty());
    h.run_to(27_000);
    assert_eq!(h.transitions(), vec![(27_000, 1, "Active", "Suspected")]);
}

#[test]
fn stall_extends_suspicion_windows_too() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.run_to(10_000); // Suspected at 10_000, Offline due at 30_000
    h.stall_to(25_000); // 15 s stall
    h.run_to(44_900);
    assert_eq!(
        h.transitions().len(),
        1,
        "offline during/after a stall it was not charged for"
    );
    h.run_to(45_000);
    assert_eq!(h.transitions()[1], (45_000, 1, "Suspected", "Offline"));
}

#[test]
fn stall_brake_can_be_disabled() {
    let mut cfg = config(A, S);
    cfg.stall_brake = false;
    let mut h = Harness::new(cfg);
    h.mount(1);
    h.run_to(5_000);
    h.stall_to(17_000);
    assert!(h.stalls().is_empty());
    assert_eq!(h.transitions(), vec![(17_000, 1, "Active", "Suspected")]);
}

#[test]
fn many_clients_are_detected_within_one_tick() {
    // Every client goes silent: that is a mass suspicion, so the brake (invariant 4's declared
    // exception, tested below) is off here.
    let mut cfg = config(A, S);
    cfg.mass_suspicion_brake = false;
    let mut h = Harness::new(cfg);
    for id in 0..10_000u128 {
        h.run_to(id as u64); // spread signals over 10 s
        h.mount(id);
    }
    h.run_to(50_000);
    let t = h.transitions();
    assert_eq!(t.len(), 20_000);
    for (at, id, from, _) in t {
        let signal = id as u64;
        let due = if from == "Active" {
            signal + A
        } else {
            (signal + A).div_ceil(100) * 100 + S
        };
        assert!(
            at >= due && at < due + 100,
            "client {id} {from} committed at {at}, due {due}"
        );
    }
}

#[test]
fn ttl_reload_applies_to_deadlines_computed_after_the_swap() {
    let mut h = Harness::new(config(A, S));
    h.mount(1);
    h.mount(2);
    h.run_to(1_000);
    let mut cfg = (*h.live.config().snapshot()).clone();
    cfg.active_ttl_ms = 30_000;
    h.live.config().reload(cfg).unwrap();
    h.ping(2); // deadline computed after the swap: 31_000
    h.run_to(10_000);
    assert_eq!(h.transitions(), vec![(10_000, 1, "Active", "Suspected")]);
    h.run_to(31_000);
    assert_eq!(h.transitions()[1], (30_000, 1, "Suspected", "Offline"));
    assert_eq!(h.transitions()[2], (31_000, 2, "Active", "Suspected"));
}

fn brake_events(h: &Harness) -> Vec<(u64, bool, usize, usize)> {
    h.events
        .iter()
        .filter_map(|e| match e {
            mooncake_liveness::LivenessEvent::MassSuspicionBrake {
                at_ms,
                engaged,
                suspected,
                registered,
            } => Some((*at_ms, *engaged, *suspected, *registered)),
            _ => None,
        })
        .collect()
}

#[test]
fn mass_suspicion_pauses_offline_then_gives_fresh_windows() {
    let mut h = Harness::new(config(A, S));
    for id in 0..20u128 {
        h.mount(id);
    }
    // 12 of 20 go silent (> 50 % and >= 10): the brake engages at the tick they are suspected.
    for t in (1_000..=60_000).step_by(1_000) {
        h.run_to(t);
        for id in 12..20u128 {
            h.ping(id);
        }
        if t >= 45_000 {
            for id in 0..4u128 {
                h.ping(id); // 4 recover at 45 s: 8 of 20 suspected, the brake releases
            }
        }
    }
    let brakes = brake_events(&h);
    // Engagement is decided at the start of a tick from the counts the previous tick left.
    assert_eq!(brakes[0], (10_100, true, 12, 20), "{brakes:?}");
    assert_eq!(brakes.len(), 2, "{brakes:?}");
    let offline: Vec<_> = h.transitions().into_iter().filter(|t| t.3 == "Offline").collect();
    assert!(
        offline.iter().all(|t| t.0 > 45_000),
        "Offline committed while the brake held: {offline:?}"
    );
    // Released at the first tick after the recoveries; the 8 still Suspected get a fresh window.
    assert!(!brakes[1].1, "{brakes:?}");
    let released = brakes[1].0;
    assert!(released > 45_000 && released <= 45_100, "{brakes:?}");
    h.run_to(released + S - 100);
    assert!(
        h.transitions().iter().all(|t| t.3 != "Offline"),
        "fresh window not granted"
    );
    h.run_to(released + S);
    let offline = h.transitions().into_iter().filter(|t| t.3 == "Offline").count();
    assert_eq!(offline, 8);
}

#[test]
fn below_the_minimum_the_brake_never_engages() {
    let mut h = Harness::new(config(A, S));
    for id in 0..9u128 {
        h.mount(id); // all 9 go silent: 100 % but fewer than 10
    }
    h.run_to(31_000);
    assert!(brake_events(&h).is_empty());
    assert_eq!(h.transitions().iter().filter(|t| t.3 == "Offline").count(), 9);
}

#[test]
fn prepare_client_offboarding_mints_the_one_job_only_when_due() {
    use mooncake_liveness::offboarding::{prepare_client_offboarding, PrepareError};
    let mut h = Harness::new(config(A, S));
    let rec = h.mount(1);
    h.run_to(9_000);
    assert_eq!(
        prepare_client_offboarding(&h.live, &rec).unwrap_err(),
        PrepareError::NotDue,
        "Active is never suspected by it"
    );
    h.run_to(10_000); // Suspected at 10 s
    assert_eq!(
        prepare_client_offboarding(&h.live, &rec).unwrap_err(),
        PrepareError::NotDue
    );
    h.clock.set_ms(30_000); // due, and the monitor has not ticked yet
    let job = prepare_client_offboarding(&h.live, &rec).expect("due: the job");
    assert_eq!((job.client(), job.incarnation()), (ClientId(1), Incarnation(1)));
    assert_eq!(
        prepare_client_offboarding(&h.live, &rec).unwrap_err(),
        PrepareError::AlreadyOffline
    );
    h.run_to(40_000);
    assert!(h.jobs.is_empty(), "the monitor minted a second job");
    assert_eq!(h.transitions(), vec![(10_000, 1, "Active", "Suspected")]);
}
