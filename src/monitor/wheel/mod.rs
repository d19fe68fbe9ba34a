//! The monitor's timer wheel: which clients may need looking at, and when.
//!
//! [`Wheel`] is single-owner plain data (no atomics, no locks, `&mut self` everywhere), owned by
//! the monitor thread. It is only a *hint*: the liveness word of each client is the truth. When
//! an entry fires, the monitor re-reads the word and, if the deadline has moved (a heartbeat came
//! in, the stall credit grew), lazily re-inserts the client at its new deadline. So an entry may
//! fire early (the monitor simply re-inserts it), but it must never fire late.
//!
//! # Algorithm
//!
//! A hierarchical hashed timing wheel (G. Varghese and T. Lauck, "Hashed and Hierarchical
//! Timing Wheels: Data Structures for the Efficient Implementation of a Timer Facility",
//! SOSP 1987), laid out like tokio's `runtime/time/wheel`. There are [`NUM_LEVELS`] levels of
//! [`SLOTS_PER_LEVEL`] slots; a slot of level `i` covers `64^i` ticks. An entry goes to the
//! lowest level at which its `when` and the current time (`elapsed`) share every higher digit,
//! in the slot of its level-`i` digit. When time reaches a slot of level 0 its entries fire;
//! when it reaches a slot of a higher level its entries *cascade*: they are re-inserted relative
//! to the new `elapsed` and so land in lower levels (an entry cascades at most
//! `NUM_LEVELS - 1` times in its life). Entries with `when <= elapsed` at insertion go to a
//! *due* list fired by the next poll.
//!
//! | level | ticks per slot | range covered (ticks) | at 100 ms per tick: slot / range |
//! |------:|---------------:|----------------------:|----------------------------------|
//! | 0     | 1              | 64                    | 100 ms / 6.4 s                   |
//! | 1     | 64             | 4 096                 | 6.4 s / 6.8 min                  |
//! | 2     | 4 096          | 262 144               | 6.8 min / 7.3 h                  |
//! | 3     | 262 144        | 16 777 216            | 7.3 h / 19.4 days                |
//! | 4     | 16 777 216     | 1 073 741 824         | 19.4 days / 3.4 years            |
//! | 5     | 1 073 741 824  | 68 719 476 736        | 3.4 years / 217.8 years          |
//!
//! # Clamping
//!
//! A `when` more than [`MAX_DURATION_TICKS`] (`64^6 - 1`, about 218 years at 100 ms) after
//! `elapsed` is clamped to `elapsed + MAX_DURATION_TICKS`: the entry fires *early*, at the end of
//! the wheel's range, and the monitor re-inserts it. Nothing ever fires late. To give every
//! insertion the full range, the top level is used as a ring: a clamped entry may sit in the top
//! slot that holds `elapsed` itself, which then means "one rotation later".
//!
//! # Cost
//!
//! [`Wheel::insert`] is O(1). [`Wheel::poll_expired`] costs
//! O(items fired + items cascaded + `NUM_LEVELS` × (occupied slots visited + 1)): it jumps from
//! one occupied slot to the next through the per-level occupancy bitmasks and never walks empty
//! ticks or empty slots, so advancing a billion ticks over an empty wheel costs O(`NUM_LEVELS`).
//! [`Wheel::next_expiration`] is O(`NUM_LEVELS`) (plus the length of the due list, usually 0).

mod level;

use crate::clock::Tick;
use level::{Level, OccupiedSlot};
use std::fmt;

/// Bits of a tick consumed by one level: each level has `2^LEVEL_BITS` slots.
pub(crate) const LEVEL_BITS: u32 = 6;

/// Slots per level (64).
pub(crate) const SLOTS_PER_LEVEL: usize = 1 << LEVEL_BITS;

/// Mask of one level's digit, once shifted down.
pub(crate) const SLOT_MASK: u64 = (1 << LEVEL_BITS) - 1;

/// Number of levels; together they cover `64^NUM_LEVELS` ticks.
pub(crate) const NUM_LEVELS: usize = 6;

