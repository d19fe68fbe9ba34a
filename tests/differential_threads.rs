//! The "real threads" half of the differential check: two client threads ping and mount against
//! one `Liveness` while a monitor thread steps a `ManualClock` tick by tick and runs the jobs it
//! mints. The interleavings are whatever the OS gives; every assertion is one that must hold
//! under *any* interleaving, checked from the API's own outcomes after the threads joined, so
//! the test is deterministic in what it asserts (no wall-time assertion, bounded iterations).
//!
//! Checked, per (client, incarnation):
//! - invariant 1: every reported transition is Active→Suspected, Suspected→Active or
//!   Suspected→Offline, and the counts close: suspicions = recoveries + offline commits + (1 if
//!   it ended Suspected), at most one Offline commit, and an incarnation that is gone (erased)
//!   or Offline had exactly one;
//! - invariant 15: at most one job per incarnation, minted only together with its Offline
//!   commit, and the minted job's record is Offline (and stays Offline);
//! - invariant 7 / 6: a Ping answered `OK`, or a mount that committed its signal, for incarnation
//!   `i` at clock time ≥ `t` means `i` was not Offline then: its Offline commit (if any) is at
//!   least active TTL + suspicion TTL after `t` (a signal at `t` pushes Offline past `t + A + S`);
//!   a mount refused with `Offboarding(i)` saw `i` Offline, so `i`'s Offline commit exists and
//!   is no later than the clock after the call;
//! - invariants 13/14: a created incarnation `n > 1` of a client exists only after incarnation
//!   `n − 1`'s job completed; no incarnation is created twice.

use mooncake_liveness::offboarding::NoResources;
use mooncake_liveness::{
    complete_client_offboarding, ClientId, ClientOffboardingJob, Clock, Incarnation, Liveness, LivenessConfig,
    LivenessEvent, LivenessState, ManualClock, Monitor, MountOutcome, PingStatus, Transition,
};
mod common;

use common::rng::Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const CLIENTS: u128 = 3;
/// Client-thread operations per round, at most.
const MAX_OPS_PER_THREAD: u64 = 200_000;

fn mix(a: u64, b: u64, c: u64) -> u64 {
    Rng(a ^ b.wrapping_mul(0x1000_0000_01B3) ^ c.wrapping_mul(0xC2B2_AE3D_27D4_EB4F)).next()
}

#[derive(Clone, Copy)]
struct Round {
    seed: u64,
    active_ms: u64,
    suspicion_ms: u64,
    tick_ms: u64,
    ticks: u64,
}

/// What a client thread saw.
#[derive(Debug)]
enum Seen {
    /// A ping with token `inc` answered OK (its signal was applied to `inc`) at clock ≥ `t`.
    PingOk { client: u128, inc: u64, t: u64 },
    /// A mount committed its signal on `inc` at clock ≥ `t`.
    Mounted {
        client: u128,
        inc: u64,
        created: bool,
        t: u64,
    },
    /// A mount was refused by the barrier of `inc`; the clock was `t_after` after the call.
    Barrier { client: u128, inc: u64, t_after: u64 },
    /// A recovery reported by a ping or a mount.
    Recovered(Transition),
}

/// What the monitor thread saw.
#[derive(Default)]
struct MonitorLog {
    transitions: Vec<Transition>,
    /// (client, incarnation) → tick of the Offline commit.
    offline_at: BTreeMap<(u128, u64), u64>,
    /// Jobs minted, (client, incarnation).
    minted: BTreeSet<(u128, u64)>,
    /// Jobs completed, (client, incarnation).
    completed: BTreeSet<(u128, u64)>,
    /// Records of minted jobs, to check that Offline stays terminal.
    records: Vec<Arc<mooncake_liveness::ClientLivenessRecord>>,
}

