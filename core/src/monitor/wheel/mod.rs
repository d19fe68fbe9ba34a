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
//! SOSP 1987) with **double-width levels and paced cascading**. There are [`NUM_LEVELS`] levels;
//! a slot of level `i` covers `64^i` ticks and its *slot number* is `when >> 6i`. Each level has
//! [`SLOTS_PER_LEVEL`] = 128 buckets, so it holds two blocks of 64 slots: the block holding the
//! current time (`elapsed`) and the next one.
//!
//! - **Insert** files an entry in the *lowest* level whose current-or-next block contains it:
//!   level `i` if `when >> 6(i+1) <= (elapsed >> 6(i+1)) + 1`. So level 0 holds the next 64 to
//!   127 ticks one tick per slot, and a level `i >= 1` entry is always at least two level-`i-1`
//!   blocks ahead when filed: its slot is `>= current slot + 2`.
//! - **Cascade, paced.** The *next* slot of level `i >= 1` (number `(elapsed >> 6i) + 1`) is the
//!   only one that must be moved down before time reaches it, and nothing is ever added to it
//!   (an entry that would go there is already within the next block of level `i - 1`, so it is
//!   filed there). Each poll therefore moves `ceil(len / ticks left before the slot starts)` of
//!   its entries down, relative to the new `elapsed`; the poll at the tick before the slot
//!   starts moves the rest (for a level-1 slot: 1/64 of it per tick). Moved entries land in the
//!   *next* half of a lower level, which is empty of anything else, so nothing collides.
//! - **Fire.** A level-0 slot whose tick is reached fires, sorted by insertion sequence (entries
//!   that cascaded arrive after younger entries filed straight into level 0; the sort restores
//!   insertion order among ties, the order the previous layout gave, so the monitor's event
//!   order and the replay's output do not change with the layout).
//! - **Jumps.** A poll that advances many ticks (a master stall, a test) processes, in time
//!   order, every slot that must be handled before `now`: a level-0 slot at its tick, a higher
//!   slot in full at the tick before it starts. It never walks empty ticks or empty slots.
//!
//! Entries with `when <= elapsed` at insertion go to a *due* list fired by the next poll.
//!
//! | level | ticks per slot | range held (ticks) | at 100 ms per tick: slot / range |
//! |------:|---------------:|--------------------:|---------------------------------|
//! | 0     | 1              | 64 – 128            | 100 ms / 6.4 – 12.8 s           |
//! | 1     | 64             | 4 096 – 8 192       | 6.4 s / 6.8 – 13.7 min          |
//! | 2     | 4 096          | 262 144 – 524 288   | 6.8 min / 7.3 – 14.6 h          |
//! | 3     | 262 144        | 2^24 – 2^25         | 7.3 h / 19.4 – 38.8 days        |
//! | 4     | 2^24           | 2^30 – 2^31         | 19.4 days / 3.4 – 6.8 years     |
//! | 5     | 2^30           | 2^36 – 2^37         | 3.4 years / 218 – 436 years     |
//!
//! # Why paced cascading (and not what tokio, Kafka or Linux do)
//!
//! - **tokio** (`runtime/time/wheel`, the previous layout of this module) cascades a higher slot
//!   in the one poll that reaches it. Its timers are spread over many tasks and its slots are
//!   small, so a burst is rarely large. Our fleet is the opposite: 1M clients re-armed one active
//!   TTL ahead fill one level-1 slot with ~64 ticks' worth of re-arms, and moving hundreds of
//!   thousands of entries in one tick made the slowest tick 39–88 ms (`BENCHMARKS.md`, before).
//! - **Kafka** (`TimingWheel` + `DelayQueue` of buckets) advances the clock bucket by bucket
//!   through a `java.util.concurrent.DelayQueue` and re-inserts (cascades) a whole overflow
//!   bucket when it expires: the same burst as tokio, plus an O(log buckets) priority queue.
//! - **Linux** (`kernel/time/timer.c` since 4.8) does not cascade at all: a timer in a coarse
//!   level fires at the coarse slot's end, up to ~12 % late. That bounds work but breaks our
//!   contract (never late; at most one tick late for the transition, invariant 4), and firing
//!   at the slot's *start* instead (early, then re-armed by the monitor) would only move the
//!   burst into the monitor, which re-reads each word: more expensive than a cascade.
//!
//! Paced cascading keeps tokio's exactness and O(1) insert and spreads the moves: a slot is
//! known complete the moment it becomes "next" (nothing is added to it afterwards), so its size
//! divided by the ticks left is a fixed rate. The price is two blocks per level (128 buckets,
//! a `u128` bitmask) and a sequence number per entry (8 bytes) to keep tie order.
//!
//! # Clamping
//!
//! A `when` more than [`MAX_DURATION_TICKS`] (`64^6 - 1`, about 218 years at 100 ms) after
//! `elapsed` is clamped to `elapsed + MAX_DURATION_TICKS`: the entry fires *early*, and the
//! monitor re-inserts it. Nothing ever fires late. A clamped entry is within the top level's
//! current-or-next block, so the top level needs no rotation.
//!
//! # Cost
//!
//! [`Wheel::insert`] is O(1) (at most [`NUM_LEVELS`] comparisons). A poll that advances one tick
//! costs O(items fired + Σ over levels `i >= 1` of `ceil(S_i / 64^i)` + [`NUM_LEVELS`]), where
//! `S_i` is the size the next slot of level `i` had when it became next: no tick re-files more
//! than ~1/64 of a level-1 slot. A poll that jumps costs O(items fired + items cascaded +
//! `NUM_LEVELS` × (occupied slots handled + 1)), so advancing a billion ticks over an empty
//! wheel costs O(`NUM_LEVELS`). [`Wheel::next_expiration`] is O(`NUM_LEVELS`) (plus the due
//! list, usually empty).