/// Ticks covered by all levels together: `64^NUM_LEVELS`.
const RANGE_TICKS: u64 = 1 << (LEVEL_BITS * NUM_LEVELS as u32);

/// The farthest ahead of `elapsed` an entry can be scheduled; later `when`s are clamped to it.
pub(crate) const MAX_DURATION_TICKS: u64 = RANGE_TICKS - 1;

/// The level an entry firing at `when` belongs to while the current time is `elapsed`
/// (`when > elapsed`): the level of the highest base-64 digit in which they differ. Entries in a
/// later top-level rotation (only reachable by clamping) are forced into the top level.
pub(crate) fn level_for(elapsed: Tick, when: Tick) -> usize {
    // OR-ing the slot mask makes digit 0 count as "level 0" and keeps `leading_zeros` < 64.
    let differing = (elapsed.0 ^ when.0) | SLOT_MASK;
    if differing > MAX_DURATION_TICKS {
        return NUM_LEVELS - 1;
    }
    let highest_bit = u64::BITS - 1 - differing.leading_zeros();
    (highest_bit / LEVEL_BITS) as usize
}

/// A hierarchical timer wheel of `T`s (see the module documentation).
pub(crate) struct Wheel<T> {
    /// Current time: the last tick `poll_expired` advanced to.
    elapsed: Tick,
    /// Entries held, including the due list.
    len: usize,
    /// Entries inserted with `when <= elapsed`; fired (sorted by `when`) on the next poll.
    due: Vec<(Tick, T)>,
    /// `levels[i]` has slots of `64^i` ticks.
    levels: Vec<Level<T>>,
    /// Slots looked up by `poll_expired` since creation (each one either processed or found to
    /// start after `now`); the cost test bounds it.
    #[cfg(test)]
    slots_visited: u64,
}

impl<T> Wheel<T> {
    /// An empty wheel whose current time (`elapsed`) is `start`.
    pub(crate) fn new(start: Tick) -> Self {
        Self {
            elapsed: start,
            len: 0,
            due: Vec::new(),
            levels: (0..NUM_LEVELS).map(Level::new).collect(),
            #[cfg(test)]
            slots_visited: 0,
        }
    }

