//! The data room: the objects and where their bytes live. The metadata shards, the segment
//! table, the NoF segments, the tenants' quotas, the allocation RNG and the eviction cursor.
//!
//! Owns: the `metadata shard` and `segments` levels and the NoF, quota and RNG leaves (a segment's
//! allocator is a leaf of the segment itself). May not touch: any other room; a path that also
//! needs the tasks, the LocalDisks or the names calls those rooms' methods.
//!
//! Ground rules: a request path holds its key's shard for its whole critical section and reads
//! the segment table under it (briefly; a mount writes it briefly); the quota and RNG leaves
//! are taken alone and briefly, so they may be taken under a shard. The RNG is never held while
//! a segment's allocator is read (both are leaves).

use super::super::lock_order::{lock, Held, Level, Ordered};
use super::super::nof::NofSegments;
use super::super::quota::Quotas;
use super::super::segment::Segments;
use super::super::shard::Shards;
use crate::sync::{AtomicU64, Mutex, MutexGuard, Ordering, RwLock, RwLockReadGuard, RwLockWriteGuard};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

impl Ordered for NofSegments {
    const LEVEL: Level = Level::Leaf;
}
impl Ordered for ChaCha8Rng {
    const LEVEL: Level = Level::Leaf;
}

/// The data state behind its locks (see the module doc).
#[derive(Debug)]
pub(crate) struct Data {
    shards: Shards,
    segments: RwLock<Segments>,
    quotas: Quotas,
    nof: Mutex<NofSegments>,
    rng: Mutex<ChaCha8Rng>,
    evict_cursor: AtomicU64,
}

impl Data {
    /// Empty tables: `shards` metadata shards sized for `expected` objects, the RNG seeded
    /// with `seed`.
    pub(crate) fn new(shards: usize, expected: usize, seed: u64) -> Self {
        Self {
            shards: Shards::new(shards, expected),
            segments: RwLock::new(Segments::default()),
            quotas: Quotas::default(),
            nof: Mutex::new(NofSegments::default()),
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed)),
            evict_cursor: AtomicU64::new(0),
        }
    }

    /// The metadata shards (each taken at the `metadata shard` level by its own methods).
    pub(crate) fn shards(&self) -> &Shards {
        &self.shards
    }

    /// The segment table, read-locked (release it before calling back into the master).
    pub(crate) fn segments(&self) -> Held<RwLockReadGuard<'_, Segments>> {
        Held::take(Level::Segments, || {
            self.segments.read().unwrap_or_else(|e| e.into_inner())
        })
    }

    /// The segment table, write-locked (a mount or unmount, briefly).
    pub(crate) fn segments_mut(&self) -> Held<RwLockWriteGuard<'_, Segments>> {
        Held::take(Level::Segments, || {
            self.segments.write().unwrap_or_else(|e| e.into_inner())
        })
    }

    /// The tenants' quotas (each method takes the quota leaf alone).
    pub(crate) fn quotas(&self) -> &Quotas {
        &self.quotas
    }

    /// The NoF segments (the leaf, locked).
    pub(crate) fn nof(&self) -> Held<MutexGuard<'_, NofSegments>> {
        lock(&self.nof)
    }

    /// The allocation RNG (the leaf, locked).
    pub(crate) fn rng(&self) -> Held<MutexGuard<'_, ChaCha8Rng>> {
        lock(&self.rng)
    }

    /// The shard an eviction starts at: a rotating start, one step per eviction.
    pub(crate) fn next_evict_start(&self) -> usize {
        self.evict_cursor.fetch_add(1, Ordering::Relaxed) as usize
    }

    /// Each lock of the room, taken raw past the order check (a test holding every lock of
    /// the master at once, in the order it chooses; the shards have `Shards::lock_raw`).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn segments_raw(&self) -> RwLockWriteGuard<'_, Segments> {
        self.segments.write().unwrap_or_else(|e| e.into_inner())
    }

    /// See [`Data::segments_raw`].
    #[cfg(all(test, not(loom)))]
    pub(crate) fn nof_raw(&self) -> MutexGuard<'_, NofSegments> {
        self.nof.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// See [`Data::segments_raw`].
    #[cfg(all(test, not(loom)))]
    pub(crate) fn rng_raw(&self) -> MutexGuard<'_, ChaCha8Rng> {
        self.rng.lock().unwrap_or_else(|e| e.into_inner())
    }
}
