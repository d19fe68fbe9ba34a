//! Race (loom, exhaustive to the preemption bound, over the real `Master`): the victim `a`'s
//! offboarding job (inline, in the tick that commits it Offline) unmounts `a0` while another
//! client `c` (a restarted client under a new id) mounts a segment of the same name. Issue 29
//! defect 2, through the offboarding job.
//!
//! Scenario (2 metadata shards, 2 registry shards): `a` owns `a0` (one object on it) and is
//! Suspected; `b` owns `b0` and keeps pinging. One thread mounts `c` on `a0`; the main thread
//! ticks at `a`'s suspicion deadline (Offline commit, the job runs inline: `metadata`,
//! `segments`, …, `external_metadata`, compare-and-erase). Then ticks until no job is pending.
//!
//! Checked at the end of every schedule: if `c`'s mount succeeded, `a0` is `c`'s and the
//! external metadata holds its entry; `a` is gone; the master balances and its external
//! metadata is exactly the mounted segments. Outcomes that must all be reached: `c` refused
//! (the name still `a`'s, or held by its pending job) and `c` mounted after the job.
//!
//! Can it fail? It did on the code before issue 29: the `segments` step recorded the freed name
//! only after the segment left the table, and the mount read that record before taking the
//! table lock, so `c` could mount `a0` in the gap and the job's `external_metadata` step then
//! deleted `c`'s entry. Fixed: the name is recorded before the segment leaves the table and the
//! mount reads the record under the table's write lock.
#![cfg(loom)]

mod master_common;

use loom::thread;
use master_common::{invariants, model, Rig, VICTIM_SEG};
use mooncake_liveness::master::OffboardingDriver;

#[test]
fn master_offboarding_vs_mount_same_name() {
    model(
        "master_offboarding_vs_mount_same_name",
        &["c refused", "c mounted a0"],
        |seen| {
            let rig = Rig::new(OffboardingDriver::Inline);
            rig.object("k0", 10, 1);
            rig.suspect_victim();
            let mount = {
                let m = rig.m.clone();
                thread::spawn(move || m.mount("c", VICTIM_SEG, 1000))
            };
            rig.offline_victim();
            let mounted = mount.join().unwrap();
            rig.quiesce();
            assert_eq!(rig.victim_state(), None, "the victim's record survived its job");
            if mounted.is_ok() {
                let owner = rig.m.segments().by_name(VICTIM_SEG).map(|s| s.client_name.to_string());
                assert_eq!(owner.as_deref(), Some("c"), "c's mount succeeded but a0 is not c's");
                assert!(
                    rig.m.external_metadata().contains(VICTIM_SEG),
                    "c's a0 lost its external metadata entry to a's offboarding job"
                );
            }
            invariants::assert_clean(&rig.m);
            seen.saw(if mounted.is_ok() { "c mounted a0" } else { "c refused" });
        },
    );
}
