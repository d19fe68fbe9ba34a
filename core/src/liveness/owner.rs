//! `Owner`: how a client-owned resource (a segment, a replica) holds the incarnation that owns it.
//!
//! An `Owner` is one pointer: a reference to the record's word in the word slab (`slab.rs`). The
//! serving check reads the word through it: one load from the slab's dense lines, without first
//! loading the record's line. The `Owner` also holds one strong count of the record's `Arc`; the
//! record's address sits in the slot's tag (beside the slab's chunk), where [`Owner::record`]
//! finds it. The count keeps the record, and so the slot, alive for as long as the `Owner`
//! exists (the slot is freed only by the record's `Drop`), and keeps identity: a later
//! incarnation is a different record with a different slot, so a resource can never serve for
//! a newer incarnation (invariant 13).
//!
//! **Why one pointer.** A router's resources are scanned back to back; with the record's `Arc`
//! beside the word reference a resource was 8 bytes larger (24 bytes in `eligibility/word`, a
//! 24 KiB array for 1,024 replicas), and the check ran 1.16–1.28× its floor. With one pointer it
//! runs 1.01–1.11×, as fast as the same check on private words packed eight to a line
//! (BENCHMARKS.md, "Issue 18 on `812c47f`").
//!
//! # Ground rules
//!
//! - **Who writes.** The word: nobody, through an `Owner`: it only loads (`Acquire`, as
//!   [`ClientLivenessRecord::is_serving`] does; the record's ground rules say why it suffices).
//!   The tag: [`Owner::new`] stores the record's address (`Relaxed`), and the slab clears it
//!   when the record is dropped. Every store while the record lives writes the same value.
//! - **Why `Relaxed` suffices for the tag.** A thread reads the tag only through an `Owner` it
//!   holds. That `Owner` was made by `Owner::new` (which stored the address) and reached
//!   the thread by whatever synchronisation moved it, so the store happens-before the read; the
//!   only later store is the slab's clear, which needs the record dropped, which needs every
//!   `Owner` gone. A slot passes from a dropped record to a new one through the slab's lock, so
//!   the new record's `Owner::new` is ordered after the old one's last read.
//! - **The count.** Each `Owner` owns exactly one strong count of its record's `Arc`: taken
//!   from the `Arc` given to [`Owner::new`], added by `clone`, given back by `drop`.
//! - **What may block what.** Nothing: loads and `Arc` counts, no lock.
//! - **Under loom** an `Owner` holds the record's `Arc` beside the word's `Arc` (loom's slab is
//!   a word per `Arc`, with no tags): the models check the protocols, not the representation.

use super::record::ClientLivenessRecord;
use super::slab;
use super::word::Word;
use crate::sync::{Arc, Atomic, Ordering};
use std::fmt;
use std::ops::Deref;

#[cfg(not(loom))]
#[allow(unsafe_code)] // the record's strong count, owned through the tag's raw pointer (`SAFETY` at each)
mod repr {
    use super::*;
    use crate::liveness::slab::WordRef;

    /// The word's slot; the record's address is in the slot's tag.
    pub struct Owner {
        word: WordRef,
    }

    const _: () = assert!(std::mem::size_of::<Owner>() == std::mem::size_of::<usize>());

    impl Owner {
        pub(super) fn from_arc(record: Arc<ClientLivenessRecord>) -> Self {
            let word = record.word_ref();
            let tag = slab::tag(&word);
            // Owners are made when a resource first binds a record (a segment's mount, a restored
            // LocalDisk); the replicas that follow clone one, so this store is not on a hot path.
            tag.store(Arc::into_raw(record).cast_mut().cast(), Ordering::Relaxed);
            Self { word }
        }

        #[inline(always)]
        pub(super) fn slot(&self) -> &Atomic<Word> {
            slab::slot(&self.word)
        }

        /// The record's address, from `Arc::into_raw` (the module's ground rules say why the
        /// tag holds it).
        fn record_ptr(&self) -> *const ClientLivenessRecord {
            slab::tag(&self.word).load(Ordering::Relaxed).cast_const().cast()
        }

        pub(super) fn record_ref(&self) -> &ClientLivenessRecord {
            // SAFETY: `self` owns a strong count of the record at this address, so it is alive
            // for at least as long as the borrow of `self`.
            unsafe { &*self.record_ptr() }
        }

