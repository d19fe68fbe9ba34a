//! Soak test of the whole master under every mix of requests (issue 29, item 4): one thread per
//! request class, all at once on one `Master`, for a bounded time, with a progress watchdog.
//!
//! Threads (each a request class; `CLASSES` names them):
//! - `put`: PutStart (1-2 replicas, a random tenant) then PutEnd, PutRevoke or nothing (a
//!   writer that vanished);
//! - `get`, `remove`: Get and Remove of random keys;
//! - `membership`: clients `m0..m2` mount, unmount and ReMount segments from a shared pool of
//!   names (`n0..n3`), and restarted clients `r0..r5` (new ids) mount those same names: the
//!   client-restart case of the segment-name race; the live clients mount and unmount an extra
//!   segment each (what was offloaded from it is then held on LocalDisk only: promotion's work);
//! - `offload`: the LocalDisk holders' offload heartbeats, then `task_done` (ok or failed) for
//!   what they were handed;
//! - `promote`: promotion of random keys;
//! - `replicate`: Copy/Move to a random segment, drains of pool segments, and FetchTasks +
//!   `task_done` for the live clients;
//! - `snapshot`: snapshots, each encoded and decoded;
//! - `tick`: the monitor (a `ManualClock` stepped 10 ms per tick, TTLs 50 ms + 100 ms);
//! - `ping`: the live clients; `s0` goes silent for short spells (Suspected, then recovered by
//!   a Ping), `s1` for long ones (Offline, offboarded, then a new incarnation by a mount).
//!
//! Offboarding runs on the master's worker threads.
//!
//! Bounded in time: `MASTER_SOAK_SECS` seconds (default 8; CI runs the default, keep it ≤ 20).
//! The watchdog fails the test, printing every thread's operation count and the operation it
//! is in, when any thread has completed nothing for `STALL` (2 s): a deadlock or a lost wake-up
//! shows as a thread stuck in one operation. In debug builds every lock acquisition is also
//! checked against the lock order (core/src/sync.rs), so an inversion fails here even when the
//! interleaving that would deadlock never comes.
//!
//! At quiescence (every thread stopped, ticks with the live clients pinging until no job is
//! pending), checked: every replica's segment exists and its owner incarnation is live; quotas
//! equal the replicas; no task names an erased incarnation; the external metadata equals the
//! mounted segments (tests/invariants/mod.rs); every Offline commit's job completed; the final
//! snapshot restores to an equal master.

mod common;
mod invariants;

use common::rng::Rng;
use mooncake_liveness::master::{Master, MasterOptions, OffboardingDriver, SegmentSpec};
use mooncake_liveness::snapshot::Snapshot;
use mooncake_liveness::{Clock, LivenessConfig, ManualClock};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

const KEYS: u64 = 200;
const LIVE: [&str; 3] = ["c0", "c1", "c2"];
const MEMBERS: [&str; 3] = ["m0", "m1", "m2"];
const RESTARTED: [&str; 6] = ["r0", "r1", "r2", "r3", "r4", "r5"];
const POOL: [&str; 4] = ["n0", "n1", "n2", "n3"];
const TENANTS: [&str; 2] = ["t0", "t1"];
/// A thread that completes nothing for this long is stuck.
const STALL: Duration = Duration::from_secs(2);

/// The request classes, one thread each, in the order the watchdog prints them.
const CLASSES: [&str; 11] = [
    "put",
    "get",
    "remove",
    "membership",
    "offload",
    "promote",
    "replicate",
    "snapshot",
    "tick",
    "ping",
    "silent",
];

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

/// One thread's progress, as the watchdog reads it.
#[derive(Default)]
struct Progress {
    /// Operations completed.
    done: AtomicU64,
    /// The operation it is in (an index into its class's op names; see `Soak::op`).
    doing: AtomicUsize,
}

