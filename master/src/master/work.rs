//! Copy/Move, task delivery and completion, drain, offload and promotion.
//!
//! New work only goes to Active incarnations and only touches serving resources (invariant 10);
//! callbacks for work handed out earlier are accepted while the executor is retained
//! (invariant 11). Work queued for a Suspected executor is held and delivered after recovery;
//! offboarding discards it (decisions.md, question 2). A task is delivered only while the other
//! side of it serves too: a Copy/Move whose source owner, or a Copy/Move/promotion whose target
//! owner, became Suspected after the task was created stays queued until it is Active again
//! (invariant 10, "task delivery").
//!
//! Locks: every task is created, completed and cancelled under its object's shard lock; the
//! `tasks` table is a leaf taken inside it.

use super::object::{Replica, ReplicaKind};
use super::rooms::{Task, TaskKind};
use super::segment::{Segment, SegmentId};
use super::shard::Shard;
use super::{Master, MasterCore, MasterError, Refunds, TaskDesc};
use crate::eligibility::{self, Purpose};
use crate::liveness::{ClientId, ClientLivenessRecord, Owner};
use crate::sync::Arc;

/// Where a new replication gets its target space.
enum Target {
    /// Reserve it now (Copy/Move requests).
    Reserve(Arc<Segment>),
    /// Already reserved by the caller for this many bytes (drain chose and reserved it).
    Reserved(Arc<Segment>, u64),
}

impl Master {
    /// CopyStart (`remove_source` false) / MoveStart (true): a task for the owner of `to`.
    pub fn replicate(&self, key: &str, to: &str, remove_source: bool) -> Result<u64, MasterError> {
        self.core.replicate(key, to, remove_source)
    }

    /// FetchTasks: hands an Active client its pending Copy/Move/promotion tasks whose other side
    /// serves too. A Suspected client gets nothing and keeps its tasks; unknown and Offline
    /// clients get nothing (and an unknown name creates nothing).
    pub fn fetch_tasks(&self, client: &str) -> Vec<TaskDesc> {
        self.core.fetch_tasks(client)
    }

    /// Task completion (`ok`) or failure callback from its executor.
    pub fn task_done(&self, client: &str, task: u64, ok: bool) -> Result<(), MasterError> {
        self.core.task_done(client, task, ok)
    }

    /// Drain: the segment stops taking allocations and each of its objects gets a Move task to a
    /// serving target (never a non-Active owner's segment). Objects with no servable source or
    /// no target stay for a later drain.
    pub fn drain(&self, segment: &str) -> Result<Vec<TaskDesc>, MasterError> {
        self.core.drain(segment)
    }

    /// Offload heartbeat: an Active client with a LocalDisk registration is handed offload work
    /// for completed objects on its own serving segments that have no LocalDisk replica yet,
    /// within its free capacity and its tenants' quotas. A Suspected client is handed nothing
    /// and nothing new is admitted for it; work already queued waits for recovery.
    pub fn offload_heartbeat(&self, client: &str) -> Result<Vec<TaskDesc>, MasterError> {
        self.core.offload_heartbeat(client)
    }

    /// Promotion on hit: an object held only on LocalDisk gets a memory replica; the LocalDisk
    /// owner (which must be Active) executes it, the target is a serving segment.
    pub fn promote(&self, key: &str) -> Result<u64, MasterError> {
        self.core.promote(key)
    }
}

impl MasterCore {
    /// The work behind [`Master::replicate`].
    pub(crate) fn replicate(&self, key: &str, to: &str, remove_source: bool) -> Result<u64, MasterError> {
        let target = self
            .data
            .segments()
            .by_name(to)
            .cloned()
            .ok_or(MasterError::SegmentNotFound)?;
        let seam = self.seam();
        let si = self.data.shards().index_of(key);
        let mut shard = self.data.shards().lock(si);
        let obj = shard.objects.get(key).ok_or(MasterError::ObjectNotFound)?;
        let source = obj
            .replicas
            .iter()
            .find(|r| r.segment().is_some() && r.eligibility(seam).serves())
            .and_then(|r| r.segment_ref().cloned());
        let kind = if remove_source { TaskKind::Move } else { TaskKind::Copy };
        self.start_replication_in(&mut shard, si, key, source, Target::Reserve(target), kind)
    }

