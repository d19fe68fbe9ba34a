//! Refusals, in Mooncake's own vocabulary.

use std::fmt;

/// Why the master refused an operation. `code()` is the upper-case name the wire and `replay` use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MasterError {
    /// No serving segment has room: every candidate is full, not OK, or owned by a non-Active client.
    NoAvailableHandle,
    /// The key does not exist (or was removed when its last replica went away).
    ObjectNotFound,
    /// Put of a key that already exists.
    ObjectAlreadyExists,
    /// The object exists but no replica may be handed out now (being written, or owner Suspected).
    ReplicaIsNotReady,
    /// Copy/Move/promotion found no servable source replica.
    ReplicaNotFound,
    /// No such segment, or the client has no LocalDisk registration.
    SegmentNotFound,
    /// A malformed request: size 0, a segment held by another client, a mismatched remount.
    InvalidParams,
    /// The key already has a Copy/Move task in flight.
    ObjectHasReplicationTask,
    /// A callback from a client that does not own the work (or is unknown).
    IllegalClient,
    /// The target or executor cannot take new work now (not Active, segment not OK); retry later.
    UnavailableInCurrentStatus,
    /// The client's previous incarnation is Offline and still being offboarded; mount again later.
    ClientOffboarding,
    /// No such task.
    TaskNotFound,
    /// The tenant's quota cannot hold the new replicas.
    TenantQuotaExceeded,
}

impl MasterError {
    /// The upper-case code.
    pub fn code(self) -> &'static str {
        match self {
            Self::NoAvailableHandle => "NO_AVAILABLE_HANDLE",
            Self::ObjectNotFound => "OBJECT_NOT_FOUND",
            Self::ObjectAlreadyExists => "OBJECT_ALREADY_EXISTS",
            Self::ReplicaIsNotReady => "REPLICA_IS_NOT_READY",
            Self::ReplicaNotFound => "REPLICA_NOT_FOUND",
            Self::SegmentNotFound => "SEGMENT_NOT_FOUND",
            Self::InvalidParams => "INVALID_PARAMS",
            Self::ObjectHasReplicationTask => "OBJECT_HAS_REPLICATION_TASK",
            Self::IllegalClient => "ILLEGAL_CLIENT",
            Self::UnavailableInCurrentStatus => "UNAVAILABLE_IN_CURRENT_STATUS",
            Self::ClientOffboarding => "CLIENT_OFFBOARDING",
            Self::TaskNotFound => "TASK_NOT_FOUND",
            Self::TenantQuotaExceeded => "TENANT_QUOTA_EXCEEDED",
        }
    }
}

impl fmt::Display for MasterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl std::error::Error for MasterError {}
