//! The `snapshot_restore` fuzz body: checksummed but inconsistent snapshots through
//! [`Master::restore`].
//!
//! `snapshot_decode` mutates bytes, so almost every input it makes is refused by the decoder
//! or by the first check of restore. This body instead builds a small *valid* master from the
//! input's first bytes (up to four clients with segments, LocalDisks, objects of two tenants,
//! Copy/Move/offload tasks, finished offloads, NoF segments, a quota limit, and some clients
//! Offline with their job pending because a step keeps failing), takes its [`Snapshot`], then
//! applies structured mutations the rest of the input chooses (drop, duplicate or retarget a
//! client, name, segment, object, replica, task, LocalDisk, scratch; wild sizes, usage,
//! incarnations, ids, task ids, NoF failure counts — `0`, `u32::MAX`, `u64::MAX`, `u128::MAX`;
//! 1,024+ stale LocalDisk keys; …), encodes it (so it passes the checksum) and restores it.
//!
//! Oracle:
//! - no panic; the encoded snapshot decodes to the same value;
//! - a refusal is `Inconsistent` with a message (or `FutureVersion` for a mutated version);
//! - a restored master satisfies the derived-state invariants ([`check_restored`]): every
//!   segment's usage and key index equal the sum of the replicas on it, within its size; every
//!   LocalDisk's usage is its replicas plus its offloads in flight, within its capacity; each
//!   tenant's quota usage is its replicas plus the refunds still owed; every replica, segment,
//!   disk and task is owned by the restored incarnation of its client; every task names an
//!   object that names it back;
//! - bounded time: with nobody pinging, every client goes Offline and every job (restored or
//!   new) completes within [`MAX_TICKS`] ticks — no livelock — and the master is then empty:
//!   no segment, object, task, LocalDisk or quota usage left (nothing leaked by restore);
//! - the same checks run with jobs run inline at the tick and with jobs collected in the
//!   outbox and run by the harness right after each tick (the asynchronous path), failed
//!   ones given back with `return_job`.
//!
//! An unmutated snapshot must restore, and its restored master must snapshot back to the same
//! value (up to readiness and the job stamps, which restore resets).

mod check;
mod mutate;

use check::{check_restored, check_round_trip, drain};
use mutate::{mutate, Mutation};

use crate::clock::{Clock, ManualClock};
use crate::config::LivenessConfig;
use crate::master::{Master, MasterOptions, OffboardingDriver};
use crate::snapshot::{Snapshot, SnapshotError};
use arbitrary::{Arbitrary, Unstructured};
use std::sync::Arc;

/// Ticks a restored master gets to offboard everyone.
const MAX_TICKS: usize = 1_000;
/// Mutations per input, at most.
const MAX_MUTATIONS: usize = 12;
const TICK_MS: u64 = 100;

/// The valid master's shape.
#[derive(Arbitrary, Debug)]
struct Shape {
    clients: u8,
    disks: u8,
    objects: u8,
    copies: u8,
    offloads: u8,
    offline: u8,
    fail: u8,
    nof: u8,
    quota: bool,
    outbox: bool,
}

fn cname(i: usize) -> String {
    format!("c{i}")
}
fn sname(i: usize) -> String {
    format!("s{i}")
}
fn key(j: usize) -> String {
    format!("k{j}")
}
fn tenant(t: usize) -> String {
    format!("t{}", t % 3)
}

fn config() -> LivenessConfig {
    LivenessConfig {
        active_ttl_ms: 1_000,
        suspicion_ttl_ms: 1_000,
        monitor_tick_ms: TICK_MS,
        stall_bound_ms: 500,
        ..LivenessConfig::default()
    }
}

fn options(driver: OffboardingDriver) -> MasterOptions {
    MasterOptions {
        registry_shards: 2,
        metadata_shards: 2,
        offboarding: driver,
        ..MasterOptions::default()
    }
}

