//! Client id → current incarnation: the lookup Ping uses, and the remount barrier.
//!
//! # Design
//!
//! `SHARDS` shards, each a copy-on-write `hashbrown` map published through an `ArcCell`
//! (arc-swap): readers take **no lock** — a lookup is an arc-swap load (wait-free in the common
//! case) plus a hash probe — and writers (mount publishing a new incarnation, offboarding
//! erasing one) serialize on the shard's writer mutex, copy the shard, change the copy and
//! publish it. Ping never waits for a writer, and no data-plane path holds that mutex
//! (invariant 12). A copy costs O(shard size); with the default 1024 shards a master with a
//! million clients copies about a thousand entries per mount or erase — mounts are rare next
//! to pings, which is the trade a read-mostly map is for.
//!
//! Why not a sharded `RwLock<HashMap>` (dashmap)? A mount holding the write lock would make
//! every Ping hashing to that shard wait, which is exactly the coupling (upstream's
//! `client_mutex_`) that turned a long ReMount into a fleet-wide false expiry (#3936).
//!
//! # Ground rules
//!
//! - Only writers holding the shard's mutex publish a new map, so two writers never lose each
//!   other's change; a reader sees the old map or the new one, never a mix.
//! - A slot is `Live(record)` or `Vacant(last incarnation)`. Removal is compare-and-erase on
//!   record identity (`Arc::ptr_eq`): a job erases only the very record it offboarded, never a
//!   newer incarnation. Erasing leaves `Vacant(n)` so the next mount creates incarnation n + 1.
//! - An Offline record stays `Live` until its offboarding job completes: it is the Mount /
//!   ReMount barrier (invariant 14).
//! - Publishing a new incarnation is insert-if-still-vacant: two concurrent first mounts of one
//!   id cannot both publish.

use super::record::ClientLivenessRecord;
use super::{ClientId, Incarnation};
use crate::sync::{Arc, ArcCell, AtomicUsize, CachePadded, CellArc, Mutex, Ordering};
use hashbrown::HashMap;
use std::fmt;

/// Default number of registry shards (a power of two).
pub const DEFAULT_SHARDS: usize = 1024;

/// What the registry holds for one client id.
#[derive(Clone, Debug)]
pub enum Slot {
    /// The current incarnation (possibly Offline, pending offboarding).
    Live(Arc<ClientLivenessRecord>),
    /// No current incarnation; the last one had this number.
    Vacant(Incarnation),
}

type ShardMap = HashMap<ClientId, Slot>;

struct Shard {
    map: ArcCell<ShardMap>,
    writer: Mutex<()>,
}

/// The sharded, read-mostly client registry.
pub struct Registry {
    shards: Box<[Shard]>,
    mask: usize,
    /// Live records (Offline-pending included). Changed only under a shard's writer lock.
    live: CachePadded<AtomicUsize>,
}

/// Why a new incarnation could not be published.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PublishError {
    /// Another incarnation was published (or erased) since the caller looked.
    Raced,
}

impl Registry {
    /// A registry with `shards` shards (rounded up to a power of two, at least 1).
    pub fn with_shards(shards: usize) -> Self {
        let n = shards.max(1).next_power_of_two();
        let shards = (0..n)
            .map(|_| Shard {
                map: ArcCell::new(CellArc::new(ShardMap::new())),
                writer: Mutex::new(()),
            })
            .collect();
        Self {
            shards,
            mask: n - 1,
            live: CachePadded::new(AtomicUsize::new(0)),
        }
    }

    fn shard(&self, id: ClientId) -> &Shard {
        // Fibonacci hashing of the folded id spreads sequential and random ids alike.
        let folded = (id.0 as u64) ^ ((id.0 >> 64) as u64);
        let h = folded.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        &self.shards[h as usize & self.mask]
    }

    /// Runs `f` on the slot of `id` without taking any lock, and without cloning the record.
    #[inline]
    pub fn with_slot<R>(&self, id: ClientId, f: impl FnOnce(Option<&Slot>) -> R) -> R {
        let map = self.shard(id).map.load();
        f(map.get(&id))
    }

