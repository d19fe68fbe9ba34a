//! One policy over one workload: the discrete-event loop that drives the real [`Master`] (its
//! allocation and Get paths, and for the rfc policies its monitor and synchronous offboarding;
//! for the legacy policies [`LegacyMonitor`], Mooncake main's monitor) on a [`ManualClock`].
//!
//! Events, in `(time, kind, client)` order so equal times are deterministic: monitor ticks,
//! the end of a heartbeat block (its held pings), client pings, Puts, Gets, and a once-a-second
//! sample of the state gauges. Clients keep to their schedules and every random stream is
//! consumed the same way whatever the master answers.
//!
//! The stall kinds ([`Trouble`]): a paused, partitioned or dead client sends nothing the master
//! hears. While the **master** is paused nothing runs — no tick, no Put or Get served — and each
//! client's ping waits in the socket (one per client: its ping RPC is synchronous); at the first
//! tick after the pause the held pings are applied, then the tick runs (or the other order with
//! `master_pause_ticks_first`). While a **heartbeat block** holds a client's ping, the master and
//! its monitor run on time and serve data; the ping is applied when the block ends, after the
//! ticks at that time (the `block_heartbeats` rule of the replay trace format).
//!
//! Size: about 600 lines, a few over the project's guideline, because every handler reads and
//! writes `Sim`'s private state; the data-plane handlers (`on_put` .. `recompute`) are the part
//! to move out next, behind accessors.

use super::counters::{CrashDetection, Metrics, StateSample};
use super::queue::EventQueue;
use super::workload::{GroundTruth, Traffic, Trouble, Workload, STREAM_PINGS, STREAM_TRAFFIC};
use crate::clock::{Clock, ManualClock};
use crate::config::LivenessConfig;
use crate::liveness::{ClientId, PingStatus};
use crate::master::{AllocationStrategy, Master, MasterOptions, SegmentSpec};
use crate::sim::legacy::{LegacyClientId, LegacyError, LegacyMonitor, LegacyPing};
use indicatif::ProgressBar;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// What happens at an event time; the order breaks ties at equal times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    Tick,
    /// A heartbeat block ends (the `u32` is its index): its held pings are applied.
    Release,
    Ping,
    Put,
    Get,
    Sample,
}

/// One policy to run: the master's configuration and, for a legacy policy, main's TTL.
#[derive(Clone, Debug)]
pub(super) struct Job {
    pub(super) config: LivenessConfig,
    pub(super) legacy_ttl_ms: Option<u64>,
    /// The `policy` label of the run's metrics (`None`: unlabelled, the sweep).
    pub(super) label: Option<&'static str>,
}

#[derive(Clone, Debug, Default)]
pub(super) struct Client {
    pub(super) segment: String,
    pub(super) joined: bool,
    pub(super) last_heard_ms: u64,
    pub(super) suspected_since: Option<u64>,
    /// An incarnation went Offline (legacy: expired) and the client has not remounted since.
    pub(super) offboarded: bool,
    /// An Offline incarnation's offboarding job has not finished.
    pub(super) job_pending: bool,
    /// Legacy: in main's ready set.
    pub(super) ready: bool,
    /// A ping of this client waits for the master (paused master or heartbeat block).
    pub(super) held: bool,
    /// Keys with a replica on this client's current incarnation.
    pub(super) keys: std::collections::BTreeSet<u64>,
    /// The master's id for this client's name, once a mount interned it (it never changes
    /// after that), so a Ping skips the name lookup as main's UUID-keyed Ping does.
    id: Option<ClientId>,
}

/// An object the application keeps: its size and replica count (to recompute it on a miss)
/// and the clients holding its replicas now.
#[derive(Clone, Debug)]
pub(super) struct Key {
    pub(super) size: u64,
    pub(super) replicas: usize,
    pub(super) owners: Vec<u32>,
}

