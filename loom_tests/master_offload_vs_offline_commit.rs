//! Race (loom, exhaustive to the preemption bound, over the real `Master`): the victim `a`'s
//! offload heartbeat admits offload work while the monitor commits `a` Suspected, then Offline,
//! and the inline offboarding job lists and cancels `a`'s tasks. Issue 29 defect 3.
//!
//! Scenario (2 metadata shards, 2 registry shards): `a` owns `a0` and a LocalDisk, one complete
//! object `k0` on `a0` and `b0`; `b` owns `b0` and keeps pinging. One thread runs `a`'s offload
//! heartbeat; the main thread ticks at `a`'s active deadline (Suspected) and at its suspicion
//! deadline (Offline; the job runs inline). Then ticks until no job is pending.
//!
//! Checked at the end of every schedule: `a` is gone; no task is left (in particular none
//! naming `a`'s erased incarnation, which a later incarnation would otherwise be handed);
//! the master balances. Outcomes that must all be reached: the heartbeat handed out the
//! offload, and it handed out nothing.
//!
//! Can it fail? It did on the code before issue 29: `admit_offload` checked the owner Active
//! when the heartbeat began and submitted the task later; with the Offline commit and the job's
//! task listing in between, the task outlived the job ("task … names incarnation 1 of client …,
//! which is not its current record"). Fixed by the re-check after publication
//! (`settle_new_task`).
#![cfg(loom)]

mod master_common;

use loom::thread;
use master_common::{invariants, model, Rig, VICTIM};
use mooncake_liveness::master::OffboardingDriver;

#[test]
fn master_offload_vs_offline_commit() {
    model(
        "master_offload_vs_offline_commit",
        &["offload handed out", "nothing handed out"],
        |seen| {
            let rig = Rig::new(OffboardingDriver::Inline);
            rig.m.mount_local_disk(VICTIM, 1000).unwrap();
            // On a0 and b0: the job's sweep of a0 leaves k0 standing (on b0), so an offload task
            // it did not list would outlive it (with one replica the object, and every task of
            // it, would go with a0).
            rig.object("k0", 10, 2);
            let heartbeat = {
                let m = rig.m.clone();
                thread::spawn(move || m.offload_heartbeat(VICTIM))
            };
            rig.suspect_victim();
            rig.offline_victim();
            let handed = heartbeat.join().unwrap().map(|t| t.len()).unwrap_or(0);
            rig.quiesce();
            assert_eq!(rig.victim_state(), None, "the victim's record survived its job");
            let left: Vec<u64> = rig.m.tasks().iter().map(|t| t.id).collect();
            assert!(left.is_empty(), "tasks outlived the victim's offboarding: {left:?}");
            invariants::assert_clean(&rig.m);
            seen.saw(if handed > 0 {
                "offload handed out"
            } else {
                "nothing handed out"
            });
        },
    );
}