    /// The current record of `id`, if any (Offline records included).
    pub fn get(&self, id: ClientId) -> Option<Arc<ClientLivenessRecord>> {
        self.with_slot(id, |slot| match slot {
            Some(Slot::Live(r)) => Some(r.clone()),
            _ => None,
        })
    }

    /// The slot of `id` (cloned).
    pub fn slot(&self, id: ClientId) -> Option<Slot> {
        self.with_slot(id, |slot| slot.cloned())
    }

    /// Publishes `record` as the current incarnation of its client, iff the slot still holds
    /// what the caller saw: nothing (`seen == None`) or `Vacant(seen)`.
    pub(crate) fn publish(
        &self,
        record: Arc<ClientLivenessRecord>,
        seen: Option<Incarnation>,
    ) -> Result<(), PublishError> {
        let id = record.client();
        self.update(id, |map| {
            let current = match map.get(&id) {
                None => None,
                Some(Slot::Vacant(n)) => Some(*n),
                Some(Slot::Live(_)) => return Err(PublishError::Raced),
            };
            if current != seen {
                return Err(PublishError::Raced);
            }
            map.insert(id, Slot::Live(record));
            Ok(())
        })
        .inspect(|_| {
            // Relaxed: a statistic for the mass-suspicion brake; no memory is published through it.
            self.live.fetch_add(1, Ordering::Relaxed);
        })
    }

