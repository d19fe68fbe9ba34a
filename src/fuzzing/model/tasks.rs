//! The model's tasks: Copy/Move (CopyStart/MoveStart), their delivery (FetchTasks) and their
//! completion or failure (task_done), with the rules of `master/work.rs` restated as loops.
//!
//! A task's target replica is in its object's replica list from the task's creation (its bytes
//! are reserved and charged) and is incomplete until the task is done. New work only involves
//! Active owners (invariant 10): the source must serve, the target must take the allocation. A
//! task is delivered only to its executor (the target's owner) while it is Active, and only
//! while its source's owner is Active too; otherwise it stays queued (decisions.md question 2).
//! Callbacks are accepted while the executor is retained (Active or Suspected, invariant 11).
//! A task dies with its object, with either segment, or with its executor's offboarding.
//!
//! Drain marks a segment draining (reads only) and gives each of its objects that can move a
//! Move task to a target the master chooses (the harness checks the choice and feeds it back,
//! as for a Put).

use super::{Model, Object, State, INVALID_PARAMS, OBJECT_NOT_FOUND, SEGMENT_NOT_FOUND, TENANT_QUOTA_EXCEEDED};

pub(crate) const OBJECT_HAS_REPLICATION_TASK: &str = "OBJECT_HAS_REPLICATION_TASK";
pub(crate) const REPLICA_NOT_FOUND: &str = "REPLICA_NOT_FOUND";
pub(crate) const UNAVAILABLE_IN_CURRENT_STATUS: &str = "UNAVAILABLE_IN_CURRENT_STATUS";
pub(crate) const ILLEGAL_CLIENT: &str = "ILLEGAL_CLIENT";
pub(crate) const TASK_NOT_FOUND: &str = "TASK_NOT_FOUND";

/// One Copy/Move task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Task {
    pub(crate) key: usize,
    /// Move (else Copy).
    pub(crate) mv: bool,
    /// The executor: the target's owner, (client, incarnation).
    pub(crate) executor: (usize, u64),
    pub(crate) source: usize,
    pub(crate) target: usize,
    pub(crate) delivered: bool,
}

impl Task {
    pub(crate) fn kind(&self) -> &'static str {
        if self.mv {
            "move"
        } else {
            "copy"
        }
    }
}

impl Model {
    /// The task of `key`, if one is in flight.
    pub(crate) fn task_of(&self, key: usize) -> Option<(u64, &Task)> {
        self.tasks.iter().find(|(_, t)| t.key == key).map(|(id, t)| (*id, t))
    }

    /// Is `key`'s replica on `s` written (the Put ended, and it is not a task's target)?
    pub(crate) fn replica_complete(&self, key: usize, o: &Object, s: usize) -> bool {
        o.complete && self.task_of(key).is_none_or(|(_, t)| t.target != s)
    }

