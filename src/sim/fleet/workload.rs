//! The trouble schedule and the ground truth, drawn from the seed before any policy runs, so
//! every policy sees exactly the same fleet, the same pauses, partitions, stall and crashes.
//!
//! Random streams (all `ChaCha8Rng::seed_from_u64(seed)` on their own stream number):
//! [`STREAM_TROUBLE`] here, [`STREAM_PINGS`] for per-ping jitter and loss, [`STREAM_TRAFFIC`]
//! for Put/Get arrivals, sizes and key choices. Each stream is consumed the same way whatever
//! the master answers, so the policies differ only in what the master decides.

use super::heartbeats::HeartbeatEvent;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, LogNormal};
use std::collections::BTreeMap;

/// Stream of the trouble schedule.
pub(super) const STREAM_TROUBLE: u64 = 1;
/// Stream of per-ping jitter and loss.
pub(super) const STREAM_PINGS: u64 = 2;
/// Stream of the Put/Get traffic.
pub(super) const STREAM_TRAFFIC: u64 = 3;

/// The named, seeded distributions of trouble (see the module documentation of `fleet`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Trouble {
    /// GC/process pauses: expected pauses per client per minute (a Poisson process over the
    /// fleet; each pause hits a uniformly chosen client that never crashes).
    pub pauses_per_client_per_min: f64,
    /// Pause duration: log-normal with this median, seconds...
    pub pause_median_s: f64,
    /// ...and this σ of the underlying normal (heavy right tail)...
    pub pause_sigma: f64,
    /// ...clamped to at most this, seconds.
    pub pause_max_s: f64,
    /// Network partitions: how many (each at a uniform time in [15 %, 85 %] of the run).
    pub partitions: usize,
    /// Fraction of the fleet each partition cuts off (chosen uniformly, crash victims excluded).
    pub partition_fraction: f64,
    /// Partition duration: uniform in [`partition_min_s`, `partition_max_s`], seconds.
    pub partition_min_s: f64,
    /// Upper bound of the partition duration, seconds.
    pub partition_max_s: f64,
    /// Master stall length, seconds (0: none). No tick runs and no RPC is heard during it.
    pub stall_s: f64,
    /// When the stall starts, seconds; `None`: uniform in [35 %, 65 %] of the run.
    pub stall_at_s: Option<f64>,
    /// Fraction of the fleet that crashes for good (rounded, at least one when > 0), each at a
    /// uniform time in [10 %, 55 %] of the run.
    pub crash_fraction: f64,
    /// Ping period, ms.
    pub ping_period_ms: u64,
    /// Per-ping jitter: each next ping is `period ± jitter` ms later (uniform).
    pub ping_jitter_ms: u64,
    /// Probability that one ping is lost on the network.
    pub ping_loss: f64,
}

impl Default for Trouble {
    fn default() -> Self {
        Self {
            pauses_per_client_per_min: 0.05,
            pause_median_s: 0.8,
            pause_sigma: 1.2,
            pause_max_s: 25.0,
            partitions: 2,
            partition_fraction: 0.05,
            partition_min_s: 8.0,
            partition_max_s: 20.0,
            stall_s: 12.0,
            stall_at_s: None,
            crash_fraction: 0.005,
            ping_period_ms: 1_000,
            ping_jitter_ms: 50,
            ping_loss: 0.005,
        }
    }
}

impl Trouble {
    /// No trouble at all (healthy fleet, no stall, no crash); a base for custom scenarios.
    pub fn none() -> Self {
        Self {
            pauses_per_client_per_min: 0.0,
            partitions: 0,
            stall_s: 0.0,
            crash_fraction: 0.0,
            ping_loss: 0.0,
            ..Self::default()
        }
    }
}

