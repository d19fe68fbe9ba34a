//! The crate's one switch between `std` and `loom` synchronization.
//!
//! Ground rules:
//! - No other module names `std::sync::atomic`, `std::sync::Mutex`, `std::thread` or `loom`
//!   directly: everything that takes part in a race goes through here, so the loom models in
//!   `loom_tests/` explore the crate's own protocols (build with `RUSTFLAGS="--cfg loom"`).
//! - loom atomics have no `const fn new` and no `get_mut`; code that owns an atomic exclusively
//!   uses `unsync_load` instead, which is a plain load under std.
//! - Spin loops use `Backoff`, which yields to the loom scheduler (loom's scheduler is
//!   deliberately unfair, so a bare spin would never let the other thread run). A model-writing
//!   caveat: after a yield, loom never lets a load return a store the thread already read
//!   before the yield while a newer one exists (so that spins advance). A stale read after a
//!   failed CAS is therefore only explored for a value the thread has not read yet
//!   (`loom_tests/word_ping_vs_suspect.rs`, `ping_cas_lost_to_suspect_rereads_clock`).
//! - Threads that wait for time sleep through `sleep` and bound their waits with a
//!   `Deadline`: under loom (no clock) a sleep is a yield and a deadline counts the loop's own
//!   pauses, so no `Instant` decides a branch in a model.
//! - Memory shared through raw pointers sits in an `UnsafeCell` accessed only through
//!   `with`/`with_mut` (loom's API, mirrored on the std side), so loom checks each access.
//! - Packed words (the liveness word) live in a typed `Atomic<T>`: `atomic::Atomic<T>` under
//!   std (lock-free for the 8-byte `bytemuck::NoUninit` types we use; a const assert checks it),
//!   and under loom a shim over loom's `AtomicU64` with the same methods, converting through
//!   `bytemuck::cast`. A load returns the word type and a CAS takes it, so no code handles the
//!   word as a bare integer.
//! - Read-mostly shared values (configuration, registry shards) live in an `ArcCell`:
//!   `arc_swap::ArcSwap` under std (lock-free, wait-free readers), a `loom` mutex around an `Arc`
//!   under loom, which cannot see inside arc-swap. The protocols built on top (copy-on-write
//!   publication under a writer lock) are the same on both sides.

#[cfg(not(loom))]
#[allow(unused_imports)]
mod imp {
    pub use std::sync::atomic::AtomicPtr;
    pub use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};

    /// `std::cell::UnsafeCell` with loom's access API (`with` / `with_mut`), so code that owns
    /// raw shared memory (the offboarding queue's nodes) reads the same under std and loom, and
    /// loom checks every access for causality (tokio's `loom/std/unsafe_cell.rs` shape).
    #[derive(Debug)]
    #[allow(dead_code)] // unused since the offboarding queue moved onto `SegQueue`
    pub struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    #[allow(dead_code)]
    impl<T> UnsafeCell<T> {
        pub const fn new(data: T) -> Self {
            Self(std::cell::UnsafeCell::new(data))
        }
        /// Runs `f` with a shared pointer to the contents (loom: a tracked read).
        #[inline(always)]
        pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }
        /// Runs `f` with a mutable pointer to the contents (loom: a tracked write).
        #[inline(always)]
        pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
    pub use std::sync::{Arc, Weak};
    // Lock-order checking (issue 29): in every debug and test build each `Mutex`/`RwLock` of the
    // crate records which locks its thread held when it was taken, in one process-wide graph,
    // and an acquisition that would close a cycle panics at once, naming the cycle, even if the
    // deadlock itself never happens in that run. Release builds get std's types unchanged.
    #[allow(unused_imports)]
    pub use std::thread;
    pub use tracing_mutex::stdsync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

    /// Wait-free-read cell holding an `Arc<T>` (arc-swap under std).
    #[derive(Debug)]
    pub struct ArcCell<T>(arc_swap::ArcSwap<T>);

    /// What `ArcCell::load` returns: derefs to `Arc<T>`.
    pub type ArcGuard<T> = arc_swap::Guard<Arc<T>>;

    impl<T> ArcCell<T> {
        pub fn new(value: Arc<T>) -> Self {
            Self(arc_swap::ArcSwap::new(value))
        }
        /// Lock-free read of the current value.
        pub fn load(&self) -> ArcGuard<T> {
            self.0.load()
        }
        /// A full `Arc` of the current value (one refcount increment).
        pub fn load_full(&self) -> Arc<T> {
            self.0.load_full()
        }
        /// Publishes `value`; readers see the old or the new `Arc`, never a mix.
        pub fn store(&self, value: Arc<T>) {
            self.0.store(value)
        }
    }
}

#[cfg(loom)]
#[allow(unused_imports)]
mod imp {
    pub use loom::cell::UnsafeCell;
    pub use loom::sync::atomic::AtomicPtr;
    pub use loom::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
    pub use loom::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
    #[allow(unused_imports)]
    pub use loom::thread;
    pub use std::sync::Weak;

