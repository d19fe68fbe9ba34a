//! The model's tasks: Copy/Move (CopyStart/MoveStart), Drain's Moves, offloads (the offload
//! heartbeat) and promotions, their delivery and their completion or failure (task_done), with
//! the rules of `master/work.rs` restated as loops.
//!
//! A Copy/Move/Promote target replica is in its object's replica list from the task's creation
//! (reserved and charged) and incomplete until the task is done; an offload reserves LocalDisk
//! space only, and its LocalDisk replica (charged then) appears when it is done. New work only
//! involves Active owners (invariant 10): a source must serve, a target must take the
//! allocation, an offload is admitted only for an Active client's own serving replicas. A task
//! is delivered only to its Active executor, and only while its source's and target's owners
//! are Active too; otherwise it stays queued (decisions.md question 2). Callbacks are accepted
//! while the executor is retained (Active or Suspected, invariant 11). A task dies with its
//! object, with either of its segments, or with its executor's offboarding.
//!
//! Drain marks a segment draining (reads only) and gives each of its objects that can move a
//! Move task to a target the master chooses; a promotion's target is the master's choice too
//! (the harness checks each choice and feeds it back, as for a Put).
//!
//! LocalDisk replicas are replica "segments" `SEGMENTS + c` ([`disk`]): client `c`'s live
//! incarnation's disk (its replicas go before the incarnation can end).

use super::{
    Model, Object, State, INVALID_PARAMS, OBJECT_NOT_FOUND, SEGMENTS, SEGMENT_NOT_FOUND, TENANT_QUOTA_EXCEEDED,
};
use super::{CLIENTS, NO_AVAILABLE_HANDLE};

pub(crate) const OBJECT_HAS_REPLICATION_TASK: &str = "OBJECT_HAS_REPLICATION_TASK";
pub(crate) const REPLICA_NOT_FOUND: &str = "REPLICA_NOT_FOUND";
pub(crate) const UNAVAILABLE_IN_CURRENT_STATUS: &str = "UNAVAILABLE_IN_CURRENT_STATUS";
pub(crate) const ILLEGAL_CLIENT: &str = "ILLEGAL_CLIENT";
pub(crate) const TASK_NOT_FOUND: &str = "TASK_NOT_FOUND";

/// The replica index of client `c`'s LocalDisk.
pub(crate) const fn disk(c: usize) -> usize {
    SEGMENTS + c
}

/// The client whose LocalDisk replica index `r` is, if it is one.
pub(crate) fn disk_owner(r: usize) -> Option<usize> {
    (SEGMENTS..SEGMENTS + CLIENTS).contains(&r).then(|| r - SEGMENTS)
}

/// What a task does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Copy,
    Move,
    Offload,
    Promote,
}

impl Kind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Copy => "copy",
            Kind::Move => "move",
            Kind::Offload => "offload",
            Kind::Promote => "promote",
        }
    }

    /// Copy/Move: the object's replication task (else its tier task).
    fn replication(self) -> bool {
        matches!(self, Kind::Copy | Kind::Move)
    }
}

/// One task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Task {
    pub(crate) key: usize,
    pub(crate) kind: Kind,
    /// The executor, (client, incarnation): the target's owner (Copy/Move), the LocalDisk's
    /// owner (Offload, Promote).
    pub(crate) executor: (usize, u64),
    /// The segment read (Copy/Move).
    pub(crate) source: Option<usize>,
    /// The segment written (Copy/Move/Promote).
    pub(crate) target: Option<usize>,
    pub(crate) delivered: bool,
}

impl Model {
    /// `key`'s task of the replication kind (`true`: Copy/Move) or the tier kind.
    fn task_of_kind(&self, key: usize, replication: bool) -> Option<(u64, &Task)> {
        self.tasks
            .iter()
            .find(|(_, t)| t.key == key && t.kind.replication() == replication)
            .map(|(id, t)| (*id, t))
    }

