//! Harness of the loom models over the *real* reference master (`loom_tests/master_*.rs`): a
//! [`Rig`] (a `Master` on a `ManualClock`, 2 registry shards, 2 metadata shards, inline
//! offboarding), built inside every iteration, since every lock and atomic in it is a loom
//! object under `--cfg loom`; and a runner that lifts loom's per-execution branch limit, which
//! a whole master (mounts, puts, a tick that runs a job) exceeds.
//!
//! Under `cfg(loom)` the master creates 2 membership stripes and 2 name shards instead of 256 and
//! 64 (master/src/master/mod.rs, rooms/membership.rs): each is a modelled object built per iteration.
#![allow(dead_code, unreachable_pub)]

#[path = "../../tests/invariants/mod.rs"]
pub mod invariants;
#[path = "../common/stack.rs"]
mod stack;

pub use stack::{config, Seen, ACTIVE_TTL_MS, SUSPICION_TTL_MS};

use loom::sync::Arc;
use mooncake_liveness::master::{Master, MasterOptions, OffboardingDriver};
use mooncake_liveness::{Clock, LivenessState, ManualClock};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Preemption bound when `LOOM_MAX_PREEMPTIONS` is not set.
pub const DEFAULT_PREEMPTIONS: usize = 2;
/// The victim client (its incarnation goes Offline and is offboarded).
pub const VICTIM: &str = "a";
/// Its segment (large, so allocation prefers it while it serves).
pub const VICTIM_SEG: &str = "a0";
/// The survivor client (kept alive by pings).
pub const SURVIVOR: &str = "b";
/// Its segment.
pub const SURVIVOR_SEG: &str = "b0";

/// Runs `f` under loom (bound `LOOM_MAX_PREEMPTIONS`, default [`DEFAULT_PREEMPTIONS`]), checks
/// that the iterations together reached every outcome of `expected` (unless the run was cut
/// short on purpose), and prints iterations and time.
pub fn model<F>(name: &str, expected: &[&str], f: F)
where
    F: Fn(&Seen) + Sync + Send + 'static,
{
    model_capped(name, usize::MAX, expected, f)
}

/// As [`model`], with the preemption bound capped at `cap` (a model whose state space is too
/// big for the bound scripts/loom.sh asks for says so in its header).
pub fn model_capped<F>(name: &str, cap: usize, expected: &[&str], f: F)
where
    F: Fn(&Seen) + Sync + Send + 'static,
{
    let seen = Seen::default();
    let iterations = std::sync::Arc::new(AtomicUsize::new(0));
    let (counter, s) = (iterations.clone(), seen.clone());
    let mut builder = loom::model::Builder::new();
    let bound = builder.preemption_bound.unwrap_or(DEFAULT_PREEMPTIONS).min(cap);
    builder.preemption_bound = Some(bound);
    // A whole master runs far more than loom's default 1000 branches per execution.
    builder.max_branches = 1_000_000;
    let start = Instant::now();
    builder.check(move || {
        counter.fetch_add(1, Ordering::Relaxed);
        f(&s);
    });
    println!(
        "loom model {name}: {} iterations, preemption bound {bound}, {:.2?}; outcomes {:?}",
        iterations.load(Ordering::Relaxed),
        start.elapsed(),
        seen.outcomes()
    );
    let cut_short = bound < 2
        || builder.max_permutations.is_some()
        || builder.max_duration.is_some()
        || builder.checkpoint_file.is_some();
    if !cut_short {
        let got = seen.outcomes();
        for e in expected {
            assert!(got.contains(*e), "{name}: outcome {e:?} never reached (saw {got:?})");
        }
    }
}

/// A master on a manual clock with the victim and the survivor mounted at 0.
pub struct Rig {
    /// The base clock.
    pub clock: std::sync::Arc<ManualClock>,
    /// The master, shared with the model's threads.
    pub m: Arc<Master>,
}

