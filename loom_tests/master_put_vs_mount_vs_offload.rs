//! Race (loom, to the preemption bound, over the real `Master`): the three paths of issue 29's
//! deadlock at once on one metadata shard — a Put of a new key (shard → segment table), the
//! victim's offload heartbeat (which walked its segments with the table's read guard alive while
//! it locked shards: table → shard), and another client's mount (a table write). Issue 29,
//! defect 1 and item 5.
//!
//! Scenario: the rig with one metadata shard; `a` owns `a0` and a LocalDisk with one complete
//! object on `a0`. Threads: a Put of `k9` (1 replica), `a`'s offload heartbeat, and (main)
//! `c`'s mount of `c0`.
//!
//! Checked at the end of every schedule: all three return (loom reports a deadlock if the
//! threads block each other for good), the Put succeeded, and the master balances. In debug
//! builds of the normal test suite the lock-order check (core/src/sync.rs) catches the inversion
//! on any interleaving; loom's `RwLock` does not queue a writer ahead of new readers as std's
//! does, so this model checks that the three paths complete and leave the master consistent
//! rather than reproducing std's writer-priority deadlock. Outcomes that must all be reached:
//! the heartbeat handed out the offload, and it did not (the Put's key or the mount came first
//! is irrelevant to it; what varies is whether `k0` was offloadable when it looked).
#![cfg(loom)]

mod master_common;

use loom::thread;
use master_common::{invariants, model_capped, Rig, VICTIM};
use mooncake_liveness::master::OffboardingDriver;

#[test]
fn master_put_vs_mount_vs_offload() {
    model_capped("master_put_vs_mount_vs_offload", 2, &["offload handed out"], |seen| {
        let rig = Rig::with_shards(OffboardingDriver::Inline, 1);
        rig.m.mount_local_disk(VICTIM, 1000).unwrap();
        rig.object("k0", 10, 1);
        let put = {
            let m = rig.m.clone();
            thread::spawn(move || m.put("k9", 10, 1))
        };
        let heartbeat = {
            let m = rig.m.clone();
            thread::spawn(move || m.offload_heartbeat(VICTIM))
        };
        rig.m.mount("c", "c0", 100).expect("c mounts");
        put.join().unwrap().expect("the Put finds room");
        let handed = heartbeat.join().unwrap().expect("a is Active").len();
        invariants::assert_clean(&rig.m);
        if handed > 0 {
            seen.saw("offload handed out");
        }
    });
}
