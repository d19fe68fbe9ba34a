//! `Owner`: how a client-owned resource (a segment, a replica) holds the incarnation that owns it.
//!
//! An `Owner` is the record's `Arc` plus a direct reference to the record's word in the word
//! slab (`slab.rs`). The serving check reads the word through that reference: one load from the
//! slab's dense lines, without first loading the record's line. The `Arc` keeps the record, and
//! so the slot, alive for as long as the `Owner` exists (the slot is freed only by the record's
//! `Drop`), and keeps identity: a later incarnation is a different record with a different slot,
//! so a resource can never serve for a newer incarnation (invariant 13).
//!
//! # Ground rules
//!
//! - **Who writes.** Nobody, through an `Owner`: it only loads (`Acquire`, as
//!   [`ClientLivenessRecord::is_serving`] does; the record's ground rules say why it suffices).
//!   Both fields are immutable after construction.
//! - **What may block what.** Nothing: a load, no lock.

use super::record::ClientLivenessRecord;
use super::slab::{self, WordRef};
use super::word::Word;
use crate::sync::{Arc, Ordering};
use std::fmt;
use std::ops::Deref;

/// A resource's owner: its incarnation's record and a direct reference to that record's word.
pub struct Owner {
    word: WordRef,
    record: Arc<ClientLivenessRecord>,
}

impl Owner {
    /// The owner `record` (one reference to its word is taken; no allocation).
    pub fn new(record: Arc<ClientLivenessRecord>) -> Self {
        Self {
            word: record.word_ref(),
            record,
        }
    }

    /// The owner's current word (one `Acquire` load from the slab).
    #[inline]
    pub fn word(&self) -> Word {
        self.word.load(Ordering::Acquire)
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
        const _: () = assert!(
            std::mem::size_of::<crate::sync::Atomic<Word>>() == 8
                && std::mem::align_of::<crate::sync::Atomic<Word>>() == 8
        );
        // `Atomic<Word>` is `repr(transparent)` over the `repr(transparent)` `u64` `Word`.
        std::ptr::from_ref(slab::slot(&self.word)).cast()
    }

    /// The record (for identity, readiness and everything else a resource asks of its owner).
    pub fn record(&self) -> &Arc<ClientLivenessRecord> {
        &self.record
    }
}

impl Clone for Owner {
    fn clone(&self) -> Self {
        Self {
            word: slab::share(&self.word),
            record: Arc::clone(&self.record),
        }
    }
}

impl From<Arc<ClientLivenessRecord>> for Owner {
    fn from(record: Arc<ClientLivenessRecord>) -> Self {
        Self::new(record)
    }
}

impl Deref for Owner {
    type Target = Arc<ClientLivenessRecord>;

    fn deref(&self) -> &Self::Target {
        &self.record
    }
}

impl fmt::Debug for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.record, f)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
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
            0,
            TTLS.active_ms,
        ));
        let owner = Owner::new(Arc::clone(&rec));
        let copy = owner.clone();
        assert!(owner.is_serving() && owner.should_retain());
        assert_eq!(owner.word(), rec.word());
        let _ = rec.evaluate(1_000, TTLS, false);
        assert_eq!(rec.state(), LivenessState::Suspected);
        assert!(!owner.is_serving() && owner.should_retain() && !copy.is_serving());
        let _ = rec.evaluate(3_000, TTLS, false);
        assert!(!owner.should_retain() && !copy.should_retain());
        assert_eq!(owner.word(), rec.word());
        assert_eq!((owner.client(), owner.incarnation()), (ClientId(3), Incarnation(2)));
        assert!(Arc::ptr_eq(owner.record(), &rec));
        assert_eq!(
            format!("{owner:?}"),
            format!("{:?}", *rec),
            "an Owner prints as its record"
        );
    }

    #[test]
    fn owners_of_two_records_never_share_a_word() {
        let pack = |d| Word::pack(LivenessState::Active, Seq::default(), d);
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
        assert_eq!((a.word().deadline_ms(), b.word().deadline_ms()), (10, 20));
        let _ = a.record().evaluate(10, TTLS, false);
        assert!(!a.is_serving() && b.is_serving());
    }
}
