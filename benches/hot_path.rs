//! Hot-path benchmarks: the serving check, Ping, and the monitor tick, each against a baseline
//! modelled (in this file) on the design it stands for.
//!
//! | group/function | what runs | baseline for |
//! |---|---|---|
//! | `eligibility/word` | 1024 resources, 256 shared owner records, count `record.is_serving()` | ours |
//! | `eligibility/no_check` | the same loop over the same resources, counting a resource field | the floor |
//! | `eligibility/mutex_record` | owners are `Arc<Mutex<State>>`: lock, read, unlock | upstream's per-record transition mutex |
//! | `eligibility/rwlock_set` | owners are client ids: `RwLock<HashSet<u128>>` read-lock + contains (10k ids) | Mooncake main's `ok_client_` |
//! | `eligibility/*_contended` | `word` / `mutex_record` while a second thread pings and flips the same records | |
//! | `ping/word` | `Liveness::ping` over 10k registered clients, manual clock | ours |
//! | `ping/queue_push` | `ArrayQueue<u128>` (cap 131072) push, drained into a `HashMap` by a second thread | Mooncake main's ping queue |
//! | `monitor/idle_tick_1m` | one `Monitor::tick` with 1M armed clients and nothing due | ours |
//! | `monitor/full_scan_1m` | copy 1M (id, record) pairs under a shared lock, lock each, compare `now - last >= ttl` | upstream's monitor |
//! | `monitor/expire_100k` | the tick that commits 100k Active → Suspected | ours |
//!
//! Run with `scripts/bench.sh` (quick mode + report) or `cargo bench --bench hot_path`. Lines
//! starting `hot_path-note:` on stdout carry facts the report needs (record size, background
//! thread work, queue-full pushes, and a hand-timed steady-state monitor tick that
//! `HOT_PATH_NO_STEADY=1` skips); `scripts/bench.sh` collects them.

use criterion::{BatchSize, Criterion, Throughput};
use crossbeam::queue::ArrayQueue;
use mooncake_liveness::liveness::Registry;
use mooncake_liveness::{
    ClientId, ClientLivenessRecord, Clock, Liveness, LivenessConfig, ManualClock, Monitor, MountOutcome, TickReport,
};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread;
use std::time::Instant;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Resources scanned by one `eligibility` iteration (the criterion throughput).
const RESOURCES: usize = 1024;
/// Distinct owners of those resources: each owner holds `RESOURCES / OWNERS` replicas.
const OWNERS: usize = 256;
/// Client ids in Mooncake main's `ok_client_` set.
const OK_CLIENTS: usize = 10_000;
/// Registered clients Ping cycles through.
const PING_CLIENTS: usize = 10_000;
/// Mooncake main's `client_ping_queue_` capacity (`128 * 1024`).
const PING_QUEUE_CAPACITY: usize = 131_072;
/// Clients armed for the idle-tick and full-scan benches.
const SCAN_CLIENTS: usize = 1_000_000;
/// Clients that all fall due in one tick.
const EXPIRE_CLIENTS: usize = 100_000;
/// Production tick (`monitor_tick_ms` default).
const TICK_MS: u64 = 100;
/// The manual clocks start here (any value far from 0 works).
const START_MS: u64 = 1_000_000;

fn note(key: &str, value: impl std::fmt::Display) {
    println!("hot_path-note: {key}={value}");
}

// ---------------------------------------------------------------------------------------------
// Shared setup
// ---------------------------------------------------------------------------------------------

/// splitmix64: deterministic, well-spread pseudo-random numbers.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// UUID-like client ids: `n` distinct random `u128`s (seeded by `salt`).
fn client_ids(n: usize, salt: u64) -> Vec<u128> {
    let ids: Vec<u128> = (0..n as u64)
        .map(|i| {
            let k = i.wrapping_mul(2).wrapping_add(salt << 40);
            (u128::from(mix(k)) << 64) | u128::from(mix(k + 1))
        })
        .collect();
    debug_assert_eq!(ids.iter().collect::<HashSet<_>>().len(), n);
    ids
}

