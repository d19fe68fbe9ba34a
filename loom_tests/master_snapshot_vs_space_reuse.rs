//! Race (loom, exhaustive to the preemption bound, over the real `Master`): a snapshot taken
//! while a Remove frees space on a segment and a Put in another shard takes it again.
//! Invariant 19: never torn.
//!
//! Scenario (2 metadata shards): the victim's segment `a0` (1000 bytes) holds `x` (600 bytes,
//! in shard 0); the survivor's `b0` (100 bytes) is too small for 600. One thread takes
//! `snapshot()`; the main thread removes `x` and then puts `y` (600 bytes, in shard 1, so only
//! `a0` can hold it). The snapshot copies shard 0 before shard 1.
//!
//! Checked at the end of every schedule: the snapshot restores (`Master::restore` must succeed)
//! and the original master balances once the snapshot is done (tests/invariants/mod.rs).
//! Outcomes that must all be reached: `y` stored, and `y` refused for lack of space (the space
//! `x` freed is held while the snapshot runs).
//!
//! Can it fail? It did, on the master before `Segment::hold_frees`: the snapshot copied shard
//! 0 with `x`, the Remove freed its 600 bytes, the Put took them for `y`, the snapshot copied
//! shard 1 with `y`, and restore refused "segment a0 holds more than its size 1000" (first seen
//! in a `tests/master_stress.rs` run in CI).
#![cfg(loom)]

mod master_common;

use loom::thread;
use master_common::{invariants, model, Rig};
use mooncake_liveness::master::OffboardingDriver;

/// The first key `prefix{i}` the master puts in `shard`.
fn key_in(rig: &Rig, prefix: &str, shard: usize) -> String {
    (0..)
        .map(|i| format!("{prefix}{i}"))
        .find(|k| rig.m.shards().index_of(k) == shard)
        .unwrap()
}

#[test]
fn master_snapshot_vs_space_reuse() {
    model("master_snapshot_vs_space_reuse", &["y stored", "y refused"], |seen| {
        let rig = Rig::new(OffboardingDriver::Inline);
        let (x, y) = (key_in(&rig, "x", 0), key_in(&rig, "y", 1));
        rig.object(&x, 600, 1);
        let snap = {
            let m = rig.m.clone();
            thread::spawn(move || m.snapshot())
        };
        rig.m.remove(&x).unwrap();
        let stored = rig.m.put(&y, 600, 1).is_ok() && rig.m.put_end(&y).is_ok();
        seen.saw(if stored { "y stored" } else { "y refused" });
        let snap = snap.join().unwrap();
        invariants::assert_clean(&rig.m);
        if let Err(e) = rig.restore(&snap) {
            panic!("a snapshot taken while space was reused does not restore: {e}");
        }
    });
}
