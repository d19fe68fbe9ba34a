//! One run = one scenario under one design: build the master, register the clients, start the
//! threads, preload, then the scenario's script on this thread; measure; tear down.
//!
//! Setup (not measured, pings already running so nobody expires while it lasts):
//! 1. every client ReMounts with no segment while the table is empty (ready, pinging);
//! 2. offboard-big only: the victim mounts its segment and `--victim-keys` objects are put
//!    (they all land on it: it is the only segment);
//! 3. the `--segment-clients` holders mount their segments and `--keys` objects are put
//!    (free-ratio-first allocation spreads them over the holders, whose segments are emptier
//!    than the victim's). Preloading goes to the master directly, around the design's locks.

use super::drivers::{self, Ctx};
use super::options::{Design, Options, PingThread, Scenario};
use super::paths::{new_master, MasterPaths};
use super::stats::{self, Recorder, BEFORE, DURING, OTHER};
use super::upstream::UpstreamMain;
use crate::config::{self, keys, CliOverrides, LivenessConfig};
use crate::master::{MasterOptions, SegmentSpec};
use crate::sync::Ordering;
use indicatif::{ProgressBar, ProgressStyle};
use std::time::{Duration, Instant};

/// What a run measured.
#[derive(Debug)]
pub(super) struct RunResult {
    /// The scenario.
    pub(super) scenario: Scenario,
    /// The design.
    pub(super) design: Design,
    /// Where its pings were served.
    pub(super) ping_thread: PingThread,
    /// One walk over every metadata shard of the preloaded table, ms (the hold of one
    /// ReMount's walk), timed on the bare master before measuring.
    pub(super) walk_ms: f64,
    /// Every thread's measurements, merged (open gaps closed).
    pub(super) rec: Recorder,
    /// Measured seconds (data plane on).
    pub(super) measured_s: f64,
    /// Active → Suspected of clients that kept pinging.
    pub(super) false_suspected: u64,
    /// Suspected → Offline of clients that kept pinging.
    pub(super) false_offline: u64,
    /// Preloaded keys of healthy holders missing at the end.
    pub(super) keys_lost: u64,
    /// RSS at the end of the run.
    pub(super) rss_bytes: u64,
    /// Named instants of the run (s since its start), for the chart and the table.
    pub(super) marks: Vec<(String, f64)>,
}

/// The liveness configuration of a run, through the one door every binary uses
/// (`config::resolve` with `config::keys`): both TTLs and the tick given, the stall bound by
/// the resolver's own rule (half the active TTL).
fn config(opts: &Options, design: Design) -> LivenessConfig {
    // Under `upstream-main` the master's own liveness never acts (its tick is never called:
    // upstream's records and monitor in `upstream` decide); the TTLs are set all the same.
    let upstream = design == Design::UpstreamMain;
    let mut cli = CliOverrides::default();
    cli.other.set_ms(keys::CLIENT_ACTIVE_TTL_SEC, opts.active_ttl_ms);
    cli.other.set_ms(keys::CLIENT_SUSPICION_TTL_SEC, opts.suspicion_ttl_ms);
    // The monitor's period: a tenth of the active TTL, 1 ms to 1 s (upstream's proportion).
    cli.other
        .set_ms(keys::MONITOR_TICK_MS, (opts.active_ttl_ms / 10).clamp(1, 1000));
    // Upstream has neither brake (see `upstream`'s module doc).
    cli.other.set(keys::STALL_BRAKE, serde_json::json!(!upstream));
    cli.other.set(keys::MASS_SUSPICION_BRAKE, serde_json::json!(!upstream));
    // The options were validated (`Options::validate_run`, which resolves the same keys).
    config::resolve(None, &cli)
        .expect("validated load-test options resolve")
        .config
}

fn client_names(opts: &Options) -> Vec<String> {
    let mut names: Vec<String> = (0..opts.segment_clients).map(|i| format!("holder-{i}")).collect();
    names.push("victim".to_string());
    let plain = opts.clients.saturating_sub(opts.segment_clients + 1);
    names.extend((0..plain).map(|i| format!("client-{i}")));
    names.extend((0..opts.joiners).map(|i| format!("joiner-{i}")));
    names
}