mod level;

use crate::clock::Tick;
use level::{shift, slot_number, Entry, Level};
use std::fmt;

/// Bits of a tick consumed by one level: a slot of level `i + 1` spans `2^LEVEL_BITS` slots of
/// level `i`.
pub(crate) const LEVEL_BITS: u32 = 6;

/// Buckets per level: two blocks of `2^LEVEL_BITS` slots (the current and the next).
pub(crate) const SLOTS_PER_LEVEL: usize = 2 << LEVEL_BITS;

/// Number of levels.
pub(crate) const NUM_LEVELS: usize = 6;

/// Ticks per slot of the top level.
const TOP_SLOT_TICKS: u64 = 1 << (LEVEL_BITS * NUM_LEVELS as u32);

/// The farthest ahead of `elapsed` an entry can be scheduled; later `when`s are clamped to it.
pub(crate) const MAX_DURATION_TICKS: u64 = TOP_SLOT_TICKS - 1;

/// The level an entry firing at `when` is filed in while the current time is `elapsed`
/// (`elapsed < when <= elapsed + MAX_DURATION_TICKS`): the lowest level whose current or next
/// block (of 64 slots) contains `when`.
pub(crate) fn level_for(elapsed: Tick, when: Tick) -> usize {
    (0..NUM_LEVELS)
        .find(|&level| slot_number(when, level + 1) <= slot_number(elapsed, level + 1) + 1)
        .unwrap_or(NUM_LEVELS - 1)
}

/// The next slot some level must handle, and the tick by which it must.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Event {
    level: usize,
    /// Slot number within the level.
    number: u64,
    /// Level 0: the tick the slot fires at. Higher: the tick before the slot starts (its entries
    /// must all be filed lower by the end of the poll at that tick).
    due: Tick,
}

/// A hierarchical timer wheel of `T`s (see the module documentation).
pub(crate) struct Wheel<T> {
    /// Current time: the last tick `poll_expired` advanced to.
    elapsed: Tick,
    /// Entries held, including the due list.
    len: usize,
    /// Sequence number of the next insertion.
    next_seq: u64,
    /// Entries inserted with `when <= elapsed`; fired (sorted by `when`) on the next poll.
    due: Vec<Entry<T>>,
    /// `levels[i]` has slots of `64^i` ticks.
    levels: Vec<Level<T>>,
    /// Scratch for entries being moved down.
    moving: Vec<Entry<T>>,
    /// Entries re-filed (cascaded) by the last poll; the pacing tests bound it.
    #[cfg(test)]
    refiled_last_poll: usize,
    /// Slots looked up by `poll_expired` since creation (each one either handled or found to be
    /// due after `now`); the cost test bounds it.
    #[cfg(test)]
    slots_visited: u64,
}

