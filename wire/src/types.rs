//! The message structs, field for field as the 0.3.13.post1 client's type literals describe
//! them (each literal is in `tests/data`; the names are Mooncake 3b5a594's:
//! `mooncake-store/include/types.h` `Segment`, `UUID`; `replica.h` `ReplicateConfig`,
//! `Replica::Descriptor` and its five alternatives; `allocator.h` `AllocatedBuffer::Descriptor`;
//! `rpc_types.h` `ObjectMeta`, `PingResponse`, `GetReplicaListResponse`,
//! `GetStorageConfigResponse`, `TaskAssignment`).

use crate::enums::{ClientStatus, ObjectDataType, ReplicaStatus, SoftPinAction, TaskType};
use crate::pack::{code, DecodeError, Pack, Reader, Writer};
use crate::pack_struct;

/// `mooncake::UUID` = `std::pair<uint64_t, uint64_t>`: struct_pack's one trivial struct here,
/// so its literal carries its pack alignment and alignment (8, 8): `fd 04 04 89 89 ff`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Uuid {
    /// `first`.
    pub first: u64,
    /// `second`.
    pub second: u64,
}

impl std::fmt::Display for Uuid {
    /// Mooncake's form (`types.h` `operator<<`): `first-second`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.first, self.second)
    }
}

impl Pack for Uuid {
    const MIN_SIZE: usize = 16;
    fn literal(out: &mut Vec<u8>) {
        let align = code::size(8);
        out.extend_from_slice(&[code::STRUCT, code::U64, code::U64, align, align, code::END]);
    }
    fn encode(&self, w: &mut Writer<'_>) {
        w.put(&self.first.to_le_bytes());
        w.put(&self.second.to_le_bytes());
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            first: u64::decode(r)?,
            second: u64::decode(r)?,
        })
    }
}

pack_struct! {
    /// A memory segment a client registers (`MountSegment`, `ReMountSegment`).
    pub struct Segment {
        /// The segment's id (chosen by the client).
        pub id: Uuid,
        /// Its name (the client's transport endpoint, e.g. `192.0.2.1:15000`).
        pub name: String,
        /// Address of its first byte in the client's address space.
        pub base: u64,
        /// Size, bytes.
        pub size: u64,
        /// Transfer-engine endpoint.
        pub te_endpoint: String,
        /// Transport protocol (`tcp`, `rdma`).
        pub protocol: String,
        /// Host id.
        pub host_id: String,
    }
}

pack_struct! {
    /// Placement options of a Put (13 fields in 0.3.13.post1).
    pub struct ReplicateConfig {
        /// Memory replicas wanted.
        pub replica_num: u64,
        /// NVMe-oF replicas wanted.
        pub nof_replica_num: u64,
        /// DFS replicas wanted.
        pub dfs_replica_num: u64,
        /// Soft-pin action.
        pub soft_pin_action: SoftPinAction,
        /// Soft-pin TTL.
        pub soft_pin_ttl_ms: Option<u64>,
        /// Hard pin: never evicted.
        pub with_hard_pin: bool,
        /// Preferred segments.
        pub preferred_segments: Vec<String>,
        /// Deprecated single preferred segment.
        pub preferred_segment: String,
        /// Preferred NoF segments.
        pub preferred_nof_segments: Vec<String>,
        /// Prefer the writer's node.
        pub prefer_alloc_in_same_node: bool,
        /// Data type.
        pub data_type: ObjectDataType,
        /// Host id.
        pub host_id: String,
        /// Group ids.
        pub group_ids: Option<Vec<String>>,
    }
}

impl ReplicateConfig {
    /// `replicas` memory replicas and nothing else: no NoF or DFS replica, no pin, no
    /// preference.
    pub fn memory(replicas: u64) -> Self {
        Self {
            replica_num: replicas,
            nof_replica_num: 0,
            dfs_replica_num: 0,
            soft_pin_action: SoftPinAction::default(),
            soft_pin_ttl_ms: None,
            with_hard_pin: false,
            preferred_segments: vec![],
            preferred_segment: String::new(),
            preferred_nof_segments: vec![],
            prefer_alloc_in_same_node: false,
            data_type: ObjectDataType::default(),
            host_id: String::new(),
            group_ids: None,
        }
    }
}

pack_struct! {
    /// What PutEnd finishes: the key and an optional checksum.
    pub struct ObjectMeta {
        /// The key.
        pub key: String,
        /// Checksum of the object's bytes.
        pub object_checksum: Option<u64>,
    }
}

pack_struct! {
    /// The Ping reply.
    pub struct PingResponse {
        /// The master's view version.
        pub view_version_id: i64,
        /// `OK` or `NEED_REMOUNT`.
        pub client_status: ClientStatus,
    }
}

pack_struct! {
    /// The GetStorageConfig reply.
    pub struct GetStorageConfigResponse {
        /// Directory of the disk tier (empty: none).
        pub fsdir: String,
        /// Disk eviction enabled.
        pub enable_disk_eviction: bool,
        /// Disk quota, bytes.
        pub quota_bytes: u64,
    }
}

