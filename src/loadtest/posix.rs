//! The POSIX primitives the `upstream-main` design takes from the OS as upstream does, not as
//! models: [`PthreadRwLock`], a real glibc `pthread_rwlock_t` with default attributes — what
//! libstdc++'s `std::shared_mutex` is on Linux — for `client_mutex_` and `snapshot_mutex_`, and
//! [`fork_and_reap`], the `fork()` upstream's snapshot takes under `snapshot_mutex_`.
//!
//! The lock's reader/writer policy (glibc's default `PTHREAD_RWLOCK_PREFER_READER_NP`: readers
//! join a read phase even while a writer waits, the last reader out hands the lock to a waiting
//! writer, readers registered during a write phase go before the next writer;
//! `nptl/pthread_rwlock_common.c`) and the cost of a shared acquire (one atomic on the
//! uncontended path) are glibc's own.
//!
//! # Ground rules
//! - This is the only file of `loadtest` with `unsafe`; every block says why it is sound.
//! - The lock lives in a `Box` and is never moved after `pthread_rwlock_init` (POSIX leaves a
//!   moved or copied lock undefined); it is destroyed only in `Drop`, when no guard can exist
//!   (guards borrow the lock).
//! - A guard is released by the thread that took it (`SharedGuard`/`ExclusiveGuard` are
//!   `!Send`), as POSIX requires.
//! - A non-zero return from lock or unlock is a bug of the caller (`EDEADLK`: the thread
//!   already holds it exclusively; `EAGAIN`: too many readers): it panics naming the call.
//! - The forked child of this multi-threaded process calls nothing but `_exit` (async-signal
//!   safe), so it cannot touch a lock another thread held at the fork.

use std::cell::UnsafeCell;
use std::marker::PhantomData;

/// A glibc `pthread_rwlock_t` with default attributes. Guards nothing itself: it orders sections.
pub struct PthreadRwLock {
    lock: Box<UnsafeCell<libc::pthread_rwlock_t>>,
}

// SAFETY: a pthread rwlock is made to be shared between threads; all access goes through the
// pthread calls, which synchronise internally, and the lock itself never moves (boxed).
unsafe impl Send for PthreadRwLock {}
// SAFETY: as above: `&PthreadRwLock` only reaches the lock through the thread-safe pthread calls.
unsafe impl Sync for PthreadRwLock {}

impl std::fmt::Debug for PthreadRwLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PthreadRwLock")
    }
}

impl Default for PthreadRwLock {
    fn default() -> Self {
        Self::new()
    }
}

/// Holds a [`PthreadRwLock`] shared (`std::shared_lock`); released on drop, on this thread.
#[derive(Debug)]
pub struct SharedGuard<'a> {
    lock: &'a PthreadRwLock,
    _not_send: PhantomData<*const ()>,
}

/// Holds a [`PthreadRwLock`] exclusively (`std::unique_lock`); released on drop, on this thread.
#[derive(Debug)]
pub struct ExclusiveGuard<'a> {
    lock: &'a PthreadRwLock,
    _not_send: PhantomData<*const ()>,
}

fn check(rc: libc::c_int, call: &str) {
    assert!(rc == 0, "{call} failed with errno {rc}");
}

impl PthreadRwLock {
    /// A new, unlocked lock with default attributes (glibc: prefer readers).
    pub fn new() -> Self {
        // SAFETY: an all-zero `pthread_rwlock_t` is a valid value to hand to
        // `pthread_rwlock_init`, which overwrites it (it is glibc's static initializer, too).
        let lock = Box::new(UnsafeCell::new(unsafe { std::mem::zeroed::<libc::pthread_rwlock_t>() }));
        // SAFETY: `lock.get()` points to boxed storage that outlives this call and is not
        // shared yet; a null attribute pointer asks for the default attributes.
        check(
            unsafe { libc::pthread_rwlock_init(lock.get(), std::ptr::null()) },
            "pthread_rwlock_init",
        );
        Self { lock }
    }

