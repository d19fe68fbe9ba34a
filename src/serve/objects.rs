//! What `serve` keeps per key beside the master: where each replica's bytes are (its
//! [`Placement`]s), the replica ids handed out, the checksum PutEnd gave, and the read lease.
//!
//! # Ground rules
//!
//! - Keys are striped over [`STRIPES`] mutexes by hash. A request for a key holds its stripe
//!   for its whole critical section, master call included, so the master's object and this
//!   record change together as one step for every request of that key. Order: stripe → the
//!   master's own locks (inside its calls) → a space's allocator (leaf). Nothing takes a
//!   stripe while holding any of those, and no request holds two stripes.
//! - The master also drops objects on its own (eviction inside a Put, offboarding of an
//!   Offline client, an unmounted segment). Their placements go stale until a reconcile: of
//!   every segment after an unmount or an offboarding (`State::reconcile`, from the monitor
//!   thread), of one segment when a Put finds it full (the master evicted to make room, and
//!   that is where room is wanted). A reconcile of a segment
//!   (`State::reconcile_space`) takes the keys placed in it, keeps those the master still lists
//!   on that segment, and for each other one frees the placement through
//!   [`Objects::drop_unbacked`], which asks the master again under the key's stripe. A Put
//!   meeting a stale record of its own key frees it first (the master said the key was free).
//! - Leases live in the record: set by GetReplicaList, checked by Remove, gone with the record.

use super::space::{Placement, SegmentSpace};
use crate::sync::{Arc, Mutex, MutexGuard};
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::time::Instant;

/// Key stripes.
pub(crate) const STRIPES: usize = 256;

/// One key's placements and lease.
#[derive(Debug, Default)]
pub(crate) struct Record {
    /// One per replica, with the replica id handed out for it.
    pub(crate) placements: Vec<(u64, Placement)>,
    /// The checksum PutEnd gave.
    pub(crate) checksum: Option<u64>,
    /// Remove is refused before this instant (unless forced).
    pub(crate) lease_until: Option<Instant>,
}

impl Record {
    /// Frees every placement.
    pub(crate) fn free(self) {
        for (_, p) in self.placements {
            p.free();
        }
    }

    /// Is a lease running at `now`?
    pub(crate) fn leased(&self, now: Instant) -> bool {
        self.lease_until.is_some_and(|t| now < t)
    }
}

/// A stripe: the records of the keys that hash to it.
pub(crate) type Stripe = HashMap<String, Record>;

/// Every record, striped.
#[derive(Debug)]
pub(crate) struct Objects {
    stripes: Box<[Mutex<Stripe>]>,
}

impl Default for Objects {
    fn default() -> Self {
        Self {
            stripes: (0..STRIPES).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }
}

impl Objects {
    /// Locks `key`'s stripe.
    pub(crate) fn lock(&self, key: &str) -> MutexGuard<'_, Stripe> {
        let h = foldhash::fast::FixedState::default().hash_one(key);
        self.lock_index((h as usize) % STRIPES)
    }

    fn lock_index(&self, i: usize) -> MutexGuard<'_, Stripe> {
        self.stripes[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records held (one stripe at a time: a cut under concurrent requests).
    pub(crate) fn len(&self) -> usize {
        (0..STRIPES).map(|i| self.lock_index(i).len()).sum()
    }

    /// Frees `key`'s placement in `space` unless `backed` says the master still has that replica
    /// (asked under the key's stripe, so no request for the key runs between the answer and the
    /// free); drops the record when nothing is left. Returns whether it freed one.
    pub(crate) fn drop_unbacked(&self, key: &str, space: &Arc<SegmentSpace>, backed: impl FnOnce() -> bool) -> bool {
        let mut stripe = self.lock(key);
        let Some(rec) = stripe.get_mut(key) else { return false };
        let Some(at) = rec.placements.iter().position(|(_, p)| Arc::ptr_eq(p.space(), space)) else {
            return false;
        };
        if !space.is_retired() && backed() {
            return false;
        }
        let (_, p) = rec.placements.swap_remove(at);
        p.free();
        if rec.placements.is_empty() {
            stripe.remove(key);
        }
        true
    }
}