/// Production defaults with the given TTLs and tick (stall bound: half the active TTL).
fn config(active_ttl_ms: u64, suspicion_ttl_ms: u64, tick_ms: u64) -> LivenessConfig {
    let cfg = LivenessConfig {
        active_ttl_ms,
        suspicion_ttl_ms,
        monitor_tick_ms: tick_ms,
        stall_bound_ms: (active_ttl_ms / 2).max(1),
        ..LivenessConfig::default()
    };
    cfg.validate().expect("bench configuration is valid");
    cfg
}

/// A liveness core on a manual clock reading [`START_MS`].
fn liveness(cfg: LivenessConfig, shards: usize) -> (Arc<ManualClock>, Liveness) {
    let clock = Arc::new(ManualClock::new(START_MS));
    let dyn_clock: Arc<dyn Clock> = clock.clone();
    (
        clock,
        Liveness::with_registry(dyn_clock, cfg, Registry::with_shards(shards)),
    )
}

/// Mounts `id` (first incarnation, work that always succeeds) and marks it ready.
fn mount(live: &Liveness, id: u128) -> Arc<ClientLivenessRecord> {
    match live.mount(ClientId(id), None, |_| Ok::<(), ()>(())) {
        MountOutcome::Mounted { record, .. } => {
            record.set_ready(true);
            record
        }
        other => panic!("mount of {id:032x} failed: {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// eligibility
// ---------------------------------------------------------------------------------------------

/// A data-plane resource (a replica / allocation) and the owner it was registered under.
struct Resource<O> {
    owner: O,
    /// Something the router's loop could compare without any liveness check.
    size: u64,
}

/// `owner_of[i]` for resource `i`: every owner gets `RESOURCES / OWNERS` resources, scattered
/// (Fisher-Yates with a fixed seed), as replicas of different objects sharing a client are.
fn owner_assignment() -> Vec<usize> {
    let mut owner_of: Vec<usize> = (0..RESOURCES).map(|i| i % OWNERS).collect();
    for i in (1..RESOURCES).rev() {
        let j = (mix(i as u64 ^ 0xE11) % (i as u64 + 1)) as usize;
        owner_of.swap(i, j);
    }
    owner_of
}

fn resources<O: Clone>(owners: &[O], owner_of: &[usize]) -> Vec<Resource<O>> {
    owner_of
        .iter()
        .enumerate()
        .map(|(i, &o)| Resource {
            owner: owners[o].clone(),
            size: 1 + mix(i as u64) % 4096,
        })
        .collect()
}

/// Upstream's liveness state, read and written under the record's transition mutex.
#[derive(Clone, Copy, PartialEq, Eq)]
enum UpState {
    Active,
    Suspected,
    #[allow(dead_code)]
    Offline,
}

struct UpInner {
    last_ping_ms: u64,
    state: UpState,
}

/// Upstream's per-record `std::mutex` + state. Cache-line aligned like our record, so neither
/// design pays for false sharing between neighbouring records.
#[repr(align(64))]
struct UpRecord {
    m: Mutex<UpInner>,
}

impl UpRecord {
    fn new(now_ms: u64) -> Self {
        Self {
            m: Mutex::new(UpInner {
                last_ping_ms: now_ms,
                state: UpState::Active,
            }),
        }
    }
}

// The four loops have one shape: iterate the slice, evaluate a predicate, count.
#[inline(never)]
fn count_word(rs: &[Resource<Arc<ClientLivenessRecord>>]) -> usize {
    rs.iter().filter(|r| r.owner.is_serving()).count()
}

#[inline(never)]
fn count_no_check(rs: &[Resource<Arc<ClientLivenessRecord>>]) -> usize {
    rs.iter().filter(|r| r.size != 0).count()
}

#[inline(never)]
fn count_mutex(rs: &[Resource<Arc<UpRecord>>]) -> usize {
    rs.iter()
        .filter(|r| r.owner.m.lock().unwrap_or_else(|e| e.into_inner()).state == UpState::Active)
        .count()
}

#[inline(never)]
fn count_rwlock_set(rs: &[Resource<u128>], ok: &RwLock<HashSet<u128>>) -> usize {
    rs.iter()
        .filter(|r| ok.read().unwrap_or_else(|e| e.into_inner()).contains(&r.owner))
        .count()
}

fn eligibility(c: &mut Criterion) {
    let owner_of = owner_assignment();
    let mut g = c.benchmark_group("eligibility");
    g.throughput(Throughput::Elements(RESOURCES as u64));

    // Ours, uncontended: production TTLs, nothing ever expires.
    let (_clock, live) = liveness(LivenessConfig::default(), 1024);
    let ids = client_ids(OWNERS, 1);
    let records: Vec<_> = ids.iter().map(|&id| mount(&live, id)).collect();
    let ours = resources(&records, &owner_of);
    assert_eq!(count_word(&ours), RESOURCES);
    g.bench_function("word", |b| b.iter(|| count_word(black_box(&ours))));
    g.bench_function("no_check", |b| b.iter(|| count_no_check(black_box(&ours))));
    drop((ours, records, live));

    // Upstream: a transition mutex per record.
    let up: Vec<Arc<UpRecord>> = (0..OWNERS).map(|_| Arc::new(UpRecord::new(START_MS))).collect();
    let up_res = resources(&up, &owner_of);
    assert_eq!(count_mutex(&up_res), RESOURCES);
    g.bench_function("mutex_record", |b| b.iter(|| count_mutex(black_box(&up_res))));
    drop((up_res, up));

    // Mooncake main: resources carry the client id; `ok_client_` is a shared set.
    let mut ok_ids = client_ids(OK_CLIENTS - OWNERS, 2);
    ok_ids.extend_from_slice(&ids);
    let ok: RwLock<HashSet<u128>> = RwLock::new(ok_ids.into_iter().collect());
    let set_res = resources(&ids, &owner_of);
    assert_eq!(count_rwlock_set(&set_res, &ok), RESOURCES);
    g.bench_function("rwlock_set", |b| {
        b.iter(|| count_rwlock_set(black_box(&set_res), black_box(&ok)))
    });
    drop((set_res, ok));

    word_contended(&mut g, &owner_of);
    mutex_record_contended(&mut g, &owner_of);
    g.finish();
}

/// Measures only once the background thread is demonstrably running.
fn wait_for_first_round(progress: &AtomicU64) {
    while progress.load(Ordering::Relaxed) == 0 {
        thread::yield_now();
    }
}

/// `eligibility/word` while a second thread runs the real Ping and the real monitor on the same
/// records with a 1 ms TTL and a 1 ms tick: each round pings every owner (recovering it), moves
/// the clock one tick and ticks the monitor, which commits Active → Suspected for all of them.
fn word_contended(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>, owner_of: &[usize]) {
    let (clock, live) = liveness(config(1, 1_000_000_000, 1), 1024);
    let ids: Vec<ClientId> = client_ids(OWNERS, 3).into_iter().map(ClientId).collect();
    let records: Vec<_> = ids.iter().map(|id| mount(&live, id.0)).collect();
    let mut monitor = Monitor::new(&live);
    let _ = monitor.tick(&live); // arms the records
    let ours = resources(&records, owner_of);
    let stop = AtomicBool::new(false);
    let progress = AtomicU64::new(0);
    thread::scope(|s| {
        let background = s.spawn(|| {
            let started = Instant::now();
            let (mut rounds, mut recovered) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                for &id in &ids {
                    recovered += u64::from(live.ping(id, None).recovered.is_some());
                }
                clock.advance_ms(1);
                let _ = black_box(monitor.tick(&live));
                rounds += 1;
                progress.store(rounds, Ordering::Relaxed);
            }
            let per_sec = rounds as f64 / started.elapsed().as_secs_f64();
            (rounds, recovered, monitor.stats().suspected, per_sec)
        });
        g.bench_function("word_contended", |b| {
            wait_for_first_round(&progress);
            b.iter(|| count_word(black_box(&ours)))
        });
        stop.store(true, Ordering::Relaxed);
        let (rounds, recovered, suspected, per_sec) = background.join().expect("background thread");
        note("word_contended.background_rounds", rounds);
        note("word_contended.background_rounds_per_sec", format!("{per_sec:.0}"));
        note("word_contended.suspected_commits", suspected);
        note("word_contended.recoveries", recovered);
    });
}

/// `eligibility/mutex_record` while a second thread does upstream's equivalent on the same
/// records, round by round like ours: a ping pass (upstream's Ping: shared lock on the client map,
/// find the record, lock it, `last = now`, Suspected → Active) and a monitor pass (upstream's
/// monitor: copy the (id, record) pairs under the shared lock, then lock each record and commit
/// Active → Suspected when `now - last >= ttl`). The lookups and the copy make the writer slower,
/// which is kinder to the baseline than bare lock+write loops.
fn mutex_record_contended(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>, owner_of: &[usize]) {
    const TTL_MS: u64 = 1;
    let ids = client_ids(OWNERS, 3);
    let up: Vec<Arc<UpRecord>> = (0..OWNERS).map(|_| Arc::new(UpRecord::new(START_MS))).collect();
    let clients: RwLock<HashMap<u128, Arc<UpRecord>>> =
        RwLock::new(ids.iter().copied().zip(up.iter().cloned()).collect());
    let up_res = resources(&up, owner_of);
    let stop = AtomicBool::new(false);
    let progress = AtomicU64::new(0);
    thread::scope(|s| {
        let background = s.spawn(|| {
            let started = Instant::now();
            let (mut rounds, mut suspected, mut recovered) = (0u64, 0u64, 0u64);
            let mut now = START_MS;
            let mut snapshot: Vec<(u128, Arc<UpRecord>)> = Vec::with_capacity(OWNERS);
            while !stop.load(Ordering::Relaxed) {
                for id in &ids {
                    let map = clients.read().unwrap_or_else(|e| e.into_inner());
                    let rec = map.get(id).expect("registered");
                    let mut st = rec.m.lock().unwrap_or_else(|e| e.into_inner());
                    st.last_ping_ms = now;
                    if st.state == UpState::Suspected {
                        st.state = UpState::Active;
                        recovered += 1;
                    }
                }
                now += TTL_MS;
                {
                    let map = clients.read().unwrap_or_else(|e| e.into_inner());
                    snapshot.extend(map.iter().map(|(id, rec)| (*id, Arc::clone(rec))));
                }
                for (_id, rec) in snapshot.drain(..) {
                    let mut st = rec.m.lock().unwrap_or_else(|e| e.into_inner());
                    if st.state == UpState::Active && now - st.last_ping_ms >= TTL_MS {
                        st.state = UpState::Suspected;
                        suspected += 1;
                    }
                }
                rounds += 1;
                progress.store(rounds, Ordering::Relaxed);
            }
            let per_sec = rounds as f64 / started.elapsed().as_secs_f64();
            (rounds, recovered, suspected, per_sec)
        });
        g.bench_function("mutex_record_contended", |b| {
            wait_for_first_round(&progress);
            b.iter(|| count_mutex(black_box(&up_res)))
        });
        stop.store(true, Ordering::Relaxed);
        let (rounds, recovered, suspected, per_sec) = background.join().expect("background thread");
        note("mutex_record_contended.background_rounds", rounds);
        note(
            "mutex_record_contended.background_rounds_per_sec",
            format!("{per_sec:.0}"),
        );
        note("mutex_record_contended.suspected_commits", suspected);
        note("mutex_record_contended.recoveries", recovered);
    });
}

// ---------------------------------------------------------------------------------------------
// ping
// ---------------------------------------------------------------------------------------------

/// Context for `ping/queue_push`: ns per successful push into an empty queue that nobody drains
/// (no cache-line traffic with a consumer; best of three fills).
fn uncontended_push_ns(ids: &[ClientId]) -> String {
    let best = (0..3)
        .map(|_| {
            let queue = ArrayQueue::<u128>::new(PING_QUEUE_CAPACITY);
            let t = Instant::now();
            for i in 0..PING_QUEUE_CAPACITY {
                queue.push(black_box(ids[i % ids.len()].0)).expect("queue has room");
            }
            t.elapsed().as_nanos() as f64 / PING_QUEUE_CAPACITY as f64
        })
        .fold(f64::INFINITY, f64::min);
    format!("{best:.1}")
}

fn ping(c: &mut Criterion) {
    let mut g = c.benchmark_group("ping");

    let (_clock, live) = liveness(LivenessConfig::default(), 1024);
    let ids: Vec<ClientId> = client_ids(PING_CLIENTS, 4).into_iter().map(ClientId).collect();
    for id in &ids {
        mount(&live, id.0);
    }
    let mut i = 0;
    g.bench_function("word", |b| {
        b.iter(|| {
            let id = ids[i];
            i = if i + 1 == ids.len() { 0 } else { i + 1 };
            live.ping(black_box(id), None)
        })
    });
    drop(live);

    // Mooncake main: Ping pushes the id into a bounded lock-free queue; the monitor thread
    // drains it into `client_ttl` (id → deadline). The drainer runs continuously here (Mooncake's
    // sleeps a second between drains, which at these rates would only fill the queue).
    note("queue_push.uncontended_ns", uncontended_push_ns(&ids));
    let queue = ArrayQueue::<u128>::new(PING_QUEUE_CAPACITY);
    let stop = AtomicBool::new(false);
    let ttl_ms = LivenessConfig::default().active_ttl_ms;
    thread::scope(|s| {
        let drainer = s.spawn(|| {
            let start = Instant::now();
            let mut client_ttl: HashMap<u128, u64> = HashMap::new();
            let mut drained = 0u64;
            loop {
                let now_ms = start.elapsed().as_millis() as u64;
                let mut got = false;
                while let Some(id) = queue.pop() {
                    client_ttl.insert(id, now_ms + ttl_ms);
                    drained += 1;
                    got = true;
                }
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                if !got {
                    std::hint::spin_loop();
                }
            }
            (drained, client_ttl.len())
        });
        let (mut attempts, mut full) = (0u64, 0u64);
        let mut i = 0;
        g.bench_function("queue_push", |b| {
            b.iter(|| {
                let id = ids[i].0;
                i = if i + 1 == ids.len() { 0 } else { i + 1 };
                attempts += 1;
                if queue.push(black_box(id)).is_err() {
                    full += 1;
                }
            })
        });
        stop.store(true, Ordering::Relaxed);
        let (drained, clients) = drainer.join().expect("drainer thread");
        note("queue_push.attempts", attempts);
        note("queue_push.failed_full", full);
        note("queue_push.drained", drained);
        note("queue_push.clients_tracked", clients);
    });
    g.finish();
}

// ---------------------------------------------------------------------------------------------
// monitor
// ---------------------------------------------------------------------------------------------

/// 1M healthy clients armed in a monitor; deadlines ~3.2 years out (1e11 ms), so advancing one
/// 100 ms tick per iteration never reaches a slot holding them.
struct Idle {
    clock: Arc<ManualClock>,
    live: Liveness,
    monitor: Monitor,
}

fn build_idle() -> Idle {
    let t = Instant::now();
    let (clock, live) = liveness(config(100_000_000_000, 20_000, TICK_MS), 65_536);
    let mut monitor = Monitor::new(&live);
    for id in client_ids(SCAN_CLIENTS, 5) {
        mount(&live, id);
    }
    let report = monitor.tick(&live); // arms all 1M
    assert!(report.events.is_empty());
    assert_eq!(monitor.armed(), SCAN_CLIENTS);
    note("idle_tick_1m.setup_ms", t.elapsed().as_millis());
    Idle { clock, live, monitor }
}

/// Upstream's monitor: `client_mutex_`-guarded map of records; each tick copies every
/// (id, record) pair under the shared lock, then locks and evaluates each record. The copy
/// buffer keeps its capacity between ticks (kinder to the baseline than a fresh vector).
struct Upstream {
    clients: RwLock<HashMap<u128, Arc<UpRecord>>>,
    ttl_ms: u64,
    snapshot: Vec<(u128, Arc<UpRecord>)>,
}

impl Upstream {
    fn build(n: usize) -> Self {
        let clients = client_ids(n, 5)
            .into_iter()
            .map(|id| (id, Arc::new(UpRecord::new(START_MS))))
            .collect();
        Self {
            clients: RwLock::new(clients),
            ttl_ms: LivenessConfig::default().active_ttl_ms,
            snapshot: Vec::with_capacity(n),
        }
    }

    /// One tick at `now_ms`: returns how many records are due (0 in the benchmark).
    fn tick(&mut self, now_ms: u64) -> usize {
        {
            let map = self.clients.read().unwrap_or_else(|e| e.into_inner());
            self.snapshot.extend(map.iter().map(|(id, rec)| (*id, Arc::clone(rec))));
        }
        let mut due = 0;
        for (_id, rec) in self.snapshot.drain(..) {
            let st = rec.m.lock().unwrap_or_else(|e| e.into_inner());
            if st.state == UpState::Active && now_ms.saturating_sub(st.last_ping_ms) >= self.ttl_ms {
                due += 1; // upstream would commit Active → Suspected here
            }
        }
        due
    }
}

/// 100k clients whose deadlines all fall in one tick, re-armed for every iteration by the real
/// paths: a Ping per client (recovering it), then idle ticks up to the tick before the deadline.
struct Expire {
    clock: Arc<ManualClock>,
    live: Liveness,
    monitor: RefCell<Monitor>,
    ids: Vec<ClientId>,
    ticks_per_ttl: u64,
}

impl Expire {
    fn build() -> Self {
        let cfg = LivenessConfig::default(); // 10 s active, 20 s suspicion, 100 ms tick
        let ticks_per_ttl = cfg.active_ttl_ms / cfg.monitor_tick_ms;
        let (clock, live) = liveness(cfg, 65_536);
        let mut monitor = Monitor::new(&live);
        let ids: Vec<ClientId> = client_ids(EXPIRE_CLIENTS, 6).into_iter().map(ClientId).collect();
        for id in &ids {
            mount(&live, id.0);
        }
        let _ = monitor.tick(&live); // arms all at now + active TTL
        Self {
            clock,
            live,
            monitor: RefCell::new(monitor),
            ids,
            ticks_per_ttl,
        }
    }

    /// Outside the measurement: every client signals now, then time runs to one tick before
    /// their common deadline tick (idle ticks, nothing due) and the clock is moved onto it.
    fn arm(&self) {
        for &id in &self.ids {
            black_box(self.live.ping(id, None));
        }
        let mut monitor = self.monitor.borrow_mut();
        for _ in 1..self.ticks_per_ttl {
            self.clock.advance_ms(TICK_MS);
            assert!(
                monitor.tick(&self.live).events.is_empty(),
                "nothing is due before the deadline"
            );
        }
        self.clock.advance_ms(TICK_MS);
    }

    fn tick(&self) -> TickReport {
        self.monitor.borrow_mut().tick(&self.live)
    }
}

fn monitor(c: &mut Criterion) {
    let mut g = c.benchmark_group("monitor");
    g.sample_size(10);
    // Each state is built before its `bench_function` (even when a filter skips it): criterion's
    // quick mode counts wall time from the first call, so a setup inside the closure would end
    // the measurement after a handful of iterations.

    let mut idle = build_idle();
    g.bench_function("idle_tick_1m", |b| {
        let Idle { clock, live, monitor } = &mut idle;
        b.iter(|| {
            clock.advance_ms(TICK_MS);
            monitor.tick(live)
        })
    });
    let stats = idle.monitor.stats();
    assert_eq!(stats.suspected, 0, "an idle tick committed something");
    assert_eq!(idle.monitor.armed(), SCAN_CLIENTS);
    note("idle_tick_1m.ticks", stats.ticks);
    note("idle_tick_1m.entries_examined", stats.entries_examined);
    drop(idle);

    let mut up = Upstream::build(SCAN_CLIENTS);
    let mut now = START_MS;
    g.bench_function("full_scan_1m", |b| {
        b.iter(|| {
            now += TICK_MS;
            up.tick(now)
        })
    });
    drop(up);

    let ex = Expire::build();
    // One unmeasured round proves the setup: exactly 100k commits in one tick.
    ex.arm();
    assert_eq!(ex.tick().events.len(), EXPIRE_CLIENTS);
    g.bench_function("expire_100k", |b| {
        b.iter_batched(|| ex.arm(), |()| ex.tick(), BatchSize::PerIteration)
    });
    let stats = ex.monitor.borrow().stats();
    assert_eq!(
        stats.suspected % EXPIRE_CLIENTS as u64,
        0,
        "every measured tick commits 100k"
    );
    assert_eq!(stats.offline, 0);
    note(
        "expire_100k.ticks_committing_100k",
        stats.suspected / EXPIRE_CLIENTS as u64,
    );
    drop(ex);
    g.finish();
    if std::env::var_os("HOT_PATH_NO_STEADY").is_none() {
        steady_tick_note();
    }
}

/// Not a criterion benchmark (context for `monitor/idle_tick_1m`): the tick in steady state,
/// hand-timed. 1M healthy clients on production settings (10 s TTL, 100 ms tick), mounted evenly
/// over one TTL, each pinging every 5 s (a fiftieth of them between any two ticks). Nothing is
/// ever due, but every wheel entry still wakes once per 5-10 s (lazy rescheduling: Ping never
/// touches the wheel), and every 64 ticks a level-1 slot cascades into level 0. The pings are
/// timed too: the same `Liveness::ping` as `ping/word`, with 1M clients instead of 10k.
fn steady_tick_note() {
    struct Step {
        tick_ns: u64,
        examined: u64,
        ping_ns: u64,
        pings: u64,
    }
    const PING_PERIOD_TICKS: usize = 50;
    const WARM_TICKS: usize = 110; // > TTL: every entry has been re-armed at least once
    const MEASURED_TICKS: usize = 320; // five level-1 slots
    let t = Instant::now();
    let cfg = LivenessConfig::default();
    let ttl_ticks = (cfg.active_ttl_ms / cfg.monitor_tick_ms) as usize;
    let (clock, live) = liveness(cfg, 65_536);
    let mut monitor = Monitor::new(&live);
    let ids: Vec<ClientId> = client_ids(SCAN_CLIENTS, 7).into_iter().map(ClientId).collect();
    let mut phase = 0;
    // One tick: the clients of this phase ping (those mounted so far), time moves one tick, the
    // monitor ticks (timed).
    let mut step = |monitor: &mut Monitor, mounted: usize| {
        let ping_start = Instant::now();
        let mut pings = 0u64;
        for &id in ids[..mounted].iter().skip(phase).step_by(PING_PERIOD_TICKS) {
            black_box(live.ping(id, None));
            pings += 1;
        }
        let ping_ns = ping_start.elapsed().as_nanos() as u64;
        phase = (phase + 1) % PING_PERIOD_TICKS;
        clock.advance_ms(TICK_MS);
        let examined = monitor.stats().entries_examined;
        let start = Instant::now();
        let report = monitor.tick(&live);
        let ns = start.elapsed().as_nanos() as u64;
        assert!(report.events.is_empty(), "healthy clients never expire");
        Step {
            tick_ns: ns,
            examined: monitor.stats().entries_examined - examined,
            ping_ns,
            pings,
        }
    };
    let per_tick = SCAN_CLIENTS / ttl_ticks;
    for k in 0..ttl_ticks {
        for id in &ids[k * per_tick..(k + 1) * per_tick] {
            mount(&live, id.0);
        }
        step(&mut monitor, (k + 1) * per_tick);
    }
    for _ in 0..WARM_TICKS {
        step(&mut monitor, SCAN_CLIENTS);
    }
    let ticks: Vec<Step> = (0..MEASURED_TICKS).map(|_| step(&mut monitor, SCAN_CLIENTS)).collect();
    let mut ns: Vec<u64> = ticks.iter().map(|t| t.tick_ns).collect();
    ns.sort_unstable();
    let mean = ns.iter().sum::<u64>() as f64 / ns.len() as f64;
    let examined: u64 = ticks.iter().map(|t| t.examined).sum();
    let max_examined = ticks.iter().map(|t| t.examined).max().unwrap_or(0);
    let ping_ns: u64 = ticks.iter().map(|t| t.ping_ns).sum();
    let pings: u64 = ticks.iter().map(|t| t.pings).sum();
    note("steady_tick_1m.mean_ns", format!("{mean:.0}"));
    note("steady_tick_1m.p50_ns", ns[ns.len() / 2]);
    note("steady_tick_1m.p99_ns", ns[ns.len() * 99 / 100]);
    note("steady_tick_1m.max_ns", ns[ns.len() - 1]);
    note(
        "steady_tick_1m.entries_examined_per_tick",
        examined / MEASURED_TICKS as u64,
    );
    note("steady_tick_1m.max_entries_examined_in_a_tick", max_examined);
    note(
        "steady_ping_1m.mean_ns",
        format!("{:.1}", ping_ns as f64 / pings.max(1) as f64),
    );
    note("steady_tick_1m.wall_ms", t.elapsed().as_millis());
}

fn main() {
    note("record_size_bytes", std::mem::size_of::<ClientLivenessRecord>());
    note("record_align_bytes", std::mem::align_of::<ClientLivenessRecord>());
    note("eligibility_resources", RESOURCES);
    let mut c = Criterion::default().configure_from_args();
    eligibility(&mut c);
    ping(&mut c);
    monitor(&mut c);
    c.final_summary();
}
