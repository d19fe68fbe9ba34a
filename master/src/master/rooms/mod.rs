//! The master's rooms: each holds a part of the master's state and the locks guarding it,
//! privately; its methods are the only door, and each lock's level ([`Ordered`]) is declared
//! beside the room that owns the lock. A path that needs two rooms calls methods of each.
//!
//! | room | owns | locks (levels) |
//! |---|---|---|
//! | [`Membership`] | the client-name table, the client stripes, the gate, the LocalDisk registrations, the external metadata store | `client stripe`, `gate`, `names`; the LocalDisk and external-store leaves |
//! | [`Data`] | the metadata shards, the segment table, the NoF segments, the quotas, the allocation RNG, the eviction cursor | `metadata shard`, `segments`; the NoF, quota and RNG leaves (and each segment's allocator leaf) |
//! | [`Work`] | the task table | the `tasks` leaf |
//! | `Jobs` (in `offboard/`, the only folder that opens it) | the offboarding state (driver, outbox, parked jobs, scratch, faults) and the worker pool | `pool`; the offboarding-state leaf |
//! | [`Journal`] | the event log, the counters | none (lock-free) |
//!
//! The master's module doc holds the whole lock table and the order; a test checks it against
//! `lock_order::ORDER`, which names the room owning each level.
//!
//! [`Ordered`]: super::lock_order::Ordered

mod data;
mod journal;
mod membership;
mod work;

pub(crate) use data::Data;
pub(crate) use journal::Journal;
pub use journal::DEFAULT_EVENT_LOG_CAPACITY;
pub use membership::LocalDisk;
pub(crate) use membership::{LocalDisks, Membership};
pub(crate) use work::Work;
pub use work::{Task, TaskKind, Tasks};
