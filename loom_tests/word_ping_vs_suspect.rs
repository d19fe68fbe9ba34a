//! Race: a liveness signal (Ping) against the monitor's Active → Suspected commit, on a record
//! whose active deadline is due.
//!
//! Invariants: 1 (only Active → Suspected → Active here), 2 (no suspicion of an incarnation whose
//! deadline a ping has moved: no lost update), 4 (the wheel entry survives the race and the
//! incarnation is suspected exactly at its new deadline) and the `record.rs` ground rule (a): the
//! signal moves the deadline, so a monitor CAS prepared against the old one fails.
//!
//! Allowed outcomes (each is a serial order of the two CASes):
//! - **ping first**: the ping refreshes the deadline (`Refreshed`), the monitor then sees a word
//!   that is not due and answers `Wait` with the refreshed deadline; the word keeps seq 0.
//! - **monitor first**: the monitor commits Suspected, the ping then recovers (`Recovered`);
//!   seq moves by 2.
//!
//! In both, the final word is Active with deadline exactly `ping time + active TTL`. Forbidden:
//! the monitor reporting Suspected while the ping reports a plain refresh (the ping's deadline
//! would have been overwritten), or a final Suspected word. The `ping_cas_lost_to_suspect_*`
//! models also tell apart, within "monitor first", the ping whose first load still saw Active and
//! whose CAS failed against the commit: its recovery must be stamped no earlier than the
//! monitor's time (the CAS-failure `Acquire` of `ClientLivenessRecord::apply_at`).
#![cfg(loom)]

mod common;

use common::{
    model_covering, race_evaluate_vs_signal, transitions, Gate, Master, ACTIVE_TTL_MS, CLIENT, SUSPICION_TTL_MS, TTLS,
};
use loom::thread;
use mooncake_liveness::__private::loom::{evaluate, record_with_word, signal_at, Eval};
use mooncake_liveness::clock::LivenessMs;
use mooncake_liveness::liveness::{Applied, Change, Seq, Word};
use mooncake_liveness::{ClientLivenessRecord, Clock, Incarnation, LivenessState, ManualClock, PingStatus, TickReport};
use std::cell::Cell;

const PING_FIRST: &str = "ping first";
const MONITOR_FIRST: &str = "monitor first";
/// The ping's first load saw Active, its CAS failed against the suspect commit, and it
/// recovered on the re-read word.
const PING_CAS_LOST: &str = "ping's CAS lost to the suspect commit";

/// Record level: the monitor evaluates at the deadline, the ping lands 2 ms later.
#[test]
fn ping_vs_suspect_commit() {
    model_covering("ping_vs_suspect_commit", &[PING_FIRST, MONITOR_FIRST], |seen| {
        const DEADLINE: u64 = 10;
        const PING_AT: u64 = 12;
        let initial = Word::pack(LivenessState::Active, Seq::default(), LivenessMs(DEADLINE));
        let rec = record_with_word(CLIENT, Incarnation::FIRST, initial);
        let (eval, ping, fin) = race_evaluate_vs_signal(&rec, DEADLINE, PING_AT);

        assert_eq!(
            fin.state(),
            LivenessState::Active,
            "final {fin:?}, monitor {eval:?}, ping {ping:?}"
        );
        assert_eq!(fin.deadline().0, PING_AT + ACTIVE_TTL_MS, "lost update: {fin:?}");
        match (&eval, &ping) {
            (
                Eval::Wait(waited_on),
                Applied::Committed {
                    from,
                    to,
                    change: Change::Refreshed,
                },
            ) => {
                // The monitor decided on the word the ping installed.
                assert_eq!(*from, initial);
                assert_eq!(waited_on, to, "monitor waited on a word other than the ping's");
                assert_eq!(fin, *to);
                assert_eq!(fin.seq(), Seq::default());
                seen.saw(PING_FIRST);
            }
            (
                Eval::Suspected {
                    from,
                    to,
                    change: Change::Suspected,
                },
                Applied::Committed {
                    from: recovered_from,
                    to: recovered_to,
                    change: Change::Recovered,
                },
            ) => {
                // The ping recovered exactly the word the monitor installed.
                assert_eq!(*from, initial);
                assert_eq!(to.deadline().0, DEADLINE + SUSPICION_TTL_MS);
                assert_eq!(recovered_from, to, "ping recovered a word the monitor did not install");
                assert_eq!(fin, *recovered_to);
                assert_eq!(fin.seq(), Seq::new(2));
                seen.saw(MONITOR_FIRST);
            }
            other => panic!("not a serial order of ping and suspect commit: {other:?}"),
        }
    });
}