pub(super) struct Sim<'a> {
    pub(super) w: &'a Workload,
    trouble: &'a Trouble,
    pub(super) traffic: &'a Traffic,
    pub(super) master: Master,
    pub(super) clock: Arc<ManualClock>,
    tick_ms: u64,
    /// Main's monitor (legacy policies); `None`: the library's monitor decides.
    legacy: Option<LegacyMonitor>,
    /// Each client's id in `legacy` (empty for the rfc policies).
    legacy_ids: Vec<LegacyClientId>,
    legacy_ready: usize,
    pub(super) clients: Vec<Client>,
    pub(super) by_name: BTreeMap<String, u32>,
    queue: EventQueue<Kind>,
    log_pos: usize,
    ping_rng: ChaCha8Rng,
    pub(super) traffic_rng: ChaCha8Rng,
    pub(super) put_at: f64,
    pub(super) get_at: f64,
    pub(super) pool: VecDeque<u64>,
    pub(super) keys: BTreeMap<u64, Key>,
    pub(super) next_key: u64,
    /// Pings waiting for a paused master to resume.
    held_pause: Vec<u32>,
    /// Pings held by each heartbeat block.
    held_block: Vec<Vec<u32>>,
    pub(super) crash: BTreeMap<usize, CrashDetection>,
    /// The worst state gauges seen since the last sample.
    window: Option<StateSample>,
    pub(super) m: Metrics,
}

/// Runs one policy over `w` and returns its counters; `pb` advances once per simulated second.
pub(super) fn run_policy(
    w: &Workload,
    trouble: &Trouble,
    traffic: &Traffic,
    job: &Job,
    seed: u64,
    pb: &ProgressBar,
) -> Metrics {
    let mut sim = Sim::new(w, trouble, traffic, job, seed);
    sim.start();
    while let Some((t, kind, i)) = sim.next_event() {
        if t > w.duration_ms {
            break;
        }
        sim.dispatch(t, kind, i as usize, pb);
    }
    sim.finish()
}

pub(super) fn key_name(id: u64) -> String {
    format!("k{id:08}")
}

impl<'a> Sim<'a> {
    /// The fleet index of a client the master names by id (every client mounted before it
    /// could transition, so its name is interned).
    pub(super) fn index_of(&self, id: crate::liveness::ClientId) -> usize {
        self.by_name
            .get(&self.master.client_name(id))
            .copied()
            .unwrap_or(u32::MAX) as usize
    }

    fn new(w: &'a Workload, trouble: &'a Trouble, traffic: &'a Traffic, job: &Job, seed: u64) -> Self {
        let clock = Arc::new(ManualClock::new(0));
        let mut legacy = job.legacy_ttl_ms.map(LegacyMonitor::new);
        let legacy_ids = match legacy.as_mut() {
            Some(mon) => w.names.iter().map(|n| mon.register(n)).collect(),
            None => Vec::new(),
        };
        let tick_ms = legacy
            .as_ref()
            .map_or(job.config.monitor_tick_ms, LegacyMonitor::tick_ms)
            .max(1);
        let options = MasterOptions {
            strategy: AllocationStrategy::Random,
            seed,
            // The simulator's executor is its virtual clock: jobs run at the tick.
            offboarding: crate::master::OffboardingDriver::Inline,
            // Drained after every tick and heartbeat, and every event counts: never drop one.
            event_log_capacity: usize::MAX,
            ..MasterOptions::default()
        };
        let master = Master::new(clock.clone() as Arc<dyn Clock>, job.config.clone(), options);
        let mut by_name = BTreeMap::new();
        for (i, name) in w.names.iter().enumerate() {
            by_name.insert(name.clone(), i as u32);
        }
        let clients = w
            .names
            .iter()
            .map(|n| Client {
                segment: format!("{n}:seg0"),
                ..Client::default()
            })
            .collect();
        Self {
            w,
            trouble,
            traffic,
            master,
            clock,
            tick_ms,
            legacy,
            legacy_ids,
            legacy_ready: 0,
            clients,
            by_name,
            queue: EventQueue::new(),
            log_pos: 0,
            ping_rng: super::workload::stream(seed, STREAM_PINGS),
            traffic_rng: super::workload::stream(seed, STREAM_TRAFFIC),
            put_at: 0.0,
            get_at: 0.0,
            pool: VecDeque::new(),
            keys: BTreeMap::new(),
            next_key: 0,
            held_pause: Vec::new(),
            held_block: vec![Vec::new(); w.blocks.len()],
            crash: BTreeMap::new(),
            window: None,
            m: Metrics::default(),
        }
    }

    pub(super) fn push(&mut self, t: u64, kind: Kind, i: usize) {
        self.queue.push(t, kind, i as u32);
    }

