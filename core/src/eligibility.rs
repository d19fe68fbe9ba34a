//! `ServingEligibility`: the one place that decides whether a client-owned resource may serve.
//!
//! ```text
//! serve  = resource intrinsically valid ∧ segment lifecycle permits it ∧ owner incarnation Active
//! retain = owner incarnation Active or Suspected
//! ```
//!
//! Every routing path of the reference master (allocation, replica descriptors, Copy/Move
//! sources, targets and executors, task delivery, drain targets, offload and promotion work)
//! asks this module and `match`es the typed answer; no other module reads liveness state
//! (`tests/master_seam.rs` checks the source). The owner term is one `Acquire` load of the word
//! of a record the resource already holds: no lock, no lookup. A resource that holds an
//! [`Owner`] reads the word straight from the word slab (`liveness/slab.rs`), where words lie
//! eight to a cache line; one holding the record itself reads it through the record's line.
//! NoF resources are not client-owned and never come here (invariant 20).
//!
//! Owns: the serve/retain decision, a pure function of a record's word and the resource. Imports
//! only `liveness`; may not touch anything else: no write to a word, no lock, no table of the master.
#![forbid(unsafe_code)]

use crate::liveness::{ClientLivenessRecord, Owner, Word};
use crate::sync::Arc;

/// What a resource holds of its owner: anything that reads the owner's word with one load.
pub trait OwnerWord {
    /// The owner's current word (one `Acquire` load).
    fn owner_word(&self) -> Word;
}

impl OwnerWord for ClientLivenessRecord {
    #[inline]
    fn owner_word(&self) -> Word {
        self.word()
    }
}

impl OwnerWord for Owner {
    #[inline]
    fn owner_word(&self) -> Word {
        self.word()
    }
}

impl<T: OwnerWord + ?Sized> OwnerWord for Arc<T> {
    #[inline]
    fn owner_word(&self) -> Word {
        (**self).owner_word()
    }
}

/// What a resource may do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServingEligibility {
    /// It may take new work and be handed out.
    Serve,
    /// It is kept, but must not be chosen for anything new; the reason says why.
    Withhold(Withheld),
    /// Its owner is Offline: it is kept only until offboarding removes it.
    Release,
}

/// Why a retained resource does not serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Withheld {
    /// The resource itself is not usable yet (a replica still being written, a task target).
    NotReady,
    /// Its segment's lifecycle forbids this purpose (mounting, draining, unmounting).
    Lifecycle,
    /// Its owner is Suspected: kept for recovery, routed nowhere.
    OwnerSuspected,
}

/// What the resource is wanted for (segment lifecycles permit reads longer than allocation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// Handing out an existing replica (Get, Copy/Move source, offload/promotion source).
    Read,
    /// New space on a segment (Put, Copy/Move/drain/promotion target).
    Allocate,
}

/// The eligibility of a resource: `valid` and `lifecycle_ok` are the resource's own terms, the
/// owner term is one load of its record's word.
#[inline]
pub fn decide(owner: &(impl OwnerWord + ?Sized), valid: bool, lifecycle_ok: bool) -> ServingEligibility {
    decide_with(owner, || valid, lifecycle_ok)
}

/// [`decide`] with the resource's `valid` term computed only when the owner is Active, the only
/// case it decides: a resource whose validity costs a lock (a segment's free space) skips it for
/// a Suspected or Offline owner. Still one load of the word, read before `valid`.
#[inline]
pub fn decide_with(
    owner: &(impl OwnerWord + ?Sized),
    valid: impl FnOnce() -> bool,
    lifecycle_ok: bool,
) -> ServingEligibility {
    match owner.owner_word().state() {
        crate::liveness::LivenessState::Offline => ServingEligibility::Release,
        crate::liveness::LivenessState::Suspected => ServingEligibility::Withhold(Withheld::OwnerSuspected),
        crate::liveness::LivenessState::Active => resource_terms(valid(), lifecycle_ok),
    }
}

