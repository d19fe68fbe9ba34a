//! What the threads measure: latency histograms per operation and phase (hdrhistogram, in
//! microseconds), heartbeat gaps as the master saw them, and a 100 ms timeline for the chart.
//!
//! Each thread owns a [`Recorder`] (no sharing on the hot path); the run merges them at the end.
//! The only shared state is the per-client "last recorded ping" word ([`LastSeen`]): a ping
//! thread swaps in the time its ping returned (the record was updated before the call
//! returned), and the previous value gives the gap.

use crate::sync::{AtomicU64, Ordering};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;

/// Operation kinds, in JSON key order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Op {
    /// PutStart + PutEnd.
    Put,
    /// GetReplicaList.
    Get,
    /// Remove.
    Remove,
    /// Ping.
    Ping,
    /// Mount / ReMount.
    Mount,
}

impl Op {
    /// Every kind.
    pub(super) const ALL: [Op; 5] = [Op::Put, Op::Get, Op::Remove, Op::Ping, Op::Mount];

    /// The JSON key.
    pub(super) fn key(self) -> &'static str {
        match self {
            Op::Put => "put",
            Op::Get => "get",
            Op::Remove => "remove",
            Op::Ping => "ping",
            Op::Mount => "mount",
        }
    }
}

/// Phases of the offboard-big and snapshot scenarios.
pub(super) const BEFORE: u8 = 0;
/// The offboarding job (or the snapshot) is running.
pub(super) const DURING: u8 = 1;
/// Anything else (setup gaps, waiting for the Offline commit, after).
pub(super) const OTHER: u8 = 2;
const PHASES: usize = 3;

/// Timeline resolution.
pub(super) const BUCKET_MS: u64 = 100;

/// "Never pinged" in a [`LastSeen`] word.
pub(super) const NEVER: u64 = u64::MAX;

/// Per-client time of the last recorded ping, µs since the run's start.
pub(super) type LastSeen = Vec<AtomicU64>;

/// The gap between two recorded pings of one client (`None` for its first).
pub(super) fn gap_us(prev: u64, now: u64) -> Option<u64> {
    (prev != NEVER).then(|| now.saturating_sub(prev))
}

/// Percentiles of one histogram, µs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest value recorded.
    pub max: u64,
}

/// Extracts [`Latency`] from `h` (all zero when empty).
pub(super) fn summarize(h: &Histogram<u64>) -> Latency {
    if h.is_empty() {
        return Latency::default();
    }
    Latency {
        p50: h.value_at_quantile(0.50),
        p99: h.value_at_quantile(0.99),
        p999: h.value_at_quantile(0.999),
        max: h.max(),
    }
}

fn histogram() -> Histogram<u64> {
    // 3 significant digits, auto-resizing: values up to hours in µs fit.
    let mut h = Histogram::new(3).unwrap_or_else(|_| unreachable!("3 significant figures is valid"));
    h.auto(true);
    h
}

/// The worst value per timeline bucket, per series.
#[derive(Clone, Debug, Default)]
pub(super) struct Timeline {
    /// Worst latency per op kind (µs), indexed like [`Op::ALL`].
    pub(super) latency: Vec<[u64; 5]>,
    /// Worst heartbeat gap (µs) recorded in the bucket.
    pub(super) gap: Vec<u64>,
}

impl Timeline {
    fn slot(&mut self, at_us: u64) -> usize {
        let i = (at_us / 1000 / BUCKET_MS) as usize;
        if self.gap.len() <= i {
            self.gap.resize(i + 1, 0);
            self.latency.resize(i + 1, [0; 5]);
        }
        i
    }

    fn merge(&mut self, other: &Timeline) {
        if let Some(last) = other.gap.len().checked_sub(1) {
            self.slot(last as u64 * BUCKET_MS * 1000);
        }
        for (i, g) in other.gap.iter().enumerate() {
            self.gap[i] = self.gap[i].max(*g);
            for k in 0..5 {
                self.latency[i][k] = self.latency[i][k].max(other.latency[i][k]);
            }
        }
    }
}

/// One thread's measurements.
#[derive(Clone, Debug)]
pub(super) struct Recorder {
    hist: Vec<Vec<Histogram<u64>>>,
    gaps: Histogram<u64>,
    /// Data-plane operations completed (put, get, remove).
    pub(super) ops: u64,
    /// Operations that returned an error.
    pub(super) errors: u64,
    /// The chart's series.
    pub(super) timeline: Timeline,
}

impl Default for Recorder {
    fn default() -> Self {
        Self {
            hist: (0..PHASES)
                .map(|_| Op::ALL.iter().map(|_| histogram()).collect())
                .collect(),
            gaps: histogram(),
            ops: 0,
            errors: 0,
            timeline: Timeline::default(),
        }
    }
}

impl Recorder {
    /// Records one operation of `op` that took `us`, finished at `at_us`, in `phase`.
    pub(super) fn op(&mut self, op: Op, phase: u8, us: u64, at_us: u64, ok: bool) {
        let _ = self.hist[usize::from(phase.min(OTHER))][op as usize].record(us);
        if matches!(op, Op::Put | Op::Get | Op::Remove) {
            self.ops += 1;
        }
        self.errors += u64::from(!ok);
        let i = self.timeline.slot(at_us);
        let cell = &mut self.timeline.latency[i][op as usize];
        *cell = (*cell).max(us);
    }

