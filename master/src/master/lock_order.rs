//! The master's lock order, as code: every lock the master takes has a [`Level`], and in
//! debug and test builds each acquisition checks that it is taken above every lock its thread
//! already holds, panicking on the spot otherwise — whether or not the reverse order ever runs.
//!
//! Two checks run in debug and test builds, and they complement each other:
//! - this one knows the *intended* order (the table below, which the module doc of
//!   [`master`](super) shows and a test compares with it) and fails the first time any path
//!   takes a lock below one it holds, or two locks of one level at once (two shards, two
//!   leaves);
//! - `tracing-mutex` (switched in `core/src/sync.rs`) knows nothing of levels but sees every lock of
//!   the crate, the liveness core's included, and fails when acquisitions close a cycle.
//!
//! Ground rules:
//! - Every master lock is owned by one room (`rooms/`: `Membership`, `Data`, `Work`; `offboard/`: `Jobs`;
//!   the monitor by the core itself), private to it, and
//!   taken only through that room's methods: [`lock`] (leaves, the monitor, the
//!   pool, the stripes), `Shards::lock`, the segment table's accessors, the gate's accessors or
//!   `Segment::alloc`, each of which wraps its guard in a [`Held`]. The level comes from the
//!   guarded type ([`Ordered`], implemented beside the room that owns the lock), so a new lock
//!   cannot be added without choosing its level.
//! - The held levels are a per-thread list; a guard removes its own entry when dropped, in
//!   whatever order guards are dropped.
//! - Release builds and loom builds carry no list and check nothing (loom runs its model
//!   threads on one OS thread, so a thread-local list would mix them); `Held` is then the
//!   guard and a level, with no work on acquire or release.

use crate::sync::{Mutex, MutexGuard};
use std::ops::{Deref, DerefMut};

/// A lock's level: a thread may take a lock only above every lock it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    /// The monitor (a tick holds it only while the monitor runs).
    Monitor,
    /// A client stripe (one client's membership changes).
    Stripe,
    /// The membership gate (shared by membership paths, exclusive for a snapshot).
    Gate,
    /// A writer lock of the client-name table.
    Names,
    /// One metadata shard.
    Shard,
    /// The segment table.
    Segments,
    /// The offboarding worker pool (then the offboarding leaf, never the reverse).
    Pool,
    /// A leaf: never held while another leaf is taken.
    Leaf,
}

/// The order, with what each level guards and which room owns its locks: the source of the
/// lock table in the module doc of [`master`](super) (a test checks the doc against it) and of
/// the order check's message.
#[cfg_attr(any(loom, not(debug_assertions)), allow(dead_code))]
pub(crate) const ORDER: [(Level, &str, &str, &str); 8] = [
    (Level::Monitor, "monitor", "the liveness monitor", "the core"),
    (
        Level::Stripe,
        "client stripe",
        "one client's membership changes",
        "`Membership`",
    ),
    (
        Level::Gate,
        "gate",
        "the set of segments, LocalDisk registrations and external entries",
        "`Membership`",
    ),
    (
        Level::Names,
        "names",
        "the writers of the client-name table",
        "`Membership`",
    ),
    (
        Level::Shard,
        "metadata shard",
        "objects of one shard, their recency, the tasks naming them",
        "`Data`",
    ),
    (Level::Segments, "segments", "the segment table", "`Data`"),
    (Level::Pool, "pool", "the offboarding worker pool", "`Jobs`"),
    (
        Level::Leaf,
        "leaf",
        "a segment's allocator; tasks; LocalDisks; quotas; offboarding state; external store; NoF; RNG",
        "`Data` (allocators, quotas, NoF, RNG); `Work` (tasks); `Membership` (LocalDisks, external store); `Jobs` (offboarding state)",
    ),
];

/// A type guarded by a master lock, and that lock's level.
pub(crate) trait Ordered {
    /// The level of the lock guarding a value of this type.
    const LEVEL: Level;
}

/// Locks `m` at its level (checked in debug builds), recovering from a panic elsewhere (the
/// data stays usable: every critical section leaves its table consistent before anything that
/// can panic).
pub(crate) fn lock<T: Ordered>(m: &Mutex<T>) -> Held<MutexGuard<'_, T>> {
    Held::take(T::LEVEL, || m.lock().unwrap_or_else(|e| e.into_inner()))
}

