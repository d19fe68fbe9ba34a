//! One level of the hierarchical timer wheel.
//!
//! A [`Level`] is [`SLOTS_PER_LEVEL`] buckets of `(when, item)` pairs plus a `u64` occupancy
//! bitmask (bit `s` set iff slot `s` is non-empty), so the next non-empty slot is found with one
//! rotate and one `trailing_zeros`, never by scanning slots.
//!
//! Level `i` files an entry under the `i`-th base-[`SLOTS_PER_LEVEL`] digit of its `when`
//! ([`slot_for`]): one slot spans `64^i` ticks, the whole level `64^(i + 1)`. The exact `when`
//! is stored with each item so that cascading can move it to the right lower-level slot.
//!
//! Invariant kept by the wheel (see `super`): every entry of a level lies in a slot that starts
//! strictly after the current time, at most one full rotation ahead. The slot whose index equals
//! the current time's digit therefore means "one rotation later", which only the top level can
//! hold (entries clamped to the end of the wheel's range wrap around it).

use super::{LEVEL_BITS, SLOTS_PER_LEVEL, SLOT_MASK};
use crate::clock::Tick;
use std::fmt;

/// Bit position of level `level`'s digit in a tick.
fn shift(level: usize) -> u32 {
    // Levels are < NUM_LEVELS, so this cannot truncate.
    level as u32 * LEVEL_BITS
}

/// The slot of level `level` that an entry firing at `when` is filed under.
pub(crate) fn slot_for(when: Tick, level: usize) -> usize {
    ((when.0 >> shift(level)) & SLOT_MASK) as usize
}

/// The next non-empty slot of a level, as found by [`Level::next_occupied_slot`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OccupiedSlot {
    /// Slot index within the level.
    pub(crate) slot: usize,
    /// First tick the slot covers: no entry in it fires earlier.
    pub(crate) start: Tick,
}

/// One level: [`SLOTS_PER_LEVEL`] buckets and their occupancy bitmask.
pub(crate) struct Level<T> {
    level: usize,
    occupied: u64,
    slots: Vec<Vec<(Tick, T)>>,
}

impl<T> Level<T> {
    /// An empty level number `level` (0 = one tick per slot).
    pub(crate) fn new(level: usize) -> Self {
        let slots = (0..SLOTS_PER_LEVEL).map(|_| Vec::new()).collect();
        Self {
            level,
            occupied: 0,
            slots,
        }
    }

    /// True if no slot holds an entry.
    pub(crate) fn is_empty(&self) -> bool {
        self.occupied == 0
    }

    /// Files `item` (firing at `when`) under `when`'s digit for this level.
    pub(crate) fn push(&mut self, when: Tick, item: T) {
        let slot = slot_for(when, self.level);
        self.slots[slot].push((when, item));
        self.occupied |= 1 << slot;
    }

    /// Empties slot `slot` and returns its entries in the order they were filed.
    pub(crate) fn take_slot(&mut self, slot: usize) -> Vec<(Tick, T)> {
        self.occupied &= !(1 << slot);
        std::mem::take(&mut self.slots[slot])
    }

    /// The first non-empty slot strictly after the slot containing `now`, going round the level
    /// once (the slot containing `now` itself counts as one full rotation later). `None` if empty.
    pub(crate) fn next_occupied_slot(&self, now: Tick) -> Option<OccupiedSlot> {
        if self.is_empty() {
            return None;
        }
        let shift = shift(self.level);
        let now_digit = now.0 >> shift;
        // Rotate so that bit 0 is the slot right after `now`'s.
        let after_now = ((now_digit + 1) & SLOT_MASK) as u32;
        let gap = u64::from(self.occupied.rotate_right(after_now).trailing_zeros());
        // 1 ..= SLOTS_PER_LEVEL slots after `now`'s slot.
        let slot_number = now_digit + gap + 1;
        Some(OccupiedSlot {
            slot: (slot_number & SLOT_MASK) as usize,
            start: Tick(slot_number << shift),
        })
    }
}

impl<T> fmt::Debug for Level<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Level")
            .field("level", &self.level)
            .field("occupied", &format_args!("{:#018x}", self.occupied))
            .field("len", &self.slots.iter().map(Vec::len).sum::<usize>())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn slot_for_table() {
        // (when, level, expected slot)
        let table: &[(u64, usize, usize)] = &[
            (0, 0, 0),
            (1, 0, 1),
            (63, 0, 63),
            (64, 0, 0),
            (65, 0, 1),
            (63, 1, 0),
            (64, 1, 1),
            (127, 1, 1),
            (128, 1, 2),
            (4_095, 1, 63),
            (4_096, 1, 0),
            (4_095, 2, 0),
            (4_096, 2, 1),
            (262_143, 2, 63),
            (262_144, 2, 0),
            (262_144, 3, 1),
            (12_345, 0, 12_345 % 64),
            (12_345, 1, (12_345 / 64) % 64),
            (12_345, 2, 12_345 / 4_096),
            ((1 << 36) - 1, 5, 63),
            (1 << 36, 5, 0),
            (u64::MAX, 5, 63),
        ];
        for &(when, level, slot) in table {
            assert_eq!(slot_for(Tick(when), level), slot, "when {when} level {level}");
        }
    }

    fn level_with(level: usize, whens: &[u64]) -> Level<u64> {
        let mut l = Level::new(level);
        for &w in whens {
            l.push(Tick(w), w);
        }
        l
    }

    /// (level, filed whens, now, expected (slot, start))
    type NextSlotCase = (usize, &'static [u64], u64, (usize, u64));

    #[test]
    fn next_occupied_slot_table() {
        let table: &[NextSlotCase] = &[
            (0, &[5], 0, (5, 5)),
            (0, &[5, 9], 4, (5, 5)),
            (0, &[5, 9], 5, (9, 9)),
            (0, &[63], 0, (63, 63)),
            (0, &[64 + 3], 63, (3, 67)),
            (0, &[12_345], 12_340, (12_345 % 64, 12_345)),
            (1, &[64], 0, (1, 64)),
            (1, &[4_095], 100, (63, 4_032)),
            (1, &[4_096 + 64], 4_095, (1, 4_096 + 64)),
            (2, &[262_143], 4_096, (63, 258_048)),
            // The slot holding `now` means one full rotation later.
            (5, &[(1 << 36) + 5], 7, (0, 1 << 36)),
            (
                5,
                &[(1 << 36) + (1 << 30) + 1],
                (1 << 30) + 2,
                (1, (1 << 36) + (1 << 30)),
            ),
        ];
        for &(level, whens, now, (slot, start)) in table {
            let l = level_with(level, whens);
            let got = l.next_occupied_slot(Tick(now));
            let want = OccupiedSlot {
                slot,
                start: Tick(start),
            };
            assert_eq!(got, Some(want), "level {level} whens {whens:?} now {now}");
        }
    }

    #[test]
    fn empty_level_has_no_next_slot() {
        let l: Level<u64> = Level::new(3);
        assert!(l.is_empty());
        assert_eq!(l.next_occupied_slot(Tick(0)), None);
    }

    #[test]
    fn take_slot_returns_entries_in_order_and_clears_bit() {
        let mut l = level_with(0, &[3, 67, 3]);
        assert_eq!(l.take_slot(3), vec![(Tick(3), 3), (Tick(67), 67), (Tick(3), 3)]);
        assert!(l.is_empty());
        assert!(l.take_slot(3).is_empty());
    }
}
