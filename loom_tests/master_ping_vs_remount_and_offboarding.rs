//! Race (loom, exhaustive to the preemption bound, over the real `Master`): a Ping of the
//! victim's incarnation 1 (with its token) and a ReMount of the victim racing its Suspected →
//! Offline commit and its inline offboarding job (sweep, unmount, compare-and-erase).
//! Invariants 7 (Ping), 13 (fencing) and 14 (barrier).
//!
//! Scenario (2 metadata shards, 2 registry shards, 2 clients): the victim `a` mounted `a0` and
//! ReMounted at 0 (so incarnation 1 is ready: Ping answers `OK` exactly when its signal was
//! applied), `k0` lives on `a0`. Thread 1 pings `a` with token 1; thread 2 ReMounts `a` with
//! `a0`; the main thread ticks at 10 (Suspected) and 30 (Offline commit unless a signal came
//! first; the job runs inline). Then ticks until no job is pending.
//!
//! Allowed (checked at the end of every schedule):
//! - Ping `OK` at clock t ⇒ incarnation 1's Offline commit, if any, is at ≥ t + A + S (a Ping
//!   at 0 changes nothing; one racing the commit either wins and the commit fails, or loses);
//!   Ping `NEED_REMOUNT` ⇒ incarnation 1 committed Offline (never both, never neither).
//! - ReMount `OK` on incarnation 1 (a signal: then 1 is the current record, or it was a signal
//!   at time 0 that changed nothing and 1 went Offline later), or `OK` creating incarnation 2 —
//!   only after incarnation 1's job completed (its `Offboarded` event is there), or refused with
//!   `CLIENT_OFFBOARDING` — only while incarnation 1 was Offline with its job pending.
//! - A Ping `OK` after time 0 and an incarnation 2 never happen together.
//! - The master balances (tests/invariants/mod.rs): every mounted segment and replica belongs to
//!   the registry's current record of its client (fencing), every byte and quota accounted.
//!
//! Outcomes that must all be reached: (Ping OK, ReMount on 1), (NEED_REMOUNT, ReMount refused
//! by the barrier), (NEED_REMOUNT, ReMount created 2).
//!
//! Can it fail? Its first version did: it asserted "Ping OK ⇒ never Offline", which a Ping at
//! time 0 (a signal that moves no deadline) contradicts, and loom found that schedule; the
//! check now follows invariant 7's timing. A deliberate break of the master (e.g.
//! `Liveness::ping` answering `OK` on `Applied::Offline`) fails the "Ping OK at t but
//! Offline before t + A + S" check. Demonstrated 2026-12-03: with the `Applied::Offline =>
//! need_remount` arm of `Liveness::ping` (core/src/liveness/mod.rs) removed, so an Offline record
//! answers by readiness, the model fails in 0.8 s with "Ping OK at 10 but incarnation 1 went
//! Offline at Some(30)"; the broken code was not committed.
//!
//! State space: three threads over the whole master. The preemption bound is capped at 2
//! (`model_capped`): at bound 3 it ran for more than 10 minutes here. Cost (loaded 2-core
//! machine): 162124 iterations, 28 s at bound 2.
#![cfg(loom)]

mod master_common;

use loom::thread;
use master_common::{model_capped, Rig, ACTIVE_TTL_MS, SUSPICION_TTL_MS, VICTIM, VICTIM_SEG};
use mooncake_liveness::master::{MasterError, MasterEvent, OffboardingDriver, SegmentSpec};
use mooncake_liveness::LivenessEvent;
use mooncake_liveness::{Clock, Incarnation, LivenessState, PingStatus};

#[test]
fn master_ping_vs_remount_and_offboarding() {
    model_capped(
        "master_ping_vs_remount_and_offboarding",
        2,
        &[
            "ping OK, remount on 1",
            "ping NEED_REMOUNT, remount refused by the barrier",
            "ping NEED_REMOUNT, remount created 2",
        ],
        |seen| {
            let rig = Rig::new(OffboardingDriver::Inline);
            let spec = vec![SegmentSpec {
                segment: VICTIM_SEG.to_string(),
                size: 1000,
            }];
            rig.m.remount(VICTIM, &spec).unwrap();
            rig.object("k0", 10, 1);
            let id = rig.m.client_id(VICTIM).unwrap();
            rig.m.take_events();
            let ping = {
                let (m, clock) = (rig.m.clone(), rig.clock.clone());
                thread::spawn(move || (clock.now_ms(), m.ping_with_token(VICTIM, Some(Incarnation(1)))))
            };
            let remount = {
                let m = rig.m.clone();
                thread::spawn(move || {
                    let r = m.remount(VICTIM, &spec);
                    (r, m.incarnation_of(VICTIM))
                })
            };
            rig.suspect_victim();
            rig.offline_victim();
            let (ping_at, ping) = ping.join().unwrap();
            let (remount, inc_after_remount) = remount.join().unwrap();
            rig.quiesce();
            let events = rig.m.take_events();
            let offline_at = events.iter().find_map(|e| match e {
                MasterEvent::Liveness(LivenessEvent::Transition(t))
                    if t.client == id && t.incarnation == Incarnation(1) && t.to == LivenessState::Offline =>
                {
                    Some(t.at_ms)
                }
                _ => None,
            });
            let went_offline = offline_at.is_some();
            let offboarded = events.iter().any(|e| {
                matches!(e, MasterEvent::Offboarded { client, incarnation, .. }
                    if *client == id && *incarnation == Incarnation(1))
            });
            let current = rig.m.incarnation_of(VICTIM);
            match ping {
                // A signal at t pushes Offline to t + A + S or later (a Ping at 0 changes nothing).
                PingStatus::Ok => assert!(
                    offline_at.is_none_or(|at| at >= ping_at + ACTIVE_TTL_MS + SUSPICION_TTL_MS),
                    "Ping OK at {ping_at} but incarnation 1 went Offline at {offline_at:?}"
                ),
                PingStatus::NeedRemount => {
                    assert!(went_offline, "Ping NEED_REMOUNT but incarnation 1 never went Offline")
                }
            }
            assert_eq!(went_offline, offboarded, "an Offline commit whose job did not complete");
            let remount = match remount {
                Ok(()) if current == Some(Incarnation(2)) => {
                    assert!(offboarded, "incarnation 2 created before 1 was offboarded");
                    assert_eq!(inc_after_remount, Some(Incarnation(2)));
                    "created 2"
                }
                Ok(()) => {
                    assert!(current == Some(Incarnation(1)) || went_offline, "{current:?}");
                    "on 1"
                }
                Err(MasterError::ClientOffboarding) => {
                    assert!(went_offline, "barrier without an Offline commit");
                    "refused by the barrier"
                }
                Err(e) => panic!("remount -> {e:?}"),
            };
            if ping == PingStatus::Ok && ping_at > 0 {
                assert_ne!(current, Some(Incarnation(2)), "Ping OK and a new incarnation");
            }
            if went_offline {
                assert!(rig.m.object("k0").is_none(), "k0 outlived incarnation 1");
            }
            master_common::invariants::assert_clean(&rig.m);
            let ping = if ping == PingStatus::Ok { "OK" } else { "NEED_REMOUNT" };
            seen.saw(format!("ping {ping}, remount {remount}"));
        },
    );
}