    /// Records that a ping of the client owning `last` was recorded at `now_us`.
    pub(super) fn ping_recorded(&mut self, last: &AtomicU64, now_us: u64) {
        if let Some(g) = gap_us(last.swap(now_us, Ordering::AcqRel), now_us) {
            self.gap(g, now_us);
        }
    }

    /// Records a heartbeat gap of `g` µs ending at `at_us`.
    pub(super) fn gap(&mut self, g: u64, at_us: u64) {
        let _ = self.gaps.record(g);
        let i = self.timeline.slot(at_us);
        self.timeline.gap[i] = self.timeline.gap[i].max(g);
    }

    /// Adds `other` into `self`.
    pub(super) fn merge(&mut self, other: &Recorder) {
        for (mine, theirs) in self.hist.iter_mut().zip(&other.hist) {
            for (a, b) in mine.iter_mut().zip(theirs) {
                let _ = a.add(b);
            }
        }
        let _ = self.gaps.add(&other.gaps);
        self.ops += other.ops;
        self.errors += other.errors;
        self.timeline.merge(&other.timeline);
    }

    /// Latency per op kind over every phase.
    pub(super) fn latency(&self) -> BTreeMap<&'static str, Latency> {
        Op::ALL
            .iter()
            .map(|op| {
                let mut all = histogram();
                for phase in &self.hist {
                    let _ = all.add(&phase[*op as usize]);
                }
                (op.key(), summarize(&all))
            })
            .collect()
    }

    /// Latency per op kind in `phase`.
    pub(super) fn phase_latency(&self, phase: u8) -> BTreeMap<&'static str, Latency> {
        let p = &self.hist[usize::from(phase.min(OTHER))];
        Op::ALL
            .iter()
            .map(|op| (op.key(), summarize(&p[*op as usize])))
            .collect()
    }

    /// Heartbeat gap percentiles, µs.
    pub(super) fn gaps(&self) -> Latency {
        summarize(&self.gaps)
    }
}

/// Closes the gaps still open at `end_us` for the clients `pinging` says kept pinging: a
/// client whose pings were stuck until the end has a gap too.
pub(super) fn close_open_gaps(rec: &mut Recorder, last: &LastSeen, pinging: &[bool], end_us: u64) {
    for (word, on) in last.iter().zip(pinging) {
        if *on {
            if let Some(g) = gap_us(word.load(Ordering::Acquire), end_us) {
                rec.gap(g, end_us);
            }
        }
    }
}

/// Resident set size of this process, bytes (`/proc/self/statm` × 4 KiB pages; 0 elsewhere).
pub(super) fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        .map_or(0, |pages| pages * 4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_ping_has_no_gap_and_later_ones_measure_from_the_previous() {
        assert_eq!(gap_us(NEVER, 5), None);
        assert_eq!(gap_us(100, 350), Some(250));
        // A clock read that raced backwards by a hair never wraps.
        assert_eq!(gap_us(400, 399), Some(0));
        let last = AtomicU64::new(NEVER);
        let mut r = Recorder::default();
        r.ping_recorded(&last, 1_000);
        r.ping_recorded(&last, 201_000);
        r.ping_recorded(&last, 1_401_000);
        let g = r.gaps();
        assert!(g.max >= 1_199_000 && g.max <= 1_201_000, "{g:?}");
        assert!(g.p50 >= 199_000 && g.p50 <= 201_000, "{g:?}");
    }

    #[test]
    fn open_gaps_count_only_clients_that_kept_pinging() {
        let last: LastSeen = vec![AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(NEVER)];
        let mut r = Recorder::default();
        close_open_gaps(&mut r, &last, &[true, false, true], 3_000_000);
        let g = r.gaps();
        assert!(g.max >= 2_990_000 && g.max <= 3_010_000, "{g:?}");
        assert_eq!(r.gaps.len(), 1);
    }

    #[test]
    fn percentiles_come_from_the_distribution() {
        let mut r = Recorder::default();
        for us in 1..=1000u64 {
            r.op(Op::Get, BEFORE, us, us, true);
        }
        r.op(Op::Get, DURING, 50_000, 2_000, false);
        let before = r.phase_latency(BEFORE)["get"];
        assert!((495..=505).contains(&before.p50), "{before:?}");
        assert!((985..=995).contains(&before.p99), "{before:?}");
        assert_eq!(before.max, 1000);
        let all = r.latency()["get"];
        assert!((49_950..=50_050).contains(&all.max), "{all:?}");
        assert_eq!(r.phase_latency(DURING)["put"], Latency::default());
        assert_eq!((r.ops, r.errors), (1001, 1));
    }

    #[test]
    fn merged_recorders_keep_the_worst_per_bucket() {
        let mut a = Recorder::default();
        let mut b = Recorder::default();
        a.op(Op::Ping, BEFORE, 10, 50_000, true);
        b.op(Op::Ping, BEFORE, 30, 60_000, true);
        b.gap(7_000, 350_000);
        a.merge(&b);
        assert_eq!(a.timeline.latency[0][Op::Ping as usize], 30);
        assert_eq!(a.timeline.gap[3], 7_000);
        assert_eq!(a.timeline.gap.len(), 4);
    }
}
