//! MPSC batching queue: carries offboarding jobs from the producers (whoever calls
//! [`Executor::submit`](super::executor::Executor::submit): the master's tick handing on the jobs
//! its Offline commits mint, a snapshot restore, an embedder's monitor sink) to the one consumer,
//! which the executor's workers share behind a mutex held only for a `pop_batch`. A failed job
//! does not come back through the queue: the executor parks it on its retry schedule
//! (`offboarding/schedule.rs`) until it is due.
//!
//! # What it is
//!
//! A thin protocol layer over crossbeam's lock-free [`SegQueue`]:
//! the jobs live in the `SegQueue`; this module adds what the offboarding executor needs and
//! `SegQueue` does not have: a **capacity** (a push beyond it hands the job back as
//! [`PushError::Full`]), a **close** (later pushes hand the job back as [`PushError::Closed`]),
//! an exact **drain on shutdown** ([`Consumer::drain_after_close`]: every job accepted before the
//! close, none lost), **batching** ([`Consumer::pop_batch`]: one atomic operation per batch for
//! the count) and a **single consumer** by type (`Consumer` is not `Clone`).
//!
//! Until this release the jobs went through a home-made Vyukov node-based list (one heap node
//! per job, freed by the consumer). `BENCHMARKS.md` measured it 1.16–3.2× slower per job than
//! `SegQueue` on the same 2-producer / 1-batching-consumer run: a node allocation per push and a
//! cross-thread free per pop, against `SegQueue`'s blocks of 31 slots. Making ours faster would
//! have meant rebuilding `SegQueue` (block allocation, per-slot ready bits), so it went: the
//! design asks for *a* lock-free MPSC batching queue, not a home-made one.
//!
//! # The state word
//!
//! One `CachePadded<AtomicUsize>` bounds the queue and records the close:
//!
//! ```text
//!   bit:   usize::BITS - 1 ....................... 1 | 0
//!          count: slots reserved and not yet popped  | CLOSED
//! ```
//!
//! The count moves in units of `ONE`; [`MAX_CAPACITY`] keeps it from reaching the top bit.
//! A push increments it (by CAS) *before* it pushes into the `SegQueue`, the consumer
//! decrements it *after* it has taken the values (once per batch), so `count >= jobs in the
//! SegQueue` at all times.
//!
//! **The in-flight state.** Between a producer's reservation and its `SegQueue::push`, the job
//! is counted but cannot be popped. [`Consumer::pop`] and [`Consumer::pop_batch`] then may
//! return `None`/`0` while [`Consumer::len`] still counts the job; [`Consumer::pop_wait`] and
//! [`Consumer::drain_after_close`] tell that state from an empty queue by the count and snooze
//! until the producer has pushed.
//!
//! **Lazy release.** The consumer gives slots back in bulk: it owes them (a consumer-local
//! count) until it owes `(capacity / 64).clamp(1, 64)` or finds the queue empty, then gives all
//! back with one `fetch_sub`. A decrement per job would make the consumer write the state word
//! that every push CASes, once per job. So a push may see `Full` while up to 63 popped slots are
//! still owed (none for a capacity below 128; at most 1/64 of any capacity), and
//! [`Producer::len`] may count them; [`Consumer::len`] subtracts them. `pop_wait`,
//! `drain_after_close` and dropping the consumer give every owed slot back before they read or
//! leave the count, so the drain stays exact.
//!
//! # Ground rules
//!
//! | field | written by | read by |
//! |---|---|---|
//! | `state` | producers' reserving CAS (+`ONE`), `close` on either handle (sets `CLOSED`), the consumer giving slots back (−n·`ONE`) | everybody |
//! | `jobs` | producers (`push`, after reserving), the consumer (`pop`) | the consumer, `Drop` |
//!
//! The races, and what settles each:
//! 1. **close vs push**: one CAS on the state word. A push reserves by CAS and refuses if it reads
//!    `CLOSED`; `close` is a `fetch_or` on the same word. Both are read-modify-writes of one
//!    atomic, so they are totally ordered: a reservation is either before the close (accepted,
//!    and counted by every later read of the word) or after it (refused, value handed back).
//! 2. **push vs push**: `SegQueue`'s own tail CAS. It is linearizable, so one producer's pushes
//!    (sequential) stay in FIFO order.
//! 3. **push vs pop**: `SegQueue`'s publication (its slot write happens before the slot's
//!    `Release` ready bit, which `pop` reads with `Acquire`): a popped job is fully written.
//! 4. **full vs pop**: the consumer's decrement. It carries no data (the job already moved out),
//!    so a producer that still reads the old count merely sees `Full` a little longer.
//!
//! # Orderings
//!
//! The state word is `Relaxed` everywhere. It guards no memory (the jobs travel through the
//! `SegQueue`, race 3), and races 1 and 4 are settled by the modification order of that one
//! location: `drain_after_close` closes the queue itself with a read-modify-write, so every later
//! load of the consumer reads a count that includes every reservation made before the close
//! (read-read coherence).
//!
//! # Progress
//!
//! - `push` is lock-free: the reserving CAS fails only because another push, a pop or the close
//!   changed the word; `SegQueue::push` is lock-free (it allocates one block per 31 jobs).
//! - `pop`/`pop_batch` are lock-free, and may report an in-flight job as absent (above).
//! - `pop_wait` and `drain_after_close` *block* on an in-flight producer: a producer descheduled
//!   between its reservation and its push stalls them until it runs again. They take a
//!   `keep_waiting` closure (a spin budget, a deadline) so a caller can give up; whatever is
//!   left stays queued and is handed out by a later pop, or dropped with the queue.
//!
//! # Checked by
//!
//! `tests/offboarding_queue.rs` (crossbeam's ladder) and the loom models `loom_tests/queue_*.rs`,
//! named after the races above. loom cannot see inside crossbeam, so under `--cfg loom` the
//! `SegQueue` is replaced by a stand-in from `crate::sync` (a modelled mutex around a
//! `VecDeque`: the same linearizable push and pop). What the models explore is therefore *this*
//! module's protocol, on the real state word: close against push, the in-flight state against
//! `pop_wait` and the drain, the count against the capacity, no loss and no duplicate. The
//! `SegQueue` itself is crossbeam's to check (it is tested under loom and Miri there).
//!
//! # Example
//!
//! ```
//! use mooncake_liveness_core::offboarding::queue::{channel, PushError};
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

