//! Lock-free MPSC batching queue: carries offboarding jobs from the producers (the monitor, the
//! executor re-queueing retries) to the one consumer (the background offboarding workers'
//! dispatcher).
//!
//! # Algorithm
//!
//! Dmitry Vyukov's *non-intrusive MPSC node-based queue*
//! (<https://www.1024cores.net/home/lock-free-algorithms/queues/non-intrusive-mpsc-node-based-queue>):
//! a singly linked list of heap nodes that always starts with a *stub* node whose value has
//! already been taken (or never existed).
//!
//! ```text
//!   head (consumer only)                                    tail (producers swap it)
//!     │                                                        │
//!     ▼                                                        ▼
//!   [stub] ──next──▶ [job 1] ──next──▶ [job 2] ──next──▶ [job 3] ──next──▶ null
//! ```
//!
//! - **push**: reserve a slot in the state word (below), allocate a node holding the value,
//!   `swap` it into `tail` (this fixes its place in the queue), then store it into the previous
//!   tail's `next` (this makes it reachable from `head`).
//! - **pop**: read `head.next`; if it is non-null, move the value out of that node, make it the
//!   new stub (`head = next`), free the old stub and give the slot back.
//!
//! **The in-flight state.** Between a producer's `swap` and its link, its node is the tail but is
//! not reachable from `head`, and neither is any node pushed after it (Vyukov: "the consumer is
//! blocked"). [`Consumer::pop`] and [`Consumer::pop_batch`] then stop early and may return
//! `None`/`0` while [`Consumer::len`] still counts the job. [`Consumer::pop_wait`] and
//! [`Consumer::drain_after_close`] tell that state from an empty queue by the count and snooze
//! until the producer links its node.
//!
//! # The state word
//!
//! One `CachePadded<AtomicUsize>` bounds the memory and records the close:
//!
//! ```text
//!   bit:   usize::BITS - 1 ....................... 1 | 0
//!          count: slots reserved and not yet popped  | CLOSED
//! ```
//!
//! The count moves in units of `ONE`; [`MAX_CAPACITY`] keeps it from reaching the top bit.
//! A push increments it *before* it allocates, the consumer decrements it *after* it has taken
//! the values (once per batch), so `count >= nodes holding a value` at all times: at most
//! `capacity + 1` nodes (the stub included) are ever allocated.
//!
//! # Ground rules
//!
//! | field | written by | read by |
//! |---|---|---|
//! | `state` | producers' reserving CAS (+`ONE`), `close` on either handle (sets `CLOSED`), the consumer after popping (−n·`ONE`) | everybody |
//! | `tail` | producers (`swap`) | producers |
//! | `node.next` | once, null → node, by the one producer whose `swap` returned that node | the consumer, `Drop` |
//! | `node.value` | the producer that created the node, before publishing it | the consumer, once (moves it out), or `Drop` |
//! | `head` | the consumer | the consumer, `Drop` |
//!
//! The races, and what settles each:
//! 1. **close vs push**: one CAS on the state word. A push reserves by CAS and refuses if it reads
//!    `CLOSED`; `close` is a `fetch_or` on the same word. Both are read-modify-writes of one
//!    atomic, so they are totally ordered: a reservation is either before the close (accepted,
//!    and counted by every later read of the word) or after it (refused, value handed back).
//! 2. **push vs push**: the `swap` on `tail`. Its modification order is the queue order, and it
//!    hands each previous tail to exactly one producer, the only thread that will write its
//!    `next`. One producer's pushes are sequential, so each producer's jobs stay in FIFO order.
//! 3. **push vs pop**: the `Release` link and the consumer's `Acquire` load of `next`. A node is
//!    visible to the consumer only once linked, and its value is published by that same edge.
//! 4. **pop vs free**: only the consumer frees, and only the old stub, after reading its non-null
//!    `next`: the one producer that ever writes that node has done so (its store was the last
//!    access), and `tail` has moved past it, so no other thread can reach it.
//! 5. **full vs pop**: the consumer's decrement. It carries no data (a push allocates a fresh
//!    node), so a producer that still reads the old count merely sees `Full` a little longer.
//!
//! # Orderings
//!
//! - `tail.swap(AcqRel)`: *Release* publishes the new node's initialisation (`next = null`) to
//!   the producer that will swap next and write that `next`; *Acquire* makes the previous tail's
//!   initialisation happen before our store into its `next`. The stub is published by the `Arc`
//!   that shares the queue.
//! - `prev.next.store(Release)` / `head.next.load(Acquire)`: publishes the node and its value to
//!   the consumer (race 3), and orders the producer's last access to `prev` before the consumer
//!   frees it (race 4).
//! - The state word is `Relaxed` everywhere. It guards no memory (rule 5), and races 1 and 5 are
//!   settled by the modification order of that one location: `drain_after_close` closes the
//!   queue itself with a read-modify-write, so every later load of the consumer reads a count
//!   that includes every reservation made before the close (read-read coherence).
//!
//! # Progress
//!
//! - `push` is lock-free: the reserving CAS fails only because another push, a pop or the close
//!   changed the word. The link is wait-free (one `swap`, one `store`) apart from the allocation.
//! - `pop`/`pop_batch` are wait-free, and may report an in-flight job as absent (above).
//! - `pop_wait` and `drain_after_close` *block* on an in-flight producer: a producer descheduled
//!   between its `swap` and its link stalls them until it runs again. They take a
//!   `keep_waiting` closure (a spin budget, a deadline) so a caller can give up; whatever is
//!   left stays queued and is handed out by a later pop, or dropped with the queue.
//!
//! # Checked by
//!
//! `tests/offboarding_queue.rs` (crossbeam's ladder; also passes under Miri) and the loom models
//! `loom_tests/queue_*.rs`, named after the races above. Weakening any one of the three
//! non-`Relaxed` orderings (the `AcqRel` swap, the `Release` link, the `Acquire` load) makes
//! loom report a causality violation in those models.
//!
//! # Example
//!
//! ```
//! use mooncake_liveness::offboarding::queue::{channel, PushError};
//!
//! let (producer, mut consumer) = channel::<u32>(2);
//! producer.push(1).unwrap();
//! let retries = producer.clone();
//! std::thread::spawn(move || retries.push(2).unwrap()).join().unwrap();
//!
//! // Full: the job comes back.
//! assert!(matches!(producer.push(3), Err(PushError::Full(3))));
//!
//! let mut batch = Vec::new();
//! assert_eq!(consumer.pop_batch(64, &mut batch), 2);
//! assert_eq!(batch, [1, 2]);
//!
//! // Shutdown: refuse new jobs, then take everything accepted before the close.
//! producer.push(4).unwrap();
//! let drain = consumer.drain_after_close(&mut batch, || true);
//! assert!(drain.is_complete());
//! assert_eq!(batch, [1, 2, 4]);
//! assert_eq!(producer.push(5).unwrap_err().into_inner(), 5);
//! ```

