//! Offboarding: `prepare` (win the Suspected → Offline commit) → `ClientOffboardingJob` →
//! `complete`.
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

use crate::liveness::record::OfflineCommitted;
use crate::liveness::{ClientId, ClientLivenessRecord, Incarnation, Registry};
use crate::sync::Arc;

/// The retryable terminal cleanup of one Offline incarnation.
#[derive(Debug)]
pub struct ClientOffboardingJob {
    record: Arc<ClientLivenessRecord>,
    committed_at_ms: u64,
    attempts: u32,
}

impl ClientOffboardingJob {
    /// Mints the job for `record` from the proof that the caller committed it Offline.
    pub(crate) fn from_commit(record: Arc<ClientLivenessRecord>, _proof: OfflineCommitted, at_ms: u64) -> Self {
        Self {
            record,
            committed_at_ms: at_ms,
            attempts: 0,
        }
    }

    /// The client being offboarded.
    pub fn client(&self) -> ClientId {
        self.record.client()
    }

    /// The incarnation being offboarded.
    pub fn incarnation(&self) -> Incarnation {
        self.record.incarnation()
    }

    /// The Offline record (the remount barrier while the job is pending).
    pub fn record(&self) -> &Arc<ClientLivenessRecord> {
        &self.record
    }

    /// Base-clock time at which Offline was committed.
    pub fn committed_at_ms(&self) -> u64 {
        self.committed_at_ms
    }

    /// Completed attempts so far.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }
}

/// Completes a job whose cleanup has been done: compare-and-erases the record from the registry
/// (only if the registry still maps the client id to this very record) and consumes the job.
/// Returns whether this call erased it.
pub fn complete_client_offboarding(registry: &Registry, mut job: ClientOffboardingJob) -> bool {
    job.attempts += 1;
    registry.compare_and_erase(&job.record)
}
