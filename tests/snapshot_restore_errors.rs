//! Which contradiction a restore reports when a snapshot holds several: the one a single pass
//! over the objects in order would meet first (the first wrong object; for one object, its
//! checks in order, a key listed twice last). Run at a size the restore builds on one thread
//! and at one it builds on two (`master/src/master/snapshot/restore/objects.rs`), with the same
//! expectations, each case several times: the answer must not depend on the threads' timing.

use mooncake_liveness::master::{Master, MasterOptions};
use mooncake_liveness::snapshot::{ReplicaSnap, Snapshot, SnapshotError};
mod common;

use common::master::{config, M};
use mooncake_liveness::{Clock, ManualClock};
use std::sync::Arc;

/// Objects in the small master (restored on one thread) and the large one (on two).
const SIZES: [usize; 2] = [2_000, 40_000];

/// A master with 8 segments and `n` objects of 1 or 2 replicas, and its snapshot.
fn snapshot(n: usize) -> (Arc<ManualClock>, Snapshot) {
    let mut m = M::new();
    for c in 0..8 {
        m.at(0).mount(&format!("c{c}"), &format!("s{c}"), 1 << 40).unwrap();
    }
    for i in 0..n {
        let key = format!("key-{i:06}");
        m.at(0).put(&key, 100 + (i as u64 % 50), 1 + i % 2).unwrap();
        m.at(0).put_end(&key).unwrap();
    }
    (m.clock.clone(), m.m.snapshot())
}

/// The contradiction the restore of `snap` reports (the same on every try).
fn refusal(clock: &Arc<ManualClock>, snap: &Snapshot) -> String {
    let once = || {
        let r = Master::restore(
            clock.clone() as Arc<dyn Clock>,
            config(),
            MasterOptions::default(),
            snap,
        );
        match r {
            Err(SnapshotError::Inconsistent(msg)) => msg,
            Err(e) => panic!("refused for another reason: {e}"),
            Ok(_) => panic!("restored"),
        }
    };
    let first = once();
    for _ in 0..3 {
        assert_eq!(once(), first, "a restore reported another contradiction");
    }
    first
}

/// Object `at` takes the key of object `of`.
fn dup_key(s: &mut Snapshot, at: usize, of: usize) {
    s.objects[at].key = s.objects[of].key.clone();
}

/// Object `at` takes the recency of object `of`.
fn dup_recency(s: &mut Snapshot, at: usize, of: usize) {
    s.objects[at].touched = s.objects[of].touched;
}

/// Object `at`'s first replica moves to a segment the snapshot does not have.
fn unknown_segment(s: &mut Snapshot, at: usize) {
    s.objects[at].replicas[0] = ReplicaSnap::Memory {
        segment: "nowhere".into(),
        complete: true,
    };
}

fn key(s: &Snapshot, i: usize) -> String {
    s.objects[i].key.clone()
}

/// Each case: the snapshot of `n` objects with the mutations at `n * x / 20`.
fn check(n: usize) {
    let (clock, base) = snapshot(n);
    let at = |x: usize| n * x / 20;
    let listed_twice = |k: String| format!("object {k:?} listed twice");

    // Two keys listed twice: the one listed twice first.
    let mut s = base.clone();
    dup_key(&mut s, at(18), at(6));
    dup_key(&mut s, at(19), at(1));
    assert_eq!(refusal(&clock, &s), listed_twice(key(&base, at(6))));
    let mut s = base.clone();
    dup_key(&mut s, at(18), at(1));
    dup_key(&mut s, at(12), at(6));
    assert_eq!(refusal(&clock, &s), listed_twice(key(&base, at(6))));

    // A key listed twice before or after an unknown segment.
    let mut s = base.clone();
    dup_key(&mut s, at(14), at(2));
    unknown_segment(&mut s, at(16));
    assert_eq!(refusal(&clock, &s), listed_twice(key(&base, at(2))));
    let mut s = base.clone();
    unknown_segment(&mut s, at(13));
    dup_key(&mut s, at(14), at(2));
    let want = format!("object {} on unknown segment nowhere", key(&base, at(13)));
    assert_eq!(refusal(&clock, &s), want);

    // A recency listed twice before or after a key listed twice.
    let mut s = base.clone();
    dup_recency(&mut s, at(12), at(3));
    dup_key(&mut s, at(15), at(4));
    let want = format!(
        "object {:?} (or its recency {}) listed twice",
        key(&base, at(12)),
        base.objects[at(3)].touched
    );
    assert_eq!(refusal(&clock, &s), want);
    let mut s = base.clone();
    dup_key(&mut s, at(11), at(4));
    dup_recency(&mut s, at(12), at(3));
    assert_eq!(refusal(&clock, &s), listed_twice(key(&base, at(4))));

    // One object both listed twice and otherwise wrong: its other check comes first.
    let mut s = base.clone();
    dup_key(&mut s, at(10), at(5));
    s.objects[at(10)].replicas.clear();
    let want = format!("object {:?} has no replica or size 0", key(&base, at(5)));
    assert_eq!(refusal(&clock, &s), want);
    let mut s = base.clone();
    dup_key(&mut s, at(10), at(5));
    unknown_segment(&mut s, at(10));
    let want = format!("object {} on unknown segment nowhere", key(&base, at(5)));
    assert_eq!(refusal(&clock, &s), want);
}

/// A segment filled past its size at some object, with a key listed twice before or after it.
fn check_overfull(n: usize) {
    let (clock, base) = snapshot(n);
    let on_s0 = |o: &mooncake_liveness::snapshot::ObjectSnap| {
        o.replicas
            .iter()
            .any(|r| matches!(r, ReplicaSnap::Memory { segment, .. } if segment == "s0"))
    };
    // s0 holds exactly what the objects before `full` put there: the next one on it overfills.
    let full = n * 3 / 4;
    let size: u64 = base.objects[..full].iter().filter(|o| on_s0(o)).map(|o| o.size).sum();
    let first_over = full + base.objects[full..].iter().position(on_s0).unwrap();
    let mut s = base.clone();
    s.segments.iter_mut().find(|g| g.name == "s0").unwrap().size = size;
    let overfull = format!("segment s0 holds more than its size {size}");
    assert_eq!(refusal(&clock, &s), overfull);
    let mut late = s.clone();
    dup_key(&mut late, first_over + 1, 0);
    assert_eq!(refusal(&clock, &late), overfull);
    let mut early = s.clone();
    dup_key(&mut early, first_over - 1, 0);
    assert_eq!(
        refusal(&clock, &early),
        format!("object {:?} listed twice", key(&base, 0))
    );
}

#[test]
fn the_first_contradiction_in_object_order_is_reported() {
    for n in SIZES {
        check(n);
    }
}

#[test]
fn an_overfull_segment_is_reported_where_the_objects_overfill_it() {
    for n in SIZES {
        check_overfull(n);
    }
}
