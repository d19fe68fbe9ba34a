//! The membership room: who is in the master and what they brought. The client-name table, the
//! client stripes, the membership gate, the LocalDisk registrations and the external metadata
//! store, each behind its own lock.
//!
//! Owns: the `client stripe`, `gate` and `names` levels and the LocalDisk and external-store
//! leaves. The segment table is the data room's: a mount holds its stripe and the gate here,
//! then writes that table through the data room. May not touch: any other room.
//!
//! Ground rules: a membership path holds its client's stripe (two mounts of one client run one
//! after the other; other clients' mounts and every request proceed) and the gate shared (a
//! snapshot takes it exclusively and waits for them). Ping takes none of these: a name lookup
//! is lock-free.
//!
//! ## The client-name table
//! Client names ↔ [`ClientId`]s, readable without a lock.
//!
//! Ground rules of the name table:
//!
//! - Two maps (name → id, id → name), each in copy-on-write shards published through an
//!   `ArcCell` (arc-swap), the registry's design: a lookup is a wait-free load plus a hash
//!   probe, so Ping, task fetches and callbacks resolve a name without any lock.
//! - As many shards as the liveness registry (`MasterOptions::registry_shards`, 1024 by
//!   default): an interning copies one shard, so its cost is O(names / shards). With a fixed 64
//!   shards, mounting 100,000 clients copied about 1,500 entries (and as many `Arc<str>`
//!   reference counts) per mount in each direction: a third of a 100k `simulate` run.
//! - Only a **successful first mount** interns a name (`intern`, under the client's membership
//!   stripe, so two first mounts of one name cannot both allocate). Ping, `fetch_tasks`,
//!   `task_done` and offload heartbeats of unknown names only `lookup`: they create nothing
//!   (a client pinging with random ids cannot grow the master).
//! - Ids are dense (1, 2, …) from an atomic counter; a restore sets the counter past every
//!   restored id, so a later interning never reuses one.
//! - Writers serialize on the shard's mutex, copy, change and publish: a reader sees the old or
//!   the new map, never a mix. Writers are rare (first mounts and restores).

use super::super::external::{ExternalMetadata, InMemoryMetadata};
use super::super::lock_order::{lock, Held, Level, Ordered};
use crate::liveness::{ClientId, Owner};
use crate::sync::{
    ArcCell, AtomicU64, CellArc, Mutex, MutexGuard, Ordering, RwLock, RwLockReadGuard, RwLockWriteGuard,
};
use hashbrown::HashMap;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, Hash};

/// Membership stripes (per-client mount serialization).
#[cfg(not(loom))]
const STRIPES: usize = 256;
/// Under loom every stripe is a modelled mutex built per iteration; the models use two clients,
/// so two stripes keep them cheap (two clients may share a stripe: that only serializes mounts).
#[cfg(loom)]
const STRIPES: usize = 2;

/// A client's LocalDisk (SSD) registration.
#[derive(Debug)]
pub struct LocalDisk {
    /// The incarnation that registered it.
    pub owner: Owner,
    /// The client's name (what descriptors print).
    pub client_name: CellArc<str>,
    /// Capacity, bytes.
    pub capacity: u64,
    /// Bytes used by LocalDisk replicas and offloads in flight.
    pub used: u64,
    /// Keys with a LocalDisk replica here.
    pub keys: BTreeSet<String>,
    /// Bytes released while a snapshot runs, still counted in `used` until it ends (as
    /// `Segment::hold_frees` does for segments).
    pub held: u64,
    /// A snapshot is running: releases are held.
    pub hold: bool,
}

impl LocalDisk {
    /// Releases `size` bytes (held until the running snapshot ends, if one runs).
    pub(crate) fn release(&mut self, size: u64) {
        if self.hold {
            self.held = self.held.saturating_add(size);
        } else {
            self.used = self.used.saturating_sub(size);
        }
    }

    /// Starts or ends holding releases for a snapshot (see `Segment::hold_frees`).
    pub(crate) fn hold_frees(&mut self, hold: bool) {
        self.hold = hold;
        if !hold {
            self.used = self.used.saturating_sub(std::mem::take(&mut self.held));
        }
    }
}

/// The LocalDisk registrations, by client.
pub(crate) type LocalDisks = BTreeMap<ClientId, LocalDisk>;

/// A client stripe's guarded value (its lock serializes one client's membership changes).
#[derive(Debug)]
pub(crate) struct Stripe;

/// The membership gate's guarded value.
#[derive(Debug)]
pub(crate) struct Gate;

