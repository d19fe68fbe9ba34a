//! Real offsets inside each client's registered segment: one offset allocator per mounted
//! segment (the `offset-allocator` crate, a port of Sebastian Aaltonen's `OffsetAllocator`,
//! which Mooncake's own allocator is based on: `mooncake-store/include/offset_allocator/`).
//!
//! The reference master accounts bytes per segment; the client needs addresses, because it
//! writes the object into that memory itself through its transfer engine. So `serve` keeps,
//! beside the master, a [`SegmentSpace`] per segment: base, size, transport endpoint, and the
//! allocator. Like Mooncake's, the allocator counts in units of `2^shift` bytes, the smallest
//! power of two that keeps a segment below 2^31 units (the crate's bins are 32-bit): a 64 MiB
//! segment is allocated byte by byte, a 16 GiB one in 8-byte units. And like Mooncake's
//! (3b5a594, `mooncake-store/src/offset_allocator.cpp:269`: the node keeps its `roundupSize`),
//! every allocation takes the whole size class its request rounds up to (at most 12.5 % more,
//! the allocator's 3 mantissa bits): a freed block then fits every later request of its class,
//! where an exact-size hole would sit in the class below and never be reused by a request of the
//! same size. The master is charged the same rounded size ([`charged_bytes`]), so its accounting
//! and the allocator agree on what is full and its LRU eviction starts where the allocator stops.
//!
//! # Ground rules
//!
//! - The allocator is a leaf mutex: taken last, for one allocate or free, nothing locked
//!   inside it.
//! - A [`Placement`] is an allocation's only handle: not `Clone`, freed by consuming it, so no
//!   allocation is freed twice. It holds its space, so it frees into the allocator it came from.
//! - Each space indexes the keys placed in it (`keys`, a leaf mutex like the allocator, never
//!   held with it): added when a placement is made, removed when it is freed, so a reconcile
//!   looks at one segment's keys, not at every key.
//! - A space is retired when its segment leaves the master (unmount, offboarding, a
//!   mismatched remount): the allocator is dropped then, and freeing a placement of a retired
//!   space does nothing. A later mount of the same segment gets a fresh space.
//! - [`Spaces`] maps the master's segment name to the live space; an `RwLock` read for each
//!   placement lookup, a write only for mount and retirement, and nothing built under it (a
//!   fresh space's allocator is made before the write lock is taken).

use crate::sync::{Arc, Mutex, MutexGuard, RwLock};
use mooncake_liveness_wire::types::Segment as WireSegment;
use offset_allocator::ext::min_allocator_size;
use offset_allocator::{Allocation, Allocator};
use std::collections::{HashMap, HashSet};

/// Largest number of units a space holds (the allocator's bins top out just below 2^32).
const MAX_UNITS: u64 = 1 << 31;
/// Fewest allocations a space holds at once (the crate's default node count).
const MIN_ALLOCS: u32 = 128 * 1024;
/// Most allocations a space holds at once. Mooncake's allocator starts at size / 4 KiB nodes
/// (1 Ki to 64 Ki) and grows on demand up to size / 1 KiB, at least 1 Mi and at most 64 Mi
/// (3b5a594, `mooncake-store/src/allocator.cpp:270-284`). This crate's allocator cannot grow:
/// its node array (32 bytes a node) is written whole when the segment mounts, so a space takes
/// size / 1 KiB nodes (upstream's ceiling for a segment of 1 GiB or more) between 128 Ki
/// (4 MiB, a 128 MiB segment or less) and 1 Mi (32 MiB, a 1 GiB segment or more).
const MAX_ALLOCS: u32 = 1 << 20;

/// The node count of a space of `size` bytes in `units` units: size / 1 KiB within
/// [`MIN_ALLOCS`]..=[`MAX_ALLOCS`], and no more than the segment can hold (each allocation
/// takes at least one unit). (It was 128 Ki for every segment until the real-client load test
/// filled a 1 GiB segment with 128-byte values: every PutStart after that failed, each after a
/// reconcile of the segment.)
fn max_allocs(size: u64, units: u32) -> u32 {
    let by_size = u32::try_from(size / 1024).unwrap_or(u32::MAX);
    by_size.clamp(MIN_ALLOCS, MAX_ALLOCS).min(units.saturating_add(2))
}

