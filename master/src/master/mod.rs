//! The reference master: a metadata-only model of Mooncake Store's master, faithful in the paths
//! the RFC names, that routes every choice through [`eligibility`](crate::eligibility) — and is
//! safe to drive from many request threads at once.
//!
//! | module | paths |
//! |---|---|
//! | `membership` | Mount, ReMount, Unmount, LocalDisk mount, Ping |
//! | `data` | Put start/end/revoke, Get, Remove, allocation, eviction |
//! | `work` | Copy/Move, task fetch and completion, drain, offload, promotion |
//! | `offboard` | the `ClientOffboardingJob` steps, inline or on the executor's workers |
//! | `snapshot` | HA snapshots (a per-shard cut, never stop-the-world) and restore |
//! | `nof` | NoF segments and their probe-driven health |
//! | `query` | the diagnostic status query |
//! | `stats` | the statistics, the gauges and an embedder executor's reports |
//!
//! The paths own no state: the **rooms** do (`rooms/`, and `Jobs`, which lives in `offboard/`,
//! the only folder that opens it). Each room holds its fields and the locks guarding them
//! privately, and its methods are the only door; a path that needs two rooms calls methods of
//! each:
//!
//! | room | holds |
//! |---|---|
//! | `Membership` | the client-name table, the client stripes, the gate, the LocalDisk registrations, the external metadata store |
//! | `Data` | the metadata shards, the segment table, the NoF segments, the quotas (`quota`), the allocation RNG, the eviction cursor |
//! | `Work` | the task table |
//! | `Jobs` (`offboard/`) | the offboarding state (driver, outbox, parked jobs, scratch) and the worker pool |
//! | `Journal` | the event log and the counters (lock-free: Ping's side) |
//!
//! The core keeps the liveness core (lock-free, behind its own methods) and the monitor.
//! A room holds the tables only it opens (`Membership` the client-name table, `Work` the task
//! table, `Journal` the event log). The data room's tables (`segment`, `shard`, `object`),
//! `external` (the external metadata store), `events` (what the master hands out) and `error`
//! sit below the paths and import none; `options` holds [`MasterOptions`].
//! This file owns the [`Master`] / `MasterCore` pair, the lock table below and the accessors;
//! it may not hold a path's logic (each path lives in its module). [`Master`] is the only door:
//! each module that holds a path also holds that path's public method on [`Master`], which hands
//! the call to the core (`MasterCore`, crate-private, shared with the offboarding workers).
//!
//! # Ownership and locks
//!
//! [`Master`] is `Send + Sync`; every request path takes `&self`. State is split so that no
//! request path takes a master-wide lock (STYLE §7), in the spirit of Mooncake's 1024
//! metadata shards but without its global `client_mutex_` (which Ping shares with mounts) or
//! its stop-the-world `snapshot_mutex_`. Each lock's level is declared beside the room that
//! owns it (`lock_order::Ordered`):
//!
//! | lock | guards | room | taken by |
//! |---|---|---|---|
//! | — (lock-free) | liveness records, registry, names (readers), counters, event log | the core; `Membership`; `Journal` | Ping, every eligibility check |
//! | `monitor` | the liveness monitor | the core | a tick, while the monitor runs (released before anything below) |
//! | `client stripe` | one client's membership changes | `Membership` | Mount, ReMount, Unmount, LocalDisk mount |
//! | `gate` | the set of segments, LocalDisk registrations and external entries | `Membership` | membership paths and the offboarding steps that unmount (shared); a snapshot (exclusive) |
//! | `names` | the writers of the client-name table | `Membership` | a mount interning a new name, a failed first mount forgetting it |
//! | `metadata shard` | objects of one shard, their recency, the tasks naming them | `Data` | Put, Get, Remove, task paths, offboarding batches, walks (one shard at a time) |
//! | `segments` | the segment table | `Data` | allocation (read), mount/unmount (write, brief) |
//! | `pool` | the offboarding worker pool | `Jobs` | starting, stopping and feeding the workers |
//! | `leaf` | a segment's allocator; tasks; LocalDisks; quotas; offboarding state; external store; NoF; RNG | `Data` (allocators, quotas, NoF, RNG); `Work` (tasks); `Membership` (LocalDisks, external store); `Jobs` (offboarding state) | briefly, by the paths above; never two at once |
//!
//! **Order** (the table and this line are checked against `lock_order::ORDER` by a test; a thread holding a
//! lock only takes locks further down): `monitor` → `client stripe` → `gate` → `names` → one
//! `metadata shard` → `segments` → `pool` → one `leaf`. Debug and test builds check every
//! acquisition against it (a lock taken at or below a level its thread holds panics, naming
//! both), and `tracing-mutex` (core/src/sync.rs) checks every lock of the crate for cycles.
//!
//! | path | locks, in order | may wait for |
//! |---|---|---|
//! | Ping | none (registry load + one CAS on the word) | nothing |
//! | Get | shard(key) | another request on the same shard |
//! | Put | shard(key) → `segments` (read) → segment allocators, quotas | the same; a mount's brief table write |
//! | Remove, callbacks | shard(key) → tasks/allocator/quotas leaves | the same |
//! | Mount, ReMount | stripe → `gate` (shared) → `segments` (write); ReMount then walks every shard, one at a time | a snapshot in progress; one shard at a time |
//! | offboarding `metadata` batch | one shard at a time → leaves | requests on that shard, for one key |
//! | offboarding `segments`/`local_disk`/`external_metadata` | `gate` (shared) → … | a snapshot in progress |
//! | tick | monitor mutex, then as offboarding | — |
//! | snapshot | `gate` (exclusive) → one shard at a time → leaves | in-flight mounts; one shard at a time |
//!
//! Eligibility is still one atomic load of the owner's word, reached through the `Arc` the
//! replica or segment holds; Ping and eligibility never take any lock above.
//!
//! **Allocation racing an Offline commit** (invariant 10): an allocation checks its segment's
//! owner, reserves space, inserts the object under the shard lock and then re-checks the owner:
//! if it is no longer Active the allocation is undone before the shard lock is released. The
//! offboarding sweep starts only after the Offline commit and takes keys from the same segment
//! index the reservation wrote, so either the sweep removes the replica or the re-check sees
//! Offline and removes it: no object outlives its segment.
//!
//! One thread driving it (replay, simulate) gets the same output byte for byte: every lock is
//! uncontended and every walk is in a fixed order.
#![forbid(unsafe_code)]