struct Soak {
    m: Master,
    clock: Arc<ManualClock>,
    stop: AtomicBool,
    progress: [Progress; CLASSES.len()],
    /// Successes of the paths the soak must reach, by `REACHED`'s names.
    reached: [AtomicU64; REACHED.len()],
}

/// Outcomes every run must reach at least once, or the soak did not exercise what it claims.
const REACHED: [&str; 7] = [
    "put ended",
    "offload handed out",
    "promotion started",
    "copy/move started",
    "restarted client mounted a pool name",
    "pool name remounted",
    "task completed",
];

/// What each thread may be doing, for the watchdog's report.
const OPS: [&str; 24] = [
    "idle",
    "put",
    "put_end",
    "put_revoke",
    "get",
    "remove",
    "mount",
    "unmount",
    "remount",
    "offload_heartbeat",
    "task_done",
    "promote",
    "replicate",
    "drain",
    "fetch_tasks",
    "snapshot",
    "encode/decode",
    "tick",
    "ping",
    "mount_local_disk",
    "mount (restarted client)",
    "silent",
    "mount (silent client back)",
    "sleep",
];

impl Soak {
    fn class(&self, class: &str) -> &Progress {
        &self.progress[CLASSES.iter().position(|c| *c == class).expect("a class")]
    }

    /// Marks `class` as in `op` and runs it.
    fn op<R>(&self, class: &str, op: &str, f: impl FnOnce() -> R) -> R {
        let p = self.class(class);
        p.doing
            .store(OPS.iter().position(|o| *o == op).expect("an op"), Ordering::Relaxed);
        let r = f();
        p.doing.store(0, Ordering::Relaxed);
        r
    }

    fn reached(&self, what: &str) {
        let i = REACHED.iter().position(|r| *r == what).expect("an outcome");
        self.reached[i].fetch_add(1, Ordering::Relaxed);
    }

    fn done(&self, class: &str) {
        self.class(class).done.fetch_add(1, Ordering::Relaxed);
    }

    fn running(&self) -> bool {
        !self.stop.load(Ordering::Relaxed)
    }

