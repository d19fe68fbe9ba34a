//! Ping waits for nothing (issue 29): with every mutex and lock of the master held by one
//! thread, another thread's Ping still recovers a Suspected client and returns.

use super::*;
use crate::clock::ManualClock;
use crate::liveness::PingStatus;
use crate::sync::thread;
use crate::LivenessEvent;
use std::sync::mpsc;
use std::time::Duration;

fn raw<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Anything held until dropped (a guard).
trait Held {}
impl<T> Held for T {}

/// Every lock the master owns, held at once, plus each mounted segment's allocator. Taken
/// raw, past the order check (which would rightly refuse two stripes or two leaves at once).
fn hold_everything<'a>(m: &'a MasterCore, segments: &'a [Arc<Segment>]) -> Vec<Box<dyn Held + 'a>> {
    let mut held: Vec<Box<dyn Held + 'a>> = Vec::new();
    held.push(Box::new(raw(&m.monitor)));
    for s in m.membership.stripes_raw() {
        held.push(Box::new(s));
    }
    held.push(Box::new(m.membership.gate_raw()));
    for i in 0..m.data.shards().len() {
        held.push(Box::new(m.data.shards().lock_raw(i)));
    }
    held.push(Box::new(m.data.segments_raw()));
    for seg in segments {
        held.push(Box::new(seg.alloc_raw()));
    }
    held.push(Box::new(m.work.tasks_raw()));
    held.push(Box::new(m.membership.local_disks_raw()));
    held.push(Box::new(m.data.nof_raw()));
    held.push(Box::new(m.data.quotas().table_raw()));
    held.push(Box::new(m.jobs.state_raw()));
    held.push(Box::new(m.jobs.pool_raw()));
    held.push(Box::new(m.data.rng_raw()));
    held.push(Box::new(m.membership.external_raw()));
    held
}

#[test]
fn a_recovering_ping_returns_while_another_thread_holds_every_master_lock() {
    let clock = Arc::new(ManualClock::new(0));
    let config = LivenessConfig {
        active_ttl_ms: 1_000,
        suspicion_ttl_ms: 20_000,
        stall_bound_ms: 5_000,
        ..LivenessConfig::default()
    };
    let options = MasterOptions {
        metadata_shards: 4, // every shard is held: keep the lock-order graph small
        ..MasterOptions::default()
    };
    let m = Arc::new(Master::new(clock.clone() as Arc<dyn Clock>, config, options));
    m.mount("c1", "s1", 100).unwrap();
    m.remount("c1", &[]).unwrap();
    m.put("k", 10, 1).unwrap();
    for t in (100..=1_500).step_by(100) {
        clock.set_ms(t);
        m.tick();
    }
    assert_eq!(m.stats().suspected, 1, "c1 should be Suspected by now");
    m.take_events();

    let segments: Vec<Arc<Segment>> = m.segments().iter().cloned().collect();
    let held = hold_everything(&m.core, &segments);
    let (tx, rx) = mpsc::channel();
    let pinger = {
        let m = m.clone();
        thread::spawn(move || tx.send(m.ping("c1")).unwrap())
    };
    // A bound on a hang, not a timing claim: the Ping needs microseconds; if it waits for any
    // lock held above, it never returns while they are held.
    let answer = rx.recv_timeout(Duration::from_secs(30));
    drop(held);
    pinger.join().unwrap();
    assert_eq!(
        answer,
        Ok(PingStatus::Ok),
        "Ping did not return while the master's locks were held"
    );
    let stats = m.stats();
    assert_eq!((stats.active, stats.suspected, stats.recoveries), (1, 0, 1));
    let recovered = m
        .take_events()
        .into_iter()
        .filter(|e| matches!(e, MasterEvent::Liveness(LivenessEvent::Transition(t)) if t.cause == crate::liveness::Cause::RecoveredByPing))
        .count();
    assert_eq!(recovered, 1, "the recovery was not recorded");
}
