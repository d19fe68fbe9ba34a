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
    /// Run the built-in scenario on a virtual clock and print what the liveness core did.
    Simulate {
        /// Print every operation and event as a JSON line, not only the summary.
        #[arg(long)]
        events: bool,
    },
    /// Resolve the liveness configuration (file + flags) and print it as JSON, with warnings on stderr.
    Config(ConfigArgs),
    /// Replay a JSON-Lines trace against the reference master on a virtual clock; prints one
    /// JSON line per operation and per master event. Exit 2 (`line N: ...` on stderr) when a
    /// line is malformed.
    Replay(ReplayArgs),
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
}

/// Configuration sources, resolved by `mooncake_liveness::config::resolve`.
#[derive(Debug, clap::Args)]
struct ConfigArgs {
    /// A master.yaml / master.json file.
    #[arg(long = "config", value_name = "FILE")]
    file: Option<std::path::PathBuf>,
    /// Deprecated alias of --client_active_ttl_sec.
    #[arg(long = "client_ttl", value_name = "SEC", allow_negative_numbers = true)]
    client_ttl: Option<f64>,
    /// Active TTL, seconds.
    #[arg(long = "client_active_ttl_sec", value_name = "SEC", allow_negative_numbers = true)]
    client_active_ttl_sec: Option<f64>,
    /// Suspicion TTL, seconds.
    #[arg(long = "client_suspicion_ttl_sec", value_name = "SEC", allow_negative_numbers = true)]
    client_suspicion_ttl_sec: Option<f64>,
    /// Any other key, as KEY=VALUE (VALUE is JSON, or a plain string).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

impl ConfigArgs {
    fn resolve(&self) -> Result<mooncake_liveness::config::Resolved, String> {
        use mooncake_liveness::config::{resolve, CliOverrides, RawConfig};
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
        resolve(file.as_ref(), &cli).map_err(|e| e.to_string())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Simulate { events } => simulate(events),
        Command::Config(args) => print_config(&args),
        Command::Replay(args) => replay(&args),
    }
}

fn replay(args: &ReplayArgs) -> ExitCode {
    use mooncake_liveness::sim::{replay_with_warnings, ReplayError};
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
    let result = replay_with_warnings(BufReader::new(input), &mut out, |w| eprintln!("warning: {w}"));
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
            for w in &resolved.warnings {
                eprintln!("warning: {w}");
            }
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

fn simulate(events: bool) -> ExitCode {
    let report = mooncake_liveness::sim::run_demo();
    if events {
        for line in &report.lines {
            println!("{line}");
        }
    }
    println!("built-in demo: 4 clients, active TTL 10 s, suspicion TTL 20 s, a 12 s master stall at 40 s");
    println!("  c1 healthy | c2 15 s GC pause | c3 crashes at 5 s, restarts at 50 s | c4 silent during the stall");
    println!("  recovered false suspicions : {}", report.recoveries);
    println!("  incarnations offboarded    : {}", report.offboarded);
    println!("  master stalls credited     : {}", report.stalls);
    if !events {
        println!("(run with --events for the event log)");
    }
    ExitCode::SUCCESS
}
