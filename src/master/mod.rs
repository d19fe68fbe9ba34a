//! The reference master: a metadata-only model of Mooncake Store's master, faithful in the paths
//! the RFC names, that routes every choice through [`eligibility`](crate::eligibility).
//!
//! Single-owner, deterministic data (`&mut self`, ordered maps, a seeded RNG). It owns a
//! [`Liveness`] core and its [`Monitor`]; it has no atomics of its own: every liveness question
//! goes to the seam, and every resource holds the `Arc` of the incarnation that created it.
//!
//! | module | paths |
//! |---|---|
//! | `membership` | Mount, ReMount, Unmount, LocalDisk mount, Ping |
//! | `data` | Put start/end/revoke, Get, Remove, allocation |
//! | `work` | Copy/Move, task fetch and completion, drain, offload, promotion |
//! | `offboard` | the synchronous `ClientOffboardingJob` steps |
//! | `nof` | NoF segments and their probe-driven health |
//! | `query` | the diagnostic status query |
#![forbid(unsafe_code)]

mod data;
mod error;
mod membership;
pub mod nof;
mod object;
mod offboard;
mod query;
mod segment;
mod snapshot;
mod task;
mod work;

pub use error::MasterError;
pub use membership::SegmentSpec;
pub use object::{Object, Replica, ReplicaKind};
pub use query::{ClientStatus, QueryReport, SegmentStatus};
pub use segment::{AllocationStrategy, Lifecycle, Segment, SegmentId, Segments};
pub use task::{Task, TaskKind, Tasks};

use crate::clock::Clock;
use crate::config::LivenessConfig;
use crate::liveness::{ClientId, Incarnation, Liveness, Registry, Transition};
use crate::monitor::{LivenessEvent, Monitor};
use crate::sync::{Arc, CellArc};
use crate::telemetry::{self, Stats};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The object table: a hash map with a fixed (unseeded) hasher, so that a run is the same run
/// every time; nothing reports objects in iteration order without sorting them.
pub type Objects = hashbrown::HashMap<String, Object, foldhash::fast::FixedState>;

/// Something the master did on its own (between operations) or as a side effect of one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MasterEvent {
    /// A committed liveness transition.
    Transition(Transition),
    /// A master stall detected and credited.
    StallDetected {
        /// When the master resumed (base clock).
        at_ms: u64,
        /// The credited stall.
        ms: u64,
    },
    /// The mass-suspicion brake engaged or released.
    MassSuspicionBrake {
        /// When (base clock).
        at_ms: u64,
        /// Engaged (`true`) or released.
        engaged: bool,
        /// Suspected incarnations then.
        suspected: usize,
        /// Registered incarnations then.
        registered: usize,
    },
    /// An offboarding attempt failed; the job will be retried after its backoff.
    OffboardingRetry {
        /// The client.
        client: ClientId,
        /// The incarnation.
        incarnation: Incarnation,
        /// The failed step.
        step: crate::offboarding::Step,
        /// The attempt that failed (1 = first).
        attempt: u32,
        /// When (base clock).
        at_ms: u64,
    },
    /// An offboarding job completed and its record was erased.
    Offboarded {
        /// The client.
        client: ClientId,
        /// The incarnation.
        incarnation: Incarnation,
        /// Attempts it took.
        attempts: u32,
        /// When (base clock).
        at_ms: u64,
    },
}

/// A replica as handed to a caller.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ReplicaDesc {
    /// Segment name (`local_disk:<client>` for a LocalDisk replica).
    pub segment: String,
    /// The owning client's name.
    pub client: String,
}

/// A task as handed to its executor.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TaskDesc {
    /// Task id.
    pub task: u64,
    /// `copy`, `move`, `offload` or `promote`.
    pub kind: &'static str,
    /// The object.
    pub key: String,
}

/// The tenant every trace `put` uses.
pub const DEFAULT_TENANT: &str = "default";

/// One tenant's quota.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TenantQuota {
    /// Bytes charged: the sum of the sizes of the tenant's replicas.
    pub used: u64,
    /// Limit, if any.
    pub limit: Option<u64>,
}

/// A client's LocalDisk (SSD) registration.
#[derive(Debug)]
pub struct LocalDisk {
    /// The incarnation that registered it.
    pub owner: crate::sync::Arc<crate::liveness::ClientLivenessRecord>,
    /// Capacity, bytes.
    pub capacity: u64,
    /// Bytes used by LocalDisk replicas and offloads in flight.
    pub used: u64,
    /// Keys with a LocalDisk replica here.
    pub keys: BTreeSet<String>,
}

/// Entries the master keeps in an external metadata store (Mooncake's HTTP metadata server):
/// one per mounted segment. Offboarding deletes them.
pub trait ExternalMetadata: std::fmt::Debug + Send {
    /// Records `segment`.
    fn put(&mut self, segment: &str);
    /// Deletes `segment`; idempotent.
    fn delete(&mut self, segment: &str) -> Result<(), String>;
    /// Is `segment` recorded?
    fn contains(&self, segment: &str) -> bool;
    /// Every entry, sorted (snapshots).
    fn entries(&self) -> Vec<String>;
}

