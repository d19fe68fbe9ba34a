//! One policy over one workload: the discrete-event loop that drives the real [`Master`] (its
//! monitor, its synchronous offboarding, its allocation and Get paths) on a [`ManualClock`].
//!
//! Events, in `(time, kind, client)` order so equal times are deterministic: monitor ticks every
//! `monitor_tick_ms`, client pings, Puts, Gets, and a once-a-second sample of the state gauges.
//! During the master stall nothing runs (no tick, no RPC heard), but clients keep to their
//! schedules and every random stream is consumed as usual.

use super::report::{CrashDetection, StateSample};
use super::workload::{Cause, GroundTruth, Traffic, Trouble, Workload, STREAM_PINGS, STREAM_TRAFFIC};
use crate::clock::{Clock, ManualClock};
use crate::config::LivenessConfig;
use crate::liveness::{LivenessState, PingStatus, Transition};
use crate::master::{AllocationStrategy, Master, MasterError, MasterEvent, MasterOptions, ReplicaDesc, SegmentSpec};
use indicatif::ProgressBar;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};
use std::sync::Arc;

/// What happens at an event time; the order breaks ties at equal times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Tick,
    Ping,
    Put,
    Get,
    Sample,
}

/// What one policy did, in raw counters.
#[derive(Clone, Debug, Default)]
pub(super) struct Metrics {
    pub(super) suspicions: u64,
    pub(super) recoveries: u64,
    pub(super) offline_commits: u64,
    pub(super) offboarded: u64,
    pub(super) offboarded_clients: BTreeSet<u32>,
    /// Clients heard again after one of their incarnations went Offline (they were alive).
    pub(super) returned_clients: BTreeSet<u32>,
    pub(super) false_offboards: u64,
    pub(super) false_clients: BTreeSet<u32>,
    /// By [`Cause`]: stall, pause, partition, other.
    pub(super) false_by_cause: [u64; 4],
    pub(super) lost_false: u64,
    pub(super) lost_crash: u64,
    pub(super) lost_total: u64,
    pub(super) puts: u64,
    pub(super) puts_failed: u64,
    pub(super) puts_unreachable: u64,
    pub(super) gets: u64,
    pub(super) gets_not_ready: u64,
    pub(super) gets_not_found: u64,
    pub(super) gets_other: u64,
    pub(super) gets_unreachable: u64,
    pub(super) remounts: u64,
    pub(super) mount_refusals: u64,
    pub(super) suspected_ms_alive: u64,
    pub(super) suspected_ms_dead: u64,
    pub(super) stalls: u64,
    pub(super) stall_ms: u64,
    pub(super) brake_engagements: u64,
    pub(super) retries: u64,
    pub(super) crashes: Vec<CrashDetection>,
    pub(super) samples: Vec<StateSample>,
}

#[derive(Clone, Debug, Default)]
struct Client {
    segment: String,
    joined: bool,
    last_heard_ms: u64,
    suspected_since: Option<u64>,
    /// An incarnation went Offline and the client has not mounted a new one yet.
    offboarded: bool,
    /// Keys with a replica on this client's current incarnation.
    keys: BTreeSet<u64>,
}

struct Sim<'a> {
    w: &'a Workload,
    trouble: &'a Trouble,
    traffic: &'a Traffic,
    master: Master,
    clock: Arc<ManualClock>,
    tick_ms: u64,
    clients: Vec<Client>,
    by_name: BTreeMap<String, u32>,
    queue: BinaryHeap<Reverse<(u64, Kind, u32)>>,
    log_pos: usize,
    ping_rng: ChaCha8Rng,
    traffic_rng: ChaCha8Rng,
    put_at: f64,
    get_at: f64,
    pool: VecDeque<u64>,
    key_owners: BTreeMap<u64, Vec<u32>>,
    next_key: u64,
    crash: BTreeMap<usize, CrashDetection>,
    /// The worst state gauges seen since the last sample.
    window: Option<StateSample>,
    m: Metrics,
}

/// Runs one policy (`config`) over `w` and returns its counters; `pb` advances once per
/// simulated second.
pub(super) fn run_policy(
    w: &Workload,
    trouble: &Trouble,
    traffic: &Traffic,
    config: LivenessConfig,
    seed: u64,
    pb: &ProgressBar,
) -> Metrics {
    let mut sim = Sim::new(w, trouble, traffic, config, seed);
    sim.start();
    while let Some((t, kind, i)) = sim.next_event() {
        if t > w.duration_ms {
            break;
        }
        sim.dispatch(t, kind, i as usize, pb);
    }
    sim.finish()
}