/// The size class `units` round up to (the block an allocation of `units` takes).
fn class_of(units: u64) -> Option<u64> {
    let units = u32::try_from(units).ok().filter(|u| u64::from(*u) <= MAX_UNITS)?;
    Some(u64::from(min_allocator_size(units)))
}

/// What the master is charged for an object of `size` bytes: the block it takes in a segment
/// counted byte by byte (segments of 2 GiB or less); `size` itself beyond that.
pub(crate) fn charged_bytes(size: u64) -> u64 {
    class_of(size).unwrap_or(size)
}

/// One mounted segment's address space.
pub(crate) struct SegmentSpace {
    /// The segment's name in the reference master (its UUID, `first-second`).
    pub(crate) name: String,
    /// The client's name for it (`segment_name`, its `ip:port`: what logs and the capacity
    /// metric name it by).
    pub(crate) endpoint: String,
    /// Where the client's transfer engine takes transfers (`te_endpoint`): what replica
    /// descriptors carry, as upstream's allocator is given it (`mooncake-store/src/segment.cpp`
    /// `MountSegment`, 3b5a594:196). The segment's name with the HTTP metadata server; the
    /// engine's own P2P address with the P2P handshake.
    pub(crate) te_endpoint: String,
    /// Transport protocol.
    pub(crate) protocol: String,
    /// First byte's address in the client.
    pub(crate) base: u64,
    /// Size, bytes.
    pub(crate) size: u64,
    shift: u32,
    alloc: Mutex<Option<Allocator<u32>>>,
    keys: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for SegmentSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentSpace")
            .field("name", &self.name)
            .field("endpoint", &self.endpoint)
            .field("te_endpoint", &self.te_endpoint)
            .field("base", &self.base)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// One allocation inside a space.
pub(crate) struct Placement {
    space: Arc<SegmentSpace>,
    key: String,
    alloc: Allocation<u32>,
    /// Byte offset from the segment's base.
    pub(crate) offset: u64,
    /// Bytes asked for.
    pub(crate) size: u64,
}

impl std::fmt::Debug for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Placement")
            .field("segment", &self.space.name)
            .field("offset", &self.offset)
            .field("size", &self.size)
            .finish()
    }
}

impl Placement {
    /// The space it is in.
    pub(crate) fn space(&self) -> &Arc<SegmentSpace> {
        &self.space
    }

    /// The address the client writes to.
    pub(crate) fn address(&self) -> u64 {
        self.space.base + self.offset
    }

    /// Frees it (only from the index, if its space was retired).
    pub(crate) fn free(self) {
        if let Some(a) = self.space.allocator().as_mut() {
            a.free(self.alloc);
        }
        self.space.index().remove(&self.key);
    }
}

impl SegmentSpace {
    /// A space for `seg`, known to the master as `name`; `None` for a segment of size 0 or one
    /// that would end past the top of the address space (or hold more than 2^31 units of 2^31
    /// bytes).
    pub(crate) fn new(name: String, seg: &WireSegment) -> Option<Self> {
        if seg.size == 0 || seg.base.checked_add(seg.size).is_none() {
            return None;
        }
        let shift = (0..32).find(|s| seg.size >> s <= MAX_UNITS)?;
        let units = (seg.size >> shift) as u32;
        Some(Self {
            name,
            endpoint: seg.name.clone(),
            te_endpoint: seg.te_endpoint.clone(),
            protocol: seg.protocol.clone(),
            base: seg.base,
            size: seg.size,
            shift,
            alloc: Mutex::new(Some(Allocator::with_max_allocs(units, max_allocs(seg.size, units)))),
            keys: Mutex::new(HashSet::new()),
        })
    }

    fn allocator(&self) -> MutexGuard<'_, Option<Allocator<u32>>> {
        self.alloc.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn index(&self) -> MutexGuard<'_, HashSet<String>> {
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The keys placed here now (a copy).
    pub(crate) fn keys(&self) -> Vec<String> {
        self.index().iter().cloned().collect()
    }

    /// Does this space describe `seg` (same base, size, name and transfer endpoint)?
    pub(crate) fn matches(&self, seg: &WireSegment) -> bool {
        self.base == seg.base
            && self.size == seg.size
            && self.endpoint == seg.name
            && self.te_endpoint == seg.te_endpoint
    }