/// An in-memory [`ExternalMetadata`].
#[derive(Debug, Default)]
pub struct InMemoryMetadata(BTreeSet<String>);

impl ExternalMetadata for InMemoryMetadata {
    fn put(&mut self, segment: &str) {
        self.0.insert(segment.to_string());
    }
    fn delete(&mut self, segment: &str) -> Result<(), String> {
        self.0.remove(segment);
        Ok(())
    }
    fn contains(&self, segment: &str) -> bool {
        self.0.contains(segment)
    }
    fn entries(&self) -> Vec<String> {
        self.0.iter().cloned().collect()
    }
}

/// Options of the reference master beyond the liveness configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MasterOptions {
    /// How allocation chooses segments.
    pub strategy: AllocationStrategy,
    /// Seed of the master's RNG (random strategy).
    pub seed: u64,
    /// Turn the seam off: owners are treated as Active everywhere (benchmarks and the
    /// "liveness changes nothing when everyone is Active" test only).
    pub seam_disabled: bool,
    /// Shards of the liveness registry (rounded up to a power of two, at least 1). The default
    /// suits a fleet of thousands; a master of a handful of clients (the differential fuzz
    /// target builds several per input) can take a few.
    pub registry_shards: usize,
}

impl Default for MasterOptions {
    fn default() -> Self {
        Self {
            strategy: AllocationStrategy::FreeRatioFirst,
            seed: 0,
            seam_disabled: false,
            registry_shards: crate::liveness::DEFAULT_SHARDS,
        }
    }
}

/// The reference master.
#[derive(Debug)]
pub struct Master {
    live: Arc<Liveness>,
    monitor: Monitor,
    options: MasterOptions,
    rng: ChaCha8Rng,
    names: BTreeMap<String, ClientId>,
    ids: HashMap<ClientId, String>,
    segments: Segments,
    objects: Objects,
    tasks: Tasks,
    local_disks: BTreeMap<ClientId, LocalDisk>,
    nof: nof::NofSegments,
    quotas: BTreeMap<String, TenantQuota>,
    offboarding: offboard::Offboarding,
    lru: BTreeMap<u64, String>,
    clock_lru: u64,
    external: Box<dyn ExternalMetadata>,
    events: Vec<MasterEvent>,
    stats: Stats,
}

impl Master {
    /// A master on `clock` with `config`. With `offboarding_mode: async` the jobs its ticks
    /// mint are collected for an executor ([`Master::take_jobs`]); with `sync` they run inline.
    pub fn new(clock: CellArc<dyn Clock>, config: LivenessConfig, options: MasterOptions) -> Self {
        let asynchronous = config.offboarding_mode == crate::config::OffboardingMode::Async;
        let mut master = Self::build(clock, config, options);
        master.hand_jobs_to_executor(asynchronous);
        master
    }

    fn build(clock: CellArc<dyn Clock>, config: LivenessConfig, options: MasterOptions) -> Self {
        let registry = Registry::with_shards(options.registry_shards);
        let live = Arc::new(Liveness::with_registry(clock, config, registry));
        let monitor = Monitor::new(&live);
        Self {
            rng: ChaCha8Rng::seed_from_u64(options.seed),
            live,
            monitor,
            options,
            names: BTreeMap::new(),
            ids: HashMap::new(),
            segments: Segments::default(),
            objects: Objects::default(),
            tasks: Tasks::default(),
            local_disks: BTreeMap::new(),
            nof: nof::NofSegments::default(),
            quotas: BTreeMap::new(),
            offboarding: offboard::Offboarding::default(),
            lru: BTreeMap::new(),
            clock_lru: 0,
            external: Box::new(InMemoryMetadata::default()),
            events: Vec::new(),
            stats: Stats::default(),
        }
    }

    /// The liveness core.
    pub fn liveness(&self) -> &Liveness {
        &self.live
    }

    /// The monitor.
    pub fn monitor(&self) -> &Monitor {
        &self.monitor
    }

    /// Runs one monitor tick at the clock's time, then offboarding: retries that are due, then
    /// the jobs this tick minted (first attempt at the committing tick).
    pub fn tick(&mut self) {
        let report = self.monitor.tick(&self.live);
        for ev in report.events {
            self.record(match ev {
                LivenessEvent::Transition(t) => MasterEvent::Transition(t),
                LivenessEvent::StallDetected { at_ms, ms } => MasterEvent::StallDetected { at_ms, ms },
                LivenessEvent::MassSuspicionBrake {
                    at_ms,
                    engaged,
                    suspected,
                    registered,
                } => MasterEvent::MassSuspicionBrake {
                    at_ms,
                    engaged,
                    suspected,
                    registered,
                },
            });
        }
        self.run_offboarding(report.jobs);
        self.publish_gauges();
    }

    /// A shared handle on the liveness core (Ping handlers use it without touching the master).
    pub fn liveness_handle(&self) -> Arc<Liveness> {
        self.live.clone()
    }