    /// loom stand-in for `arc_swap::ArcSwap`: a modelled mutex around an `Arc`.
    #[derive(Debug)]
    pub struct ArcCell<T>(loom::sync::Mutex<std::sync::Arc<T>>);

    /// What `ArcCell::load` returns under loom: a clone of the `Arc`.
    pub type ArcGuard<T> = std::sync::Arc<T>;

    impl<T> ArcCell<T> {
        pub fn new(value: std::sync::Arc<T>) -> Self {
            Self(loom::sync::Mutex::new(value))
        }
        pub fn load(&self) -> ArcGuard<T> {
            self.0.lock().unwrap().clone()
        }
        pub fn load_full(&self) -> std::sync::Arc<T> {
            self.0.lock().unwrap().clone()
        }
        pub fn store(&self, value: std::sync::Arc<T>) {
            *self.0.lock().unwrap() = value;
        }
    }
}

pub use imp::*;

/// A typed atomic for packed 64-bit words: `atomic::Atomic<T>` in normal builds.
#[cfg(not(loom))]
pub use atomic::Atomic;

/// loom stand-in for `atomic::Atomic<T>`: loom's `AtomicU64` carrying a `T` of the same size,
/// converted with `bytemuck::cast` (so `T` must be `Pod`: every bit pattern a valid `T`). Same
/// method names and signatures as the subset of `atomic::Atomic` the crate uses.
#[cfg(loom)]
#[derive(Debug)]
pub struct Atomic<T> {
    bits: loom::sync::atomic::AtomicU64,
    _type: std::marker::PhantomData<T>,
}

#[cfg(loom)]
#[allow(dead_code)]
impl<T: bytemuck::Pod> Atomic<T> {
    const SAME_SIZE: () = assert!(
        std::mem::size_of::<T>() == 8,
        "loom's Atomic<T> shim holds 8-byte words"
    );

    pub fn new(value: T) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::SAME_SIZE;
        Self {
            bits: loom::sync::atomic::AtomicU64::new(bytemuck::cast(value)),
            _type: std::marker::PhantomData,
        }
    }
    pub fn load(&self, order: Ordering) -> T {
        bytemuck::cast(self.bits.load(order))
    }
    pub fn store(&self, value: T, order: Ordering) {
        self.bits.store(bytemuck::cast(value), order)
    }
    pub fn compare_exchange(&self, current: T, new: T, success: Ordering, failure: Ordering) -> Result<T, T> {
        self.bits
            .compare_exchange(bytemuck::cast(current), bytemuck::cast(new), success, failure)
            .map(bytemuck::cast)
            .map_err(bytemuck::cast)
    }
    pub fn compare_exchange_weak(&self, current: T, new: T, success: Ordering, failure: Ordering) -> Result<T, T> {
        self.bits
            .compare_exchange_weak(bytemuck::cast(current), bytemuck::cast(new), success, failure)
            .map(bytemuck::cast)
            .map_err(bytemuck::cast)
    }
}

/// `Arc` as used inside an `ArcCell`: always `std::sync::Arc` (arc-swap needs it, and the
/// loom stand-in stores one too), so values can move between the two without conversion.
/// Also the `Arc` of immutable shared values that take part in no race and must hash and
/// compare (client names: loom's `Arc` implements neither `Hash` nor `Eq`).
pub type CellArc<T> = std::sync::Arc<T>;

#[allow(unused_imports)]
pub use crossbeam_utils::CachePadded;

/// Runs `a` on a scoped helper thread and `b` on the caller and returns both results (a panic
/// in `a` resumes on the caller). Under loom, runs `a` then `b` on the caller: the callers
/// (the restore's objects phase) split independent work, whose interleavings are not a protocol.
#[cfg(not(loom))]
pub fn join<A: Send, B>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B) -> (A, B) {
    std::thread::scope(|s| {
        let helper = s.spawn(a);
        let rb = b();
        let ra = helper.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (ra, rb)
    })
}

/// Under loom: `a` then `b`, on the caller (see the std version).
#[cfg(loom)]
pub fn join<A: Send, B>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B) -> (A, B) {
    let ra = a();
    (ra, b())
}

/// CPUs this process may run on (1 when unknown).
#[cfg(not(loom))]
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Under loom: 2, so that models take the two-thread paths (which `join` runs in order).
#[cfg(loom)]
pub fn cpus() -> usize {
    2
}

#[allow(dead_code)]
/// Reads an atomic the caller owns exclusively (`&mut`), without synchronization.
pub fn unsync_load(a: &mut AtomicU64) -> u64 {
    #[cfg(not(loom))]
    {
        *a.get_mut()
    }
    #[cfg(loom)]
    {
        a.with_mut(|v| *v)
    }
}

