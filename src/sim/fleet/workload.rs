//! The trouble schedule and the ground truth, drawn from the seed before any policy runs, so
//! every policy sees exactly the same fleet and the same stalls of every kind: client pauses,
//! partitions, master pauses, heartbeat blocks and crashes.
//!
//! Random streams (all `ChaCha8Rng::seed_from_u64(seed)` on their own stream number):
//! [`STREAM_TROUBLE`] here, [`STREAM_PINGS`] for per-ping jitter and loss, [`STREAM_TRAFFIC`]
//! for Put/Get arrivals, sizes and key choices. Each stream is consumed the same way whatever
//! the master answers, so the policies differ only in what the master decides.

use super::heartbeats::HeartbeatEvent;
pub use super::scenario::Trouble;
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

/// A heartbeat block: pings of its members sent during `span` are held until `span.end_ms`.
#[derive(Clone, Debug)]
pub(super) struct Block {
    pub(super) span: Interval,
    /// Sorted client indices whose pings it holds; `None`: every client.
    pub(super) members: Option<Vec<u32>>,
}

impl Block {
    fn holds(&self, client: usize) -> bool {
        self.members
            .as_ref()
            .is_none_or(|m| m.binary_search(&(client as u32)).is_ok())
    }
}

/// What really happened (known only in the synthetic scenario).
#[derive(Clone, Debug, Default)]
pub(super) struct GroundTruth {
    pub(super) pauses: Vec<Vec<Interval>>,
    pub(super) partitions: Vec<Vec<Interval>>,
    pub(super) crash_ms: Vec<Option<u64>>,
    /// Per client, the half-open hull `[first start, last end)` of all its trouble (a crash
    /// counts as `[crash, ∞)`): outside it the client is reachable, which answers
    /// [`unreachable`](Self::unreachable) for most pings from one dense array (built by
    /// [`seal`](Self::seal)).
    hull: Vec<(u64, u64)>,
}

/// Why a client was silent: the stall kinds, and `Other` (lost pings, jitter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cause {
    ClientPause,
    Partition,
    MasterPause,
    HeartbeatBlocked,
    Other,
}

impl Cause {
    /// Slot in the per-cause counters.
    pub(super) fn slot(self) -> usize {
        self as usize
    }
}

impl GroundTruth {
    /// Crashed at or before `t`?
    pub(super) fn crashed(&self, client: usize, t: u64) -> bool {
        self.crash_ms[client].is_some_and(|c| c <= t)
    }

    /// Computes each client's trouble hull; call once every interval is drawn.
    fn seal(&mut self) {
        self.hull = (0..self.crash_ms.len())
            .map(|c| {
                let spans = self.pauses[c].iter().chain(&self.partitions[c]);
                let crash = self.crash_ms[c].map(|at| (at, u64::MAX));
                spans
                    .map(|i| (i.start_ms, i.end_ms))
                    .chain(crash)
                    .fold((u64::MAX, 0), |(a, b), (s, e)| (a.min(s), b.max(e)))
            })
            .collect();
    }

