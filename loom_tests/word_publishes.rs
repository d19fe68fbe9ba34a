//! Publication through the word: what a path wrote before it changed an incarnation's word is
//! visible to a reader that acted on the new state.
//!
//! The record's ground rules ("Orderings", `core/src/liveness/record.rs`) promise it: the transition
//! CAS is `AcqRel`, and every read of the state is an `Acquire` load, so "a reader that sees
//! Active also sees everything published before the last recovery", and a reader that sees
//! Offline sees everything the monitor did before the commit. Each model below writes data with
//! a `Relaxed` store (which orders nothing by itself: loom lets a later `Relaxed` load return the
//! old value unless a happens-before edge forbids it) on one thread, then changes the word with
//! the real CAS loop; the other thread reads the state through one of the reading paths and, if
//! it saw the new state, loads the data. The model fails (the load returns 0) if any ordering on
//! that path is too weak: the CAS's release
//! half, or the `Acquire` of `Owner::is_serving`, `ClientLivenessRecord::is_serving`,
//! `ClientLivenessRecord::word` or `ClientLivenessRecord::should_retain` (MUTANTS.md, "Memory
//! orderings": before these models, weakening any of those loads to `Relaxed` failed no model).
//!
//! Both threads first pass a [`Gate`] (one relaxed read-modify-write: loom then tries each
//! thread first). Allowed outcomes: the reader saw the old state (and read nothing), or the new one (and the
//! data); both must be reached.
#![cfg(loom)]

mod common;

use common::{model_covering, Gate, Seen, CLIENT, TTLS};
use loom::sync::atomic::{AtomicU64, Ordering::Relaxed};
use loom::sync::Arc;
use loom::thread;
use mooncake_liveness::__private::loom::{evaluate, record_with_word, signal, Eval};
use mooncake_liveness::clock::LivenessMs;
use mooncake_liveness::liveness::{Applied, Change, Owner, Seq, Word};
use mooncake_liveness::{ClientLivenessRecord, Incarnation, LivenessState};

const OLD: &str = "reader saw the old state";
const NEW: &str = "reader saw the new state and the data";
const DATA: u64 = 42;
/// The suspicion deadline of the record every model starts from.
const DEADLINE: u64 = 100;

/// The paths a router (or the offboarding side) reads the state by.
#[derive(Clone, Copy, Debug)]
enum Reader {
    /// `Owner::is_serving`: what the master's segments, replicas and tasks hold.
    Owner,
    /// `ClientLivenessRecord::is_serving`.
    RecordIsServing,
    /// `ClientLivenessRecord::word`, then `is_active` (the seam's `decide`).
    RecordWord,
}

impl Reader {
    fn serving(self, rec: &Arc<ClientLivenessRecord>, owner: &Owner) -> bool {
        match self {
            Reader::Owner => owner.is_serving(),
            Reader::RecordIsServing => rec.is_serving(),
            Reader::RecordWord => rec.word().is_active(),
        }
    }
}

/// The race every model runs, on a Suspected record whose deadline is [`DEADLINE`]: a spawned
/// thread stores the data, then runs `transition`; the calling thread asks `sees_new` and, if
/// it answers yes, loads the data, which must be the new value. Returns what `transition` did.
fn race<R: Send + 'static>(
    seen: &Seen,
    transition: fn(&Arc<ClientLivenessRecord>) -> R,
    sees_new: impl Fn(&Arc<ClientLivenessRecord>, &Owner) -> bool,
) -> R {
    let suspected = Word::pack(LivenessState::Suspected, Seq::new(1), LivenessMs(DEADLINE));
    let rec = record_with_word(CLIENT, Incarnation::FIRST, suspected);
    let owner = Owner::new(rec.clone());
    let data = Arc::new(AtomicU64::new(0));
    let gate = Gate::new();
    let writer = {
        let (rec, data, gate) = (rec.clone(), data.clone(), gate.clone());
        thread::spawn(move || {
            gate.pass();
            data.store(DATA, Relaxed);
            transition(&rec)
        })
    };
    gate.pass();
    if sees_new(&rec, &owner) {
        assert_eq!(
            data.load(Relaxed),
            DATA,
            "the reader saw the new state but not the data"
        );
        seen.saw(NEW);
    } else {
        seen.saw(OLD);
    }
    writer.join().unwrap()
}

/// A recovery (Suspected → Active by a liveness signal) publishes what the signalling thread
/// wrote before it to a reader that sees Active.
fn recovery_publishes(name: &str, reader: Reader) {
    model_covering(name, &[OLD, NEW], move |seen| {
        let recover = |rec: &Arc<ClientLivenessRecord>| signal(rec, DEADLINE - 1, TTLS);
        match race(seen, recover, |rec, owner| reader.serving(rec, owner)) {
            Applied::Committed {
                change: Change::Recovered,
                ..
            } => {}
            other => panic!("the signal did not recover: {other:?}"),
        }
    });
}

#[test]
fn recovery_publishes_to_owner_is_serving() {
    recovery_publishes("recovery_publishes_to_owner_is_serving", Reader::Owner);
}

#[test]
fn recovery_publishes_to_record_is_serving() {
    recovery_publishes("recovery_publishes_to_record_is_serving", Reader::RecordIsServing);
}

#[test]
fn recovery_publishes_to_record_word() {
    recovery_publishes("recovery_publishes_to_record_word", Reader::RecordWord);
}

/// The Offline commit publishes what the monitor wrote before it to a reader that sees
/// "not retained" (`should_retain`, the offboarding side's and the seam's `Release` answer).
#[test]
fn offline_commit_publishes_to_should_retain() {
    model_covering("offline_commit_publishes_to_should_retain", &[OLD, NEW], |seen| {
        let commit = |rec: &Arc<ClientLivenessRecord>| evaluate(rec, DEADLINE, TTLS, false);
        match race(seen, commit, |rec, _| !rec.should_retain()) {
            Eval::Offline { to, .. } => assert_eq!(to.state(), LivenessState::Offline),
            other => panic!("the monitor did not commit Offline: {other:?}"),
        }
    });
}