    /// Starts a Copy/Move of `key` from `source` (which must serve) to `target`.
    fn start_replication_in(
        &self,
        shard: &mut Shard,
        si: usize,
        key: &str,
        source: Option<Arc<Segment>>,
        target: Target,
        kind: TaskKind,
    ) -> Result<u64, MasterError> {
        let (target, reserved) = match target {
            Target::Reserve(t) => (t, None),
            Target::Reserved(t, size) => (t, Some(size)),
        };
        // On a refusal the target's reservation, the caller's or this call's, is released
        // exactly once, here: by `release` before the task exists, by the task's cancellation
        // after (`settle_new_task` removes the target replica, which releases it). The caller
        // releases nothing. (Drain used to release again after a refusal: twice on a quota
        // refusal, found by the differential fuzz target, and twice on a re-check refusal.)
        let checked = self.check_replication(shard, key, source.as_ref(), &target, reserved.is_some());
        let (size, tenant) = checked.inspect_err(|_| {
            if let Some(size) = reserved {
                target.release(key, size);
            }
        })?;
        if reserved.is_none() && !target.try_reserve(key, size) {
            return Err(MasterError::UnavailableInCurrentStatus);
        }
        if !self.data.quotas().try_charge(&tenant, size) {
            target.release(key, size);
            return Err(MasterError::TenantQuotaExceeded);
        }
        let executor = target.owner.clone();
        let id = self
            .work
            .tasks()
            .submit(kind, key, executor, source, Some(target.clone()), si);
        let obj = shard.objects.get_mut(key).expect("checked under the same shard lock");
        obj.replicas.push(Replica::memory(target.clone()));
        obj.replication_task = Some(id);
        self.settle_new_task(shard, id, &target.owner, Some(&target))?;
        Ok(id)
    }

    /// The checks of a new replication; returns the object's size and tenant.
    fn check_replication(
        &self,
        shard: &Shard,
        key: &str,
        source: Option<&Arc<Segment>>,
        target: &Arc<Segment>,
        reserved: bool,
    ) -> Result<(u64, String), MasterError> {
        let seam = self.seam();
        let obj = shard.objects.get(key).ok_or(MasterError::ObjectNotFound)?;
        if obj.replication_task.is_some() {
            return Err(MasterError::ObjectHasReplicationTask);
        }
        if obj.on_segment(target.id) {
            return Err(MasterError::InvalidParams);
        }
        let source_serves = source.is_some_and(|src| {
            obj.replicas
                .iter()
                .any(|r| r.segment() == Some(src.id) && r.eligibility(seam).serves())
        });
        if !source_serves {
            return Err(MasterError::ReplicaNotFound);
        }
        // A reserved target already holds the bytes: ask only that it still allocates.
        let need = if reserved { 0 } else { obj.size };
        if !target.eligibility(seam, Purpose::Allocate, need).serves() {
            return Err(MasterError::UnavailableInCurrentStatus);
        }
        Ok((obj.size, obj.tenant.clone()))
    }

    /// The re-check of a task just published (under the shard lock it was published under):
    /// if its executor, or its target's owner, stopped being Active since it was chosen (or the
    /// target stopped allocating), the task is cancelled under the same shard lock, which
    /// releases its allocation or offload space.
    ///
    /// Why a re-check after the publication suffices against an Offline commit and its job
    /// (issue 29 defect 3): the job lists its incarnation's tasks under the `tasks` leaf after
    /// the commit. If it listed before this task was submitted (also under `tasks`), the lock
    /// hand-over orders the commit before this re-check, whose `Acquire` load then sees the
    /// executor non-Active and cancels; if after, the job sees the task and cancels it (under
    /// this shard lock, so after this call). Either way no task outlives its incarnation.
    pub(super) fn settle_new_task(
        &self,
        shard: &mut Shard,
        id: u64,
        executor: &Owner,
        target: Option<&Arc<Segment>>,
    ) -> Result<(), MasterError> {
        let seam = self.seam();
        let target_ok = |t: &Arc<Segment>| t.lifecycle().permits(Purpose::Allocate) && seam.executor(&t.owner).serves();
        if !seam.enabled || (seam.executor(executor).serves() && target.is_none_or(target_ok)) {
            return Ok(());
        }
        let mut refunds = Refunds::new();
        self.cancel_task_in(shard, id, &mut refunds);
        self.data.quotas().apply_refunds(refunds);
        Err(MasterError::UnavailableInCurrentStatus)
    }