fn client_thread(
    live: Arc<Liveness>,
    clock: Arc<ManualClock>,
    done: Arc<AtomicBool>,
    round: Round,
    thread: u64,
) -> Vec<Seen> {
    let mut rng = Rng(round.seed ^ (thread + 1).wrapping_mul(0xA24B_AED4_963E_E407));
    let mut seen = Vec::new();
    // The incarnation this thread last learned for each client (used as the ping token).
    let mut known: [Option<Incarnation>; CLIENTS as usize] = [None; CLIENTS as usize];
    // A client is alive (signals) in most windows of (A + S) / 2 and silent in the others, so
    // it goes Suspected, recovers, goes Offline and comes back as a new incarnation.
    let window = ((round.active_ms + round.suspicion_ms) / 2).max(1);
    for _ in 0..MAX_OPS_PER_THREAD {
        if done.load(Ordering::Acquire) {
            break;
        }
        let c = rng.next() % CLIENTS as u64;
        let id = ClientId(c as u128);
        let t = clock.now_ms();
        let alive = mix(round.seed, c, t / window) % 4 != 0;
        if !alive {
            std::thread::yield_now();
            continue;
        }
        match rng.next() % 10 {
            0..=5 => {
                let token = known[c as usize];
                let out = live.ping(id, token);
                if let Some(tr) = out.recovered {
                    seen.push(Seen::Recovered(tr));
                }
                match (out.status, token) {
                    (PingStatus::Ok, Some(inc)) => seen.push(Seen::PingOk {
                        client: id.0,
                        inc: inc.0,
                        t,
                    }),
                    (PingStatus::NeedRemount, _) => known[c as usize] = None,
                    _ => {}
                }
            }
            6..=8 => {
                let fail = rng.next() % 8 == 0;
                let ready = rng.next() % 2 == 0;
                let out = live.mount(id, None, |_| if fail { Err(()) } else { Ok(()) });
                let t_after = clock.now_ms();
                match out {
                    MountOutcome::Mounted {
                        record,
                        created,
                        recovered,
                        ..
                    } => {
                        assert!(!fail, "a failed mount reported Mounted");
                        if let Some(tr) = recovered {
                            seen.push(Seen::Recovered(tr));
                        }
                        if ready {
                            record.set_ready(true);
                        }
                        known[c as usize] = Some(record.incarnation());
                        seen.push(Seen::Mounted {
                            client: id.0,
                            inc: record.incarnation().0,
                            created,
                            t,
                        });
                    }
                    MountOutcome::Offboarding(inc) => {
                        known[c as usize] = None;
                        seen.push(Seen::Barrier {
                            client: id.0,
                            inc: inc.0,
                            t_after,
                        });
                    }
                    MountOutcome::Failed(()) => assert!(fail, "a successful mount work reported Failed"),
                    MountOutcome::Lost(..) => known[c as usize] = None,
                    MountOutcome::StaleToken => panic!("StaleToken without a token"),
                }
            }
            _ => std::thread::yield_now(),
        }
    }
    seen
}