mod data;
mod error;
mod events;
mod external;
#[cfg(all(test, not(loom)))]
mod lock_free_ping_tests;
mod lock_order;
mod membership;
pub mod nof;
mod object;
mod offboard;
mod options;
mod query;
mod quota;
mod rooms;
mod segment;
mod shard;
mod snapshot;
mod stats;
mod work;

pub use data::MAX_REPLICAS;
pub use error::MasterError;
pub use events::{MasterEvent, ReplicaDesc, TaskDesc};
pub use external::{ExternalMetadata, InMemoryMetadata};
pub(crate) use lock_order::lock;
pub use lock_order::Held;
pub use membership::SegmentSpec;
pub use object::{Object, Replica, ReplicaKind};
pub use offboard::{OffboardingDriver, PendingJob};
pub use options::{MasterOptions, DEFAULT_METADATA_SHARDS, DEFAULT_TENANT};
pub use query::{ClientStatus, QueryReport, SegmentStatus};
pub use quota::TenantQuota;
pub(crate) use quota::{add_refund, Refunds};
pub use rooms::LocalDisk;
use rooms::LocalDisks;
pub use rooms::DEFAULT_EVENT_LOG_CAPACITY;
pub use rooms::{Task, TaskKind, Tasks};
pub use segment::{AllocationStrategy, Lifecycle, Segment, SegmentAlloc, SegmentId, Segments};
pub use shard::{Objects, Shard, Shards};