    /// The work behind [`Master::fetch_tasks`].
    pub(crate) fn fetch_tasks(&self, client: &str) -> Vec<TaskDesc> {
        match self.membership.names().lookup(client) {
            Some(id) => self.deliver(id, false),
            None => Vec::new(),
        }
    }

    fn deliver(&self, id: ClientId, offload: bool) -> Vec<TaskDesc> {
        let Some(rec) = self.live.registry().get(id) else {
            return Vec::new();
        };
        if !self.seam().executor(&rec).serves() {
            return Vec::new();
        }
        // Only this incarnation's tasks: one of an earlier incarnation is never handed to a
        // later one (fencing), whatever left it queued.
        self.work
            .tasks()
            .take_pending(id, offload, |t| t.executor.is(&rec) && self.deliverable(t))
            .into_iter()
            .map(|t| TaskDesc {
                task: t.id,
                kind: t.kind.as_str(),
                key: t.key,
            })
            .collect()
    }

    /// May `t` be handed to its (Active) executor now? Its source must still serve reads and its
    /// target's owner must be Active: no new dependency on a Suspected client through delivery.
    fn deliverable(&self, t: &Task) -> bool {
        let seam = self.seam();
        if !seam.enabled {
            return true;
        }
        let source_ok = t.source.as_ref().is_none_or(|s| {
            seam.decide(&s.owner, true, s.lifecycle().permits(Purpose::Read))
                .serves()
        });
        let target_ok = t.target.as_ref().is_none_or(|s| seam.executor(&s.owner).serves());
        source_ok && target_ok
    }

    /// The work behind [`Master::task_done`].
    pub(crate) fn task_done(&self, client: &str, task: u64, ok: bool) -> Result<(), MasterError> {
        let rec = self.callback_record(client)?;
        let (si, _) = self.task_owned_by(task, &rec)?;
        let mut shard = self.data.shards().lock(si);
        // The task may have been cancelled (or completed) between the two locks.
        self.task_owned_by(task, &rec)?;
        let mut refunds = Refunds::new();
        if ok {
            self.finish_task_in(&mut shard, task, &mut refunds);
        } else {
            self.cancel_task_in(&mut shard, task, &mut refunds);
        }
        drop(shard);
        self.data.quotas().apply_refunds(refunds);
        Ok(())
    }

    /// The shard and key of `task`, if `rec` executes it.
    fn task_owned_by(&self, task: u64, rec: &Arc<ClientLivenessRecord>) -> Result<(usize, String), MasterError> {
        let tasks = self.work.tasks();
        let t = tasks.get(task).ok_or(MasterError::TaskNotFound)?;
        if !t.executor.is(rec) {
            return Err(MasterError::IllegalClient);
        }
        Ok((t.shard, t.key.clone()))
    }

    /// Applies a successful task.
    pub(super) fn finish_task_in(&self, shard: &mut Shard, id: u64, refunds: &mut Refunds) {
        let Some(t) = self.work.tasks().remove(id) else {
            return;
        };
        let Some(obj) = shard.objects.get_mut(&t.key) else {
            return;
        };
        let (size, tenant) = (obj.size, obj.tenant.clone());
        match t.kind {
            TaskKind::Copy | TaskKind::Move | TaskKind::Promote => {
                let target = t.target_id();
                for r in obj
                    .replicas
                    .iter_mut()
                    .filter(|r| r.segment() == target && target.is_some())
                {
                    r.complete = true;
                }
            }
            TaskKind::Offload => {
                obj.replicas.push(Replica {
                    kind: ReplicaKind::LocalDisk {
                        owner: t.executor.clone(),
                    },
                    complete: true,
                });
            }
        }
        if matches!(t.kind, TaskKind::Copy | TaskKind::Move) {
            obj.replication_task = None;
        } else {
            obj.tier_task = None;
        }
        if t.kind == TaskKind::Offload {
            if let Some(disk) = self.membership.local_disks().get_mut(&t.executor.client()) {
                disk.keys.insert(t.key.clone());
            }
            self.data.quotas().charge(&tenant, size);
            self.settle_offload(shard, &t.key, &t.executor, refunds);
        }
        if t.kind == TaskKind::Move {
            let source = t.source_id();
            self.remove_replicas_in(shard, &t.key, |r| r.segment() == source && source.is_some(), refunds);
        }
    }

