//! The jobs room: the offboarding jobs the master holds (the driver, the outbox, the parked
//! jobs and their schedule, the per-job scratch, injected faults) and the worker pool.
//!
//! Owns: the `pool` level and the offboarding-state leaf. The pool is taken before the
//! offboarding state, never the reverse (`Level::Pool` sits above `Level::Leaf`). May not
//! touch: any other room; the steps a job runs call the other rooms' methods.

use super::super::lock_order::{lock, Held, Level, Ordered};
use super::super::offboard::{Offboarding, Pool};
use crate::sync::{Mutex, MutexGuard};

impl Ordered for Offboarding {
    const LEVEL: Level = Level::Leaf;
}
impl Ordered for Option<Pool> {
    const LEVEL: Level = Level::Pool;
}

/// The offboarding state and the worker pool behind their locks (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct Jobs {
    state: Mutex<Offboarding>,
    #[cfg_attr(loom, allow(dead_code))] // no worker pool under loom
    pool: Mutex<Option<Pool>>,
}

impl Jobs {
    /// The offboarding state (the leaf, locked).
    pub(crate) fn state(&self) -> Held<MutexGuard<'_, Offboarding>> {
        lock(&self.state)
    }

    /// The worker pool, if started (locked).
    #[cfg_attr(loom, allow(dead_code))] // no worker pool under loom
    pub(crate) fn pool(&self) -> Held<MutexGuard<'_, Option<Pool>>> {
        lock(&self.pool)
    }

    /// Each lock of the room, taken raw past the order check (a test holding every lock of
    /// the master at once, in the order it chooses).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn state_raw(&self) -> MutexGuard<'_, Offboarding> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// See [`Jobs::state_raw`].
    #[cfg(all(test, not(loom)))]
    pub(crate) fn pool_raw(&self) -> MutexGuard<'_, Option<Pool>> {
        self.pool.lock().unwrap_or_else(|e| e.into_inner())
    }
}
