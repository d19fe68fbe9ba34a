//! The seven enums on the wire, each as the integer newtype it is there (names and values as
//! Mooncake 3b5a594 declares them: `mooncake-store/include/types.h` `ErrorCode`,
//! `ClientStatus`, `ObjectDataType`; `replica.h` `ReplicaStatus`, `SoftPinAction`;
//! `allocator.h` `ReplicaType`; `task_manager.h` `TaskType`). Their type codes come from the
//! underlying integer: `int32_t` (`01`) unless declared `: uint8_t` (`06`).

crate::pack_int! {
    /// `mooncake::ErrorCode` (`int32_t`): the error half of every `expected<T, ErrorCode>`.
    /// Only the codes a master of this protocol hands out, or that a client tests for, are named.
    pub struct ErrorCode(i32) {
        /// Success (never inside an `expected`'s error).
        OK = 0,
        /// An internal error.
        INTERNAL_ERROR = -1,
        /// No such segment.
        SEGMENT_NOT_FOUND = -101,
        /// The segment is mounted already.
        SEGMENT_ALREADY_EXISTS = -102,
        /// No such client.
        CLIENT_NOT_FOUND = -103,
        /// No segment has room for the allocation.
        NO_AVAILABLE_HANDLE = -200,
        /// A malformed key.
        INVALID_KEY = -400,
        /// Parameters the master refuses.
        INVALID_PARAMS = -600,
        /// The client may not do this.
        ILLEGAL_CLIENT = -601,
        /// The object exists but has no readable replica yet.
        REPLICA_IS_NOT_READY = -703,
        /// No such object.
        OBJECT_NOT_FOUND = -704,
        /// A Put of a key that exists.
        OBJECT_ALREADY_EXISTS = -705,
        /// A Remove during the object's lease.
        OBJECT_HAS_LEASE = -706,
        /// A Remove while a Copy/Move of the object runs.
        OBJECT_HAS_REPLICATION_TASK = -708,
        /// No such replica.
        REPLICA_NOT_FOUND = -710,
        /// A transfer failed (client side).
        TRANSFER_FAIL = -800,
        /// An RPC failed (client side).
        RPC_FAIL = -900,
        /// Not possible in the current status (e.g. the client is Offline and being offboarded).
        UNAVAILABLE_IN_CURRENT_STATUS = -1010,
        /// Not supported by this master.
        NOT_SUPPORTED = -1012,
        /// No such task.
        TASK_NOT_FOUND = -1400,
        /// The tenant's quota cannot hold the allocation.
        TENANT_QUOTA_EXCEEDED = -1700,
    }
}

crate::pack_int! {
    /// `mooncake::ClientStatus`, the second field of a Ping reply.
    pub struct ClientStatus(i32) {
        /// Uninitialized.
        UNDEFINED = 0,
        /// Alive and mounted on this master.
        OK = 1,
        /// The client must ReMount its segments (first contact, or the master lost it).
        NEED_REMOUNT = 2,
    }
}

crate::pack_int! {
    /// `mooncake::ReplicaStatus` of a replica descriptor.
    pub struct ReplicaStatus(i32) {
        /// Uninitialized.
        UNDEFINED = 0,
        /// Space allocated, waiting for the write.
        INITIALIZED = 1,
        /// Being written.
        PROCESSING = 2,
        /// Written: readable.
        COMPLETE = 3,
        /// Removed.
        REMOVED = 4,
        /// Failed.
        FAILED = 5,
    }
}

crate::pack_int! {
    /// `mooncake::ReplicaType`: which replicas PutEnd/PutRevoke finish.
    pub struct ReplicaType(i32) {
        /// Memory replicas.
        MEMORY = 0,
        /// Disk replicas.
        DISK = 1,
        /// LocalDisk replicas.
        LOCAL_DISK = 2,
        /// NVMe-oF SSD replicas.
        NOF_SSD = 3,
        /// Every synchronous replica (what the client's put path sends).
        ALL = 4,
        /// Distributed-filesystem replicas.
        DFS = 100,
    }
}

crate::pack_int! {
    /// `mooncake::SoftPinAction` (`uint8_t`) of a ReplicateConfig.
    pub struct SoftPinAction(u8) {
        /// Keep the object's soft pin as it is.
        PRESERVE = 0,
        /// Soft-pin the object.
        ENABLE = 1,
        /// Clear the soft pin.
        DISABLE = 2,
    }
}

crate::pack_int! {
    /// `mooncake::ObjectDataType` (`uint8_t`) of a ReplicateConfig.
    pub struct ObjectDataType(u8) {
        /// Unknown (the client's default).
        UNKNOWN = 0,
        /// KV cache.
        KVCACHE = 1,
        /// A tensor.
        TENSOR = 2,
        /// Weights.
        WEIGHT = 3,
        /// A sample.
        SAMPLE = 4,
        /// Activations.
        ACTIVATION = 5,
        /// Gradients.
        GRADIENT = 6,
        /// Optimizer state.
        OPTIMIZER_STATE = 7,
        /// Metadata.
        METADATA = 8,
        /// General data.
        GENERAL = 9,
    }
}

crate::pack_int! {
    /// `mooncake::TaskType` of a task handed out by FetchTasks.
    pub struct TaskType(i32) {
        /// Copy a replica.
        REPLICA_COPY = 0,
        /// Move a replica.
        REPLICA_MOVE = 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::{from_bytes, to_bytes};

    #[test]
    fn names_and_unknown_values_round_trip() {
        assert_eq!(ErrorCode::OBJECT_HAS_LEASE.to_string(), "OBJECT_HAS_LEASE");
        assert_eq!(ErrorCode(-1).name(), Some("INTERNAL_ERROR"));
        assert_eq!(ErrorCode(-12345).to_string(), "ErrorCode(-12345)");
        let odd = ClientStatus(77);
        assert_eq!(from_bytes::<ClientStatus>(&to_bytes(&odd)), Ok(odd));
        assert_eq!(
            from_bytes::<ObjectDataType>(&to_bytes(&ObjectDataType(200))),
            Ok(ObjectDataType(200))
        );
    }
}
