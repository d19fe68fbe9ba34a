//! The resource vocabulary the snapshot format records: a segment's lifecycle and a task's
//! kind. They are the reference master's types (`mooncake-liveness-master` re-exports them where
//! it uses them), defined here because the snapshot format they appear in is the core's.
//!
//! Owns: [`Lifecycle`] and [`TaskKind`], plain data. May not touch: anything with state.

use crate::eligibility::Purpose;

/// A segment's lifecycle, independent of its owner's liveness (invariant 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Lifecycle {
    /// Being mounted: serves nothing yet.
    Mounting,
    /// Allocatable and readable.
    Ok,
    /// Readable, not allocatable; its objects are being moved away.
    Draining,
    /// Being unmounted: serves nothing.
    Unmounting,
}

impl Lifecycle {
    /// Does this lifecycle allow `purpose`?
    pub fn permits(self, purpose: Purpose) -> bool {
        matches!(
            (self, purpose),
            (Lifecycle::Ok, _) | (Lifecycle::Draining, Purpose::Read)
        )
    }
}

/// What a task asks its executor to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    /// Copy a replica to `target`.
    Copy,
    /// Move a replica from `source` to `target`.
    Move,
    /// Write a memory replica to the executor's LocalDisk.
    Offload,
    /// Read the executor's LocalDisk replica into memory on `target`.
    Promote,
}

impl TaskKind {
    /// The name `replay` prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Copy => "copy",
            Self::Move => "move",
            Self::Offload => "offload",
            Self::Promote => "promote",
        }
    }
}