impl Ordered for Stripe {
    const LEVEL: Level = Level::Stripe;
}
impl Ordered for LocalDisks {
    const LEVEL: Level = Level::Leaf;
}
impl Ordered for Box<dyn ExternalMetadata> {
    const LEVEL: Level = Level::Leaf;
}

/// The membership state behind its locks (see the module doc).
#[derive(Debug)]
pub(crate) struct Membership {
    names: Names,
    stripes: Box<[Mutex<Stripe>]>,
    gate: RwLock<Gate>,
    local_disks: Mutex<LocalDisks>,
    external: Mutex<Box<dyn ExternalMetadata>>,
}

impl Membership {
    /// An empty membership whose name table has `name_shards` shards.
    pub(crate) fn new(name_shards: usize) -> Self {
        Self {
            names: Names::with_shards(name_shards),
            stripes: (0..STRIPES).map(|_| Mutex::new(Stripe)).collect(),
            gate: RwLock::new(Gate),
            local_disks: Mutex::new(BTreeMap::new()),
            external: Mutex::new(Box::new(InMemoryMetadata::default())),
        }
    }

    /// The client-name table (readers lock-free; writers take the `names` level inside).
    pub(crate) fn names(&self) -> &Names {
        &self.names
    }

    /// The name of client `id` (its id, printed, if it has none).
    pub(crate) fn client_name(&self, id: ClientId) -> String {
        self.names.name(id).map_or_else(|| id.to_string(), |n| n.to_string())
    }

    /// The stripe of client `name`, locked.
    pub(crate) fn stripe(&self, name: &str) -> Held<MutexGuard<'_, Stripe>> {
        use std::hash::BuildHasher;
        let h = foldhash::fast::FixedState::default().hash_one(name);
        lock(&self.stripes[(h as usize) % STRIPES])
    }

    /// The gate, shared (a membership path or an offboarding step that unmounts).
    pub(crate) fn gate_shared(&self) -> Held<RwLockReadGuard<'_, Gate>> {
        Held::take(Level::Gate, || self.gate.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// The gate, exclusively (a snapshot).
    pub(crate) fn gate_exclusive(&self) -> Held<RwLockWriteGuard<'_, Gate>> {
        Held::take(Level::Gate, || self.gate.write().unwrap_or_else(|e| e.into_inner()))
    }

    /// The LocalDisk registrations (the leaf, locked).
    pub(crate) fn local_disks(&self) -> Held<MutexGuard<'_, LocalDisks>> {
        lock(&self.local_disks)
    }

    /// The external metadata store (the leaf, locked).
    pub(crate) fn external(&self) -> Held<MutexGuard<'_, Box<dyn ExternalMetadata>>> {
        lock(&self.external)
    }

    /// Each lock of the room, taken raw past the order check (a test holding every lock of
    /// the master at once, in the order it chooses).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn stripes_raw(&self) -> Vec<MutexGuard<'_, Stripe>> {
        self.stripes
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()))
            .collect()
    }

    /// See [`Membership::stripes_raw`].
    #[cfg(all(test, not(loom)))]
    pub(crate) fn gate_raw(&self) -> RwLockWriteGuard<'_, Gate> {
        self.gate.write().unwrap_or_else(|e| e.into_inner())
    }

    /// See [`Membership::stripes_raw`].
    #[cfg(all(test, not(loom)))]
    pub(crate) fn local_disks_raw(&self) -> MutexGuard<'_, LocalDisks> {
        self.local_disks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// See [`Membership::stripes_raw`].
    #[cfg(all(test, not(loom)))]
    pub(crate) fn external_raw(&self) -> MutexGuard<'_, Box<dyn ExternalMetadata>> {
        self.external.lock().unwrap_or_else(|e| e.into_inner())
    }
}

type Hasher = foldhash::fast::FixedState;

/// One shard: the published map and its writers' mutex.
type CowShard<K, V> = (ArcCell<HashMap<K, V, Hasher>>, Mutex<()>);

struct CowShards<K, V> {
    shards: Box<[CowShard<K, V>]>,
    mask: usize,
}

impl<K: Hash + Eq + Clone, V: Clone> CowShards<K, V> {
    /// `n` shards, a power of two (the caller rounds).
    fn new(n: usize) -> Self {
        let shards = (0..n)
            .map(|_| {
                (
                    ArcCell::new(CellArc::new(HashMap::with_hasher(Hasher::default()))),
                    Mutex::new(()),
                )
            })
            .collect();
        Self { shards, mask: n - 1 }
    }

