//! The threads of a run: data-plane workers (the master's RPC threads: they also serve
//! join-storm's ReMounts, see `storm`), the ping driver (its own thread or the workers), the
//! monitor and the offboarding worker. The scenario script (see `scenarios`) runs on the
//! calling thread and steers them through [`Ctx`].
//!
//! # Ground rules
//! - Everything shared lives in [`Ctx`] and is an atomic or immutable; each thread measures
//!   into its own [`Recorder`], merged after the threads are joined.
//! - Pings follow a fixed schedule: slot `k` is due at `k · interval / clients` after the start
//!   and pings client `k mod clients`, so every client is due once per interval. A thread claims
//!   a due slot with one CAS on `next_slot` (each slot is claimed exactly once). A blocked ping
//!   thread (or, in `shared` mode, a pool whose workers are all blocked) leaves slots due: they
//!   are served late, back to back, once it unblocks — the backlog an RPC server would see.
//!   The clients are closed-loop, as Mooncake's heartbeat thread is (one Ping in flight, the
//!   next one an interval after the answer: `client_service.cpp:4802-4860` at `c19e7c52f`): a
//!   slot that came due while its client's previous Ping had not returned is skipped, so a
//!   backlog holds at most one Ping per client.
//! - `pinging[c]` says whether client `c` is supposed to ping (false for a joiner before it
//!   joined and for the victim once it is silenced). Only clients that kept pinging count for
//!   false transitions and gaps.
//! - Orderings: flags are `Release`/`Acquire` so that a thread seeing `stop`, `data_plane` or
//!   a phase also sees what the script did before setting it; counters are `Relaxed`.

use super::options::{Options, PingThread, ServeOrder};
use super::paths::{Job, MasterPaths};
use super::stats::{LastSeen, Op, Recorder, NEVER, OTHER};
use super::storm::RemountQueue;
use crate::liveness::{ClientId, LivenessState, PingStatus};
use crate::master::SegmentSpec;
use crate::sync::{AtomicBool, AtomicU64, Ordering};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The dedicated ping thread sleeps at least this long between two rounds of due pings.
const PING_WAKE_MIN: Duration = Duration::from_millis(1);

/// State shared by the threads of one run.
pub(super) struct Ctx<'a> {
    /// The design under test.
    pub(super) paths: &'a dyn MasterPaths,
    /// The knobs.
    pub(super) opts: &'a Options,
    /// Where this run's pings are served.
    pub(super) ping_thread: PingThread,
    /// Time zero of the run.
    pub(super) start: Instant,
    /// Every thread stops.
    pub(super) stop: AtomicBool,
    /// Workers issue data-plane requests (pings are served either way).
    pub(super) data_plane: AtomicBool,
    /// Transitions count as false only while measuring.
    pub(super) measuring: AtomicBool,
    /// `stats::BEFORE`, `DURING` or `OTHER`.
    pub(super) phase: AtomicU64,
    /// Client names, in schedule order.
    pub(super) clients: Vec<String>,
    /// Whether each client is supposed to ping now.
    pub(super) pinging: Vec<AtomicBool>,
    /// Last recorded ping per client.
    pub(super) last_seen: LastSeen,
    /// When each client's last Ping (of any answer) returned, µs; `NEVER` before the first.
    returned: LastSeen,
    next_slot: AtomicU64,
    slot_ns: u64,
    /// The client expected to go Offline (offboard-big), excluded from the false counts.
    pub(super) victim: OnceLock<ClientId>,
    /// Active → Suspected of clients that kept pinging, while measuring.
    pub(super) false_suspected: AtomicU64,
    /// Suspected → Offline of clients that kept pinging, while measuring.
    pub(super) false_offline: AtomicU64,
    /// The victim's offboarding job completed.
    pub(super) victim_offboarded: AtomicBool,
    /// Preloaded keys (Get targets: `k{i}`).
    pub(super) keys: usize,
    /// join-storm's ReMount requests (the last `--joiners` clients).
    pub(super) storm: RemountQueue,
}

impl std::fmt::Debug for Ctx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx").field("clients", &self.clients.len()).finish()
    }
}