/// The resource's own terms, once its owner counts as Active.
#[inline]
fn resource_terms(valid: bool, lifecycle_ok: bool) -> ServingEligibility {
    if !valid {
        ServingEligibility::Withhold(Withheld::NotReady)
    } else if !lifecycle_ok {
        ServingEligibility::Withhold(Withheld::Lifecycle)
    } else {
        ServingEligibility::Serve
    }
}

/// The seam as a value, so a master can be built with the owner term switched off (only for
/// benchmarks and the test that liveness changes nothing while every owner is Active).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seam {
    /// `false`: the owner term is skipped (every owner counts as Active).
    pub enabled: bool,
}

impl Default for Seam {
    fn default() -> Self {
        Self { enabled: true }
    }
}

impl Seam {
    /// [`decide`], or the owner-blind rule when the seam is disabled.
    #[inline]
    pub fn decide(self, owner: &(impl OwnerWord + ?Sized), valid: bool, lifecycle_ok: bool) -> ServingEligibility {
        self.decide_with(owner, || valid, lifecycle_ok)
    }

    /// [`decide_with`] under this seam (`valid` is computed only when it can matter).
    #[inline]
    pub fn decide_with(
        self,
        owner: &(impl OwnerWord + ?Sized),
        valid: impl FnOnce() -> bool,
        lifecycle_ok: bool,
    ) -> ServingEligibility {
        if self.enabled {
            decide_with(owner, valid, lifecycle_ok)
        } else {
            resource_terms(valid(), lifecycle_ok)
        }
    }

    /// [`executor`] under this seam.
    #[inline]
    pub fn executor(self, owner: &(impl OwnerWord + ?Sized)) -> ServingEligibility {
        self.decide(owner, true, true)
    }
}

/// An incarnation as the executor of new work (task delivery, Copy/Move executor, offload and
/// promotion admission): it must be Active.
#[inline]
pub fn executor(owner: &(impl OwnerWord + ?Sized)) -> ServingEligibility {
    decide(owner, true, true)
}

/// May a callback for work handed out earlier (End, Revoke, task completion/failure) be
/// accepted from this incarnation? Yes while it is retained (invariant 11).
#[inline]
pub fn accepts_callbacks(owner: &(impl OwnerWord + ?Sized)) -> bool {
    owner.owner_word().is_retained()
}

impl ServingEligibility {
    /// `true` for [`ServingEligibility::Serve`].
    #[inline]
    pub fn serves(self) -> bool {
        matches!(self, Self::Serve)
    }

    /// `true` unless the owner is Offline.
    #[inline]
    pub fn retains(self) -> bool {
        !matches!(self, Self::Release)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::liveness::word::{LivenessState, Seq, Word};
    use crate::liveness::{ClientId, Incarnation};

    fn rec(state: LivenessState) -> ClientLivenessRecord {
        ClientLivenessRecord::with_word(
            ClientId(1),
            Incarnation(1),
            Word::pack(state, Seq::default(), crate::clock::LivenessMs(0)),
        )
    }

    #[test]
    fn table() {
        use LivenessState::*;
        use ServingEligibility::*;
        #[rustfmt::skip]
        let rows = [
            (Active, true, true, Serve),
            (Active, false, true, Withhold(Withheld::NotReady)),
            (Active, true, false, Withhold(Withheld::Lifecycle)),
            (Suspected, true, true, Withhold(Withheld::OwnerSuspected)),
            (Suspected, false, false, Withhold(Withheld::OwnerSuspected)),
            (Offline, true, true, Release),
        ];
        for (state, valid, lifecycle, want) in rows {
            assert_eq!(
                decide(&rec(state), valid, lifecycle),
                want,
                "{state:?} {valid} {lifecycle}"
            );
            assert_eq!(want.retains(), state != Offline);
            assert_eq!(accepts_callbacks(&rec(state)), state != Offline);
        }
        assert_eq!(executor(&rec(Active)), Serve);
        assert!(!executor(&rec(Suspected)).serves());
    }
}
