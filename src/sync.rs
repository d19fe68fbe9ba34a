//! The crate's one switch between `std` and `loom` synchronization.
//!
//! Ground rules:
//! - No other module names `std::sync::atomic`, `std::sync::Mutex`, `std::thread` or `loom`
//!   directly: everything that takes part in a race goes through here, so the loom models in
//!   `loom_tests/` explore the crate's own protocols (build with `RUSTFLAGS="--cfg loom"`).
//! - loom atomics have no `const fn new` and no `get_mut`; code that owns an atomic exclusively
//!   uses [`unsync_load`] instead, which is a plain load under std.
//! - Spin loops use [`Backoff`], which yields to the loom scheduler (loom's scheduler is
//!   deliberately unfair, so a bare spin would never let the other thread run).
//! - Memory shared through raw pointers sits in an [`UnsafeCell`] accessed only through
//!   `with`/`with_mut` (loom's API, mirrored on the std side), so loom checks each access.
//! - Read-mostly shared values (configuration, registry shards) live in an [`ArcCell`]:
//!   `arc_swap::ArcSwap` under std (lock-free, wait-free readers), a `loom` mutex around an `Arc`
//!   under loom, which cannot see inside arc-swap. The protocols built on top (copy-on-write
//!   publication under a writer lock) are the same on both sides.

#[cfg(not(loom))]
#[allow(unused_imports)]
mod imp {
    pub(crate) use std::sync::atomic::AtomicPtr;
    pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};

    /// `std::cell::UnsafeCell` with loom's access API (`with` / `with_mut`), so code that owns
    /// raw shared memory (the offboarding queue's nodes) reads the same under std and loom, and
    /// loom checks every access for causality (tokio's `loom/std/unsafe_cell.rs` shape).
    #[derive(Debug)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub(crate) const fn new(data: T) -> Self {
            Self(std::cell::UnsafeCell::new(data))
        }
        /// Runs `f` with a shared pointer to the contents (loom: a tracked read).
        #[inline(always)]
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }
        /// Runs `f` with a mutable pointer to the contents (loom: a tracked write).
        #[inline(always)]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
    pub(crate) use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};
    #[allow(unused_imports)]
    pub(crate) use std::thread;

    /// Wait-free-read cell holding an `Arc<T>` (arc-swap under std).
    #[derive(Debug)]
    pub(crate) struct ArcCell<T>(arc_swap::ArcSwap<T>);

    /// What [`ArcCell::load`] returns: derefs to `Arc<T>`.
    pub(crate) type ArcGuard<T> = arc_swap::Guard<Arc<T>>;

    impl<T> ArcCell<T> {
        pub(crate) fn new(value: Arc<T>) -> Self {
            Self(arc_swap::ArcSwap::new(value))
        }
        /// Lock-free read of the current value.
        pub(crate) fn load(&self) -> ArcGuard<T> {
            self.0.load()
        }
        /// A full `Arc` of the current value (one refcount increment).
        pub(crate) fn load_full(&self) -> Arc<T> {
            self.0.load_full()
        }
        /// Publishes `value`; readers see the old or the new `Arc`, never a mix.
        pub(crate) fn store(&self, value: Arc<T>) {
            self.0.store(value)
        }
    }
}

#[cfg(loom)]
#[allow(unused_imports)]
mod imp {
    pub(crate) use loom::cell::UnsafeCell;
    pub(crate) use loom::sync::atomic::AtomicPtr;
    pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
    pub(crate) use loom::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
    #[allow(unused_imports)]
    pub(crate) use loom::thread;
    pub(crate) use std::sync::Weak;

    /// loom stand-in for `arc_swap::ArcSwap`: a modelled mutex around an `Arc`.
    #[derive(Debug)]
    pub(crate) struct ArcCell<T>(loom::sync::Mutex<std::sync::Arc<T>>);

    /// What [`ArcCell::load`] returns under loom: a clone of the `Arc`.
    pub(crate) type ArcGuard<T> = std::sync::Arc<T>;

    impl<T> ArcCell<T> {
        pub(crate) fn new(value: std::sync::Arc<T>) -> Self {
            Self(loom::sync::Mutex::new(value))
        }
        pub(crate) fn load(&self) -> ArcGuard<T> {
            self.0.lock().unwrap().clone()
        }
        pub(crate) fn load_full(&self) -> std::sync::Arc<T> {
            self.0.lock().unwrap().clone()
        }
        pub(crate) fn store(&self, value: std::sync::Arc<T>) {
            *self.0.lock().unwrap() = value;
        }
    }
}

pub(crate) use imp::*;

/// `Arc` as used inside an [`ArcCell`]: always `std::sync::Arc` (arc-swap needs it, and the
/// loom stand-in stores one too), so values can move between the two without conversion.
/// Also the `Arc` of immutable shared values that take part in no race and must hash and
/// compare (client names: loom's `Arc` implements neither `Hash` nor `Eq`).
pub(crate) type CellArc<T> = std::sync::Arc<T>;

#[allow(unused_imports)]
pub(crate) use crossbeam_utils::CachePadded;

#[allow(dead_code)]
/// Reads an atomic the caller owns exclusively (`&mut`), without synchronization.
pub(crate) fn unsync_load(a: &mut AtomicU64) -> u64 {
    #[cfg(not(loom))]
    {
        *a.get_mut()
    }
    #[cfg(loom)]
    {
        a.with_mut(|v| *v)
    }
}

/// Exponential backoff for CAS retries and waits; yields to loom's scheduler under loom.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    #[cfg(not(loom))]
    inner: crossbeam_utils::Backoff,
}

impl Backoff {
    pub(crate) fn new() -> Self {
        Self::default()
    }
    /// After a failed CAS: another thread made progress, retry soon.
    pub(crate) fn spin(&self) {
        #[cfg(not(loom))]
        self.inner.spin();
        #[cfg(loom)]
        loom::thread::yield_now();
    }
    /// While waiting for another thread to act.
    #[allow(dead_code)]
    pub(crate) fn snooze(&self) {
        #[cfg(not(loom))]
        self.inner.snooze();
        #[cfg(loom)]
        loom::thread::yield_now();
    }
}
