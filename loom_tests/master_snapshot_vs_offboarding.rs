//! Race (loom, exhaustive to the preemption bound, over the real `Master`): a snapshot taken
//! while the victim's Suspected → Offline commit and its inline offboarding job (the `metadata`
//! batch, which takes shards one at a time and no gate, then the steps that unmount, which take
//! the membership gate shared) run. Invariant 19: never torn.
//!
//! Scenario (2 metadata shards, 2 registry shards, 2 clients): the victim `a` is Suspected
//! before the race, `k0` lives on its `a0`, `k2` on `a0` and the survivor's `b0`. One thread
//! takes `snapshot()`; the main thread ticks at 30 (Offline commit, job runs inline). Then the
//! snapshot goes through `encode`/`decode`, is restored into a fresh master
//! (`Master::restore` must succeed) and that master is ticked until no job is pending.
//!
//! Checked at the end of every schedule: the snapshot restores; the snapshot holds the victim
//! either not Offline (taken before the commit), or Offline *with* its job, or not at all (job
//! completed; then nothing of it is left in the snapshot: no `a0`, no replica of it); the
//! restored master, once its jobs completed, balances (tests/invariants/mod.rs) and is in one of
//! the two clean states: the victim still registered with `a0`, `k0` and `k2` on both segments
//! (captured before its offboarding), or the victim, `a0` and `k0` gone and `k2` on `b0` only.
//! The original master balances too. Outcomes that must all be reached: each of the three ways
//! the snapshot can hold the victim.
//!
//! Can it fail? It did, on the real master as merged (c814f7a), twice (both fixed in
//! master/src/master/snapshot/cut.rs): (1) the job's final compare-and-erase takes no gate, so it could
//! vacate the victim between the snapshot's read of the records (victim Offline with its job)
//! and its read of the vacant slots: `Master::restore` refused "client 1 listed twice";
//! (2) the `metadata` batch takes no gate either, so a victim captured before its Offline commit
//! could have scratch written before the snapshot read the scratch: restore refused "offboarding
//! scratch for client 1 incarnation 1, which has no pending job".
//!
//! Cost (loaded 2-core machine): 3935 iterations, 1.6 s at bound 3.
#![cfg(loom)]

mod master_common;

use loom::thread;
use master_common::{invariants, model, Rig, SURVIVOR_SEG, VICTIM, VICTIM_SEG};
use mooncake_liveness::master::OffboardingDriver;

#[test]
fn master_snapshot_vs_offboarding() {
    model(
        "master_snapshot_vs_offboarding",
        &["before the commit", "with its pending job", "after the job"],
        |seen| {
            let rig = Rig::new(OffboardingDriver::Inline);
            rig.object("k0", 10, 1);
            rig.object("k2", 10, 2);
            let victim = rig.m.client_id(VICTIM).unwrap().0;
            rig.suspect_victim();
            let snap = {
                let m = rig.m.clone();
                thread::spawn(move || m.snapshot())
            };
            rig.offline_victim();
            let snap = snap.join().unwrap();
            rig.quiesce();
            rig.assert_victim_gone_and_clean();

            let held = snap.clients.iter().find(|c| c.id == victim);
            seen.saw(match held {
                Some(c) if c.job.is_some() => "with its pending job",
                Some(_) => "before the commit",
                None => {
                    assert!(
                        snap.segments.iter().all(|s| s.name != VICTIM_SEG),
                        "a0 without its owner"
                    );
                    "after the job"
                }
            });
            let r = rig
                .restore(&snap)
                .unwrap_or_else(|e| panic!("a snapshot taken during offboarding does not restore: {e}"));
            r.quiesce();
            invariants::assert_clean(&r.m);
            let mut k2: Vec<String> =
                r.m.object("k2")
                    .expect("k2 keeps its b0 replica")
                    .replicas
                    .iter()
                    .filter_map(|x| x.segment_ref().map(|s| s.name.clone()))
                    .collect();
            k2.sort();
            if r.victim_state().is_some() {
                assert!(
                    r.m.segments().by_name(VICTIM_SEG).is_some(),
                    "victim restored without a0"
                );
                assert!(r.m.object("k0").is_some(), "victim restored without k0");
                assert_eq!(k2, [VICTIM_SEG, SURVIVOR_SEG], "victim restored, k2 torn");
            } else {
                r.assert_victim_gone_and_clean();
                assert!(r.m.object("k0").is_none(), "k0 outlived its only segment");
                assert_eq!(k2, [SURVIVOR_SEG]);
            }
        },
    );
}
