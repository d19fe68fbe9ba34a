//! [`ConfigHandle`]: the shared, hot-swappable configuration.
//!
//! # Ground rules
//!
//! - **What is shared.** Three stores: the published [`LivenessConfig`] in an `ArcCell`
//!   (arc-swap under std, wait-free readers), and a cache of its two TTLs in two plain atomics,
//!   because the signal path reads them on every Ping (two `Relaxed` loads instead of an
//!   arc-swap load: 15 ns of a ~45 ns Ping, measured). Two more, `lowest_*_ttl_ms`, are the
//!   monitor's: the shortest TTLs published since the monitor last took them, so a reload that shortens a TTL and one that lengthens it again between two ticks is
//!   not missed (a recovery between them starts a short window; see
//!   `Monitor::follow_ttl_reload`).
//! - **Who writes.** Only [`ConfigHandle::reload`], and only while holding `reload_lock`, a
//!   `Mutex<()>` around the three stores: reloads are serialized, so the last reload to take
//!   the lock writes all three last. Without it two racing reloads could interleave their
//!   stores (atomics of one, cell of the other) and leave [`ConfigHandle::ttls`] disagreeing
//!   with [`ConfigHandle::load`] until the next reload; `loom_tests/config_reload.rs` explores
//!   that race and fails if the lock is removed.
//! - **Who reads.** Anyone, without the lock: `load`/`snapshot` see the old or the new
//!   configuration, never a mix (one `ArcCell` load). `ttls` may, *while a reload runs*, pair
//!   a new active TTL with an old suspicion TTL for that one decision; each is a valid TTL, so
//!   no deadline is wrong. Once reloads are quiescent, `ttls` equals the TTLs of `load`.
//! - **Orderings.** The TTL atomics are `Relaxed`: each is a self-contained number and nothing
//!   else is published through it. `lowest_*_ttl_ms` are only read-modify-written
//!   (`fetch_min` by a reload, before its stores; `swap` by the monitor's tick, before it reads
//!   the TTLs): RMWs on one atomic read the latest value in its modification order, so no
//!   reload's TTL is lost between two swaps; it is seen by the first swap that follows its
//!   `fetch_min` in that order. A tick racing with a reload may see it one tick later, as it
//!   may see the TTL atomics one tick later (the pull-in limit is then the later tick's
//!   `last tick + TTL`). The cell's store/load are arc-swap's (a complete value).
//!   The mutex orders reloads with each other only; readers never take it.
//! - **What may block what.** A reload may wait for another reload (validation runs before
//!   the lock, so the wait is three stores long). Nothing else ever waits: readers, and so
//!   Ping, never block on a reload.
//!
//! New TTLs apply to deadlines computed after the swap: a deadline already stored (a client's
//! `last signal + active TTL`, a running suspicion window) keeps the TTL it was computed with
//! until the next signal or transition recomputes it.

use super::error::ConfigError;
use super::{LivenessConfig, Ttls};
use crate::sync::{ArcCell, ArcGuard, AtomicU64, CellArc, Mutex, Ordering};
use std::fmt;
use std::ops::Deref;

/// Shared, hot-swappable configuration.
///
/// Readers call [`load`](Self::load) (lock-free, for a short read) or
/// [`snapshot`](Self::snapshot) (an `Arc` to keep); [`reload`](Self::reload) validates a new
/// configuration and publishes it atomically. Readers see the old or the new configuration,
/// never a mix. Reloads are serialized by an internal lock (one writer at a time), so once
/// reloads stop, the TTLs read by [`ttls`](Self::ttls) equal those of [`load`](Self::load);
/// readers never take that lock. The ground rules at the top of `config/handle.rs` give the
/// writers, readers and orderings in full.
#[derive(Debug)]
pub struct ConfigHandle {
    /// The published configuration. Written by `reload` under `reload_lock`; read by anyone.
    cell: ArcCell<LivenessConfig>,
    /// Cache of `cell`'s active TTL. Written by `reload` under `reload_lock`; read by Ping.
    active_ttl_ms: AtomicU64,
    /// Cache of `cell`'s suspicion TTL. Written by `reload` under `reload_lock`; read by Ping.
    suspicion_ttl_ms: AtomicU64,
    /// The shortest active and suspicion TTLs published since the monitor last took them
    /// (`u64::MAX`: none). `fetch_min` by `reload` (under `reload_lock`); `swap` by the
    /// monitor's tick.
    lowest_active_ttl_ms: AtomicU64,
    lowest_suspicion_ttl_ms: AtomicU64,
    /// Serializes reloads (single writer of the three stores above); readers never take it.
    reload_lock: Mutex<()>,
}

/// A short-lived read of the current configuration, from [`ConfigHandle::load`]. Do not hold
/// it across blocking work; take a [`ConfigHandle::snapshot`] instead.
pub struct ConfigGuard {
    inner: ArcGuard<LivenessConfig>,
}

impl Deref for ConfigGuard {
    type Target = LivenessConfig;

    fn deref(&self) -> &LivenessConfig {
        let arc: &CellArc<LivenessConfig> = &self.inner;
        arc
    }
}

impl fmt::Debug for ConfigGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ConfigGuard").field(&**self).finish()
    }
}

impl ConfigHandle {
    /// Publishes `config`. It should come from [`resolve`](super::resolve) (or pass
    /// [`LivenessConfig::validate`]); it is not checked here.
    pub fn new(config: LivenessConfig) -> Self {
        Self {
            active_ttl_ms: AtomicU64::new(config.active_ttl_ms),
            suspicion_ttl_ms: AtomicU64::new(config.suspicion_ttl_ms),
            cell: ArcCell::new(CellArc::new(config)),
            lowest_active_ttl_ms: AtomicU64::new(u64::MAX),
            lowest_suspicion_ttl_ms: AtomicU64::new(u64::MAX),
            reload_lock: Mutex::new(()),
        }
    }

