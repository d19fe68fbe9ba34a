//! One level of the hierarchical timer wheel.
//!
//! A [`Level`] is [`SLOTS_PER_LEVEL`] buckets of [`Entry`]s plus a `u128` occupancy bitmask (bit
//! `s` set iff bucket `s` is non-empty), so the next non-empty bucket is found with one rotate
//! and one `trailing_zeros`, never by scanning buckets.
//!
//! Level `i` files an entry under its *slot number* `when >> (6 i)` (one slot spans `64^i`
//! ticks), in bucket `slot number mod 128`. The wheel (see `super`) keeps every entry of a level
//! within a window of fewer than [`SLOTS_PER_LEVEL`] slot numbers starting after the current
//! one, so a bucket never mixes two slot numbers and the absolute slot number of the next
//! occupied bucket can be recovered from the window's start.
//!
//! The exact `when` and the insertion sequence number are stored with each item: cascading
//! needs the `when` to re-file it, and firing sorts a slot by sequence number so that ties keep
//! insertion order.
//!
//! **Spare buffers.** A bucket that empties (fired, or cascaded away) hands its buffer, with its
//! capacity, to the level's [`SPARE_BUFFERS`] spares, and a bucket that starts to fill takes one
//! back. In a steady fleet every slot of a level fills to about the same size, so after the first
//! few slots no tick grows a buffer: a growing level-1 bucket (~64 ticks of re-arms, tens of MB
//! at 1M clients) would otherwise reallocate, copy and page-fault fresh memory inside one tick,
//! which was the slowest tick of the steady 1M bench. Memory held stays bounded: the buckets in
//! use plus at most [`SPARE_BUFFERS`] empty buffers per level.

use super::{LEVEL_BITS, SLOTS_PER_LEVEL};
use crate::clock::Tick;
use std::fmt;

/// Empty buffers a level keeps for its next buckets to fill (module doc, "Spare buffers").
const SPARE_BUFFERS: usize = 2;

/// Mask of a bucket index.
const BUCKET_MASK: u64 = SLOTS_PER_LEVEL as u64 - 1;

/// Bit position of level `level`'s slot number in a tick.
pub(crate) fn shift(level: usize) -> u32 {
    // Levels are < NUM_LEVELS, so this cannot truncate.
    level as u32 * LEVEL_BITS
}

/// The slot number of level `level` that an entry firing at `when` is filed under.
pub(crate) fn slot_number(when: Tick, level: usize) -> u64 {
    when.0 >> shift(level)
}

/// The bucket of a slot number.
fn bucket(number: u64) -> usize {
    (number & BUCKET_MASK) as usize
}

/// One scheduled item.
#[derive(Debug)]
pub(crate) struct Entry<T> {
    /// The tick it fires at.
    pub(crate) when: Tick,
    /// Insertion order (ties fire in this order).
    pub(crate) seq: u64,
    pub(crate) item: T,
}

/// One level: [`SLOTS_PER_LEVEL`] buckets and their occupancy bitmask.
pub(crate) struct Level<T> {
    level: usize,
    occupied: u128,
    slots: Vec<Vec<Entry<T>>>,
    /// Empty buffers (with capacity) for buckets that start to fill.
    spare: Vec<Vec<Entry<T>>>,
}

impl<T> Level<T> {
    /// An empty level number `level` (0 = one tick per slot).
    pub(crate) fn new(level: usize) -> Self {
        let slots = (0..SLOTS_PER_LEVEL).map(|_| Vec::new()).collect();
        Self {
            level,
            occupied: 0,
            slots,
            spare: Vec::with_capacity(SPARE_BUFFERS),
        }
    }

    /// True if no bucket holds an entry.
    pub(crate) fn is_empty(&self) -> bool {
        self.occupied == 0
    }

    /// Files `entry` under its slot number for this level.
    pub(crate) fn push(&mut self, entry: Entry<T>) {
        let b = bucket(slot_number(entry.when, self.level));
        let slot = &mut self.slots[b];
        if slot.capacity() == 0 {
            if let Some(buffer) = self.spare.pop() {
                *slot = buffer;
            }
        }
        slot.push(entry);
        self.occupied |= 1 << b;
    }

    /// Keeps the (emptied) `buffer` as a spare if the level has room for one, else frees it.
    pub(crate) fn recycle(&mut self, mut buffer: Vec<Entry<T>>) {
        buffer.clear();
        if buffer.capacity() > 0 && self.spare.len() < SPARE_BUFFERS {
            self.spare.push(buffer);
        }
    }

    /// Entries filed under slot number `number`.
    pub(crate) fn slot_len(&self, number: u64) -> usize {
        self.slots[bucket(number)].len()
    }

    /// Empties slot `number` and returns its entries (give the buffer back with [`Self::recycle`]).
    pub(crate) fn take_slot(&mut self, number: u64) -> Vec<Entry<T>> {
        let b = bucket(number);
        self.occupied &= !(1 << b);
        std::mem::take(&mut self.slots[b])
    }

    /// Moves up to `max` entries of slot `number` to the end of `out` (the slot's latest ones).
    pub(crate) fn take_some(&mut self, number: u64, max: usize, out: &mut Vec<Entry<T>>) {
        let b = bucket(number);
        let slot = &mut self.slots[b];
        let keep = slot.len().saturating_sub(max);
        out.extend(slot.drain(keep..));
        if slot.is_empty() {
            self.occupied &= !(1 << b);
            let buffer = std::mem::take(slot);
            self.recycle(buffer);
        }
    }

    /// Moves every entry of every slot to the end of `out`, keeping the buffers as spares.
    pub(crate) fn take_all(&mut self, out: &mut Vec<Entry<T>>) {
        while self.occupied != 0 {
            let b = self.occupied.trailing_zeros() as usize;
            self.occupied &= !(1 << b);
            let mut slot = std::mem::take(&mut self.slots[b]);
            out.append(&mut slot);
            self.recycle(slot);
        }
    }