    /// Can nobody reach `client`'s data at `t` (paused, partitioned or crashed)?
    pub(super) fn unreachable(&self, client: usize, t: u64) -> bool {
        let (first, end) = self.hull[client];
        if !(first..end).contains(&t) {
            return false;
        }
        self.crashed(client, t)
            || self.pauses[client].iter().any(|i| i.contains(t))
            || self.partitions[client].iter().any(|i| i.contains(t))
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

/// A master pause or a heartbeat block as the report shows it.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct StallEvent {
    /// Start, seconds.
    pub at_s: f64,
    /// Duration, seconds.
    pub duration_s: f64,
    /// Clients whose pings it held.
    pub clients: usize,
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
    /// Client pauses drawn.
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
    /// Master pauses (whole process stopped).
    pub master_pauses: Vec<StallEvent>,
    /// Whether the monitor's first check beat the buffered pings on resume.
    pub master_pause_ticks_first: bool,
    /// Heartbeat blocks (Ping path blocked, monitor on time).
    pub heartbeat_blocks: Vec<StallEvent>,
    /// Crashes, by time.
    pub crashes: Vec<CrashEvent>,
}

/// How long after a fleet-wide event its incident window lasts (recovery, re-puts), ms.
pub(super) const INCIDENT_TAIL_MS: u64 = 30_000;

/// Everything a run needs that does not depend on the policy.
#[derive(Clone, Debug)]
pub(super) struct Workload {
    pub(super) names: Vec<String>,
    pub(super) duration_ms: u64,
    /// `None` in heartbeat mode: nobody knows what really happened.
    pub(super) truth: Option<GroundTruth>,
    /// Whole-master pauses, sorted.
    pub(super) master_pauses: Vec<Interval>,
    /// The monitor's first check runs before the buffered pings on resume.
    pub(super) ticks_first: bool,
    /// Heartbeat blocks, sorted by start.
    pub(super) blocks: Vec<Block>,
    /// Fleet-wide incidents (partitions, master pauses, heartbeat blocks), each extended by
    /// [`INCIDENT_TAIL_MS`]: where the incident-window miss rate is measured.
    pub(super) incidents: Vec<Interval>,
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

/// `count` spans: the first at `first_at_s` if given, the others uniform in `[lo %, hi %]` of
/// the run; durations uniform in `[min_s, max_s]`. Sorted by start.
fn draw_spans(
    r: &mut ChaCha8Rng,
    count: usize,
    duration_ms: u64,
    (lo, hi): (u64, u64),
    (min_s, max_s): (f64, f64),
    first_at_s: Option<f64>,
) -> Vec<Interval> {
    let mut out: Vec<Interval> = (0..count)
        .map(|k| {
            let drawn = r.random_range(duration_ms * lo / 100..=duration_ms * hi / 100);
            let start = match (k, first_at_s) {
                (0, Some(at)) => ms(at),
                _ => drawn,
            };
            let d = r.random_range(ms(min_s)..=ms(max_s.max(min_s)));
            Interval {
                start_ms: start,
                end_ms: start + d,
            }
        })
        .collect();
    out.sort_by_key(|i| i.start_ms);
    out
}

fn stall_event(i: &Interval, clients: usize) -> StallEvent {
    StallEvent {
        at_s: secs(i.start_ms),
        duration_s: secs(i.end_ms - i.start_ms),
        clients,
    }
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
            hull: Vec::new(),
        };
        let mut summary = WorkloadSummary::default();
        let crashed = draw_crashes(&mut r, &mut truth, &names, duration_ms, t, &mut summary);
        let survivors: Vec<usize> = (0..clients).filter(|i| !crashed.contains(i)).collect();
        draw_pauses(&mut r, &mut truth, &survivors, duration_ms, t, &mut summary);
        let mut incidents = draw_partitions(&mut r, &mut truth, &survivors, duration_ms, t, &mut summary);
        truth.seal();
        let master_pauses = draw_spans(
            &mut r,
            t.master_pauses,
            duration_ms,
            (35, 65),
            (t.master_pause_min_s, t.master_pause_max_s),
            t.master_pause_at_s,
        );
        summary.master_pauses = master_pauses.iter().map(|i| stall_event(i, clients)).collect();
        summary.master_pause_ticks_first = t.master_pause_ticks_first;
        let spans = draw_spans(
            &mut r,
            t.heartbeat_blocks,
            duration_ms,
            (20, 80),
            (t.heartbeat_block_min_s, t.heartbeat_block_max_s),
            t.heartbeat_block_at_s,
        );
        let k = ((clients as f64 * t.heartbeat_block_fraction).round() as usize).min(clients);
        let blocks: Vec<Block> = spans
            .into_iter()
            .map(|span| {
                let members = (k < clients).then(|| {
                    let mut all: Vec<u32> = (0..clients as u32).collect();
                    let (m, _) = all.partial_shuffle(&mut r, k);
                    let mut m = m.to_vec();
                    m.sort_unstable();
                    m
                });
                Block { span, members }
            })
            .collect();
        summary.heartbeat_blocks = blocks.iter().map(|b| stall_event(&b.span, k)).collect();
        incidents.extend(master_pauses.iter().copied());
        incidents.extend(blocks.iter().map(|b| b.span));
        let incidents = incidents
            .into_iter()
            .map(|i| Interval {
                start_ms: i.start_ms,
                end_ms: i.end_ms + INCIDENT_TAIL_MS,
            })
            .collect();
        Self {
            names,
            duration_ms,
            truth: Some(truth),
            master_pauses,
            ticks_first: t.master_pause_ticks_first,
            blocks,
            incidents,
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
            master_pauses: Vec::new(),
            ticks_first: false,
            blocks: Vec::new(),
            incidents: Vec::new(),
            log: Some(log),
            summary: WorkloadSummary::default(),
        }
    }

    /// The master pause covering `t`, if any.
    pub(super) fn master_pause(&self, t: u64) -> Option<Interval> {
        self.master_pauses.iter().copied().find(|s| s.contains(t))
    }

    /// Is the master process stopped at `t`?
    pub(super) fn master_paused(&self, t: u64) -> bool {
        self.master_pause(t).is_some()
    }

    /// The index of the heartbeat block holding `client`'s pings at `t`, if any.
    pub(super) fn block(&self, client: usize, t: u64) -> Option<usize> {
        self.blocks.iter().position(|b| b.span.contains(t) && b.holds(client))
    }

    /// Is `t` inside a fleet-wide incident window?
    pub(super) fn in_incident(&self, t: u64) -> bool {
        self.incidents.iter().any(|i| i.contains(t))
    }

    /// The trouble that covers most of `client`'s silence `(from, to]`.
    pub(super) fn cause(&self, client: usize, from: u64, to: u64) -> Cause {
        let Some(g) = &self.truth else { return Cause::Other };
        let sum = |v: &[Interval]| v.iter().map(|i| i.overlap(from, to)).sum::<u64>();
        let blocked: u64 = self
            .blocks
            .iter()
            .filter(|b| b.holds(client))
            .map(|b| b.span.overlap(from, to))
            .sum();
        let candidates = [
            (sum(&g.pauses[client]), Cause::ClientPause),
            (sum(&g.partitions[client]), Cause::Partition),
            (sum(&self.master_pauses), Cause::MasterPause),
            (blocked, Cause::HeartbeatBlocked),
        ];
        candidates
            .into_iter()
            .filter(|(ms, _)| *ms > 0)
            .max_by_key(|(ms, _)| *ms)
            .map_or(Cause::Other, |(_, c)| c)
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
) -> Vec<Interval> {
    let k = ((survivors.len() as f64 * t.partition_fraction).round() as usize).min(survivors.len());
    let mut events = Vec::new();
    let mut spans = Vec::new();
    for _ in 0..t.partitions {
        let start = r.random_range(duration_ms * 15 / 100..=duration_ms * 85 / 100);
        let (lo, hi) = (ms(t.partition_min_s), ms(t.partition_max_s.max(t.partition_min_s)));
        let d = r.random_range(lo..=hi);
        spans.push(Interval {
            start_ms: start,
            end_ms: start + d,
        });
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
    spans
}

/// Nearest-rank percentile of sorted values (`q` in [0, 1]); 0 when empty.
pub(super) fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}
