//! join-storm's ReMount requests, served by the data-plane workers — the harness's stand-in
//! for the master's RPC threads. Main's coro_rpc runs a handler to completion on the io thread
//! that read it, so a thread serving a ReMount serves nothing else until it returns (and, with
//! `--ping-thread shared`, no pings either); the storm's requests arrive together and queue
//! behind the threads.
//!
//! # Ground rules
//! - The script stamps the arrival and opens the queue once (`open`, `Release`, after the
//!   stamp); a worker claims request `i` with one `fetch_add` on `next` (each request is served
//!   exactly once; `next` may run past `len`, harmlessly) after seeing `open` (`Acquire`).
//! - A worker counts `done` (`Release`) when its ReMount returned; the script waits for
//!   `done == len` (`Acquire`), so it sees every failure recorded before.
//! - `failed` keeps the first failure's message (a mutex taken only on failure).

use crate::sync::{AtomicBool, AtomicUsize, Mutex, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// The storm's ReMount requests: clients `first .. first + len` of the run.
#[derive(Debug)]
pub(super) struct RemountQueue {
    first: usize,
    len: usize,
    open: AtomicBool,
    next: AtomicUsize,
    done: AtomicUsize,
    arrived: OnceLock<Instant>,
    failed: Mutex<Option<String>>,
}

impl RemountQueue {
    /// The requests of clients `first .. first + len` (not arrived yet).
    pub(super) fn new(first: usize, len: usize) -> Self {
        Self {
            first,
            len,
            open: AtomicBool::new(false),
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            arrived: OnceLock::new(),
            failed: Mutex::new(None),
        }
    }

    /// The joining clients.
    pub(super) fn clients(&self) -> std::ops::Range<usize> {
        self.first..self.first + self.len
    }

    /// Every request arrives now.
    pub(super) fn open(&self) {
        let _ = self.arrived.set(Instant::now());
        self.open.store(true, Ordering::Release);
    }

    /// The next request to serve (its client), if the storm has arrived and one is left.
    pub(super) fn claim(&self) -> Option<usize> {
        if !self.open.load(Ordering::Acquire) || self.next.load(Ordering::Relaxed) >= self.len {
            return None;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        (i < self.len).then_some(self.first + i)
    }

    /// When the requests arrived, while some are still unclaimed (`None` before the storm
    /// and once every request is claimed).
    pub(super) fn waiting_since(&self) -> Option<Instant> {
        if !self.open.load(Ordering::Acquire) || self.next.load(Ordering::Relaxed) >= self.len {
            return None;
        }
        self.arrived.get().copied()
    }

    /// When the requests arrived (the clients' latency counts from here).
    pub(super) fn arrived(&self) -> Instant {
        *self.arrived.get_or_init(Instant::now)
    }

    /// A claimed request returned with `result`.
    pub(super) fn finish(&self, result: Result<(), String>) {
        if let Err(e) = result {
            let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
            failed.get_or_insert(e);
        }
        self.done.fetch_add(1, Ordering::Release);
    }

    /// Every request has returned.
    pub(super) fn all_done(&self) -> bool {
        self.done.load(Ordering::Acquire) >= self.len
    }

    /// The first failure, if any.
    pub(super) fn failure(&self) -> Option<String> {
        self.failed.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_is_claimed_once_and_only_after_arrival() {
        let q = RemountQueue::new(10, 3);
        assert_eq!(q.claim(), None, "claimed before the storm arrived");
        q.open();
        let claimed: Vec<usize> = std::iter::from_fn(|| q.claim()).collect();
        assert_eq!(claimed, vec![10, 11, 12]);
        assert_eq!(q.claim(), None);
        assert!(!q.all_done());
        q.finish(Ok(()));
        q.finish(Err("boom".to_string()));
        q.finish(Err("later".to_string()));
        assert!(q.all_done());
        assert_eq!(q.failure().as_deref(), Some("boom"));
    }
}
