//! The external metadata store the master mirrors mounted segments into (Mooncake's HTTP
//! metadata server), as a trait, and its in-memory implementation.
//!
//! Owns: [`ExternalMetadata`] and [`InMemoryMetadata`]. The master holds the store behind its
//! `external` leaf lock: mounts `put`, the offboarding `external_metadata` step `delete`s, a
//! snapshot reads `entries`; an implementation is called with that lock held and must not call
//! back into the master. May not touch: the master.

use std::collections::BTreeSet;

/// Entries the master keeps in an external metadata store (Mooncake's HTTP metadata server):
/// one per mounted segment. Offboarding deletes them.
pub trait ExternalMetadata: std::fmt::Debug + Send {
    /// Records `segment`.
    fn put(&mut self, segment: &str);
    /// Deletes `segment`; idempotent.
    fn delete(&mut self, segment: &str) -> Result<(), String>;
    /// Is `segment` recorded?
    fn contains(&self, segment: &str) -> bool;
    /// Every entry, sorted (snapshots).
    fn entries(&self) -> Vec<String>;
}

/// An in-memory [`ExternalMetadata`].
#[derive(Debug, Default)]
pub struct InMemoryMetadata(BTreeSet<String>);

impl ExternalMetadata for InMemoryMetadata {
    fn put(&mut self, segment: &str) {
        self.0.insert(segment.to_string());
    }
    fn delete(&mut self, segment: &str) -> Result<(), String> {
        self.0.remove(segment);
        Ok(())
    }
    fn contains(&self, segment: &str) -> bool {
        self.0.contains(segment)
    }
    fn entries(&self) -> Vec<String> {
        self.0.iter().cloned().collect()
    }
}
