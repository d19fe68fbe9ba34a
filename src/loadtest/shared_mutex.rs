//! `SharedMutex`: glibc's default `pthread_rwlock_t` (reader-preferring, with explicit hand-over
//! to a waiting writer), standing in for Mooncake's `std::shared_mutex` in the `upstream-main`
//! design.
//!
//! # What glibc does (nptl/pthread_rwlock_common.c, the state table at its top)
//! libstdc++'s `std::shared_mutex` is a `pthread_rwlock_t` with default attributes, which on
//! glibc is `PTHREAD_RWLOCK_PREFER_READER_NP` (`pthread_rwlockattr_setkind_np(3)`: "This is the
//! default"). Its policy, reproduced here:
//! - **Readers join a read phase even while a writer waits** (state #4: readers hold the lock,
//!   a primary writer is registered): a waiting ReMount does not by itself block Ping.
//! - **The last reader to leave hands the lock to the waiting writer** (`rdunlock`: "if we are
//!   the last reader and there is a primary writer, we start a write phase"). A thread that
//!   unlocks and re-locks shared in a loop therefore does *not* keep a waiting writer out: as
//!   soon as the reader count touches zero, the write phase has begun and the next shared lock
//!   waits for the whole exclusive section.
//! - Readers arriving during a write phase register and wait; the writer's unlock starts a read
//!   phase for all of them (state #8 → #2) before the next writer can take the lock, which then
//!   waits for them to drain. Writers take turns through the writer-only lock (WL).
//!
//! # Why not `std::sync::RwLock` or `parking_lot::RwLock`
//! Rust's `std::sync::RwLock` (futex, writer-preferring) and `parking_lot::RwLock` (eventually
//! fair: readers queue behind a waiting writer) both behave differently, and the difference
//! matters: with a writer-preferring lock a ReMount *waiting* for `client_mutex_` would already
//! block every Ping, making upstream look worse than it is; with a lock that lets a re-locking
//! reader starve writers (no hand-over), a Ping thread would catch up on every client between
//! two ReMounts, making upstream look better than it is.
//!
//! # Ground rules
//! - The whole state lives under `state`'s mutex; `changed` is notified on every phase change.
//! - `readers` counts readers holding the lock *or registered and waiting in a write phase*
//!   (glibc's R). `primary` is WL: a writer holds it from the moment it is the one writer
//!   allowed to start the next write phase. `write_phase` is WP; the primary writer owns the lock
//!   exactly while `write_phase` is set.
//! - Hand-over: the reader that brings `readers` to 0 while `primary` is set starts the write
//!   phase on the writer's behalf; the writer's unlock clears both bits, which starts a read
//!   phase for every registered reader.

use std::sync::{Condvar, Mutex, MutexGuard};

/// glibc's default reader-preferring `pthread_rwlock_t` (see the module doc). Guards nothing
/// itself: it orders sections.
#[derive(Debug, Default)]
pub struct SharedMutex {
    state: Mutex<LockState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct LockState {
    /// Readers holding the lock or registered to (glibc's R).
    readers: usize,
    /// A primary writer exists (glibc's WL).
    primary: bool,
    /// The lock is in a write phase: the primary writer owns it (glibc's WP).
    write_phase: bool,
}

/// Holds a [`SharedMutex`] shared.
#[derive(Debug)]
pub struct SharedGuard<'a>(&'a SharedMutex);

/// Holds a [`SharedMutex`] exclusively.
#[derive(Debug)]
pub struct ExclusiveGuard<'a>(&'a SharedMutex);