fn monitor_thread(live: &Liveness, clock: &ManualClock, round: Round) -> MonitorLog {
    let mut monitor = Monitor::new(live);
    let mut log = MonitorLog::default();
    let mut rng = Rng(round.seed.rotate_left(17));
    // Jobs wait a few ticks before they complete (the barrier holds meanwhile).
    let mut waiting: Vec<(u64, ClientOffboardingJob)> = Vec::new();
    for k in 1..=round.ticks {
        let now = k * round.tick_ms;
        clock.set_ms(now);
        let report = monitor.tick(live);
        let mut offline_here = BTreeSet::new();
        for ev in report.events {
            match ev {
                LivenessEvent::Transition(t) => {
                    assert_eq!(t.at_ms, now, "a monitor transition not stamped with its tick: {t:?}");
                    if t.to == LivenessState::Offline {
                        assert!(
                            log.offline_at.insert((t.client.0, t.incarnation.0), now).is_none(),
                            "invariant 15: two Offline commits for {t:?}"
                        );
                        offline_here.insert((t.client.0, t.incarnation.0));
                    }
                    log.transitions.push(t);
                }
                other => panic!("unexpected event with both brakes disabled: {other:?}"),
            }
        }
        for job in report.jobs {
            let key = (job.client().0, job.incarnation().0);
            assert_eq!(
                job.record().state(),
                LivenessState::Offline,
                "invariant 15: a minted job's record is not Offline: {key:?}"
            );
            assert!(
                offline_here.remove(&key),
                "invariant 15: job {key:?} minted without its Offline commit in the same tick"
            );
            assert!(log.minted.insert(key), "invariant 15: a second job for {key:?}");
            log.records.push(job.record().clone());
            waiting.push((k + rng.next() % 4, job));
        }
        assert!(
            offline_here.is_empty(),
            "Offline commits without a job: {offline_here:?}"
        );
        let (due, later): (Vec<_>, Vec<_>) = waiting.drain(..).partition(|(at, _)| *at <= k);
        waiting = later;
        for (_, job) in due {
            complete(live, job, &mut log);
        }
        std::thread::yield_now();
    }
    for (_, job) in waiting {
        complete(live, job, &mut log);
    }
    log
}

fn complete(live: &Liveness, job: ClientOffboardingJob, log: &mut MonitorLog) {
    let key = (job.client().0, job.incarnation().0);
    let done = complete_client_offboarding(&mut NoResources, live.registry(), job)
        .unwrap_or_else(|_| panic!("a job without resources failed: {key:?}"));
    assert!(done.erased, "the job of {key:?} did not erase its own record");
    assert!(log.completed.insert(key), "{key:?} completed twice");
}

fn run_round(round: Round) {
    let clock = Arc::new(ManualClock::new(0));
    let config = LivenessConfig {
        active_ttl_ms: round.active_ms,
        suspicion_ttl_ms: round.suspicion_ms,
        monitor_tick_ms: round.tick_ms,
        stall_brake: false,
        mass_suspicion_brake: false,
        ..LivenessConfig::default()
    };
    let live = Arc::new(Liveness::new(clock.clone() as Arc<dyn Clock>, config));
    let done = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..2)
        .map(|thread| {
            let (live, clock, done) = (live.clone(), clock.clone(), done.clone());
            std::thread::spawn(move || client_thread(live, clock, done, round, thread))
        })
        .collect();
    let log = monitor_thread(&live, &clock, round);
    done.store(true, Ordering::Release);
    let seen: Vec<Seen> = clients
        .into_iter()
        .flat_map(|h| h.join().expect("client thread panicked"))
        .collect();
    check(&live, round, &log, &seen);
}

