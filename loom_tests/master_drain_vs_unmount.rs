//! Race (loom, exhaustive to the preemption bound, over the real `Master`): a drain of the
//! victim's segment `a0` while the victim unmounts it. Issue 29 (found by reading): drain
//! checked the lifecycle, then stored `Draining` over whatever was there by then.
//!
//! Scenario (2 metadata shards, 2 registry shards): `a` owns `a0` with one object on it and on
//! `b0`. One thread drains `a0`; the main thread unmounts it.
//!
//! Checked at the end of every schedule: the unmount succeeded, and the segment it unmounted
//! (the `Arc` taken before the race) is `Unmounting`: it serves nothing, whoever still holds it
//! (a replica or task taken just before); the master balances. Outcomes that must all be
//! reached: the drain ran first (it handed out Move tasks or found nothing to move), and the
//! drain was refused (the unmount came first).
//!
//! Can it fail? Yes, on the code before issue 29: the drain reads `Ok`, the unmount stores
//! `Unmounting`, the drain stores `Draining` ("a0 unmounted but Draining: it serves reads"). Fixed
//! by `Segment::begin_drain`'s CAS.
#![cfg(loom)]

mod master_common;

use loom::thread;
use master_common::{invariants, model, Rig, VICTIM, VICTIM_SEG};
use mooncake_liveness::master::{Lifecycle, OffboardingDriver};

#[test]
fn master_drain_vs_unmount() {
    model("master_drain_vs_unmount", &["drained", "drain refused"], |seen| {
        let rig = Rig::new(OffboardingDriver::Inline);
        rig.object("k2", 10, 2);
        let seg = rig.m.segments().by_name(VICTIM_SEG).cloned().unwrap();
        let drain = {
            let m = rig.m.clone();
            thread::spawn(move || m.drain(VICTIM_SEG))
        };
        rig.m.unmount(VICTIM, VICTIM_SEG).expect("a's own unmount succeeds");
        let drained = drain.join().unwrap();
        assert_eq!(
            seg.lifecycle(),
            Lifecycle::Unmounting,
            "a0 unmounted but {:?}: it serves again",
            seg.lifecycle()
        );
        invariants::assert_clean(&rig.m);
        seen.saw(if drained.is_ok() { "drained" } else { "drain refused" });
    });
}
