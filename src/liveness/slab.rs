//! The word slab: every record's liveness word lives in one process-wide array of cache lines,
//! eight words to a line, so the words a router checks are as dense as they can be.
//!
//! # Why
//!
//! The serving check is one load of the owner's word. With the word inside the record, a router
//! checking replicas of 256 owners touches 256 record lines scattered wherever the allocator put
//! them: `eligibility/word` then measured 1.23–1.79× its floor from run to run, while the same
//! check on the same words packed eight to a line stayed within 1.12× (BENCHMARKS.md, "Where the
//! spread comes from"). The spread was placement (L1 sets and TLB entries), not the load.
//!
//! # Ground rules
//!
//! - **Who writes a slot.** [`alloc`] stores the new record's first word (`Relaxed`: the record
//!   is published afterwards through its `Arc` and the registry, a `Release`/`Acquire` pair that
//!   carries the store); from then on only the record's own CAS paths write it
//!   (`record.rs`'s ground rules). [`release`] is called only by the record's `Drop`, when no
//!   reference to the record, hence to the slot, is left.
//! - **Which race the lock settles.** The free list is a `Mutex<Vec<_>>`: two records created or
//!   dropped at once take or return distinct slots. Records are created by a mount and dropped
//!   after offboarding (or a failed mount): never on the hot path, so a lock costs nothing there;
//!   a slot handed from a freed record to a new one passes through the lock (happens-before), so
//!   the new record's first store is ordered after every access of the old one.
//! - **No reference outlives its record.** A slot is reachable only through the record (private
//!   field) or an [`Owner`](super::Owner), which holds the record's `Arc` beside the slot's
//!   reference. Both are safe code: slots are `&'static` because chunks are leaked, never freed.
//! - **What may block what.** Only record creation and drop take the lock, never each other's
//!   readers: a load or CAS of a word never touches the slab's lock.
//!
//! # Limitations
//!
//! - Memory is never returned: the slab grows to the peak number of live records (8 bytes each;
//!   1M clients, 8 MiB) in chunks of 4,096 words and keeps it.
//! - Eight clients share a line: a Ping (one CAS) invalidates the line in other cores' caches for
//!   the seven neighbours' readers. At Mooncake's ping rate (about one per client per second) a
//!   line sees a few writes a second; a router reads it millions of times. Correctness never
//!   depends on placement.
//! - Under loom each word is its own `Arc` (loom atomics must not outlive a model execution), so
//!   the models check the protocols, not the slab's placement.

use super::word::Word;
use crate::sync::Atomic;

#[cfg(not(loom))]
mod imp {
    use super::*;
    use crate::sync::{Mutex, Ordering};

    /// A reference to one slot of the slab.
    pub(crate) type WordRef = &'static Atomic<Word>;

    /// Words per chunk (512 lines, 32 KiB).
    pub(super) const CHUNK_WORDS: usize = 4096;

    /// Eight words on one 64-byte line.
    #[repr(C, align(64))]
    struct Line([Atomic<Word>; 8]);

    /// A slab: free slots, popped from the end. A fresh chunk is pushed in reverse, so records
    /// created one after another get consecutive words.
    pub(super) struct Slab {
        free: Mutex<Vec<WordRef>>,
    }

    /// The process's slab (one for every `Liveness`: records may outlive the core that made them).
    static SLAB: Slab = Slab::new();

    impl Slab {
        pub(super) const fn new() -> Self {
            Self {
                free: Mutex::new(Vec::new()),
            }
        }

        /// A slot holding `word`.
        pub(super) fn alloc(&self, word: Word) -> WordRef {
            let slot = {
                let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
                if free.is_empty() {
                    free.extend(chunk().rev());
                }
                free.pop().expect("a fresh chunk has slots")
            };
            slot.store(word, Ordering::Relaxed);
            slot
        }

        /// Returns a slot whose record was dropped.
        pub(super) fn free(&self, slot: WordRef) {
            self.free.lock().unwrap_or_else(|e| e.into_inner()).push(slot);
        }
    }