        pub(super) fn arc(&self) -> Arc<ClientLivenessRecord> {
            let at = self.record_ptr();
            // SAFETY: `at` came from `Arc::into_raw` and `self`'s count keeps it alive; the
            // count added here is the one the returned `Arc` owns.
            unsafe {
                Arc::increment_strong_count(at);
                Arc::from_raw(at)
            }
        }
    }

    impl Clone for Owner {
        fn clone(&self) -> Self {
            // SAFETY: as in `to_arc`; the count added is the new `Owner`'s.
            unsafe { Arc::increment_strong_count(self.record_ptr()) };
            Self {
                word: slab::share(&self.word),
            }
        }
    }

    impl Drop for Owner {
        fn drop(&mut self) {
            // SAFETY: gives back the count this `Owner` owns; the address is read before the
            // record (and with it the slot's tag) may go.
            unsafe { Arc::decrement_strong_count(self.record_ptr()) };
        }
    }
}

#[cfg(loom)]
mod repr {
    use super::*;
    use crate::liveness::slab::WordRef;

    /// Under loom: the word's `Arc` and the record's `Arc`.
    #[derive(Clone)]
    pub struct Owner {
        word: WordRef,
        record: Arc<ClientLivenessRecord>,
    }

    impl Owner {
        pub(super) fn from_arc(record: Arc<ClientLivenessRecord>) -> Self {
            Self {
                word: record.word_ref(),
                record,
            }
        }

        pub(super) fn slot(&self) -> &Atomic<Word> {
            slab::slot(&self.word)
        }

        pub(super) fn record_ref(&self) -> &ClientLivenessRecord {
            &self.record
        }

        pub(super) fn arc(&self) -> Arc<ClientLivenessRecord> {
            Arc::clone(&self.record)
        }
    }
}

/// A resource's owner: a reference to its incarnation's word that also keeps the record.
pub use repr::Owner;

impl Owner {
    /// The owner `record` (takes over `record`'s count; no allocation).
    pub fn new(record: Arc<ClientLivenessRecord>) -> Self {
        Self::from_arc(record)
    }

    /// The owner's current word (one `Acquire` load from the slab).
    #[inline]
    pub fn word(&self) -> Word {
        self.slot().load(Ordering::Acquire)
    }

    /// May the owner's resources serve new work? One `Acquire` load and a compare.
    #[inline]
    pub fn is_serving(&self) -> bool {
        self.word().is_active()
    }

    /// Must the owner's resources be kept? One `Acquire` load and a compare.
    #[inline]
    pub fn should_retain(&self) -> bool {
        self.word().is_retained()
    }

    /// The address of the word this owner reads, for an embedder that loads it itself (the C
    /// ABI's header-inline serving check): 8 bytes, 8-aligned, written only by atomic
    /// read-modify-writes, so the embedder must load it atomically (`Acquire`, as
    /// [`Owner::is_serving`] does) and compare the raw value with [`word::ACTIVE_BELOW`] or
    /// [`word::RETAINED_BELOW`](super::word::RETAINED_BELOW). It stays this incarnation's word
    /// for as long as this `Owner` lives: the slab reuses a slot only after the record is dropped.
    ///
    /// [`word::ACTIVE_BELOW`]: super::word::ACTIVE_BELOW
    #[cfg(not(loom))]
    pub fn word_ptr(&self) -> *const u64 {
        const _: () = assert!(std::mem::size_of::<Atomic<Word>>() == 8 && std::mem::align_of::<Atomic<Word>>() == 8);
        // `Atomic<Word>` is `repr(transparent)` over the `repr(transparent)` `u64` `Word`.
        std::ptr::from_ref(self.slot()).cast()
    }

    /// The record (for identity, readiness and everything else a resource asks of its owner).
    /// Reads the record's address from the slot's tag: one load more than the serving check.
    pub fn record(&self) -> &ClientLivenessRecord {
        self.record_ref()
    }

    /// A new `Arc` of the record (one strong count more).
    pub fn to_arc(&self) -> Arc<ClientLivenessRecord> {
        self.arc()
    }

    /// Is this owner the incarnation `record` (the same record, not merely the same client)?
    /// Compares word slots, without reading the tag: both records are alive here, and two live
    /// records never share a slot (a slot is reused only after its record is dropped).
    pub fn is(&self, record: &ClientLivenessRecord) -> bool {
        std::ptr::eq(self.slot(), slab::slot(&record.word_ref()))
    }
}

impl From<Arc<ClientLivenessRecord>> for Owner {
    fn from(record: Arc<ClientLivenessRecord>) -> Self {
        Self::new(record)
    }
}

