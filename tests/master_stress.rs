//! Multi-threaded stress of the thread-safe reference master (issue 13, item 4): real threads,
//! whatever interleavings the OS gives, then checks that must hold after *any* interleaving.
//!
//! Threads, all on one `Master` (8 metadata shards, 4 registry shards, a `ManualClock`):
//! - `REQUEST_THREADS` request threads, each `OPS_PER_THREAD` seeded operations over `KEYS`
//!   keys: Put (1–2 replicas, by a random tenant), PutEnd, PutRevoke, Get, Remove, Copy/Move to
//!   a random segment, and, for a random live client, `fetch_tasks` + `task_done`;
//! - a membership thread: live clients mount and unmount an extra segment; silent client `s0`
//!   is mounted again now and then (a signal while Suspected, the barrier while Offline, a new
//!   incarnation once offboarded); `s1` never comes back;
//! - a Ping thread pinging the live clients;
//! - a tick thread stepping the clock 10 ms per tick (TTLs 50 ms / 100 ms), so silent clients go
//!   Suspected, Offline and get offboarded (a few injected step failures make jobs retry);
//! - a snapshot thread taking snapshots while all of this runs.
//!
//! Bounded by operation counts (no wall-time condition); a few seconds in debug. Then quiesce:
//! stop every thread, tick (pinging the live clients) until no job is pending, and check
//! (tests/invariants/mod.rs): every replica and segment belongs to a current, live incarnation;
//! each segment's used bytes and key index equal its replicas'; every quota equals the sum of the
//! remaining replicas; every task is referenced by its object. No job lost: every Offline
//! commit's job completed (`offline_commits == jobs_completed`, an `Offboarded` event for each
//! Offline transition) and no Offline record is left. Every snapshot decodes and restores, and
//! the restored master, ticked until its jobs complete, balances too.
//!
//! Two variants: offboarding inline in the tick thread, and on the master's worker threads.

mod common;
mod invariants;

use common::rng::Rng;
use mooncake_liveness::LivenessEvent;

use mooncake_liveness::master::{Master, MasterEvent, MasterOptions, OffboardingDriver};
use mooncake_liveness::offboarding::Step;
use mooncake_liveness::snapshot::Snapshot;
use mooncake_liveness::{Clock, LivenessConfig, LivenessState, ManualClock};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

const REQUEST_THREADS: u64 = 3;
const OPS_PER_THREAD: u64 = 20_000;
const KEYS: u64 = 300;
const LIVE: [&str; 3] = ["c0", "c1", "c2"];
const SILENT: [&str; 2] = ["s0", "s1"];
const TENANTS: [&str; 2] = ["t0", "t1"];
/// The tick thread runs at least this many ticks (so `s1` surely goes Offline) and at most
/// `MAX_TICKS`.
const MIN_TICKS: u64 = 400;
const MAX_TICKS: u64 = 20_000;
const MAX_SNAPSHOTS: usize = 6;

fn config() -> LivenessConfig {
    LivenessConfig {
        active_ttl_ms: 50,
        suspicion_ttl_ms: 100,
        monitor_tick_ms: 10,
        stall_brake: false,
        stall_bound_ms: 1_000_000,
        mass_suspicion_brake: false,
        offboarding_retry_backoff_ms: 10,
        offboarding_retry_max_backoff_ms: 40,
        offboarding_rate_per_sec: 1_000.0,
        offboarding_burst: 100,
        ..LivenessConfig::default()
    }
}

fn options(driver: OffboardingDriver) -> MasterOptions {
    MasterOptions {
        registry_shards: 4,
        metadata_shards: 8,
        offboarding: driver,
        seed: 7,
        ..MasterOptions::default()
    }
}

fn segment_names() -> Vec<String> {
    LIVE.iter()
        .chain(SILENT.iter())
        .flat_map(|c| [format!("{c}-main"), format!("{c}-extra")])
        .collect()
}