    /// Does `key` have any task in flight?
    pub(crate) fn has_task(&self, key: usize) -> bool {
        self.tasks.values().any(|t| t.key == key)
    }

    /// Is `key`'s replica `r` written (the Put ended, and it is no task's target)?
    pub(crate) fn replica_complete(&self, key: usize, o: &Object, r: usize) -> bool {
        o.complete && !self.tasks.values().any(|t| t.key == key && t.target == Some(r))
    }

    /// Is every replica of `key` written?
    fn all_complete(&self, key: usize, o: &Object) -> bool {
        o.replicas.iter().all(|r| self.replica_complete(key, o, *r))
    }

    /// Does `key`'s replica `r` serve (written, owner Active)? Draining segments serve reads.
    fn serves(&self, key: usize, o: &Object, r: usize) -> bool {
        self.replica_complete(key, o, r) && self.owner_state(r) == Some(State::Active)
    }

    /// Bytes used on client `c`'s LocalDisk: its replicas and the offloads in flight to it.
    pub(crate) fn disk_used(&self, c: usize) -> u64 {
        let replicas: u64 = self
            .objects
            .values()
            .filter(|o| o.replicas.contains(&disk(c)))
            .map(|o| o.size)
            .sum();
        let offloads: u64 = self
            .tasks
            .values()
            .filter(|t| t.kind == Kind::Offload && t.executor.0 == c)
            .map(|t| self.objects[&t.key].size)
            .sum();
        replicas + offloads
    }

    fn add_task(
        &mut self,
        key: usize,
        kind: Kind,
        executor: (usize, u64),
        source: Option<usize>,
        target: Option<usize>,
    ) -> u64 {
        if let Some(t) = target {
            self.objects.get_mut(&key).expect("checked").replicas.push(t);
        }
        self.next_task += 1;
        let task = Task {
            key,
            kind,
            executor,
            source,
            target,
            delivered: false,
        };
        self.tasks.insert(self.next_task, task);
        self.next_task
    }

    /// The owner (client, incarnation) of memory segment `s`.
    fn segment_owner(&self, s: usize) -> (usize, u64) {
        let seg = &self.segments[&s];
        (seg.owner, seg.incarnation)
    }

