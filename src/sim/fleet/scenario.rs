//! The trouble knobs ([`Trouble`]) and the named scenarios (`simulate --scenario NAME`): one
//! stall kind each on a quiet background, and `stress`, every kind at once (the default). Where each number comes from:
//! [`crate::docs::calibration`].

use std::fmt;
use std::str::FromStr;

/// The named, seeded distributions of trouble, one group of knobs per stall kind (see the module
/// documentation of `fleet` and `core/src/docs/calibration.rs` for where each default comes from).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Trouble {
    /// `client_pause` (a client process stops: GC, a starved interpreter): expected pauses per
    /// client per minute (a Poisson process over the fleet; each pause hits a uniformly chosen
    /// client that never crashes).
    pub pauses_per_client_per_min: f64,
    /// Pause duration: log-normal with this median, seconds...
    pub pause_median_s: f64,
    /// ...and this σ of the underlying normal (heavy right tail)...
    pub pause_sigma: f64,
    /// ...clamped to at most this, seconds.
    pub pause_max_s: f64,
    /// `partition` (pings lost in the network): how many, each at a uniform time in
    /// [15 %, 85 %] of the run.
    pub partitions: usize,
    /// Fraction of the fleet each partition cuts off (chosen uniformly, crash victims excluded).
    pub partition_fraction: f64,
    /// Partition duration: uniform in [`partition_min_s`, `partition_max_s`], seconds.
    pub partition_min_s: f64,
    /// Upper bound of the partition duration, seconds.
    pub partition_max_s: f64,
    /// `master_pause` (the whole master process stops, its monitor too; pings sent meanwhile are
    /// buffered and handled on resume): how many, each at a uniform time in [35 %, 65 %] of the run
    /// (the first at [`master_pause_at_s`](Self::master_pause_at_s) when given).
    pub master_pauses: usize,
    /// Master pause duration: uniform in [min, max], seconds.
    pub master_pause_min_s: f64,
    /// Upper bound of the master pause, seconds.
    pub master_pause_max_s: f64,
    /// When the first master pause starts, seconds (`None`: drawn).
    pub master_pause_at_s: Option<f64>,
    /// On resume the monitor's first check runs **before** the buffered pings are applied (the
    /// race the real master's pings won in every observed run; `false`, the default, is what
    /// was observed).
    pub master_pause_ticks_first: bool,
    /// `heartbeat_blocked` (the master and its monitor run on time, but Ping handling waits
    /// behind data-plane work, upstream #3936/#4181): how many blocks, each at a uniform time in
    /// [20 %, 80 %] of the run (the first at [`heartbeat_block_at_s`](Self::heartbeat_block_at_s)
    /// when given). A blocked ping is held and applied when the block ends.
    pub heartbeat_blocks: usize,
    /// Block duration: uniform in [min, max], seconds.
    pub heartbeat_block_min_s: f64,
    /// Upper bound of the block, seconds.
    pub heartbeat_block_max_s: f64,
    /// When the first block starts, seconds (`None`: drawn).
    pub heartbeat_block_at_s: Option<f64>,
    /// Fraction of the fleet whose pings a block holds (1: every ping, as when every RPC thread
    /// waits on the lock).
    pub heartbeat_block_fraction: f64,
    /// `crash`: fraction of the fleet that dies for good (rounded, at least one when > 0), each
    /// at a uniform time in [10 %, 55 %] of the run.
    pub crash_fraction: f64,
    /// Ping period, ms.
    pub ping_period_ms: u64,
    /// Per-ping jitter: each next ping is `period ± jitter` ms later (uniform).
    pub ping_jitter_ms: u64,
    /// Probability that one ping is lost on the network.
    pub ping_loss: f64,
}