use crate::sync::{Arc, AtomicUsize, Backoff, CachePadded, Ordering, SegQueue};
use std::error::Error;
use std::fmt;

/// State word: the queue refuses new jobs.
const CLOSED: usize = 1;
/// State word: one reserved slot (the count sits above the `CLOSED` bit).
const ONE: usize = 1 << COUNT_SHIFT;
/// State word: the count's shift.
const COUNT_SHIFT: u32 = 1;
/// The most slots a consumer owes before it gives them back (module doc, "Lazy release").
const MAX_UNRELEASED: usize = 64;
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
    /// The queue holds `capacity` jobs (counting jobs being pushed, and up to 63 jobs the
    /// consumer took but has not given the slots of back yet: module doc, "Lazy release"). Transient: retry after the
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
    /// Jobs accepted before the close that were still being pushed when `keep_waiting` gave up
    /// (0 when the drain is complete). They stay queued: a later pop or drain returns them.
    pub pending: usize,
}

impl Drain {
    /// Whether every job accepted before the close has been handed out.
    pub fn is_complete(&self) -> bool {
        self.pending == 0
    }
}

/// What the handles share.
struct Shared<T> {
    /// `CLOSED` bit and reserved-slot count; written by every handle.
    state: CachePadded<AtomicUsize>,
    /// The jobs pushed and not yet popped.
    jobs: SegQueue<T>,
    /// At most this many jobs are reserved or queued.
    capacity: usize,
}

impl<T> Shared<T> {
    fn new(capacity: usize) -> Self {
        Self {
            state: CachePadded::new(AtomicUsize::new(0)),
            jobs: SegQueue::new(),
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
            // Relaxed: no data travels with the count (race 4).
            let prev = self.state.fetch_sub(n * ONE, Ordering::Relaxed);
            debug_assert!(count_of(prev) >= n, "released {n} slots of {}", count_of(prev));
        }
    }
}

