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
//!   field) or an [`Owner`](super::Owner), which holds a strong count of the record beside the
//!   slot's reference. Slots are `&'static` because chunks are leaked, never freed.
//! - **Tags.** Each slot has a pointer-sized tag in the second half of its chunk, at a fixed
//!   distance from the slot ([`tag`]), so a bare slot reference finds it: `Owner::new` stores the
//!   record's address there and [`release`] clears it (`owner.rs`'s ground rules give the
//!   orderings). The tags are on lines of their own: storing one never disturbs a word's line.
//! - **What may block what.** Only record creation and drop take the lock, never each other's
//!   readers: a load or CAS of a word never touches the slab's lock.
//!
//! # Limitations
//!
//! - Memory is never returned: the slab grows to the peak number of live records (16 bytes each,
//!   word and tag; 1M clients, 16 MiB) in chunks of 4,096 slots (64 KiB) and keeps it.
//! - Eight clients share a line: a Ping (one CAS) invalidates the line in other cores' caches for
//!   the seven neighbours' readers. At Mooncake's ping rate (about one per client per second) a
//!   line sees a few writes a second; a router reads it millions of times. Correctness never
//!   depends on placement.
//! - Under loom each word is its own `Arc` (loom atomics must not outlive a model execution), so
//!   the models check the protocols, not the slab's placement.

use super::word::Word;
use crate::sync::Atomic;

#[cfg(not(loom))]
#[allow(unsafe_code)] // initialising leaked chunks in place, and a slot's tag by address (`SAFETY` at each)
mod imp {
    use super::*;
    use crate::sync::{AtomicPtr, Mutex, Ordering};
    use std::mem::{offset_of, size_of};

    /// A reference to one slot of the slab.
    pub(crate) type WordRef = &'static Atomic<Word>;

    /// Words per chunk (512 lines, 32 KiB).
    pub(super) const CHUNK_WORDS: usize = 4096;

    /// Eight words on one 64-byte line.
    #[repr(C, align(64))]
    struct Line([Atomic<Word>; 8]);

    /// A chunk: its words, eight to a line, then one tag per word. Slot `i`'s tag is at slot
    /// `i`'s address plus [`TAGS_AFTER`], so a bare reference to a slot finds its tag.
    #[repr(C)]
    struct Chunk {
        lines: [Line; CHUNK_WORDS / 8],
        tags: [AtomicPtr<()>; CHUNK_WORDS],
    }

    /// How far a slot's tag lies after the slot.
    const TAGS_AFTER: usize = offset_of!(Chunk, tags);
    const _: () = assert!(
        TAGS_AFTER == CHUNK_WORDS * size_of::<Atomic<Word>>()
            && size_of::<Atomic<Word>>() == size_of::<AtomicPtr<()>>()
    );

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

        /// Returns a slot whose record was dropped; its tag is cleared first.
        pub(super) fn free(&self, slot: WordRef) {
            tag(&slot).store(std::ptr::null_mut(), Ordering::Relaxed);
            self.free.lock().unwrap_or_else(|e| e.into_inner()).push(slot);
        }
    }

    /// Leaks a new chunk and returns its slots in address order. The chunk's address is
    /// exposed, so [`tag`] may reach it from a slot's address.
    fn chunk() -> impl DoubleEndedIterator<Item = WordRef> {
        let mut chunk = Box::<Chunk>::new_uninit();
        let at = chunk.as_mut_ptr();
        for i in 0..CHUNK_WORDS / 8 {
            let line = Line(std::array::from_fn(|_| Atomic::new(Word::from_raw(0))));
            // SAFETY: `at` points to the box's (uninitialised, exclusively owned) `Chunk`, and
            // `i` is in bounds: writing a field in place initialises it without reading it.
            unsafe { std::ptr::addr_of_mut!((*at).lines[i]).write(line) };
        }
        for i in 0..CHUNK_WORDS {
            // SAFETY: as above, for the tags.
            unsafe { std::ptr::addr_of_mut!((*at).tags[i]).write(AtomicPtr::new(std::ptr::null_mut())) };
        }
        // SAFETY: the loops above initialised every field of the `Chunk`.
        let chunk: &'static Chunk = Box::leak(unsafe { chunk.assume_init() });
        let _ = std::ptr::from_ref(chunk).expose_provenance();
        chunk.lines.iter().flat_map(|line| line.0.iter())
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

    /// The slot's tag: one pointer beside the chunk for whoever holds the slot (the `Owner`s of
    /// its record keep the record's address there). Null while the slot is free.
    #[inline]
    pub(crate) fn tag(slot: &WordRef) -> &'static AtomicPtr<()> {
        let at = std::ptr::from_ref(*slot).addr() + TAGS_AFTER;
        // SAFETY: every slot is in the `lines` of a `Chunk` leaked by `chunk()`, which exposed
        // the chunk's provenance and never frees it; `TAGS_AFTER` past slot `i` is `tags[i]` of
        // the same chunk (the assertion beside `TAGS_AFTER`), an initialised `AtomicPtr` only
        // ever accessed atomically, so a shared `'static` reference to it is sound.
        unsafe { &*std::ptr::with_exposed_provenance::<AtomicPtr<()>>(at) }
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
        Word::pack(
            LivenessState::Active,
            Seq::default(),
            crate::clock::LivenessMs(deadline_ms),
        )
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
        a.store(
            Word::pack(LivenessState::Offline, Seq::default(), crate::clock::LivenessMs(7)),
            Ordering::Relaxed,
        );
        slab.free(a);
        let c = slab.alloc(w(3));
        assert_eq!(addr(c), addr(a));
        assert_eq!(c.load(Ordering::Acquire), w(3));
        assert_eq!(b.load(Ordering::Acquire), w(2));
    }

    #[test]
    fn each_slot_has_its_own_tag_and_freeing_clears_it() {
        let slab = Slab::new();
        let (a, b) = (slab.alloc(w(1)), slab.alloc(w(2)));
        let (x, y) = (
            std::ptr::dangling_mut::<u32>().cast::<()>(),
            std::ptr::dangling_mut::<u64>().cast::<()>(),
        );
        tag(&a).store(x, Ordering::Relaxed);
        tag(&b).store(y, Ordering::Relaxed);
        let tag_addr = |s: &WordRef| std::ptr::from_ref(tag(s)) as usize;
        assert_eq!(
            tag_addr(&b) - tag_addr(&a),
            addr(b) - addr(a),
            "tags are laid out as the words"
        );
        assert!(
            tag_addr(&a) >= addr(a) + CHUNK_WORDS * 8,
            "tags lie after the chunk's words"
        );
        slab.free(a);
        assert!(
            tag(&a).load(Ordering::Relaxed).is_null(),
            "a free slot's tag is cleared"
        );
        assert_eq!(tag(&b).load(Ordering::Relaxed), y, "its neighbour's is not");
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