    fn shard<Q: Hash + ?Sized>(&self, key: &Q) -> &CowShard<K, V> {
        let h = Hasher::default().hash_one(key);
        &self.shards[(h as usize) & self.mask]
    }

    fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.shard(key).0.load().get(key).cloned()
    }

    /// Inserts `key → value` unless `key` is present; returns the value now mapped.
    fn insert_if_absent(&self, key: K, value: V) -> V {
        let (cell, writer) = self.shard(&key);
        let _w = Held::take(Level::Names, || writer.lock().unwrap_or_else(|e| e.into_inner()));
        let current = cell.load_full();
        if let Some(v) = current.get(&key) {
            return v.clone();
        }
        let mut copy = HashMap::clone(&current);
        copy.insert(key, value.clone());
        cell.store(CellArc::new(copy));
        value
    }

    /// Removes `key` if it maps to something `keep` refuses.
    fn remove_if<Q>(&self, key: &Q, drop_it: impl FnOnce(&V) -> bool)
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (cell, writer) = self.shard(key);
        let _w = Held::take(Level::Names, || writer.lock().unwrap_or_else(|e| e.into_inner()));
        let current = cell.load_full();
        if current.get(key).is_some_and(drop_it) {
            let mut copy = HashMap::clone(&current);
            copy.remove(key);
            cell.store(CellArc::new(copy));
        }
    }

    fn all(&self) -> Vec<(K, V)> {
        self.shards
            .iter()
            .flat_map(|(cell, _)| {
                let map = cell.load();
                map.iter().map(|(k, v)| (k.clone(), v.clone())).collect::<Vec<_>>()
            })
            .collect()
    }
}

/// The name table.
pub(crate) struct Names {
    by_name: CowShards<CellArc<str>, ClientId>,
    by_id: CowShards<ClientId, CellArc<str>>,
    next: AtomicU64,
}

impl std::fmt::Debug for Names {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Names")
            .field("next", &self.next.load(Ordering::Relaxed))
            .finish()
    }
}

impl Names {
    /// A table of `shards` shards per direction (rounded up to a power of two, at least 1).
    pub(crate) fn with_shards(shards: usize) -> Self {
        let n = shards.max(1).next_power_of_two();
        Self {
            by_name: CowShards::new(n),
            by_id: CowShards::new(n),
            next: AtomicU64::new(1),
        }
    }

    /// The id of `name`, if it was ever interned. Lock-free.
    pub(crate) fn lookup(&self, name: &str) -> Option<ClientId> {
        self.by_name.get(name)
    }

    /// The name of `id`, if interned. Lock-free.
    pub(crate) fn name(&self, id: ClientId) -> Option<CellArc<str>> {
        self.by_id.get(&id)
    }

    /// The id of `name`, allocating the next one if it is new. Callers hold the name's
    /// membership stripe, so a name is allocated once.
    pub(crate) fn intern(&self, name: &str) -> ClientId {
        if let Some(id) = self.lookup(name) {
            return id;
        }
        // Relaxed: the id's uniqueness comes from the RMW; the maps publish the binding.
        let fresh = ClientId(u128::from(self.next.fetch_add(1, Ordering::Relaxed)));
        let name: CellArc<str> = CellArc::from(name);
        let id = self.by_name.insert_if_absent(name.clone(), fresh);
        self.by_id.insert_if_absent(id, name);
        id
    }

    /// Undoes the `intern` of a first mount that failed (under the same stripe), so a failed
    /// mount leaves no trace.
    pub(crate) fn forget(&self, name: &str, id: ClientId) {
        self.by_name.remove_if(name, |v| *v == id);
        self.by_id.remove_if(&id, |v| &**v == name);
    }

    /// Binds `name` to `id` from a snapshot; `false` if either is already bound.
    pub(crate) fn restore(&self, name: &str, id: ClientId) -> bool {
        if self.lookup(name).is_some() || self.name(id).is_some() {
            return false;
        }
        let name: CellArc<str> = CellArc::from(name);
        self.by_name.insert_if_absent(name.clone(), id);
        self.by_id.insert_if_absent(id, name);
        // Past every restored id, so a later `intern` never reuses one (dense or not).
        let past = u64::try_from(id.0).unwrap_or(u64::MAX).saturating_add(1);
        self.next.fetch_max(past, Ordering::Relaxed);
        true
    }

    /// Every binding, sorted by name (snapshots).
    pub(crate) fn all(&self) -> Vec<(CellArc<str>, ClientId)> {
        let mut v = self.by_name.all();
        v.sort();
        v
    }
}
