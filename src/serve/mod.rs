//! `mooncake-liveness serve`: a Mooncake master that the unmodified 0.3.13.post1 client talks
//! to, built on the concurrent reference master ([`master`](crate::master)) and the lock-free
//! liveness core, speaking the wire protocol of `mooncake-liveness-wire`.
//!
//! | module | owns |
//! |---|---|
//! | `flags` (+ `upstream_flags`) | the real master's command line and `master.yaml` keys → [`ServeOptions`] |
//! | `state` | what the request paths share: the master, the address spaces, the key records |
//! | `space` | offsets inside each client's registered segment (`offset-allocator`) |
//! | `objects` | per-key placements, replica ids, checksum, read lease; reconcile with the master |
//! | `membership`, `data` | the RPC handlers (mount family and Ping; put/get/exist/remove) |
//! | `dispatch` | function id → handler; upstream's error replies |
//! | `conn` | the coro_rpc server on tokio |
//! | `http`, `metadata` | the transfer-metadata HTTP server and `/metrics` |
//! | `monitor` | the tick thread: liveness monitor, offboarding, event log, reconcile |
//! | `log` | glog-shaped lines with upstream's action names |
//! | `rpc_line` | the per-RPC response line, as upstream's `ScopedVLogTimer` writes it |
//!
//! Threads: tokio workers (`--rpc_thread_num`, default one per CPU) run the RPC connections
//! and the HTTP servers; a handler runs on the worker that read its request and blocks only on
//! the short locks of the master's lock table and of `state`. Ping takes no lock at all. The
//! monitor thread ticks; in `async` offboarding mode (the default here) the master's
//! offboarding workers run the jobs the ticks mint.
//!
//! Layout: the wire crate knows only the protocol (it depends on nothing of this crate), so the
//! library depends on it and `serve` lives here, in the library, where the binary reaches it
//! (a crate depending on the library could not be a dependency of the binary, which is in the
//! same package as the library).
#![forbid(unsafe_code)]

mod conn;
mod data;
mod dispatch;
mod flags;
mod http;
pub(crate) mod log;
mod membership;
mod metadata;
mod monitor;
mod objects;
mod rpc_line;
mod space;
mod state;
mod upstream_flags;

pub use flags::{parse, Parsed, ServeOptions, HELP};

use crate::clock::{Clock, SystemClock};
use crate::master::{Master, MasterOptions};
use crate::sync::Arc;
use log::{error, info, warning};
use state::State;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Runs `serve` with the arguments after `serve`; returns the process exit code (0 after a
/// clean shutdown on SIGINT/SIGTERM, 1 when it cannot run, 2 for a bad command line).
pub fn main(args: &[String]) -> i32 {
    match parse(args) {
        Ok(Parsed::Help) => {
            println!("{HELP}");
            0
        }
        Ok(Parsed::Version) => {
            println!("mooncake-liveness serve version {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Ok(Parsed::Run(options)) => match run(*options) {
            Ok(()) => 0,
            Err(e) => {
                error!("{e}");
                1
            }
        },
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

async fn bind(what: &str, host: &str, port: u16) -> Result<TcpListener, String> {
    TcpListener::bind((host, port))
        .await
        .map_err(|e| format!("cannot bind the {what} to {host}:{port}: {e}"))
}

/// The address a listener is bound to (the port the OS chose for port 0).
fn local(l: &TcpListener) -> String {
    l.local_addr().map_or_else(|e| format!("?({e})"), |a| a.to_string())
}

/// Serves until SIGINT or SIGTERM.
pub fn run(o: ServeOptions) -> Result<(), String> {
    log::set_rpc_lines(o.rpc_lines);
    for w in &o.warnings {
        warning!("{w}");
    }
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let prometheus = recorder.handle();
    if metrics::set_global_recorder(recorder).is_err() {
        warning!("a metrics recorder was installed already; /metrics shows only what it records");
    }
    let system = SystemClock::new();
    let wall = log::WallClock::new(system.epoch());
    let clock: Arc<dyn Clock> = Arc::new(system);
    let master = Master::new(clock, o.liveness.clone(), MasterOptions::default());
    let state = Arc::new(State::new(master, o.default_kv_lease_ttl_ms, wall));
    let threads = if o.rpc_thread_num == 0 {
        crate::sync::cpus()
    } else {
        o.rpc_thread_num
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .thread_name("serve-rpc")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the request threads: {e}"))?;
    runtime.block_on(async {
        let (stop_tx, stop) = watch::channel(false);
        let rpc = bind("RPC server", &o.rpc_address, o.rpc_port).await?;
        let metrics = bind("metrics server", &o.metrics_host, o.metrics_port).await?;
        let addresses = (local(&rpc), local(&metrics));
        tokio::spawn(http::serve(metrics, http::Site::Metrics(prometheus, state.clone()), stop.clone()));
        let mut http_metadata = "off".to_string();
        if o.enable_http_metadata_server {
            let l = bind(
                "HTTP metadata server",
                &o.http_metadata_server_host,
                o.http_metadata_server_port,
            )
            .await?;
            http_metadata = local(&l);
            tokio::spawn(http::serve(l, http::Site::Metadata(state.metadata.clone()), stop.clone()));
        }
        tokio::spawn(conn::serve(rpc, state.clone(), o.max_request_bytes, stop.clone()));
        let monitor = monitor::MonitorThread::spawn(state.clone(), o.tick_lines).map_err(|e| format!("cannot start the monitor: {e}"))?;
        let c = &o.liveness;
        info!(
            "action=serve_started, rpc={}, metrics={}, http_metadata={http_metadata}, rpc_thread_num={threads}, active_ttl_ms={}, suspicion_ttl_ms={}, monitor_tick_ms={}, offboarding_mode={:?}, lease_ms={}",
            addresses.0,
            addresses.1,
            c.active_ttl_ms,
            c.suspicion_ttl_ms,
            c.monitor_tick_ms,
            c.offboarding_mode,
            o.default_kv_lease_ttl_ms
        );
        let signal = wait_for_signal().await;
        info!("signal={signal}, action=serve_stopping");
        let _ = stop_tx.send(true);
        monitor.stop();
        let handed_back = state.master.shutdown_offboarding();
        info!("offboarding_jobs_handed_back={handed_back}, action=serve_stopped");
        Ok(())
    })
}

async fn wait_for_signal() -> &'static str {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return "SIGINT";
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "SIGINT",
        _ = term.recv() => "SIGTERM",
    }
}
