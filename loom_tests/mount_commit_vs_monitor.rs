//! Race: `Liveness::mount` of a Suspected client (whose work registers a resource in an index)
//! against the monitor's Suspected → Offline commit and the offboarding sweep of that index.
//!
//! Invariants: 6 (only a *successful* mount is a liveness signal: a failed one never recovers),
//! 7/15 (the Offline commit and the mount's signal settle on one CAS: one job or one recovery),
//! 10 (a resource registered by a mount that raced the Offline commit either lands before the
//! sweep, which removes it, or is undone by the mount's caller on `MountOutcome::Lost`: no
//! resource of an Offline incarnation survives) and 14 (a mount that sees Offline is refused
//! before its work runs).
//!
//! Allowed outcomes of `mount_vs_offline_sweep`, after the caller undid a `Lost` mount:
//! - **mounted**: `Mounted` with a recovery; Active; no job; the entry is present.
//! - **lost**: one job; Offline; the mount's work ran but its signal's CAS lost to the Offline
//!   commit (`Lost(WentOffline)`); the entry is gone (swept, or undone by the caller).
//! - **offboarding**: one job; Offline; the mount saw Offline and its work never ran
//!   (`Offboarding(1)`); no entry.
//!
//! `failed_mount_vs_offline`: a mount whose work fails is no signal, so the monitor commits
//! Offline in every interleaving; the mount is `Failed` (**failed**) or, if it looked after the
//! commit, `Offboarding` (**offboarding**). Never Active, never a recovery.
#![cfg(loom)]

mod common;

use common::{model_covering, transitions, Gate, Master, ACTIVE_TTL_MS, CLIENT, SUSPICION_TTL_MS};
use loom::sync::{Arc, Mutex};
use loom::thread;
use mooncake_liveness::liveness::LostReason;
use mooncake_liveness::{ClientId, Incarnation, LivenessState, MountOutcome, TickReport};

/// A resource some mount registered: the owner incarnation and which mount made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    client: ClientId,
    incarnation: Incarnation,
    tag: &'static str,
}

/// The resource index the mount work writes and offboarding sweeps (one lock, as a master's
/// segment map would be).
type Index = Arc<Mutex<Vec<Entry>>>;

const RACING_MOUNT: &str = "racing mount";

/// Sets up a Suspected client whose Offline commit is due, and starts the monitor thread: one
/// tick, then the sweep of every incarnation it minted a job for. Returns what the mounting
/// (main) thread needs: the master's liveness core, the record, the index and the gate.
fn start_monitor() -> (
    Arc<mooncake_liveness::Liveness>,
    Arc<mooncake_liveness::ClientLivenessRecord>,
    Index,
    Arc<Gate>,
    thread::JoinHandle<TickReport>,
) {
    let mut master = Master::new();
    let rec = master.suspected(CLIENT);
    master.clock.set_ms(ACTIVE_TTL_MS + SUSPICION_TTL_MS);
    let liveness = master.liveness.clone();
    let index: Index = Arc::new(Mutex::new(Vec::new()));
    let gate = Gate::new();
    let monitor = {
        let (index, gate) = (index.clone(), gate.clone());
        thread::spawn(move || {
            gate.pass();
            let report = master.monitor.tick(&master.liveness);
            for job in &report.jobs {
                let mut entries = index.lock().unwrap();
                entries.retain(|e| !(e.client == job.client() && e.incarnation == job.incarnation()));
            }
            report
        })
    };
    (liveness, rec, index, gate, monitor)
}

#[test]
fn mount_vs_offline_sweep() {
    model_covering("mount_vs_offline_sweep", &["mounted", "lost", "offboarding"], |seen| {
        let (liveness, rec, index, gate, monitor) = start_monitor();
        gate.pass();
        let outcome = liveness.mount(CLIENT, None, |rec| {
            index.lock().unwrap().push(Entry {
                client: rec.client(),
                incarnation: rec.incarnation(),
                tag: RACING_MOUNT,
            });
            Ok::<(), ()>(())
        });
        // The caller's duty on Lost: undo the work.
        if let MountOutcome::Lost(..) = outcome {
            index.lock().unwrap().retain(|e| e.tag != RACING_MOUNT);
        }
        let report = monitor.join().unwrap();

        let present = index.lock().unwrap().iter().any(|e| e.tag == RACING_MOUNT);
        let state = rec.state();
        let jobs = report.jobs.len();
        match &outcome {
            MountOutcome::Mounted {
                record,
                created: false,
                recovered: Some(t),
                ..
            } if jobs == 0 => {
                assert!(Arc::ptr_eq(record, &rec));
                assert_eq!((t.from, t.to), (LivenessState::Suspected, LivenessState::Active));
                assert_eq!(state, LivenessState::Active);
                assert!(transitions(&report).is_empty());
                assert!(present, "a kept mount lost its resource");
                seen.saw("mounted");
            }
            MountOutcome::Lost((), LostReason::WentOffline) | MountOutcome::Offboarding(Incarnation::FIRST)
                if jobs == 1 =>
            {
                assert_eq!(state, LivenessState::Offline);
                assert_eq!(report.jobs[0].incarnation(), Incarnation::FIRST);
                assert!(!present, "resource of an Offline incarnation survived the sweep");
                seen.saw(if matches!(outcome, MountOutcome::Lost(..)) {
                    "lost"
                } else {
                    "offboarding"
                });
            }
            outcome => panic!("mount {outcome:?} with {jobs} job(s), state {state:?}, entry present {present}"),
        }
    });
}

#[test]
fn failed_mount_vs_offline() {
    model_covering("failed_mount_vs_offline", &["failed", "offboarding"], |seen| {
        let (liveness, rec, _index, gate, monitor) = start_monitor();
        gate.pass();
        let outcome = liveness.mount(CLIENT, None, |_| Err::<(), _>("segment mount failed"));
        let report = monitor.join().unwrap();

        match outcome {
            MountOutcome::Failed("segment mount failed") => seen.saw("failed"),
            MountOutcome::Offboarding(Incarnation::FIRST) => seen.saw("offboarding"),
            other => panic!("{other:?}"),
        }
        assert_eq!(report.jobs.len(), 1, "a failed mount kept the client alive");
        assert_eq!(
            transitions(&report),
            vec![(LivenessState::Suspected, LivenessState::Offline)]
        );
        assert_eq!(rec.state(), LivenessState::Offline);
    });
}
