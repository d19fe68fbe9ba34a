//! The load test's knobs, their defaults (sized for a 2-core machine: each run — one scenario
//! under one design — in at most about 30 s) and their validation.
//!
//! # join-storm's scaled clock
//! What decides a join storm is how long one ReMount holds upstream's `client_mutex_` against
//! the TTLs. Upstream measured 13.8 s per ReMount over 18 M keys (#3936, as #4181 reports it):
//! about 767 ns per key, against a 10 s active TTL, a 20 s suspicion TTL, a Ping every 1 s
//! (`client_service.cpp:4738`) and a monitor pass every 1 s. The reference master walks a key in
//! about 50 ns here, 1/15.4 of that, so join-storm runs on a clock ~15.4 times faster: every time
//! constant is upstream's divided by ~15.4 (active TTL 650 ms, suspicion 1300 ms, Ping and monitor
//! every 65 ms), and a key then costs the same share of a TTL as upstream's. The proportions are
//! upstream's: Ping interval = monitor period = 0.1 active TTL, suspicion = 2 × active. The
//! number of keys is then the number it stands for: the default 3 M keys is upstream with 3 M
//! keys (a hold of ~0.23 active TTL); `--keys 18000000` is #4181's rig (~1.4). The report's
//! `walk_ms` is the measured hold of one walk, so the ratio of a run can be checked.
//! A flag given on the command line applies to every scenario, join-storm included.

use std::fmt;

/// Which scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    /// Put/Get/Remove mix while every client pings.
    Steady,
    /// `--joiners` clients ReMount at once (each walking all metadata) while the rest ping.
    JoinStorm,
    /// One client holding `--victim-keys` objects stops pinging and is offboarded under load.
    OffboardBig,
    /// A snapshot of the whole master is taken under load.
    Snapshot,
    /// All four, in this order.
    All,
}

impl Scenario {
    /// The scenarios `self` stands for.
    pub fn expand(self) -> Vec<Scenario> {
        match self {
            Scenario::All => vec![
                Scenario::Steady,
                Scenario::JoinStorm,
                Scenario::OffboardBig,
                Scenario::Snapshot,
            ],
            s => vec![s],
        }
    }

    /// The name on the command line and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Steady => "steady",
            Scenario::JoinStorm => "join-storm",
            Scenario::OffboardBig => "offboard-big",
            Scenario::Snapshot => "snapshot",
            Scenario::All => "all",
        }
    }
}

/// Which lock structure drives the master.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Design {
    /// The master's own paths (Ping lock-free).
    Ours,
    /// Main's locks reproduced around the same master ([`UpstreamMain`](super::UpstreamMain)).
    UpstreamMain,
    /// Both, one after the other, on the same work (same seed and sizes).
    Both,
}

impl Design {
    /// The designs `self` stands for.
    pub fn expand(self) -> Vec<Design> {
        match self {
            Design::Both => vec![Design::Ours, Design::UpstreamMain],
            d => vec![d],
        }
    }

    /// The name on the command line and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Design::Ours => "ours",
            Design::UpstreamMain => "upstream-main",
            Design::Both => "both",
        }
    }
}

/// Where Ping runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PingThread {
    /// A thread of its own: ours, and upstream with PR #4183's one-thread heartbeat server.
    Dedicated,
    /// On the data-plane worker pool: upstream main, whose coro_rpc io threads run every
    /// handler, Ping included, to completion.
    Shared,
}

impl PingThread {
    /// Each design's own setup: ours serves Ping on a thread of its own; upstream main serves
    /// it on the RPC worker pool (it has no heartbeat server; #4183 adds one).
    pub fn of(design: Design) -> PingThread {
        match design {
            Design::UpstreamMain => PingThread::Shared,
            _ => PingThread::Dedicated,
        }
    }
}

/// In `shared` mode, what a worker serves first when both due Pings and queued join-storm
/// requests wait for it. Upstream's code does not decide it: coro_rpc runs each handler to
/// completion on the io thread that read it, in the order its event loop finds the requests,
/// so the load test runs both ends of the range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ServeOrder {
    /// By arrival, as an event loop's FIFO handler queue serves them: the storm's requests,
    /// all arrived at once, before the Pings that came due after them (the harshest for Ping).
    Fifo,
    /// Every due Ping before the next request (the gentlest for Ping).
    PingsFirst,
}

impl fmt::Display for ServeOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ServeOrder::Fifo => "fifo",
            ServeOrder::PingsFirst => "pings-first",
        })
    }
}

impl fmt::Display for PingThread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PingThread::Dedicated => "dedicated",
            PingThread::Shared => "shared",
        })
    }
}