/// A guard of a master lock, registered with its level while it lives.
#[must_use = "a lock guard releases its lock when dropped"]
pub struct Held<G> {
    guard: G,
    #[cfg_attr(any(loom, not(debug_assertions)), allow(dead_code))]
    level: Level,
}

impl<G> Held<G> {
    /// Checks `level` against the locks this thread holds, then wraps `guard`. `take` runs
    /// the acquisition, so the check comes first: a wrong order fails before it can block.
    pub(crate) fn take(level: Level, take: impl FnOnce() -> G) -> Self {
        enter(level);
        Held { guard: take(), level }
    }
}

/// Derefs through the guard to the guarded value, as the guard itself does.
impl<G: Deref> Deref for Held<G> {
    type Target = G::Target;
    fn deref(&self) -> &G::Target {
        &self.guard
    }
}

impl<G: DerefMut> DerefMut for Held<G> {
    fn deref_mut(&mut self) -> &mut G::Target {
        &mut self.guard
    }
}

impl<G> Drop for Held<G> {
    fn drop(&mut self) {
        leave(self.level);
    }
}

impl<G: std::fmt::Debug> std::fmt::Debug for Held<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.guard.fmt(f)
    }
}

#[cfg(all(debug_assertions, not(loom)))]
std::thread_local! {
    static HELD: std::cell::RefCell<Vec<Level>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[cfg(all(debug_assertions, not(loom)))]
fn enter(level: Level) {
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        if let Some(top) = held.iter().max().copied() {
            if level <= top {
                let order: Vec<&str> = ORDER.iter().map(|(_, name, _, _)| *name).collect();
                panic!(
                    "lock order: a {level:?} lock taken while this thread holds a {top:?} lock \
                     (held: {held:?}); the order is {} (master/src/master/lock_order.rs)",
                    order.join(" → ")
                );
            }
        }
        held.push(level);
    });
}

#[cfg(all(debug_assertions, not(loom)))]
fn leave(level: Level) {
    // `try_with`: a guard dropped during thread teardown finds the list already gone.
    let _ = HELD.try_with(|held| {
        let mut held = held.borrow_mut();
        if let Some(i) = held.iter().rposition(|l| *l == level) {
            held.remove(i);
        }
    });
}

#[cfg(any(loom, not(debug_assertions)))]
fn enter(_: Level) {}

#[cfg(any(loom, not(debug_assertions)))]
fn leave(_: Level) {}

#[cfg(all(test, debug_assertions, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn levels_must_rise_and_a_dropped_guard_leaves_its_level() {
        let shard = Held::take(Level::Shard, || Box::new(()));
        let leaf = Held::take(Level::Leaf, || Box::new(()));
        drop(shard); // out of order: the leaf stays registered
        let r = std::panic::catch_unwind(|| Held::take(Level::Leaf, || Box::new(())));
        assert!(r.is_err(), "two leaves at once were allowed");
        drop(leaf);
        let _segments = Held::take(Level::Segments, || Box::new(()));
        let r = std::panic::catch_unwind(|| Held::take(Level::Shard, || Box::new(())));
        assert!(r.is_err(), "a shard under the segment table was allowed");
    }

    /// The lock table of the master's module doc lists the levels of [`ORDER`], in its order,
    /// each with what it guards and the room that owns it.
    #[test]
    fn the_module_docs_lock_table_matches_the_order_in_code() {
        let doc = include_str!("mod.rs");
        // The paragraph that states the order, from `**Order**` to the next blank doc line.
        let order_line: String = doc
            .lines()
            .skip_while(|l| !l.starts_with("//! **Order**"))
            .take_while(|l| l.trim() != "//!")
            .collect::<Vec<_>>()
            .join(" ");
        assert!(!order_line.is_empty(), "the module doc states the order");
        // Skip to the arrows (the sentence before them names the check itself).
        let order_line = &order_line[order_line.find(" → ").map_or(0, |i| i.saturating_sub(20))..];
        let mut at = 0;
        for (level, name, _, _) in ORDER {
            let found = order_line[at..]
                .find(&format!("`{name}`"))
                .unwrap_or_else(|| panic!("{level:?} (`{name}`) missing or out of order in: {order_line}"));
            at += found + name.len();
        }
        for (_, name, guards, room) in ORDER {
            let row = format!("//! | `{name}` | {guards} | {room} |");
            assert!(doc.lines().any(|l| l.starts_with(&row)), "no lock-table row `{row}`");
        }
    }
}
