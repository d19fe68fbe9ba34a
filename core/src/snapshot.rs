//! The HA snapshot format: what a master's metadata looks like on disk.
//!
//! Versioned, with two encodings of the same [`Snapshot`] value:
//! - **binary** (compact, for HA): `MAGIC` (4 bytes) · format version (u32 LE) · payload length
//!   (u64 LE) · payload (postcard) · CRC-32 of the payload (u32 LE);
//! - **JSON** (for debugging): `serde_json` of the same value, `version` inside.
//!
//! Liveness words and timers are process-local and never serialized: a restored client is
//! Active with a fresh active TTL and not ready (invariant 19). What *is* serialized is every
//! pending offboarding job (incarnation, steps done, attempts) and the per-incarnation scratch
//! its later steps need, so a restored master resumes it before that client id may mount again
//! (decisions.md, question 3).
//!
//! Decoding never panics and never trusts the input: a truncated, corrupted or future-version
//! snapshot is refused with a [`SnapshotError`] naming what is wrong.
//!
//! Owns: the format (the `*Snap` types, encode/decode, the checks on the bytes). Takes no lock and
//! reads no live state: a master's cut is `master/snapshot/`, a bare core's sections are
//! `persist.rs`. It names the master's `Lifecycle` and `TaskKind` and the offboarding `Step` as
//! field types only.
#![forbid(unsafe_code)]

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The first four bytes of a binary snapshot.
pub const MAGIC: [u8; 4] = *b"MCLS";
/// The format version this build writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 1;
const HEADER_LEN: usize = 4 + 4 + 8;
const TRAILER_LEN: usize = 4;

/// Why a snapshot was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// Fewer bytes than the header and trailer, or than the header's payload length.
    #[error("snapshot truncated: {0}")]
    Truncated(String),
    /// Not a snapshot of this format.
    #[error("not a mooncake-liveness snapshot (magic {0:02x?})")]
    BadMagic([u8; 4]),
    /// Written by a newer build.
    #[error("snapshot format version {found} is newer than this build supports ({supported})")]
    FutureVersion {
        /// The version found.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// The payload does not match its checksum.
    #[error("snapshot checksum mismatch: stored {stored:08x}, computed {computed:08x}")]
    Checksum {
        /// Stored CRC-32.
        stored: u32,
        /// Computed CRC-32.
        computed: u32,
    },
    /// The payload does not decode.
    #[error("snapshot payload does not decode: {0}")]
    Decode(String),
    /// It decodes but contradicts itself (e.g. a replica on a segment that does not exist).
    #[error("snapshot is inconsistent: {0}")]
    Inconsistent(String),
}

/// A client incarnation in the registry at snapshot time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientSnap {
    /// Client id.
    pub id: u128,
    /// Incarnation number.
    pub incarnation: u64,
    /// Readiness at snapshot time (diagnostic: a restored client is never ready until ReMount).
    pub ready: bool,
    /// `Some` iff the incarnation is Offline with its offboarding job pending.
    pub job: Option<JobSnap>,
}

/// A pending offboarding job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSnap {
    /// Steps completed (a lower bound: steps are idempotent).
    pub steps_done: Vec<crate::offboarding::Step>,
    /// Attempts made.
    pub attempts: u32,
    /// Base-clock time Offline was committed (diagnostic).
    pub committed_at_ms: u64,
}

/// A mounted memory segment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentSnap {
    /// Name.
    pub name: String,
    /// Capacity.
    pub size: u64,
    /// Allocated bytes.
    pub used: u64,
    /// Owner client id.
    pub owner: u128,
    /// Owner incarnation.
    pub incarnation: u64,
    /// Lifecycle.
    pub lifecycle: crate::resources::Lifecycle,
}

/// A replica.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReplicaSnap {
    /// On a memory segment (by name).
    Memory {
        /// Segment name.
        segment: String,
        /// Written.
        complete: bool,
    },
    /// On a client's LocalDisk.
    LocalDisk {
        /// Owner client id.
        owner: u128,
        /// Owner incarnation.
        incarnation: u64,
        /// Written.
        complete: bool,
    },
}

/// An object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectSnap {
    /// Key.
    pub key: String,
    /// Tenant.
    pub tenant: String,
    /// Size.
    pub size: u64,
    /// Recency.
    pub touched: u64,
    /// Replicas in order.
    pub replicas: Vec<ReplicaSnap>,
    /// Copy/Move task.
    pub replication_task: Option<u64>,
    /// Offload/promotion task.
    pub tier_task: Option<u64>,
}