    /// The first occupied slot number `>= from`, assuming every entry lies in
    /// `from ..= from + 127` (the wheel's window). `None` if the level is empty.
    pub(crate) fn next_occupied(&self, from: u64) -> Option<u64> {
        if self.is_empty() {
            return None;
        }
        let gap = self.occupied.rotate_right(bucket(from) as u32).trailing_zeros();
        Some(from + u64::from(gap))
    }
}

impl<T> fmt::Debug for Level<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Level")
            .field("level", &self.level)
            .field("occupied", &format_args!("{:#034x}", self.occupied))
            .field("len", &self.slots.iter().map(Vec::len).sum::<usize>())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn slot_number_table() {
        // (when, level, expected slot number)
        let table: &[(u64, usize, u64)] = &[
            (0, 0, 0),
            (1, 0, 1),
            (127, 0, 127),
            (128, 0, 128),
            (63, 1, 0),
            (64, 1, 1),
            (127, 1, 1),
            (128, 1, 2),
            (4_095, 2, 0),
            (4_096, 2, 1),
            (12_345, 1, 12_345 / 64),
            (12_345, 2, 12_345 / 4_096),
            ((1 << 36) - 1, 5, 63),
            (1 << 36, 5, 64),
            (u64::MAX, 5, u64::MAX >> 30),
        ];
        for &(when, level, number) in table {
            assert_eq!(slot_number(Tick(when), level), number, "when {when} level {level}");
        }
    }

    fn entry(when: u64) -> Entry<u64> {
        Entry {
            when: Tick(when),
            seq: when,
            item: when,
        }
    }

    fn level_with(level: usize, whens: &[u64]) -> Level<u64> {
        let mut l = Level::new(level);
        for &w in whens {
            l.push(entry(w));
        }
        l
    }

    #[test]
    fn next_occupied_table() {
        // (level, filed whens, from, expected slot number)
        let table: &[(usize, &[u64], u64, u64)] = &[
            (0, &[5], 1, 5),
            (0, &[5, 9], 5, 5),
            (0, &[5, 9], 6, 9),
            (0, &[127], 1, 127),
            (0, &[128 + 3], 100, 131),
            (0, &[12_345], 12_300, 12_345),
            (1, &[64], 1, 1),
            (1, &[64 * 130], 64, 130),
            (2, &[4_096 * 200], 150, 200),
            (5, &[1 << 31], 1, 2),
        ];
        for &(level, whens, from, number) in table {
            let l = level_with(level, whens);
            assert_eq!(
                l.next_occupied(from),
                Some(number),
                "level {level} whens {whens:?} from {from}"
            );
        }
    }

    #[test]
    fn empty_level_has_no_next_slot() {
        let l: Level<u64> = Level::new(3);
        assert!(l.is_empty());
        assert_eq!(l.next_occupied(0), None);
    }

    #[test]
    fn take_slot_and_take_some_clear_the_bit_when_empty() {
        let mut l = level_with(0, &[3, 131, 3]);
        assert_eq!(
            l.slot_len(3),
            3,
            "3 and 131 share a bucket only in a test (window > 128)"
        );
        let mut out = Vec::new();
        l.take_some(3, 2, &mut out);
        assert_eq!(out.iter().map(|e| e.item).collect::<Vec<_>>(), [131, 3]);
        assert!(!l.is_empty());
        l.take_some(3, 5, &mut out);
        assert!(l.is_empty());
        assert_eq!(out.len(), 3);
        let mut l = level_with(1, &[64, 70]);
        assert_eq!(l.take_slot(1).len(), 2);
        assert!(l.is_empty());
        assert!(l.take_slot(1).is_empty());
    }

    /// A buffer of `capacity` entries.
    fn buffer(capacity: usize) -> Vec<Entry<u64>> {
        Vec::with_capacity(capacity)
    }

    #[test]
    fn recycle_keeps_at_most_the_spare_count_of_emptied_buffers() {
        let mut l: Level<u64> = Level::new(0);
        let mut used = buffer(16);
        used.push(entry(7));
        l.recycle(used);
        assert_eq!(l.spare.len(), 1, "an emptied buffer is kept");
        assert!(
            l.spare[0].is_empty() && l.spare[0].capacity() >= 16,
            "kept empty, with its capacity"
        );
        for _ in 0..3 {
            l.recycle(buffer(16));
        }
        assert_eq!(l.spare.len(), SPARE_BUFFERS, "memory held stays bounded");
    }

    #[test]
    fn recycle_keeps_only_buffers_with_capacity() {
        let mut l: Level<u64> = Level::new(0);
        l.recycle(Vec::new());
        l.recycle(Vec::new());
        assert!(l.spare.is_empty(), "a buffer without capacity saves nothing");
        l.recycle(buffer(8));
        assert_eq!(l.spare.len(), 1);
    }

    #[test]
    fn a_bucket_that_starts_to_fill_takes_a_spare_buffer() {
        let mut l = level_with(0, &[3]);
        let taken = l.take_slot(3);
        let capacity = taken.capacity();
        l.recycle(taken);
        l.push(entry(9));
        assert!(l.spare.is_empty(), "the new bucket took the spare");
        assert_eq!(l.slots[9].capacity(), capacity);
    }

    #[test]
    fn debug_shows_the_level_its_occupancy_and_its_length() {
        let l = level_with(1, &[64, 70, 200]);
        assert_eq!(
            format!("{l:?}"),
            "Level { level: 1, occupied: 0x0000000000000000000000000000000a, len: 3, .. }"
        );
    }
}