impl Rig {
    /// The victim mounts `a0` (1000 bytes), the survivor `b0` (100 bytes), at time 0.
    pub fn new(driver: OffboardingDriver) -> Self {
        Self::with_shards(driver, 2)
    }

    /// As [`Rig::new`] with `metadata_shards` metadata shards.
    pub fn with_shards(driver: OffboardingDriver, metadata_shards: usize) -> Self {
        let clock = std::sync::Arc::new(ManualClock::new(0));
        let options = MasterOptions {
            registry_shards: 2,
            metadata_shards,
            offboarding: driver,
            ..MasterOptions::default()
        };
        let m = Master::new(clock.clone() as std::sync::Arc<dyn Clock>, config(), options);
        m.mount(VICTIM, VICTIM_SEG, 1000).unwrap();
        m.mount(SURVIVOR, SURVIVOR_SEG, 100).unwrap();
        Self { clock, m: Arc::new(m) }
    }

    /// A complete object of `size` bytes with `replicas` replicas.
    pub fn object(&self, key: &str, size: u64, replicas: usize) {
        self.m.put(key, size, replicas).unwrap();
        self.m.put_end(key).unwrap();
    }

    /// At `ms`: the survivor pings, then the monitor ticks.
    pub fn tick_at(&self, ms: u64) {
        self.clock.set_ms(ms);
        self.m.ping(SURVIVOR);
        self.m.tick();
    }

    /// First tick after the victim's active TTL: the victim is Suspected.
    pub fn suspect_victim(&self) {
        self.tick_at(ACTIVE_TTL_MS);
    }

    /// The tick at the victim's suspicion deadline: it commits Offline and (inline driver) runs
    /// the offboarding job, sweep and compare-and-erase included.
    pub fn offline_victim(&self) {
        self.tick_at(ACTIVE_TTL_MS + SUSPICION_TTL_MS);
    }

    /// Ticks (the survivor pinging) until no offboarding job is pending; panics after 20.
    pub fn quiesce(&self) {
        for _ in 0..20 {
            if self.m.stats().offline == 0 {
                return;
            }
            let now = self.clock.now_ms();
            self.tick_at(now + 1);
        }
        panic!("an offboarding job never completed: {:?}", self.m.stats());
    }

    /// The victim's current record's state (None: erased).
    pub fn victim_state(&self) -> Option<LivenessState> {
        let id = self.m.client_id(VICTIM)?;
        self.m.liveness().registry().get(id).map(|r| r.state())
    }

    /// `snap` encoded, decoded and restored into a fresh master of the same shape (2 registry
    /// and 2 metadata shards, inline offboarding) on a clock at this rig's now.
    pub fn restore(
        &self,
        snap: &mooncake_liveness::snapshot::Snapshot,
    ) -> Result<Rig, mooncake_liveness::snapshot::SnapshotError> {
        use mooncake_liveness::snapshot::Snapshot;
        let snap = Snapshot::decode(&snap.encode()).expect("a snapshot decodes");
        let clock = std::sync::Arc::new(ManualClock::new(self.clock.now_ms()));
        let options = MasterOptions {
            registry_shards: 2,
            metadata_shards: 2,
            offboarding: OffboardingDriver::Inline,
            ..MasterOptions::default()
        };
        let m = Master::restore(clock.clone() as std::sync::Arc<dyn Clock>, config(), options, &snap)?;
        Ok(Rig { clock, m: Arc::new(m) })
    }

    /// After the victim's job completed: nothing of it is left and everything balances.
    pub fn assert_victim_gone_and_clean(&self) {
        assert_eq!(self.victim_state(), None, "the victim's record survived its job");
        assert!(self.m.segments().by_name(VICTIM_SEG).is_none(), "a0 is still mounted");
        for (key, obj) in self.m.objects() {
            assert!(
                obj.replicas
                    .iter()
                    .all(|r| r.segment_ref().is_none_or(|s| s.name != VICTIM_SEG)),
                "{key} still references the offboarded a0"
            );
        }
        invariants::assert_clean(&self.m);
    }
}
