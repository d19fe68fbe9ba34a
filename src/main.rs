//! The `mooncake-liveness` command line: argument parsing only, over the library's `sim`.
#![forbid(unsafe_code)]

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Recoverable client liveness for a Mooncake-style cache master.
#[derive(Debug, Parser)]
#[command(name = "mooncake-liveness", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a fleet scenario under Mooncake main's monitor (legacy, legacy@30s, legacy@60s) and
    /// the library (rfc, rfc+brakes) on a virtual clock and compare what each loses (the main job).
    Simulate(SimulateArgs),
    /// Resolve the liveness configuration (file + flags) and print it as JSON, with warnings on stderr.
    Config(ConfigArgs),
    /// Replay a JSON-Lines trace against the reference master on a virtual clock; prints one
    /// JSON line per operation and per master event. Exit 2 (`line N: ...` on stderr) when a
    /// line is malformed.
    Replay(ReplayArgs),
    /// Drive the reference master with real threads (workers, Ping, monitor, offboarding) and
    /// compare our lock structure with main's on the same work: latency per operation,
    /// heartbeat gaps as seen by the master, false Suspected/Offline, keys lost.
    #[cfg(not(loom))]
    Loadtest(LoadtestArgs),
    /// A Mooncake master the unmodified 0.3.13.post1 client talks to, on the lock-free core:
    /// takes the real mooncake_master's flags (`--rpc_port=50051 --enable_http_metadata_server=true
    /// ...`; `serve --help` lists what is implemented). Runs until SIGINT/SIGTERM.
    #[cfg(not(loom))]
    #[command(disable_help_flag = true)]
    Serve(ServeArgs),
}

/// `serve` arguments: the real master's gflags-style flags, parsed by `serve` itself.
#[cfg(not(loom))]
#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// `--flag=value` ... (see `serve --help`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    flags: Vec<String>,
}

/// `loadtest` arguments (defaults sized for a 2-core machine). Not built under `--cfg loom`
/// (the loom build compiles this binary for the models' sake; the load test needs real threads).
#[cfg(not(loom))]
#[derive(Debug, clap::Args)]
struct LoadtestArgs {
    /// Scenario to run.
    #[arg(long, value_enum, default_value = "all")]
    scenario: mooncake_liveness::loadtest::Scenario,
    /// Lock structure: ours, upstream-main, or both side by side on the same work.
    #[arg(long, value_enum, default_value = "both")]
    design: mooncake_liveness::loadtest::Design,
    /// Ping on a thread of its own (upstream with PR #4183) or on the data-plane worker pool
    /// (upstream main) [default: each design's own: ours dedicated, upstream-main shared].
    #[arg(long = "ping-thread", value_enum)]
    ping_thread: Option<mooncake_liveness::loadtest::PingThread>,
    /// With pings on the worker pool, the order a worker serves due pings and queued join-storm
    /// requests in: by arrival (fifo: the storm first, harshest for Ping) or every due ping
    /// first (gentlest); upstream's code leaves it to coro_rpc's event loop.
    #[arg(long = "serve-order", value_enum, default_value = "fifo")]
    serve_order: mooncake_liveness::loadtest::ServeOrder,
    /// Whether join-storm's ReMounts walk every metadata shard: `walk` (PR #2991's squash, and
    /// main after an HA promotion) or `none` (main and the released 0.3.14 master on a plain join).
    #[arg(long = "storm-walk", value_name = "walk|none", default_value = "walk", value_parser = ["walk", "none"])]
    storm_walk: String,
    /// Data-plane worker threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Preloaded objects (Get targets; what a ReMount walks) [default: 1000000; join-storm:
    /// 3000000 — see "join-storm's scale" in the README].
    #[arg(long)]
    keys: Option<usize>,
    /// Clients that ReMount at once in join-storm.
    #[arg(long, default_value_t = 12)]
    joiners: usize,
    /// Objects of the client offboarded in offboard-big.
    #[arg(long = "victim-keys", default_value_t = 1_000_000)]
    victim_keys: usize,
    /// Pinging clients (segment holders and the victim included; joiners come on top)
    /// [default: 10000; join-storm: 2000].
    #[arg(long)]
    clients: Option<usize>,
    /// Clients holding a memory segment (the preloaded objects spread over them).
    #[arg(long = "segment-clients", default_value_t = 16)]
    segment_clients: usize,
    /// Ping period of every client, ms [default: 200; join-storm: 60].
    #[arg(long = "ping-interval-ms")]
    ping_interval_ms: Option<u64>,
    /// Active TTL, ms [default: 1000; join-storm: 150].
    #[arg(long = "active-ttl-ms")]
    active_ttl_ms: Option<u64>,
    /// Suspicion TTL, ms [default: 2000; join-storm: 300].
    #[arg(long = "suspicion-ttl-ms")]
    suspicion_ttl_ms: Option<u64>,
    /// Measured seconds per scenario and design (join-storm and offboard-big extend it until
    /// the TTLs have played out) [default: 6; join-storm: 3].
    #[arg(long = "duration-s")]
    duration_s: Option<u64>,
    /// Seed of the workers' operation mix.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Object size, bytes.
    #[arg(long = "object-size", default_value_t = 4096)]
    object_size: u64,
    /// Write the runs here as a JSON array (one object per run).
    #[arg(long, value_name = "PATH")]
    json: Option<std::path::PathBuf>,
    /// Write <scenario>-<design>.svg (latency and heartbeat gap over time) here.
    #[arg(long, value_name = "DIR")]
    out: Option<std::path::PathBuf>,
    /// No progress bars.
    #[arg(long)]
    quiet: bool,
}

