//! Race: a Ping against the monitor tick at the deadline of an entry that reached level 0 by a
//! *paced* cascade (monitor wheel, `core/src/monitor/wheel/mod.rs`).
//!
//! Invariant 4 (a transition commits at the first tick with `now >= deadline`, never early, at
//! most one tick late) through the wheel's cascades: the active TTL is 200 ticks, so the first
//! entry is filed in level 1 (slot 3, ticks 192..256) and is moved down to level 0 by the paced
//! cascade of the tick at 128, when slot 3 becomes the next level-1 slot (a tick moves
//! `ceil(len / 64)` entries; with one entry, all of it). The re-armed entry (the ping moved the
//! deadline to 400) then cascades again, in full, in a poll that jumps over its slot's start.
//! The wheel's own tests check the pacing itself at scale (`core/src/monitor/wheel/tests.rs`).
//!
//! Allowed outcomes (a serial order of the ping's CAS and the tick's):
//! - **ping first**: the tick finds a deadline 200 ticks out and re-arms; no transition.
//! - **tick first**: the tick commits Active → Suspected at exactly 200; the ping recovers it.
//!
//! In both, nothing commits before 400 after the race, and the tick at 400 commits
//! Active → Suspected: on time after a jump that cascades the re-armed entry.
#![cfg(loom)]

mod common;

use common::{config, model_covering, transitions, Master, CLIENT};
use mooncake_liveness::{LivenessConfig, LivenessState};

const TTL: u64 = 200;
const PING_FIRST: &str = "ping first";
const TICK_FIRST: &str = "tick first";

#[test]
fn paced_cascade_fires_on_time_vs_ping() {
    model_covering(
        "paced_cascade_fires_on_time_vs_ping",
        &[PING_FIRST, TICK_FIRST],
        |seen| {
            let mut master = Master::with_config(LivenessConfig {
                active_ttl_ms: TTL,
                ..config()
            });
            let rec = master.mount_new(CLIENT);
            assert!(master.tick_at(0).events.is_empty()); // arms it at 200: level 1, slot 3
                                                          // Slot 3 becomes the next level-1 slot at 128; its one entry is paced down at once
                                                          // (ceil(1 / 64) = 1). Few ticks keep the model within loom's branch budget.
            for now in [127, 128, 129, TTL - 1] {
                let report = master.tick_at(now);
                assert!(transitions(&report).is_empty(), "committed early, at {now}: {report:?}");
            }
            master.clock.set_ms(TTL);
            let (mut master, report, ping) = master.race_tick_vs_ping(None);
            match transitions(&report).as_slice() {
                [] => {
                    assert!(ping.recovered.is_none(), "recovered without a suspicion");
                    seen.saw(PING_FIRST);
                }
                [(LivenessState::Active, LivenessState::Suspected)] => {
                    assert!(ping.recovered.is_some(), "the ping after the commit recovers");
                    seen.saw(TICK_FIRST);
                }
                other => panic!("unexpected transitions {other:?}"),
            }
            let word = rec.word();
            assert_eq!((word.state(), word.deadline().0), (LivenessState::Active, 2 * TTL));
            let report = master.tick_at(2 * TTL - 1);
            assert!(transitions(&report).is_empty(), "committed early: {report:?}");
            let report = master.tick_at(2 * TTL);
            assert_eq!(
                transitions(&report),
                vec![(LivenessState::Active, LivenessState::Suspected)],
                "not committed at the deadline tick"
            );
        },
    );
}