    /// CopyStart / MoveStart of `key` to segment `target`: the new task's id.
    pub(crate) fn replicate(&mut self, key: usize, target: usize, mv: bool) -> Result<u64, &'static str> {
        if !self.segments.contains_key(&target) {
            return Err(SEGMENT_NOT_FOUND);
        }
        let o = self.objects.get(&key).ok_or(OBJECT_NOT_FOUND)?;
        if self.task_of(key).is_some() {
            return Err(OBJECT_HAS_REPLICATION_TASK);
        }
        if o.replicas.contains(&target) {
            return Err(INVALID_PARAMS);
        }
        let source = o
            .replicas
            .iter()
            .copied()
            .find(|s| o.complete && self.owner_state(*s) == Some(State::Active))
            .ok_or(REPLICA_NOT_FOUND)?;
        let size = o.size;
        if !self.allocatable(size).contains(&target) {
            return Err(UNAVAILABLE_IN_CURRENT_STATUS);
        }
        if !self.quota_fits(size) {
            return Err(TENANT_QUOTA_EXCEEDED);
        }
        Ok(self.add_task(key, mv, source, target))
    }

    /// Drain of segment `s` begins: it takes no new allocation from now on.
    pub(crate) fn start_drain(&mut self, s: usize) -> Result<(), &'static str> {
        let seg = self.segments.get_mut(&s).ok_or(SEGMENT_NOT_FOUND)?;
        seg.draining = true;
        Ok(())
    }

    /// Where drain may move `key` off `s`, in no order: empty if it gets no task now (a task
    /// in flight, the Put not ended, the replica on `s` not serving, no segment with room, or
    /// the quota).
    pub(crate) fn drain_targets(&self, key: usize, s: usize) -> Vec<usize> {
        let Some(o) = self.objects.get(&key) else {
            return Vec::new();
        };
        let movable = o.complete && self.task_of(key).is_none() && self.owner_state(s) == Some(State::Active);
        if !movable || !self.quota_fits(o.size) {
            return Vec::new();
        }
        let mut targets = self.allocatable(o.size);
        targets.retain(|t| !o.replicas.contains(t));
        targets
    }

    /// Drain's Move of `key` from `s` to `target` (checked by the caller against
    /// `drain_targets`): the new task's id.
    pub(crate) fn drain_move(&mut self, key: usize, s: usize, target: usize) -> u64 {
        self.add_task(key, true, s, target)
    }

    fn add_task(&mut self, key: usize, mv: bool, source: usize, target: usize) -> u64 {
        let seg = &self.segments[&target];
        let executor = (seg.owner, seg.incarnation);
        self.objects.get_mut(&key).expect("checked").replicas.push(target);
        self.next_task += 1;
        let task = Task {
            key,
            mv,
            executor,
            source,
            target,
            delivered: false,
        };
        self.tasks.insert(self.next_task, task);
        self.next_task
    }

    /// FetchTasks by client `c`: (id, kind, key) of the tasks handed over now, in id order.
    pub(crate) fn fetch_tasks(&mut self, c: usize) -> Vec<(u64, &'static str, usize)> {
        let Some(rec) = self.clients[c].rec.as_ref() else {
            return Vec::new();
        };
        if rec.state != State::Active {
            return Vec::new();
        }
        let me = (c, rec.incarnation);
        let ready: Vec<u64> = self
            .tasks
            .iter()
            .filter(|(_, t)| {
                t.executor == me
                    && !t.delivered
                    && self.owner_state(t.source) == Some(State::Active)
                    && self.owner_state(t.target) == Some(State::Active)
            })
            .map(|(id, _)| *id)
            .collect();
        ready
            .into_iter()
            .map(|id| {
                let t = self.tasks.get_mut(&id).expect("listed");
                t.delivered = true;
                (id, t.kind(), t.key)
            })
            .collect()
    }

    /// Tasks whose executor is client `c` (any incarnation), as the diagnostic query counts.
    pub(crate) fn tasks_of(&self, c: usize) -> usize {
        self.tasks.values().filter(|t| t.executor.0 == c).count()
    }

    /// task_done from client `c` for task `id`: `ok` completes it, else it is cancelled.
    pub(crate) fn task_done(&mut self, c: usize, id: u64, ok: bool) -> Result<(), &'static str> {
        // Unknown name or no live incarnation: the master cannot tell them apart by answer.
        let rec = self.clients[c].rec.as_ref().ok_or(ILLEGAL_CLIENT)?;
        if rec.state == State::Offline {
            return Err(UNAVAILABLE_IN_CURRENT_STATUS);
        }
        let t = self.tasks.get(&id).ok_or(TASK_NOT_FOUND)?;
        if t.executor != (c, rec.incarnation) {
            return Err(ILLEGAL_CLIENT);
        }
        let t = self.tasks.remove(&id).expect("checked");
        let o = self.objects.get_mut(&t.key).expect("a task dies with its object");
        if !ok {
            o.replicas.retain(|s| *s != t.target);
        } else if t.mv {
            o.replicas.retain(|s| *s != t.source);
        }
        Ok(())
    }

    /// Cancels the tasks touching segment `s` (source or target): each one's target replica
    /// goes. Returns the bytes released.
    pub(crate) fn cancel_tasks_touching(&mut self, s: usize) -> u64 {
        let ids: Vec<u64> = self
            .tasks
            .iter()
            .filter(|(_, t)| t.source == s || t.target == s)
            .map(|(id, _)| *id)
            .collect();
        let mut released = 0;
        for id in ids {
            let t = self.tasks.remove(&id).expect("listed");
            let o = self.objects.get_mut(&t.key).expect("a task dies with its object");
            o.replicas.retain(|r| *r != t.target);
            released += o.size;
        }
        released
    }
}