use crate::sync::{Arc, AtomicPtr, AtomicUsize, Backoff, CachePadded, Ordering, UnsafeCell};
use std::error::Error;
use std::fmt;
use std::mem::MaybeUninit;
use std::ptr;

/// State word: the queue refuses new jobs.
const CLOSED: usize = 1;
/// State word: one reserved slot (the count sits above the `CLOSED` bit).
const ONE: usize = 1 << COUNT_SHIFT;
/// State word: the count's shift.
const COUNT_SHIFT: u32 = 1;
/// The largest capacity [`channel`] accepts: the count must fit above the `CLOSED` bit.
pub const MAX_CAPACITY: usize = usize::MAX >> COUNT_SHIFT;

/// Slots reserved and not yet popped, from a state word.
const fn count_of(state: usize) -> usize {
    state >> COUNT_SHIFT
}

/// Why [`Producer::push`] refused a job; the job is inside, never dropped.
///
/// Like crossbeam's `TrySendError`, it is `Debug` and `Display` for any `T` (the job is shown as
/// `..`), so a refusal can be logged or `?`-propagated without `T: Debug`.
#[non_exhaustive]
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum PushError<T> {
    /// The queue holds `capacity` jobs (counting jobs being linked). Transient: retry after the
    /// consumer catches up, or back off and keep the job.
    Full(T),
    /// The queue was closed (shutdown, or the consumer was dropped). Permanent: the caller keeps
    /// the job and must offboard it by other means (or persist it for the next start).
    Closed(T),
}

