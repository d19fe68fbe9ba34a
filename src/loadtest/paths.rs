//! The adapter between the load test and a master: [`MasterPaths`], the request paths the
//! harness drives, all `&self` so that any number of threads call them at once.
//!
//! [`MasterPaths`] is implemented for the concurrent reference [`Master`] directly: every call
//! is the master's own path, with the master's own locks (see `src/master/mod.rs`). The harness
//! runs offboarding itself (the master's `Outbox` driver: `tick` hands the jobs minted to the
//! harness's offboarding thread, which runs them through the same steps the master's workers
//! use), so that the `upstream-main` design can wrap offboarding in main's locks too.
//! [`new_master`] builds the master the harness uses.

use crate::clock::{Clock, SystemClock};
use crate::config::LivenessConfig;
use crate::liveness::{ClientId, PingOutcome, Transition};
use crate::master::{
    Master, MasterCore, MasterError, MasterEvent, MasterOptions, OffboardingDriver, ReplicaDesc, SegmentSpec,
};
use crate::offboarding::executor::SharedSteps;
use crate::offboarding::{complete_client_offboarding, ClientOffboardingJob, OffboardingSteps};
use std::sync::Arc;

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

/// The master the harness drives: on the system clock, `config`, jobs collected for the
/// harness (`Outbox`), metadata in `options.metadata_shards` shards.
pub fn new_master(config: LivenessConfig, options: MasterOptions) -> Master {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let options = MasterOptions {
        offboarding: OffboardingDriver::Outbox,
        ..options
    };
    Master::new(clock, config, options)
}

impl MasterPaths for Master {
    fn ping(&self, client: &str) -> PingOutcome {
        // The master's Ping (no lock); the outcome's recovery is already recorded as an event.
        match self.client_id(client) {
            Some(id) => self.liveness().ping(id, None),
            None => PingOutcome {
                status: crate::liveness::PingStatus::NeedRemount,
                recovered: None,
            },
        }
    }

    fn mount(&self, client: &str, segment: &str, size: u64) -> Result<(), MasterError> {
        MasterCore::mount(self, client, segment, size)
    }

    fn remount(&self, client: &str, specs: &[SegmentSpec]) -> Result<(), MasterError> {
        // The post-promotion ReMount: the walk over every metadata shard, one lock at a time.
        MasterCore::remount(self, client, specs)?;
        std::hint::black_box(self.adoption_walk(client, specs));
        Ok(())
    }

    fn put(&self, key: &str, size: u64) -> Result<Vec<ReplicaDesc>, MasterError> {
        MasterCore::put(self, key, size, 1)
    }

    fn put_end(&self, key: &str) -> Result<(), MasterError> {
        MasterCore::put_end(self, key)
    }

    fn get(&self, key: &str) -> Result<Vec<ReplicaDesc>, MasterError> {
        MasterCore::get(self, key)
    }

    fn remove(&self, key: &str) -> Result<(), MasterError> {
        MasterCore::remove(self, key)
    }

    fn owner_of(&self, key: &str) -> Option<String> {
        let shard = self.shards().lock_key(key);
        let owner = shard.objects.get(key)?.replicas.first()?.owner().client();
        drop(shard);
        Some(self.client_name(owner))
    }

    fn contains(&self, key: &str) -> bool {
        self.shards().lock_key(key).objects.contains_key(key)
    }

    fn client_id(&self, name: &str) -> Option<ClientId> {
        MasterCore::client_id(self, name)
    }

    fn tick(&self) -> TickOutcome {
        MasterCore::tick(self);
        let transitions = self
            .take_events()
            .into_iter()
            .filter_map(|e| match e {
                MasterEvent::Transition(t) => Some(t),
                _ => None,
            })
            .collect();
        TickOutcome {
            transitions,
            jobs: self.take_jobs(),
        }
    }

    fn run_job(&self, job: ClientOffboardingJob) -> Result<(), ClientOffboardingJob> {
        let mut steps = Shared(self);
        complete_client_offboarding(&mut steps, self.liveness().registry(), job).map(|_| ())
    }

    fn snapshot(&self) -> usize {
        MasterCore::snapshot(self).objects.len()
    }
}

/// The workers' steps (`SharedSteps`, `&self`: one shard lock per bounded batch).
struct Shared<'a>(&'a MasterCore);

impl OffboardingSteps for Shared<'_> {
    fn run_step(
        &mut self,
        step: crate::offboarding::Step,
        job: &mut ClientOffboardingJob,
    ) -> Result<crate::offboarding::Progress, crate::offboarding::CleanupError> {
        SharedSteps::run_step(self.0, step, job)
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