/// A small valid master shaped by `s`, and the base time it reached.
fn build(s: &Shape) -> (Master, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(0));
    let m = Master::new(
        clock.clone() as Arc<dyn Clock>,
        config(),
        options(OffboardingDriver::Inline),
    );
    let n = 2 + usize::from(s.clients % 3);
    for i in 0..n {
        let _ = m.mount(&cname(i), &sname(i), 1_024);
        if s.disks & (1 << i) != 0 {
            let _ = m.mount_local_disk(&cname(i), 2_048);
        }
    }
    if s.quota {
        m.set_quota_limit("t0", Some(4_096));
    }
    let objects = 1 + usize::from(s.objects % 8);
    for j in 0..objects {
        let size = 16 + 8 * j as u64;
        if m.put_for(&tenant(j), &key(j), size, 1 + j % 2).is_ok() && j % 5 != 4 {
            let _ = m.put_end(&key(j));
        }
    }
    for j in 0..objects {
        if s.copies & (1 << j) != 0 {
            let _ = m.replicate(&key(j), &sname((j + 1) % n), j % 3 == 0);
        }
    }
    for i in 0..n {
        if s.offloads & (1 << i) != 0 {
            if let Ok(tasks) = m.offload_heartbeat(&cname(i)) {
                // Finish every other one: LocalDisk replicas, and offloads still in flight.
                for t in tasks.iter().step_by(2) {
                    let _ = m.task_done(&cname(i), t.task, true);
                }
            }
        }
    }
    for j in 0..objects {
        let _ = m.promote(&key(j));
    }
    for k in 0..usize::from(s.nof % 3) {
        let name = format!("n{k}");
        let mut nof = m.nof();
        nof.mount(&name, 100);
        for _ in 0..k {
            nof.probe(&name, false);
        }
    }
    if s.fail % 2 == 1 {
        m.fail_step(crate::offboarding::Step::ALL[usize::from(s.fail / 2) % 5], 1_000);
    }
    // The clients in the `offline` mask stop pinging: Suspected at 1 s, Offline at 2 s, their
    // job run inline (and parked, if a step keeps failing).
    for t in 1..=25u64 {
        clock.set_ms(t * TICK_MS);
        for i in (0..n).filter(|i| s.offline & (1 << i) == 0) {
            m.ping(&cname(i));
        }
        m.tick();
    }
    (m, clock)
}

/// The fuzz body (see the module doc).
pub fn snapshot_restore(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(shape) = Shape::arbitrary(&mut u) else { return };
    let (base, _) = build(&shape);
    let valid = base.snapshot();
    drop(base);
    let mut snap = valid.clone();
    let mut mutations = Vec::new();
    while !u.is_empty() && mutations.len() < MAX_MUTATIONS {
        let Ok(m) = Mutation::arbitrary(&mut u) else { break };
        mutations.push(format!("{m:?}"));
        mutate(&mut snap, m);
    }
    if std::env::var_os("SNAPSHOT_RESTORE_EXPLAIN").is_some() {
        eprintln!("shape {shape:?}\nmutations {mutations:?}\nsnapshot {}", snap.to_json());
    }
    let bytes = snap.encode();
    let decoded = Snapshot::decode(&bytes);
    if snap.version == crate::snapshot::FORMAT_VERSION {
        assert_eq!(decoded.as_ref(), Ok(&snap), "an encoded snapshot decodes to itself");
    }
    let driver = if shape.outbox {
        OffboardingDriver::Outbox
    } else {
        OffboardingDriver::Inline
    };
    let clock = Arc::new(ManualClock::new(100_000));
    let restored = Master::restore(clock.clone() as Arc<dyn Clock>, config(), options(driver), &snap);
    let m = match restored {
        Err(SnapshotError::Inconsistent(msg)) => {
            assert!(snap != valid, "a valid snapshot refused: {msg}");
            assert!(!msg.is_empty(), "a refusal must say what is wrong");
            return;
        }
        Err(SnapshotError::FutureVersion { found, .. }) => {
            assert_eq!(found, snap.version);
            assert_ne!(found, crate::snapshot::FORMAT_VERSION);
            return;
        }
        Err(e) => panic!("restore refused a decoded snapshot with {e:?}, not Inconsistent"),
        Ok(m) => m,
    };
    check_restored(&m, &snap);
    if snap == valid {
        check_round_trip(&m, &valid);
    }
    drain(m, &clock, shape.outbox);
}