impl<T> Wheel<T> {
    /// An empty wheel whose current time (`elapsed`) is `start`.
    pub(crate) fn new(start: Tick) -> Self {
        Self {
            elapsed: start,
            len: 0,
            next_seq: 0,
            due: Vec::new(),
            levels: (0..NUM_LEVELS).map(Level::new).collect(),
            moving: Vec::new(),
            #[cfg(test)]
            refiled_last_poll: 0,
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
        let seq = self.next_seq;
        self.next_seq += 1;
        if when <= self.elapsed {
            self.due.push(Entry { when, seq, item });
            return;
        }
        let range_end = self.elapsed.0.saturating_add(MAX_DURATION_TICKS);
        let when = Tick(when.0.min(range_end));
        self.place(Entry { when, seq, item });
    }

    /// Advances `elapsed` to `now` (never backwards) and appends to `out` every item whose
    /// `when <= now`, in nondecreasing `when` order, ties in insertion order. Items inserted
    /// with `when <= elapsed` are returned even if `now <= elapsed`.
    pub(crate) fn poll_expired(&mut self, now: Tick, out: &mut Vec<T>) {
        #[cfg(test)]
        {
            self.refiled_last_poll = 0;
        }
        self.fire_due(out);
        while let Some(event) = self.next_event() {
            #[cfg(test)]
            {
                self.slots_visited += 1;
            }
            if event.due > now {
                break;
            }
            debug_assert!(event.due >= self.elapsed, "{event:?} before elapsed");
            self.elapsed = event.due;
            if event.level == 0 {
                self.fire_slot(event.number, out);
            } else {
                self.cascade(event.level, event.number, usize::MAX);
            }
        }
        self.elapsed = self.elapsed.max(now);
        self.pace();
    }

    /// Makes every entry due at `limit` or earlier: an entry with a later `when` is re-filed at
    /// `limit` (it fires early, which the monitor's lazy re-arming absorbs; nothing fires
    /// later). Insertion order among ties is kept. O(entries): for a rare event (a reload that
    /// shortens a TTL), never on a tick's normal path.
    pub(crate) fn pull_in(&mut self, limit: Tick) {
        let mut all = std::mem::take(&mut self.moving);
        for level in &mut self.levels {
            level.take_all(&mut all);
        }
        for mut entry in all.drain(..) {
            entry.when = entry.when.min(limit);
            if entry.when <= self.elapsed {
                self.due.push(entry);
            } else {
                self.place(entry);
            }
        }
        self.moving = all;
    }

    /// The earliest tick at which some entry may fire, or `None` if the wheel is empty. A lower
    /// bound: the start of the earliest occupied slot, never later than the earliest `when`
    /// (and at most `elapsed` while the due list is non-empty).
    pub(crate) fn next_expiration(&self) -> Option<Tick> {
        if let Some(earliest_due) = self.due.iter().map(|e| e.when).min() {
            return Some(earliest_due);
        }
        (0..NUM_LEVELS)
            .filter_map(|level| {
                let number = self.levels[level].next_occupied(self.first_slot(level))?;
                Some(Tick(number << shift(level)))
            })
            .min()
    }

    /// The first slot number of `level` that may hold an entry: the slot after the current one.
    fn first_slot(&self, level: usize) -> u64 {
        // Level 0 is non-empty only while some `when > elapsed`, so this cannot overflow then;
        // an empty level ignores it.
        slot_number(self.elapsed, level).saturating_add(1)
    }

    /// Files `entry` (with `elapsed < when <= elapsed + MAX_DURATION_TICKS`) in its level.
    fn place(&mut self, entry: Entry<T>) {
        debug_assert!(entry.when > self.elapsed);
        self.levels[level_for(self.elapsed, entry.when)].push(entry);
    }

    /// Fires the due list in `when` order (stable: ties keep insertion order).
    fn fire_due(&mut self, out: &mut Vec<T>) {
        if self.due.is_empty() {
            return;
        }
        self.due.sort_by_key(|e| (e.when, e.seq));
        self.len -= self.due.len();
        out.extend(self.due.drain(..).map(|e| e.item));
    }

    /// The slot that must be handled first: the earliest `due` over all levels (a lower level
    /// first on a tie, though either order is correct).
    fn next_event(&self) -> Option<Event> {
        (0..NUM_LEVELS)
            .filter_map(|level| {
                let number = self.levels[level].next_occupied(self.first_slot(level))?;
                let start = number << shift(level);
                let due = if level == 0 { start } else { start - 1 };
                Some(Event {
                    level,
                    number,
                    due: Tick(due),
                })
            })
            .min_by_key(|e| (e.due, e.level))
    }

    /// Fires level-0 slot `number` (`== elapsed`), in insertion order.
    fn fire_slot(&mut self, number: u64, out: &mut Vec<T>) {
        let mut entries = self.levels[0].take_slot(number);
        if !entries.is_sorted_by_key(|e| e.seq) {
            entries.sort_unstable_by_key(|e| e.seq);
        }
        self.len -= entries.len();
        let elapsed = self.elapsed;
        out.extend(entries.drain(..).map(|e| {
            debug_assert_eq!(e.when, elapsed, "entry fired off its tick");
            e.item
        }));
        self.levels[0].recycle(entries);
    }

    /// Moves up to `max` entries of slot `number` of `level` down, relative to `elapsed`, which
    /// is before the slot's start: each lands in a lower level's next block (or closer).
    fn cascade(&mut self, level: usize, number: u64, max: usize) {
        let mut moving = std::mem::take(&mut self.moving);
        self.levels[level].take_some(number, max, &mut moving);
        #[cfg(test)]
        {
            self.refiled_last_poll += moving.len();
        }
        for entry in moving.drain(..) {
            debug_assert!(level_for(self.elapsed, entry.when) < level, "cascade did not descend");
            self.place(entry);
        }
        self.moving = moving;
    }

    /// The paced part of a poll: moves `ceil(len / ticks left)` entries of each level's next
    /// slot, so that the slot is empty by the end of the poll at the tick before it starts.
    fn pace(&mut self) {
        for level in 1..NUM_LEVELS {
            let number = self.first_slot(level);
            let len = self.levels[level].slot_len(number);
            if len == 0 {
                continue;
            }
            // Every slot due at or before `elapsed` was handled in full by the event loop, so
            // this one starts at least two ticks after `elapsed`.
            let ticks_left = (number << shift(level)) - self.elapsed.0;
            debug_assert!(ticks_left >= 2, "next slot of level {level} overdue");
            let batch = len.div_ceil(usize::try_from(ticks_left).unwrap_or(usize::MAX));
            self.cascade(level, number, batch);
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
mod tests;
