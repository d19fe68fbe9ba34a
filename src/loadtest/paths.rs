//! The adapter between the load test and a master: [`MasterPaths`], the request paths the
//! harness drives, all `&self` so that any number of threads call them at once.
//!
//! [`MasterPaths`] is implemented for the concurrent reference [`Master`] directly: every call
//! is the master's own path, with the master's own locks (see `master/src/master/mod.rs`); Ping is
//! [`Master::ping`], which records a recovery among the master's events itself. The harness
//! runs offboarding itself (the master's `Outbox` driver: `tick` hands the jobs minted to the
//! harness's offboarding thread, which runs them through the same steps the master's workers
//! use), so that the `upstream-main` design can run its own offboarding with upstream's locks.
//! The pieces a wrapper takes locks around separately (`remount_segments`, `walk`, `unmount`)
//! are paths of their own. [`new_master`] builds the master the harness uses.

use crate::clock::{Clock, SystemClock};
use crate::config::LivenessConfig;
use crate::liveness::{ClientId, LivenessState, PingStatus};
use crate::master::{Master, MasterError, MasterEvent, MasterOptions, OffboardingDriver, ReplicaDesc, SegmentSpec};
use crate::offboarding::{complete_client_offboarding, ClientOffboardingJob, OffboardingSteps};
use crate::LivenessEvent;
use std::sync::Arc;

/// One committed liveness transition, as the harness counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change {
    /// The client.
    pub client: ClientId,
    /// State before.
    pub from: LivenessState,
    /// State after.
    pub to: LivenessState,
}

/// A client the `upstream-main` design retired: what its offboarding worker needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retired {
    /// The client (for the harness's accounting).
    pub client: ClientId,
    /// Its name (the registry key).
    pub name: String,
    /// The retired record's identity (the compare of compare-and-erase).
    pub serial: u64,
    /// Its segments, prepared for unmount by the retire step.
    pub segments: Vec<String>,
}

/// An offboarding job handed from a tick to the harness's offboarding thread.
#[derive(Debug)]
pub enum Job {
    /// Our master's job.
    Ours(ClientOffboardingJob),
    /// An `upstream-main` retirement.
    Retired(Retired),
}

impl Job {
    /// The client being offboarded.
    pub fn client(&self) -> ClientId {
        match self {
            Job::Ours(j) => j.client(),
            Job::Retired(r) => r.client,
        }
    }
}

/// What one monitor tick produced.
#[derive(Debug, Default)]
pub struct TickOutcome {
    /// Committed transitions, in commit order.
    pub changes: Vec<Change>,
    /// Offboarding jobs minted by this tick, for the harness's offboarding worker.
    pub jobs: Vec<Job>,
}

/// The request paths the load test drives. Every method may run concurrently with every other.
pub trait MasterPaths: Send + Sync {
    /// Ping: records a liveness signal of `client`; returns once the record is updated.
    fn ping(&self, client: &str) -> PingStatus;
    /// MountSegment.
    fn mount(&self, client: &str, segment: &str, size: u64) -> Result<(), MasterError>;
    /// ReMount of `specs` (empty = a segment-less client) *without* the walk over the metadata.
    fn remount_segments(&self, client: &str, specs: &[SegmentSpec]) -> Result<(), MasterError>;
    /// One pass over every metadata shard, one shard lock at a time, visiting every replica
    /// (the post-promotion ReMount's adoption walk; its cost also stands for upstream's
    /// all-shard cleanup sweep). Returns the replicas matched, so it is not optimised away.
    fn walk(&self, client: &str, specs: &[SegmentSpec]) -> usize;
    /// ReMount as the design serves a joining client: the segments, then, if `walk`, the walk.
    fn remount(&self, client: &str, specs: &[SegmentSpec], walk: bool) -> Result<(), MasterError> {
        self.remount_segments(client, specs)?;
        if walk {
            std::hint::black_box(self.walk(client, specs));
        }
        Ok(())
    }
    /// UnmountSegment: the segment and every replica on it go.
    fn unmount(&self, client: &str, segment: &str) -> Result<(), MasterError>;
    /// PutStart of one replica of `size` bytes.
    fn put(&self, key: &str, size: u64) -> Result<Vec<ReplicaDesc>, MasterError>;
    /// PutEnd.
    fn put_end(&self, key: &str) -> Result<(), MasterError>;
    /// GetReplicaList.
    fn get(&self, key: &str) -> Result<Vec<ReplicaDesc>, MasterError>;
    /// Remove.
    fn remove(&self, key: &str) -> Result<(), MasterError>;
    /// Does the object table hold `key` (servable or not)?
    fn contains(&self, key: &str) -> bool;
    /// The id of client `name`, if it was ever mounted.
    fn client_id(&self, name: &str) -> Option<ClientId>;
    /// One monitor tick.
    fn tick(&self) -> TickOutcome;
    /// Runs a batch of offboarding jobs to completion; hands back the ones that failed.
    fn run_jobs(&self, jobs: Vec<Job>) -> Vec<Job>;
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
    fn ping(&self, client: &str) -> PingStatus {
        // The master's own Ping (no lock): a recovery is recorded among its events, which
        // `tick` hands to the harness.
        Master::ping(self, client)
    }