    /// An offload completed by an executor that was committed Offline after it was accepted:
    /// its sweep may have passed this key already, so the new LocalDisk replica goes now.
    fn settle_offload(&self, shard: &mut Shard, key: &str, executor: &ClientLivenessRecord, refunds: &mut Refunds) {
        if eligibility::accepts_callbacks(executor) {
            return;
        }
        let gone = |r: &Replica| matches!(&r.kind, ReplicaKind::LocalDisk { owner } if owner.is(executor));
        self.remove_replicas_in(shard, key, gone, refunds);
    }

    /// Drops a task and whatever it had reserved (its target allocation or offload space).
    pub(super) fn cancel_task_in(&self, shard: &mut Shard, id: u64, refunds: &mut Refunds) {
        let Some(t) = self.work.tasks().remove(id) else {
            return;
        };
        let Some(obj) = shard.objects.get_mut(&t.key) else {
            return;
        };
        if matches!(t.kind, TaskKind::Copy | TaskKind::Move) {
            obj.replication_task = None;
        } else {
            obj.tier_task = None;
        }
        let size = obj.size;
        if t.kind == TaskKind::Offload {
            if let Some(disk) = self.membership.local_disks().get_mut(&t.executor.client()) {
                disk.release(size);
            }
        } else if let Some(target) = t.target_id() {
            self.remove_replicas_in(shard, &t.key, |r| r.segment() == Some(target) && !r.complete, refunds);
        }
    }

    /// Cancels `key`'s tasks whose source or target is `sid`.
    pub(super) fn cancel_tasks_touching_in(&self, shard: &mut Shard, key: &str, sid: SegmentId, refunds: &mut Refunds) {
        let Some(obj) = shard.objects.get(key) else {
            return;
        };
        let ids: Vec<u64> = obj.replication_task.into_iter().chain(obj.tier_task).collect();
        let touching: Vec<u64> = {
            let tasks = self.work.tasks();
            ids.into_iter()
                .filter(|id| tasks.get(*id).is_some_and(|t| t.touches(sid)))
                .collect()
        };
        for id in touching {
            self.cancel_task_in(shard, id, refunds);
        }
    }

    /// The work behind [`Master::drain`].
    pub(crate) fn drain(&self, segment: &str) -> Result<Vec<TaskDesc>, MasterError> {
        let seg = self
            .data
            .segments()
            .by_name(segment)
            .cloned()
            .ok_or(MasterError::SegmentNotFound)?;
        if !seg.begin_drain() {
            return Err(MasterError::UnavailableInCurrentStatus);
        }
        let keys: Vec<String> = seg.alloc().keys.iter().cloned().collect();
        let mut out = Vec::new();
        for key in keys {
            if let Some(task) = self.drain_one(&seg, &key) {
                out.push(TaskDesc {
                    task,
                    kind: TaskKind::Move.as_str(),
                    key,
                });
            }
        }
        Ok(out)
    }

    fn drain_one(&self, seg: &Arc<Segment>, key: &str) -> Option<u64> {
        let si = self.data.shards().index_of(key);
        let mut shard = self.data.shards().lock(si);
        let obj = shard.objects.get(key)?;
        if obj.replication_task.is_some() || !obj.is_complete() {
            return None;
        }
        let exclude: Vec<SegmentId> = obj.replicas.iter().filter_map(Replica::segment).collect();
        let size = obj.size;
        let target = self.reserve_segments(key, size, 1, &exclude).pop()?;
        let reserved = Target::Reserved(target, size);
        // A refusal has released the reservation.
        self.start_replication_in(&mut shard, si, key, Some(seg.clone()), reserved, TaskKind::Move)
            .ok()
    }

    /// The work behind [`Master::offload_heartbeat`].
    pub(crate) fn offload_heartbeat(&self, client: &str) -> Result<Vec<TaskDesc>, MasterError> {
        let id = self
            .membership
            .names()
            .lookup(client)
            .ok_or(MasterError::SegmentNotFound)?;
        let owner = self
            .membership
            .local_disks()
            .get(&id)
            .map(|d| d.owner.clone())
            .ok_or(MasterError::SegmentNotFound)?;
        if !eligibility::accepts_callbacks(&owner) {
            return Err(MasterError::UnavailableInCurrentStatus);
        }
        if !self.seam().executor(&owner).serves() {
            return Ok(Vec::new());
        }
        self.admit_offloads(id, &owner);
        Ok(self.deliver(id, true))
    }