/// The Put/Get traffic.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Traffic {
    /// Puts per simulated second (Poisson arrivals); each is Put then PutEnd.
    pub puts_per_s: f64,
    /// Gets per simulated second (Poisson arrivals), of a uniformly chosen key that should exist.
    pub gets_per_s: f64,
    /// Objects kept: beyond this the oldest key is removed (the application's own eviction).
    pub max_objects: usize,
    /// Replicas per Put: uniform in 1..=`max_replicas`.
    pub max_replicas: usize,
    /// Object size, bytes: uniform in [`object_min_bytes`, `object_max_bytes`].
    pub object_min_bytes: u64,
    /// Upper bound of the object size.
    pub object_max_bytes: u64,
    /// Each client mounts one segment of this size.
    pub segment_bytes: u64,
}

impl Default for Traffic {
    fn default() -> Self {
        Self {
            puts_per_s: 200.0,
            gets_per_s: 400.0,
            max_objects: 20_000,
            max_replicas: 2,
            object_min_bytes: 256 << 10,
            object_max_bytes: 4 << 20,
            segment_bytes: 1 << 30,
        }
    }
}

/// A half-open interval of simulated time, ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub(super) struct Interval {
    /// Start, ms.
    pub(super) start_ms: u64,
    /// End (exclusive), ms.
    pub(super) end_ms: u64,
}

impl Interval {
    fn contains(&self, t: u64) -> bool {
        (self.start_ms..self.end_ms).contains(&t)
    }

    /// Length of the overlap with `(a, b]`, ms.
    pub(super) fn overlap(&self, a: u64, b: u64) -> u64 {
        b.min(self.end_ms).saturating_sub(a.max(self.start_ms))
    }
}

/// What really happened to each client (known only in the synthetic scenario).
#[derive(Clone, Debug, Default)]
pub(super) struct GroundTruth {
    pub(super) pauses: Vec<Vec<Interval>>,
    pub(super) partitions: Vec<Vec<Interval>>,
    pub(super) crash_ms: Vec<Option<u64>>,
}

/// Why a client was silent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cause {
    Stall,
    Pause,
    Partition,
    Other,
}

impl GroundTruth {
    /// Crashed at or before `t`?
    pub(super) fn crashed(&self, client: usize, t: u64) -> bool {
        self.crash_ms[client].is_some_and(|c| c <= t)
    }

    /// Can nobody reach `client` at `t` (paused, partitioned or crashed)?
    pub(super) fn unreachable(&self, client: usize, t: u64) -> bool {
        self.crashed(client, t)
            || self.pauses[client].iter().any(|i| i.contains(t))
            || self.partitions[client].iter().any(|i| i.contains(t))
    }

    /// The trouble that covers most of the silence `(from, to]` of `client`.
    pub(super) fn cause(&self, client: usize, from: u64, to: u64, stall: Option<Interval>) -> Cause {
        let sum = |v: &[Interval]| v.iter().map(|i| i.overlap(from, to)).sum::<u64>();
        let candidates = [
            (sum(&self.pauses[client]), Cause::Pause),
            (sum(&self.partitions[client]), Cause::Partition),
            (stall.map_or(0, |s| s.overlap(from, to)), Cause::Stall),
        ];
        candidates
            .into_iter()
            .filter(|(ms, _)| *ms > 0)
            .max_by_key(|(ms, _)| *ms)
            .map_or(Cause::Other, |(_, c)| c)
    }
}

/// A partition as the report shows it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PartitionEvent {
    /// Start, seconds.
    pub at_s: f64,
    /// Clients cut off.
    pub clients: usize,
    /// Duration, seconds.
    pub duration_s: f64,
}

/// The master stall as the report shows it.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct StallEvent {
    /// Start, seconds.
    pub at_s: f64,
    /// Duration, seconds.
    pub duration_s: f64,
}

/// A crash as the report shows it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CrashEvent {
    /// The client.
    pub client: String,
    /// When it died, seconds.
    pub at_s: f64,
}

/// The drawn trouble, summarized.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct WorkloadSummary {
    /// GC/process pauses drawn.
    pub pauses: usize,
    /// Median pause, seconds.
    pub pause_median_s: f64,
    /// 99th percentile pause, seconds.
    pub pause_p99_s: f64,
    /// Longest pause, seconds.
    pub pause_max_s: f64,
    /// Pauses of 9 s or more (long enough to matter for a 10 s TTL).
    pub pauses_over_9s: usize,
    /// Partitions.
    pub partitions: Vec<PartitionEvent>,
    /// The master stall, if any.
    pub stall: Option<StallEvent>,
    /// Crashes, by time.
    pub crashes: Vec<CrashEvent>,
}