    fn mount(&self, client: &str, segment: &str, size: u64) -> Result<(), MasterError> {
        Master::mount(self, client, segment, size)
    }

    fn remount_segments(&self, client: &str, specs: &[SegmentSpec]) -> Result<(), MasterError> {
        Master::remount(self, client, specs)
    }

    fn walk(&self, client: &str, specs: &[SegmentSpec]) -> usize {
        // The post-promotion adoption walk: every metadata shard, one lock at a time.
        self.adoption_walk(client, specs)
    }

    fn unmount(&self, client: &str, segment: &str) -> Result<(), MasterError> {
        Master::unmount(self, client, segment)
    }

    fn put(&self, key: &str, size: u64) -> Result<Vec<ReplicaDesc>, MasterError> {
        Master::put(self, key, size, 1)
    }

    fn put_end(&self, key: &str) -> Result<(), MasterError> {
        Master::put_end(self, key)
    }

    fn get(&self, key: &str) -> Result<Vec<ReplicaDesc>, MasterError> {
        Master::get(self, key)
    }

    fn remove(&self, key: &str) -> Result<(), MasterError> {
        Master::remove(self, key)
    }

    fn contains(&self, key: &str) -> bool {
        self.shards().lock_key(key).objects.contains_key(key)
    }

    fn client_id(&self, name: &str) -> Option<ClientId> {
        Master::client_id(self, name)
    }

    fn tick(&self) -> TickOutcome {
        Master::tick(self);
        let changes = self
            .take_events()
            .into_iter()
            .filter_map(|e| match e {
                MasterEvent::Liveness(LivenessEvent::Transition(t)) => Some(Change {
                    client: t.client,
                    from: t.from,
                    to: t.to,
                }),
                _ => None,
            })
            .collect();
        TickOutcome {
            changes,
            jobs: self.take_jobs().into_iter().map(Job::Ours).collect(),
        }
    }

    fn run_jobs(&self, jobs: Vec<Job>) -> Vec<Job> {
        let mut failed = Vec::new();
        for job in jobs {
            match job {
                Job::Ours(job) => {
                    let mut steps = Shared(self);
                    if let Err(back) = complete_client_offboarding(&mut steps, self.liveness().registry(), job) {
                        failed.push(Job::Ours(back));
                    }
                }
                // Not ours: nothing of this master to clean up.
                Job::Retired(_) => {}
            }
        }
        failed
    }

    fn snapshot(&self) -> usize {
        Master::snapshot(self).objects.len()
    }
}

/// The workers' steps (`SharedSteps`, `&self`: one shard lock per bounded batch).
struct Shared<'a>(&'a Master);

impl OffboardingSteps for Shared<'_> {
    fn run_step(
        &mut self,
        step: crate::offboarding::Step,
        job: &mut ClientOffboardingJob,
    ) -> Result<crate::offboarding::Progress, crate::offboarding::CleanupError> {
        self.0.run_step_shared(step, job)
    }
}

impl<T: MasterPaths + ?Sized> MasterPaths for Arc<T> {
    fn ping(&self, client: &str) -> PingStatus {
        (**self).ping(client)
    }
    fn mount(&self, client: &str, segment: &str, size: u64) -> Result<(), MasterError> {
        (**self).mount(client, segment, size)
    }
    fn remount_segments(&self, client: &str, specs: &[SegmentSpec]) -> Result<(), MasterError> {
        (**self).remount_segments(client, specs)
    }
    fn walk(&self, client: &str, specs: &[SegmentSpec]) -> usize {
        (**self).walk(client, specs)
    }
    fn remount(&self, client: &str, specs: &[SegmentSpec], walk: bool) -> Result<(), MasterError> {
        (**self).remount(client, specs, walk)
    }
    fn unmount(&self, client: &str, segment: &str) -> Result<(), MasterError> {
        (**self).unmount(client, segment)
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
    fn contains(&self, key: &str) -> bool {
        (**self).contains(key)
    }
    fn client_id(&self, name: &str) -> Option<ClientId> {
        (**self).client_id(name)
    }
    fn tick(&self) -> TickOutcome {
        (**self).tick()
    }
    fn run_jobs(&self, jobs: Vec<Job>) -> Vec<Job> {
        (**self).run_jobs(jobs)
    }
    fn snapshot(&self) -> usize {
        (**self).snapshot()
    }
}