impl<'a> Ctx<'a> {
    /// A run over `clients` (none pinging yet).
    pub(super) fn new(
        paths: &'a dyn MasterPaths,
        opts: &'a Options,
        ping_thread: PingThread,
        clients: Vec<String>,
    ) -> Self {
        let n = clients.len().max(1) as u64;
        let clients_len = clients.len();
        Self {
            paths,
            opts,
            ping_thread,
            start: Instant::now(),
            stop: AtomicBool::new(false),
            data_plane: AtomicBool::new(false),
            measuring: AtomicBool::new(false),
            phase: AtomicU64::new(u64::from(OTHER)),
            pinging: clients.iter().map(|_| AtomicBool::new(false)).collect(),
            last_seen: clients.iter().map(|_| AtomicU64::new(NEVER)).collect(),
            returned: clients.iter().map(|_| AtomicU64::new(NEVER)).collect(),
            clients,
            next_slot: AtomicU64::new(0),
            slot_ns: (opts.ping_interval_ms * 1_000_000 / n).max(1),
            victim: OnceLock::new(),
            false_suspected: AtomicU64::new(0),
            false_offline: AtomicU64::new(0),
            victim_offboarded: AtomicBool::new(false),
            keys: opts.keys,
            storm: RemountQueue::new(
                clients_len - opts.joiners.min(clients_len),
                opts.joiners.min(clients_len),
            ),
        }
    }

    /// µs since the start.
    pub(super) fn now_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    fn phase(&self) -> u8 {
        self.phase.load(Ordering::Acquire) as u8
    }

