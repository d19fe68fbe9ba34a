//! Races on the registry: the remount barrier against the job's compare-and-erase, a stale erase
//! against a new incarnation, and two concurrent first mounts of one client id.
//!
//! Invariants: 13 (a new incarnation is a new record: incarnation 1 never serves again), 14 (a
//! new incarnation can mount only after the previous one's offboarding completed), 16 (the job
//! erases only the very record it offboarded: compare-and-erase on identity) and the registry
//! ground rule that publishing is insert-if-still-vacant (one live record per client id).
//!
//! Allowed outcomes:
//! - `mount_vs_complete_offboarding`: the mount looked before the erase → `Offboarding(1)`
//!   (**barrier**) and the slot ends `Vacant(1)`; or after → `Mounted { created: true }` of
//!   incarnation 2 (**incarnation 2**), which is the live record. Never `Mounted` of incarnation
//!   1, never `Lost`; the job's erase always succeeds.
//! - `stale_erase_vs_new_incarnation`: as above, plus a second (stale, retried) erase of the old
//!   record on a third thread: exactly one of the two erases succeeds (**job erased** / **retry
//!   erased**), and neither removes incarnation 2 once it is published.
//! - `two_first_mounts`: exactly one `Mounted { created: true }`; the other mount is
//!   `Lost(_, Raced)` (**raced**: it looked before the publish) or `Mounted { created: false }`
//!   on the winner's record (**joined**: it looked after); one live record, armed once by the
//!   monitor; a `Lost` caller's undo leaves only the kept mounts' resources.
//! - `stale_token_ping_vs_new_incarnation`: as `mount_vs_complete_offboarding`, plus a ping
//!   carrying incarnation 1's token on a third thread: always `NEED_REMOUNT`, no recovery, and
//!   incarnation 2's word is exactly the one its mount installed.
#![cfg(loom)]

mod common;

use common::{complete, model_covering, Gate, Master, ACTIVE_TTL_MS, CLIENT};
use loom::sync::{Arc, Mutex};
use loom::thread::{self, JoinHandle};
use mooncake_liveness::liveness::{LostReason, Slot, Word};
use mooncake_liveness::{ClientLivenessRecord, Incarnation, Liveness, LivenessState, MountOutcome, PingStatus};

type Outcome = MountOutcome<(), ()>;

const BARRIER: &str = "barrier";
const INCARNATION_2: &str = "incarnation 2";

fn mount_ok(master: &Master) -> Outcome {
    master.liveness.mount(CLIENT, None, |_| Ok(()))
}

/// Incarnation 1 of [`CLIENT`] taken Offline, and a racing thread (behind `gate`) completing its
/// offboarding job: the common start of the barrier models, which add their own racers and then
/// call [`Offboarding::mount`].
struct Offboarding {
    master: Master,
    /// Incarnation 1's record.
    old: Arc<ClientLivenessRecord>,
    gate: Arc<Gate>,
    /// Completes the job; answers whether its compare-and-erase removed `old`.
    offboarding: JoinHandle<bool>,
}

impl Offboarding {
    /// Takes incarnation 1 Offline and spawns the thread completing its job.
    fn start() -> Self {
        let mut master = Master::new();
        let job = master.offline(CLIENT);
        let old = job.record().clone();
        let gate = Gate::new();

        let offboarding = {
            let (liveness, gate) = (master.liveness.clone(), gate.clone());
            thread::spawn(move || {
                gate.pass();
                complete(liveness.registry(), job)
            })
        };
        Self {
            master,
            old,
            gate,
            offboarding,
        }
    }

    /// Passes the gate and mounts [`CLIENT`] on the calling thread (the new incarnation's mount).
    fn mount(&self) -> Outcome {
        self.gate.pass();
        mount_ok(&self.master)
    }
}

/// Checks the mount outcome against the registry after the erase of incarnation 1; returns the
/// outcome's label.
fn check_barrier(master: &Master, old: &Arc<ClientLivenessRecord>, outcome: &Outcome) -> &'static str {
    let slot = master.liveness.registry().slot(CLIENT);
    let label = match outcome {
        MountOutcome::Offboarding(Incarnation::FIRST) => {
            assert!(matches!(slot, Some(Slot::Vacant(Incarnation::FIRST))), "{slot:?}");
            BARRIER
        }
        MountOutcome::Mounted {
            record,
            created: true,
            recovered: None,
            ..
        } => {
            assert_eq!(record.incarnation(), Incarnation(2));
            assert!(!Arc::ptr_eq(record, old));
            assert_eq!(record.state(), LivenessState::Active);
            match slot {
                Some(Slot::Live(live)) => assert!(Arc::ptr_eq(&live, record), "erase removed the new incarnation"),
                other => panic!("new incarnation not registered: {other:?}"),
            }
            INCARNATION_2
        }
        other => panic!("mount across the barrier: {other:?}"),
    };
    assert!(master.liveness.registry().records().len() <= 1, "two live records");
    assert_eq!(old.state(), LivenessState::Offline, "incarnation 1 came back");
    label
}

#[test]
fn mount_vs_complete_offboarding() {
    model_covering("mount_vs_complete_offboarding", &[BARRIER, INCARNATION_2], |seen| {
        let race = Offboarding::start();
        let outcome = race.mount();
        let erased = race.offboarding.join().unwrap();

        assert!(erased, "the job's compare-and-erase failed");
        seen.saw(check_barrier(&race.master, &race.old, &outcome));
    });
}

