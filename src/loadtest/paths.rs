//! The adapter between the load test and a master: [`MasterPaths`], the request paths the
//! harness drives, all `&self` so that any number of threads call them at once.
//!
//! **Temporary stand-in.** [`StandIn`] implements the trait over today's `&mut self`
//! [`Master`] behind one `std::sync::Mutex` (a global lock around every path but Ping, which
//! goes to the lock-free liveness core as the master's own docs allow). It exists so that the
//! harness builds, runs and is tested now; **figures it gives for `--design ours` say nothing
//! about the concurrent master** (every data-plane path, the remount walk and the monitor tick
//! serialise on that one lock). When the thread-safe master lands, this file is the only one to
//! change: implement [`MasterPaths`] for it directly and drop [`StandIn`].
//!
//! # Ground rules of the stand-in
//! - `master` (the `Mutex`) guards every path except [`MasterPaths::ping`]; it is the innermost
//!   lock of the harness (the `upstream-main` design takes its own locks *outside* it) and no
//!   code holding it takes another lock, except `names` (a leaf).
//! - `names` maps client names to ids; written under `master` by mount/remount (which intern
//!   the name), read by Ping without `master`.
//! - Ping = `names` read + [`Liveness::ping`] (registry lookup + CAS on the record's word).

use crate::clock::{Clock, SystemClock};
use crate::config::LivenessConfig;
use crate::liveness::{ClientId, Liveness, PingOutcome, Transition};
use crate::master::{Master, MasterError, MasterEvent, MasterOptions, ReplicaDesc, SegmentSpec};
use crate::offboarding::{complete_client_offboarding, ClientOffboardingJob, OffboardingSteps};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

/// What one monitor tick produced.
#[derive(Debug, Default)]
pub struct TickOutcome {
    /// Committed transitions, in commit order.
    pub transitions: Vec<Transition>,
    /// Offboarding jobs minted by this tick, for the harness's offboarding worker.
    pub jobs: Vec<ClientOffboardingJob>,
}

/// The request paths the load test drives. Every method may run concurrently with every other.
pub trait MasterPaths: Send + Sync {
    /// Ping: records a liveness signal of `client`; returns once the record is updated.
    fn ping(&self, client: &str) -> PingOutcome;
    /// MountSegment.
    fn mount(&self, client: &str, segment: &str, size: u64) -> Result<(), MasterError>;
    /// ReMount of `specs` (empty = a segment-less client), *including the walk over every
    /// metadata shard* that main's post-promotion ReMount does (HA standby adoption).
    fn remount(&self, client: &str, specs: &[SegmentSpec]) -> Result<(), MasterError>;
    /// PutStart of one replica of `size` bytes.
    fn put(&self, key: &str, size: u64) -> Result<Vec<ReplicaDesc>, MasterError>;
    /// PutEnd.
    fn put_end(&self, key: &str) -> Result<(), MasterError>;
    /// GetReplicaList.
    fn get(&self, key: &str) -> Result<Vec<ReplicaDesc>, MasterError>;
    /// Remove.
    fn remove(&self, key: &str) -> Result<(), MasterError>;
    /// The name of the client owning `key`'s first replica (routing; `None` if absent).
    fn owner_of(&self, key: &str) -> Option<String>;
    /// Does the object table hold `key` (servable or not)?
    fn contains(&self, key: &str) -> bool;
    /// The id of client `name`, if it was ever mounted.
    fn client_id(&self, name: &str) -> Option<ClientId>;
    /// One monitor tick.
    fn tick(&self) -> TickOutcome;
    /// Runs an offboarding job to completion, in bounded batches; hands it back on failure.
    fn run_job(&self, job: ClientOffboardingJob) -> Result<(), ClientOffboardingJob>;
    /// Takes a snapshot of the whole master; returns its size (objects), so it is not optimised away.
    fn snapshot(&self) -> usize;
}

/// TEMPORARY: today's master behind one mutex (see the module doc).
#[derive(Debug)]
pub struct StandIn {
    master: Mutex<Master>,
    live: Arc<Liveness>,
    names: RwLock<HashMap<String, ClientId>>,
}