fn request_thread(m: &Master, seed: u64) {
    let mut rng = Rng(seed);
    let segs = segment_names();
    for _ in 0..OPS_PER_THREAD {
        let key = format!("k{}", rng.below(KEYS));
        match rng.below(100) {
            0..=29 => {
                let size = 1 + rng.below(64);
                let replicas = 1 + rng.below(2) as usize;
                let tenant = rng.pick(&TENANTS);
                if m.put_for(tenant, &key, size, replicas).is_ok() {
                    match rng.below(10) {
                        0 => {
                            let _ = m.put_revoke(&key);
                        }
                        1 => {} // left incomplete (a writer that vanished)
                        _ => {
                            let _ = m.put_end(&key);
                        }
                    }
                }
            }
            30..=59 => {
                let _ = m.get(&key);
            }
            60..=69 => {
                let _ = m.remove(&key);
            }
            70..=79 => {
                let to = &segs[rng.below(segs.len() as u64) as usize];
                let _ = m.replicate(&key, to, rng.below(3) == 0);
            }
            80..=89 => {
                let _ = m.put_end(&key);
            }
            _ => {
                let client = rng.pick(&LIVE);
                for t in m.fetch_tasks(client) {
                    let _ = m.task_done(client, t.task, rng.below(4) != 0);
                }
            }
        }
    }
}

fn membership_thread(m: &Master, seed: u64, stop: &AtomicBool) {
    let mut rng = Rng(seed);
    while !stop.load(Ordering::Relaxed) {
        match rng.below(10) {
            0..=5 => {
                let c = rng.pick(&LIVE);
                let seg = format!("{c}-extra");
                if rng.below(2) == 0 {
                    let _ = m.mount(c, &seg, 1024);
                } else {
                    let _ = m.unmount(c, &seg);
                }
            }
            6 => {
                // s0 comes back now and then: a signal, the barrier, or a new incarnation.
                let _ = m.mount("s0", "s0-main", 4096);
                if rng.below(2) == 0 {
                    let _ = m.mount("s0", "s0-extra", 1024);
                }
            }
            _ => {
                let _ = m.unmount("s0", "s0-extra");
            }
        }
        thread::sleep(Duration::from_millis(3));
    }
}

fn ping_thread(m: &Master, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        for c in LIVE {
            m.ping(c);
        }
        thread::yield_now();
    }
}

fn tick_thread(m: &Master, clock: &ManualClock, requests_done: &AtomicBool) -> u64 {
    let mut ticks = 0;
    while ticks < MAX_TICKS && (ticks < MIN_TICKS || !requests_done.load(Ordering::Relaxed)) {
        // The Ping thread runs between ticks; pinging here too keeps the live clients alive
        // when the OS starves it (the test is about the data plane, not about false suspicion).
        for c in LIVE {
            m.ping(c);
        }
        clock.advance_ms(10);
        m.tick();
        ticks += 1;
        thread::sleep(Duration::from_micros(500));
    }
    ticks
}

fn snapshot_thread(m: &Master, stop: &AtomicBool) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while !stop.load(Ordering::Relaxed) && out.len() < MAX_SNAPSHOTS {
        out.push(m.snapshot().encode());
        thread::sleep(Duration::from_millis(15));
    }
    out
}

/// Ticks (pinging the live clients) until no offboarding job is pending.
fn quiesce(m: &Master, clock: &ManualClock, ping: &[&str]) {
    for _ in 0..5_000 {
        if m.stats().offline == 0 && m.jobs_in_workers() == 0 {
            return;
        }
        for c in ping {
            m.ping(c);
        }
        clock.advance_ms(10);
        m.tick();
        thread::sleep(Duration::from_millis(1));
    }
    panic!("offboarding jobs never completed: {:?}", m.stats());
}

