//! Race (loom, exhaustive to the preemption bound, over the real `Master`): Get racing the
//! victim's Suspected/Offline commits and its offboarding sweep, which compare-and-erases the
//! victim's replicas object by object and then unmounts its segment. Invariants 9 and 16.
//!
//! Scenario (2 metadata shards, 2 registry shards, 2 clients): `k0` lives only on the victim's
//! `a0`, `k2` on `a0` and the survivor's `b0`. One thread reads `k2` then `k0`, noting before
//! each Get the victim's liveness and `a0`'s lifecycle; the main thread ticks at 10 (victim
//! Suspected) and 30 (Offline; the inline job sweeps, unmounts and erases).
//!
//! Allowed: `k2` → `[a0, b0]` (the full live set) or `[b0]`; `k0` → `[a0]`, `REPLICA_IS_NOT_READY`
//! (Suspected owner, object kept) or `OBJECT_NOT_FOUND` (erased). Never: a descriptor on `a0`
//! from a Get that started after the victim stopped being Active or after `a0` stopped being
//! `Ok`; `a0` served again once a Get saw it hidden; `k2` without its `b0` replica. At the end of
//! every schedule the master balances (tests/invariants/mod.rs) and `a0` is gone.
//! Outcomes that must all be reached: each of `k0`'s three answers.
//!
//! Can it fail? If `readable` (master/src/master/data.rs) described every replica instead of the
//! serving ones, a Get starting after the Suspected commit would return `a0` and the check
//! "Get after the victim stopped being Active returned a0" would fire. Demonstrated
//! 2026-12-03 at bound 3: with `readable`'s filter replaced by `|_| true`, the model fails in
//! 1.5 s with exactly that message (line 61); the broken code was not committed.
//!
//! Cost (loaded 2-core machine): 10169 iterations, 6.5 s at bound 3.
#![cfg(loom)]

mod master_common;

use loom::thread;
use master_common::{model, Rig, SURVIVOR_SEG, VICTIM, VICTIM_SEG};
use mooncake_liveness::master::{Lifecycle, MasterError, OffboardingDriver, ReplicaDesc};
use mooncake_liveness::LivenessState;

/// The segments of `d`, sorted (replica order follows the allocation strategy).
fn names(d: &[ReplicaDesc]) -> Vec<&str> {
    let mut v: Vec<&str> = d.iter().map(|d| d.segment.as_str()).collect();
    v.sort_unstable();
    v
}

#[test]
fn master_get_vs_erase() {
    model(
        "master_get_vs_erase",
        &["k0 served from a0", "k0 not ready", "k0 not found"],
        |seen| {
            let rig = Rig::new(OffboardingDriver::Inline);
            rig.object("k0", 10, 1);
            rig.object("k2", 10, 2);
            let id = rig.m.client_id(VICTIM).unwrap();
            let victim = rig.m.liveness().registry().get(id).unwrap();
            let a0 = rig.m.segments().by_name(VICTIM_SEG).unwrap().clone();
            let reader = {
                let m = rig.m.clone();
                thread::spawn(move || {
                    let mut hidden = false;
                    let mut out = Vec::new();
                    for key in ["k2", "k0"] {
                        let before = (victim.state(), a0.lifecycle());
                        let got = m.get(key);
                        let served_a0 = got.as_ref().is_ok_and(|d| names(d).contains(&VICTIM_SEG));
                        if before.0 != LivenessState::Active {
                            assert!(!served_a0, "Get after the victim stopped being Active returned a0");
                        }
                        if before.1 != Lifecycle::Ok {
                            assert!(!served_a0, "Get after a0 stopped being Ok returned a0");
                        }
                        assert!(!(hidden && served_a0), "a0 served again after a Get saw it hidden");
                        hidden |= !served_a0;
                        out.push(got);
                    }
                    out
                })
            };
            rig.suspect_victim();
            rig.offline_victim();
            let got = reader.join().unwrap();
            rig.quiesce();
            rig.assert_victim_gone_and_clean();
            match &got[0] {
                Ok(d) => assert!(
                    names(d) == [VICTIM_SEG, SURVIVOR_SEG] || names(d) == [SURVIVOR_SEG],
                    "k2 -> {d:?}"
                ),
                Err(e) => panic!("k2 -> {e:?}: its b0 replica always serves"),
            }
            seen.saw(match &got[1] {
                Ok(d) if names(d) == [VICTIM_SEG] => "k0 served from a0",
                Err(MasterError::ReplicaIsNotReady) => "k0 not ready",
                Err(MasterError::ObjectNotFound) => "k0 not found",
                other => panic!("k0 -> {other:?}"),
            });
        },
    );
}
