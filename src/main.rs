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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Simulate { events } => simulate(events),
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