impl<T> PushError<T> {
    /// The job that was refused.
    pub fn into_inner(self) -> T {
        match self {
            Self::Full(value) | Self::Closed(value) => value,
        }
    }

    /// Whether the queue was full (transient).
    pub fn is_full(&self) -> bool {
        matches!(self, Self::Full(_))
    }

    /// Whether the queue was closed (permanent).
    pub fn is_closed(&self) -> bool {
        matches!(self, Self::Closed(_))
    }
}

impl<T> fmt::Debug for PushError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str("Full(..)"),
            Self::Closed(_) => f.write_str("Closed(..)"),
        }
    }
}

impl<T> fmt::Display for PushError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str("pushing to a full offboarding queue"),
            Self::Closed(_) => f.write_str("pushing to a closed offboarding queue"),
        }
    }
}

impl<T> Error for PushError<T> {}

/// What [`Consumer::drain_after_close`] did.
#[must_use]
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drain {
    /// Jobs this call moved into `out`.
    pub drained: usize,
    /// Jobs accepted before the close that were still being linked when `keep_waiting` gave up
    /// (0 when the drain is complete). They stay queued: a later pop or drain returns them.
    pub pending: usize,
}

impl Drain {
    /// Whether every job accepted before the close has been handed out.
    pub fn is_complete(&self) -> bool {
        self.pending == 0
    }
}

/// One list node: the stub, or a job waiting for the consumer.
struct Node<T> {
    /// The next node; null until the producer that swapped this node out of `tail` links it.
    next: AtomicPtr<Node<T>>,
    /// Initialised in every node except the stub; moved out when the node becomes the stub.
    value: UnsafeCell<MaybeUninit<T>>,
}

impl<T> Node<T> {
    /// A heap node owned by the caller until it is published.
    fn alloc(value: MaybeUninit<T>) -> *mut Self {
        Box::into_raw(Box::new(Self {
            next: AtomicPtr::new(ptr::null_mut()),
            value: UnsafeCell::new(value),
        }))
    }
}

/// What the handles share.
struct Shared<T> {
    /// `CLOSED` bit and reserved-slot count; written by every handle.
    state: CachePadded<AtomicUsize>,
    /// The last node; swapped by producers, never null.
    tail: CachePadded<AtomicPtr<Node<T>>>,
    /// The stub; read and written by the consumer only (and `Drop`), never null.
    head: CachePadded<UnsafeCell<*mut Node<T>>>,
    /// At most this many jobs are reserved or queued.
    capacity: usize,
}

// SAFETY: `Shared` is `Send` and `Sync` when `T: Send`, because:
//  [1] values only move through it (producer → node → consumer, or into `Drop`), never shared
//      by reference, so `T: Sync` is not needed (crossbeam's `SegQueue` has the same bounds);
//  [2] the raw pointers it holds point to nodes it owns, reached under the rules of the
//      module doc: `tail` and `next` are atomics, and `head` and the values are touched by
//      one thread at a time (the single consumer, or `Drop` with exclusive access).
unsafe impl<T: Send> Send for Shared<T> {}
// SAFETY: see the `Send` impl above.
unsafe impl<T: Send> Sync for Shared<T> {}