    /// The last tick [`poll_expired`](Self::poll_expired) advanced to (or `start`).
    // Part of the wheel's API; the monitor does not need it yet.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn elapsed(&self) -> Tick {
        self.elapsed
    }

    /// Number of entries held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// True if the wheel holds no entry.
    // Part of the wheel's API; the monitor does not need it yet.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Schedules `item` to fire at tick `when`. If `when <= elapsed` it fires at the next poll.
    /// A `when` beyond `elapsed + MAX_DURATION_TICKS` is clamped to that tick (fires early,
    /// never late).
    pub(crate) fn insert(&mut self, when: Tick, item: T) {
        self.len += 1;
        if when <= self.elapsed {
            self.due.push((when, item));
            return;
        }
        let range_end = self.elapsed.0.saturating_add(MAX_DURATION_TICKS);
        self.place(Tick(when.0.min(range_end)), item);
    }

    /// Advances `elapsed` to `now` (never backwards) and appends to `out` every item whose
    /// `when <= now`, in nondecreasing `when` order, ties in insertion order. Items inserted
    /// with `when <= elapsed` are returned even if `now <= elapsed`.
    pub(crate) fn poll_expired(&mut self, now: Tick, out: &mut Vec<T>) {
        self.fire_due(out);
        while let Some((level, next)) = self.next_occupied() {
            #[cfg(test)]
            {
                self.slots_visited += 1;
            }
            if next.start > now {
                break;
            }
            debug_assert!(next.start > self.elapsed, "slot {next:?} not after elapsed");
            self.elapsed = next.start;
            self.process_slot(level, next.slot, out);
        }
        self.elapsed = self.elapsed.max(now);
    }

    /// The earliest tick at which some entry may fire, or `None` if the wheel is empty. A lower
    /// bound: the start of the earliest occupied slot, never later than the earliest `when`
    /// (and at most `elapsed` while the due list is non-empty).
    pub(crate) fn next_expiration(&self) -> Option<Tick> {
        if let Some(earliest_due) = self.due.iter().map(|(when, _)| *when).min() {
            return Some(earliest_due);
        }
        self.next_occupied().map(|(_, next)| next.start)
    }

    /// Files `item` (with `elapsed < when <= elapsed + MAX_DURATION_TICKS`) in its level.
    fn place(&mut self, when: Tick, item: T) {
        debug_assert!(when > self.elapsed);
        self.levels[level_for(self.elapsed, when)].push(when, item);
    }

    /// Fires the due list in `when` order (stable: ties keep insertion order).
    fn fire_due(&mut self, out: &mut Vec<T>) {
        if self.due.is_empty() {
            return;
        }
        self.due.sort_by_key(|(when, _)| *when);
        self.len -= self.due.len();
        out.extend(self.due.drain(..).map(|(_, item)| item));
    }

    /// The earliest occupied slot of the whole wheel: the next one of the lowest non-empty level.
    /// Every slot of a lower level starts before the next slot of a higher one, because a lower
    /// level only holds entries of the current higher-level slot.
    fn next_occupied(&self) -> Option<(usize, OccupiedSlot)> {
        let (level, entries) = self.levels.iter().enumerate().find(|(_, level)| !level.is_empty())?;
        let next = entries.next_occupied_slot(self.elapsed)?;
        Some((level, next))
    }

    /// Empties a slot whose start is `elapsed`: entries due now fire (all of a level-0 slot),
    /// the rest cascade into lower levels, in their order within the slot.
    fn process_slot(&mut self, level: usize, slot: usize, out: &mut Vec<T>) {
        for (when, item) in self.levels[level].take_slot(slot) {
            debug_assert!(when >= self.elapsed, "entry at {when:?} missed");
            if when <= self.elapsed {
                self.len -= 1;
                out.push(item);
            } else {
                self.place(when, item);
            }
        }
    }
}