/// Every job minted completed. `restored`: jobs re-minted by a restore have no Offline transition
/// event in the new master (only their completion), so only the inclusion is checked.
fn no_job_lost(m: &Master, restored: bool) {
    let stats = m.stats();
    assert_eq!(stats.offline, 0, "{stats:?}");
    if !restored {
        assert_eq!(stats.offline_commits, stats.jobs_completed, "{stats:?}");
    }
    for rec in m.liveness().registry().records() {
        assert_ne!(
            rec.state(),
            LivenessState::Offline,
            "an Offline record is left: {rec:?}"
        );
    }
    let events = m.take_events();
    let offline: BTreeSet<_> = events
        .iter()
        .filter_map(|e| match e {
            MasterEvent::Liveness(LivenessEvent::Transition(t)) if t.to == LivenessState::Offline => {
                Some((t.client, t.incarnation))
            }
            _ => None,
        })
        .collect();
    let done: BTreeSet<_> = events
        .iter()
        .filter_map(|e| match e {
            MasterEvent::Offboarded {
                client, incarnation, ..
            } => Some((*client, *incarnation)),
            _ => None,
        })
        .collect();
    if restored {
        assert!(offline.is_subset(&done), "an Offline commit without its completion");
    } else {
        assert_eq!(offline, done, "every Offline commit's job completes, exactly once");
    }
}

fn stress(driver: OffboardingDriver, seed: u64) {
    let clock = Arc::new(ManualClock::new(0));
    let m = Master::new(clock.clone() as Arc<dyn Clock>, config(), options(driver));
    for c in LIVE.iter().chain(SILENT.iter()) {
        m.mount(c, &format!("{c}-main"), 4096).unwrap();
    }
    m.set_quota_limit("t1", Some(6_000));
    m.fail_step(Step::Segments, 2);
    m.fail_step(Step::ExternalMetadata, 1);

    let requests_done = AtomicBool::new(false);
    let stop = AtomicBool::new(false);
    let (ticks, snapshots) = thread::scope(|s| {
        let ticker = s.spawn(|| tick_thread(&m, &clock, &requests_done));
        let snapper = s.spawn(|| snapshot_thread(&m, &stop));
        s.spawn(|| ping_thread(&m, &stop));
        s.spawn(|| membership_thread(&m, seed ^ 0xABCD, &stop));
        let requests: Vec<_> = (0..REQUEST_THREADS)
            .map(|i| {
                let m = &m;
                s.spawn(move || request_thread(m, seed.wrapping_mul(31).wrapping_add(i)))
            })
            .collect();
        for r in requests {
            r.join().unwrap();
        }
        requests_done.store(true, Ordering::Relaxed);
        let ticks = ticker.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        (ticks, snapper.join().unwrap())
    });
    quiesce(&m, &clock, &LIVE);
    let stats = m.stats();
    println!(
        "{driver:?} seed {seed}: {ticks} ticks, {} objects, {} snapshots, {stats:?}",
        m.shards().object_count(),
        snapshots.len()
    );
    assert!(
        stats.offline_commits >= 1,
        "s1 never went Offline: the run did not exercise offboarding"
    );
    invariants::assert_clean(&m);
    no_job_lost(&m, false);

    assert!(!snapshots.is_empty());
    for (i, bytes) in snapshots.iter().enumerate() {
        let snap = Snapshot::decode(bytes).unwrap_or_else(|e| panic!("snapshot {i} does not decode: {e}"));
        let rclock = Arc::new(ManualClock::new(clock.now_ms()));
        let r = Master::restore(
            rclock.clone() as Arc<dyn Clock>,
            config(),
            options(OffboardingDriver::Inline),
            &snap,
        )
        .unwrap_or_else(|e| panic!("snapshot {i} taken under load does not restore: {e}"));
        quiesce(&r, &rclock, &[]);
        invariants::assert_clean(&r);
        no_job_lost(&r, true);
    }
}

#[test]
fn stress_inline_offboarding() {
    stress(OffboardingDriver::Inline, 0x5EED_0001);
}

#[test]
fn stress_worker_offboarding() {
    stress(OffboardingDriver::Workers, 0x5EED_0002);
}
