//! Offboarding: `prepare` (win the Suspected → Offline commit) → `ClientOffboardingJob` →
//! `complete` (run the steps `metadata`, `segments`, `local_disk`, `quota`,
//! `external_metadata` in order, then compare-and-erase the record).
//!
//! Each step records its completion in the job, so a failed attempt leaves the job retryable
//! and a retry resumes at the failed step (invariant 17). The caller schedules retries with
//! [`ClientOffboardingJob::backoff_ms`].
//!
//! A [`ClientOffboardingJob`] is a capability in the rustls sense: it is not `Clone`, has no
//! public constructor, and the only way to mint one is to present the proof that the caller
//! won the Suspected → Offline CAS of that record (`OfflineCommitted`, which only the record's
//! CAS loop can make). Hence exactly one job per incarnation (invariant 15).
//!
//! ```compile_fail
//! // A job cannot be cloned: there is exactly one per incarnation.
//! fn dup(job: mooncake_liveness::offboarding::ClientOffboardingJob) {
//!     let twin: mooncake_liveness::offboarding::ClientOffboardingJob = job.clone();
//!     drop((job, twin));
//! }
//! ```
//!
//! ```
//! // ... while borrowing it to read its identity is fine.
//! fn who(job: &mooncake_liveness::offboarding::ClientOffboardingJob) -> u64 {
//!     job.incarnation().0
//! }
//! ```

pub mod brakes;
#[cfg(not(loom))]
pub mod executor;
mod job;
pub mod queue;

pub use job::{
    complete_client_offboarding, CleanupError, ClientOffboardingJob, Completed, NoResources, OffboardingSteps,
    Progress, Step,
};
