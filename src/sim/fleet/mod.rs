//! The fleet simulator behind `mooncake-liveness simulate`: why recoverable liveness matters,
//! and how to set the TTLs, in one deterministic run of the **real** library.
//!
//! A seeded, virtual-clock run ([`ManualClock`](crate::clock::ManualClock)) drives the reference
//! [`Master`](crate::master::Master) — its allocation and Get paths, and for the rfc policies its
//! monitor and synchronous offboarding — with a fleet of clients. The legacy policies run
//! [`LegacyMonitor`](crate::sim::legacy::LegacyMonitor), Mooncake main's monitor, the same model
//! `replay --policy legacy` runs and `scripts/conformance.sh` checks against the real
//! `mooncake_master`. The same workload (same seed: same trouble, same traffic) runs under each
//! [`Policy`]:
//!
//! | policy | monitor | TTLs | stall brake | mass-suspicion brake |
//! |---|---|---|---|---|
//! | `legacy` | main's (1 s tick, batch expiry) | `client_ttl` 10 s (main's default) | – | – |
//! | `legacy@30s` | main's | `client_ttl` 30 s (rfc's total budget) | – | – |
//! | `legacy@60s` | main's | `client_ttl` 60 s (upstream's sample master.yaml) | – | – |
//! | `rfc` | the library's | 10 s + 20 s | off | off |
//! | `rfc+brakes` | the library's | 10 s + 20 s | on | on |
//!
//! # Scenarios ([`Scenario`], [`Trouble`])
//!
//! 2,000 clients for 300 simulated seconds by default. Each client mounts one 1 GiB segment,
//! ReMounts (ready) and pings every `1000 ± 50` ms. Traffic: Poisson Puts at 200/s (1–2
//! replicas, 256 KiB–4 MiB, random allocation) and Poisson Gets at 400/s of a uniformly chosen
//! key the application keeps (at most 20,000, oldest removed first); a Get that finds its key
//! gone puts it again (a cache recomputes). Trouble, drawn from the seed before any policy runs,
//! comes in five stall kinds, each with its own knobs and its own row in the report:
//! `client_pause`, `partition`, `master_pause` (the whole master stops; pings are buffered and
//! applied on resume before the first check unless `master_pause_ticks_first`),
//! `heartbeat_blocked` (the Ping path waits behind data-plane work while the monitor runs on
//! time), and `crash`. The default scenario, `stress`, has all of them at once; the others have
//! one each on a quiet background. Every default and its source: [`crate::docs::calibration`].
//!
//! A healthy client that is told `NEED_REMOUNT` does what a real client does: mount again and
//! ReMount (refused with `CLIENT_OFFBOARDING` while its old incarnation's job is pending; it
//! retries at its next ping) — its old data is gone.
//!
//! # What is reported ([`SimReport`])
//!
//! Per policy: healthy clients falsely offboarded, by the stall kind that silenced them; objects
//! lost to false offboarding, and those that will be lost when offboarding jobs still pending at
//! the end finish; Get misses, overall and inside incident windows; Gets routed to an
//! unreachable owner; crash → Suspected and crash → Offline latencies; client-seconds spent
//! Suspected; suspicions and recoveries; which brake fired (stalls credited, mass-suspicion
//! engagements).
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
//! | `scenario` | the named presets |
//! | `policy` | [`Policy`] and what each one runs with |
//! | `counters` | the raw counters a run fills and the report reads |
//! | `run` | the discrete-event loop driving the master |
//! | `queue` | its calendar event queue |
//! | `outcome` | transitions and losses booked against the ground truth |
//! | `report` | [`SimReport`], [`PolicyReport`], [`SweepReport`] and their JSON |
//! | `text` | the terminal table, Markdown and the takeaways |
//! | `chart` | `states.svg` |
//! | `labels` | `--metrics` labelled by policy |
//! | `heartbeats` | recorded heartbeat logs |
#![forbid(unsafe_code)]

mod chart;
mod counters;
mod heartbeats;
mod labels;
mod outcome;
mod policy;
mod queue;
mod report;
mod run;
mod scenario;
mod text;
mod traffic;
mod workload;

pub use counters::{CrashDetection, StateSample};
pub use heartbeats::{parse_heartbeats, HeartbeatEvent};
pub use policy::{parse_policies, Policy};
pub use report::{FalseOffboardCauses, Latency, PolicyReport, SimReport, SweepCell, SweepReport};
pub use scenario::Scenario;
pub use workload::{CrashEvent, PartitionEvent, StallEvent, Traffic, Trouble, WorkloadSummary};

use crate::config::{resolve, CliOverrides, ConfigError, RawConfig, Resolved};
use counters::Metrics;
use indicatif::{ProgressBar, ProgressStyle};
use run::Job;
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
    /// The configuration file the policies start from (`--config`: a master.yaml / master.json),
    /// if any. With [`config_flags`](Self::config_flags) it is resolved by
    /// [`config::resolve`](crate::config::resolve), the master's own rules (precedence, legacy
    /// aliases, the inherited suspicion TTL, the stall bound of half the resolved active TTL
    /// unless given): [`SimOptions::resolved_config`]. Each policy then sets its brakes (and a
    /// legacy policy its single TTL).
    pub config_file: Option<RawConfig>,
    /// The command line's configuration (`--client_active_ttl_sec` / `--active-ttl`, ...),
    /// over the file. The active TTL is also legacy's `client_ttl`.
    pub config_flags: CliOverrides,
    /// Policies to run, in report order; empty means all of [`Policy::ALL`].
    pub policies: Vec<Policy>,
    /// A recorded heartbeat log instead of the synthetic fleet.
    pub heartbeats: Option<Vec<HeartbeatEvent>>,
    /// The trouble distributions (synthetic mode).
    pub trouble: Trouble,
    /// The Put/Get traffic.
    pub traffic: Traffic,
}