impl StandIn {
    /// A master on the system clock with `config` (offboarding is forced to `async`: the
    /// harness runs the jobs).
    pub fn new(mut config: LivenessConfig, options: MasterOptions) -> Self {
        config.offboarding_mode = crate::config::OffboardingMode::Async;
        let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
        let master = Master::new(clock, config, options);
        let live = master.liveness_handle();
        Self {
            master: Mutex::new(master),
            live,
            names: RwLock::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Master> {
        self.master.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn intern(&self, m: &mut Master, client: &str) {
        let id = m.client_id(client);
        self.names
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(client.to_string(), id);
    }
}

/// The adoption walk of main's ReMount: every object, every replica, matched by segment name
/// against the remounted segments. Returns the replicas matched.
fn adoption_walk(m: &Master, specs: &[SegmentSpec]) -> usize {
    let mut matched = 0;
    for obj in m.objects().values() {
        for r in &obj.replicas {
            let name = r.segment().and_then(|id| m.segments().get(id)).map(|s| s.name.as_str());
            if name.is_some_and(|n| specs.iter().any(|s| s.segment == n)) {
                matched += 1;
            }
        }
    }
    matched
}

impl MasterPaths for StandIn {
    fn ping(&self, client: &str) -> PingOutcome {
        let id = self
            .names
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(client)
            .copied();
        match id {
            Some(id) => self.live.ping(id, None),
            None => PingOutcome {
                status: crate::liveness::PingStatus::NeedRemount,
                recovered: None,
            },
        }
    }

    fn mount(&self, client: &str, segment: &str, size: u64) -> Result<(), MasterError> {
        let mut m = self.lock();
        self.intern(&mut m, client);
        m.mount(client, segment, size)
    }

    fn remount(&self, client: &str, specs: &[SegmentSpec]) -> Result<(), MasterError> {
        let mut m = self.lock();
        self.intern(&mut m, client);
        m.remount(client, specs)?;
        std::hint::black_box(adoption_walk(&m, specs));
        Ok(())
    }

    fn put(&self, key: &str, size: u64) -> Result<Vec<ReplicaDesc>, MasterError> {
        self.lock().put(key, size, 1)
    }

    fn put_end(&self, key: &str) -> Result<(), MasterError> {
        self.lock().put_end(key)
    }

    fn get(&self, key: &str) -> Result<Vec<ReplicaDesc>, MasterError> {
        self.lock().get(key)
    }

    fn remove(&self, key: &str) -> Result<(), MasterError> {
        self.lock().remove(key)
    }

    fn owner_of(&self, key: &str) -> Option<String> {
        let m = self.lock();
        let obj = m.objects().get(key)?;
        let owner = obj.replicas.first()?.owner().client();
        Some(m.client_name(owner))
    }

    fn contains(&self, key: &str) -> bool {
        self.lock().objects().contains_key(key)
    }

    fn client_id(&self, name: &str) -> Option<ClientId> {
        self.names.read().unwrap_or_else(|e| e.into_inner()).get(name).copied()
    }

    fn tick(&self) -> TickOutcome {
        let mut m = self.lock();
        m.tick();
        let transitions = m
            .take_events()
            .into_iter()
            .filter_map(|e| match e {
                MasterEvent::Transition(t) => Some(t),
                _ => None,
            })
            .collect();
        TickOutcome {
            transitions,
            jobs: m.take_jobs(),
        }
    }

    fn run_job(&self, job: ClientOffboardingJob) -> Result<(), ClientOffboardingJob> {
        let mut steps = PerBatch(&self.master);
        complete_client_offboarding(&mut steps, self.live.registry(), job).map(|_| ())
    }

    fn snapshot(&self) -> usize {
        self.lock().snapshot().objects.len()
    }
}

/// Takes the master's lock for one bounded batch of a step at a time.
struct PerBatch<'a>(&'a Mutex<Master>);

impl OffboardingSteps for PerBatch<'_> {
    fn run_step(
        &mut self,
        step: crate::offboarding::Step,
        job: &mut ClientOffboardingJob,
    ) -> Result<crate::offboarding::Progress, crate::offboarding::CleanupError> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).run_step(step, job)
    }
}

impl<T: MasterPaths + ?Sized> MasterPaths for Arc<T> {
    fn ping(&self, client: &str) -> PingOutcome {
        (**self).ping(client)
    }
    fn mount(&self, client: &str, segment: &str, size: u64) -> Result<(), MasterError> {
        (**self).mount(client, segment, size)
    }
    fn remount(&self, client: &str, specs: &[SegmentSpec]) -> Result<(), MasterError> {
        (**self).remount(client, specs)
    }
    fn put(&self, key: &str, size: u64) -> Result<Vec<ReplicaDesc>, MasterError> {
        (**self).put(key, size)
    }
    fn put_end(&self, key: &str) -> Result<(), MasterError> {
        (**self).put_end(key)
    }
    fn get(&self, key: &str) -> Result<Vec<ReplicaDesc>, MasterError> {
        (**self).get(key)
    }
    fn remove(&self, key: &str) -> Result<(), MasterError> {
        (**self).remove(key)
    }
    fn owner_of(&self, key: &str) -> Option<String> {
        (**self).owner_of(key)
    }
    fn contains(&self, key: &str) -> bool {
        (**self).contains(key)
    }
    fn client_id(&self, name: &str) -> Option<ClientId> {
        (**self).client_id(name)
    }
    fn tick(&self) -> TickOutcome {
        (**self).tick()
    }
    fn run_job(&self, job: ClientOffboardingJob) -> Result<(), ClientOffboardingJob> {
        (**self).run_job(job)
    }
    fn snapshot(&self) -> usize {
        (**self).snapshot()
    }
}
