//! Named scenarios (`simulate --scenario NAME`): one stall kind each on a quiet background, and
//! `stress`, every kind at once (the default). Where each number comes from:
//! [`crate::docs::calibration`].

use super::workload::Trouble;
use std::fmt;
use std::str::FromStr;

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