impl Default for SimOptions {
    /// The built-in `stress` scenario: 2,000 clients, 300 s, seed 42, every policy.
    fn default() -> Self {
        Self {
            clients: 2_000,
            duration_s: 300,
            seed: 42,
            config_file: None,
            config_flags: CliOverrides::default(),
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
    let span = |min: f64, max: f64| min >= 0.0 && max >= min && max.is_finite();
    check(
        span(t.master_pause_min_s, t.master_pause_max_s),
        "master pause durations must satisfy 0 <= min <= max",
    )?;
    check(
        span(t.heartbeat_block_min_s, t.heartbeat_block_max_s),
        "heartbeat block durations must satisfy 0 <= min <= max",
    )?;
    check(
        fraction(t.heartbeat_block_fraction),
        "heartbeat_block_fraction must be in [0, 1]",
    )?;
    let at = |v: Option<f64>| v.is_none_or(|s| s >= 0.0 && s.is_finite());
    check(
        at(t.master_pause_at_s) && at(t.heartbeat_block_at_s),
        "event start times must be >= 0",
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
        self.resolved_config().map_err(|e| e.to_string())?;
        validate_trouble(&self.trouble)?;
        validate_traffic(&self.traffic)?;
        for p in self.policies_or_all() {
            p.config(self).validate().map_err(|e| format!("{p}: {e}"))?;
        }
        Ok(())
    }

    /// The configuration sources resolved by [`config::resolve`](crate::config::resolve): the
    /// configuration every policy starts from, with resolution's warnings.
    pub fn resolved_config(&self) -> Result<Resolved, ConfigError> {
        resolve(self.config_file.as_ref(), &self.config_flags)
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
fn run_many(w: &Workload, opts: &SimOptions, configs: &[Job], pb: &ProgressBar) -> Vec<Metrics> {
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
                            let run = || run::run_policy(w, &opts.trouble, &opts.traffic, &configs[k], opts.seed, pb);
                            let m = match &configs[k].label {
                                Some(policy) => labels::with_policy_label(policy, run),
                                None => run(),
                            };
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

/// The preset whose trouble `t` is, or `custom`.
fn scenario_label(t: &Trouble) -> &'static str {
    Scenario::ALL
        .into_iter()
        .find(|s| {
            // The resume order is a knob of any scenario, not a different one.
            let order = Trouble {
                master_pause_ticks_first: t.master_pause_ticks_first,
                ..s.trouble()
            };
            order == *t
        })
        .map_or("custom", Scenario::name)
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
    let configs: Vec<crate::config::LivenessConfig> = policies.iter().map(|p| p.config(opts)).collect();
    let jobs: Vec<Job> = policies
        .iter()
        .zip(&configs)
        .map(|(p, c)| Job {
            config: c.clone(),
            legacy_ttl_ms: p.legacy_ttl_ms(opts),
            label: Some(p.name()),
        })
        .collect();
    let pb = progress_bar(w.duration_ms / 1000 * policies.len() as u64, progress, "simulating");
    let metrics = run_many(&w, opts, &jobs, &pb);
    pb.finish_and_clear();
    let truth = w.truth.is_some();
    let crashes = w.summary.crashes.len();
    SimReport {
        mode: if truth { "synthetic" } else { "heartbeats" },
        scenario: if truth {
            scenario_label(&opts.trouble)
        } else {
            "recorded heartbeats"
        },
        clients: w.names.len(),
        duration_s: secs(w.duration_ms),
        seed: opts.seed,
        trouble: truth.then(|| opts.trouble.clone()),
        traffic: opts.traffic.clone(),
        workload: w.summary.clone(),
        policies: policies
            .iter()
            .zip(configs.iter().zip(metrics))
            .map(|(p, (c, m))| PolicyReport::new(*p, c, p.legacy_ttl_ms(opts), m, truth, crashes))
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
                config_flags: CliOverrides {
                    client_active_ttl_sec: Some(a),
                    client_suspicion_ttl_sec: Some(s),
                    ..opts.config_flags.clone()
                },
                heartbeats: None,
                ..opts.clone()
            };
            configs.push(Policy::RfcBrakes.config(&cell));
        }
    }
    let w = opts.workload();
    let pb = progress_bar(w.duration_ms / 1000 * configs.len() as u64, progress, "sweeping");
    let jobs: Vec<Job> = configs
        .iter()
        .map(|c| Job {
            config: c.clone(),
            legacy_ttl_ms: None,
            label: None,
        })
        .collect();
    let metrics = run_many(&w, opts, &jobs, &pb);
    pb.finish_and_clear();
    let truth = w.truth.is_some();
    let cells = configs
        .iter()
        .zip(metrics)
        .map(|(c, m)| {
            SweepCell::of(&PolicyReport::new(
                Policy::RfcBrakes,
                c,
                None,
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