    fn admit_offloads(&self, id: ClientId, owner: &Owner) {
        let mut candidates = Vec::new();
        // The table's guard must be gone before a shard is locked (Put takes shard → table):
        // bound to a statement of its own, it is dropped here, not at the end of the loop.
        let owned = self.data.segments().owned_by(id);
        for seg in owned {
            let keys: Vec<String> = seg.alloc().keys.iter().cloned().collect();
            for key in keys {
                if self.offloadable(&self.data.shards().lock_key(&key), &key, seg.id) {
                    candidates.push(key);
                }
            }
        }
        candidates.sort();
        candidates.dedup();
        for key in candidates {
            self.admit_offload(id, owner, &key);
        }
    }

    fn offloadable(&self, shard: &Shard, key: &str, sid: SegmentId) -> bool {
        let seam = self.seam();
        shard.objects.get(key).is_some_and(|obj| {
            let servable = obj
                .replicas
                .iter()
                .any(|r| r.segment() == Some(sid) && r.eligibility(seam).serves());
            servable && obj.is_complete() && !obj.has_local_disk() && obj.tier_task.is_none()
        })
    }

    fn admit_offload(&self, id: ClientId, owner: &Owner, key: &str) {
        let si = self.data.shards().index_of(key);
        let mut shard = self.data.shards().lock(si);
        let Some(obj) = shard.objects.get(key) else {
            return;
        };
        let own = obj
            .replicas
            .iter()
            .filter_map(Replica::segment_ref)
            .find(|s| s.owner.client() == id)
            .map(|s| s.id);
        if !own.is_some_and(|sid| self.offloadable(&shard, key, sid)) {
            return;
        }
        let (size, tenant) = (obj.size, obj.tenant.clone());
        if !self.data.quotas().allows(&tenant, size) {
            return;
        }
        {
            let mut disks = self.membership.local_disks();
            let Some(disk) = disks.get_mut(&id).filter(|d| d.owner.is(owner)) else {
                return;
            };
            if disk.used.saturating_add(size) > disk.capacity {
                return;
            }
            disk.used += size;
        }
        let task = self
            .work
            .tasks()
            .submit(TaskKind::Offload, key, owner.clone(), None, None, si);
        if let Some(o) = shard.objects.get_mut(key) {
            o.tier_task = Some(task);
        }
        // The owner was checked Active when the heartbeat began; re-checked after the task is
        // published (see `settle_new_task`). A refusal has released the offload space.
        let _ = self.settle_new_task(&mut shard, task, owner, None);
    }

    /// The work behind [`Master::promote`].
    pub(crate) fn promote(&self, key: &str) -> Result<u64, MasterError> {
        let seam = self.seam();
        let si = self.data.shards().index_of(key);
        let mut shard = self.data.shards().lock(si);
        let obj = shard.objects.get(key).ok_or(MasterError::ObjectNotFound)?;
        if obj.has_memory() || obj.tier_task.is_some() {
            return Err(MasterError::InvalidParams);
        }
        let holder = obj
            .replicas
            .iter()
            .find(|r| matches!(r.kind, ReplicaKind::LocalDisk { .. }))
            .ok_or(MasterError::ReplicaNotFound)?;
        if !holder.eligibility(seam).serves() {
            return Err(MasterError::UnavailableInCurrentStatus);
        }
        let executor = holder.owner().clone();
        let (size, tenant) = (obj.size, obj.tenant.clone());
        let target = self
            .reserve_segments(key, size, 1, &[])
            .pop()
            .ok_or(MasterError::NoAvailableHandle)?;
        if !self.data.quotas().try_charge(&tenant, size) {
            target.release(key, size);
            return Err(MasterError::TenantQuotaExceeded);
        }
        let id = self
            .work
            .tasks()
            .submit(TaskKind::Promote, key, executor.clone(), None, Some(target.clone()), si);
        let obj = shard.objects.get_mut(key).expect("checked under the same shard lock");
        obj.replicas.push(Replica::memory(target.clone()));
        obj.tier_task = Some(id);
        // The executor (the LocalDisk holder) is re-checked as well as the target: it was
        // checked before the target was reserved (issue 29 defect 3: re-checking only the
        // target left a promotion for an executor committed Offline meanwhile).
        self.settle_new_task(&mut shard, id, &executor, Some(&target))?;
        Ok(id)
    }
}
