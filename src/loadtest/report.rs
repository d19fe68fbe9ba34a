//! The run report: one JSON object per run with stable field names (pinned by a test), and
//! the table printed on stdout.

use super::options::Options;
use super::scenarios::RunResult;
use super::stats::{Latency, BEFORE, DURING};
use crate::loadtest::options::Scenario;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Heartbeat gap as the master saw it, ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Gap {
    /// 99th percentile.
    pub p99: f64,
    /// Worst.
    pub max: f64,
}

/// Latency per op kind before and during the disturbance.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Phases {
    /// Before the offboarding (or snapshot) started.
    pub before: BTreeMap<&'static str, Latency>,
    /// While it ran.
    pub during: BTreeMap<&'static str, Latency>,
}

/// One run, as written by `--json` (field names are a stable interface).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunReport {
    /// `steady`, `join-storm`, `offboard-big` or `snapshot`.
    pub scenario: &'static str,
    /// `ours` or `upstream-main`.
    pub design: &'static str,
    /// `dedicated` or `shared`.
    pub ping_thread: String,
    /// `fifo` or `pings-first` (what a shared worker serves first).
    pub serve_order: String,
    /// Data-plane worker threads.
    pub threads: usize,
    /// Seed.
    pub seed: u64,
    /// Ping period, ms.
    pub ping_interval_ms: u64,
    /// Active TTL, ms.
    pub active_ttl_ms: u64,
    /// Preloaded objects.
    pub keys: usize,
    /// One walk over every metadata shard of the preloaded table (a ReMount's walk), ms.
    pub walk_ms: f64,
    /// Whether join-storm's ReMounts walked.
    pub storm_walk: bool,
    /// Data-plane operations completed while measuring (put, get, remove).
    pub ops: u64,
    /// `ops` per measured second.
    pub ops_per_s: f64,
    /// Latency per op kind (`put`, `get`, `remove`, `ping`, `mount`), µs.
    pub latency_us: BTreeMap<&'static str, Latency>,
    /// offboard-big and snapshot: `before` / `during`; `null` for the other scenarios.
    pub phase_latency_us: Option<Phases>,
    /// Gap between two recorded pings of one client, ms.
    pub ping_gap_ms: Gap,
    /// Active → Suspected of clients that kept pinging.
    pub false_suspected: u64,
    /// Suspected → Offline of clients that kept pinging.
    pub false_offline: u64,
    /// Preloaded keys of healthy holders missing at the end.
    pub keys_lost: u64,
    /// Resident set size at the end of the run, bytes.
    pub rss_bytes: u64,
}

impl RunReport {
    /// The report of `r`.
    pub(super) fn new(opts: &Options, r: &RunResult) -> Self {
        let gaps = r.rec.gaps();
        let phased = matches!(r.scenario, Scenario::OffboardBig | Scenario::Snapshot);
        Self {
            scenario: r.scenario.name(),
            design: r.design.name(),
            ping_thread: r.ping_thread.to_string(),
            serve_order: opts.serve_order.to_string(),
            threads: opts.threads,
            seed: opts.seed,
            ping_interval_ms: opts.ping_interval_ms,
            active_ttl_ms: opts.active_ttl_ms,
            keys: opts.keys,
            walk_ms: (r.walk_ms * 10.0).round() / 10.0,
            storm_walk: opts.storm_walk,
            ops: r.rec.ops,
            ops_per_s: if r.measured_s > 0.0 {
                (r.rec.ops as f64 / r.measured_s).round()
            } else {
                0.0
            },
            latency_us: r.rec.latency(),
            phase_latency_us: phased.then(|| Phases {
                before: r.rec.phase_latency(BEFORE),
                during: r.rec.phase_latency(DURING),
            }),
            ping_gap_ms: Gap {
                p99: gaps.p99 as f64 / 1000.0,
                max: gaps.max as f64 / 1000.0,
            },
            false_suspected: r.false_suspected,
            false_offline: r.false_offline,
            keys_lost: r.keys_lost,
            rss_bytes: r.rss_bytes,
        }
    }
}

fn us(v: u64) -> String {
    if v >= 10_000 {
        format!("{:.1}ms", v as f64 / 1000.0)
    } else {
        format!("{v}us")
    }
}

