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

use super::super::external::{ExternalMetadata, InMemoryMetadata};
use super::super::lock_order::{lock, Held, Level, Ordered};
use super::super::names::Names;
use crate::liveness::{ClientId, Owner};
use crate::sync::{CellArc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::collections::{BTreeMap, BTreeSet};

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