/// `simulate` arguments.
#[derive(Debug, clap::Args)]
struct SimulateArgs {
    /// The trouble preset: stress (every stall kind at once; the default), quiet, client-freeze,
    /// join-storm, rack-partition, master-pause.
    #[arg(long, value_name = "NAME", default_value = "stress")]
    scenario: String,
    /// On resume from a master pause, let the monitor check before the buffered pings are
    /// applied (the race the real master's pings won; this shows what losing it costs).
    #[arg(long = "master-pause-ticks-first")]
    master_pause_ticks_first: bool,
    /// Fleet size (up to 100,000 in 300 s simulated within two minutes).
    #[arg(long, default_value_t = 2_000)]
    clients: usize,
    /// Simulated seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    duration: u64,
    /// Seed of the workload (trouble and traffic).
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// The configuration the policies start from, resolved as `config` resolves it (the active
    /// TTL is also legacy's single `client_ttl`).
    #[command(flatten)]
    config: ConfigArgs,
    /// Policies to run, comma-separated: legacy, legacy@30s, legacy@60s, rfc, rfc+brakes
    /// (default: all five).
    #[arg(long, value_name = "LIST")]
    policy: Option<String>,
    /// Drive the fleet from a recorded heartbeat log (JSON lines {"t_ms","client"}).
    #[arg(long, value_name = "FILE")]
    heartbeats: Option<std::path::PathBuf>,
    /// Run a grid of (active, suspicion) TTLs under rfc+brakes and print false offboards vs
    /// detection latency per cell.
    #[arg(long)]
    sweep: bool,
    /// Write report.md, report.json and states.svg (or sweep.md/sweep.json) here.
    #[arg(long, value_name = "DIR")]
    out: Option<std::path::PathBuf>,
    /// Write the run's metrics here, in Prometheus text format, each series labelled
    /// `policy="<name>"`.
    #[arg(long, value_name = "FILE")]
    metrics: Option<std::path::PathBuf>,
}

/// `replay` arguments.
#[derive(Debug, clap::Args)]
struct ReplayArgs {
    /// The trace (`-` for standard input).
    #[arg(value_name = "TRACE.jsonl")]
    trace: std::path::PathBuf,
    /// Write the output here instead of standard output.
    #[arg(long, value_name = "OUT.jsonl")]
    output: Option<std::path::PathBuf>,
    /// Write the run's metrics here, in Prometheus text format.
    #[arg(long, value_name = "FILE")]
    metrics: Option<std::path::PathBuf>,
    /// `rfc` (the library's recoverable liveness) or `legacy` (Mooncake main's client monitor:
    /// one TTL, a 1 s tick, expiry of every silent client in one batch).
    #[arg(long, value_name = "POLICY", default_value = "rfc")]
    policy: mooncake_liveness::sim::ReplayPolicy,
}

/// Configuration sources, resolved by `mooncake_liveness::config::resolve`: the `config`
/// subcommand's arguments, and `simulate`'s configuration.
#[derive(Debug, clap::Args)]
struct ConfigArgs {
    /// A master.yaml / master.json file.
    #[arg(long = "config", value_name = "FILE")]
    file: Option<std::path::PathBuf>,
    /// Deprecated alias of --client_active_ttl_sec.
    #[arg(long = "client_ttl", value_name = "SEC", allow_negative_numbers = true)]
    client_ttl: Option<f64>,
    /// Active TTL, seconds.
    #[arg(
        long = "client_active_ttl_sec",
        visible_alias = "active-ttl",
        value_name = "SEC",
        allow_negative_numbers = true
    )]
    client_active_ttl_sec: Option<f64>,
    /// Suspicion TTL, seconds.
    #[arg(
        long = "client_suspicion_ttl_sec",
        visible_alias = "suspicion-ttl",
        value_name = "SEC",
        allow_negative_numbers = true
    )]
    client_suspicion_ttl_sec: Option<f64>,
    /// Any other key, as KEY=VALUE (VALUE is JSON, or a plain string).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