/// Asks the CPU to start loading the cache line holding `r` — a hint with no effect on what
/// the program computes (so nothing for loom to model). For loops that visit records scattered
/// over the heap one after another (the monitor's due entries): touching a few records ahead
/// lets their cache misses overlap instead of adding up.
#[inline(always)]
#[allow(unsafe_code)] // the one `_mm_prefetch` (`SAFETY` below)
pub fn prefetch<T>(r: &T) {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    // SAFETY: SSE is part of the x86_64 baseline, so the instruction exists on every target
    // this compiles for; `prefetcht0` never faults, whatever the address, and changes no state
    // the program can observe (only what the cache holds). `r` is a live reference anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(std::ptr::from_ref(r).cast::<i8>());
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom))))]
    let _ = r;
}

/// Sleeps `d` on a thread that is idle (a worker polling for work). Under loom, which has no
/// time, it yields to the scheduler instead, so that the other threads run (the same shape as
/// `Backoff::snooze`).
pub fn sleep(d: std::time::Duration) {
    #[cfg(not(loom))]
    std::thread::sleep(d);
    #[cfg(loom)]
    {
        let _ = d;
        loom::thread::yield_now();
    }
}

/// A wait bounded by a time limit: a loop polls its condition, `Deadline::passed` tells it when
/// to give up, and `Deadline::pause` waits a millisecond between polls (the offboarding
/// executor's shutdown drain).
///
/// Under std it is wall time: `passed` is `Instant::elapsed() >= limit`, `pause` sleeps 1 ms.
/// Under loom there is no time, and an `Instant` deciding a branch would make a model depend on
/// how fast the machine runs it; so the limit counts the pauses themselves, one per millisecond
/// (`pause` yields to the scheduler): a loop waits at most `limit` rounds, and every branch it
/// takes is decided by the model's own operations. A zero limit has passed at once in both.
#[derive(Debug)]
pub struct Deadline {
    #[cfg(not(loom))]
    start: std::time::Instant,
    #[cfg(not(loom))]
    limit: std::time::Duration,
    #[cfg(loom)]
    pauses_left: u128,
}

impl Deadline {
    /// A deadline `limit` from now.
    pub fn after(limit: std::time::Duration) -> Self {
        Self {
            #[cfg(not(loom))]
            start: std::time::Instant::now(),
            #[cfg(not(loom))]
            limit,
            #[cfg(loom)]
            pauses_left: limit.as_millis(),
        }
    }

    /// Has the limit passed (under loom: were `limit` milliseconds of pauses taken)?
    pub fn passed(&self) -> bool {
        #[cfg(not(loom))]
        {
            self.start.elapsed() >= self.limit
        }
        #[cfg(loom)]
        {
            self.pauses_left == 0
        }
    }

    /// Waits a millisecond before the next poll (under loom: yields, and counts it).
    pub fn pause(&mut self) {
        #[cfg(loom)]
        {
            self.pauses_left = self.pauses_left.saturating_sub(1);
        }
        sleep(std::time::Duration::from_millis(1));
    }
}

/// Exponential backoff for CAS retries and waits; yields to loom's scheduler under loom.
#[derive(Debug, Default)]
pub struct Backoff {
    #[cfg(not(loom))]
    inner: crossbeam_utils::Backoff,
}

impl Backoff {
    pub fn new() -> Self {
        Self::default()
    }
    /// After a failed CAS: another thread made progress, retry soon.
    pub fn spin(&self) {
        #[cfg(not(loom))]
        self.inner.spin();
        #[cfg(loom)]
        loom::thread::yield_now();
    }
    /// While waiting for another thread to act.
    #[allow(dead_code)]
    pub fn snooze(&self) {
        #[cfg(not(loom))]
        self.inner.snooze();
        #[cfg(loom)]
        loom::thread::yield_now();
    }
}

/// The offboarding queue's job store: crossbeam's lock-free `SegQueue` under std. loom cannot
/// see inside crossbeam, so under loom it is `loom_seg_queue::SegQueue`, a modelled mutex
/// around a `VecDeque` with the same linearizable `push`/`pop`: the loom models then explore the
/// queue module's own protocol (its state word) around it.
#[cfg(not(loom))]
pub use crossbeam_queue::SegQueue;
#[cfg(loom)]
pub use loom_seg_queue::SegQueue;

#[cfg(loom)]
mod loom_seg_queue {
    use std::collections::VecDeque;

    /// loom stand-in for `crossbeam_queue::SegQueue` (the subset the queue uses).
    #[derive(Debug)]
    pub struct SegQueue<T>(loom::sync::Mutex<VecDeque<T>>);

    impl<T> SegQueue<T> {
        pub fn new() -> Self {
            Self(loom::sync::Mutex::new(VecDeque::new()))
        }
        pub fn push(&self, value: T) {
            self.0.lock().unwrap().push_back(value);
        }
        pub fn pop(&self) -> Option<T> {
            self.0.lock().unwrap().pop_front()
        }
        pub fn len(&self) -> usize {
            self.0.lock().unwrap().len()
        }
    }
}