/// A task worth keeping.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSnap {
    /// Id.
    pub id: u64,
    /// Kind.
    pub kind: crate::resources::TaskKind,
    /// Key.
    pub key: String,
    /// Executor client id.
    pub executor: u128,
    /// Executor incarnation.
    pub incarnation: u64,
    /// Source segment name.
    pub source: Option<String>,
    /// Target segment name.
    pub target: Option<String>,
    /// Handed out already.
    pub delivered: bool,
}

/// A LocalDisk registration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalDiskSnap {
    /// Client id.
    pub client: u128,
    /// Incarnation.
    pub incarnation: u64,
    /// Capacity.
    pub capacity: u64,
    /// Used bytes.
    pub used: u64,
    /// Keys with a LocalDisk replica.
    pub keys: Vec<String>,
}

/// Scratch an offboarding job's later steps need (refunds, segment names), per incarnation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScratchSnap {
    /// Client id.
    pub client: u128,
    /// Incarnation.
    pub incarnation: u64,
    /// Tenant → bytes to refund.
    pub refunds: BTreeMap<String, u64>,
    /// Segment names whose external entries must go.
    pub segment_names: Vec<String>,
}

/// A master's metadata.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Format version.
    pub version: u32,
    /// Client names, by id.
    pub names: Vec<(String, u128)>,
    /// Live incarnations.
    pub clients: Vec<ClientSnap>,
    /// Client ids with no current incarnation, and their last incarnation number.
    pub vacant: Vec<(u128, u64)>,
    /// Segments, by name.
    pub segments: Vec<SegmentSnap>,
    /// Objects, by key.
    pub objects: Vec<ObjectSnap>,
    /// Tasks, by id.
    pub tasks: Vec<TaskSnap>,
    /// The next task id.
    pub next_task_id: u64,
    /// LocalDisk registrations.
    pub local_disks: Vec<LocalDiskSnap>,
    /// Tenant → (used, limit).
    pub quotas: Vec<(String, u64, Option<u64>)>,
    /// The recency counter.
    pub lru_clock: u64,
    /// NoF segments: (name, size, failures).
    pub nof: Vec<(String, u64, u32)>,
    /// Entries in the external metadata store.
    pub external: Vec<String>,
    /// Offboarding scratch.
    pub scratch: Vec<ScratchSnap>,
}

impl Snapshot {
    /// The compact binary encoding.
    pub fn encode(&self) -> Vec<u8> {
        let payload = postcard::to_stdvec(self).expect("serializing plain data into a Vec cannot fail");
        let mut out = Vec::with_capacity(HEADER_LEN + payload.len() + TRAILER_LEN);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&payload);
        out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        out
    }

    /// Decodes the binary encoding, refusing anything truncated, corrupted or newer.
    pub fn decode(bytes: &[u8]) -> Result<Snapshot, SnapshotError> {
        if bytes.len() < HEADER_LEN + TRAILER_LEN {
            return Err(SnapshotError::Truncated(format!(
                "{} bytes, header and trailer need {}",
                bytes.len(),
                HEADER_LEN + TRAILER_LEN
            )));
        }
        let magic: [u8; 4] = bytes[0..4].try_into().expect("4 bytes");
        if magic != MAGIC {
            return Err(SnapshotError::BadMagic(magic));
        }
        let version = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
        if version > FORMAT_VERSION || version == 0 {
            return Err(SnapshotError::FutureVersion {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let len = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
        let available = (bytes.len() - HEADER_LEN - TRAILER_LEN) as u64;
        if len != available {
            return Err(SnapshotError::Truncated(format!(
                "payload length {len}, {available} bytes present"
            )));
        }
        let payload = &bytes[HEADER_LEN..HEADER_LEN + len as usize];
        let stored = u32::from_le_bytes(bytes[bytes.len() - 4..].try_into().expect("4 bytes"));
        let computed = crc32fast::hash(payload);
        if stored != computed {
            return Err(SnapshotError::Checksum { stored, computed });
        }
        let snap: Snapshot = postcard::from_bytes(payload).map_err(|e| SnapshotError::Decode(e.to_string()))?;
        if snap.version != version {
            return Err(SnapshotError::Inconsistent(format!(
                "header version {version}, payload version {}",
                snap.version
            )));
        }
        Ok(snap)
    }

    /// The JSON encoding (debugging).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain data serializes")
    }

    /// Decodes the JSON encoding.
    pub fn from_json(text: &str) -> Result<Snapshot, SnapshotError> {
        let snap: Snapshot = serde_json::from_str(text).map_err(|e| SnapshotError::Decode(e.to_string()))?;
        if snap.version > FORMAT_VERSION || snap.version == 0 {
            return Err(SnapshotError::FutureVersion {
                found: snap.version,
                supported: FORMAT_VERSION,
            });
        }
        Ok(snap)
    }
}