impl ConfigArgs {
    /// The file (if any) and the command line, unresolved.
    fn sources(
        &self,
    ) -> Result<
        (
            Option<mooncake_liveness::config::RawConfig>,
            mooncake_liveness::config::CliOverrides,
        ),
        String,
    > {
        use mooncake_liveness::config::{CliOverrides, RawConfig};
        let file = match &self.file {
            Some(path) => Some(RawConfig::from_path(path).map_err(|e| e.to_string())?),
            None => None,
        };
        let mut other = RawConfig::new();
        for kv in &self.set {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("--set expects KEY=VALUE, got {kv:?}"))?;
            let value = serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.to_string()));
            other.set(k, value);
        }
        let cli = CliOverrides {
            client_ttl: self.client_ttl,
            client_active_ttl_sec: self.client_active_ttl_sec,
            client_suspicion_ttl_sec: self.client_suspicion_ttl_sec,
            other,
        };
        Ok((file, cli))
    }

    fn resolve(&self) -> Result<mooncake_liveness::config::Resolved, String> {
        let (file, cli) = self.sources()?;
        mooncake_liveness::config::resolve(file.as_ref(), &cli).map_err(|e| e.to_string())
    }
}

/// Prints resolution's warnings (`warning: ...`) and its Mooncake-key summary (no prefix: not a
/// warning) on standard error.
fn print_notes(resolved: &mooncake_liveness::config::Resolved) {
    for w in &resolved.warnings {
        eprintln!("warning: {w}");
    }
    if let Some(summary) = resolved.mooncake_summary() {
        eprintln!("{summary}");
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Simulate(args) => simulate(&args),
        Command::Config(args) => print_config(&args),
        Command::Replay(args) => replay(&args),
        #[cfg(not(loom))]
        Command::Loadtest(args) => loadtest(&args),
        #[cfg(not(loom))]
        Command::Serve(args) => ExitCode::from(mooncake_liveness::serve::main(&args.flags) as u8),
    }
}

