//! `mooncake-liveness loadtest`: the master's request path under load, in real time with real
//! threads — data-plane workers, Ping (on its own thread or on the worker pool), the monitor
//! and an offboarding worker — comparing our design with upstream's (PR #2991 on main's lock
//! structure) on the same work.
//!
//! | module | what |
//! |---|---|
//! | `options` | the knobs and their defaults |
//! | `paths` | [`MasterPaths`], the adapter to the master, implemented by the concurrent [`Master`](crate::master::Master) |
//! | `upstream` | upstream's records, monitor, offboarding worker and locks (PR #2991, cited line by line) around any [`MasterPaths`] |
//! | `record` | upstream's `ClientLivenessRecord` behaviour and its transition mutex |
//! | `posix` | [`PthreadRwLock`], a real glibc `pthread_rwlock_t` (upstream's `std::shared_mutex`), and the snapshot's `fork()` |
//! | `drivers` | the worker, ping, monitor and offboarding threads |
//! | `scenarios` | setup and the four scenario scripts |
//! | `stats` | hdrhistogram latencies, heartbeat gaps, the timeline |
//! | `report`, `chart` | the JSON / table and the SVG |
//!
//! What is measured:
//! - latency of every operation (µs, from call to return), per kind, and per phase
//!   (`before` / `during` the offboarding or snapshot);
//! - the heartbeat gap *as the master saw it*: the time between two recorded Pings of one
//!   client, each stamped when its call returned (the record is updated before Ping returns).
//!   Gaps still open at the end count, so a ping stuck until the end is not missed;
//! - false transitions: Active → Suspected and → Offline commits of clients that kept pinging,
//!   from the transitions the monitor reports, counted while measuring;
//! - keys lost: preloaded keys (on healthy holders) missing from the object table at the end.
//!
//! Owns: real-thread load runs (bounded by their duration) and their report. Drives the master
//! only through [`MasterPaths`] (`paths` is the one file that reaches the master and its
//! liveness core); may not touch the master's tables, locks or liveness words directly.

mod chart;
mod drivers;
mod options;
mod paths;
#[allow(unsafe_code)] // the real glibc lock and fork the upstream model takes; every block says why it is sound
mod posix;
mod record;
mod report;
mod scenarios;
mod stats;
mod storm;
mod upstream;

pub use options::{Design, Options, PingThread, Scenario, ServeOrder, StormScale};
pub use paths::{new_master, Change, Job, MasterPaths, Retired, TickOutcome};
pub use posix::PthreadRwLock;
pub use report::{table, Gap, Phases, RunReport};
pub use stats::Latency;
pub use upstream::UpstreamMain;

use std::path::Path;

/// Everything one invocation produced.
#[derive(Debug)]
pub struct Outcome {
    /// One report per run, in run order.
    pub reports: Vec<RunReport>,
    /// SVG documents by file name (`<scenario>-<design>.svg`).
    pub charts: Vec<(String, String)>,
}

/// Runs every (scenario, design) pair `opts` asks for, designs side by side per scenario.
pub fn run(opts: &Options) -> Result<Outcome, String> {
    opts.validate()?;
    let mut out = Outcome {
        reports: Vec::new(),
        charts: Vec::new(),
    };
    for scenario in opts.scenario.expand() {
        let opts = &opts.for_scenario(scenario);
        for design in opts.design.expand() {
            let r = scenarios::run_one(opts, scenario, design)?;
            out.reports.push(RunReport::new(opts, &r));
            let svg = chart::render_svg(opts, &r)?;
            out.charts
                .push((format!("{}-{}.svg", scenario.name(), design.name()), svg));
        }
    }
    Ok(out)
}

/// Writes `reports` as a JSON array (one object per run) to `path`.
pub fn write_json(reports: &[RunReport], path: &Path) -> Result<(), String> {
    let text = serde_json::to_string_pretty(reports).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Writes the charts into `dir` (created if needed).
pub fn write_charts(charts: &[(String, String)], dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for (name, svg) in charts {
        let path = dir.join(name);
        std::fs::write(&path, svg).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}