impl<T> Shared<T> {
    fn new(capacity: usize) -> Self {
        let stub = Node::alloc(MaybeUninit::uninit());
        Self {
            state: CachePadded::new(AtomicUsize::new(0)),
            tail: CachePadded::new(AtomicPtr::new(stub)),
            head: CachePadded::new(UnsafeCell::new(stub)),
            capacity,
        }
    }

    /// Reserved-and-unpopped count. `Relaxed`: the word carries no data (module doc).
    fn count(&self) -> usize {
        count_of(self.state.load(Ordering::Relaxed))
    }

    fn is_closed(&self) -> bool {
        self.state.load(Ordering::Relaxed) & CLOSED != 0
    }

    /// Sets `CLOSED`; whether this call did. `Relaxed`: the read-modify-write alone orders it
    /// against every reservation (race 1).
    fn close(&self) -> bool {
        self.state.fetch_or(CLOSED, Ordering::Relaxed) & CLOSED == 0
    }

    /// Reserves one slot, or hands `value` back.
    fn reserve(&self, value: T) -> Result<T, PushError<T>> {
        let backoff = Backoff::new();
        // Relaxed: a stale value only makes the CAS fail and retry.
        let mut state = self.state.load(Ordering::Relaxed);
        loop {
            if state & CLOSED != 0 {
                return Err(PushError::Closed(value));
            }
            if count_of(state) >= self.capacity {
                return Err(PushError::Full(value));
            }
            // Relaxed: the reservation guards no memory; its place in the word's modification
            // order (before or after the close) is all race 1 needs.
            match self
                .state
                .compare_exchange_weak(state, state + ONE, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Ok(value),
                Err(actual) => {
                    state = actual;
                    backoff.spin();
                }
            }
        }
    }

    /// Gives back `n` slots after the consumer took `n` values.
    fn release(&self, n: usize) {
        if n > 0 {
            // Relaxed: no data travels with the count (race 5).
            let prev = self.state.fetch_sub(n * ONE, Ordering::Relaxed);
            debug_assert!(count_of(prev) >= n, "released {n} slots of {}", count_of(prev));
        }
    }

    /// Appends a node holding `value`, for which a slot is reserved.
    fn link(&self, value: T) {
        let node = Node::alloc(MaybeUninit::new(value));
        // AcqRel: Release publishes `node`'s initialisation to the producer that swaps next and
        // will write `node.next`; Acquire orders `prev`'s initialisation before our store.
        let prev = self.tail.swap(node, Ordering::AcqRel);
        // SAFETY: the store below is valid because:
        //  [1] `prev` is non-null: `tail` starts at the stub and is only ever swapped to fresh
        //      nodes.
        //  [2] `prev` is still allocated: the consumer frees a node only after loading a
        //      non-null `next` from it, and only the one producer whose swap returned `prev`
        //      (this one, by [3]) stores that `next`.
        //  [3] Our swap read `prev` from `tail` and replaced it, so no other swap returns it.
        //  [4] `prev`'s initialisation happens before this store: our swap read the value that
        //      `prev`'s own producer released with its swap (or the stub, shared by the `Arc`).
        // Release: publishes `node` and its value to the consumer's Acquire load (race 3), and
        // orders this, our last access to `prev`, before the consumer frees it (race 4).
        unsafe { (*prev).next.store(node, Ordering::Release) };
    }
}