fn key_name(id: u64) -> String {
    format!("k{id:08}")
}

impl<'a> Sim<'a> {
    /// The fleet index of a client the master names by id (every client mounted before it
    /// could transition, so its name is interned).
    fn index_of(&self, id: crate::liveness::ClientId) -> usize {
        self.by_name
            .get(&self.master.client_name(id))
            .copied()
            .unwrap_or(u32::MAX) as usize
    }

    fn new(w: &'a Workload, trouble: &'a Trouble, traffic: &'a Traffic, config: LivenessConfig, seed: u64) -> Self {
        let clock = Arc::new(ManualClock::new(0));
        let tick_ms = config.monitor_tick_ms.max(1);
        let options = MasterOptions {
            strategy: AllocationStrategy::Random,
            seed,
            // The simulator's executor is its virtual clock: jobs run at the tick.
            offboarding: crate::master::OffboardingDriver::Inline,
            ..MasterOptions::default()
        };
        let master = Master::new(clock.clone() as Arc<dyn Clock>, config, options);
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
            clients,
            by_name,
            queue: BinaryHeap::new(),
            log_pos: 0,
            ping_rng: super::workload::stream(seed, STREAM_PINGS),
            traffic_rng: super::workload::stream(seed, STREAM_TRAFFIC),
            put_at: 0.0,
            get_at: 0.0,
            pool: VecDeque::new(),
            key_owners: BTreeMap::new(),
            next_key: 0,
            crash: BTreeMap::new(),
            window: None,
            m: Metrics::default(),
        }
    }

    fn push(&mut self, t: u64, kind: Kind, i: usize) {
        self.queue.push(Reverse((t, kind, i as u32)));
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
        let queued = self.queue.peek().map(|r| r.0);
        match (queued, logged) {
            (Some(q), Some(l)) if l < q => {
                self.log_pos += 1;
                Some(l)
            }
            (Some(_), _) => self.queue.pop().map(|r| r.0),
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
            Kind::Ping if self.w.log.is_some() => self.hear(i, t),
            Kind::Ping => self.on_ping(t, i),
            Kind::Put => self.on_put(t),
            Kind::Get => self.on_get(t),
            Kind::Sample => self.on_sample(t, pb),
        }
    }

    fn truth(&self) -> Option<&'a GroundTruth> {
        self.w.truth.as_ref()
    }

    fn on_tick(&mut self, t: u64) {
        self.push(t + self.tick_ms, Kind::Tick, 0);
        if self.w.stalled(t) {
            return;
        }
        self.clock.set_ms(t);
        self.master.tick();
        self.drain();
        self.observe();
    }

    /// Folds the gauges now into the current second's worst values.
    fn observe(&mut self) {
        let s = self.master.stats();
        let w = self.window.get_or_insert(StateSample {
            t_s: 0,
            active: usize::MAX,
            suspected: 0,
            offline_pending: 0,
        });
        w.active = w.active.min(s.active);
        w.suspected = w.suspected.max(s.suspected);
        w.offline_pending = w.offline_pending.max(s.offline);
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
    /// paused, partitioned or dead, the ping is lost, or the master is stalled.
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
        if lost || self.w.stalled(t) || truth.is_some_and(|g| g.unreachable(i, t)) {
            return;
        }
        self.hear(i, t);
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
        let status = self.master.ping(&self.w.names[i]);
        let c = &mut self.clients[i];
        c.last_heard_ms = t;
        if c.offboarded {
            self.m.returned_clients.insert(i as u32);
        }
        if status == PingStatus::NeedRemount {
            self.remount(i);
        }
        self.drain();
    }

    fn join(&mut self, i: usize, t: u64) {
        self.clients[i].joined = true;
        self.clients[i].last_heard_ms = t;
        self.remount(i);
    }

    fn remount(&mut self, i: usize) {
        let w = self.w;
        let (name, size) = (&w.names[i], self.traffic.segment_bytes);
        let segment = self.clients[i].segment.clone();
        match self.master.mount(name, &segment, size) {
            Ok(()) => {
                let spec = [SegmentSpec { segment, size }];
                if self.master.remount(name, &spec).is_ok() && self.clients[i].offboarded {
                    self.clients[i].offboarded = false;
                    self.m.remounts += 1;
                }
            }
            Err(_) => self.m.mount_refusals += 1,
        }
    }

    fn schedule_put(&mut self) {
        if self.traffic.puts_per_s > 0.0 {
            let gap = Exp::new(self.traffic.puts_per_s / 1_000.0).expect("positive rate");
            self.put_at += gap.sample(&mut self.traffic_rng);
            self.push(self.put_at as u64, Kind::Put, 0);
        }
    }

    fn schedule_get(&mut self) {
        if self.traffic.gets_per_s > 0.0 {
            let gap = Exp::new(self.traffic.gets_per_s / 1_000.0).expect("positive rate");
            self.get_at += gap.sample(&mut self.traffic_rng);
            self.push(self.get_at as u64, Kind::Get, 0);
        }
    }

    fn owners(&self, descs: &[ReplicaDesc]) -> Vec<u32> {
        descs
            .iter()
            .filter_map(|d| self.by_name.get(&d.client).copied())
            .collect()
    }

    fn any_unreachable(&self, owners: &[u32], t: u64) -> bool {
        self.truth()
            .is_some_and(|g| owners.iter().any(|&o| g.unreachable(o as usize, t)))
    }

    fn on_put(&mut self, t: u64) {
        self.schedule_put();
        let tr = self.traffic;
        let size = self
            .traffic_rng
            .random_range(tr.object_min_bytes..=tr.object_max_bytes.max(tr.object_min_bytes));
        let replicas = self.traffic_rng.random_range(1..=tr.max_replicas.max(1));
        if self.w.stalled(t) {
            return;
        }
        self.clock.set_ms(t);
        let id = self.next_key;
        self.next_key += 1;
        let key = key_name(id);
        self.m.puts += 1;
        match self.master.put(&key, size, replicas) {
            Ok(descs) => {
                let _ = self.master.put_end(&key);
                let owners = self.owners(&descs);
                if self.any_unreachable(&owners, t) {
                    self.m.puts_unreachable += 1;
                }
                for &o in &owners {
                    self.clients[o as usize].keys.insert(id);
                }
                self.key_owners.insert(id, owners);
                self.pool.push_back(id);
                self.trim();
            }
            Err(_) => self.m.puts_failed += 1,
        }
    }

    /// The application's own eviction: beyond `max_objects`, the oldest key is removed.
    fn trim(&mut self) {
        while self.pool.len() > self.traffic.max_objects {
            let Some(id) = self.pool.pop_front() else { break };
            let _ = self.master.remove(&key_name(id));
            for o in self.key_owners.remove(&id).unwrap_or_default() {
                self.clients[o as usize].keys.remove(&id);
            }
        }
    }

    fn on_get(&mut self, t: u64) {
        self.schedule_get();
        let u: f64 = self.traffic_rng.random();
        if self.w.stalled(t) || self.pool.is_empty() {
            return;
        }
        let n = self.pool.len();
        let id = self.pool[((u * n as f64) as usize).min(n - 1)];
        self.clock.set_ms(t);
        self.m.gets += 1;
        match self.master.get(&key_name(id)) {
            Ok(descs) => {
                if self.any_unreachable(&self.owners(&descs), t) {
                    self.m.gets_unreachable += 1;
                }
            }
            Err(MasterError::ReplicaIsNotReady) => self.m.gets_not_ready += 1,
            Err(MasterError::ObjectNotFound) => self.m.gets_not_found += 1,
            Err(_) => self.m.gets_other += 1,
        }
    }

    fn drain(&mut self) {
        for ev in self.master.take_events() {
            match ev {
                MasterEvent::Transition(tr) => self.on_transition(tr),
                MasterEvent::StallDetected { ms, .. } => {
                    self.m.stalls += 1;
                    self.m.stall_ms += ms;
                }
                MasterEvent::MassSuspicionBrake { engaged, .. } => self.m.brake_engagements += u64::from(engaged),
                MasterEvent::OffboardingRetry { .. } => self.m.retries += 1,
                MasterEvent::Offboarded { client, at_ms, .. } => self.on_offboarded(self.index_of(client), at_ms),
            }
        }
    }

    /// The detection record of crashed client `i`, if it had crashed by `t`.
    fn crash_entry(&mut self, i: usize, t: u64) -> Option<&mut CrashDetection> {
        let crash_ms = self.truth()?.crash_ms[i].filter(|c| *c <= t)?;
        let name = &self.w.names[i];
        Some(self.crash.entry(i).or_insert_with(|| CrashDetection {
            client: name.clone(),
            crash_ms,
            last_ping_ms: 0,
            suspected_ms: None,
            offline_ms: None,
        }))
    }

    fn on_transition(&mut self, tr: Transition) {
        let (i, t) = (self.index_of(tr.client), tr.at_ms);
        match (tr.from, tr.to) {
            (LivenessState::Active, LivenessState::Suspected) => {
                self.m.suspicions += 1;
                self.clients[i].suspected_since = Some(t);
                if let Some(d) = self.crash_entry(i, t) {
                    d.suspected_ms.get_or_insert(t);
                }
            }
            (LivenessState::Suspected, LivenessState::Active) => {
                self.m.recoveries += 1;
                self.close_suspicion(i, t);
            }
            (_, LivenessState::Offline) => {
                self.m.offline_commits += 1;
                self.close_suspicion(i, t);
                self.clients[i].offboarded = true;
                self.m.offboarded_clients.insert(i as u32);
                self.classify_offline(i, t);
            }
            _ => {}
        }
    }

    fn classify_offline(&mut self, i: usize, t: u64) {
        let Some(truth) = self.truth() else { return };
        if truth.crashed(i, t) {
            if let Some(d) = self.crash_entry(i, t) {
                d.offline_ms.get_or_insert(t);
            }
            return;
        }
        self.m.false_offboards += 1;
        self.m.false_clients.insert(i as u32);
        let cause = truth.cause(i, self.clients[i].last_heard_ms, t, self.w.stall);
        let slot = match cause {
            Cause::Stall => 0,
            Cause::Pause => 1,
            Cause::Partition => 2,
            Cause::Other => 3,
        };
        self.m.false_by_cause[slot] += 1;
    }

    /// Ends client `i`'s Suspected interval at `t`, split into time alive and time dead.
    fn close_suspicion(&mut self, i: usize, t: u64) {
        let Some(s) = self.clients[i].suspected_since.take() else {
            return;
        };
        let crash = self.truth().and_then(|g| g.crash_ms[i]).unwrap_or(u64::MAX);
        let dead = t.saturating_sub(s.max(crash));
        self.m.suspected_ms_dead += dead;
        self.m.suspected_ms_alive += t.saturating_sub(s) - dead;
    }

    /// Offboarding of client `i`'s incarnation completed: which of its keys went with it?
    fn on_offboarded(&mut self, i: usize, t: u64) {
        self.m.offboarded += 1;
        for id in std::mem::take(&mut self.clients[i].keys) {
            if !self.master.objects().contains_key(&key_name(id)) {
                self.lose(id, t);
            }
        }
    }

    fn lose(&mut self, id: u64, t: u64) {
        let owners = self.key_owners.remove(&id).unwrap_or_default();
        for &o in &owners {
            self.clients[o as usize].keys.remove(&id);
        }
        self.m.lost_total += 1;
        if let Some(g) = self.truth() {
            if owners.iter().any(|&o| !g.crashed(o as usize, t)) {
                self.m.lost_false += 1;
            } else {
                self.m.lost_crash += 1;
            }
        }
    }

    fn finish(mut self) -> Metrics {
        let end = self.w.duration_ms;
        for i in 0..self.clients.len() {
            self.close_suspicion(i, end);
            if self.truth().is_some_and(|g| g.crash_ms[i].is_some()) {
                let last = self.clients[i].last_heard_ms;
                if let Some(d) = self.crash_entry(i, u64::MAX) {
                    d.last_ping_ms = last;
                    // Suspected before it died (e.g. during a mass suspicion): detected at once.
                    if d.offline_ms.is_some() && d.suspected_ms.is_none() {
                        d.suspected_ms = Some(d.crash_ms);
                    }
                }
            }
        }
        self.m.crashes = std::mem::take(&mut self.crash).into_values().collect();
        self.m
    }
}