/// Full stack: `Monitor::tick` (wheel poll, re-read, CAS, lazy re-arm) against `Liveness::ping`
/// at the deadline; afterwards the monitor must still hold the entry and suspect the client at
/// its refreshed deadline, not before.
#[test]
fn ping_vs_monitor_tick_then_rearm() {
    model_covering(
        "ping_vs_monitor_tick_then_rearm",
        &[PING_FIRST, MONITOR_FIRST],
        |seen| {
            let master = Master::new();
            let rec = master.mount_new(CLIENT);
            master.clock.set_ms(ACTIVE_TTL_MS); // due, for both threads
            let (mut master, report, ping) = master.race_tick_vs_ping(None);

            assert!(report.jobs.is_empty());
            assert_eq!(ping.status, PingStatus::NeedRemount, "never remounted: not ready");
            match (transitions(&report).as_slice(), ping.recovered) {
                ([], None) => {
                    assert_eq!(rec.word().seq(), Seq::default());
                    seen.saw(PING_FIRST);
                }
                ([(LivenessState::Active, LivenessState::Suspected)], Some(t)) => {
                    assert_eq!((t.from, t.to), (LivenessState::Suspected, LivenessState::Active));
                    assert_eq!(rec.word().seq(), Seq::new(2));
                    seen.saw(MONITOR_FIRST);
                }
                (monitor, ping) => panic!("monitor {monitor:?} vs ping {ping:?}: not serializable"),
            }
            let fin = rec.word();
            assert_eq!(fin.state(), LivenessState::Active);
            assert_eq!(fin.deadline().0, 2 * ACTIVE_TTL_MS, "lost update: {fin:?}");

            // The wheel is a hint: the entry survived and fires exactly at the refreshed deadline.
            assert_eq!(master.monitor.armed(), 1);
            let early = master.tick_at(2 * ACTIVE_TTL_MS - 1);
            assert!(
                transitions(&early).is_empty(),
                "suspected before the refreshed deadline"
            );
            let due = master.tick_at(2 * ACTIVE_TTL_MS);
            assert_eq!(
                transitions(&due),
                vec![(LivenessState::Active, LivenessState::Suspected)]
            );
        },
    );
}

/// A ping whose clock reading predates the monitor's suspect commit recovers the client with an
/// Active deadline *earlier* than the tick the monitor re-armed the entry at, so the client is
/// suspected late (invariant 4). Regression model: it failed until signals read their time
/// after loading the word, and again after each failed CAS (`ClientLivenessRecord::apply_at`),
/// so a recovery is never stamped before the suspicion it undoes.
///
/// Interleaving: the ping reads liveness time 8; the monitor's clock reaches 10 and its tick
/// commits Active → Suspected (suspicion deadline 30) and re-arms the entry at
/// `min(30, 10 + active TTL) = 20`; the ping's CAS then recovers with deadline `8 + 10 = 18`.
/// Nothing wakes the entry before tick 20, so a client silent since 8 is suspected at 20, two
/// ticks after its deadline. `monitor::wake` assumes a recovery at `r ≥ now`.
#[test]
fn stale_ping_time_vs_suspect_rearm() {
    model_covering(
        "stale_ping_time_vs_suspect_rearm",
        &[PING_FIRST, MONITOR_FIRST],
        |seen| {
            const PING_AT: u64 = ACTIVE_TTL_MS - 2;
            let master = Master::new();
            let rec = master.mount_new(CLIENT);
            master.clock.set_ms(PING_AT);
            // The monitor's clock reaches the deadline only once it has crossed the gate.
            let (mut master, report, ping) = master.race_tick_vs_ping(Some(ACTIVE_TTL_MS));
            seen.saw(who_won(&report));

            assert_eq!(rec.state(), LivenessState::Active, "{ping:?}");
            assert_suspected_on_time(&mut master, &rec);
        },
    );
}

