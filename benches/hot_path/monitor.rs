//! The `monitor` group: the wheel's ticks against upstream's full scan.

use crate::common::*;
use crate::steady::Steady;
use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, Criterion};
use mooncake_liveness::{ClientId, Liveness, LivenessConfig, ManualClock, Monitor, TickReport};
use std::cell::RefCell;
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// `worst_tick_1m`: every client pings every second (10 ticks).
const WORST_PING_PERIOD_TICKS: usize = 10;
/// `worst_tick_1m`: ticks run after mounting, so that every entry has been re-armed (> TTL).
const WORST_WARM_TICKS: usize = 110;
/// `worst_tick_1m`: one measurement is the slowest of this many consecutive ticks (one level-1
/// slot: the span over which the previous wheel did its whole cascade in one tick).
const WORST_WINDOW_TICKS: usize = 64;
/// `worst_tick_1m`: windows actually run per criterion call (see [`worst_tick`]).
const WORST_MAX_WINDOWS_PER_CALL: u64 = 3;
/// `mass_expiry_100k`: the fleet, of which [`EXPIRE_CLIENTS`] are partitioned away.
const MASS_FLEET: usize = 1_000_000;

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

pub(crate) fn monitor(c: &mut Criterion) {
    if std::env::var_os("HOT_PATH_NO_MONITOR").is_some() {
        return; // the group's 1M-client setups take minutes even when a filter skips them
    }
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
    prove(&ex);
    measure_commit_tick(&mut g, "expire_100k", &ex);
    drop(ex);
    worst_tick(&mut g);
    mass_expiry(&mut g);
    g.finish();
    if std::env::var_os("HOT_PATH_NO_STEADY").is_none() {
        crate::steady::steady_tick_note();
    }
}

/// `monitor/worst_tick_1m`: the slowest tick of each window of [`WORST_WINDOW_TICKS`] ticks of a
/// steady 1M fleet pinging every second; criterion reports the mean of those maxima.
///
/// A window costs far more wall time (100k pings per tick, untimed) than the tick it reports,
/// and criterion sizes its runs by the reported time, so each call runs at most
/// [`WORST_MAX_WINDOWS_PER_CALL`] windows and reports their mean slowest tick times `iters`
/// (an unbiased estimate of the same mean; the note lines give the raw figures).
fn worst_tick(g: &mut BenchmarkGroup<'_, WallTime>) {
    let t = Instant::now();
    let mut fleet = Steady::build(WORST_PING_PERIOD_TICKS, WORST_WARM_TICKS);
    note("worst_tick_1m.setup_ms", t.elapsed().as_millis());
    let (mut windows, mut slowest, mut ticks, mut tick_ns, mut max_examined) = (0u64, 0u64, 0u64, 0u64, 0u64);
    g.bench_function("worst_tick_1m", |b| {
        b.iter_custom(|iters| {
            let run = iters.clamp(1, WORST_MAX_WINDOWS_PER_CALL);
            let mut sum_worst = 0u64;
            for _ in 0..run {
                let mut worst = 0;
                for _ in 0..WORST_WINDOW_TICKS {
                    let step = fleet.step(SCAN_CLIENTS);
                    worst = worst.max(step.tick_ns);
                    max_examined = max_examined.max(step.examined);
                    tick_ns += step.tick_ns;
                    ticks += 1;
                }
                sum_worst += worst;
                slowest = slowest.max(worst);
                windows += 1;
            }
            Duration::from_nanos((sum_worst as f64 / run as f64 * iters as f64) as u64)
        })
    });
    note("worst_tick_1m.windows", windows);
    note("worst_tick_1m.slowest_ns", slowest);
    note("worst_tick_1m.mean_tick_ns", tick_ns / ticks.max(1));
    note("worst_tick_1m.max_entries_examined_in_a_tick", max_examined);
    assert_eq!(fleet.monitor.stats().suspected, 0, "a healthy client was suspected");
}