    /// Starts (or stops) the pings of client `c`.
    pub(super) fn set_pinging(&self, c: usize, on: bool) {
        self.pinging[c].store(on, Ordering::Release);
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Serves the ping slots due by now and by `horizon` (ns since the start, `u64::MAX`: no
    /// limit besides now); returns how many slots it claimed.
    fn due_pings(&self, rec: &mut Recorder, horizon: u64) -> usize {
        let n = self.clients.len() as u64;
        let mut served = 0;
        loop {
            let k = self.next_slot.load(Ordering::Relaxed);
            let due = k.saturating_mul(self.slot_ns);
            if due > horizon || due > self.start.elapsed().as_nanos() as u64 {
                break;
            }
            if self
                .next_slot
                .compare_exchange(k, k + 1, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            served += 1;
            let c = (k % n) as usize;
            if !self.pinging[c].load(Ordering::Acquire) {
                continue;
            }
            // Closed loop: still waiting for its previous answer when this slot came due.
            let returned = self.returned[c].load(Ordering::Relaxed);
            if returned != NEVER && k.saturating_mul(self.slot_ns) / 1000 < returned {
                continue;
            }
            // The phase an operation belongs to is the one it started in.
            let phase = self.phase();
            let t0 = Instant::now();
            let status = self.paths.ping(&self.clients[c]);
            let at = self.now_us();
            self.returned[c].store(at, Ordering::Relaxed);
            let ok = status == PingStatus::Ok;
            rec.op(Op::Ping, phase, t0.elapsed().as_micros() as u64, at, ok);
            if ok {
                rec.ping_recorded(&self.last_seen[c], at);
            }
        }
        served
    }

    /// Time until the next slot is due.
    fn until_next_slot(&self) -> Duration {
        let due = self.next_slot.load(Ordering::Relaxed).saturating_mul(self.slot_ns);
        Duration::from_nanos(due.saturating_sub(self.start.elapsed().as_nanos() as u64))
    }
}

/// The dedicated ping thread: it serves every due slot, then sleeps until the next one is due,
/// but at least [`PING_WAKE_MIN`] — as an RPC io thread serves, per wake-up, every request that
/// arrived since the last. Waking once per slot (every 20 µs at the steady defaults) would
/// preempt a busy data-plane worker tens of thousands of times a second on a 2-core machine
/// (measured: 170 000 context switches in one 12 s `steady --threads 2` run), a cost of the
/// harness, not of either master. A ping is served at most about a millisecond after its slot,
/// the same for both designs; the gap bounds are tens of milliseconds and more.
pub(super) fn ping_thread(ctx: &Ctx<'_>) -> Recorder {
    let mut rec = Recorder::default();
    while !ctx.stopped() {
        ctx.due_pings(&mut rec, u64::MAX);
        let wait = ctx.until_next_slot();
        if !wait.is_zero() {
            std::thread::sleep(wait.clamp(PING_WAKE_MIN, Duration::from_millis(2)));
        }
    }
    rec
}

/// A data-plane worker: a Get-heavy mix (8 Get of preloaded keys : 1 Put : 1 Remove of its own
/// keys); join-storm's requests when they are queued; in `shared` mode, the due pings too, in
/// the order `--serve-order` says (see [`ServeOrder`]).
pub(super) fn worker(ctx: &Ctx<'_>, index: usize) -> Recorder {
    let mut rec = Recorder::default();
    let mut rng = ChaCha8Rng::seed_from_u64(ctx.opts.seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut own: VecDeque<String> = VecDeque::new();
    let mut next = 0u64;
    let shared = ctx.ping_thread == PingThread::Shared;
    let fifo = ctx.opts.serve_order == ServeOrder::Fifo;
    while !ctx.stopped() {
        if shared {
            // fifo: while storm requests wait, only the pings that came due before they arrived
            // go first; pings-first: every due ping.
            let horizon = match ctx.storm.waiting_since() {
                Some(arrived) if fifo => arrived.saturating_duration_since(ctx.start).as_nanos() as u64,
                _ => u64::MAX,
            };
            ctx.due_pings(&mut rec, horizon);
        }
        if let Some(c) = ctx.storm.claim() {
            join(ctx, c, &mut rec);
            continue;
        }
        if !ctx.data_plane.load(Ordering::Acquire) {
            let wait = if shared {
                ctx.until_next_slot()
            } else {
                Duration::from_millis(1)
            };
            std::thread::sleep(wait.clamp(Duration::from_micros(50), Duration::from_millis(1)));
            continue;
        }
        let roll = rng.random_range(0..10u32);
        let phase = ctx.phase();
        let t0 = Instant::now();
        let (op, ok) = match roll {
            0 => {
                let key = format!("w{index}:{next}");
                next += 1;
                let ok = ctx.paths.put(&key, ctx.opts.object_size).is_ok() && ctx.paths.put_end(&key).is_ok();
                if ok {
                    own.push_back(key);
                }
                (Op::Put, ok)
            }
            1 if !own.is_empty() => {
                let key = own.pop_front().unwrap_or_default();
                (Op::Remove, ctx.paths.remove(&key).is_ok())
            }
            _ => {
                let key = format!("k{}", rng.random_range(0..ctx.keys.max(1)));
                (Op::Get, ctx.paths.get(&key).is_ok())
            }
        };
        rec.op(op, phase, t0.elapsed().as_micros() as u64, ctx.now_us(), ok);
    }
    rec
}

/// Serves join-storm's requests of client `c`, as a starting Mooncake client sends them: its
/// MountSegment (`setup`), then the ReMountSegment its first Ping's `NEED_REMOUNT` triggers
/// (`client_service.cpp:4817-4821` → `:4744-4755` at `c19e7c52f`) with the all-shard walk; the
/// latency is the client's, from the storm's arrival to the ReMount's return.
fn join(ctx: &Ctx<'_>, c: usize, rec: &mut Recorder) {
    let name = &ctx.clients[c];
    let specs = [SegmentSpec {
        segment: format!("{name}-seg"),
        size: ctx.opts.segment_size(),
    }];
    let r = ctx
        .paths
        .mount(name, &specs[0].segment, specs[0].size)
        .and_then(|()| ctx.paths.remount(name, &specs, ctx.opts.storm_walk));
    let latency = ctx.storm.arrived().elapsed().as_micros() as u64;
    rec.op(Op::Mount, super::stats::BEFORE, latency, ctx.now_us(), r.is_ok());
    ctx.storm
        .finish(r.map_err(|e| format!("join-storm: remount of {name} failed: {e}")));
}

/// The monitor: ticks every `tick`, counts false transitions, hands jobs to the offboarder.
pub(super) fn monitor_thread(ctx: &Ctx<'_>, tick: Duration, jobs: Sender<Job>) {
    while !ctx.stopped() {
        let out = ctx.paths.tick();
        let measuring = ctx.measuring.load(Ordering::Acquire);
        for t in &out.changes {
            let expected = ctx.victim.get() == Some(&t.client);
            if expected || !measuring {
                continue;
            }
            match (t.from, t.to) {
                (LivenessState::Active, LivenessState::Suspected) => {
                    ctx.false_suspected.fetch_add(1, Ordering::Relaxed);
                }
                (_, LivenessState::Offline) => {
                    ctx.false_offline.fetch_add(1, Ordering::Relaxed);
                }
                _ => {}
            }
        }
        for job in out.jobs {
            // The receiver lives as long as the run; a send error means it is shutting down.
            let _ = jobs.send(job);
        }
        std::thread::sleep(tick);
    }
}

/// The offboarding worker: takes every queued job as one batch (as upstream's worker does)
/// and runs it to completion, retrying what failed after 50 ms; a batch with the victim's job
/// marks the `during` phase.
pub(super) fn offboarding_thread(ctx: &Ctx<'_>, jobs: Receiver<Job>) {
    while !ctx.stopped() {
        let mut batch = match jobs.recv_timeout(Duration::from_millis(20)) {
            Ok(job) => vec![job],
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        batch.extend(jobs.try_iter());
        let is_victim = batch.iter().any(|j| ctx.victim.get() == Some(&j.client()));
        if is_victim {
            ctx.phase.store(u64::from(super::stats::DURING), Ordering::Release);
        }
        loop {
            batch = ctx.paths.run_jobs(batch);
            if batch.is_empty() {
                break;
            }
            if ctx.stopped() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if is_victim {
            ctx.phase.store(u64::from(OTHER), Ordering::Release);
            ctx.victim_offboarded.store(true, Ordering::Release);
        }
    }
}