pack_struct! {
    /// `AllocatedBuffer::Descriptor`: where a memory replica's bytes are.
    pub struct BufferDescriptor {
        /// Size, bytes.
        pub size: u64,
        /// Address inside the owner's registered segment.
        pub buffer_address: u64,
        /// Transport protocol.
        pub protocol: String,
        /// The owner's transport endpoint (the segment's name).
        pub transport_endpoint: String,
    }
}

pack_struct! {
    /// A memory replica.
    pub struct MemoryDescriptor {
        /// Its buffer.
        pub buffer_descriptor: BufferDescriptor,
    }
}

pack_struct! {
    /// An NVMe-oF replica.
    pub struct NofDescriptor {
        /// Its buffer.
        pub buffer_descriptor: BufferDescriptor,
    }
}

pack_struct! {
    /// A disk replica.
    pub struct DiskDescriptor {
        /// File path.
        pub file_path: String,
        /// Size, bytes.
        pub object_size: u64,
    }
}

pack_struct! {
    /// A LocalDisk (client SSD) replica.
    pub struct LocalDiskDescriptor {
        /// The client holding it.
        pub client_id: Uuid,
        /// Size, bytes.
        pub object_size: u64,
        /// That client's transport endpoint.
        pub transport_endpoint: String,
    }
}

pack_struct! {
    /// A distributed-filesystem replica.
    pub struct DfsDescriptor {
        /// File path.
        pub file_path: String,
        /// Offset in the file.
        pub offset: u64,
        /// Size, bytes.
        pub object_size: u64,
        /// Aligned size, bytes.
        pub aligned_size: u64,
        /// Shard index.
        pub shard_idx: i32,
    }
}

/// The five-way variant of a replica descriptor (all five appear in its literal, whichever is
/// sent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DescriptorVariant {
    /// Index 0.
    Memory(MemoryDescriptor),
    /// Index 1.
    Nof(NofDescriptor),
    /// Index 2.
    Disk(DiskDescriptor),
    /// Index 3.
    LocalDisk(LocalDiskDescriptor),
    /// Index 4.
    Dfs(DfsDescriptor),
}

impl Pack for DescriptorVariant {
    const MIN_SIZE: usize = 1;
    fn literal(out: &mut Vec<u8>) {
        out.push(code::VARIANT);
        MemoryDescriptor::literal(out);
        NofDescriptor::literal(out);
        DiskDescriptor::literal(out);
        LocalDiskDescriptor::literal(out);
        DfsDescriptor::literal(out);
        out.push(code::END);
    }
    fn max_len(&self) -> u64 {
        match self {
            Self::Memory(d) => d.max_len(),
            Self::Nof(d) => d.max_len(),
            Self::Disk(d) => d.max_len(),
            Self::LocalDisk(d) => d.max_len(),
            Self::Dfs(d) => d.max_len(),
        }
    }
    fn encode(&self, w: &mut Writer<'_>) {
        let index: u8 = match self {
            Self::Memory(_) => 0,
            Self::Nof(_) => 1,
            Self::Disk(_) => 2,
            Self::LocalDisk(_) => 3,
            Self::Dfs(_) => 4,
        };
        w.put(&[index]);
        match self {
            Self::Memory(d) => d.encode(w),
            Self::Nof(d) => d.encode(w),
            Self::Disk(d) => d.encode(w),
            Self::LocalDisk(d) => d.encode(w),
            Self::Dfs(d) => d.encode(w),
        }
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(match r.u8()? {
            0 => Self::Memory(Pack::decode(r)?),
            1 => Self::Nof(Pack::decode(r)?),
            2 => Self::Disk(Pack::decode(r)?),
            3 => Self::LocalDisk(Pack::decode(r)?),
            4 => Self::Dfs(Pack::decode(r)?),
            i => return Err(DecodeError::VariantIndex(i)),
        })
    }
}

pack_struct! {
    /// `Replica::Descriptor`: one replica as PutStart and GetReplicaList hand it out.
    pub struct ReplicaDescriptor {
        /// Replica id.
        pub id: u64,
        /// Where it is.
        pub descriptor: DescriptorVariant,
        /// Its status.
        pub status: ReplicaStatus,
    }
}

pack_struct! {
    /// The GetReplicaList reply.
    pub struct GetReplicaListResponse {
        /// The replicas a reader may use.
        pub replicas: Vec<ReplicaDescriptor>,
        /// The read lease granted, ms (Remove is refused while it runs).
        pub lease_ttl_ms: u64,
        /// The object's checksum, if PutEnd gave one.
        pub object_checksum: Option<u64>,
    }
}

pack_struct! {
    /// A task FetchTasks hands a client.
    pub struct TaskAssignment {
        /// Task id.
        pub id: Uuid,
        /// Copy or move.
        pub task_type: TaskType,
        /// The task's JSON payload.
        pub payload: String,
        /// Creation time, ms since the epoch.
        pub created_at_ms_epoch: i64,
        /// Retries allowed.
        pub max_retry_attempts: u32,
    }
}
