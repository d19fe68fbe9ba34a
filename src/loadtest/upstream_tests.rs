//! `upstream-main`'s lock steps, checked on a fake master whose walk and Get take a set time.

use super::*;
use crate::sync::AtomicBool;
use std::sync::Mutex as StdMutex;

/// A master whose walk (or, if `slow_get`, whose Get instead) takes `slow`; it remembers
/// unmounts.
#[derive(Debug, Default)]
struct Slow {
    slow: Duration,
    slow_get: bool,
    entered: AtomicBool,
    left: AtomicBool,
    unmounted: StdMutex<Vec<String>>,
}

impl Slow {
    fn new(slow: Duration, slow_get: bool) -> Self {
        Self {
            slow,
            slow_get,
            ..Self::default()
        }
    }

    fn work(&self) {
        self.left.store(false, Ordering::Relaxed);
        self.entered.store(true, Ordering::Release);
        std::thread::sleep(self.slow);
        self.left.store(true, Ordering::Release);
        self.entered.store(false, Ordering::Relaxed);
    }
}

impl MasterPaths for Slow {
    fn ping(&self, _: &str) -> PingStatus {
        PingStatus::Ok
    }
    fn mount(&self, _: &str, _: &str, _: u64) -> Result<(), MasterError> {
        Ok(())
    }
    fn remount_segments(&self, _: &str, _: &[SegmentSpec]) -> Result<(), MasterError> {
        Ok(())
    }
    fn walk(&self, _: &str, _: &[SegmentSpec]) -> usize {
        if !self.slow.is_zero() && !self.slow_get {
            self.work();
        }
        0
    }
    fn unmount(&self, _: &str, segment: &str) -> Result<(), MasterError> {
        self.unmounted.lock().expect("unmounted").push(segment.to_string());
        Ok(())
    }
    fn put(&self, _: &str, _: u64) -> Result<Vec<ReplicaDesc>, MasterError> {
        Ok(Vec::new())
    }
    fn put_end(&self, _: &str) -> Result<(), MasterError> {
        Ok(())
    }
    fn get(&self, _: &str) -> Result<Vec<ReplicaDesc>, MasterError> {
        if self.slow_get {
            self.work();
        }
        Ok(Vec::new())
    }
    fn remove(&self, _: &str) -> Result<(), MasterError> {
        Ok(())
    }
    fn contains(&self, _: &str) -> bool {
        true
    }
    fn client_id(&self, name: &str) -> Option<ClientId> {
        Some(ClientId(name.len() as u128))
    }
    fn tick(&self) -> TickOutcome {
        TickOutcome::default()
    }
    fn run_jobs(&self, _: Vec<Job>) -> Vec<Job> {
        Vec::new()
    }
    fn snapshot(&self) -> usize {
        0
    }
}

const LONG: Duration = Duration::from_secs(3600);

/// Runs `op` on another thread and, once it is inside the slow part, `probe` here; returns
/// `probe`'s result and whether `op` had left the slow part when `probe` returned.
fn during<T>(slow: &Slow, op: impl FnOnce() + Send, probe: impl FnOnce() -> T) -> (T, bool) {
    std::thread::scope(|s| {
        s.spawn(op);
        while !slow.entered.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        let out = probe();
        (out, slow.left.load(Ordering::Acquire))
    })
}

#[test]
fn ping_waits_for_another_clients_remount_walk_but_not_for_a_get() {
    let up = UpstreamMain::new(Slow::new(Duration::from_millis(300), false), LONG, LONG);
    up.remount("a", &[], true).expect("remount a");
    // ReMount of *another* client holds client_mutex_ exclusive for its whole walk.
    let (status, waited) = during(
        &up.inner,
        || up.remount("b", &[], true).expect("remount b"),
        || up.ping("a"),
    );
    assert_eq!(status, PingStatus::Ok);
    assert!(waited, "the ping did not wait for the remount's walk");
    // A Get holds client_mutex_ shared and no record mutex: a ping runs beside it.
    let getter = UpstreamMain::new(Slow::new(Duration::from_secs(3), true), LONG, LONG);
    getter.remount("a", &[], true).expect("remount a");
    let (status, waited) = during(&getter.inner, || drop(getter.get("k")), || getter.ping("a"));
    assert_eq!(status, PingStatus::Ok);
    assert!(!waited, "the ping waited for a Get");
}

#[test]
fn the_monitor_judges_with_the_time_it_read_before_waiting_for_the_client_lock() {
    // Active TTL 200 ms. "a" pings, then "b"'s remount walks for 600 ms holding client_mutex_
    // exclusive; a tick starting during the walk reads the clock at once and waits out the
    // walk. Judged with that time, "a" is a few ms old: still Active. (Read after the wait,
    // it would be ~600 ms old: Suspected.)
    let active = Duration::from_millis(200);
    let up = UpstreamMain::new(Slow::new(Duration::from_millis(600), false), active, LONG);
    up.remount("a", &[], true).expect("remount a");
    assert_eq!(up.ping("a"), PingStatus::Ok, "seen now, after its own walk");
    let (out, waited) = during(
        &up.inner,
        || up.remount("b", &[], true).expect("remount b"),
        || up.tick(),
    );
    assert!(waited, "the tick waited for the walk");
    assert!(out.changes.is_empty(), "{:?}", out.changes);
    // The next tick reads a fresh time: now "a" (and "b", created before its walk) are due.
    let out = up.tick();
    assert_eq!(out.changes.len(), 2, "a and b: {:?}", out.changes);
    assert!(out.changes.iter().all(|c| c.to == LivenessState::Suspected));
}

#[test]
fn a_retired_client_is_unmounted_swept_and_erased_and_pings_need_remount() {
    let ms = Duration::from_millis;
    let up = UpstreamMain::new(Slow::new(Duration::ZERO, false), ms(20), ms(20));
    up.mount("a", "a-seg", 1).expect("mount");
    up.remount("a", &[], true).expect("remount");
    assert_eq!(up.ping("a"), PingStatus::Ok);
    std::thread::sleep(ms(30));
    let out = up.tick();
    assert_eq!(out.changes[0].to, LivenessState::Suspected);
    assert!(out.jobs.is_empty());
    std::thread::sleep(ms(30));
    let out = up.tick();
    assert_eq!(out.changes[0].to, LivenessState::Offline);
    assert_eq!(
        up.ping("a"),
        PingStatus::NeedRemount,
        "an Offline record rejects the ping"
    );
    assert_eq!(
        up.mount("a", "a-seg", 1),
        Err(MasterError::ClientOffboarding),
        "the Offline record bars a mount until its job completes"
    );
    assert!(up.run_jobs(out.jobs).is_empty());
    assert_eq!(
        *up.inner.unmounted.lock().expect("unmounted"),
        vec!["a-seg".to_string()]
    );
    // Compare-and-erased: the id is unknown, a mount makes a new incarnation.
    up.mount("a", "a-seg", 1).expect("a new incarnation mounts");
    assert_eq!(up.ping("a"), PingStatus::NeedRemount, "not ReMounted yet");
}