fn bar(opts: &Options, len: u64, prefix: String) -> ProgressBar {
    if !opts.progress {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    let style = ProgressStyle::with_template("{prefix:>28} [{bar:30}] {pos}/{len} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    pb.set_style(style);
    pb.set_prefix(prefix);
    pb
}

/// Runs `scenario` under `design`.
pub(super) fn run_one(opts: &Options, scenario: Scenario, design: Design) -> Result<RunResult, String> {
    // The preload's size is known: pre-sized shard tables spare it the rehashes.
    let victim_keys = if scenario == Scenario::OffboardBig {
        opts.victim_keys
    } else {
        0
    };
    let options = MasterOptions {
        expected_objects: opts.keys + victim_keys,
        ..MasterOptions::default()
    };
    let liveness = config(opts, design);
    let tick = Duration::from_millis(liveness.monitor_tick_ms);
    let raw = std::sync::Arc::new(new_master(liveness, options));
    let wrapped;
    let paths: &dyn MasterPaths = match design {
        Design::UpstreamMain => {
            wrapped = UpstreamMain::new(
                raw.clone(),
                Duration::from_millis(opts.active_ttl_ms),
                Duration::from_millis(opts.suspicion_ttl_ms),
            );
            &wrapped
        }
        _ => &*raw,
    };
    let ping_thread = opts.ping_thread_for(design);
    let ctx = Ctx::new(paths, opts, ping_thread, client_names(opts));
    let prefix = format!("{} / {}", scenario.name(), design.name());
    let (tx, rx) = std::sync::mpsc::channel();
    let mut marks = Vec::new();
    let mut walk_ms = 0.0;
    let mut recs = std::thread::scope(|s| -> Result<Vec<Recorder>, String> {
        let mut handles = Vec::new();
        if ping_thread == PingThread::Dedicated {
            handles.push(s.spawn(|| drivers::ping_thread(&ctx)));
        }
        for i in 0..opts.threads {
            let ctx = &ctx;
            handles.push(s.spawn(move || drivers::worker(ctx, i)));
        }
        s.spawn(|| drivers::monitor_thread(&ctx, tick, tx));
        s.spawn(|| drivers::offboarding_thread(&ctx, rx));
        let script = setup(&ctx, &*raw, scenario, &prefix).and_then(|()| {
            walk_ms = time_walk(&ctx, &*raw);
            script(&ctx, scenario, &prefix, &mut marks)
        });
        ctx.stop.store(true, Ordering::Release);
        let mut recs = Vec::new();
        for h in handles {
            recs.push(h.join().map_err(|_| "a load-test thread panicked".to_string())?);
        }
        script.map(|mut extra| {
            recs.append(&mut extra);
            recs
        })
    })?;
    let end_us = ctx.now_us();
    let mut rec = recs.pop().unwrap_or_default();
    for r in &recs {
        rec.merge(r);
    }
    let pinging: Vec<bool> = ctx.pinging.iter().map(|p| p.load(Ordering::Acquire)).collect();
    stats::close_open_gaps(&mut rec, &ctx.last_seen, &pinging, end_us);
    let keys_lost = keys_lost(opts, &*raw);
    let measured_s = marks
        .iter()
        .find(|(n, _)| n == "measure")
        .map_or(0.0, |(_, t)| end_us as f64 / 1e6 - t);
    Ok(RunResult {
        scenario,
        design,
        ping_thread,
        walk_ms,
        rec,
        measured_s,
        false_suspected: ctx.false_suspected.load(Ordering::Relaxed),
        false_offline: ctx.false_offline.load(Ordering::Relaxed),
        keys_lost,
        rss_bytes: stats::rss_bytes(),
        marks,
    })
}

/// One walk over every shard of the preloaded table on the bare master (no design's locks), ms.
fn time_walk(ctx: &Ctx<'_>, raw: &dyn MasterPaths) -> f64 {
    // A joiner's walk: its new segment holds none of the preloaded replicas.
    let holder = &ctx.clients[0];
    let spec = [SegmentSpec {
        segment: format!("{holder}-walk-probe"),
        size: ctx.opts.segment_size(),
    }];
    let t0 = Instant::now();
    std::hint::black_box(raw.walk(holder, &spec));
    t0.elapsed().as_secs_f64() * 1000.0
}

/// Preloaded keys missing from the master, counted on `--threads` threads (a slice each).
fn keys_lost(opts: &Options, raw: &dyn MasterPaths) -> u64 {
    let per = opts.keys.div_ceil(opts.threads.max(1));
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..opts.threads.max(1))
            .map(|t| {
                s.spawn(move || {
                    (t * per..((t + 1) * per).min(opts.keys))
                        .filter(|i| !raw.contains(&format!("k{i}")))
                        .count() as u64
                })
            })
            .collect();
        // A counting thread cannot panic short of a bug in `contains`; count it as all lost.
        handles.into_iter().map(|h| h.join().unwrap_or(per as u64)).sum()
    })
}