    /// Takes the events produced since the last call, in the order they happened.
    pub fn take_events(&mut self) -> Vec<MasterEvent> {
        std::mem::take(&mut self.events)
    }

    /// The id of client `name` (interned on first use; interning creates no liveness record).
    pub fn client_id(&mut self, name: &str) -> ClientId {
        if let Some(id) = self.names.get(name) {
            return *id;
        }
        let id = ClientId(self.names.len() as u128 + 1);
        self.names.insert(name.to_string(), id);
        self.ids.insert(id, name.to_string());
        id
    }

    /// The id of client `name` if it was ever interned (a read-only [`Master::client_id`]).
    pub fn known_client_id(&self, name: &str) -> Option<ClientId> {
        self.names.get(name).copied()
    }

    /// The name of client `id`.
    pub fn client_name(&self, id: ClientId) -> String {
        self.ids.get(&id).cloned().unwrap_or_else(|| id.to_string())
    }

    /// The segment table.
    pub fn segments(&self) -> &Segments {
        &self.segments
    }

    /// The object table (hash order; sort the keys when order matters).
    pub fn objects(&self) -> &Objects {
        &self.objects
    }

    /// The tasks.
    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    /// LocalDisk registrations.
    pub fn local_disks(&self) -> &BTreeMap<ClientId, LocalDisk> {
        &self.local_disks
    }

    /// Bytes charged to all tenants (every replica, including ones being written).
    pub fn quota_used(&self) -> u64 {
        self.quotas.values().map(|q| q.used).sum()
    }

    /// Per-tenant quota accounting.
    pub fn quotas(&self) -> &BTreeMap<String, TenantQuota> {
        &self.quotas
    }

    /// Sets (or with `None` removes) a tenant's quota limit, bytes.
    pub fn set_quota_limit(&mut self, tenant: &str, limit: Option<u64>) {
        self.quotas.entry(tenant.to_string()).or_default().limit = limit;
    }

    fn charge(&mut self, tenant: &str, bytes: u64) {
        // Saturating: sizes come from clients; a sum past u64::MAX must not wrap or panic.
        let q = match self.quotas.get_mut(tenant) {
            Some(q) => q,
            None => self.quotas.entry(tenant.to_string()).or_default(),
        };
        q.used = q.used.saturating_add(bytes);
    }

    fn refund(&mut self, tenant: &str, bytes: u64) {
        if let Some(sink) = self.offboarding.deferred_refunds.as_mut() {
            match sink.get_mut(tenant) {
                Some(v) => *v += bytes,
                None => {
                    sink.insert(tenant.to_string(), bytes);
                }
            }
            return;
        }
        if let Some(q) = self.quotas.get_mut(tenant) {
            q.used = q.used.saturating_sub(bytes);
        }
    }

    /// The external metadata store.
    pub fn external_metadata(&self) -> &dyn ExternalMetadata {
        self.external.as_ref()
    }

    /// The NoF segments.
    pub fn nof(&mut self) -> &mut nof::NofSegments {
        &mut self.nof
    }

    fn seam(&self) -> crate::eligibility::Seam {
        crate::eligibility::Seam {
            enabled: !self.options.seam_disabled,
        }
    }

    /// Records an event: the event log, the `metrics` facade and [`Stats`].
    fn record(&mut self, ev: MasterEvent) {
        match &ev {
            MasterEvent::Transition(t) => {
                telemetry::transition(t);
                self.stats.count_transition(t);
            }
            MasterEvent::StallDetected { ms, .. } => {
                telemetry::stall(*ms);
                self.stats.stalls += 1;
                self.stats.stall_ms += ms;
            }
            MasterEvent::MassSuspicionBrake { engaged: true, .. } => {
                telemetry::brake_engaged("mass_suspicion");
                self.stats.brake_engagements += 1;
            }
            MasterEvent::MassSuspicionBrake { .. } => {}
            MasterEvent::OffboardingRetry { step, .. } => {
                telemetry::step_failed(*step);
                self.stats.step_failures[*step as usize] += 1;
            }
            MasterEvent::Offboarded { .. } => self.stats.jobs_completed += 1,
        }
        self.events.push(ev);
    }

    /// The liveness and offboarding counters now.
    pub fn stats(&self) -> Stats {
        let registered = self.live.registry().len();
        let suspected = self.live.suspected_count();
        // Offline records are exactly the jobs not completed yet (they run inline or wait here).
        let offline = self.offboarding_pending();
        Stats {
            active: registered.saturating_sub(suspected + offline),
            suspected,
            offline,
            jobs_pending: self.offboarding_pending(),
            ..self.stats.clone()
        }
    }

    fn publish_gauges(&self) {
        let s = self.stats();
        telemetry::clients(s.active, s.suspected, s.offline);
        let now = self.live.clock().base().now_ms();
        telemetry::pending_jobs(s.jobs_pending, self.oldest_pending_age(now));
    }

    fn push_transition(&mut self, t: Option<Transition>) {
        if let Some(t) = t {
            self.record(MasterEvent::Transition(t));
        }
    }
}