/// Which side of a tick-vs-ping race committed first: the tick committed nothing if the ping
/// refreshed the client before it.
fn who_won(report: &TickReport) -> &'static str {
    if transitions(report).is_empty() {
        PING_FIRST
    } else {
        MONITOR_FIRST
    }
}

/// After a race that ended with `rec` Active and the clock at `ACTIVE_TTL_MS`: ticks one
/// millisecond at a time until the monitor suspects `rec`, and checks that this happens at its
/// deadline (not before, and at most a tick after).
fn assert_suspected_on_time(master: &mut Master, rec: &ClientLivenessRecord) {
    let deadline = rec.word().deadline().0;
    let mut now = ACTIVE_TTL_MS;
    loop {
        now += 1;
        let report = master.tick_at(now);
        if !transitions(&report).is_empty() {
            break;
        }
    }
    assert!(now >= deadline, "suspected at {now} before the deadline {deadline}");
    assert!(
        now <= deadline.max(ACTIVE_TTL_MS + 1) + 1,
        "deadline {deadline}, suspected only at {now}"
    );
}

/// A ping whose CAS fails against the monitor's suspect commit re-reads the clock, and that
/// read must see at least the monitor's time τ: a recovery stamped earlier sets an Active
/// deadline before τ + active TTL, the latest tick the monitor re-armed the Suspected entry for
/// (`monitor::wake`), so the client would be suspected late (invariant 4). The failed CAS's
/// `Acquire` (`ClientLivenessRecord::apply_at`) gives the edge: it reads the monitor's commit,
/// a release that follows the monitor's clock reading. Kills the mutant "CAS failure ordering
/// `Acquire` → `Relaxed`" (MUTANTS.md, "Memory orderings (loom)"), which
/// [`stale_ping_time_vs_suspect_rearm`] cannot:
///
/// After a failed CAS the loop calls `Backoff::spin`, which under loom is `yield_now`, and loom
/// never lets a load return a store again that the thread had already read before its last
/// yield while a newer one exists (so that spin loops advance; `match_load_to_stores` in loom's
/// `rt/atomic.rs`). In that model the clock takes two values, 8 (the ping's first reading) and
/// 10 (the monitor's), so the re-read after the yield returns 10 with or without a
/// happens-before edge. A real clock passes through the values in between: here the monitor's
/// thread moves it 7 → 8 → 10 (two stores), the ping's first reading is 7, and the stale value
/// its re-read could return without the edge, 8, is one it has not read before the yield.
///
/// Record level, so the model can see which path the ping took: the ping's time source (the
/// real clock) counts its calls, and two calls with a recovery mean the first CAS failed
/// against the commit. The monitor sets the clock, reads it (τ = 10) and evaluates at τ.
#[test]
fn ping_cas_lost_to_suspect_rereads_clock() {
    model_covering(
        "ping_cas_lost_to_suspect_rereads_clock",
        &[PING_FIRST, MONITOR_FIRST, PING_CAS_LOST],
        |seen| {
            let initial = Word::pack(LivenessState::Active, Seq::default(), LivenessMs(ACTIVE_TTL_MS));
            let rec = record_with_word(CLIENT, Incarnation::FIRST, initial);
            let clock = std::sync::Arc::new(ManualClock::new(ACTIVE_TTL_MS - 3));
            let gate = Gate::new();
            let monitor = {
                let (rec, gate, clock) = (rec.clone(), gate.clone(), clock.clone());
                thread::spawn(move || {
                    gate.pass();
                    clock.set_ms(ACTIVE_TTL_MS - 2);
                    clock.set_ms(ACTIVE_TTL_MS);
                    let tau = clock.now_ms();
                    (tau, evaluate(&rec, tau, TTLS, false))
                })
            };
            gate.pass();
            let reads = Cell::new(0);
            let ping = signal_at(
                &rec,
                || {
                    reads.set(reads.get() + 1);
                    clock.now_ms()
                },
                TTLS,
            );
            let (tau, eval) = monitor.join().unwrap();
            assert_eq!(tau, ACTIVE_TTL_MS);
            let fin = rec.word();
            assert_eq!(fin.state(), LivenessState::Active, "monitor {eval:?}, ping {ping:?}");
            match (&eval, &ping) {
                (
                    Eval::Wait(waited_on),
                    Applied::Committed {
                        to,
                        change: Change::Refreshed,
                        ..
                    },
                ) => {
                    assert_eq!(waited_on, to, "monitor waited on a word other than the ping's");
                    seen.saw(PING_FIRST);
                }
                (
                    Eval::Suspected {
                        to: suspected,
                        change: Change::Suspected,
                        ..
                    },
                    Applied::Committed {
                        from,
                        to,
                        change: Change::Recovered,
                    },
                ) => {
                    assert_eq!(from, suspected, "ping recovered a word the monitor did not install");
                    assert!(
                        to.deadline().0 >= tau + ACTIVE_TTL_MS,
                        "recovery stamped before the suspicion it undoes: deadline {}, suspected at {tau} \
                         (clock reads by the ping: {})",
                        to.deadline().0,
                        reads.get()
                    );
                    seen.saw(match reads.get() {
                        1 => MONITOR_FIRST,
                        2 => PING_CAS_LOST,
                        n => panic!("{n} clock reads for one lost CAS"),
                    });
                }
                other => panic!("not a serial order of ping and suspect commit: {other:?}"),
            }
        },
    );
}

