//! Fuzz bodies (feature `fuzzing`): each `fuzz/fuzz_targets/<name>.rs` is one line calling the
//! function of the same name here, and `tests/fuzz_smoke.rs` replays the committed seeds and
//! random bytes through every one of them, so `cargo test --features fuzzing` exercises them all.
#![forbid(unsafe_code)]

use crate::clock::LivenessMs;
use crate::liveness::word::{decide, Change, Decision, Event, LivenessState, Ttls, Word};
use arbitrary::{Arbitrary, Unstructured};

mod config;
mod differential;
mod model;
mod snapshot_restore;

pub use config::config_parse;
pub use differential::{differential, differential_counts, differential_explain, Counts};
/// coro_rpc frames and every RPC's bodies (the wire crate's body; `fuzz/seeds/wire_decode`).
pub use mooncake_liveness_wire::fuzzing::wire_decode;
pub use snapshot_restore::snapshot_restore;

/// One step of the `word_transitions` target.
#[derive(Debug, Arbitrary)]
enum Step {
    Signal { dt_ms: u16 },
    Expire { dt_ms: u16 },
    ExpireHolding { dt_ms: u16 },
    Renew { dt_ms: u16 },
}

/// Random event sequences on one word against the invariants 1–3 (a small sequential model:
/// last signal time and committed-suspicion time).
pub fn word_transitions(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let (Ok(active), Ok(suspicion)) = (u.int_in_range(1u64..=30_000), u.int_in_range(1u64..=30_000)) else {
        return;
    };
    let ttls = Ttls {
        active_ms: active,
        suspicion_ms: suspicion,
    };
    let mut now = 0u64;
    let mut word = Word::first(LivenessMs(now), active);
    let (mut last_signal, mut suspected_at) = (now, None::<u64>);
    // `arbitrary` keeps producing defaults from exhausted input: stop when the bytes run out.
    while !u.is_empty() {
        let Ok(step) = Step::arbitrary(&mut u) else {
            return;
        };
        let (ev, dt) = match step {
            Step::Signal { dt_ms } => (Event::Signal, dt_ms),
            Step::Expire { dt_ms } => (Event::Expire, dt_ms),
            Step::ExpireHolding { dt_ms } => (Event::ExpireHoldingOffline, dt_ms),
            Step::Renew { dt_ms } => (Event::RenewSuspicion, dt_ms),
        };
        now += u64::from(dt);
        let before = word.state();
        match decide(word, ev, LivenessMs(now), ttls) {
            Decision::Commit { next, change } => {
                check_commit(before, next, change, now, ttls, last_signal, suspected_at);
                match change {
                    Change::Refreshed | Change::Recovered => last_signal = now,
                    Change::Suspected | Change::SuspicionRenewed => suspected_at = Some(now),
                    Change::WentOffline => {}
                }
                word = next;
            }
            Decision::Wait { deadline } => {
                // A renewal only concerns Suspected words; it leaves an Active one to the monitor.
                let renewal_of_active = ev == Event::RenewSuspicion && before == LivenessState::Active;
                assert!(
                    LivenessMs(now) < deadline || renewal_of_active,
                    "waiting past a due deadline"
                )
            }
            Decision::Held => assert_eq!(before, LivenessState::Suspected),
            Decision::RefuseOffline | Decision::Retire => {
                assert_eq!(before, LivenessState::Offline)
            }
        }
    }
}

fn check_commit(
    before: LivenessState,
    next: Word,
    change: Change,
    now: u64,
    ttls: Ttls,
    last_signal: u64,
    suspected_at: Option<u64>,
) {
    use LivenessState::*;
    let after = next.state();
    assert!(before != Offline, "Offline is terminal, got {change:?}");
    assert!(
        !matches!((before, after), (Active, Offline)),
        "Active may not go Offline directly"
    );
    match change {
        Change::Suspected => assert!(now - last_signal >= ttls.active_ms, "early suspicion"),
        Change::WentOffline => {
            let since = suspected_at.expect("Offline without a committed suspicion");
            assert!(now - since >= ttls.suspicion_ms, "recovery window shortened");
        }
        _ => {}
    }
}

/// Arbitrary bytes through the snapshot decoder (binary and JSON) and, when they decode, the
/// restore: an error or a master, never a panic. A restored master snapshots back to the same
/// value (up to readiness, which restore resets).
///
/// The bytes are tried three ways: as a whole binary snapshot (exercising the header, length and
/// checksum checks), as the *payload* of a correctly framed binary snapshot (a mutation almost
/// never keeps the CRC valid, so without this the postcard decoder and restore would see only
/// the seeds), and as JSON.
pub fn snapshot_decode(data: &[u8]) {
    use crate::snapshot::Snapshot;

    if let Ok(snap) = Snapshot::decode(data) {
        restore_round_trip(&snap);
    }
    if let Ok(snap) = Snapshot::decode(&framed(data)) {
        restore_round_trip(&snap);
    }
    if let Some(snap) = std::str::from_utf8(data).ok().and_then(|t| Snapshot::from_json(t).ok()) {
        restore_round_trip(&snap);
    }
}