impl<T> Drop for Shared<T> {
    fn drop(&mut self) {
        // `&mut self`: every handle is gone, so every push has linked its node (a push holds a
        // handle until its store), and no other thread can touch the list.
        let mut node = self.head.with(|head| {
            // SAFETY: [1] `head` is only accessed by the consumer or here, and we have `&mut`.
            unsafe { *head }
        });
        let mut dropped = 0;
        let mut is_stub = true;
        while !node.is_null() {
            // SAFETY: reclaiming `node` is valid because:
            //  [1] every node from the stub on was made by `Node::alloc` (`Box::into_raw`) and
            //      is reachable from `head` exactly once (each `next` is stored once);
            //  [2] nodes before the stub were freed by the consumer and are not reachable;
            //  [3] no other thread exists that could still access it (`&mut self` above).
            let boxed = unsafe { Box::from_raw(node) };
            // Relaxed: exclusive access, synchronized by the `Arc` that dropped us.
            node = boxed.next.load(Ordering::Relaxed);
            if !is_stub {
                boxed.value.with_mut(|value| {
                    // SAFETY: [1] a non-stub node's value is initialised by `link` and moved
                    // out only when the node becomes the stub; [2] `boxed` is freed right
                    // after, so the value is dropped exactly once.
                    unsafe { (*value).assume_init_drop() }
                });
                dropped += 1;
            }
            is_stub = false;
        }
        debug_assert_eq!(
            dropped,
            self.count(),
            "queue dropped with in-flight or miscounted nodes"
        );
    }
}

/// The sending half: cheap to clone, shared by the monitor and the executor's retry path.
///
/// Dropping producers does not close the queue; [`Producer::close`] or dropping the
/// [`Consumer`] does.
pub struct Producer<T> {
    shared: Arc<Shared<T>>,
}

/// The receiving half: exactly one per queue, moved to the thread that dispatches jobs.
///
/// It is `Send` but not `Clone`, so the single-consumer rule is a type rule:
///
/// ```compile_fail
/// let (_producer, consumer) = mooncake_liveness::offboarding::queue::channel::<u32>(8);
/// let second = consumer.clone(); // error: `Consumer` is not `Clone`
/// let worker = std::thread::spawn(move || {
///     let mut consumer = consumer;
///     consumer.pop()
/// });
/// ```
///
/// ```
/// let (producer, consumer) = mooncake_liveness::offboarding::queue::channel::<u32>(8);
/// let second = producer.clone(); // producers clone freely
/// second.push(1).unwrap();
/// let worker = std::thread::spawn(move || {
///     let mut consumer = consumer; // the one consumer moves to its thread
///     consumer.pop()
/// });
/// assert_eq!(worker.join().unwrap(), Some(1));
/// ```
///
/// Dropping the consumer closes the queue: later pushes get their job back as
/// [`PushError::Closed`]. Jobs still queued are dropped (exactly once) when the last handle
/// goes, so a shutdown that must not lose jobs calls [`Consumer::drain_after_close`] first.
pub struct Consumer<T> {
    shared: Arc<Shared<T>>,
}

/// A queue of at most `capacity` jobs: the [`Producer`] (clone it for every producer) and the
/// one [`Consumer`].
///
/// # Panics
///
/// If `capacity` is 0 or above [`MAX_CAPACITY`].
pub fn channel<T: Send>(capacity: usize) -> (Producer<T>, Consumer<T>) {
    assert!(
        (1..=MAX_CAPACITY).contains(&capacity),
        "queue capacity {capacity} outside 1..={MAX_CAPACITY}"
    );
    let shared = Arc::new(Shared::new(capacity));
    (Producer { shared: shared.clone() }, Consumer { shared })
}

impl<T> Producer<T> {
    /// Appends `value`, or hands it back: [`PushError::Closed`] after a close,
    /// [`PushError::Full`] while `capacity` jobs are reserved or queued.
    ///
    /// Lock-free (the reservation CAS), then wait-free apart from one allocation.
    pub fn push(&self, value: T) -> Result<(), PushError<T>> {
        let value = self.shared.reserve(value)?;
        self.shared.link(value);
        Ok(())
    }

    /// Jobs reserved or queued (including jobs being linked); a snapshot.
    pub fn len(&self) -> usize {
        self.shared.count()
    }

    /// Whether [`Producer::len`] is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The queue's capacity.
    pub fn capacity(&self) -> usize {
        self.shared.capacity
    }