/// Everything a run needs that does not depend on the policy.
#[derive(Clone, Debug)]
pub(super) struct Workload {
    pub(super) names: Vec<String>,
    pub(super) duration_ms: u64,
    /// `None` in heartbeat mode: nobody knows what really happened.
    pub(super) truth: Option<GroundTruth>,
    pub(super) stall: Option<Interval>,
    /// Phase of each client's first ping, ms (synthetic mode).
    pub(super) phase_ms: Vec<u64>,
    /// Heartbeat mode: (time, client) sorted by time.
    pub(super) log: Option<Vec<(u64, u32)>>,
    pub(super) summary: WorkloadSummary,
}

pub(super) fn ms(s: f64) -> u64 {
    (s * 1000.0).round().max(0.0) as u64
}

pub(super) fn secs(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

fn rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(stream);
    r
}

pub(super) fn stream(seed: u64, stream_no: u64) -> ChaCha8Rng {
    rng(seed, stream_no)
}

/// Client name of index `i` in a fleet of `n`.
pub(super) fn client_name(i: usize) -> String {
    format!("c{i:04}")
}

impl Workload {
    /// The synthetic scenario: `clients` clients for `duration_s`, trouble drawn from `seed`.
    pub(super) fn synthetic(clients: usize, duration_s: u64, seed: u64, t: &Trouble) -> Self {
        let duration_ms = duration_s * 1000;
        let mut r = rng(seed, STREAM_TROUBLE);
        let names: Vec<String> = (0..clients).map(client_name).collect();
        let phase_ms = (0..clients)
            .map(|_| r.random_range(0..t.ping_period_ms.max(1)))
            .collect();
        let mut truth = GroundTruth {
            pauses: vec![Vec::new(); clients],
            partitions: vec![Vec::new(); clients],
            crash_ms: vec![None; clients],
        };
        let mut summary = WorkloadSummary::default();
        let crashed = draw_crashes(&mut r, &mut truth, &names, duration_ms, t, &mut summary);
        let survivors: Vec<usize> = (0..clients).filter(|i| !crashed.contains(i)).collect();
        draw_pauses(&mut r, &mut truth, &survivors, duration_ms, t, &mut summary);
        draw_partitions(&mut r, &mut truth, &survivors, duration_ms, t, &mut summary);
        let stall = (t.stall_s > 0.0).then(|| {
            let start = t
                .stall_at_s
                .map_or_else(|| r.random_range(duration_ms * 35 / 100..=duration_ms * 65 / 100), ms);
            Interval {
                start_ms: start,
                end_ms: start + ms(t.stall_s),
            }
        });
        summary.stall = stall.map(|s| StallEvent {
            at_s: secs(s.start_ms),
            duration_s: secs(s.end_ms - s.start_ms),
        });
        Self {
            names,
            duration_ms,
            truth: Some(truth),
            stall,
            phase_ms,
            log: None,
            summary,
        }
    }

    /// Heartbeat mode: the fleet is the clients of the log; time starts at its first line and
    /// ends one second after its last.
    pub(super) fn from_log(events: &[HeartbeatEvent]) -> Self {
        let t0 = events.iter().map(|e| e.t_ms).min().unwrap_or(0);
        let t1 = events.iter().map(|e| e.t_ms).max().unwrap_or(0);
        let mut index = BTreeMap::new();
        for e in events {
            index.insert(e.client.clone(), 0u32);
        }
        let names: Vec<String> = index.keys().cloned().collect();
        for (i, v) in index.values_mut().enumerate() {
            *v = i as u32;
        }
        let mut log: Vec<(u64, u32)> = events.iter().map(|e| (e.t_ms - t0, index[&e.client])).collect();
        log.sort();
        Self {
            phase_ms: vec![0; names.len()],
            names,
            duration_ms: t1 - t0 + 1_000,
            truth: None,
            stall: None,
            log: Some(log),
            summary: WorkloadSummary::default(),
        }
    }

