//! Race: an allocation on a segment whose owner is being committed Offline (invariant 10).
//!
//! The protocol (what the reference master does under its lock, and what any concurrent
//! embedding must do): the allocation **checks the owner's eligibility and inserts the replica
//! while holding the lock that guards the owner's replica index**, and the offboarding sweep
//! takes that same lock after the Offline commit. The Offline commit itself takes no lock.
//!
//! Allowed outcomes: the allocation is refused (it saw a non-Active owner), or it landed and the
//! sweep removed it. Never: the owner Offline and swept, with the replica still indexed.
//!
//! `check_outside_the_lock_is_caught` breaks the protocol on purpose (check, release, insert)
//! and must fail: it shows the model can tell the difference.
#![cfg(loom)]

mod common;

use common::{model, model_covering, Gate, CLIENT, TTLS};
use loom::sync::{Arc, Mutex};
use loom::thread;
use mooncake_liveness::__private::loom::{evaluate, record_with_word, Eval};
use mooncake_liveness::clock::LivenessMs;
use mooncake_liveness::liveness::{Incarnation, LivenessState, Seq, Word};

/// An Active owner already due for suspicion; the monitor thread walks it to Offline.
fn due_owner() -> Arc<mooncake_liveness::ClientLivenessRecord> {
    record_with_word(
        CLIENT,
        Incarnation(1),
        Word::pack(LivenessState::Active, Seq::default(), LivenessMs(0)),
    )
}

/// The monitor: Active → Suspected, then Suspected → Offline, then the sweep under the lock.
fn monitor_and_sweep(owner: &Arc<mooncake_liveness::ClientLivenessRecord>, index: &Mutex<Vec<u32>>) -> bool {
    assert!(matches!(evaluate(owner, 100, TTLS, false), Eval::Suspected { .. }));
    match evaluate(owner, 100 + TTLS.suspicion_ms, TTLS, false) {
        Eval::Offline { job, .. } => {
            index.lock().unwrap().clear();
            drop(job);
            true
        }
        other => panic!("expected the Offline commit, got {other:?}"),
    }
}

#[test]
fn alloc_commit_vs_offline_sweep() {
    model_covering(
        "alloc_commit_vs_offline_sweep",
        &["refused", "inserted then swept"],
        |seen| {
            let owner = due_owner();
            let index = Arc::new(Mutex::new(Vec::new()));
            let gate = Gate::new();
            let alloc = {
                let (owner, index, gate) = (owner.clone(), index.clone(), gate.clone());
                thread::spawn(move || {
                    gate.pass();
                    let mut idx = index.lock().unwrap();
                    if owner.is_serving() {
                        idx.push(1);
                        true
                    } else {
                        false
                    }
                })
            };
            gate.pass();
            assert!(monitor_and_sweep(&owner, &index));
            let inserted = alloc.join().unwrap();
            assert_eq!(owner.state(), LivenessState::Offline);
            assert!(
                index.lock().unwrap().is_empty(),
                "a replica survived the sweep of an Offline owner"
            );
            seen.saw(if inserted { "inserted then swept" } else { "refused" });
        },
    );
}

#[test]
#[should_panic(expected = "a replica survived the sweep")]
fn check_outside_the_lock_is_caught() {
    model("check_outside_the_lock_is_caught", || {
        let owner = due_owner();
        let index = Arc::new(Mutex::new(Vec::new()));
        let alloc = {
            let (owner, index) = (owner.clone(), index.clone());
            thread::spawn(move || {
                // Broken: the check and the insert are not under one lock hold.
                if owner.is_serving() {
                    index.lock().unwrap().push(1);
                }
            })
        };
        monitor_and_sweep(&owner, &index);
        alloc.join().unwrap();
        assert!(
            index.lock().unwrap().is_empty(),
            "a replica survived the sweep of an Offline owner"
        );
    });
}