    /// Leaks a new chunk and returns its slots in address order.
    fn chunk() -> impl DoubleEndedIterator<Item = WordRef> {
        let lines: Vec<Line> = (0..CHUNK_WORDS / 8)
            .map(|_| Line(std::array::from_fn(|_| Atomic::new(Word::from_raw(0)))))
            .collect();
        let lines: &'static [Line] = Vec::leak(lines);
        lines.iter().flat_map(|line| line.0.iter())
    }

    /// A slot of the process's slab holding `word`, for a new record.
    pub(crate) fn alloc(word: Word) -> WordRef {
        SLAB.alloc(word)
    }

    /// Returns a dropped record's slot to the process's slab.
    pub(crate) fn release(slot: &WordRef) {
        SLAB.free(slot)
    }

    /// A second reference to the slot (for an `Owner`).
    #[inline]
    pub(crate) fn share(slot: &WordRef) -> WordRef {
        slot
    }

    /// The slot itself.
    #[inline(always)]
    pub(crate) fn slot(slot: &WordRef) -> &Atomic<Word> {
        slot
    }
}

#[cfg(loom)]
mod imp {
    use super::*;

    /// Under loom, a word of its own (see the module's limitations).
    pub(crate) type WordRef = crate::sync::Arc<Atomic<Word>>;

    pub(crate) fn alloc(word: Word) -> WordRef {
        crate::sync::Arc::new(Atomic::new(word))
    }

    pub(crate) fn release(_slot: &WordRef) {}

    pub(crate) fn share(slot: &WordRef) -> WordRef {
        crate::sync::Arc::clone(slot)
    }

    pub(crate) fn slot(slot: &WordRef) -> &Atomic<Word> {
        slot
    }
}

pub(crate) use imp::*;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::imp::{Slab, CHUNK_WORDS};
    use super::*;
    use crate::liveness::word::{LivenessState, Seq};
    use crate::sync::Ordering;

    fn w(deadline_ms: u64) -> Word {
        Word::pack(LivenessState::Active, Seq::default(), deadline_ms)
    }

    fn addr(slot: WordRef) -> usize {
        slot as *const Atomic<Word> as usize
    }

    #[test]
    fn consecutive_slots_are_consecutive_words_eight_to_a_line() {
        let slab = Slab::new();
        let slots: Vec<WordRef> = (0..16).map(|i| slab.alloc(w(1_000 + i))).collect();
        assert_eq!(addr(slots[0]) % 64, 0, "a chunk starts on a line");
        for (i, slot) in slots.iter().enumerate() {
            assert_eq!(slot.load(Ordering::Acquire), w(1_000 + i as u64));
            assert_eq!(addr(slot) - addr(slots[0]), 8 * i);
        }
    }

    #[test]
    fn a_freed_slot_is_reused_first_and_holds_the_new_word() {
        let slab = Slab::new();
        let a = slab.alloc(w(1));
        let b = slab.alloc(w(2));
        a.store(Word::pack(LivenessState::Offline, Seq::default(), 7), Ordering::Relaxed);
        slab.free(a);
        let c = slab.alloc(w(3));
        assert_eq!(addr(c), addr(a));
        assert_eq!(c.load(Ordering::Acquire), w(3));
        assert_eq!(b.load(Ordering::Acquire), w(2));
    }

    #[test]
    fn the_slab_grows_by_whole_chunks() {
        let slab = Slab::new();
        let slots: Vec<WordRef> = (0..CHUNK_WORDS as u64 + 1).map(|i| slab.alloc(w(i))).collect();
        let mut addrs: Vec<usize> = slots.iter().map(|&s| addr(s)).collect();
        addrs.sort_unstable();
        addrs.dedup();
        assert_eq!(addrs.len(), CHUNK_WORDS + 1, "every slot distinct across two chunks");
        assert!(slots
            .iter()
            .enumerate()
            .all(|(i, s)| s.load(Ordering::Acquire) == w(i as u64)));
    }
}
