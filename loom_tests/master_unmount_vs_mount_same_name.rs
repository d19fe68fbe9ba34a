//! Race (loom, exhaustive to the preemption bound, over the real `Master`): the victim `a`
//! unmounts its segment `a0` while another client `c` (a restarted client under a new id)
//! mounts a segment of the same name. Issue 29 defect 2.
//!
//! Scenario (2 metadata shards, 2 registry shards): `a` owns `a0` (one object on it), `b` owns
//! `b0`. One thread runs `a`'s Unmount of `a0`; the main thread runs `c`'s Mount of `a0`.
//!
//! Checked at the end of every schedule: if `c`'s mount succeeded, `a0` is `c`'s and the
//! external metadata holds its entry; the master balances, and its external metadata is exactly
//! the mounted segments (tests/invariants/mod.rs). Outcomes that must all be reached: `c`
//! refused (the name still `a`'s) and `c` mounted after the unmount.
//!
//! Can it fail? It did on the code before issue 29: the unmount removed `a0` from the table and
//! deleted its external entry afterwards, so `c` could mount `a0` (and put its entry) between
//! the two, and the late delete erased `c`'s entry ("segment a0 is mounted but has no external
//! metadata entry"). Fixed by deleting the entry while the table still holds the name
//! (`MasterCore::drop_segment`'s `retire`).
#![cfg(loom)]

mod master_common;

use loom::thread;
use master_common::{invariants, model, Rig, VICTIM, VICTIM_SEG};
use mooncake_liveness::master::OffboardingDriver;

#[test]
fn master_unmount_vs_mount_same_name() {
    model(
        "master_unmount_vs_mount_same_name",
        &["c refused", "c mounted a0"],
        |seen| {
            let rig = Rig::new(OffboardingDriver::Inline);
            rig.object("k0", 10, 1);
            let unmount = {
                let m = rig.m.clone();
                thread::spawn(move || m.unmount(VICTIM, VICTIM_SEG))
            };
            let mounted = rig.m.mount("c", VICTIM_SEG, 1000);
            unmount.join().unwrap().expect("a's own unmount succeeds");
            if mounted.is_ok() {
                let owner = rig.m.segments().by_name(VICTIM_SEG).map(|s| s.client_name.to_string());
                assert_eq!(owner.as_deref(), Some("c"), "c's mount succeeded but a0 is not c's");
                assert!(
                    rig.m.external_metadata().contains(VICTIM_SEG),
                    "c's a0 lost its external metadata entry to a's unmount"
                );
            }
            invariants::assert_clean(&rig.m);
            seen.saw(if mounted.is_ok() { "c mounted a0" } else { "c refused" });
        },
    );
}
