//! Race (loom, exhaustive to the preemption bound, over the real `Master`): a Put allocating on
//! the victim's segment while the monitor walks the victim Active → Suspected → Offline and the
//! inline offboarding job sweeps its segment (compare-and-erase per object), unmounts it and
//! erases the record. Invariant 10 ("no new dependency on a non-Active incarnation") and 16.
//!
//! Scenario (2 metadata shards, 2 registry shards, 2 clients): `a` owns `a0` (1000 B, preferred
//! by the free-ratio strategy) with one key on it and another on `a0` + `b0` (both in metadata
//! shard 0); `b` owns `b0` (100 B) and keeps pinging. One thread Puts a key of shard 1 (10 B,
//! 2 replicas); the main thread ticks at 10 (a
//! Suspected) and at 30 (a Offline, job runs inline). After both, ticks run until no job is
//! pending.
//!
//! Checked at the end of every schedule: the victim's record is erased, `a0` is unmounted, no
//! object references `a0`, every replica's owner is a live current record, each segment's used
//! bytes and key index equal its replicas', every quota equals the sum of the remaining replicas
//! (tests/invariants/mod.rs); the Put succeeded and `k1` holds exactly its `b0` replica.
//! Outcomes that must all be reached: the Put handed out `a0` (the sweep or the re-check removed
//! it later) and the Put did not hand out `a0` (it saw `a` non-Active, or its re-check undid it).
//!
//! Can it fail? Yes: with the re-check in `undo_raced_allocations` (master/src/master/data.rs) made a
//! no-op, it fails at once ("k0 still references the offboarded a0": the racing key, here `k0`):
//! the Put's `try_reserve` passes its lifecycle check, `drop_segment` stores `Unmounting`,
//! empties `a0`'s key index and unmounts it, then the Put publishes its replica on `a0`.
//! Checked 2026-12-03 at bound 3; the broken code was not committed. (A first version, with the
//! racing key in the same shard as the swept keys, could not fail that way: the sweep blocked on
//! the Put's shard lock. The racing key is now chosen in the other shard.)
//!
//! Cost (loaded 2-core machine): 3456 iterations, 0.5 s at bound 3.
#![cfg(loom)]

mod master_common;

use loom::thread;
use master_common::{model, Rig, VICTIM_SEG};
use mooncake_liveness::master::OffboardingDriver;

#[test]
fn master_put_vs_offline_sweep() {
    model(
        "master_put_vs_offline_sweep",
        &["put handed out a0", "put avoided a0"],
        |seen| {
            let rig = Rig::new(OffboardingDriver::Inline);
            // The racing key lives in the other metadata shard than the swept keys: otherwise
            // the sweep blocks on the Put's shard lock and the re-check is never needed.
            let shard = |k: &String| rig.m.shards().index_of(k);
            let keys: Vec<String> = (0..64).map(|i| format!("k{i}")).collect();
            let swept: Vec<&String> = keys.iter().filter(|k| shard(k) == 0).take(2).collect();
            let racing = keys.iter().find(|k| shard(k) == 1).unwrap().clone();
            rig.object(swept[0], 10, 1);
            rig.object(swept[1], 10, 2);
            let put = {
                let (m, key) = (rig.m.clone(), racing.clone());
                thread::spawn(move || m.put(&key, 10, 2))
            };
            rig.suspect_victim();
            rig.offline_victim();
            let descs = put.join().unwrap().expect("b0 can always take k1");
            rig.quiesce();
            rig.assert_victim_gone_and_clean();
            let k1 = rig.m.object(&racing).expect("the racing key keeps its b0 replica");
            assert_eq!(k1.replicas.len(), 1, "k1: {k1:?}");
            seen.saw(if descs.iter().any(|d| d.segment == VICTIM_SEG) {
                "put handed out a0"
            } else {
                "put avoided a0"
            });
        },
    );
}