/// `payload` framed as a binary snapshot of the current format, with a valid checksum.
fn framed(payload: &[u8]) -> Vec<u8> {
    use crate::snapshot::{FORMAT_VERSION, MAGIC};
    let mut out = Vec::with_capacity(payload.len() + 20);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(payload);
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out
}

/// Restores `snap` (if it is consistent) and checks nothing was lost or invented.
fn restore_round_trip(snap: &crate::snapshot::Snapshot) {
    use crate::clock::{Clock, ManualClock};
    use crate::config::LivenessConfig;
    use crate::master::{Master, MasterOptions};
    use std::sync::Arc;

    let clock = Arc::new(ManualClock::new(1_000));
    let options = MasterOptions {
        registry_shards: 4,
        ..MasterOptions::default()
    };
    let Ok(master) = Master::restore(clock as Arc<dyn Clock>, LivenessConfig::default(), options, snap) else {
        return;
    };
    let mut again = master.snapshot();
    let mut want = snap.clone();
    for c in again.clients.iter_mut().chain(want.clients.iter_mut()) {
        c.ready = false;
    }
    // Restore normalizes orderings (clients, segments by key); compare as sets of facts.
    assert_eq!(
        again.objects.len(),
        want.objects.len(),
        "objects lost or invented by restore"
    );
    assert_eq!(
        again.segments.len(),
        want.segments.len(),
        "segments lost or invented by restore"
    );
}

/// Largest `t_ms` (and stall) a `trace_parse` input may use: replay runs every tick up to each
/// operation, so the work grows with virtual time; fuzzing explores the parser, not long runs.
const TRACE_FUZZ_MAX_MS: u64 = 1_000_000;

/// Arbitrary bytes as a replay trace: a clean replay or a `line N` error, never a panic; and
/// the same input always gives the same output (invariant 21).
pub fn trace_parse(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        let mut sink = Vec::new();
        let r = crate::sim::replay(data, &mut sink);
        assert!(r.is_err(), "invalid UTF-8 must be a malformed line");
        return;
    };
    let too_long = text.lines().any(|l| {
        serde_json::from_str::<serde_json::Value>(l).ok().is_some_and(|v| {
            ["t_ms", "ms"]
                .iter()
                .any(|k| v.get(k).and_then(|x| x.as_u64()).is_some_and(|t| t > TRACE_FUZZ_MAX_MS))
                || v.pointer("/config/monitor_tick_ms")
                    .is_some_and(|t| t.as_u64().is_none_or(|t| t < 10))
        })
    });
    if too_long {
        return;
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let ra = crate::sim::replay(text.as_bytes(), &mut a);
    let rb = crate::sim::replay(text.as_bytes(), &mut b);
    assert_eq!(a, b, "replay is not deterministic");
    assert_eq!(ra.is_ok(), rb.is_ok());
    if let Err(e) = ra {
        assert!(e.to_string().contains("line "), "error without a line number: {e}");
    }
}

/// One queue operation of the `queue_ops` target.
#[derive(Debug, Arbitrary)]
enum QueueOp {
    Push(u16),
    Pop,
    PopBatch(u8),
    Close,
}

/// Arbitrary single-threaded operation sequences on the MPSC queue against a `VecDeque` model:
/// same values, same order, the same refusals (full, closed) with the value handed back.
pub fn queue_ops(data: &[u8]) {
    use crate::offboarding::queue::channel;
    use std::collections::VecDeque;
    let mut u = Unstructured::new(data);
    let Ok(cap) = u.int_in_range(1usize..=16) else { return };
    let (tx, mut rx) = channel::<u16>(cap);
    let mut model: VecDeque<u16> = VecDeque::new();
    let mut closed = false;
    while !u.is_empty() {
        let Ok(op) = QueueOp::arbitrary(&mut u) else { return };
        match op {
            QueueOp::Push(v) => match tx.push(v) {
                Ok(()) => {
                    assert!(!closed && model.len() < cap, "accepted while closed or full");
                    model.push_back(v);
                }
                // `PushError` is `#[non_exhaustive]` (the core is another crate): ask, then take.
                Err(e) => {
                    let full = e.is_full();
                    let back = e.into_inner();
                    if full {
                        assert!(back == v && !closed && model.len() == cap);
                    } else {
                        assert!(back == v && closed);
                    }
                }
            },
            QueueOp::Pop => assert_eq!(rx.pop(), model.pop_front()),
            QueueOp::PopBatch(n) => {
                let mut out = Vec::new();
                let got = rx.pop_batch(usize::from(n), &mut out);
                let want: Vec<u16> = (0..usize::from(n).min(model.len()))
                    .filter_map(|_| model.pop_front())
                    .collect();
                assert_eq!((got, out), (want.len(), want));
            }
            QueueOp::Close => {
                tx.close();
                closed = true;
            }
        }
        assert_eq!(rx.len(), model.len());
    }
}