/// The table printed on stdout.
pub fn table(reports: &[RunReport]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<13} {:<13} {:<9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>5} {:>5} {:>5}",
        "scenario",
        "design",
        "ping",
        "walk",
        "ops/s",
        "get p99",
        "put p99",
        "ping p99",
        "ping max",
        "gap p99",
        "gap max",
        "falsS",
        "falsO",
        "lost"
    );
    for r in reports {
        let l = |k: &str| r.latency_us.get(k).copied().unwrap_or_default();
        let _ = writeln!(
            out,
            "{:<13} {:<13} {:<9} {:>5.0}ms {:>9.0} {:>9} {:>9} {:>9} {:>9} {:>8.0}ms {:>8.0}ms {:>5} {:>5} {:>5}",
            r.scenario,
            r.design,
            r.ping_thread,
            r.walk_ms,
            r.ops_per_s,
            us(l("get").p99),
            us(l("put").p99),
            us(l("ping").p99),
            us(l("ping").max),
            r.ping_gap_ms.p99,
            r.ping_gap_ms.max,
            r.false_suspected,
            r.false_offline,
            r.keys_lost
        );
        if let Some(p) = &r.phase_latency_us {
            let b = |k: &str| p.before.get(k).copied().unwrap_or_default();
            let d = |k: &str| p.during.get(k).copied().unwrap_or_default();
            let _ = writeln!(
                out,
                "{:<13} {:<13}   p99 before -> during: get {} -> {}, put {} -> {}, ping {} -> {}",
                "",
                "",
                us(b("get").p99),
                us(d("get").p99),
                us(b("put").p99),
                us(d("put").p99),
                us(b("ping").p99),
                us(d("ping").p99)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loadtest::options::Design;
    use crate::loadtest::stats::{Op, Recorder};

    fn sample(scenario: Scenario) -> RunReport {
        let mut rec = Recorder::default();
        rec.op(Op::Get, BEFORE, 100, 10, true);
        rec.gap(250_000, 20);
        let r = RunResult {
            scenario,
            design: Design::UpstreamMain,
            ping_thread: crate::loadtest::PingThread::Shared,
            walk_ms: 12.34,
            rec,
            measured_s: 2.0,
            false_suspected: 3,
            false_offline: 1,
            keys_lost: 7,
            rss_bytes: 4096,
            marks: Vec::new(),
        };
        RunReport::new(&Options::default(), &r)
    }

    #[test]
    fn json_field_names_are_pinned() {
        let v = serde_json::to_value(sample(Scenario::OffboardBig)).expect("json");
        let keys: Vec<&str> = v.as_object().expect("object").keys().map(String::as_str).collect();
        let mut want = vec![
            "scenario",
            "design",
            "ping_thread",
            "serve_order",
            "threads",
            "seed",
            "ping_interval_ms",
            "active_ttl_ms",
            "keys",
            "walk_ms",
            "storm_walk",
            "ops",
            "ops_per_s",
            "latency_us",
            "phase_latency_us",
            "ping_gap_ms",
            "false_suspected",
            "false_offline",
            "keys_lost",
            "rss_bytes",
        ];
        let mut got = keys.clone();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want);
        for kind in ["put", "get", "remove", "ping", "mount"] {
            for q in ["p50", "p99", "p999", "max"] {
                assert!(v["latency_us"][kind][q].is_u64(), "latency_us.{kind}.{q}");
                assert!(v["phase_latency_us"]["before"][kind][q].is_u64());
                assert!(v["phase_latency_us"]["during"][kind][q].is_u64());
            }
        }
        // hdrhistogram keeps 3 significant digits.
        let max = v["ping_gap_ms"]["max"].as_f64().expect("max");
        assert!((250.0..=250.25).contains(&max), "{max}");
        assert!(v["ping_gap_ms"]["p99"].is_f64());
        assert_eq!(v["design"], "upstream-main");
        assert_eq!(v["scenario"], "offboard-big");
        assert_eq!(v["ping_thread"], "shared");
        assert_eq!(v["serve_order"], "fifo");
        assert_eq!(v["walk_ms"], 12.3);
        assert_eq!((v["ops"].as_u64(), v["ops_per_s"].as_f64()), (Some(1), Some(1.0)));
        assert_eq!(v["false_suspected"], 3);
        assert_eq!(v["false_offline"], 1);
        assert_eq!(v["keys_lost"], 7);
    }

    #[test]
    fn scenarios_without_phases_write_null() {
        let v = serde_json::to_value(sample(Scenario::JoinStorm)).expect("json");
        assert!(v["phase_latency_us"].is_null());
        assert!(table(&[sample(Scenario::Snapshot)]).contains("before -> during"));
    }
}
