//! `Gate`: how `mlv_core_free` shuts out the calls made through objects that outlive the core
//! (a pending `MlvMount` holds the core's state, so it can be committed after the free), and
//! waits for the ones already in progress.
//!
//! # Ground rules
//!
//! - One `AtomicU64`: bit 63 is "closed", the low bits count the passes in flight. Only
//!   [`Gate::enter`] (a pass), its [`Pass`]'s drop, and [`Gate::close`] write it.
//! - Everything that may run after the free and would change liveness state or call back
//!   (`mlv_mount_commit`) runs under a pass, callback included. `mlv_mount_abort` only reads
//!   [`Gate::is_closed`]: it changes nothing and calls nothing, so it needs no pass.
//! - `enter` adds a pass and looks at the word it replaced; if that word was closed it takes
//!   the pass back and refuses. `close` sets the closed bit, then waits until no pass is in
//!   flight. Both are read-modify-writes of the one word, so they are totally ordered: either
//!   the pass was added first (`close` sees it and waits for its drop) or the bit was set first
//!   (the pass is refused). Hence once `close` returns no pass is in flight and none will be
//!   granted: no commit and no callback runs after `mlv_core_free` returns.
//! - Orderings: a pass's drop is `Release` and `close`'s wait loads `Acquire`, so everything a
//!   pass did (the callback's writes included) happens before `close` returns, and before the
//!   caller frees `user_data`. `enter` is `Acquire` and `close`'s RMW `AcqRel`, so a refused
//!   pass sees the free's earlier writes (nothing depends on it today).
//! - What blocks what: `close` waits for the passes in flight (a commit and its `on_event`
//!   callback; bounded by the callback's length). `enter` and `is_closed` never block. A
//!   callback that frees its own core would wait for itself: the contract forbids it. Ping and
//!   the other calls on the core take no pass: the contract orders every one of them before
//!   the free, and the hot path stays one registry lookup and one CAS.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const CLOSED: u64 = 1 << 63;

/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    word: AtomicU64,
}

/// A pass through an open [`Gate`]: while it lives, `close` waits.
#[must_use]
pub(crate) struct Pass<'a> {
    gate: &'a Gate,
}

impl Gate {
    /// A pass, or `None` if the gate is closed.
    pub(crate) fn enter(&self) -> Option<Pass<'_>> {
        let before = self.word.fetch_add(1, Ordering::Acquire);
        if before & CLOSED != 0 {
            self.word.fetch_sub(1, Ordering::Release);
            return None;
        }
        Some(Pass { gate: self })
    }

    /// Has `close` begun?
    pub(crate) fn is_closed(&self) -> bool {
        self.word.load(Ordering::Acquire) & CLOSED != 0
    }

    /// Refuses every later pass and returns once no pass is in flight. Idempotent.
    pub(crate) fn close(&self) {
        self.word.fetch_or(CLOSED, Ordering::AcqRel);
        let mut spins = 0u32;
        while self.word.load(Ordering::Acquire) & !CLOSED != 0 {
            // A pass is a commit and its callback: usually microseconds, so yield first.
            if spins < 64 {
                spins += 1;
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        self.gate.word.fetch_sub(1, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn close_refuses_later_passes_and_waits_for_those_in_flight() {
        let gate = Gate::default();
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let pass = gate.enter().expect("open");
            let closer = s.spawn(|| {
                gate.close();
                assert!(done.load(Ordering::Relaxed), "close returned before the pass ended");
            });
            while !gate.is_closed() {
                std::thread::yield_now();
            }
            assert!(gate.enter().is_none(), "a pass granted after close began");
            std::thread::sleep(Duration::from_millis(20));
            done.store(true, Ordering::Relaxed);
            drop(pass);
            closer.join().unwrap();
        });
        assert!(gate.enter().is_none());
        gate.close(); // idempotent, returns at once
    }
}