use crate::clock::Clock;
use crate::config::LivenessConfig;
use crate::liveness::{ClientId, Incarnation, Liveness, Registry};
use crate::monitor::Monitor;
use crate::sync::{Arc, CellArc, Mutex, MutexGuard, RwLockReadGuard};
use lock_order::{Level, Ordered};
use std::collections::BTreeMap;

/// The reference master: the shared state (`MasterCore`, where every request path does its
/// work) plus, in asynchronous mode, the offboarding workers it started. Dropping it stops them.
#[derive(Debug)]
pub struct Master {
    core: Arc<MasterCore>,
}

impl Drop for Master {
    fn drop(&mut self) {
        // Breaks the core → executor → core cycle; jobs handed back are parked (and dropped
        // with the master, as every other piece of its state).
        self.core.stop_offboarding_workers();
    }
}

/// The master's shared state and the work behind every request path; only [`Master`] (and
/// the offboarding workers it starts) reach it.
#[derive(Debug)]
pub(crate) struct MasterCore {
    live: Arc<Liveness>,
    monitor: Mutex<Monitor>,
    tick_ms: u64,
    options: MasterOptions,
    membership: rooms::Membership,
    data: rooms::Data,
    work: rooms::Work,
    journal: rooms::Journal,
    jobs: offboard::Jobs,
}

impl Ordered for Monitor {
    const LEVEL: Level = Level::Monitor;
}

impl Master {
    /// A master on `clock` with `config`. With `offboarding_mode: async` it starts
    /// `offboarding_workers` worker threads that run the jobs its ticks mint (unless
    /// `options.offboarding` says otherwise); with `sync` they run inline in the tick.
    pub fn new(clock: CellArc<dyn Clock>, config: LivenessConfig, options: MasterOptions) -> Self {
        let driver = options.offboarding.resolve(&config);
        let master = Self {
            core: Arc::new(MasterCore::build(clock, config, options)),
        };
        master.core.set_driver(&master.core, driver);
        master
    }

    /// Switches who runs offboarding jobs: `true` collects them for an embedder's executor
    /// ([`Master::take_jobs`]), `false` runs them inline at the tick. Jobs already collected
    /// or parked are kept, never dropped.
    pub fn hand_jobs_to_executor(&self, on: bool) {
        let driver = if on {
            OffboardingDriver::Outbox
        } else {
            OffboardingDriver::Inline
        };
        self.core.set_driver(&self.core, driver);
    }

    /// Starts the asynchronous worker pool now (see [`OffboardingDriver::Workers`]).
    pub fn start_offboarding_workers(&self) {
        self.core.set_driver(&self.core, OffboardingDriver::Workers);
    }

    /// Stops the worker pool (if any): the workers drain the queue for up to
    /// `shutdown_drain_ms`, then every job not completed is handed back and parked in the
    /// master, so the next snapshot records it and a restored master resumes it. Returns how
    /// many were handed back.
    pub fn shutdown_offboarding(&self) -> usize {
        self.core.stop_offboarding_workers()
    }
}

impl Master {
    /// The liveness core.
    pub fn liveness(&self) -> &Liveness {
        &self.core.live
    }