impl Deref for Owner {
    type Target = ClientLivenessRecord;

    fn deref(&self) -> &Self::Target {
        self.record()
    }
}

impl fmt::Debug for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.record(), f)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::LivenessMs;
    use crate::liveness::word::{LivenessState, Seq, Ttls};
    use crate::liveness::{ClientId, Incarnation};

    const TTLS: Ttls = Ttls {
        active_ms: 1_000,
        suspicion_ms: 2_000,
    };

    #[test]
    fn an_owner_reads_the_records_own_word() {
        let rec = Arc::new(ClientLivenessRecord::new(
            ClientId(3),
            Incarnation(2),
            LivenessMs(0),
            TTLS.active_ms,
        ));
        let owner = Owner::new(Arc::clone(&rec));
        let copy = owner.clone();
        assert!(owner.is_serving() && owner.should_retain());
        assert_eq!(owner.word(), rec.word());
        let _ = rec.evaluate(LivenessMs(1_000), TTLS, false);
        assert_eq!(rec.state(), LivenessState::Suspected);
        assert!(!owner.is_serving() && owner.should_retain() && !copy.is_serving());
        let _ = rec.evaluate(LivenessMs(3_000), TTLS, false);
        assert!(!owner.should_retain() && !copy.should_retain());
        assert_eq!(owner.word(), rec.word());
        assert_eq!((owner.client(), owner.incarnation()), (ClientId(3), Incarnation(2)));
        assert!(owner.is(&rec) && std::ptr::eq(owner.record(), &*rec));
        assert_eq!(
            format!("{owner:?}"),
            format!("{:?}", *rec),
            "an Owner prints as its record"
        );
    }

    #[test]
    fn each_owner_holds_one_count_and_the_last_one_drops_the_record() {
        let rec = Arc::new(ClientLivenessRecord::new(
            ClientId(4),
            Incarnation(1),
            LivenessMs(0),
            TTLS.active_ms,
        ));
        let weak = Arc::downgrade(&rec);
        let owner = Owner::new(Arc::clone(&rec));
        let copy = owner.clone();
        let arc = copy.to_arc();
        assert_eq!(
            Arc::strong_count(&rec),
            4,
            "the record, two owners, one Arc from an owner"
        );
        assert!(Arc::ptr_eq(&arc, &rec) && copy.is(&rec));
        drop((arc, rec, owner));
        assert_eq!(weak.strong_count(), 1, "the copy alone keeps the record");
        assert_eq!(copy.incarnation(), Incarnation(1));
        drop(copy);
        assert!(weak.upgrade().is_none(), "the last owner dropped the record");
    }

    #[test]
    fn an_owner_of_a_reused_slot_names_the_new_record() {
        let mut reused = 0;
        for n in 1..=1_000 {
            let old = Arc::new(ClientLivenessRecord::new(
                ClientId(5),
                Incarnation(n),
                LivenessMs(0),
                TTLS.active_ms,
            ));
            let old_word = Owner::new(old).word_ptr();
            let new = Arc::new(ClientLivenessRecord::new(
                ClientId(6),
                Incarnation(n),
                LivenessMs(0),
                TTLS.active_ms,
            ));
            let owner = Owner::new(Arc::clone(&new));
            reused += usize::from(owner.word_ptr() == old_word);
            assert!(owner.is(&new) && owner.client() == ClientId(6) && owner.incarnation() == Incarnation(n));
        }
        assert!(reused > 0, "the slab hands a freed slot out again (LIFO)");
    }

    #[test]
    fn owners_of_two_records_never_share_a_word() {
        let pack = |d| Word::pack(LivenessState::Active, Seq::default(), LivenessMs(d));
        let a = Owner::new(Arc::new(ClientLivenessRecord::with_word(
            ClientId(1),
            Incarnation(1),
            pack(10),
        )));
        let b = Owner::new(Arc::new(ClientLivenessRecord::with_word(
            ClientId(1),
            Incarnation(2),
            pack(20),
        )));
        assert_eq!(
            (a.word().deadline(), b.word().deadline()),
            (LivenessMs(10), LivenessMs(20))
        );
        assert!(a.is(a.record()) && !a.is(b.record()) && !b.is(a.record()));
        let _ = a.record().evaluate(LivenessMs(10), TTLS, false);
        assert!(!a.is_serving() && b.is_serving());
    }
}