    /// CopyStart / MoveStart of `key` to segment `target`: the new task's id.
    pub(crate) fn replicate(&mut self, key: usize, target: usize, mv: bool) -> Result<u64, &'static str> {
        if !self.segments.contains_key(&target) {
            return Err(SEGMENT_NOT_FOUND);
        }
        let o = self.objects.get(&key).ok_or(OBJECT_NOT_FOUND)?;
        if self.task_of_kind(key, true).is_some() {
            return Err(OBJECT_HAS_REPLICATION_TASK);
        }
        if o.replicas.contains(&target) {
            return Err(INVALID_PARAMS);
        }
        let source = o
            .replicas
            .iter()
            .copied()
            .find(|r| *r < SEGMENTS && self.serves(key, o, *r))
            .ok_or(REPLICA_NOT_FOUND)?;
        let size = o.size;
        if !self.allocatable(size).contains(&target) {
            return Err(UNAVAILABLE_IN_CURRENT_STATUS);
        }
        if !self.quota_fits(size) {
            return Err(TENANT_QUOTA_EXCEEDED);
        }
        let kind = if mv { Kind::Move } else { Kind::Copy };
        let executor = self.segment_owner(target);
        Ok(self.add_task(key, kind, executor, Some(source), Some(target)))
    }

    /// Drain of segment `s` begins: it takes no new allocation from now on.
    pub(crate) fn start_drain(&mut self, s: usize) -> Result<(), &'static str> {
        let seg = self.segments.get_mut(&s).ok_or(SEGMENT_NOT_FOUND)?;
        seg.draining = true;
        Ok(())
    }

    /// Where drain may move `key` off `s`, in no order: empty if it gets no task now (a
    /// replication task in flight, a replica unwritten, the replica on `s` not serving, no
    /// segment with room, or the quota).
    pub(crate) fn drain_targets(&self, key: usize, s: usize) -> Vec<usize> {
        let Some(o) = self.objects.get(&key) else {
            return Vec::new();
        };
        let movable = self.task_of_kind(key, true).is_none() && self.all_complete(key, o) && self.serves(key, o, s);
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
        let executor = self.segment_owner(target);
        self.add_task(key, Kind::Move, executor, Some(s), Some(target))
    }

    /// Promotion of `key` (held only on LocalDisk): the segments its target may be.
    pub(crate) fn promote_targets(&self, key: usize) -> Result<Vec<usize>, &'static str> {
        let o = self.objects.get(&key).ok_or(OBJECT_NOT_FOUND)?;
        if o.replicas.iter().any(|r| *r < SEGMENTS) || self.task_of_kind(key, false).is_some() {
            return Err(INVALID_PARAMS);
        }
        let holder = o
            .replicas
            .iter()
            .copied()
            .find(|r| disk_owner(*r).is_some())
            .ok_or(REPLICA_NOT_FOUND)?;
        if !self.serves(key, o, holder) {
            return Err(UNAVAILABLE_IN_CURRENT_STATUS);
        }
        let targets = self.allocatable(o.size);
        if targets.is_empty() {
            return Err(NO_AVAILABLE_HANDLE);
        }
        if !self.quota_fits(o.size) {
            return Err(TENANT_QUOTA_EXCEEDED);
        }
        Ok(targets)
    }

    /// The promotion of `key` to `target` (checked by the caller against `promote_targets`).
    pub(crate) fn promote(&mut self, key: usize, target: usize) -> u64 {
        let holder = self.objects[&key]
            .replicas
            .iter()
            .find_map(|r| disk_owner(*r))
            .expect("checked");
        let inc = self.clients[holder].rec.as_ref().expect("serving").incarnation;
        self.add_task(key, Kind::Promote, (holder, inc), None, Some(target))
    }

    /// May `key` be offloaded from its replica on `s` (a segment of the client asking)?
    fn offloadable(&self, key: usize, s: usize) -> bool {
        let Some(o) = self.objects.get(&key) else {
            return false;
        };
        o.replicas.contains(&s)
            && self.serves(key, o, s)
            && self.all_complete(key, o)
            && !o.replicas.iter().any(|r| disk_owner(*r).is_some())
            && self.task_of_kind(key, false).is_none()
    }

    /// The offload heartbeat of client `c`: admits offloads of its own serving replicas within
    /// its LocalDisk's room and the quota, then hands over its pending offloads.
    pub(crate) fn offload_heartbeat(&mut self, c: usize) -> Result<Vec<(u64, &'static str, usize)>, &'static str> {
        let rec = self.clients[c].rec.as_ref().ok_or(SEGMENT_NOT_FOUND)?;
        let capacity = rec.local_disk.ok_or(SEGMENT_NOT_FOUND)?;
        match rec.state {
            State::Offline => return Err(UNAVAILABLE_IN_CURRENT_STATUS),
            State::Suspected => return Ok(Vec::new()),
            State::Active => {}
        }
        let me = (c, rec.incarnation);
        let own: Vec<usize> = self
            .segments
            .iter()
            .filter(|(_, s)| s.owner == c)
            .map(|(s, _)| *s)
            .collect();
        let mut candidates: Vec<usize> = own
            .iter()
            .flat_map(|s| self.keys_on(*s).into_iter().filter(|k| self.offloadable(*k, *s)))
            .collect();
        candidates.sort();
        candidates.dedup();
        for key in candidates {
            let o = &self.objects[&key];
            let first_own = o.replicas.iter().copied().find(|r| own.contains(r));
            let size = o.size;
            if !first_own.is_some_and(|s| self.offloadable(key, s)) || !self.quota_fits(size) {
                continue;
            }
            if self.disk_used(c) + size > capacity {
                continue;
            }
            self.add_task(key, Kind::Offload, me, None, None);
        }
        Ok(self.deliver(me, true))
    }

    /// Hands `me` its undelivered tasks of one channel (offloads, or the rest) whose source
    /// and target owners are Active, in id order.
    fn deliver(&mut self, me: (usize, u64), offload: bool) -> Vec<(u64, &'static str, usize)> {
        let active = |s: Option<usize>| s.is_none_or(|s| self.owner_state(s) == Some(State::Active));
        let ready: Vec<u64> = self
            .tasks
            .iter()
            .filter(|(_, t)| {
                t.executor == me
                    && !t.delivered
                    && (t.kind == Kind::Offload) == offload
                    && active(t.source)
                    && active(t.target)
            })
            .map(|(id, _)| *id)
            .collect();
        ready
            .into_iter()
            .map(|id| {
                let t = self.tasks.get_mut(&id).expect("listed");
                t.delivered = true;
                (id, t.kind.as_str(), t.key)
            })
            .collect()
    }

    /// FetchTasks by client `c`: (id, kind, key) of the tasks handed over now, in id order.
    pub(crate) fn fetch_tasks(&mut self, c: usize) -> Vec<(u64, &'static str, usize)> {
        match self.clients[c].rec.as_ref() {
            Some(rec) if rec.state == State::Active => {
                let me = (c, rec.incarnation);
                self.deliver(me, false)
            }
            _ => Vec::new(),
        }
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
        if !ok {
            self.cancel_task(id);
            return Ok(());
        }
        let t = self.tasks.remove(&id).expect("checked");
        let o = self.objects.get_mut(&t.key).expect("a task dies with its object");
        match t.kind {
            Kind::Move => o.replicas.retain(|r| Some(*r) != t.source),
            Kind::Offload => o.replicas.push(disk(c)),
            Kind::Copy | Kind::Promote => {}
        }
        Ok(())
    }

    /// Cancels task `id`: its target replica goes (an object left without a replica goes with
    /// its other tasks). Returns the bytes released.
    fn cancel_task(&mut self, id: u64) -> u64 {
        let Some(t) = self.tasks.remove(&id) else {
            return 0;
        };
        let Some(target) = t.target else {
            return 0;
        };
        let o = self.objects.get_mut(&t.key).expect("a task dies with its object");
        o.replicas.retain(|r| *r != target);
        let size = o.size;
        self.forget_empty_objects();
        size
    }

    /// Removes objects left without a replica, and their tasks.
    pub(crate) fn forget_empty_objects(&mut self) {
        self.objects.retain(|_, o| !o.replicas.is_empty());
        let objects = &self.objects;
        self.tasks.retain(|_, t| objects.contains_key(&t.key));
    }

    /// Cancels the tasks reading or writing segment `s`. Returns the bytes released.
    pub(crate) fn cancel_tasks_touching(&mut self, s: usize) -> u64 {
        self.cancel_where(|t| t.source == Some(s) || t.target == Some(s))
    }

    /// Cancels the tasks incarnation `me` executes (its offboarding). Returns the bytes released.
    pub(crate) fn cancel_tasks_of(&mut self, me: (usize, u64)) -> u64 {
        self.cancel_where(|t| t.executor == me)
    }

    fn cancel_where(&mut self, which: impl Fn(&Task) -> bool) -> u64 {
        let ids: Vec<u64> = self.tasks.iter().filter(|(_, t)| which(t)).map(|(id, _)| *id).collect();
        ids.into_iter().map(|id| self.cancel_task(id)).sum()
    }

    /// Remove: refused while a Copy/Move is in flight; an offload or promotion dies with it.
    pub(crate) fn remove_checked(&mut self, key: usize) -> Result<(), &'static str> {
        if !self.objects.contains_key(&key) {
            return Err(OBJECT_NOT_FOUND);
        }
        if self.task_of_kind(key, true).is_some() {
            return Err(OBJECT_HAS_REPLICATION_TASK);
        }
        self.objects.remove(&key);
        self.forget_empty_objects();
        Ok(())
    }
}