    /// The monitor (locked: a tick waits for the caller).
    pub fn monitor(&self) -> Held<MutexGuard<'_, Monitor>> {
        lock(&self.core.monitor)
    }

    /// The monitor's tick, ms.
    pub fn tick_ms(&self) -> u64 {
        self.core.tick_ms
    }

    /// Runs one monitor tick at the clock's time, then offboarding: retries that are due, then
    /// the jobs this tick minted (first attempt at the committing tick, inline or handed to the
    /// workers). Ticks from two threads at once run one after the other.
    pub fn tick(&self) {
        self.core.tick()
    }

    /// A shared handle on the liveness core (Ping handlers may use it without the master; their
    /// recoveries are counted in [`Master::stats`] all the same).
    pub fn liveness_handle(&self) -> Arc<Liveness> {
        self.core.live.clone()
    }

    /// Takes the events produced since the last call, in the order they happened (each
    /// thread's in its order). The log is bounded (`MasterOptions::event_log_capacity`): beyond
    /// it the oldest events are dropped and counted in [`Stats`](crate::telemetry::Stats).
    pub fn take_events(&self) -> Vec<MasterEvent> {
        self.core.journal.take()
    }

    /// The id of client `name`, if a mount of it ever succeeded. Lock-free; creates nothing.
    pub fn client_id(&self, name: &str) -> Option<ClientId> {
        self.core.membership.names().lookup(name)
    }

    /// The id of client `name` if it was ever interned (same as [`Master::client_id`]).
    pub fn known_client_id(&self, name: &str) -> Option<ClientId> {
        self.core.membership.names().lookup(name)
    }

    /// The name of client `id`.
    pub fn client_name(&self, id: ClientId) -> String {
        self.core.membership.client_name(id)
    }

    /// The current incarnation of client `name` (the token decisions.md question 4 promises:
    /// pass it to [`Master::ping_with_token`] / [`Master::mount_with_token`]).
    pub fn incarnation_of(&self, name: &str) -> Option<Incarnation> {
        let id = self.core.membership.names().lookup(name)?;
        self.core.live.registry().get(id).map(|r| r.incarnation())
    }

    /// The segment table (read-locked: release it before calling back into the master).
    pub fn segments(&self) -> Held<RwLockReadGuard<'_, Segments>> {
        self.core.data.segments()
    }

    /// The metadata shards.
    pub fn shards(&self) -> &Shards {
        self.core.data.shards()
    }

    /// A copy of every object, by key (diagnostics and tests: O(objects), one shard lock at a
    /// time, so under concurrent writes it is a per-shard cut).
    pub fn objects(&self) -> BTreeMap<String, Object> {
        self.core.data.shards().copy_all()
    }

    /// A copy of `key`'s object.
    pub fn object(&self, key: &str) -> Option<Object> {
        self.core.data.shards().lock_key(key).objects.get(key).cloned()
    }

    /// The tasks (locked).
    pub fn tasks(&self) -> Held<MutexGuard<'_, Tasks>> {
        self.core.work.tasks()
    }

    /// LocalDisk registrations (locked).
    pub fn local_disks(&self) -> Held<MutexGuard<'_, LocalDisks>> {
        self.core.membership.local_disks()
    }

    /// The external metadata store (locked).
    pub fn external_metadata(&self) -> Held<MutexGuard<'_, Box<dyn ExternalMetadata>>> {
        self.core.membership.external()
    }

    /// The NoF segments (locked).
    pub fn nof(&self) -> Held<MutexGuard<'_, nof::NofSegments>> {
        self.core.data.nof()
    }
}

impl MasterCore {
    fn build(clock: CellArc<dyn Clock>, config: LivenessConfig, options: MasterOptions) -> Self {
        let registry = Registry::with_shards(options.registry_shards);
        let live = Arc::new(Liveness::with_registry(clock, config, registry));
        let monitor = Monitor::new(&live);
        let tick_ms = monitor.tick_ms();
        Self {
            journal: rooms::Journal::new(options.event_log_capacity),
            data: rooms::Data::new(options.metadata_shards, options.expected_objects, options.seed),
            membership: rooms::Membership::new(options.registry_shards),
            work: rooms::Work::default(),
            live,
            monitor: Mutex::new(monitor),
            tick_ms,
            options,
            jobs: offboard::Jobs::default(),
        }
    }

    /// The work behind [`Master::tick`].
    pub(crate) fn tick(&self) {
        let report = lock(&self.monitor).tick(&self.live);
        for ev in report.events {
            self.journal.record(MasterEvent::Liveness(ev));
        }
        self.run_offboarding(report.jobs);
        self.publish_gauges();
    }

    fn seam(&self) -> crate::eligibility::Seam {
        crate::eligibility::Seam {
            enabled: !self.options.seam_disabled,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