    /// Allocates `size` bytes for `key`; `None` when no free range is large enough (or it is
    /// retired).
    pub(crate) fn allocate(self: &Arc<Self>, key: &str, size: u64) -> Option<Placement> {
        if size == 0 || size > self.size {
            return None;
        }
        let units = class_of(size.div_ceil(1 << self.shift))?;
        let alloc = self.allocator().as_mut()?.allocate(u32::try_from(units).ok()?)?;
        let offset = u64::from(alloc.offset) << self.shift;
        debug_assert!(offset + size <= self.size, "{offset} + {size} > {}", self.size);
        self.index().insert(key.to_string());
        Some(Placement {
            space: self.clone(),
            key: key.to_string(),
            alloc,
            offset,
            size,
        })
    }

    /// Drops the allocator: every placement in it is void.
    pub(crate) fn retire(&self) {
        *self.allocator() = None;
    }

    /// Retired?
    pub(crate) fn is_retired(&self) -> bool {
        self.allocator().is_none()
    }

    /// Bytes free (the allocator's count, in bytes).
    pub(crate) fn free_bytes(&self) -> u64 {
        self.allocator()
            .as_ref()
            .map_or(0, |a| u64::from(a.storage_report().total_free_space) << self.shift)
    }
}

/// The live spaces, by the master's segment name.
#[derive(Debug, Default)]
pub(crate) struct Spaces {
    by_name: RwLock<HashMap<String, Arc<SegmentSpace>>>,
}

impl Spaces {
    /// The live space named `name`.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<SegmentSpace>> {
        self.by_name
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    /// Keeps the space of `name` if it describes `seg`, else installs a fresh one (retiring the
    /// old). `None` for a segment of size 0.
    /// The fresh space is built before the write lock is taken (its allocator writes up to
    /// 32 MiB of nodes), so no placement lookup waits for that; if another mount installed a
    /// matching space meanwhile, that one is kept and ours dropped.
    pub(crate) fn install(&self, name: &str, seg: &WireSegment) -> Option<Arc<SegmentSpace>> {
        let live = |s: &Arc<SegmentSpace>| s.matches(seg) && !s.is_retired();
        if let Some(s) = self.get(name).filter(live) {
            return Some(s);
        }
        let fresh = Arc::new(SegmentSpace::new(name.to_string(), seg)?);
        let mut map = self.by_name.write().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = map.get(name).filter(|s| live(s)) {
            return Some(s.clone());
        }
        if let Some(old) = map.insert(name.to_string(), fresh.clone()) {
            old.retire();
        }
        Some(fresh)
    }

    /// Retires and forgets `name`'s space.
    pub(crate) fn retire(&self, name: &str) -> Option<Arc<SegmentSpace>> {
        let old = self.by_name.write().unwrap_or_else(|e| e.into_inner()).remove(name);
        if let Some(s) = &old {
            s.retire();
        }
        old
    }

    /// Retires every space whose name `keep` refuses; returns them.
    pub(crate) fn retain(&self, keep: impl Fn(&str) -> bool) -> Vec<Arc<SegmentSpace>> {
        let mut map = self.by_name.write().unwrap_or_else(|e| e.into_inner());
        let gone: Vec<String> = map.keys().filter(|n| !keep(n)).cloned().collect();
        gone.iter()
            .filter_map(|n| map.remove(n))
            .inspect(|s| s.retire())
            .collect()
    }