#[cfg(not(loom))]
fn loadtest(args: &LoadtestArgs) -> ExitCode {
    use mooncake_liveness::loadtest::{run, table, write_charts, write_json, Options, StormScale};
    let (general, storm) = (Options::default(), StormScale::default());
    // A flag given explicitly applies to every scenario; one left out takes the scenario's
    // default (join-storm has a scale of its own).
    let opts = Options {
        scenario: args.scenario,
        design: args.design,
        ping_thread: args.ping_thread,
        serve_order: args.serve_order,
        storm_walk: args.storm_walk == "walk",
        threads: args.threads,
        keys: args.keys.unwrap_or(general.keys),
        joiners: args.joiners,
        victim_keys: args.victim_keys,
        clients: args.clients.unwrap_or(general.clients),
        segment_clients: args.segment_clients,
        ping_interval_ms: args.ping_interval_ms.unwrap_or(general.ping_interval_ms),
        active_ttl_ms: args.active_ttl_ms.unwrap_or(general.active_ttl_ms),
        suspicion_ttl_ms: args.suspicion_ttl_ms.unwrap_or(general.suspicion_ttl_ms),
        duration_s: args.duration_s.unwrap_or(general.duration_s),
        seed: args.seed,
        object_size: args.object_size,
        progress: !args.quiet,
        storm: StormScale {
            keys: args.keys.unwrap_or(storm.keys),
            clients: args.clients.unwrap_or(storm.clients),
            ping_interval_ms: args.ping_interval_ms.unwrap_or(storm.ping_interval_ms),
            active_ttl_ms: args.active_ttl_ms.unwrap_or(storm.active_ttl_ms),
            suspicion_ttl_ms: args.suspicion_ttl_ms.unwrap_or(storm.suspicion_ttl_ms),
            duration_s: args.duration_s.unwrap_or(storm.duration_s),
        },
    };
    if let Err(e) = opts.validate() {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    let result = run(&opts).and_then(|out| {
        print!("{}", table(&out.reports));
        if let Some(path) = &args.json {
            write_json(&out.reports, path)?;
        }
        if let Some(dir) = &args.out {
            write_charts(&out.charts, dir)?;
        }
        Ok(())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn replay(args: &ReplayArgs) -> ExitCode {
    use mooncake_liveness::sim::{replay_policy, ReplayError};
    use std::io::{BufReader, BufWriter, Read, Write};
    let input: Box<dyn Read> = if args.trace.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        match std::fs::File::open(&args.trace) {
            Ok(f) => Box::new(f),
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", args.trace.display());
                return ExitCode::FAILURE;
            }
        }
    };
    let output: Box<dyn Write> = match &args.output {
        Some(path) => match std::fs::File::create(path) {
            Ok(f) => Box::new(f),
            Err(e) => {
                eprintln!("error: cannot write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        },
        None => Box::new(std::io::stdout().lock()),
    };
    let metrics = args.metrics.as_ref().map(|_| install_prometheus());
    let mut out = BufWriter::new(output);
    let result = replay_policy(BufReader::new(input), &mut out, args.policy, |w| {
        eprintln!("warning: {w}")
    });
    if let (Some(path), Some(handle)) = (&args.metrics, metrics) {
        if let Err(e) = std::fs::write(path, handle.render()) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    // Output for the lines before a malformed one is kept.
    let flushed = out.flush();
    match (result, flushed) {
        (Ok(()), Ok(())) => ExitCode::SUCCESS,
        (Err(e @ ReplayError::Malformed { .. }), _) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
        (Err(e), _) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
        (Ok(()), Err(e)) => {
            eprintln!("error: I/O error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Installs a Prometheus recorder behind the `metrics` facade; render it at the end of the run.
fn install_prometheus() -> metrics_exporter_prometheus::PrometheusHandle {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    // Only fails if a recorder is already installed, which this binary never does twice.
    let _ = metrics::set_global_recorder(recorder);
    handle
}

fn print_config(args: &ConfigArgs) -> ExitCode {
    match args.resolve() {
        Ok(resolved) => {
            print_notes(&resolved);
            match serde_json::to_string_pretty(&resolved.config) {
                Ok(json) => {
                    println!("{json}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn simulate(args: &SimulateArgs) -> ExitCode {
    match simulate_inner(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn simulate_options(args: &SimulateArgs) -> Result<mooncake_liveness::sim::fleet::SimOptions, String> {
    use mooncake_liveness::sim::fleet::{parse_heartbeats, parse_policies, Scenario, SimOptions, Trouble};
    let scenario: Scenario = args.scenario.parse()?;
    let trouble = Trouble {
        master_pause_ticks_first: args.master_pause_ticks_first,
        ..scenario.trouble()
    };
    let (config_file, config_flags) = args.config.sources()?;
    let heartbeats = match &args.heartbeats {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            Some(parse_heartbeats(&text).map_err(|e| format!("{}: {e}", path.display()))?)
        }
        None => None,
    };
    let opts = SimOptions {
        clients: args.clients,
        duration_s: args.duration,
        seed: args.seed,
        config_file,
        config_flags,
        policies: args
            .policy
            .as_deref()
            .map(parse_policies)
            .transpose()?
            .unwrap_or_default(),
        heartbeats,
        trouble,
        ..SimOptions::default()
    };
    opts.validate()?;
    print_notes(&opts.resolved_config().map_err(|e| e.to_string())?);
    Ok(opts)
}

fn simulate_inner(args: &SimulateArgs) -> Result<(), String> {
    use mooncake_liveness::sim::fleet::{run, sweep, write_outputs};
    let opts = simulate_options(args)?;
    let metrics = args.metrics.as_ref().map(|_| install_prometheus());
    if args.sweep {
        let report = sweep(&opts, &[5.0, 10.0, 15.0], &[5.0, 10.0, 20.0], true);
        println!("{}", report.table());
        if let Some(dir) = &args.out {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            std::fs::write(dir.join("sweep.md"), report.markdown()).map_err(|e| e.to_string())?;
            std::fs::write(dir.join("sweep.json"), report.to_json()).map_err(|e| e.to_string())?;
        }
    } else {
        let report = run(&opts, true);
        println!("{}", report.table());
        if let Some(dir) = &args.out {
            write_outputs(&report, dir).map_err(|e| format!("cannot write to {}: {e}", dir.display()))?;
            println!("wrote {}/report.md, report.json, states.svg", dir.display());
        }
    }
    if let (Some(path), Some(handle)) = (&args.metrics, metrics) {
        std::fs::write(path, handle.render()).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}