impl Default for Trouble {
    /// The `stress` scenario: every stall kind at once (see `core/src/docs/calibration.rs`).
    fn default() -> Self {
        Self {
            pauses_per_client_per_min: 0.05,
            pause_median_s: 0.8,
            pause_sigma: 1.2,
            pause_max_s: 25.0,
            partitions: 2,
            partition_fraction: 0.05,
            partition_min_s: 8.0,
            partition_max_s: 20.0,
            master_pauses: 1,
            master_pause_min_s: 8.0,
            master_pause_max_s: 20.0,
            master_pause_at_s: None,
            master_pause_ticks_first: false,
            heartbeat_blocks: 1,
            heartbeat_block_min_s: 13.8,
            heartbeat_block_max_s: 13.8,
            heartbeat_block_at_s: None,
            heartbeat_block_fraction: 1.0,
            crash_fraction: 0.005,
            ping_period_ms: 1_000,
            ping_jitter_ms: 50,
            ping_loss: 0.005,
        }
    }
}

impl Trouble {
    /// No trouble at all (healthy fleet, no stall, no crash); a base for custom scenarios.
    pub fn none() -> Self {
        Self {
            pauses_per_client_per_min: 0.0,
            partitions: 0,
            master_pauses: 0,
            heartbeat_blocks: 0,
            crash_fraction: 0.0,
            ping_loss: 0.0,
            ..Self::default()
        }
    }
}

/// A named trouble preset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Scenario {
    /// Every stall kind at once, each at a calibrated size: a stress test, not a typical day.
    #[default]
    Stress,
    /// A healthy fleet: lost pings, short client pauses, a few crashes.
    Quiet,
    /// Client processes freeze (GC, a starved interpreter), some longer than the TTL.
    ClientFreeze,
    /// The master's Ping path is blocked behind a data-plane burst (a ReMount shard walk) while
    /// its monitor runs on time (#3936, #4181).
    JoinStorm,
    /// A rack (1/32 of the fleet) loses the network, twice.
    RackPartition,
    /// The whole master process stops once (SIGSTOP, a VM pause), as the real master was tested.
    MasterPause,
}

impl Scenario {
    /// Every scenario, in listing order.
    pub const ALL: [Scenario; 6] = [
        Scenario::Stress,
        Scenario::Quiet,
        Scenario::ClientFreeze,
        Scenario::JoinStorm,
        Scenario::RackPartition,
        Scenario::MasterPause,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Stress => "stress",
            Scenario::Quiet => "quiet",
            Scenario::ClientFreeze => "client-freeze",
            Scenario::JoinStorm => "join-storm",
            Scenario::RackPartition => "rack-partition",
            Scenario::MasterPause => "master-pause",
        }
    }

    /// Its trouble.
    pub fn trouble(self) -> Trouble {
        let quiet = Trouble {
            pauses_per_client_per_min: 0.05,
            pause_median_s: 0.3,
            pause_sigma: 0.8,
            pause_max_s: 5.0,
            crash_fraction: 0.005,
            ping_loss: 0.005,
            ..Trouble::none()
        };
        match self {
            Scenario::Stress => Trouble::default(),
            Scenario::Quiet => quiet,
            Scenario::ClientFreeze => Trouble {
                pauses_per_client_per_min: 0.2,
                pause_median_s: 2.0,
                pause_sigma: 1.2,
                pause_max_s: 60.0,
                ..quiet
            },
            Scenario::JoinStorm => Trouble {
                heartbeat_blocks: 2,
                heartbeat_block_min_s: 13.8,
                heartbeat_block_max_s: 91.0,
                heartbeat_block_fraction: 1.0,
                ..quiet
            },
            Scenario::RackPartition => Trouble {
                partitions: 2,
                partition_fraction: 1.0 / 32.0,
                partition_min_s: 8.0,
                partition_max_s: 60.0,
                ..quiet
            },
            Scenario::MasterPause => Trouble {
                master_pauses: 1,
                master_pause_min_s: 8.0,
                master_pause_max_s: 20.0,
                ..quiet
            },
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Scenario {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim().to_ascii_lowercase();
        Scenario::ALL.into_iter().find(|c| c.name() == s).ok_or_else(|| {
            let names: Vec<_> = Scenario::ALL.iter().map(|c| c.name()).collect();
            format!("unknown scenario `{s}` (expected one of {})", names.join(", "))
        })
    }
}
