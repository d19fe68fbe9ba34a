//! Offboarding: `prepare` (win the Suspected → Offline commit) → `ClientOffboardingJob` →
//! `complete` (run the steps `metadata`, `segments`, `local_disk`, `quota`,
//! `external_metadata` in order, then compare-and-erase the record).
//!
//! Each step records its completion in the job, so a failed attempt leaves the job retryable
//! and a retry resumes at the failed step (invariant 17). Retries, and the start rate, follow
//! one [`schedule::Schedule`], whichever driver runs the job (the master inline, or the
//! [`executor`]'s workers).
//!
//! A [`ClientOffboardingJob`] is a capability in the rustls sense: it is not `Clone`, has no
//! public constructor, and the only way to mint one is to present the proof that the caller
//! won the Suspected → Offline CAS of that record (`OfflineCommitted`, which only the record's
//! CAS loop can make). Hence exactly one job per incarnation (invariant 15).
//!
//! ```compile_fail
//! // A job cannot be cloned: there is exactly one per incarnation.
//! fn dup(job: mooncake_liveness_core::offboarding::ClientOffboardingJob) {
//!     let twin: mooncake_liveness_core::offboarding::ClientOffboardingJob = job.clone();
//!     drop((job, twin));
//! }
//! ```
//!
//! ```
//! // ... while borrowing it to read its identity is fine.
//! fn who(job: &mooncake_liveness_core::offboarding::ClientOffboardingJob) -> u64 {
//!     job.incarnation().0
//! }
//! ```
//!
//! Owns: the job capability, its step order, the retry schedule both drivers use
//! ([`schedule`]), the MPSC queue, the executor and its brakes. May not touch any master table: steps run through [`OffboardingSteps`] /
//! `SharedSteps`, which the embedder implements; the only write to liveness state is the final
//! compare-and-erase of the job's own record in the registry.

use crate::liveness::record::Evaluation;
use crate::liveness::{ClientLivenessRecord, Liveness};
use crate::sync::Arc;

/// Why [`prepare_client_offboarding`] minted no job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PrepareError {
    /// The incarnation is Active, or Suspected with its suspicion window still open: nothing
    /// to do yet (or a signal recovered it meanwhile).
    #[error("the incarnation is not due for offboarding")]
    NotDue,
    /// The incarnation is already Offline: its one job was minted by whoever committed that.
    #[error("the incarnation is already Offline; its job exists elsewhere")]
    AlreadyOffline,
}

/// PrepareClientOffboarding: commits `record` Suspected → Offline at the liveness clock's now
/// (if its suspicion window has passed) and mints the incarnation's one job. The monitor does
/// the same inside its tick; this is the entry point for an embedder that drives its own.
pub fn prepare_client_offboarding(
    liveness: &Liveness,
    record: &Arc<ClientLivenessRecord>,
) -> Result<ClientOffboardingJob, PrepareError> {
    let at = liveness.clock().base_now();
    match record.commit_offline(liveness.clock().to_liveness(at), liveness.ttls()) {
        Evaluation::Offline { proof, .. } => {
            liveness.note_suspected(-1);
            Ok(ClientOffboardingJob::from_commit(record.clone(), proof, at))
        }
        Evaluation::Retired => Err(PrepareError::AlreadyOffline),
        _ => Err(PrepareError::NotDue),
    }
}

pub mod brakes;
pub mod executor;
mod job;
pub mod queue;
pub mod schedule;

pub use job::{
    complete_client_offboarding, CleanupError, ClientOffboardingJob, Completed, NoResources, OffboardingSteps,
    Progress, Step,
};