#[test]
fn stale_erase_vs_new_incarnation() {
    let expected = [
        "job erased, barrier",
        "job erased, incarnation 2",
        "retry erased, barrier",
        "retry erased, incarnation 2",
    ];
    model_covering("stale_erase_vs_new_incarnation", &expected, |seen| {
        let race = Offboarding::start();
        let stale_retry = {
            let (liveness, gate, old) = (race.master.liveness.clone(), race.gate.clone(), race.old.clone());
            thread::spawn(move || {
                gate.pass();
                liveness.registry().compare_and_erase(&old)
            })
        };
        let outcome = race.mount();
        let erased = race.offboarding.join().unwrap();
        let retried = stale_retry.join().unwrap();

        assert!(
            erased ^ retried,
            "erases of incarnation 1: job {erased}, retry {retried}"
        );
        let label = check_barrier(&race.master, &race.old, &outcome);
        seen.saw(format!("{} erased, {label}", if erased { "job" } else { "retry" }));
    });
}

/// Which mounts' work is registered (by tag).
type Kept = Arc<Mutex<Vec<&'static str>>>;

/// A first mount whose work registers `tag`; the caller undoes it on `Lost`.
fn mount_tagged(liveness: &Liveness, kept: &Kept, gate: &Gate, tag: &'static str) -> Outcome {
    gate.pass();
    let outcome = liveness.mount(CLIENT, None, |_| {
        kept.lock().unwrap().push(tag);
        Ok::<(), ()>(())
    });
    if let MountOutcome::Lost(..) = outcome {
        kept.lock().unwrap().retain(|t| *t != tag);
    }
    outcome
}

#[test]
fn two_first_mounts() {
    let expected = [
        "a created, b raced",
        "a created, b joined",
        "b created, a raced",
        "b created, a joined",
    ];
    model_covering("two_first_mounts", &expected, |seen| {
        let mut master = Master::new();
        let kept: Kept = Arc::new(Mutex::new(Vec::new()));
        let gate = Gate::new();

        let other = {
            let (liveness, kept, gate) = (master.liveness.clone(), kept.clone(), gate.clone());
            thread::spawn(move || mount_tagged(&liveness, &kept, &gate, "b"))
        };
        let a = mount_tagged(&master.liveness, &kept, &gate, "a");
        let b = other.join().unwrap();

        let live = master.liveness.registry().records();
        assert_eq!(live.len(), 1, "live records: {live:?}");
        let winner = &live[0];
        assert_eq!(winner.incarnation(), Incarnation::FIRST);
        let (mut creator, mut other_label) = (None, None);
        let mut kept_tags = vec![];
        for (tag, outcome) in [("a", &a), ("b", &b)] {
            match outcome {
                MountOutcome::Mounted { record, created, .. } => {
                    assert!(
                        Arc::ptr_eq(record, winner),
                        "{tag} mounted a record that is not registered"
                    );
                    if *created {
                        assert!(creator.replace(tag).is_none(), "two creators: a {a:?}, b {b:?}");
                    } else {
                        other_label = Some(format!("{tag} joined"));
                    }
                    kept_tags.push(tag);
                }
                MountOutcome::Lost((), LostReason::Raced) => other_label = Some(format!("{tag} raced")),
                other => panic!("{tag}: {other:?}"),
            }
        }
        let creator = creator.expect("no mount created the record");
        let mut left = kept.lock().unwrap().clone();
        left.sort_unstable();
        assert_eq!(left, kept_tags, "a Lost mount's resource survived its undo");
        // The monitor arms only the published record.
        master.monitor.tick(&master.liveness);
        assert_eq!(master.monitor.armed(), 1);
        seen.saw(format!("{creator} created, {}", other_label.unwrap()));
    });
}

/// A ping still carrying incarnation 1's token races the job's erase and the mount of
/// incarnation 2 (invariant 13): it is answered `NEED_REMOUNT` whatever it finds (the Offline
/// record, an empty slot, or incarnation 2) and never refreshes or recovers incarnation 2.
#[test]
fn stale_token_ping_vs_new_incarnation() {
    model_covering(
        "stale_token_ping_vs_new_incarnation",
        &[BARRIER, INCARNATION_2],
        |seen| {
            let race = Offboarding::start();
            let stale_ping = {
                let (liveness, gate) = (race.master.liveness.clone(), race.gate.clone());
                thread::spawn(move || {
                    gate.pass();
                    liveness.ping(CLIENT, Some(Incarnation::FIRST))
                })
            };
            let outcome = race.mount();
            assert!(race.offboarding.join().unwrap());
            let ping = stale_ping.join().unwrap();

            assert_eq!(ping.status, PingStatus::NeedRemount, "{ping:?}");
            assert!(ping.recovered.is_none());
            let label = check_barrier(&race.master, &race.old, &outcome);
            if let MountOutcome::Mounted { record, .. } = &outcome {
                // Exactly the word the mount installed: the stale ping never touched it.
                let first = Word::first(race.master.liveness.clock().now(), ACTIVE_TTL_MS);
                assert_eq!(record.word(), first);
            }
            seen.saw(label);
        },
    );
}