    /// Is the master stalled at `t`?
    pub(super) fn stalled(&self, t: u64) -> bool {
        self.stall.is_some_and(|s| s.contains(t))
    }
}

fn draw_crashes(
    r: &mut ChaCha8Rng,
    truth: &mut GroundTruth,
    names: &[String],
    duration_ms: u64,
    t: &Trouble,
    summary: &mut WorkloadSummary,
) -> Vec<usize> {
    let n = names.len();
    let mut k = (n as f64 * t.crash_fraction).round() as usize;
    if t.crash_fraction > 0.0 && n > 1 {
        k = k.clamp(1, n - 1);
    }
    let mut all: Vec<usize> = (0..n).collect();
    let (victims, _) = all.partial_shuffle(r, k);
    let mut victims = victims.to_vec();
    victims.sort_unstable();
    for &v in &victims {
        let at = r.random_range(duration_ms / 10..=duration_ms * 55 / 100);
        truth.crash_ms[v] = Some(at);
        summary.crashes.push(CrashEvent {
            client: names[v].clone(),
            at_s: secs(at),
        });
    }
    summary
        .crashes
        .sort_by(|a, b| a.at_s.total_cmp(&b.at_s).then(a.client.cmp(&b.client)));
    victims
}

fn draw_pauses(
    r: &mut ChaCha8Rng,
    truth: &mut GroundTruth,
    survivors: &[usize],
    duration_ms: u64,
    t: &Trouble,
    summary: &mut WorkloadSummary,
) {
    let rate_per_ms = survivors.len() as f64 * t.pauses_per_client_per_min / 60_000.0;
    if rate_per_ms <= 0.0 || survivors.is_empty() {
        return;
    }
    let gap = Exp::new(rate_per_ms).expect("positive pause rate");
    let len = LogNormal::new(t.pause_median_s.max(1e-3).ln(), t.pause_sigma.max(0.0)).expect("valid log-normal");
    let mut durations = Vec::new();
    let mut at = 0.0f64;
    loop {
        at += gap.sample(r);
        if at >= duration_ms as f64 {
            break;
        }
        let client = survivors[r.random_range(0..survivors.len())];
        let d = ms(len.sample(r).clamp(0.05, t.pause_max_s.max(0.05)));
        let start = at as u64;
        truth.pauses[client].push(Interval {
            start_ms: start,
            end_ms: start + d,
        });
        durations.push(d);
    }
    durations.sort_unstable();
    summary.pauses = durations.len();
    summary.pause_median_s = secs(percentile(&durations, 0.5));
    summary.pause_p99_s = secs(percentile(&durations, 0.99));
    summary.pause_max_s = secs(durations.last().copied().unwrap_or(0));
    summary.pauses_over_9s = durations.iter().filter(|d| **d >= 9_000).count();
}

fn draw_partitions(
    r: &mut ChaCha8Rng,
    truth: &mut GroundTruth,
    survivors: &[usize],
    duration_ms: u64,
    t: &Trouble,
    summary: &mut WorkloadSummary,
) {
    let k = ((survivors.len() as f64 * t.partition_fraction).round() as usize).min(survivors.len());
    let mut events = Vec::new();
    for _ in 0..t.partitions {
        let start = r.random_range(duration_ms * 15 / 100..=duration_ms * 85 / 100);
        let (lo, hi) = (ms(t.partition_min_s), ms(t.partition_max_s.max(t.partition_min_s)));
        let d = r.random_range(lo..=hi);
        let mut pool = survivors.to_vec();
        let (cut, _) = pool.partial_shuffle(r, k);
        for &c in cut.iter() {
            truth.partitions[c].push(Interval {
                start_ms: start,
                end_ms: start + d,
            });
        }
        events.push(PartitionEvent {
            at_s: secs(start),
            clients: k,
            duration_s: secs(d),
        });
    }
    events.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    summary.partitions = events;
}

/// Nearest-rank percentile of sorted values (`q` in [0, 1]); 0 when empty.
pub(super) fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}