/// The knobs join-storm scales differently (see the module doc); the CLI sets them to the
/// general ones whenever one is given explicitly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StormScale {
    /// Preloaded objects (what every ReMount walks).
    pub keys: usize,
    /// Pinging clients.
    pub clients: usize,
    /// Ping period, ms.
    pub ping_interval_ms: u64,
    /// Active TTL, ms.
    pub active_ttl_ms: u64,
    /// Suspicion TTL, ms.
    pub suspicion_ttl_ms: u64,
    /// Measured seconds (the storm starts after a quarter of them; the run then lasts until
    /// both TTLs have played out).
    pub duration_s: u64,
}

impl Default for StormScale {
    fn default() -> Self {
        // Upstream's Ping every 1 s, active TTL 10 s, suspicion TTL 20 s (types.h:96-98 at
        // c19e7c52f), each divided by ~15.4 = 767 ns / 50 ns per key (see the module doc).
        Self {
            keys: 3_000_000,
            clients: 2_000,
            ping_interval_ms: 65,
            active_ttl_ms: 650,
            suspicion_ttl_ms: 1_300,
            duration_s: 4,
        }
    }
}

/// Every knob of a load-test invocation.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Scenarios to run.
    pub scenario: Scenario,
    /// Designs to run.
    pub design: Design,
    /// Where Ping runs; `None`: each design's own ([`PingThread::of`]).
    pub ping_thread: Option<PingThread>,
    /// What a worker serves first in `shared` mode.
    pub serve_order: ServeOrder,
    /// join-storm's ReMounts walk every metadata shard (PR #2991's squash; main after an HA
    /// promotion) or not (main and the released 0.3.14 master on a plain join).
    pub storm_walk: bool,
    /// Data-plane worker threads.
    pub threads: usize,
    /// Preloaded objects (Get targets; join-storm's walk size).
    pub keys: usize,
    /// Clients joining at once in join-storm.
    pub joiners: usize,
    /// Objects of the client offboarded in offboard-big.
    pub victim_keys: usize,
    /// Pinging clients (segment holders included).
    pub clients: usize,
    /// Clients among them that hold a memory segment (the preloaded keys spread over them).
    pub segment_clients: usize,
    /// Ping period of every client, ms.
    pub ping_interval_ms: u64,
    /// Active TTL, ms.
    pub active_ttl_ms: u64,
    /// Suspicion TTL, ms.
    pub suspicion_ttl_ms: u64,
    /// Measured seconds per scenario (join-storm and offboard-big extend it to let the TTLs
    /// play out; see the README).
    pub duration_s: u64,
    /// Seed of the workers' operation mix.
    pub seed: u64,
    /// Object size, bytes.
    pub object_size: u64,
    /// Show progress bars on stderr.
    pub progress: bool,
    /// join-storm's own scale (replaces `keys`, `clients` and the ping/TTL knobs for it).
    pub storm: StormScale,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            scenario: Scenario::All,
            design: Design::Both,
            ping_thread: None,
            serve_order: ServeOrder::Fifo,
            storm_walk: true,
            threads: 2,
            keys: 1_000_000,
            joiners: 12,
            victim_keys: 1_000_000,
            clients: 10_000,
            segment_clients: 16,
            ping_interval_ms: 200,
            active_ttl_ms: 1_000,
            suspicion_ttl_ms: 2_000,
            duration_s: 6,
            seed: 42,
            object_size: 4096,
            progress: true,
            storm: StormScale::default(),
        }
    }
}

impl Options {
    /// Where `design`'s pings are served in this invocation.
    pub fn ping_thread_for(&self, design: Design) -> PingThread {
        self.ping_thread.unwrap_or(PingThread::of(design))
    }

    /// The knobs one run of `scenario` uses: join-storm takes its [`StormScale`].
    pub fn for_scenario(&self, scenario: Scenario) -> Options {
        let mut o = self.clone();
        if scenario == Scenario::JoinStorm {
            let s = self.storm;
            o.keys = s.keys;
            o.clients = s.clients;
            o.ping_interval_ms = s.ping_interval_ms;
            o.active_ttl_ms = s.active_ttl_ms;
            o.suspicion_ttl_ms = s.suspicion_ttl_ms;
            o.duration_s = s.duration_s;
        }
        o
    }

    /// Refuses values that cannot make a meaningful run of any scenario asked for, naming the
    /// flag and the value.
    pub fn validate(&self) -> Result<(), String> {
        self.scenario.expand().into_iter().try_for_each(|s| {
            self.for_scenario(s).validate_run().map_err(|e| match s {
                // Its knobs may be its own defaults, not what the user typed: say so.
                Scenario::JoinStorm => format!("{e} (in join-storm, whose defaults are its own scale; see --help)"),
                _ => e,
            })
        })
    }

