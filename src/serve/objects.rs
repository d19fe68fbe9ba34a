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
//!   Offline client, an unmounted segment). Their records go stale and are found by
//!   [`Objects::reconcile`], which visits one stripe at a time and keeps a placement only while
//!   the master still has a replica of that key on that segment. A Put meeting a stale record
//!   of its own key frees it first (the master said the key was free).
//! - Leases live in the record: set by GetReplicaList, checked by Remove, gone with the record.

use super::space::Placement;
use crate::master::{MasterCore, ReplicaKind};
use crate::sync::{Mutex, MutexGuard};
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

    /// Frees every placement the master no longer backs (see the module doc) and drops
    /// records left without placements; returns the placements freed.
    pub(crate) fn reconcile(&self, master: &MasterCore) -> usize {
        let mut freed = 0;
        for i in 0..STRIPES {
            let mut stripe = self.lock_index(i);
            stripe.retain(|key, rec| {
                let backed: Vec<String> = master.object(key).map_or_else(Vec::new, |o| {
                    o.replicas
                        .iter()
                        .filter_map(|r| match &r.kind {
                            ReplicaKind::Memory { segment, .. } => Some(segment.name.clone()),
                            ReplicaKind::LocalDisk { .. } => None,
                        })
                        .collect()
                });
                let (keep, gone): (Vec<_>, Vec<_>) = std::mem::take(&mut rec.placements)
                    .into_iter()
                    .partition(|(_, p)| !p.space().is_retired() && backed.contains(&p.space().name));
                freed += gone.len();
                for (_, p) in gone {
                    p.free();
                }
                rec.placements = keep;
                !rec.placements.is_empty()
            });
        }
        freed
    }
}