impl<T> Drop for Shared<T> {
    fn drop(&mut self) {
        // `&mut self`: every handle is gone, so every push that reserved has pushed (a push holds
        // a handle until then); the `SegQueue` drops the jobs left in it, exactly once.
        debug_assert_eq!(
            self.jobs.len(),
            self.count(),
            "queue dropped with in-flight or miscounted jobs"
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
/// let (_producer, consumer) = mooncake_liveness_core::offboarding::queue::channel::<u32>(8);
/// let second = consumer.clone(); // error: `Consumer` is not `Clone`
/// let worker = std::thread::spawn(move || {
///     let mut consumer = consumer;
///     consumer.pop()
/// });
/// ```
///
/// ```
/// let (producer, consumer) = mooncake_liveness_core::offboarding::queue::channel::<u32>(8);
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
    /// Jobs taken whose slots are not given back yet (consumer-local; module doc, "Lazy
    /// release").
    unreleased: usize,
    /// Give slots back once this many are owed: `(capacity / 64).clamp(1, 64)`.
    release_every: usize,
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
    let consumer = Consumer {
        shared: shared.clone(),
        unreleased: 0,
        release_every: (capacity / 64).clamp(1, MAX_UNRELEASED),
    };
    (Producer { shared }, consumer)
}

impl<T> Producer<T> {
    /// Appends `value`, or hands it back: [`PushError::Closed`] after a close,
    /// [`PushError::Full`] while `capacity` jobs are reserved or queued.
    ///
    /// Lock-free (the reservation CAS, then `SegQueue::push`).
    pub fn push(&self, value: T) -> Result<(), PushError<T>> {
        let value = self.shared.reserve(value)?;
        self.shared.jobs.push(value);
        Ok(())
    }

    /// Jobs reserved or queued (including jobs being pushed); a snapshot. It may also count up
    /// to 63 jobs the consumer has already taken (module doc, "Lazy release").
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
    /// Moves the oldest pushed value out, without giving its slot back.
    fn take(&mut self) -> Option<T> {
        self.shared.jobs.pop()
    }

    /// Takes the oldest pushed job. Lock-free.
    ///
    /// `None` means empty *or* that the next job is in flight (its producer reserved a slot but
    /// has not pushed yet, see the module doc): [`Consumer::len`] may be non-zero. Use
    /// [`Consumer::pop_wait`] to wait for such a job.
    pub fn pop(&mut self) -> Option<T> {
        let value = self.take();
        self.owe(usize::from(value.is_some()), value.is_none());
        value
    }

    /// Records `taken` more slots owed; gives them all back once `release_every` are owed or
    /// when `found_empty` (so an idle consumer owes nothing).
    fn owe(&mut self, taken: usize, found_empty: bool) {
        self.unreleased += taken;
        if found_empty || self.unreleased >= self.release_every {
            self.shared.release(std::mem::take(&mut self.unreleased));
        }
    }

    /// Moves up to `max` jobs, oldest first, to the end of `out`; returns how many. Stops early at
    /// an empty queue or an in-flight job, like [`Consumer::pop`]. Gives the slots back with at
    /// most one atomic operation per batch (module doc, "Lazy release").
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
        self.owe(taken, taken < max);
        taken
    }

    /// As [`Consumer::pop`], but while the count says a job is reserved and none is reachable, it
    /// snoozes until the job is pushed instead of returning `None`. It returns `None` only when
    /// the count is 0 or `keep_waiting` returns `false` (asked once per snooze).
    ///
    /// Blocking: a reserved job is pushed only when its producer runs (module doc, "Progress").
    pub fn pop_wait(&mut self, mut keep_waiting: impl FnMut() -> bool) -> Option<T> {
        let backoff = Backoff::new();
        loop {
            if let Some(value) = self.pop() {
                return Some(value);
            }
            // `pop` found nothing, so it gave every owed slot back: the count is exact.
            if self.shared.count() == 0 || !keep_waiting() {
                return None;
            }
            backoff.snooze();
        }
    }

    /// Shutdown: closes the queue, then moves every job accepted before the close to `out`,
    /// oldest first, snoozing while producers that reserved a slot before the close finish
    /// pushing. `keep_waiting` is asked once per snooze (`|| true` waits as long as needed; a
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
            // Stops at an empty queue, so every owed slot is given back: the count is exact.
            drained += self.pop_batch(usize::MAX, out);
            let pending = self.shared.count();
            if pending == 0 || !keep_waiting() {
                return Drain { drained, pending };
            }
            backoff.snooze();
        }
    }

    /// Jobs reserved or queued (including jobs being pushed); a snapshot.
    pub fn len(&self) -> usize {
        self.shared.count() - self.unreleased
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
        self.shared.release(std::mem::take(&mut self.unreleased));
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
mod tests;