    /// Whether the queue refuses new jobs.
    pub fn is_closed(&self) -> bool {
        self.shared.is_closed()
    }

    /// Refuses every later push; jobs already accepted stay queued for the consumer. Returns
    /// whether this call closed the queue.
    pub fn close(&self) -> bool {
        self.shared.close()
    }
}

impl<T> Clone for Producer<T> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl<T> fmt::Debug for Producer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_handle("Producer", &self.shared, f)
    }
}

impl<T> Consumer<T> {
    /// Moves the next reachable value out of the list, without giving its slot back.
    fn take(&mut self) -> Option<T> {
        let shared = &*self.shared;
        let head = shared.head.with(|head| {
            // SAFETY: [1] only the consumer (we hold `&mut` to the only one) and `Drop` access
            // `head`, and `Drop` cannot run while we hold an `Arc`.
            unsafe { *head }
        });
        // SAFETY: [1] `head` is non-null and allocated: it is the stub, which only this
        // consumer frees, and only after moving `head` past it (below).
        // Acquire: pairs with the producer's Release link (race 3).
        let next = unsafe { (*head).next.load(Ordering::Acquire) };
        if next.is_null() {
            return None; // empty, or the next job is in flight
        }
        // SAFETY: moving the value out is valid because:
        //  [1] `next` is allocated: it is linked after `head`, and only this consumer frees
        //      nodes, each after moving `head` past it;
        //  [2] `next` is a non-stub node, so its value is initialised (`link`);
        //  [3] that initialisation happens before this read: it precedes the producer's Release
        //      link, which our Acquire load read;
        //  [4] it is read once: `next` becomes the stub below, and a stub's value is never read
        //      or dropped again.
        let value = unsafe { (*next).value.with_mut(|value| (*value).assume_init_read()) };
        shared.head.with_mut(|slot| {
            // SAFETY: as for the read of `head` above.
            unsafe { *slot = next }
        });
        // SAFETY: freeing the old stub is valid because:
        //  [1] it came from `Node::alloc` and is freed once (it is no longer `head`);
        //  [2] no producer can access it: the one that wrote its `next` did so last (its store
        //      happens before our Acquire load), and `tail` has moved past it;
        //  [3] its value is uninitialised or was already moved out, so nothing is dropped.
        drop(unsafe { Box::from_raw(head) });
        Some(value)
    }

    /// Takes the oldest reachable job. Wait-free.
    ///
    /// `None` means empty *or* that the next job is in flight (its producer swapped the tail but
    /// has not linked it yet, see the module doc): [`Consumer::len`] may be non-zero. Use
    /// [`Consumer::pop_wait`] to wait for such a job.
    pub fn pop(&mut self) -> Option<T> {
        let value = self.take();
        if value.is_some() {
            self.shared.release(1);
        }
        value
    }

    /// Moves up to `max` jobs, oldest first, to the end of `out`; returns how many. Stops early at
    /// an empty queue or an in-flight job, like [`Consumer::pop`]. Gives the slots back with one
    /// atomic operation per batch.
    pub fn pop_batch(&mut self, max: usize, out: &mut Vec<T>) -> usize {
        let mut taken = 0;
        while taken < max {
            match self.take() {
                Some(value) => {
                    out.push(value);
                    taken += 1;
                }
                None => break,
            }
        }
        self.shared.release(taken);
        taken
    }

    /// As [`Consumer::pop`], but while the count says a job is reserved and none is reachable, it
    /// snoozes until the job is linked instead of returning `None`. It returns `None` only when
    /// the count is 0 or `keep_waiting` returns `false` (asked once per snooze).
    ///
    /// Blocking: a reserved job is linked only when its producer runs (module doc, "Progress").
    pub fn pop_wait(&mut self, mut keep_waiting: impl FnMut() -> bool) -> Option<T> {
        let backoff = Backoff::new();
        loop {
            if let Some(value) = self.pop() {
                return Some(value);
            }
            if self.shared.count() == 0 || !keep_waiting() {
                return None;
            }
            backoff.snooze();
        }
    }

