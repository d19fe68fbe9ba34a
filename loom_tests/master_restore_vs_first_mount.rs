//! Race (loom, exhaustive to the preemption bound, over the real `Master`): the first requests
//! a master restored from a snapshot serves — the restored victim's own first mount and a
//! restarted client's mount of the victim's segment name — against the first tick, which hands
//! the restored offboarding job to the driver and runs it inline. Issue 29, item 5.
//!
//! Scenario: on the original master (2 metadata shards, 2 registry shards) the victim `a`,
//! owner of `a0` (one object on it), goes Offline with its job held in the outbox; the snapshot
//! taken then holds `a` Offline with its pending job. A master restored from it (inline
//! offboarding) serves: one thread mounts `a` again on `a0`, another mounts client `c` on `a0`;
//! the main thread ticks (the restored job runs: `a0` unmounted, its entry deleted, the record
//! erased). Then ticks until no job is pending.
//!
//! Checked at the end of every schedule: `a`'s mount is refused with `CLIENT_OFFBOARDING`
//! (the barrier holds until the restored job completes) or succeeds as a new incarnation after
//! it; at most one of `a` and `c` holds `a0`, and whoever holds it has its external entry; the
//! restored master balances. Outcomes that must all be reached: `a` refused by the barrier,
//! and `a0` held by `a` or `c` after the job.
#![cfg(loom)]

mod master_common;

use loom::thread;
use master_common::{invariants, model_capped, Rig, VICTIM, VICTIM_SEG};
use mooncake_liveness::master::{MasterError, OffboardingDriver};
use mooncake_liveness::Clock;

#[test]
fn master_restore_vs_first_mount() {
    // Three threads over a whole master: bound 2 keeps it to seconds.
    model_capped(
        "master_restore_vs_first_mount",
        2,
        &["a refused by the barrier", "a0 remounted after the job"],
        |seen| {
            let rig = Rig::new(OffboardingDriver::Outbox);
            rig.object("k0", 10, 1);
            rig.suspect_victim();
            rig.offline_victim(); // the job waits in the outbox
            let snap = rig.m.snapshot();
            let r = rig.restore(&snap).expect("a snapshot with a pending job restores");
            let a = {
                let m = r.m.clone();
                thread::spawn(move || m.mount(VICTIM, VICTIM_SEG, 1000))
            };
            let c = {
                let m = r.m.clone();
                thread::spawn(move || m.mount("c", VICTIM_SEG, 1000))
            };
            r.tick_at(r.clock.now_ms() + 1);
            let (a, c) = (a.join().unwrap(), c.join().unwrap());
            r.quiesce();
            if let Err(e) = &a {
                assert_eq!(*e, MasterError::ClientOffboarding, "a refused for another reason");
            }
            let holder = r.m.segments().by_name(VICTIM_SEG).map(|s| s.client_name.to_string());
            match holder.as_deref() {
                Some(h) => {
                    let won = if h == VICTIM { &a } else { &c };
                    assert!(won.is_ok(), "{h} holds a0 though its mount failed");
                    assert!(r.m.external_metadata().contains(VICTIM_SEG), "{h}'s a0 has no entry");
                }
                None => assert!(a.is_err() && c.is_err(), "a mount succeeded but a0 is not mounted"),
            }
            invariants::assert_clean(&r.m);
            if a.is_err() {
                seen.saw("a refused by the barrier");
            }
            if holder.is_some() {
                seen.saw("a0 remounted after the job");
            }
        },
    );
}