/// 1M clients, of which 100k stop pinging at once (a partition of 10 % of the fleet): their
/// deadlines fall in one tick, the other 900k are one tick later and keep pinging. Re-armed for
/// every iteration by the real paths, as [`Expire`] is.
struct MassExpiry {
    clock: Arc<ManualClock>,
    live: Liveness,
    monitor: RefCell<Monitor>,
    partitioned: Vec<ClientId>,
    healthy: Vec<ClientId>,
    ticks_per_ttl: u64,
}

impl MassExpiry {
    fn build() -> Self {
        let cfg = LivenessConfig::default();
        let ticks_per_ttl = cfg.active_ttl_ms / cfg.monitor_tick_ms;
        let (clock, live) = liveness(cfg, 65_536);
        let mut monitor = Monitor::new(&live);
        let mut ids: Vec<ClientId> = client_ids(MASS_FLEET, 8).into_iter().map(ClientId).collect();
        for id in &ids {
            mount(&live, id.0);
        }
        let _ = monitor.tick(&live); // arms all 1M
        let healthy = ids.split_off(EXPIRE_CLIENTS);
        Self {
            clock,
            live,
            monitor: RefCell::new(monitor),
            partitioned: ids,
            healthy,
            ticks_per_ttl,
        }
    }

    /// Outside the measurement: the partitioned clients signal (recovering them) now, the
    /// healthy ones one tick later; time runs to their deadline tick, nothing due on the way.
    fn arm(&self) {
        for &id in &self.partitioned {
            black_box(self.live.ping(id, None));
        }
        let mut monitor = self.monitor.borrow_mut();
        self.clock.advance_ms(TICK_MS);
        for &id in &self.healthy {
            black_box(self.live.ping(id, None));
        }
        for tick in 1..self.ticks_per_ttl {
            if tick > 1 {
                self.clock.advance_ms(TICK_MS);
            }
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

/// `monitor/mass_expiry_100k`: the tick that commits 100k Active → Suspected in a 1M fleet.
fn mass_expiry(g: &mut BenchmarkGroup<'_, WallTime>) {
    let t = Instant::now();
    let mass = MassExpiry::build();
    prove(&mass);
    note("mass_expiry_100k.setup_ms", t.elapsed().as_millis());
    measure_commit_tick(g, "mass_expiry_100k", &mass);
}

/// A fleet whose next tick commits [`EXPIRE_CLIENTS`] Active → Suspected once armed.
trait Armed {
    /// Brings the fleet to the tick before the commit (unmeasured).
    fn arm(&self);
    /// The measured tick.
    fn tick(&self) -> TickReport;
    fn monitor(&self) -> &RefCell<Monitor>;
}

impl Armed for Expire {
    fn arm(&self) {
        Expire::arm(self)
    }
    fn tick(&self) -> TickReport {
        Expire::tick(self)
    }
    fn monitor(&self) -> &RefCell<Monitor> {
        &self.monitor
    }
}

impl Armed for MassExpiry {
    fn arm(&self) {
        MassExpiry::arm(self)
    }
    fn tick(&self) -> TickReport {
        MassExpiry::tick(self)
    }
    fn monitor(&self) -> &RefCell<Monitor> {
        &self.monitor
    }
}

/// One unmeasured round proves the setup: exactly the 100k commit in one tick.
fn prove(fx: &impl Armed) {
    fx.arm();
    assert_eq!(fx.tick().events.len(), EXPIRE_CLIENTS);
}

/// Benchmarks the committing tick as `name`, then checks every measured tick committed all of
/// them (and none went Offline) and notes how many ticks were measured.
fn measure_commit_tick(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, fx: &impl Armed) {
    g.bench_function(name, |b| {
        b.iter_batched(|| fx.arm(), |()| fx.tick(), BatchSize::PerIteration)
    });
    let stats = fx.monitor().borrow().stats();
    assert_eq!(
        stats.suspected % EXPIRE_CLIENTS as u64,
        0,
        "every measured tick commits 100k"
    );
    assert_eq!(stats.offline, 0);
    note(
        &format!("{name}.ticks_committing_100k"),
        stats.suspected / EXPIRE_CLIENTS as u64,
    );
}