impl<T> fmt::Debug for Wheel<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wheel")
            .field("elapsed", &self.elapsed)
            .field("len", &self.len)
            .field("due", &self.due.len())
            .field("next_expiration", &self.next_expiration())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Polls to `now` and returns what fired.
    fn poll(wheel: &mut Wheel<u64>, now: u64) -> Vec<u64> {
        let mut out = Vec::new();
        wheel.poll_expired(Tick(now), &mut out);
        out
    }

    #[test]
    fn constants_are_consistent() {
        assert_eq!(SLOTS_PER_LEVEL, 64);
        assert_eq!(SLOT_MASK, 63);
        assert_eq!(MAX_DURATION_TICKS, 64u64.pow(NUM_LEVELS as u32) - 1);
        assert_eq!(level_for(Tick(0), Tick(MAX_DURATION_TICKS)), NUM_LEVELS - 1);
    }

    #[test]
    fn level_for_from_zero() {
        for when in 1..64 {
            assert_eq!(level_for(Tick(0), Tick(when)), 0, "when {when}");
        }
        for level in 1..NUM_LEVELS {
            for digit in 1..64u64 {
                let when = digit << (level as u32 * LEVEL_BITS);
                assert_eq!(level_for(Tick(0), Tick(when)), level, "when {when}");
                assert_eq!(level_for(Tick(0), Tick(when + 1)), level, "when {when}+1");
            }
        }
    }

    #[test]
    fn level_for_table() {
        // (elapsed, when, expected level): boundaries 63/64/4095/4096 ticks ahead and beyond.
        let table: &[(u64, u64, usize)] = &[
            (0, 1, 0),
            (0, 63, 0),
            (0, 64, 1),
            (0, 65, 1),
            (0, 4_095, 1),
            (0, 4_096, 2),
            (0, 262_143, 2),
            (0, 262_144, 3),
            (0, 16_777_215, 3),
            (0, 16_777_216, 4),
            (0, 1_073_741_823, 4),
            (0, 1_073_741_824, 5),
            (0, MAX_DURATION_TICKS, 5),
            // Levels follow aligned digits, not distances: 1 tick ahead across a 64-boundary.
            (63, 64, 1),
            (1, 64, 1),
            (1, 63, 0),
            (64, 127, 0),
            (4_095, 4_096, 2),
            (12_345, 12_345 + 1, 0),
            (12_345, 12_352, 1),
            (12_345, 12_345 + 63, 1),
            (12_345, 16_383, 1),
            (12_345, 16_384, 2),
            // A later top-level rotation (clamped entries) stays in the top level.
            (12_345, 12_345 + MAX_DURATION_TICKS, NUM_LEVELS - 1),
            (MAX_DURATION_TICKS, MAX_DURATION_TICKS + 1, NUM_LEVELS - 1),
        ];
        for &(elapsed, when, level) in table {
            assert_eq!(
                level_for(Tick(elapsed), Tick(when)),
                level,
                "elapsed {elapsed} when {when}"
            );
        }
    }

    const STARTS: [u64; 6] = [0, 1, 63, 12_345, MAX_DURATION_TICKS, 1 << 40];
    const DISTANCES: [u64; 14] = [
        1,
        2,
        63,
        64,
        65,
        4_095,
        4_096,
        4_097,
        262_143,
        262_144,
        16_777_216,
        1_073_741_825,
        MAX_DURATION_TICKS - 1,
        MAX_DURATION_TICKS,
    ];

    #[test]
    fn fires_exactly_at_when() {
        for start in STARTS {
            for distance in DISTANCES {
                let when = start + distance;
                let mut wheel = Wheel::new(Tick(start));
                wheel.insert(Tick(when), when);
                assert!(poll(&mut wheel, when - 1).is_empty(), "{start}+{distance} early");
                assert_eq!(wheel.len(), 1);
                assert_eq!(poll(&mut wheel, when), vec![when], "{start}+{distance}");
                assert!(wheel.is_empty());
                assert_eq!(wheel.next_expiration(), None);
            }
        }
    }

    #[test]
    fn fires_exactly_at_when_stepping_by_next_expiration() {
        for start in STARTS {
            for distance in DISTANCES {
                let when = start + distance;
                let mut wheel = Wheel::new(Tick(start));
                wheel.insert(Tick(when), when);
                let mut steps = 0;
                loop {
                    let next = wheel.next_expiration().expect("entry lost").0;
                    assert!(next <= when, "{start}+{distance}: hint {next} late");
                    let fired = poll(&mut wheel, next);
                    if !fired.is_empty() {
                        assert_eq!((fired, next), (vec![when], when), "{start}+{distance}");
                        break;
                    }
                    steps += 1;
                    assert!(steps <= NUM_LEVELS, "{start}+{distance}: too many steps");
                }
            }
        }
    }

    #[test]
    fn fires_exactly_at_when_stepping_one_tick() {
        for start in [0, 1, 63, 12_345] {
            for distance in [1, 63, 64, 65, 4_095, 4_096, 4_097] {
                let when = start + distance;
                let mut wheel = Wheel::new(Tick(start));
                wheel.insert(Tick(when), when);
                for now in start + 1..when {
                    assert!(poll(&mut wheel, now).is_empty(), "{start}+{distance} at {now}");
                }
                assert_eq!(poll(&mut wheel, when), vec![when], "{start}+{distance}");
            }
        }
    }

    #[test]
    fn later_entries_of_a_reached_slot_cascade_instead_of_firing() {
        let mut wheel = Wheel::new(Tick(0));
        // Level-1 slot [64, 128) and level-2 slot [4096, 8192).
        for when in [64, 100, 127, 4_096, 5_000] {
            wheel.insert(Tick(when), when);
        }
        assert_eq!(poll(&mut wheel, 80), vec![64]);
        assert_eq!(wheel.len(), 4);
        assert_eq!(poll(&mut wheel, 4_500), vec![100, 127, 4_096]);
        assert_eq!(poll(&mut wheel, 4_999), Vec::<u64>::new());
        assert_eq!(poll(&mut wheel, 5_000), vec![5_000]);
    }

    #[test]
    fn big_jump_fires_everything_due_and_nothing_else() {
        let now = 1u64 << 40;
        let start = now - (1 << 35) - 3;
        let mut wheel = Wheel::new(Tick(start));
        let mut due: Vec<u64> = DISTANCES.iter().map(|d| start + d).filter(|&w| w <= now).collect();
        due.extend([start - 1, start, now - 1, now]);
        let later = [now + 1, now + 64, now + 1_000_000, start + MAX_DURATION_TICKS];
        for when in due.iter().chain(&later) {
            wheel.insert(Tick(*when), *when);
        }
        due.sort_unstable();
        assert_eq!(poll(&mut wheel, now), due);
        assert_eq!(wheel.elapsed(), Tick(now));
        assert_eq!(wheel.len(), later.len());
        assert_eq!(poll(&mut wheel, now + MAX_DURATION_TICKS), later.to_vec());
    }

    #[test]
    fn insert_at_or_before_elapsed_fires_on_next_poll() {
        let mut wheel = Wheel::new(Tick(1_000));
        wheel.insert(Tick(1_000), 1_000);
        wheel.insert(Tick(3), 3);
        wheel.insert(Tick(0), 0);
        wheel.insert(Tick(3), 33);
        wheel.insert(Tick(1_001), 1_001);
        assert_eq!(wheel.next_expiration(), Some(Tick(0)));
        // Polling at or before `elapsed` does not move time but returns the due items.
        assert_eq!(poll(&mut wheel, 10), vec![0, 3, 33, 1_000]);
        assert_eq!(wheel.elapsed(), Tick(1_000));
        assert_eq!(poll(&mut wheel, 1_000), Vec::<u64>::new());
        assert_eq!(poll(&mut wheel, 1_001), vec![1_001]);
    }

    #[test]
    fn fires_in_nondecreasing_when_order_ties_in_insertion_order() {
        let mut wheel = Wheel::new(Tick(5));
        let whens = [900_000, 70, 64, 4_200, 6, 70, 300_000, 64, 70, 5_000_000, 6];
        for (seq, when) in whens.iter().enumerate() {
            wheel.insert(Tick(*when), (*when << 8) | seq as u64);
        }
        let fired = poll(&mut wheel, 10_000_000);
        let mut expected: Vec<u64> = whens
            .iter()
            .enumerate()
            .map(|(seq, when)| (when << 8) | seq as u64)
            .collect();
        expected.sort_unstable();
        assert_eq!(fired, expected);
    }

    #[test]
    fn far_future_is_clamped_to_range_end_never_late() {
        for start in [0, 12_345, (1 << 36) - 1, u64::MAX - 10] {
            let mut wheel = Wheel::new(Tick(start));
            let range_end = start.saturating_add(MAX_DURATION_TICKS);
            wheel.insert(Tick(u64::MAX), 1);
            wheel.insert(Tick(start.saturating_add(5 * MAX_DURATION_TICKS)), 2);
            if range_end > start + 1 {
                assert!(poll(&mut wheel, range_end - 1).is_empty(), "start {start}");
            }
            assert_eq!(poll(&mut wheel, range_end), vec![1, 2], "start {start}");
        }
    }

    #[test]
    fn next_expiration_is_a_lower_bound() {
        let mut wheel = Wheel::new(Tick(0));
        assert_eq!(wheel.next_expiration(), None);
        wheel.insert(Tick(100), 100);
        assert_eq!(wheel.next_expiration(), Some(Tick(64)));
        wheel.insert(Tick(10), 10);
        assert_eq!(wheel.next_expiration(), Some(Tick(10)));
        assert_eq!(poll(&mut wheel, 70), vec![10]);
        assert_eq!(wheel.next_expiration(), Some(Tick(100)));
    }

    #[test]
    fn jump_over_a_billion_empty_ticks_visits_few_slots() {
        let mut wheel = Wheel::new(Tick(3));
        assert!(poll(&mut wheel, 1_000_000_000).is_empty());
        assert_eq!(wheel.slots_visited, 0);
        let whens = [1_000_000_005, 1_000_070_000, 1_900_000_000, 1_000_000_000 + (1 << 35)];
        for when in whens {
            wheel.insert(Tick(when), when);
        }
        // Each entry is fired once and cascaded at most NUM_LEVELS - 1 times; each poll looks up
        // at most one slot it does not process. Walking the ticks would take ~10^9 steps.
        let polls = [2_000_000_000, 1 << 40, 1 << 60];
        let bound = (whens.len() * NUM_LEVELS + polls.len()) as u64;
        assert_eq!(poll(&mut wheel, polls[0]), whens[..3].to_vec());
        assert!(wheel.slots_visited <= bound, "{}", wheel.slots_visited);
        assert_eq!(poll(&mut wheel, polls[1]), whens[3..].to_vec());
        assert!(poll(&mut wheel, polls[2]).is_empty());
        assert!(wheel.slots_visited <= bound, "{}", wheel.slots_visited);
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// Insert at `elapsed + delta` (`delta <= 0`: in the past).
        Insert(i64),
        /// Poll at `elapsed + delta` (`delta < 0`: backwards, a no-op apart from due items).
        Poll(i64),
    }

    fn delta() -> impl Strategy<Value = i64> {
        prop_oneof![
            4 => -3i64..200,
            2 => -5_000i64..300_000,
            1 => -1_000i64..=MAX_DURATION_TICKS as i64,
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => delta().prop_map(Op::Insert),
            2 => delta().prop_map(Op::Poll),
        ]
    }

    /// Reference: every `(when, seq)` still pending; a poll at `now` fires all `when <= now`
    /// sorted by `(when, seq)`.
    fn reference_poll(pending: &mut Vec<(u64, u64)>, now: u64) -> Vec<u64> {
        // `now` here is already max(poll tick, elapsed): due items fire on any poll.
        let (mut fired, rest): (Vec<_>, Vec<_>) = pending.iter().partition(|(w, _)| *w <= now);
        *pending = rest;
        fired.sort_unstable();
        fired.into_iter().map(|(_, seq)| seq).collect()
    }

    fn at(elapsed: u64, delta: i64) -> u64 {
        elapsed.saturating_add_signed(delta)
    }

    proptest! {
        #[test]
        fn matches_reference_model(
            start in prop_oneof![0u64..200, 0u64..(1 << 40)],
            ops in prop::collection::vec(op(), 1..200),
        ) {
            let mut wheel = Wheel::new(Tick(start));
            let mut pending = Vec::new();
            for (seq, op) in ops.into_iter().enumerate() {
                let elapsed = wheel.elapsed().0;
                match op {
                    Op::Insert(d) => {
                        wheel.insert(Tick(at(elapsed, d)), seq as u64);
                        pending.push((at(elapsed, d), seq as u64));
                    }
                    Op::Poll(d) => {
                        let now = at(elapsed, d);
                        let fired = poll(&mut wheel, now);
                        prop_assert_eq!(fired, reference_poll(&mut pending, now.max(elapsed)));
                        prop_assert_eq!(wheel.elapsed().0, now.max(elapsed));
                    }
                }
                prop_assert_eq!(wheel.len(), pending.len());
                let earliest = pending.iter().map(|(w, _)| *w).min();
                let hint = wheel.next_expiration().map(|t| t.0);
                prop_assert_eq!(hint.is_some(), earliest.is_some());
                prop_assert!(hint <= earliest, "hint {:?} after {:?}", hint, earliest);
            }
            let fired = poll(&mut wheel, u64::MAX);
            prop_assert_eq!(fired, reference_poll(&mut pending, u64::MAX));
        }
    }
}
