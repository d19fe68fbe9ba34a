//! The fleet simulator behind `mooncake-liveness simulate`: why recoverable liveness matters,
//! and how to set the TTLs, in one deterministic run of the **real** library.
//!
//! A seeded, virtual-clock run ([`ManualClock`](crate::clock::ManualClock), monitor ticks every
//! `monitor_tick_ms`) drives the reference [`Master`](crate::master::Master) — its monitor, its
//! synchronous offboarding, its allocation and Get paths — with a fleet of clients. The same
//! workload (same seed: same trouble, same traffic) runs under each [`Policy`]:
//!
//! | policy | active TTL | suspicion TTL | stall brake | mass-suspicion brake |
//! |---|---|---|---|---|
//! | `legacy` (today's Mooncake) | the TTL (10 s) | one monitor tick | off | off |
//! | `rfc` | 10 s | 20 s | off | off |
//! | `rfc+brakes` | 10 s | 20 s | on | on |
//!
//! # The built-in scenario ([`SimOptions::default`])
//!
//! 2,000 clients for 300 simulated seconds. Each client mounts one 1 GiB segment, ReMounts
//! (ready) and pings every `1000 ± 50` ms (uniform jitter per ping, a uniform phase per client).
//! Traffic: Poisson Puts at 200/s (Put then PutEnd, 1–2 replicas, 256 KiB–4 MiB, random
//! allocation) and Poisson Gets at 400/s of a uniformly chosen key that should exist; beyond
//! 20,000 keys the oldest is removed. Trouble ([`Trouble`]), drawn from the seed before any
//! policy runs:
//!
//! - **GC/process pauses**: a Poisson process of 0.05 pauses per client per minute over the
//!   fleet (≈ 500 per run), each on a uniformly chosen client; duration
//!   `LogNormal(μ = ln 0.8 s, σ = 1.2)` clamped to [0.05 s, 25 s]: median 0.8 s, ~78 % under
//!   2 s, ~2 % over 9 s, a heavy tail to 25 s.
//! - **Network partitions**: 2, each at a uniform time in [15 %, 85 %] of the run, cutting off
//!   5 % of the fleet (uniformly chosen) for `Uniform(8 s, 20 s)`.
//! - **Ping loss**: each ping is lost with probability 0.5 %.
//! - **Master stall**: one, 12 s, starting uniformly in [35 %, 65 %] of the run: no monitor tick
//!   runs and no RPC is heard (the clients' pings during it are lost, Puts/Gets are not served).
//! - **Crashes**: 0.5 % of the fleet (10 clients) die for good at a uniform time in
//!   [10 %, 55 %] of the run. Crash victims get no pauses or partitions.
//!
//! A healthy client that is told `NEED_REMOUNT` does what a real client does: mount again and
//! ReMount (refused with `CLIENT_OFFBOARDING` while its old incarnation's job is pending; it
//! retries at its next ping) — its old data is gone.
//!
//! # What is reported ([`SimReport`])
//!
//! Per policy: healthy clients falsely offboarded (and what silenced them), objects lost to
//! false offboarding (removed by offboarding while a replica was on a healthy client), Gets
//! that failed (`REPLICA_IS_NOT_READY` / `OBJECT_NOT_FOUND`) or were routed to an unreachable
//! owner (paused, partitioned or dead at that moment per the ground truth), crash → Suspected
//! and crash → Offline latencies (median, p99), client-seconds spent Suspected (resources
//! retained but not served; split dead / alive), suspicions and recoveries, stalls credited.
//!
//! With recorded heartbeats ([`SimOptions::heartbeats`], [`parse_heartbeats`]) the fleet is the
//! log's clients, they ping exactly when the log says, there is no injected trouble, and the
//! ground-truth columns are `n/a`; "offboarded, then heard again" counts clients proven alive.
//!
//! Deterministic for a seed: ordered maps only, seeded `ChaCha8Rng` streams, no wall time in
//! results. Policies (and sweep cells) run on scoped threads, each on its own master and clock.
//!
//! | module | what |
//! |---|---|
//! | `workload` | the trouble schedule and ground truth from the seed; [`Trouble`], [`Traffic`] |
//! | `policy` | [`Policy`] and the [`LivenessConfig`] each one runs with |
//! | `run` | the discrete-event loop driving the master |
//! | `report` | [`SimReport`], [`PolicyReport`], [`SweepReport`] and their JSON |
//! | `text` | the terminal table, Markdown and the takeaways |
//! | `chart` | `states.svg` |
//! | `heartbeats` | recorded heartbeat logs |
#![forbid(unsafe_code)]

mod chart;
mod heartbeats;
mod policy;
mod report;
mod run;
mod text;
mod workload;

pub use heartbeats::{parse_heartbeats, HeartbeatEvent};
pub use policy::{parse_policies, Policy};
pub use report::{
    CrashDetection, FalseOffboardCauses, Latency, PolicyReport, SimReport, StateSample, SweepCell, SweepReport,
};
pub use workload::{CrashEvent, PartitionEvent, StallEvent, Traffic, Trouble, WorkloadSummary};

