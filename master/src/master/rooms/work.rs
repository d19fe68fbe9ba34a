//! The work room: the task table (Copy/Move, offload and promotion tasks) and its lock.
//!
//! Owns: the `tasks` leaf. Tasks are created, completed and cancelled only under their
//! object's shard lock (the data room's), so a path takes that shard first and this leaf under
//! it, briefly. May not touch: any other room.
//!
//! ## The task table
//! Per-client FIFO queues of Copy/Move/promotion work (fetched with
//! `fetch_tasks`) and of offload work (handed out by the offload heartbeat).
//!
//! A leaf behind the room's `tasks` mutex. Every task names one object; tasks are created,
//! completed and cancelled only under that object's shard lock, and indexed by shard, so a
//! snapshot copies a shard's objects and their tasks as one consistent cut.

use super::super::lock_order::{lock, Held, Level, Ordered};
use super::super::segment::{Segment, SegmentId};
use crate::liveness::{ClientId, Owner};
use crate::sync::{Arc, Mutex, MutexGuard};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

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

pub use crate::resources::TaskKind;

/// One task.
#[derive(Clone, Debug)]
pub struct Task {
    /// Its id.
    pub id: u64,
    /// Its kind.
    pub kind: TaskKind,
    /// The object.
    pub key: String,
    /// The incarnation that must execute it (kept: a later incarnation never receives it).
    pub executor: Owner,
    /// Source segment (Copy/Move: the replica read).
    pub source: Option<Arc<Segment>>,
    /// Target segment, whose allocation the task holds (Copy, Move, Promote).
    pub target: Option<Arc<Segment>>,
    /// The metadata shard of `key`.
    pub shard: usize,
    /// Handed to the executor already.
    pub delivered: bool,
}

/// All tasks, with per-client pending queues.
#[derive(Debug, Default)]
pub struct Tasks {
    next_id: u64,
    all: BTreeMap<u64, Task>,
    pending: BTreeMap<(ClientId, bool), VecDeque<u64>>,
    by_client: BTreeMap<ClientId, BTreeSet<u64>>,
    by_shard: BTreeMap<usize, BTreeSet<u64>>,
}

impl Task {
    /// The source segment's id.
    pub fn source_id(&self) -> Option<SegmentId> {
        self.source.as_ref().map(|s| s.id)
    }

    /// The target segment's id.
    pub fn target_id(&self) -> Option<SegmentId> {
        self.target.as_ref().map(|s| s.id)
    }

    /// Does the task read from or write to `sid`?
    pub fn touches(&self, sid: SegmentId) -> bool {
        self.source_id() == Some(sid) || self.target_id() == Some(sid)
    }
}

impl Tasks {
    /// Creates a pending task and returns its id.
    pub fn submit(
        &mut self,
        kind: TaskKind,
        key: &str,
        executor: Owner,
        source: Option<Arc<Segment>>,
        target: Option<Arc<Segment>>,
        shard: usize,
    ) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        let client = executor.client();
        self.pending
            .entry((client, kind == TaskKind::Offload))
            .or_default()
            .push_back(id);
        self.by_client.entry(client).or_default().insert(id);
        self.by_shard.entry(shard).or_default().insert(id);
        self.all.insert(
            id,
            Task {
                id,
                kind,
                key: key.to_string(),
                executor,
                source,
                target,
                shard,
                delivered: false,
            },
        );
        id
    }

    /// The id the next task will get minus one.
    pub(in crate::master) fn last_id(&self) -> u64 {
        self.next_id
    }

    /// Restores the id counter from a snapshot (whether or not any task is left), so a restored
    /// master never hands out an id the old one already used.
    pub(in crate::master) fn restore_next_id(&mut self, next_id: u64) {
        self.next_id = self.next_id.max(next_id);
    }

    /// Re-inserts a task from a snapshot; undelivered ones queue in id order.
    pub(in crate::master) fn restore(&mut self, task: Task, next_id: u64) {
        let client = task.executor.client();
        if !task.delivered {
            self.pending
                .entry((client, task.kind == TaskKind::Offload))
                .or_default()
                .push_back(task.id);
        }
        self.by_client.entry(client).or_default().insert(task.id);
        self.by_shard.entry(task.shard).or_default().insert(task.id);
        self.next_id = self.next_id.max(next_id).max(task.id);
        self.all.insert(task.id, task);
    }

    /// Every task, by id.
    pub fn iter(&self) -> impl Iterator<Item = &Task> {
        self.all.values()
    }

    /// Takes the pending tasks of `client` on one channel (offload or the rest) that `ready`
    /// accepts, marking them delivered; the others stay queued, in order.
    pub fn take_pending(&mut self, client: ClientId, offload: bool, ready: impl Fn(&Task) -> bool) -> Vec<Task> {
        let Some(queue) = self.pending.get_mut(&(client, offload)) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let all = &mut self.all;
        queue.retain(|id| match all.get_mut(id) {
            Some(t) if ready(t) => {
                t.delivered = true;
                out.push(t.clone());
                false
            }
            Some(_) => true,
            None => false,
        });
        if queue.is_empty() {
            self.pending.remove(&(client, offload));
        }
        out
    }

    /// Ids of the tasks whose object lives in metadata shard `shard` (snapshots).
    pub(in crate::master) fn of_shard(&self, shard: usize) -> Vec<u64> {
        self.by_shard
            .get(&shard)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    /// A task by id.
    pub fn get(&self, id: u64) -> Option<&Task> {
        self.all.get(&id)
    }

    /// Removes a task wherever it is.
    pub fn remove(&mut self, id: u64) -> Option<Task> {
        let task = self.all.remove(&id)?;
        let client = task.executor.client();
        if let Some(q) = self.pending.get_mut(&(client, task.kind == TaskKind::Offload)) {
            q.retain(|x| *x != id);
        }
        if let Some(set) = self.by_client.get_mut(&client) {
            set.remove(&id);
            if set.is_empty() {
                self.by_client.remove(&client);
            }
        }
        if let Some(set) = self.by_shard.get_mut(&task.shard) {
            set.remove(&id);
            if set.is_empty() {
                self.by_shard.remove(&task.shard);
            }
        }
        Some(task)
    }

    /// Ids of every task assigned to `client` (the per-owner index offboarding uses).
    pub fn of_client(&self, client: ClientId) -> Vec<u64> {
        self.by_client
            .get(&client)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Number of tasks.
    pub fn len(&self) -> usize {
        self.all.len()
    }

    /// No task.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }
}
