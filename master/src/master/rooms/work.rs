//! The work room: the task table (Copy/Move, offload and promotion tasks) and its lock.
//!
//! Owns: the `tasks` leaf. Tasks are created, completed and cancelled only under their
//! object's shard lock (the data room's), so a path takes that shard first and this leaf under
//! it, briefly. May not touch: any other room.

use super::super::lock_order::{lock, Held, Level, Ordered};
use super::super::task::Tasks;
use crate::sync::{Mutex, MutexGuard};

/// The task table behind its lock (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct Work {
    tasks: Mutex<Tasks>,
}

impl Ordered for Tasks {
    const LEVEL: Level = Level::Leaf;
}

impl Work {
    /// The tasks (the leaf, locked).
    pub(crate) fn tasks(&self) -> Held<MutexGuard<'_, Tasks>> {
        lock(&self.tasks)
    }

    /// The tasks, past the order check (a test holding every lock of the master at once).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn tasks_raw(&self) -> MutexGuard<'_, Tasks> {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }
}