use crate::config::LivenessConfig;
use indicatif::{ProgressBar, ProgressStyle};
use run::Metrics;
use std::io;
use std::path::Path;
use workload::{secs, Workload};

/// What to simulate.
#[derive(Clone, Debug, PartialEq)]
pub struct SimOptions {
    /// Fleet size (synthetic mode; the log decides in heartbeat mode).
    pub clients: usize,
    /// Simulated time, seconds (synthetic mode; heartbeat mode runs to one second after the log).
    pub duration_s: u64,
    /// Seed of every random stream.
    pub seed: u64,
    /// Active TTL override, seconds (also the legacy TTL). Overriding it also sets
    /// `stall_bound_ms` to half of it.
    pub active_ttl_s: Option<f64>,
    /// Suspicion TTL override, seconds (`rfc`, `rfc+brakes`).
    pub suspicion_ttl_s: Option<f64>,
    /// Base configuration (`--config`); the library defaults when `None`. Each policy then sets
    /// its suspicion TTL (legacy) and brakes.
    pub config: Option<LivenessConfig>,
    /// Policies to run, in report order; empty means all three.
    pub policies: Vec<Policy>,
    /// A recorded heartbeat log instead of the synthetic fleet.
    pub heartbeats: Option<Vec<HeartbeatEvent>>,
    /// The trouble distributions (synthetic mode).
    pub trouble: Trouble,
    /// The Put/Get traffic.
    pub traffic: Traffic,
}

impl Default for SimOptions {
    /// The built-in scenario: 2,000 clients, 300 s, seed 42, all three policies.
    fn default() -> Self {
        Self {
            clients: 2_000,
            duration_s: 300,
            seed: 42,
            active_ttl_s: None,
            suspicion_ttl_s: None,
            config: None,
            policies: Policy::ALL.to_vec(),
            heartbeats: None,
            trouble: Trouble::default(),
            traffic: Traffic::default(),
        }
    }
}

fn check(ok: bool, what: &str) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what.to_string())
    }
}

fn positive(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

fn validate_trouble(t: &Trouble) -> Result<(), String> {
    let fraction = |v: f64| (0.0..=1.0).contains(&v);
    check(fraction(t.ping_loss), "ping_loss must be in [0, 1]")?;
    check(fraction(t.partition_fraction), "partition_fraction must be in [0, 1]")?;
    check(fraction(t.crash_fraction), "crash_fraction must be in [0, 1]")?;
    let rate = t.pauses_per_client_per_min;
    check(
        rate >= 0.0 && rate.is_finite(),
        "pauses_per_client_per_min must be >= 0",
    )?;
    let pauses = positive(t.pause_median_s) && t.pause_sigma >= 0.0 && positive(t.pause_max_s);
    check(pauses, "pause median and max must be > 0 and sigma >= 0")?;
    let partitions = t.partition_min_s >= 0.0 && t.partition_max_s >= t.partition_min_s;
    check(partitions, "partition durations must satisfy 0 <= min <= max")?;
    check(t.stall_s >= 0.0 && t.stall_s.is_finite(), "stall_s must be >= 0")?;
    check(
        t.stall_at_s.is_none_or(|s| s >= 0.0 && s.is_finite()),
        "stall_at_s must be >= 0",
    )?;
    check(
        t.ping_period_ms >= 1 && t.ping_jitter_ms < t.ping_period_ms,
        "ping jitter must be below the period",
    )
}

fn validate_traffic(t: &Traffic) -> Result<(), String> {
    let rates = t.puts_per_s >= 0.0 && t.gets_per_s >= 0.0 && t.puts_per_s.is_finite() && t.gets_per_s.is_finite();
    check(rates, "traffic rates must be >= 0")?;
    check(
        t.max_replicas >= 1 && t.object_min_bytes >= 1,
        "max_replicas and object_min_bytes must be >= 1",
    )?;
    check(
        t.object_max_bytes >= t.object_min_bytes,
        "object_max_bytes < object_min_bytes",
    )?;
    check(
        t.segment_bytes >= t.object_max_bytes,
        "segment_bytes must hold the largest object",
    )
}

impl SimOptions {
    /// Checks the options; [`run`] and [`sweep`] panic on options this rejects.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(log) = &self.heartbeats {
            check(!log.is_empty(), "the heartbeat log has no heartbeats")?;
        } else {
            check(self.clients >= 1, "clients must be at least 1")?;
            check(self.duration_s >= 1, "duration_s must be at least 1")?;
        }
        for (name, v) in [
            ("active TTL", self.active_ttl_s),
            ("suspicion TTL", self.suspicion_ttl_s),
        ] {
            let ok = v.is_none_or(|s| positive(s) && s * 1000.0 >= 0.5);
            check(ok, &format!("{name} must be > 0 s"))?;
        }
        validate_trouble(&self.trouble)?;
        validate_traffic(&self.traffic)?;
        for p in self.policies_or_all() {
            p.config(self).validate().map_err(|e| format!("{p}: {e}"))?;
        }
        Ok(())
    }

    fn policies_or_all(&self) -> Vec<Policy> {
        if self.policies.is_empty() {
            Policy::ALL.to_vec()
        } else {
            self.policies.clone()
        }
    }

    fn workload(&self) -> Workload {
        match &self.heartbeats {
            Some(log) => Workload::from_log(log),
            None => Workload::synthetic(self.clients, self.duration_s, self.seed, &self.trouble),
        }
    }
}