    /// Takes the lock shared, waiting while a write phase lasts.
    pub fn lock_shared(&self) -> SharedGuard<'_> {
        // SAFETY: the lock was initialised in `new` and is not destroyed before `self` drops,
        // which the returned guard's borrow prevents until it is released.
        check(
            unsafe { libc::pthread_rwlock_rdlock(self.lock.get()) },
            "pthread_rwlock_rdlock",
        );
        SharedGuard {
            lock: self,
            _not_send: PhantomData,
        }
    }

    /// Takes the lock exclusively.
    pub fn lock(&self) -> ExclusiveGuard<'_> {
        // SAFETY: as in `lock_shared`.
        check(
            unsafe { libc::pthread_rwlock_wrlock(self.lock.get()) },
            "pthread_rwlock_wrlock",
        );
        ExclusiveGuard {
            lock: self,
            _not_send: PhantomData,
        }
    }

    fn unlock(&self) {
        // SAFETY: called only from a guard's drop, on the thread that took the lock, exactly
        // once per successful rdlock/wrlock.
        check(
            unsafe { libc::pthread_rwlock_unlock(self.lock.get()) },
            "pthread_rwlock_unlock",
        );
    }
}

impl Drop for SharedGuard<'_> {
    fn drop(&mut self) {
        self.lock.unlock();
    }
}

impl Drop for ExclusiveGuard<'_> {
    fn drop(&mut self) {
        self.lock.unlock();
    }
}

impl Drop for PthreadRwLock {
    fn drop(&mut self) {
        // SAFETY: `&mut self` proves no guard borrows the lock any more, so it is unlocked and
        // unused; it is destroyed once and its storage is freed right after.
        check(
            unsafe { libc::pthread_rwlock_destroy(self.lock.get()) },
            "pthread_rwlock_destroy",
        );
    }
}

/// Forks this process; the child exits at once (`_exit(0)`), the parent returns the child's
/// pid for [`reap`]. What it costs the parent is the fork itself: copying the page tables of
/// the whole process, the pause upstream's snapshot takes while it holds `snapshot_mutex_`.
pub(super) fn fork_and_reap() -> std::io::Result<libc::pid_t> {
    // SAFETY: `fork` is safe to call in a multi-threaded process as long as the child only
    // calls async-signal-safe functions; ours calls `_exit` and nothing else.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: in the child, `_exit` ends the process without running destructors, atexit
        // handlers or touching any lock copied from the parent.
        unsafe { libc::_exit(0) };
    }
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(pid)
}

/// Waits for the child [`fork_and_reap`] made, so it leaves no zombie.
pub(super) fn reap(pid: libc::pid_t) -> std::io::Result<()> {
    let mut status = 0;
    // SAFETY: `waitpid` on our own child with a valid out-pointer to a local.
    let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_forked_child_exits_and_is_reaped() {
        let pid = fork_and_reap().expect("fork");
        assert!(pid > 0);
        reap(pid).expect("waitpid");
    }

    #[test]
    fn readers_share_and_a_writer_excludes_them() {
        let m = Arc::new(PthreadRwLock::new());
        let a = m.lock_shared();
        let b = m.lock_shared();
        drop((a, b));
        let w = m.lock();
        let entered = Arc::new(AtomicBool::new(false));
        let reader = {
            let (m, entered) = (m.clone(), entered.clone());
            std::thread::spawn(move || {
                let _r = m.lock_shared();
                entered.store(true, Ordering::Release);
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!entered.load(Ordering::Acquire), "a reader entered a write phase");
        drop(w);
        reader.join().expect("reader");
        assert!(entered.load(Ordering::Acquire));
    }

    /// glibc's default kind prefers readers: a new reader is not queued behind a writer that
    /// waits for the current readers (libstdc++'s `std::shared_mutex` behaves the same).
    #[test]
    fn a_reader_joins_while_a_writer_waits() {
        let m = Arc::new(PthreadRwLock::new());
        let first = m.lock_shared();
        let waiting = Arc::new(AtomicUsize::new(0));
        let writer = {
            let (m, waiting) = (m.clone(), waiting.clone());
            std::thread::spawn(move || {
                waiting.store(1, Ordering::Release);
                drop(m.lock());
            })
        };
        while waiting.load(Ordering::Acquire) == 0 {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(20));
        // Would deadlock under a writer-preferring lock: the writer waits for `first`.
        let second = m.lock_shared();
        drop(second);
        drop(first);
        writer.join().expect("writer");
    }
}