/// Registers the clients and preloads (see the module doc).
fn setup(ctx: &Ctx<'_>, raw: &dyn MasterPaths, scenario: Scenario, prefix: &str) -> Result<(), String> {
    let opts = ctx.opts;
    let joiners_from = ctx.clients.len() - opts.joiners;
    for (c, name) in ctx.clients[..joiners_from].iter().enumerate() {
        ctx.paths
            .remount(name, &[], false)
            .map_err(|e| format!("setup: remount of {name} failed: {e}"))?;
        ctx.set_pinging(c, true);
    }
    let size = opts.segment_size();
    let preload = |owner: Option<&str>, key: fn(usize) -> String, n: usize| -> Result<(), String> {
        if let Some(owner) = owner {
            ctx.paths
                .mount(owner, &format!("{owner}-seg"), size)
                .map_err(|e| format!("setup: mount of {owner} failed: {e}"))?;
        }
        let pb = bar(opts, n as u64, format!("{prefix} preload"));
        // One slice of the keys per worker thread (the puts scale with a concurrent master).
        let per = n.div_ceil(opts.threads);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..opts.threads)
                .map(|t| {
                    let pb = &pb;
                    s.spawn(move || -> Result<(), String> {
                        for i in t * per..((t + 1) * per).min(n) {
                            let k = key(i);
                            raw.put(&k, opts.object_size)
                                .and_then(|_| raw.put_end(&k))
                                .map_err(|e| format!("setup: preloading {k} failed: {e}"))?;
                            if i % 4096 == 0 {
                                pb.inc(4096);
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            handles
                .into_iter()
                .try_for_each(|h| h.join().map_err(|_| "a preload thread panicked".to_string())?)
        })?;
        pb.finish_and_clear();
        Ok(())
    };
    if scenario == Scenario::OffboardBig {
        preload(Some("victim"), |i| format!("v{i}"), opts.victim_keys)?;
    }
    for name in &ctx.clients[..opts.segment_clients] {
        ctx.paths
            .mount(name, &format!("{name}-seg"), size)
            .map_err(|e| format!("setup: mount of {name} failed: {e}"))?;
    }
    preload(None, |i| format!("k{i}"), opts.keys)
}

fn sleep_until(ctx: &Ctx<'_>, until: Instant, pb: &ProgressBar) {
    while Instant::now() < until && !ctx.stop.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(20).min(until.saturating_duration_since(Instant::now())));
        pb.set_position(ctx.start.elapsed().as_millis() as u64);
    }
}

fn mark(ctx: &Ctx<'_>, marks: &mut Vec<(String, f64)>, name: &str) {
    marks.push((name.to_string(), ctx.start.elapsed().as_secs_f64()));
}

/// The scenario's script; returns extra recorders (the joiners').
fn script(
    ctx: &Ctx<'_>,
    scenario: Scenario,
    prefix: &str,
    marks: &mut Vec<(String, f64)>,
) -> Result<Vec<Recorder>, String> {
    let opts = ctx.opts;
    let duration = Duration::from_secs(opts.duration_s);
    let ttls = Duration::from_millis(opts.active_ttl_ms + opts.suspicion_ttl_ms);
    let interval = Duration::from_millis(opts.ping_interval_ms);
    // A full ping round so every client has a recorded ping before measuring.
    std::thread::sleep(interval * 2);
    let t0 = Instant::now();
    let elapsed_ms = ctx.start.elapsed().as_millis() as u64;
    let pb = bar(opts, elapsed_ms + duration.as_millis() as u64, prefix.to_string());
    ctx.measuring.store(true, Ordering::Release);
    ctx.phase.store(u64::from(BEFORE), Ordering::Release);
    ctx.data_plane.store(true, Ordering::Release);
    mark(ctx, marks, "measure");
    let mut extra = Vec::new();
    match scenario {
        Scenario::Steady | Scenario::All => sleep_until(ctx, t0 + duration, &pb),
        Scenario::JoinStorm => {
            sleep_until(ctx, t0 + duration / 4, &pb);
            pb.set_message("storm");
            mark(ctx, marks, "storm");
            extra = join_storm(ctx)?;
            mark(ctx, marks, "storm done");
            pb.set_message("settling");
            // Long enough for a false suspicion to become a false Offline.
            sleep_until(ctx, (t0 + duration).max(Instant::now() + ttls + interval * 2), &pb);
        }
        Scenario::OffboardBig => {
            sleep_until(ctx, t0 + duration / 3, &pb);
            let victim = ctx.clients.iter().position(|c| c == "victim").unwrap_or(0);
            if let Some(id) = ctx.paths.client_id("victim") {
                let _ = ctx.victim.set(id);
            }
            ctx.phase.store(u64::from(OTHER), Ordering::Release);
            ctx.set_pinging(victim, false);
            mark(ctx, marks, "victim silent");
            pb.set_message("waiting for Offline + offboarding");
            let limit = Instant::now() + ttls * 3 + duration * 4;
            while !ctx.victim_offboarded.load(Ordering::Acquire) && Instant::now() < limit {
                sleep_until(ctx, Instant::now() + Duration::from_millis(20), &pb);
            }
            if !ctx.victim_offboarded.load(Ordering::Acquire) {
                return Err("offboard-big: the victim was not offboarded in time".to_string());
            }
            mark(ctx, marks, "offboarded");
            sleep_until(ctx, (t0 + duration).max(Instant::now() + Duration::from_secs(1)), &pb);
        }
        Scenario::Snapshot => {
            sleep_until(ctx, t0 + duration / 3, &pb);
            pb.set_message("snapshot");
            mark(ctx, marks, "snapshot");
            ctx.phase.store(u64::from(DURING), Ordering::Release);
            std::hint::black_box(ctx.paths.snapshot());
            ctx.phase.store(u64::from(OTHER), Ordering::Release);
            mark(ctx, marks, "snapshot done");
            sleep_until(ctx, (t0 + duration).max(Instant::now() + Duration::from_secs(1)), &pb);
        }
    }
    pb.finish_and_clear();
    Ok(extra)
}

/// `--joiners` clients arrive at once, each pinging from that moment (as a real client's
/// heartbeat thread does while its ReMount is in flight), and ReMount one segment each; the
/// workers serve the requests (see `storm`). Returns once every ReMount has returned.
fn join_storm(ctx: &Ctx<'_>) -> Result<Vec<Recorder>, String> {
    for c in ctx.storm.clients() {
        ctx.set_pinging(c, true);
    }
    ctx.storm.open();
    let limit = Instant::now() + Duration::from_secs(600);
    while !ctx.storm.all_done() {
        if Instant::now() > limit {
            return Err("join-storm: the ReMounts did not return within 600 s".to_string());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    ctx.storm.failure().map_or(Ok(Vec::new()), Err)
}
