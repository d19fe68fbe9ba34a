//! The master's event log: a bounded, lock-free queue of [`MasterEvent`]s that
//! [`Master::take_events`](super::Master::take_events) drains.
//!
//! Why bounded and lock-free (issue 29): every path records events — the monitor's tick, the
//! offboarding workers, mounts and Ping's recoveries. Ping must wait for nothing (a partition
//! healing is thousands of recoveries at once), so the log takes no lock; and an embedder that
//! never drains it must not grow the master without bound, so it keeps at most `capacity`
//! events and drops the *oldest* beyond that, counting each drop ([`EventLog::dropped`], exported
//! as `mooncake_liveness_events_dropped_total` and in [`Stats`](crate::telemetry::Stats)). We chose
//! a bounded log over a subscriber callback: a callback would run the embedder's code on Ping's
//! path, which could block it. An embedder that needs every event drains at least every
//! `capacity` events (replay and simulate drain after every operation and tick).
//!
//! Ground rules:
//! - The store is crossbeam's lock-free `SegQueue` (FIFO; memory grows by blocks as used, so a
//!   large bound costs nothing until it is reached). `len` counts what was pushed and not yet
//!   popped; it is an estimate while pushes and pops race, and only decides when to drop.
//! - `push` pushes first, then increments `len`; if the count it replaced was at or past the
//!   bound, it pops one event (the oldest) and counts it dropped. Concurrent pushes at the
//!   bound may each drop one, so the log may briefly hold `capacity` plus the number of
//!   pushing threads; nothing is ever lost without being counted.
//! - Orderings are `Relaxed`: `len` and `dropped` are statistics; the queue itself orders its
//!   events (its own pushes and pops synchronize), and events from one thread stay in order.
//! - Under loom the queue is `sync`'s modelled stand-in, like the offboarding queue's.

use super::MasterEvent;
use crate::sync::{AtomicU64, AtomicUsize, Ordering, SegQueue};

/// Default bound of the event log, in events (a few MB at most).
pub const DEFAULT_EVENT_LOG_CAPACITY: usize = 65_536;

/// A bounded multi-producer queue of events; see the module doc.
#[derive(Debug)]
pub(super) struct EventLog {
    queue: SegQueue<MasterEvent>,
    len: AtomicUsize,
    capacity: usize,
    dropped: AtomicU64,
}

impl EventLog {
    /// A log keeping at most `capacity` events (at least 1).
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            queue: SegQueue::new(),
            len: AtomicUsize::new(0),
            capacity: capacity.max(1),
            dropped: AtomicU64::new(0),
        }
    }

    /// Appends `ev`; beyond the bound the oldest event is dropped and counted. Lock-free.
    pub(super) fn push(&self, ev: MasterEvent) {
        self.queue.push(ev);
        if self.len.fetch_add(1, Ordering::Relaxed) >= self.capacity && self.queue.pop().is_some() {
            self.len.fetch_sub(1, Ordering::Relaxed);
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Takes every event logged so far, oldest first.
    pub(super) fn take(&self) -> Vec<MasterEvent> {
        let mut out = Vec::new();
        while let Some(ev) = self.queue.pop() {
            self.len.fetch_sub(1, Ordering::Relaxed);
            out.push(ev);
        }
        out
    }

    /// Events dropped so far because the log was full.
    pub(super) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::LivenessEvent;

    fn stall(ms: u64) -> MasterEvent {
        MasterEvent::Liveness(LivenessEvent::StallDetected { at_ms: ms, ms })
    }

    #[test]
    fn keeps_order_and_drops_the_oldest_beyond_the_bound() {
        let log = EventLog::new(3);
        for ms in 1..=5 {
            log.push(stall(ms));
        }
        assert_eq!(log.dropped(), 2);
        assert_eq!(log.take(), vec![stall(3), stall(4), stall(5)]);
        assert!(log.take().is_empty());
        log.push(stall(6));
        assert_eq!((log.take(), log.dropped()), (vec![stall(6)], 2));
    }

    #[test]
    fn concurrent_pushes_lose_nothing_uncounted() {
        let log = EventLog::new(1_000);
        crate::sync::thread::scope(|s| {
            for t in 0..4u64 {
                let log = &log;
                s.spawn(move || (0..2_000).for_each(|i| log.push(stall(t * 10_000 + i))));
            }
        });
        let kept = log.take();
        assert_eq!(kept.len() as u64 + log.dropped(), 8_000);
        assert!(kept.len() <= 1_000 + 4, "{} kept", kept.len());
        // Each thread's events stay in its order.
        for t in 0..4u64 {
            let mine: Vec<u64> = kept
                .iter()
                .filter_map(|e| match e {
                    MasterEvent::Liveness(LivenessEvent::StallDetected { ms, .. }) if ms / 10_000 == t => Some(*ms),
                    _ => None,
                })
                .collect();
            assert!(mine.windows(2).all(|w| w[0] < w[1]), "thread {t} out of order");
        }
    }
}
