//! Race: a Ping against the monitor's Suspected → Offline commit, on a record whose suspicion
//! deadline is due; and a stale Offline CAS prepared before a recovery and a re-suspicion.
//!
//! Invariants: 7 (a ping racing the Offline commit either recovers the incarnation and the
//! Offline commit fails, or gets `NEED_REMOUNT` and the incarnation is offboarded: never both,
//! never neither), 15 (exactly one job, and only from a won Offline CAS), 1 (Offline is terminal)
//! and the `word.rs` rule that `seq` makes every committed word distinct, so an Offline CAS
//! prepared against an earlier Suspected word cannot land on a later one.
//!
//! Allowed outcomes of `ping_vs_offline_commit` / `ping_vs_offline_tick`:
//! - **ping recovered**: the ping recovers (`Recovered`; wire status `OK`, the client is ready),
//!   the monitor waits; the record is Active, no job exists.
//! - **monitor offline**: the monitor commits Offline and mints one job; the ping is refused
//!   (`NEED_REMOUNT`, no recovery); the record is Offline and stays registered (the barrier).
//!
//! `stale_offline_cas_after_recover_and_resuspect` runs two monitor evaluations (a stale one at
//! the old suspicion deadline, a later one at the recovered deadline) and a ping on three
//! threads. Every commit any thread reports must extend the one history of the word (its `from`
//! is exactly the word the previous commit installed), every Offline commit must replace a
//! Suspected word that is due at the committing evaluation's time, and exactly one job exists iff
//! the word ends Offline. Allowed histories: `stale` (the stale evaluation commits Offline
//! first), `later` (the later one does), `ping>later` (recovery, then re-suspicion; the stale
//! evaluation then waits).
#![cfg(loom)]

mod common;

use common::{
    model_covering, race_evaluate_vs_signal, spawn_evaluate, transitions, Gate, Master, ACTIVE_TTL_MS, CLIENT,
    SUSPICION_TTL_MS, TTLS,
};
use mooncake_liveness::__private::loom::{record_with_word, signal, Eval};
use mooncake_liveness::clock::LivenessMs;
use mooncake_liveness::liveness::{Applied, Change, Seq, Word};
use mooncake_liveness::{Incarnation, LivenessState, PingStatus};

/// Suspicion deadline of the record set up by `Master::suspected` / the record-level models.
const OFFLINE_DUE: u64 = ACTIVE_TTL_MS + SUSPICION_TTL_MS;

const PING_RECOVERED: &str = "ping recovered";
const MONITOR_OFFLINE: &str = "monitor offline";

/// Record level: `evaluate` and `signal` at the same instant, the suspicion deadline.
#[test]
fn ping_vs_offline_commit() {
    model_covering("ping_vs_offline_commit", &[PING_RECOVERED, MONITOR_OFFLINE], |seen| {
        let initial = Word::pack(LivenessState::Suspected, Seq::new(1), LivenessMs(OFFLINE_DUE));
        let rec = record_with_word(CLIENT, Incarnation::FIRST, initial);
        let (eval, ping, fin) = race_evaluate_vs_signal(&rec, OFFLINE_DUE, OFFLINE_DUE);

        match (eval, ping) {
            (
                Eval::Wait(waited_on),
                Applied::Committed {
                    from,
                    to,
                    change: Change::Recovered,
                },
            ) => {
                assert_eq!(from, initial);
                assert_eq!(waited_on, to, "monitor waited on a word other than the recovery's");
                assert_eq!(fin, to);
                assert_eq!(fin.state(), LivenessState::Active);
                assert_eq!(fin.deadline().0, OFFLINE_DUE + ACTIVE_TTL_MS);
                seen.saw(PING_RECOVERED);
            }
            (Eval::Offline { from, to, job }, Applied::Offline) => {
                assert_eq!(from, initial);
                assert_eq!(fin, to);
                assert_eq!(fin.state(), LivenessState::Offline);
                assert_eq!(job.incarnation(), Incarnation::FIRST);
                assert!(std::ptr::eq(&**job.record(), &*rec), "job for another record");
                seen.saw(MONITOR_OFFLINE);
            }
            (eval, ping) => panic!("both or neither: monitor {eval:?}, ping {ping:?}"),
        }
    });
}

