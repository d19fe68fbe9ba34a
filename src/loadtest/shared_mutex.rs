//! `SharedMutex`: a reader-preferring shared/exclusive lock, standing in for Mooncake's
//! `std::shared_mutex` in the `upstream-main` design.
//!
//! # Why not `std::sync::RwLock` or `parking_lot::RwLock`
//! libstdc++'s `std::shared_mutex` is a `pthread_rwlock_t` with default attributes, which on
//! glibc is `PTHREAD_RWLOCK_PREFER_READER_NP`: a reader gets the lock whenever no *writer
//! holds* it, even while writers wait (writers can starve; `pthread_rwlockattr_setkind_np(3)`:
//! "This is the default"). Rust's `std::sync::RwLock` (futex,
//! writer-preferring) and `parking_lot::RwLock` (eventually fair: readers queue behind a
//! waiting writer) both behave differently, and the difference matters here: with a
//! writer-preferring lock a ReMount *waiting* for `client_mutex_` would already block every
//! Ping, making upstream look worse than it is. [`SharedMutex`] reproduces the glibc policy.
//!
//! # Ground rules
//! - `state` (readers holding, writer holding) is only touched under its own mutex; `changed`
//!   is notified whenever a release may let a waiter in. Readers wait only while a writer
//!   holds the lock; a writer waits while anyone holds it.

use std::sync::{Condvar, Mutex, MutexGuard};

/// A reader-preferring shared/exclusive lock (glibc's default `pthread_rwlock_t`, see the
/// module doc). Guards nothing itself: it orders sections.
#[derive(Debug, Default)]
pub struct SharedMutex {
    state: Mutex<LockState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct LockState {
    readers: usize,
    writer: bool,
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

    /// Takes the lock shared: waits only while a writer *holds* it.
    pub fn lock_shared(&self) -> SharedGuard<'_> {
        let mut s = self.state();
        while s.writer {
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.readers += 1;
        SharedGuard(self)
    }

    /// Takes the lock exclusively: waits until no reader and no writer holds it.
    pub fn lock(&self) -> ExclusiveGuard<'_> {
        let mut s = self.state();
        while s.writer || s.readers > 0 {
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.writer = true;
        ExclusiveGuard(self)
    }
}

impl Drop for SharedGuard<'_> {
    fn drop(&mut self) {
        let mut s = self.0.state();
        s.readers -= 1;
        if s.readers == 0 {
            self.0.changed.notify_all();
        }
    }
}

impl Drop for ExclusiveGuard<'_> {
    fn drop(&mut self) {
        self.0.state().writer = false;
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
        std::thread::sleep(Duration::from_millis(50));
        // glibc's default: a new reader is not queued behind the waiting writer.
        let second = m.lock_shared();
        drop(second);
        drop(first);
        writer.join().expect("writer");
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