    /// The shortest active and suspicion TTLs any reload published since the last call (a
    /// field is `u64::MAX` when no reload published one since). The monitor calls it once per
    /// tick: a window started between two ticks may use any TTL published in between, not only
    /// the one in force at either tick.
    pub(crate) fn take_lowest_ttls(&self) -> Ttls {
        // Relaxed: an RMW reads the latest value in the modification order (ground rules).
        Ttls {
            active_ms: self.lowest_active_ttl_ms.swap(u64::MAX, Ordering::Relaxed),
            suspicion_ms: self.lowest_suspicion_ttl_ms.swap(u64::MAX, Ordering::Relaxed),
        }
    }

    /// The active and suspicion TTLs: two loads (see the ground rules).
    #[inline]
    pub fn ttls(&self) -> Ttls {
        // Relaxed: the values are self-contained numbers; nothing else is published with them.
        Ttls {
            active_ms: self.active_ttl_ms.load(Ordering::Relaxed),
            suspicion_ms: self.suspicion_ttl_ms.load(Ordering::Relaxed),
        }
    }

    /// The current configuration, lock-free.
    pub fn load(&self) -> ConfigGuard {
        ConfigGuard {
            inner: self.cell.load(),
        }
    }

    /// The current configuration as an `Arc` that stays valid across reloads.
    pub fn snapshot(&self) -> CellArc<LivenessConfig> {
        let guard = self.cell.load();
        let arc: &CellArc<LivenessConfig> = &guard;
        CellArc::clone(arc)
    }

    /// Validates `config` and, if valid, swaps it in; an invalid one leaves the current
    /// configuration in place. New TTLs apply to deadlines computed after the swap. Concurrent
    /// reloads are serialized: the last to take the lock wins all three stores.
    pub fn reload(&self, config: LivenessConfig) -> Result<(), ConfigError> {
        config.validate()?;
        // A poisoned lock only means another reload panicked between its stores; the stores
        // below rewrite all three, so the state is consistent again after them.
        let _writer = self.reload_lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // Before the TTL is visible to signals: the monitor learns of it no later than a
        // window computed with it could be armed.
        self.lowest_active_ttl_ms
            .fetch_min(config.active_ttl_ms, Ordering::Relaxed);
        self.lowest_suspicion_ttl_ms
            .fetch_min(config.suspicion_ttl_ms, Ordering::Relaxed);
        self.active_ttl_ms.store(config.active_ttl_ms, Ordering::Relaxed);
        self.suspicion_ttl_ms.store(config.suspicion_ttl_ms, Ordering::Relaxed);
        self.cell.store(CellArc::new(config));
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    fn config_with_ttls(active_ttl_ms: u64, suspicion_ttl_ms: u64) -> LivenessConfig {
        LivenessConfig {
            active_ttl_ms,
            suspicion_ttl_ms,
            stall_bound_ms: active_ttl_ms / 2,
            ..LivenessConfig::default()
        }
    }

    /// Two threads reload different configurations at the same moment, many rounds; after each
    /// round the TTL cache equals the published configuration. (Real threads only sample the
    /// interleavings; `loom_tests/config_reload.rs` explores all of them.)
    #[test]
    fn racing_reloads_leave_the_ttl_cache_equal_to_the_published_config() {
        let handle = Arc::new(ConfigHandle::new(LivenessConfig::default()));
        for round in 0..200u64 {
            let start = Arc::new(Barrier::new(2));
            let writers: Vec<_> = [(1_000 + round, 2_000 + round), (3_000 + round, 4_000 + round)]
                .into_iter()
                .map(|(a, s)| {
                    let (handle, start) = (handle.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        handle.reload(config_with_ttls(a, s)).unwrap();
                    })
                })
                .collect();
            for w in writers {
                w.join().unwrap();
            }
            let published = handle.load();
            assert_eq!(
                handle.ttls(),
                published.ttls(),
                "round {round}: the TTL cache disagrees with the published configuration"
            );
        }
    }

    #[test]
    fn a_rejected_reload_changes_neither_the_cache_nor_the_config() {
        let handle = ConfigHandle::new(config_with_ttls(7_000, 9_000));
        let bad = LivenessConfig {
            offboarding_workers: 0,
            ..config_with_ttls(1_000, 1_000)
        };
        assert!(handle.reload(bad).is_err());
        assert_eq!(handle.ttls(), config_with_ttls(7_000, 9_000).ttls());
        assert_eq!(handle.load().active_ttl_ms, 7_000);
    }

    #[test]
    fn reloads_leave_their_lowest_ttls_until_taken_and_a_guard_shows_its_config() {
        let handle = ConfigHandle::new(config_with_ttls(7_000, 9_000));
        let none = Ttls {
            active_ms: u64::MAX,
            suspicion_ms: u64::MAX,
        };
        assert_eq!(handle.take_lowest_ttls(), none, "no reload yet");
        handle.reload(config_with_ttls(2_000, 5_000)).unwrap();
        handle.reload(config_with_ttls(4_000, 3_000)).unwrap();
        let lowest = Ttls {
            active_ms: 2_000,
            suspicion_ms: 3_000,
        };
        assert_eq!(handle.take_lowest_ttls(), lowest, "the shortest of each since");
        assert_eq!(handle.take_lowest_ttls(), none, "taken");
        let shown = format!("{:?}", handle.load());
        assert!(
            shown.starts_with("ConfigGuard(LivenessConfig {") && shown.contains("4000"),
            "{shown}"
        );
    }
}