    /// Mounts the synthetic fleet at time 0 and schedules the first events.
    fn start(&mut self) {
        if self.w.log.is_none() {
            for i in 0..self.clients.len() {
                self.join(i, 0);
                self.push(self.w.phase_ms[i], Kind::Ping, i);
            }
        }
        self.push(self.tick_ms, Kind::Tick, 0);
        self.push(1_000, Kind::Sample, 0);
        for (b, block) in self.w.blocks.iter().enumerate() {
            self.push(block.span.end_ms, Kind::Release, b);
        }
        self.schedule_put();
        self.schedule_get();
    }

    fn next_event(&mut self) -> Option<(u64, Kind, u32)> {
        let logged = self
            .w
            .log
            .as_ref()
            .and_then(|l| l.get(self.log_pos))
            .map(|&(t, c)| (t, Kind::Ping, c));
        let queued = self.queue.peek();
        match (queued, logged) {
            (Some(q), Some(l)) if l < q => {
                self.log_pos += 1;
                Some(l)
            }
            (Some(_), _) => self.queue.pop(),
            (None, Some(l)) => {
                self.log_pos += 1;
                Some(l)
            }
            (None, None) => None,
        }
    }

    fn dispatch(&mut self, t: u64, kind: Kind, i: usize, pb: &ProgressBar) {
        match kind {
            Kind::Tick => self.on_tick(t),
            Kind::Release => self.on_release(t, i),
            Kind::Ping if self.w.log.is_some() => self.hear(i, t),
            Kind::Ping => self.on_ping(t, i),
            Kind::Put => self.on_put(t),
            Kind::Get => self.on_get(t),
            Kind::Sample => self.on_sample(t, pb),
        }
    }