fn check(live: &Liveness, round: Round, log: &MonitorLog, seen: &[Seen]) {
    let window = round.active_ms + round.suspicion_ms;
    // Invariant 1: allowed transitions, and per-incarnation counts that close.
    let mut counts: BTreeMap<(u128, u64), [u64; 3]> = BTreeMap::new();
    let recoveries = seen.iter().filter_map(|s| match s {
        Seen::Recovered(t) => Some(t),
        _ => None,
    });
    for t in log.transitions.iter().chain(recoveries) {
        let i = match (t.from, t.to) {
            (LivenessState::Active, LivenessState::Suspected) => 0,
            (LivenessState::Suspected, LivenessState::Active) => 1,
            (LivenessState::Suspected, LivenessState::Offline) => 2,
            _ => panic!(
                "invariant 1: transition {:?} -> {:?} is not allowed: {t:?}",
                t.from, t.to
            ),
        };
        counts.entry((t.client.0, t.incarnation.0)).or_default()[i] += 1;
    }
    for (&(client, inc), &[suspected, recovered, offline]) in &counts {
        let current = live
            .registry()
            .get(ClientId(client))
            .filter(|r| r.incarnation().0 == inc)
            .map(|r| r.state());
        // Gone from the registry: it was Offline and its job completed.
        let end = current.unwrap_or(LivenessState::Offline);
        let ends_suspected = u64::from(end == LivenessState::Suspected);
        assert!(
            offline <= 1,
            "invariant 1/15: {client}#{inc} went Offline {offline} times"
        );
        assert_eq!(
            suspected,
            recovered + offline + ends_suspected,
            "invariant 1: {client}#{inc}: {suspected} suspicions, {recovered} recoveries, {offline} Offline, ends {end:?}"
        );
        assert_eq!(
            offline == 1,
            end == LivenessState::Offline,
            "invariant 1: {client}#{inc} ends {end:?} after {offline} Offline commits (Offline is terminal)"
        );
    }
    // Invariant 15: a job exactly for each Offline commit, each completed; Offline stays terminal.
    let offline: BTreeSet<(u128, u64)> = log.offline_at.keys().copied().collect();
    assert_eq!(log.minted, offline, "invariant 15: jobs minted vs Offline commits");
    assert_eq!(log.completed, log.minted, "every minted job completed");
    for rec in &log.records {
        assert_eq!(rec.state(), LivenessState::Offline, "Offline is terminal: {rec:?}");
    }
    // What this interleaving exercised (informative only; never asserted).
    let n = |f: fn(&Seen) -> bool| seen.iter().filter(|s| f(s)).count();
    eprintln!(
        "round {:#x}: {} transitions by the monitor, {} recoveries, {} Offline/jobs, {} OK pings, {} mounts, {} barrier refusals",
        round.seed,
        log.transitions.len(),
        n(|s| matches!(s, Seen::Recovered(_))),
        log.minted.len(),
        n(|s| matches!(s, Seen::PingOk { .. })),
        n(|s| matches!(s, Seen::Mounted { .. })),
        n(|s| matches!(s, Seen::Barrier { .. })),
    );
    // Invariants 6/7/13/14 from the client threads' outcomes.
    let mut created = BTreeSet::new();
    for s in seen {
        match *s {
            Seen::PingOk { client, inc, t } | Seen::Mounted { client, inc, t, .. } => {
                if let Some(&off) = log.offline_at.get(&(client, inc)) {
                    assert!(
                        off >= t + window,
                        "invariant 7: {s:?}: a signal accepted at ≥ {t} by {client}#{inc}, which went Offline at {off} \
                         (< {t} + A + S): the signal landed on an Offline record"
                    );
                }
                if let Seen::Mounted { created: true, .. } = s {
                    assert!(
                        created.insert((client, inc)),
                        "invariant 13: {client}#{inc} created twice"
                    );
                    assert!(
                        inc == 1 || log.completed.contains(&(client, inc - 1)),
                        "invariant 14: {client}#{inc} created before {client}#{}'s job completed",
                        inc - 1
                    );
                }
            }
            Seen::Barrier { client, inc, t_after } => {
                let off = log.offline_at.get(&(client, inc));
                assert!(
                    off.is_some_and(|off| *off <= t_after),
                    "invariant 14: mount refused by the barrier of {client}#{inc}, whose Offline commit is {off:?} \
                     (the call ended at {t_after})"
                );
            }
            Seen::Recovered(_) => {}
        }
    }
}

#[test]
fn concurrent_pings_and_mounts_keep_the_per_incarnation_invariants() {
    let rounds = if cfg!(miri) { 1 } else { 8 };
    for r in 0..rounds {
        let seed = 0x5EED_0000 + r;
        let mut rng = Rng(seed);
        let tick_ms = 1 + rng.next() % 10;
        let round = Round {
            seed,
            active_ms: tick_ms * (2 + rng.next() % 6),
            suspicion_ms: tick_ms * (1 + rng.next() % 6),
            tick_ms,
            ticks: 3_000,
        };
        run_round(round);
    }
}