    /// Every live space.
    pub(crate) fn all(&self) -> Vec<Arc<SegmentSpace>> {
        self.by_name
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use mooncake_liveness_wire::types::Uuid;

    fn seg(base: u64, size: u64) -> WireSegment {
        WireSegment {
            id: Uuid { first: 1, second: 2 },
            name: "192.0.2.1:1000".into(),
            base,
            size,
            te_endpoint: "192.0.2.1:1000".into(),
            protocol: "tcp".into(),
            host_id: "192.0.2.1".into(),
        }
    }

    #[test]
    fn placements_lie_inside_the_segment_and_never_overlap() {
        let space = Arc::new(SegmentSpace::new("s".into(), &seg(0x7f00_0000_0000, 1 << 20)).unwrap());
        let mut got: Vec<Placement> = Vec::new();
        while let Some(p) = space.allocate(&format!("k{}", got.len()), 1000) {
            assert!(p.address() >= space.base && p.address() + p.size <= space.base + space.size);
            got.push(p);
        }
        assert_eq!(got.len(), (1 << 20) / 1024, "1000 bytes take a 1024-byte block");
        let mut ranges: Vec<(u64, u64)> = got.iter().map(|p| (p.offset, p.offset + p.size)).collect();
        ranges.sort();
        assert!(ranges.windows(2).all(|w| w[0].1 <= w[1].0), "overlap");
        for p in got {
            p.free();
        }
        assert_eq!(space.free_bytes(), 1 << 20);
        assert!(space.allocate("x", (1 << 20) + 1).is_none() && space.allocate("x", 0).is_none());
        assert!(space.keys().is_empty(), "freed placements leave the index");
    }

    /// A 1 GiB segment holds 1 Mi objects and a 256 MiB one 256 Ki, more than the crate's
    /// default 128 Ki nodes (the count the real-client load test reached); a segment smaller
    /// than the node count is filled to its last byte.
    #[test]
    fn a_segment_holds_more_than_128k_objects() {
        let space = Arc::new(SegmentSpace::new("s".into(), &seg(0, 256 << 20)).unwrap());
        let n = 200_000;
        let got: Vec<Placement> = (0..n).map_while(|i| space.allocate(&format!("k{i}"), 4)).collect();
        assert_eq!(got.len(), n, "256 MiB holds 200 000 objects of 4 bytes");
        let tiny = Arc::new(SegmentSpace::new("t".into(), &seg(0, 100)).unwrap());
        let all: Vec<Placement> = (0..200).map_while(|i| tiny.allocate(&format!("k{i}"), 1)).collect();
        assert_eq!(all.len(), 100, "a 100-byte segment holds 100 one-byte objects");
        assert_eq!(max_allocs(1 << 30, 1 << 30), 1 << 20);
        assert_eq!(max_allocs(64 << 20, 64 << 20), 128 << 10);
        assert_eq!(max_allocs(1 << 40, 1 << 31), 1 << 20);
    }

    /// A freed block is reused by the next request of its size (with exact-size blocks a
    /// 5000-byte hole would sit in the 4608 class and never fit another 5000).
    #[test]
    fn a_freed_block_fits_the_next_request_of_its_size() {
        let space = Arc::new(SegmentSpace::new("s".into(), &seg(0, 256 << 10)).unwrap());
        let mut n = 0;
        let mut got: Vec<Placement> = std::iter::from_fn(|| {
            n += 1;
            space.allocate(&format!("k{n}"), 5000)
        })
        .collect();
        assert_eq!((got.len(), charged_bytes(5000)), (51, 5120));
        let freed = got.swap_remove(17);
        let offset = freed.offset;
        freed.free();
        assert_eq!(space.allocate("again", 5000).map(|p| p.offset), Some(offset));
    }

    #[test]
    fn a_large_segment_counts_in_units_and_retiring_voids_placements() {
        let space = Arc::new(SegmentSpace::new("s".into(), &seg(4096, 16 << 30)).unwrap());
        assert_eq!(space.shift, 3);
        let p = space.allocate("a", 5).unwrap();
        assert_eq!(p.offset % 8, 0);
        space.retire();
        assert!(space.allocate("b", 5).is_none());
        p.free(); // into nothing: no panic

        let spaces = Spaces::default();
        let a = spaces.install("s", &seg(0, 100)).unwrap();
        assert!(Arc::ptr_eq(&a, &spaces.install("s", &seg(0, 100)).unwrap()));
        let b = spaces.install("s", &seg(0, 200)).unwrap();
        assert!(a.is_retired() && !b.is_retired());
        assert!(spaces.install("z", &seg(0, 0)).is_none());
        assert!(
            spaces.install("z", &seg(u64::MAX - 10, 100)).is_none(),
            "wraps the address space"
        );
        assert!(
            spaces.install("z", &seg(0, 1 << 63)).is_none(),
            "more than 2^31 units of 2^31 bytes"
        );
        assert_eq!(spaces.retain(|n| n != "s").len(), 1);
        assert!(spaces.get("s").is_none() && b.is_retired());
    }
}