    /// Shutdown: closes the queue, then moves every job accepted before the close to `out`,
    /// oldest first, snoozing while producers that reserved a slot before the close finish
    /// linking. `keep_waiting` is asked once per snooze (`|| true` waits as long as needed; a
    /// spin budget or a deadline bounds the wait).
    ///
    /// A push either reserved before the close (its job ends up in `out`, or counted in
    /// [`Drain::pending`] if `keep_waiting` gave up) or got its job back as
    /// [`PushError::Closed`]: no job is lost.
    pub fn drain_after_close(&mut self, out: &mut Vec<T>, mut keep_waiting: impl FnMut() -> bool) -> Drain {
        // Our own read-modify-write: every later load of ours sees every reservation made
        // before the close (module doc, "Orderings"), so the count below is exact.
        self.shared.close();
        let backoff = Backoff::new();
        let mut drained = 0;
        loop {
            drained += self.pop_batch(usize::MAX, out);
            let pending = self.shared.count();
            if pending == 0 || !keep_waiting() {
                return Drain { drained, pending };
            }
            backoff.snooze();
        }
    }

    /// Jobs reserved or queued (including jobs being linked); a snapshot.
    pub fn len(&self) -> usize {
        self.shared.count()
    }

    /// Whether [`Consumer::len`] is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The queue's capacity.
    pub fn capacity(&self) -> usize {
        self.shared.capacity
    }

    /// Whether the queue refuses new jobs.
    pub fn is_closed(&self) -> bool {
        self.shared.is_closed()
    }

    /// Refuses every later push; queued jobs can still be popped. Returns whether this call
    /// closed the queue.
    pub fn close(&self) -> bool {
        self.shared.close()
    }
}

impl<T> Drop for Consumer<T> {
    fn drop(&mut self) {
        self.shared.close();
    }
}

impl<T> fmt::Debug for Consumer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_handle("Consumer", &self.shared, f)
    }
}

/// `Debug` for either handle, without `T: Debug`.
fn debug_handle<T>(name: &str, shared: &Shared<T>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.debug_struct(name)
        .field("len", &shared.count())
        .field("capacity", &shared.capacity)
        .field("closed", &shared.is_closed())
        .finish_non_exhaustive()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn state_word_layout() {
        // (state, count, closed)
        let table = [
            (0, 0, false),
            (CLOSED, 0, true),
            (ONE, 1, false),
            ((3 * ONE) | CLOSED, 3, true),
            (MAX_CAPACITY * ONE, MAX_CAPACITY, false),
            ((MAX_CAPACITY * ONE) | CLOSED, MAX_CAPACITY, true),
        ];
        for (state, count, closed) in table {
            assert_eq!(count_of(state), count, "count of {state:#x}");
            assert_eq!(state & CLOSED != 0, closed, "closed bit of {state:#x}");
        }
        assert_eq!(ONE, 2);
        assert_eq!((MAX_CAPACITY * ONE) | CLOSED, usize::MAX);
    }

    #[test]
    fn push_error_hands_back_and_formats_without_debug() {
        struct Opaque(u8);
        let full = PushError::Full(Opaque(1));
        assert!(full.is_full() && !full.is_closed());
        assert_eq!(
            format!("{full:?} / {full}"),
            "Full(..) / pushing to a full offboarding queue"
        );
        assert_eq!(full.into_inner().0, 1);
        let closed = PushError::Closed(Opaque(2));
        let boxed: Box<dyn Error> = Box::new(PushError::Closed(Opaque(3)));
        assert_eq!(boxed.to_string(), "pushing to a closed offboarding queue");
        assert_eq!(closed.into_inner().0, 2);
    }

    #[test]
    #[should_panic(expected = "capacity 0")]
    fn zero_capacity_panics() {
        let _ = channel::<u8>(0);
    }
}