    pub(super) fn truth(&self) -> Option<&'a GroundTruth> {
        self.w.truth.as_ref()
    }

    /// A tick: nothing while the master is paused; the first one after a pause applies the
    /// buffered pings before (default) or after its check.
    fn on_tick(&mut self, t: u64) {
        self.push(t + self.tick_ms, Kind::Tick, 0);
        if self.w.master_paused(t) {
            return;
        }
        let held = std::mem::take(&mut self.held_pause);
        if !self.w.ticks_first {
            self.apply_held(&held, t);
        }
        self.clock.set_ms(t);
        self.monitor_tick(t);
        if self.w.ticks_first {
            self.apply_held(&held, t);
        }
        self.observe();
    }

    fn monitor_tick(&mut self, t: u64) {
        let Some(mon) = self.legacy.as_mut() else {
            self.master.tick();
            self.drain();
            return;
        };
        // A master that was stopped skips the ticks it missed (main's loop just sleeps on).
        mon.skip_ticks(t);
        let expired = mon.run_ticks_to(&mut self.master, t);
        for e in expired {
            let i = self.by_name[&e.client] as usize;
            self.on_legacy_expiry(i, e.at_ms);
        }
    }

    fn on_legacy_expiry(&mut self, i: usize, t: u64) {
        if std::mem::take(&mut self.clients[i].ready) {
            self.legacy_ready -= 1;
        }
        self.on_offline(i, t);
        // Main has no suspicion: a dead client is "detected" when it expires.
        if let Some(d) = self.crash_entry(i, t) {
            d.suspected_ms.get_or_insert(t);
        }
        self.on_offboarded(i, t);
    }

    fn on_release(&mut self, t: u64, b: usize) {
        let held = std::mem::take(&mut self.held_block[b]);
        self.apply_held(&held, t);
    }

    fn apply_held(&mut self, held: &[u32], t: u64) {
        for &i in held {
            let i = i as usize;
            self.clients[i].held = false;
            self.hear(i, t);
        }
    }

    /// Folds the gauges now into the current second's worst values.
    fn observe(&mut self) {
        let (active, suspected, offline) = if self.legacy.is_some() {
            (self.legacy_ready, 0, 0)
        } else {
            let s = self.master.stats();
            (s.active, s.suspected, s.offline)
        };
        let w = self.window.get_or_insert(StateSample {
            t_s: 0,
            active: usize::MAX,
            suspected: 0,
            offline_pending: 0,
        });
        w.active = w.active.min(active);
        w.suspected = w.suspected.max(suspected);
        w.offline_pending = w.offline_pending.max(offline);
    }

    fn on_sample(&mut self, t: u64, pb: &ProgressBar) {
        self.push(t + 1_000, Kind::Sample, 0);
        self.observe();
        if let Some(mut w) = self.window.take() {
            w.t_s = t / 1_000;
            self.m.samples.push(w);
        }
        pb.inc(1);
    }

    /// A synthetic ping: the client keeps its schedule; the master hears it unless the client is
    /// paused, partitioned or dead or the ping is lost; a paused master or a heartbeat block
    /// holds it (one per client).
    fn on_ping(&mut self, t: u64, i: usize) {
        let truth = self.truth();
        if truth.is_some_and(|g| g.crashed(i, t)) {
            return;
        }
        let (period, j) = (self.trouble.ping_period_ms.max(1), self.trouble.ping_jitter_ms);
        let jitter = if j > 0 {
            self.ping_rng.random_range(0..=2 * j)
        } else {
            0
        };
        self.push((t + period + jitter).saturating_sub(j).max(t + 1), Kind::Ping, i);
        let lost = self.trouble.ping_loss > 0.0 && self.ping_rng.random_bool(self.trouble.ping_loss);
        if lost || truth.is_some_and(|g| g.unreachable(i, t)) || self.clients[i].held {
            return;
        }
        if self.w.master_paused(t) {
            self.clients[i].held = true;
            self.held_pause.push(i as u32);
        } else if let Some(b) = self.w.block(i, t) {
            self.clients[i].held = true;
            self.held_block[b].push(i as u32);
        } else {
            self.hear(i, t);
        }
    }

    /// The master hears client `i` at `t`: its first heartbeat mounts; later ones ping, and a
    /// `NEED_REMOUNT` makes it mount again and ReMount, as a real client does.
    fn hear(&mut self, i: usize, t: u64) {
        self.clock.set_ms(t);
        if !self.clients[i].joined {
            self.join(i, t);
            self.drain();
            return;
        }
        let need_remount = match self.legacy.as_mut() {
            None => self.ping_master(i) == PingStatus::NeedRemount,
            Some(mon) => match mon.ping_id(&mut self.master, self.legacy_ids[i]) {
                Ok(s) => s == LegacyPing::NeedRemount,
                Err(_) => {
                    self.m.pings_rejected += 1;
                    return;
                }
            },
        };
        let c = &mut self.clients[i];
        c.last_heard_ms = t;
        if c.offboarded {
            self.m.returned_clients.insert(i as u32);
        }
        if need_remount {
            self.remount(i);
        }
        self.drain();
    }

    /// The library's Ping of client `i`: by its id once its name is interned (the same answer
    /// as a Ping by name, `NEED_REMOUNT` before any mount succeeded).
    fn ping_master(&mut self, i: usize) -> PingStatus {
        let id = match self.clients[i].id {
            Some(id) => Some(id),
            None => {
                let id = self.master.client_id(&self.w.names[i]);
                self.clients[i].id = id;
                id
            }
        };
        id.map_or(PingStatus::NeedRemount, |id| self.master.ping_id(id, None))
    }

    fn join(&mut self, i: usize, t: u64) {
        self.clients[i].joined = true;
        self.clients[i].last_heard_ms = t;
        if let Some(mon) = self.legacy.as_mut() {
            let (name, seg) = (&self.w.names[i], &self.clients[i].segment);
            if let Err(LegacyError::QueueFull) = mon.mount(&mut self.master, name, seg, self.traffic.segment_bytes) {
                self.m.pings_rejected += 1;
            }
        }
        self.remount(i);
    }

    fn remount(&mut self, i: usize) {
        let w = self.w;
        let (name, size) = (&w.names[i], self.traffic.segment_bytes);
        let segment = self.clients[i].segment.clone();
        let spec = [SegmentSpec { segment, size }];
        let ok = match self.legacy.as_mut() {
            Some(mon) => {
                let was = mon.is_ready(name);
                match mon.remount(&mut self.master, name, &spec) {
                    Ok(()) => {
                        if !was {
                            self.clients[i].ready = true;
                            self.legacy_ready += 1;
                        }
                        true
                    }
                    Err(LegacyError::QueueFull) => {
                        self.m.pings_rejected += 1;
                        false
                    }
                    Err(_) => {
                        self.m.mount_refusals += 1;
                        false
                    }
                }
            }
            None => match self.master.mount(name, &spec[0].segment, size) {
                Ok(()) => self.master.remount(name, &spec).is_ok(),
                Err(_) => {
                    self.m.mount_refusals += 1;
                    false
                }
            },
        };
        if ok && self.clients[i].offboarded {
            self.clients[i].offboarded = false;
            self.m.remounts += 1;
        }
    }
}