/// Full stack: `Monitor::tick` against `Liveness::ping` at the suspicion deadline, for a ready
/// client (so a recovering ping answers `OK` and a refused one `NEED_REMOUNT`).
#[test]
fn ping_vs_offline_tick() {
    model_covering("ping_vs_offline_tick", &[PING_RECOVERED, MONITOR_OFFLINE], |seen| {
        let mut master = Master::new();
        let rec = master.suspected(CLIENT);
        assert!(master.liveness.set_ready(CLIENT, true));
        master.clock.set_ms(OFFLINE_DUE);
        let (mut master, report, ping) = master.race_tick_vs_ping(None);

        let recovered = ping.recovered.is_some();
        let offboarded = !report.jobs.is_empty();
        assert!(
            recovered != offboarded,
            "recovered={recovered} offboarded={offboarded}: {ping:?} {report:?}"
        );
        assert!(report.jobs.len() <= 1);
        // The Offline record stays registered until its job completes (the barrier).
        let registered = master
            .liveness
            .registry()
            .get(CLIENT)
            .expect("record left the registry");
        assert!(std::ptr::eq(&*registered, &*rec));
        if offboarded {
            assert_eq!(ping.status, PingStatus::NeedRemount);
            assert_eq!(
                transitions(&report),
                vec![(LivenessState::Suspected, LivenessState::Offline)]
            );
            assert_eq!(rec.state(), LivenessState::Offline);
            assert_eq!(report.jobs[0].incarnation(), Incarnation::FIRST);
            assert_eq!(master.liveness.ping(CLIENT, None).status, PingStatus::NeedRemount);
            seen.saw(MONITOR_OFFLINE);
        } else {
            assert_eq!(ping.status, PingStatus::Ok, "recovered and ready");
            assert!(transitions(&report).is_empty());
            assert_eq!(rec.state(), LivenessState::Active);
            // The recovered client is watched again and suspected exactly one TTL later.
            assert_eq!(master.monitor.armed(), 1);
            assert!(transitions(&master.tick_at(OFFLINE_DUE + ACTIVE_TTL_MS - 1)).is_empty());
            let again = master.tick_at(OFFLINE_DUE + ACTIVE_TTL_MS);
            assert_eq!(
                transitions(&again),
                vec![(LivenessState::Active, LivenessState::Suspected)]
            );
            seen.saw(PING_RECOVERED);
        }
    });
}

/// What one thread of the three-thread model committed.
#[derive(Debug)]
struct Commit {
    who: &'static str,
    from: Word,
    to: Word,
    /// The committing evaluation's time (for the "due" check); `None` for the ping.
    evaluated_at: Option<u64>,
}

fn monitor_commit(who: &'static str, eval: &Eval, now: u64) -> Option<Commit> {
    match eval {
        Eval::Suspected { from, to, .. } | Eval::Offline { from, to, .. } => Some(Commit {
            who,
            from: *from,
            to: *to,
            evaluated_at: Some(now),
        }),
        Eval::Wait(_) | Eval::Held | Eval::Retired => None,
    }
}

/// Three threads: a stale monitor evaluation at the old suspicion deadline, a ping just after
/// it, and a later monitor evaluation at the recovered deadline (which re-suspects).
#[test]
fn stale_offline_cas_after_recover_and_resuspect() {
    let histories = ["stale", "later", "ping>later"];
    model_covering("stale_offline_cas_after_recover_and_resuspect", &histories, |seen| {
        const STALE_AT: u64 = OFFLINE_DUE; // due for Offline on the initial word
        const PING_AT: u64 = OFFLINE_DUE + 1; // recovers: Active until PING_AT + active TTL
        const LATER_AT: u64 = PING_AT + ACTIVE_TTL_MS; // re-suspects the recovered word
        let initial = Word::pack(LivenessState::Suspected, Seq::new(1), LivenessMs(OFFLINE_DUE));
        let rec = record_with_word(CLIENT, Incarnation::FIRST, initial);
        let gate = Gate::new();

        let stale = spawn_evaluate(&rec, &gate, STALE_AT);
        let later = spawn_evaluate(&rec, &gate, LATER_AT);
        gate.pass();
        let ping = signal(&rec, PING_AT, TTLS);
        let stale = stale.join().unwrap();
        let later = later.join().unwrap();

        let mut commits: Vec<Commit> = [
            monitor_commit("stale", &stale, STALE_AT),
            monitor_commit("later", &later, LATER_AT),
        ]
        .into_iter()
        .flatten()
        .collect();
        if let Applied::Committed { from, to, .. } = ping {
            commits.push(Commit {
                who: "ping",
                from,
                to,
                evaluated_at: None,
            });
        }
        let jobs = [&stale, &later]
            .iter()
            .filter(|e| matches!(e, Eval::Offline { .. }))
            .count();
        assert!(jobs <= 1, "two jobs for one incarnation");

        // Every commit extends the one history of the word, starting from `initial`.
        let mut cur = initial;
        let mut history = vec![];
        while let Some(i) = commits.iter().position(|c| c.from == cur) {
            let c = commits.swap_remove(i);
            if c.to.state() == LivenessState::Offline {
                assert_eq!(c.from.state(), LivenessState::Suspected, "{c:?}");
                let at = c.evaluated_at.expect("only the monitor commits Offline");
                assert!(
                    at >= c.from.deadline().0,
                    "Offline before the suspicion deadline: {c:?}"
                );
            }
            cur = c.to;
            history.push(c.who);
        }
        assert!(
            commits.is_empty(),
            "commits off the history (stale CAS landed): {commits:?} after {history:?}"
        );
        assert_eq!(rec.word(), cur, "history {history:?} does not end at the final word");
        assert_eq!(
            jobs == 1,
            cur.state() == LivenessState::Offline,
            "job iff Offline: {history:?}"
        );
        // The ping's answer agrees with the history.
        match ping {
            Applied::Offline => assert_eq!(cur.state(), LivenessState::Offline, "refused ping: {history:?}"),
            Applied::Committed { change, .. } => assert_eq!(change, Change::Recovered),
            other => panic!("ping on a Suspected/Offline word: {other:?}"),
        }
        seen.saw(history.join(">"));
    });
}