    fn report(&self) -> String {
        CLASSES
            .iter()
            .zip(&self.progress)
            .map(|(c, p)| {
                format!(
                    "  {c:<10} {:>8} ops, in {}",
                    p.done.load(Ordering::Relaxed),
                    OPS[p.doing.load(Ordering::Relaxed)]
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

fn key(rng: &mut Rng) -> String {
    format!("k{}", rng.below(KEYS))
}

/// Every segment name a replica may be sent to.
fn all_segments() -> Vec<String> {
    LIVE.iter()
        .flat_map(|c| [format!("{c}-main"), format!("{c}-extra")])
        .chain(POOL.iter().map(|n| n.to_string()))
        .chain(["s0-main".into(), "s1-main".into()])
        .collect()
}

fn put(s: &Soak, seed: u64) {
    let mut rng = Rng(seed);
    while s.running() {
        let k = key(&mut rng);
        let tenant = rng.pick(&TENANTS);
        let size = 1 + rng.below(64);
        let replicas = 1 + rng.below(2) as usize;
        if s.op("put", "put", || s.m.put_for(tenant, &k, size, replicas)).is_ok() {
            match rng.below(10) {
                0 => drop(s.op("put", "put_revoke", || s.m.put_revoke(&k))),
                1 => {} // a writer that vanished: left incomplete
                _ => {
                    if s.op("put", "put_end", || s.m.put_end(&k)).is_ok() {
                        s.reached("put ended");
                    }
                }
            }
        }
        s.done("put");
    }
}

fn get(s: &Soak, seed: u64) {
    let mut rng = Rng(seed);
    while s.running() {
        let k = key(&mut rng);
        let _ = s.op("get", "get", || s.m.get(&k));
        s.done("get");
    }
}

fn remove(s: &Soak, seed: u64) {
    let mut rng = Rng(seed);
    while s.running() {
        let k = key(&mut rng);
        let _ = s.op("remove", "remove", || s.m.remove(&k));
        s.done("remove");
        s.op("remove", "sleep", || thread::sleep(Duration::from_micros(200)));
    }
}

fn membership(s: &Soak, seed: u64) {
    let mut rng = Rng(seed);
    while s.running() {
        let name = rng.pick(&POOL);
        match rng.below(12) {
            10 | 11 => {
                // A live client's extra segment comes and goes: its objects offloaded to the
                // client's LocalDisk are then held there only, and promotion has work.
                let c = rng.pick(&LIVE);
                let extra = format!("{c}-extra");
                if rng.below(2) == 0 {
                    let _ = s.op("membership", "mount", || s.m.mount(c, &extra, 1 << 12));
                } else {
                    let _ = s.op("membership", "unmount", || s.m.unmount(c, &extra));
                }
            }
            0..=3 => {
                let c = rng.pick(&MEMBERS);
                if s.op("membership", "mount", || s.m.mount(c, name, 1 << 12)).is_ok() {
                    s.reached("pool name remounted");
                }
            }
            4..=6 => {
                let c = rng.pick(&MEMBERS);
                let _ = s.op("membership", "unmount", || s.m.unmount(c, name));
            }
            7 => {
                let c = rng.pick(&MEMBERS);
                let spec = SegmentSpec {
                    segment: name.to_string(),
                    size: 1 << 12,
                };
                let _ = s.op("membership", "remount", || s.m.remount(c, &[spec]));
            }
            _ => {
                // A client restarted under a new id re-mounting a name its old self may still
                // hold, or whose unmount or offboarding may be in flight.
                let c = rng.pick(&RESTARTED);
                if s.op("membership", "mount (restarted client)", || s.m.mount(c, name, 1 << 12))
                    .is_ok()
                {
                    s.reached("restarted client mounted a pool name");
                }
                if rng.below(2) == 0 {
                    let _ = s.op("membership", "unmount", || s.m.unmount(c, name));
                }
            }
        }
        s.done("membership");
        s.op("membership", "sleep", || thread::sleep(Duration::from_micros(500)));
    }
}

fn offload(s: &Soak, seed: u64) {
    let mut rng = Rng(seed);
    while s.running() {
        let c = rng.pick(&LIVE);
        if let Ok(tasks) = s.op("offload", "offload_heartbeat", || s.m.offload_heartbeat(c)) {
            for t in tasks {
                s.reached("offload handed out");
                let ok = rng.below(4) != 0;
                if s.op("offload", "task_done", || s.m.task_done(c, t.task, ok)).is_ok() {
                    s.reached("task completed");
                }
            }
        }
        s.done("offload");
        s.op("offload", "sleep", || thread::sleep(Duration::from_micros(500)));
    }
}

fn promote(s: &Soak, seed: u64) {
    let mut rng = Rng(seed);
    while s.running() {
        let k = key(&mut rng);
        if s.op("promote", "promote", || s.m.promote(&k)).is_ok() {
            s.reached("promotion started");
        }
        s.done("promote");
        s.op("promote", "sleep", || thread::sleep(Duration::from_micros(200)));
    }
}

fn replicate(s: &Soak, seed: u64) {
    let mut rng = Rng(seed);
    let segs = all_segments();
    while s.running() {
        match rng.below(10) {
            0..=5 => {
                let k = key(&mut rng);
                let to = &segs[rng.below(segs.len() as u64) as usize];
                let remove_source = rng.below(3) == 0;
                if s.op("replicate", "replicate", || s.m.replicate(&k, to, remove_source))
                    .is_ok()
                {
                    s.reached("copy/move started");
                }
            }
            6 => {
                let name = rng.pick(&POOL);
                let _ = s.op("replicate", "drain", || s.m.drain(name));
            }
            _ => {
                let c = rng.pick(&LIVE);
                for t in s.op("replicate", "fetch_tasks", || s.m.fetch_tasks(c)) {
                    let ok = rng.below(4) != 0;
                    if s.op("replicate", "task_done", || s.m.task_done(c, t.task, ok)).is_ok() {
                        s.reached("task completed");
                    }
                }
            }
        }
        s.done("replicate");
        s.op("replicate", "sleep", || thread::sleep(Duration::from_micros(200)));
    }
}

fn snapshot(s: &Soak) {
    while s.running() {
        let snap = s.op("snapshot", "snapshot", || s.m.snapshot());
        s.op("snapshot", "encode/decode", || {
            assert_eq!(Snapshot::decode(&snap.encode()).as_ref(), Ok(&snap));
        });
        s.done("snapshot");
        s.op("snapshot", "sleep", || thread::sleep(Duration::from_millis(20)));
    }
}

fn tick(s: &Soak) {
    while s.running() {
        s.op("tick", "tick", || {
            s.clock.advance_ms(10);
            s.m.tick();
        });
        s.done("tick");
        s.op("tick", "sleep", || thread::sleep(Duration::from_millis(1)));
    }
}

fn ping(s: &Soak) {
    while s.running() {
        for c in LIVE.iter().chain(&MEMBERS).chain(&RESTARTED) {
            s.op("ping", "ping", || s.m.ping(c));
        }
        s.done("ping");
        s.op("ping", "sleep", || thread::sleep(Duration::from_micros(300)));
    }
}

/// `s0` and `s1`: silent for a while (measured in ticks of the manual clock), then back.
fn silent(s: &Soak, seed: u64) {
    let mut rng = Rng(seed);
    while s.running() {
        // s0: a short silence (Suspected, recovered by the next Ping); s1: a long one (Offline,
        // offboarded, back as a new incarnation through a mount).
        let (who, seg, quiet_ms) = if rng.below(2) == 0 {
            ("s0", "s0-main", 60 + rng.below(60))
        } else {
            ("s1", "s1-main", 200 + rng.below(200))
        };
        let until = s.clock.now_ms() + quiet_ms;
        while s.running() && s.clock.now_ms() < until {
            s.op("silent", "silent", || thread::sleep(Duration::from_millis(1)));
            s.done("silent");
        }
        let _ = s.op("silent", "mount (silent client back)", || s.m.mount(who, seg, 1 << 14));
        let _ = s.op("silent", "mount_local_disk", || s.m.mount_local_disk(who, 1 << 14));
        let _ = s.op("silent", "ping", || s.m.ping(who));
        s.done("silent");
    }
}

/// Ticks (pinging every client that still has a record) until no offboarding job is pending.
fn quiesce(s: &Soak) {
    let everyone: Vec<&str> = LIVE
        .iter()
        .chain(&MEMBERS)
        .chain(&RESTARTED)
        .chain(&["s0", "s1"])
        .copied()
        .collect();
    for _ in 0..20_000 {
        if s.m.stats().offline == 0 && s.m.jobs_in_workers() == 0 {
            return;
        }
        for c in &everyone {
            s.m.ping(c);
        }
        s.clock.advance_ms(10);
        s.m.tick();
        thread::sleep(Duration::from_micros(200));
    }
    panic!("offboarding never drained: {:?}", s.m.stats());
}

fn soak_secs() -> u64 {
    match std::env::var("MASTER_SOAK_SECS") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("MASTER_SOAK_SECS must be a number of seconds, got {v:?}")),
        Err(_) => 8,
    }
}

#[test]
fn every_request_class_at_once_keeps_progressing_and_the_master_balances() {
    let clock = Arc::new(ManualClock::new(0));
    let options = MasterOptions {
        registry_shards: 4,
        metadata_shards: 8,
        offboarding: OffboardingDriver::Workers,
        seed: 11,
        ..MasterOptions::default()
    };
    let m = Master::new(clock.clone() as Arc<dyn Clock>, config(), options);
    for c in LIVE {
        m.mount(c, &format!("{c}-main"), 1 << 16).unwrap();
        m.mount_local_disk(c, 1 << 14).unwrap();
        m.remount(c, &[]).unwrap();
    }
    for (c, seg) in [("s0", "s0-main"), ("s1", "s1-main")] {
        m.mount(c, seg, 1 << 14).unwrap();
        m.mount_local_disk(c, 1 << 14).unwrap();
    }
    m.set_quota_limit("t1", Some(1 << 13));
    let soak = Arc::new(Soak {
        m,
        clock,
        stop: AtomicBool::new(false),
        progress: Default::default(),
        reached: Default::default(),
    });

    let secs = soak_secs();
    let spawn = |f: fn(&Soak, u64), seed: u64| {
        let s = soak.clone();
        thread::spawn(move || f(&s, seed))
    };
    let threads = vec![
        spawn(put, 1),
        spawn(get, 2),
        spawn(remove, 3),
        spawn(membership, 4),
        spawn(offload, 5),
        spawn(promote, 6),
        spawn(replicate, 7),
        spawn(|s, _| snapshot(s), 8),
        spawn(|s, _| tick(s), 9),
        spawn(|s, _| ping(s), 10),
        spawn(silent, 11),
    ];

    // The watchdog: every thread must complete something at least every STALL. A stuck thread
    // is left behind (it holds locks nobody else will release); the process ends with the test.
    let start = Instant::now();
    let mut last: Vec<(u64, Instant)> = soak
        .progress
        .iter()
        .map(|p| (p.done.load(Ordering::Relaxed), Instant::now()))
        .collect();
    while start.elapsed() < Duration::from_secs(secs) {
        thread::sleep(Duration::from_millis(50));
        for (i, p) in soak.progress.iter().enumerate() {
            let now = p.done.load(Ordering::Relaxed);
            if now != last[i].0 {
                last[i] = (now, Instant::now());
            } else if last[i].1.elapsed() > STALL {
                panic!(
                    "thread {:?} made no progress for {:?} (after {:.1?}): every thread's \
                     operations and the one it is in:\n{}",
                    CLASSES[i],
                    STALL,
                    start.elapsed(),
                    soak.report()
                );
            }
        }
        if let Some(t) = threads.iter().position(|t| t.is_finished()) {
            panic!("thread {:?} stopped early (panicked?):\n{}", CLASSES[t], soak.report());
        }
    }
    soak.stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().expect("a request thread panicked");
    }
    println!("soak of {secs} s:\n{}", soak.report());
    for (class, p) in CLASSES.iter().zip(&soak.progress) {
        assert!(
            p.done.load(Ordering::Relaxed) > 0,
            "{class} never completed an operation"
        );
    }
    for (what, n) in REACHED.iter().zip(&soak.reached) {
        let n = n.load(Ordering::Relaxed);
        println!("  {what}: {n}");
        assert!(n > 0, "the soak never reached: {what}");
    }

    quiesce(&soak);
    let m = &soak.m;
    invariants::assert_clean(m);
    let stats = m.stats();
    assert_eq!(stats.offline_commits, stats.jobs_completed, "a job was lost: {stats:?}");
    assert!(
        stats.offline_commits > 0,
        "nobody went Offline: the soak missed offboarding"
    );
    assert!(stats.recoveries > 0, "nobody recovered: the soak missed recovery");

    // The final snapshot restores to an equal master (readiness aside: a restored client must
    // ReMount before it is ready again).
    let snap = m.snapshot();
    let decoded = Snapshot::decode(&snap.encode()).expect("the final snapshot decodes");
    let restored = Master::restore(
        soak.clock.clone() as Arc<dyn Clock>,
        config(),
        MasterOptions {
            registry_shards: 4,
            metadata_shards: 8,
            offboarding: OffboardingDriver::Inline,
            ..MasterOptions::default()
        },
        &decoded,
    )
    .expect("the final snapshot restores");
    let unready = |mut s: Snapshot| {
        for c in &mut s.clients {
            c.ready = false;
        }
        s
    };
    assert_eq!(unready(restored.snapshot()), unready(snap));
    invariants::assert_clean(&restored);
}