fn progress_bar(len: u64, enabled: bool, what: &'static str) -> ProgressBar {
    use std::io::IsTerminal;
    if !enabled || !io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} simulated s ({eta})") {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_message(what);
    pb
}

/// Runs one policy configuration per job on scoped threads (at most `max(cores, 3)` at once,
/// round-robin), returning the results in job order.
fn run_many(w: &Workload, opts: &SimOptions, configs: &[LivenessConfig], pb: &ProgressBar) -> Vec<Metrics> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = configs.len().min(cores.max(3)).max(1);
    let mut out: Vec<Option<Metrics>> = vec![None; configs.len()];
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|wk| {
                s.spawn(move || {
                    (wk..configs.len())
                        .step_by(workers)
                        .map(|k| {
                            let m = run::run_policy(w, &opts.trouble, &opts.traffic, configs[k].clone(), opts.seed, pb);
                            (k, m)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            for (k, m) in h.join().expect("a simulation thread panicked") {
                out[k] = Some(m);
            }
        }
    });
    out.into_iter().map(|m| m.expect("every job ran")).collect()
}

/// Runs the scenario under every policy of `opts` and reports. `progress` shows an indicatif
/// bar on stderr (only when stderr is a terminal).
///
/// # Panics
/// If [`SimOptions::validate`] rejects `opts`.
pub fn run(opts: &SimOptions, progress: bool) -> SimReport {
    if let Err(e) = opts.validate() {
        panic!("invalid simulation options: {e}");
    }
    let w = opts.workload();
    let policies = opts.policies_or_all();
    let configs: Vec<LivenessConfig> = policies.iter().map(|p| p.config(opts)).collect();
    let pb = progress_bar(w.duration_ms / 1000 * policies.len() as u64, progress, "simulating");
    let metrics = run_many(&w, opts, &configs, &pb);
    pb.finish_and_clear();
    let truth = w.truth.is_some();
    let crashes = w.summary.crashes.len();
    SimReport {
        mode: if truth { "synthetic" } else { "heartbeats" },
        clients: w.names.len(),
        duration_s: secs(w.duration_ms),
        seed: opts.seed,
        trouble: truth.then(|| opts.trouble.clone()),
        traffic: opts.traffic.clone(),
        workload: w.summary.clone(),
        policies: policies
            .iter()
            .zip(configs.iter().zip(metrics))
            .map(|(p, (c, m))| PolicyReport::new(*p, c, m, truth, crashes))
            .collect(),
    }
}

/// Runs the `rfc+brakes` policy for every (active, suspicion) pair, active-major, on the same
/// workload. An empty list means the resolved TTL of `opts` alone.
///
/// # Panics
/// If [`SimOptions::validate`] rejects `opts` or a TTL is not > 0.
pub fn sweep(opts: &SimOptions, actives: &[f64], suspicions: &[f64], progress: bool) -> SweepReport {
    if let Err(e) = opts.validate() {
        panic!("invalid simulation options: {e}");
    }
    let base = Policy::RfcBrakes.config(opts);
    let or = |v: &[f64], d: u64| if v.is_empty() { vec![secs(d)] } else { v.to_vec() };
    let (actives, suspicions) = (or(actives, base.active_ttl_ms), or(suspicions, base.suspicion_ttl_ms));
    let mut configs = Vec::new();
    for &a in &actives {
        for &s in &suspicions {
            assert!(positive(a) && positive(s), "sweep TTLs must be > 0, got {a} + {s}");
            let cell = SimOptions {
                active_ttl_s: Some(a),
                suspicion_ttl_s: Some(s),
                heartbeats: None,
                ..opts.clone()
            };
            configs.push(Policy::RfcBrakes.config(&cell));
        }
    }
    let w = opts.workload();
    let pb = progress_bar(w.duration_ms / 1000 * configs.len() as u64, progress, "sweeping");
    let metrics = run_many(&w, opts, &configs, &pb);
    pb.finish_and_clear();
    let truth = w.truth.is_some();
    let cells = configs
        .iter()
        .zip(metrics)
        .map(|(c, m)| {
            SweepCell::of(&PolicyReport::new(
                Policy::RfcBrakes,
                c,
                m,
                truth,
                w.summary.crashes.len(),
            ))
        })
        .collect();
    SweepReport {
        policy: Policy::RfcBrakes,
        clients: w.names.len(),
        duration_s: secs(w.duration_ms),
        seed: opts.seed,
        workload: w.summary,
        cells,
    }
}

/// Writes `report.md`, `report.json` and `states.svg` into `dir` (created if missing).
pub fn write_outputs(report: &SimReport, dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("report.md"), report.markdown())?;
    std::fs::write(dir.join("report.json"), report.to_json())?;
    let svg = chart::render_svg(report).map_err(io::Error::other)?;
    std::fs::write(dir.join("states.svg"), svg)
}