/// Full stack twin of [`ping_cas_lost_to_suspect_rereads_clock`]: `Liveness::ping` against
/// `Monitor::tick`, the clock stepping 7 → 8 → 10 on the monitor's thread before it ticks. A
/// recovery stamped at 8 (deadline 18) would be suspected only at 20, where the monitor re-armed
/// the entry; the client must be suspected at its deadline.
#[test]
fn ping_cas_lost_to_suspect_then_rearm() {
    model_covering(
        "ping_cas_lost_to_suspect_then_rearm",
        &[PING_FIRST, MONITOR_FIRST],
        |seen| {
            let master = Master::new();
            let rec = master.mount_new(CLIENT);
            master.clock.set_ms(ACTIVE_TTL_MS - 3);
            let (mut master, report, ping) = master.race_clock_steps_tick_vs_ping(&[ACTIVE_TTL_MS - 2, ACTIVE_TTL_MS]);
            seen.saw(who_won(&report));
            assert_eq!(rec.state(), LivenessState::Active, "{ping:?}");
            assert_suspected_on_time(&mut master, &rec);
        },
    );
}

/// `Liveness::suspected_count` read right after a recovering ping never exceeds the number of
/// clients. Regression model: it failed (read `usize::MAX`) until `suspected_count` read the
/// counter as signed and clamped it.
///
/// Interleaving: the monitor's CAS commits Active → Suspected; before it runs
/// `note_suspected(+1)`, the ping's CAS recovers the word and `Liveness::recovery` runs
/// `fetch_sub(1)` on a counter that is still 0, which wraps to `usize::MAX` until the monitor's
/// increment lands. The monitor's own brake reads are safe (its increment precedes them), but
/// any other reader is not: `master::Master::stats` computes `suspected + offline`, which
/// overflows (a panic with debug assertions, garbage gauges without).
#[test]
fn suspected_count_vs_recovering_ping() {
    model_covering(
        "suspected_count_vs_recovering_ping",
        &[PING_FIRST, MONITOR_FIRST],
        |seen| {
            let master = Master::new();
            master.mount_new(CLIENT);
            master.clock.set_ms(ACTIVE_TTL_MS);
            // Not `Master::race_tick_vs_ping`: the count is read between the ping and the join,
            // and the monitor is dropped on its own thread.
            let gate = Gate::new();

            let monitor = {
                let (liveness, gate, mut mon) = (master.liveness.clone(), gate.clone(), master.monitor);
                thread::spawn(move || {
                    gate.pass();
                    mon.tick(&liveness)
                })
            };
            gate.pass();
            let ping = master.liveness.ping(CLIENT, None);
            let count = master.liveness.suspected_count();
            assert!(count <= 1, "suspected_count {count} after {ping:?}");
            let report = monitor.join().unwrap();
            assert_eq!(master.liveness.suspected_count(), 0, "the client is Active");
            seen.saw(who_won(&report));
        },
    );
}