    fn validate_run(&self) -> Result<(), String> {
        let positive = [
            ("--threads", self.threads as u64),
            ("--keys", self.keys as u64),
            ("--clients", self.clients as u64),
            ("--segment-clients", self.segment_clients as u64),
            ("--ping-interval-ms", self.ping_interval_ms),
            ("--active-ttl-ms", self.active_ttl_ms),
            ("--suspicion-ttl-ms", self.suspicion_ttl_ms),
            ("--duration-s", self.duration_s),
            ("--object-size", self.object_size),
        ];
        for (flag, v) in positive {
            if v == 0 {
                return Err(format!("{flag} must be at least 1, got 0"));
            }
        }
        if self.threads > 256 {
            return Err(format!("--threads must be at most 256, got {}", self.threads));
        }
        if self.segment_clients >= self.clients {
            return Err(format!(
                "--segment-clients ({}) must be below --clients ({}): offboard-big needs a victim and plain pingers",
                self.segment_clients, self.clients
            ));
        }
        if self.ping_interval_ms >= self.active_ttl_ms {
            return Err(format!(
                "--ping-interval-ms ({}) must be below --active-ttl-ms ({}), or healthy clients go Suspected by design",
                self.ping_interval_ms, self.active_ttl_ms
            ));
        }
        if self.duration_s > 3600 {
            return Err(format!("--duration-s must be at most 3600, got {}", self.duration_s));
        }
        if self.clients > 1_000_000 || self.joiners > 10_000 {
            return Err(format!(
                "--clients (≤ 1000000) / --joiners (≤ 10000) out of range: {} / {}",
                self.clients, self.joiners
            ));
        }
        // The TTLs go through the one configuration door, as every binary's do (a TTL over ten
        // years is refused there); the message keeps this command's flag names.
        let mut cli = crate::config::CliOverrides::default();
        cli.other
            .set_ms(crate::config::keys::CLIENT_ACTIVE_TTL_SEC, self.active_ttl_ms);
        cli.other
            .set_ms(crate::config::keys::CLIENT_SUSPICION_TTL_SEC, self.suspicion_ttl_ms);
        crate::config::resolve(None, &cli).map_err(|e| {
            format!(
                "--active-ttl-ms {} / --suspicion-ttl-ms {}: {e}",
                self.active_ttl_ms, self.suspicion_ttl_ms
            )
        })?;
        Ok(())
    }

    /// Segment size that never fills (no eviction may remove a preloaded key).
    pub fn segment_size(&self) -> u64 {
        let total = (self.keys + self.victim_keys + 1) as u64;
        total.saturating_mul(self.object_size).saturating_mul(4).max(1 << 30)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The TTLs are checked by the configuration door, with this command's flag names.
    #[test]
    fn a_ttl_over_ten_years_is_refused_naming_the_flag() {
        let o = Options {
            active_ttl_ms: u64::MAX / 2,
            ..Options::default()
        };
        let e = o.validate_run().unwrap_err();
        assert!(e.starts_with("--active-ttl-ms "), "{e}");
        assert!(e.contains("client_active_ttl_sec"), "{e}");
        assert!(Options::default().validate_run().is_ok());
    }

    #[test]
    fn join_storm_takes_its_own_scale_and_the_others_the_general_one() {
        let o = Options::default();
        let storm = o.for_scenario(Scenario::JoinStorm);
        assert_eq!(
            (storm.keys, storm.clients, storm.ping_interval_ms),
            (3_000_000, 2_000, 65)
        );
        assert_eq!(
            (storm.active_ttl_ms, storm.suspicion_ttl_ms, storm.duration_s),
            (650, 1_300, 4)
        );
        // Upstream's proportions: Ping and monitor every 0.1 active TTL, suspicion 2 x active.
        assert_eq!(storm.active_ttl_ms, 10 * storm.ping_interval_ms);
        assert_eq!(storm.suspicion_ttl_ms, 2 * storm.active_ttl_ms);
        for s in [Scenario::Steady, Scenario::OffboardBig, Scenario::Snapshot] {
            assert_eq!(o.for_scenario(s), o);
        }
        // A bad storm scale is refused only when join-storm runs.
        let bad = Options {
            storm: StormScale {
                ping_interval_ms: 650,
                ..StormScale::default()
            },
            ..Options::default()
        };
        assert!(bad.validate().unwrap_err().contains("--ping-interval-ms"));
        let steady_only = Options {
            scenario: Scenario::Steady,
            ..bad
        };
        steady_only.validate().expect("join-storm does not run");
    }

    #[test]
    fn defaults_are_valid_and_bad_values_name_their_flag() {
        Options::default().validate().expect("defaults");
        let bad = Options {
            threads: 0,
            ..Options::default()
        };
        assert!(bad.validate().unwrap_err().contains("--threads"));
        let bad = Options {
            ping_interval_ms: 1_000,
            ..Options::default()
        };
        assert!(bad.validate().unwrap_err().contains("--ping-interval-ms"));
        let bad = Options {
            segment_clients: 10_000,
            ..Options::default()
        };
        assert!(bad.validate().unwrap_err().contains("--segment-clients"));
    }
}