    /// Number of live records (Active, Suspected, or Offline with offboarding pending).
    pub fn len(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// No live record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes `record` iff it is still the current incarnation of its client (compare-and-erase
    /// on identity); the slot keeps its incarnation number. Returns whether it erased.
    pub fn compare_and_erase(&self, record: &Arc<ClientLivenessRecord>) -> bool {
        let id = record.client();
        self.update(id, |map| match map.get(&id) {
            Some(Slot::Live(r)) if Arc::ptr_eq(r, record) => {
                map.insert(id, Slot::Vacant(record.incarnation()));
                Ok(())
            }
            _ => Err(()),
        })
        .inspect(|_| {
            self.live.fetch_sub(1, Ordering::Relaxed);
        })
        .is_ok()
    }

    /// Copy-on-write update of `id`'s shard under its writer lock; publishes only on `Ok`.
    fn update<E>(&self, id: ClientId, f: impl FnOnce(&mut ShardMap) -> Result<(), E>) -> Result<(), E> {
        let shard = self.shard(id);
        let _writer = shard.writer.lock().unwrap_or_else(|e| e.into_inner());
        let mut copy: ShardMap = ShardMap::clone(&shard.map.load_full());
        f(&mut copy)?;
        shard.map.store(CellArc::new(copy));
        Ok(())
    }

    /// Every client id with no current incarnation and its last incarnation number, sorted.
    pub fn vacant(&self) -> Vec<(ClientId, Incarnation)> {
        let mut out: Vec<_> = self
            .shards
            .iter()
            .flat_map(|s| {
                let map = s.map.load();
                map.iter()
                    .filter_map(|(id, slot)| match slot {
                        Slot::Vacant(n) => Some((*id, *n)),
                        Slot::Live(_) => None,
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        out.sort();
        out
    }

    /// Records that `id`'s last incarnation was `last` (snapshot restore); only if the id is unknown.
    pub(crate) fn restore_vacant(&self, id: ClientId, last: Incarnation) -> bool {
        self.update(id, |map| {
            if map.contains_key(&id) {
                return Err(());
            }
            map.insert(id, Slot::Vacant(last));
            Ok(())
        })
        .is_ok()
    }

    /// Every live record, sorted by client id (diagnostics; O(clients)).
    pub fn records(&self) -> Vec<Arc<ClientLivenessRecord>> {
        let mut out: Vec<_> = self
            .shards
            .iter()
            .flat_map(|s| {
                let map = s.map.load();
                map.values()
                    .filter_map(|slot| match slot {
                        Slot::Live(r) => Some(r.clone()),
                        Slot::Vacant(_) => None,
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        out.sort_by_key(|r| r.client());
        out
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::with_shards(DEFAULT_SHARDS)
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry").field("shards", &self.shards.len()).finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn rec(id: u128, inc: u64) -> Arc<ClientLivenessRecord> {
        Arc::new(ClientLivenessRecord::new(
            ClientId(id),
            Incarnation(inc),
            crate::clock::LivenessMs(0),
            1_000,
        ))
    }

    #[test]
    fn publish_get_erase_republish() {
        let reg = Registry::with_shards(4);
        let r1 = rec(5, 1);
        assert!(reg.get(ClientId(5)).is_none());
        reg.publish(r1.clone(), None).unwrap();
        assert!(Arc::ptr_eq(&reg.get(ClientId(5)).unwrap(), &r1));
        // A second publish for the same id loses.
        assert_eq!(reg.publish(rec(5, 1), None), Err(PublishError::Raced));
        // Compare-and-erase refuses a different record with the same id.
        assert!(!reg.compare_and_erase(&rec(5, 1)));
        assert!(reg.compare_and_erase(&r1));
        assert!(!reg.compare_and_erase(&r1), "erase is not repeatable");
        assert!(matches!(reg.slot(ClientId(5)), Some(Slot::Vacant(Incarnation(1)))));
        assert_eq!(
            reg.publish(rec(5, 2), None),
            Err(PublishError::Raced),
            "must see Vacant(1)"
        );
        reg.publish(rec(5, 2), Some(Incarnation(1))).unwrap();
        assert_eq!(reg.get(ClientId(5)).unwrap().incarnation(), Incarnation(2));
    }

    /// `len` counts live records (a vacant slot is not one); `is_empty` agrees with it.
    #[test]
    fn len_counts_live_records_only() {
        let reg = Registry::with_shards(4);
        assert!(reg.is_empty());
        assert_eq!(reg.len(), 0);
        let r = rec(5, 1);
        reg.publish(r.clone(), None).unwrap();
        assert!(!reg.is_empty());
        assert_eq!(reg.len(), 1);
        reg.compare_and_erase(&r);
        assert!(reg.is_empty(), "a vacant slot is not a record");
        assert_eq!(reg.len(), 0);
    }

    #[test]
    fn records_are_sorted_and_skip_vacant() {
        let reg = Registry::with_shards(2);
        for id in [9u128, 3, 7] {
            reg.publish(rec(id, 1), None).unwrap();
        }
        let r7 = reg.get(ClientId(7)).unwrap();
        reg.compare_and_erase(&r7);
        let ids: Vec<_> = reg.records().iter().map(|r| r.client().0).collect();
        assert_eq!(ids, vec![3, 9]);
    }

    /// The design's premise (module doc): ids spread over the shards, so a writer copying one
    /// shard meets few of the pings. Ids that differ only in their low half (sequential ids)
    /// and ids that differ only in their high half both reach nearly every shard.
    #[test]
    fn ids_spread_over_the_shards() {
        let reg = Registry::with_shards(64);
        let index = |id: u128| {
            let shard = reg.shard(ClientId(id));
            reg.shards.iter().position(|s| std::ptr::eq(s, shard)).unwrap()
        };
        let low: std::collections::BTreeSet<_> = (0..1024u128).map(index).collect();
        let high: std::collections::BTreeSet<_> = (1..=1024u128).map(|i| index(i << 64)).collect();
        assert!(low.len() >= 60, "sequential ids reach {} of 64 shards", low.len());
        assert!(high.len() >= 60, "high-half ids reach {} of 64 shards", high.len());
    }

    #[test]
    fn shard_count_rounds_up() {
        assert_eq!(Registry::with_shards(0).shards.len(), 1);
        assert_eq!(Registry::with_shards(3).shards.len(), 4);
        assert_eq!(Registry::default().shards.len(), DEFAULT_SHARDS);
    }
}