impl SharedMutex {
    fn state(&self) -> MutexGuard<'_, LockState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(&self, s: MutexGuard<'a, LockState>) -> MutexGuard<'a, LockState> {
        self.changed.wait(s).unwrap_or_else(|e| e.into_inner())
    }

    /// Is a primary writer registered (waiting for, or holding, the lock)?
    #[cfg(test)]
    fn writer_registered(&self) -> bool {
        self.state().primary
    }

    /// Takes the lock shared: registers, then waits only while a write phase lasts.
    pub fn lock_shared(&self) -> SharedGuard<'_> {
        let mut s = self.state();
        s.readers += 1;
        while s.write_phase {
            s = self.wait(s);
        }
        SharedGuard(self)
    }

    /// Takes the lock exclusively: becomes the primary writer, then starts the write phase at
    /// once if no reader is registered, or waits for the last reader to hand it over.
    pub fn lock(&self) -> ExclusiveGuard<'_> {
        let mut s = self.state();
        while s.primary {
            s = self.wait(s);
        }
        s.primary = true;
        if s.readers == 0 {
            s.write_phase = true;
        }
        while !s.write_phase {
            s = self.wait(s);
        }
        ExclusiveGuard(self)
    }
}

impl Drop for SharedGuard<'_> {
    fn drop(&mut self) {
        let mut s = self.0.state();
        s.readers -= 1;
        if s.readers == 0 && s.primary {
            // Explicit hand-over to the waiting primary writer.
            s.write_phase = true;
            self.0.changed.notify_all();
        }
    }
}

impl Drop for ExclusiveGuard<'_> {
    fn drop(&mut self) {
        let mut s = self.0.state();
        s.primary = false;
        s.write_phase = false;
        // Registered readers now hold a read phase; the next writer must wait for them.
        self.0.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn readers_enter_while_a_writer_waits() {
        let m = Arc::new(SharedMutex::default());
        let first = m.lock_shared();
        let writer = {
            let m = m.clone();
            std::thread::spawn(move || drop(m.lock()))
        };
        until_writer_waits(&m);
        // glibc's default: a new reader is not queued behind the waiting writer.
        let second = m.lock_shared();
        drop(second);
        drop(first);
        writer.join().expect("writer");
    }

    /// Waits until a writer is registered as primary (the writer thread has reached `lock`).
    fn until_writer_waits(m: &SharedMutex) {
        while !m.writer_registered() {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn the_last_reader_hands_the_lock_to_a_waiting_writer() {
        // A reader that unlocks and re-locks at once must not keep a waiting writer out: glibc
        // starts the write phase in the last reader's unlock, so the re-lock waits for it.
        let m = Arc::new(SharedMutex::default());
        let held = m.lock_shared();
        let wrote = Arc::new(crate::sync::AtomicBool::new(false));
        let writer = {
            let (m, wrote) = (m.clone(), wrote.clone());
            std::thread::spawn(move || {
                let _w = m.lock();
                std::thread::sleep(Duration::from_millis(20));
                wrote.store(true, crate::sync::Ordering::Release);
            })
        };
        until_writer_waits(&m);
        drop(held);
        let again = m.lock_shared();
        assert!(
            wrote.load(crate::sync::Ordering::Acquire),
            "the re-lock overtook the writer"
        );
        drop(again);
        writer.join().expect("writer");
    }

    #[test]
    fn readers_registered_in_a_write_phase_go_before_the_next_writer() {
        let m = Arc::new(SharedMutex::default());
        let first = m.lock();
        let read = Arc::new(crate::sync::AtomicBool::new(false));
        let reader = {
            let (m, read) = (m.clone(), read.clone());
            std::thread::spawn(move || {
                let _r = m.lock_shared();
                std::thread::sleep(Duration::from_millis(20));
                read.store(true, crate::sync::Ordering::Release);
            })
        };
        while m.state().readers == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(first);
        let second = m.lock();
        assert!(
            read.load(crate::sync::Ordering::Acquire),
            "the next writer overtook a registered reader"
        );
        drop(second);
        reader.join().expect("reader");
    }

    #[test]
    fn a_writer_excludes_readers() {
        let m = Arc::new(SharedMutex::default());
        let w = m.lock();
        let entered = Arc::new(crate::sync::AtomicBool::new(false));
        let reader = {
            let (m, entered) = (m.clone(), entered.clone());
            std::thread::spawn(move || {
                let _r = m.lock_shared();
                entered.store(true, crate::sync::Ordering::Release);
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!entered.load(crate::sync::Ordering::Acquire));
        drop(w);
        reader.join().expect("reader");
        assert!(entered.load(crate::sync::Ordering::Acquire));
    }
}
