//! What the master hands out: the events it records ([`MasterEvent`]) and the descriptors of
//! replicas and tasks it returns to callers.
//!
//! Owns: plain data types only, with no lock and no reference to the master's tables, so every
//! path module (and the simulator, replay and telemetry above) can name them without importing
//! a path. May not touch: anything with state.

use crate::liveness::{ClientId, Incarnation};
use crate::monitor::LivenessEvent;

/// Something the master did on its own (between operations) or as a side effect of one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MasterEvent {
    /// What the liveness monitor or a signal path committed or detected: a transition, a
    /// credited stall, the mass-suspicion brake (the core's event, as the monitor reported it).
    Liveness(LivenessEvent),
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
