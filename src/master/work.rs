//! Copy/Move, task delivery and completion, drain, offload and promotion.
//!
//! New work only goes to Active incarnations and only touches serving resources (invariant 10);
//! callbacks for work handed out earlier are accepted while the executor is retained
//! (invariant 11). Work queued for a Suspected executor is held and delivered after recovery;
//! offboarding discards it (decisions.md, question 2).

use super::object::{Replica, ReplicaKind};
use super::segment::{Lifecycle, SegmentId};
use super::task::TaskKind;
use super::{Master, MasterError, TaskDesc};
use crate::eligibility::{self, Purpose};
use crate::liveness::ClientId;

impl Master {
    /// CopyStart (`remove_source` false) / MoveStart (true): a task for the owner of `to`.
    pub fn replicate(&mut self, key: &str, to: &str, remove_source: bool) -> Result<u64, MasterError> {
        let target = self.segments.id_of(to).ok_or(MasterError::SegmentNotFound)?;
        let seam = self.seam();
        let obj = self.objects.get(key).ok_or(MasterError::ObjectNotFound)?;
        let source = obj
            .replicas
            .iter()
            .find(|r| r.segment().is_some() && r.eligibility(seam, &self.segments).serves())
            .and_then(Replica::segment);
        let kind = if remove_source { TaskKind::Move } else { TaskKind::Copy };
        self.start_replication(key, source, target, kind)
    }

    /// Starts a Copy/Move of `key` from `source` (which must serve) to `target`.
    fn start_replication(
        &mut self,
        key: &str,
        source: Option<SegmentId>,
        target: SegmentId,
        kind: TaskKind,
    ) -> Result<u64, MasterError> {
        let seam = self.seam();
        let obj = self.objects.get(key).ok_or(MasterError::ObjectNotFound)?;
        if obj.replication_task.is_some() {
            return Err(MasterError::ObjectHasReplicationTask);
        }
        if obj.on_segment(target) {
            return Err(MasterError::InvalidParams);
        }
        let source_serves = obj
            .replicas
            .iter()
            .any(|r| r.segment().is_some() && r.segment() == source && r.eligibility(seam, &self.segments).serves());
        if !source_serves {
            return Err(MasterError::ReplicaNotFound);
        }
        let size = obj.size;
        let seg = self.segments.get(target).ok_or(MasterError::SegmentNotFound)?;
        if !seg.eligibility(seam, Purpose::Allocate, size).serves() {
            return Err(MasterError::UnavailableInCurrentStatus);
        }
        let executor = seg.owner.clone();
        let tenant = obj.tenant.clone();
        let replica = self.allocate_on(target, &tenant, key, size);
        let id = self.tasks.submit(kind, key, executor, source, Some(target));
        let obj = self.objects.get_mut(key).expect("checked above");
        obj.replicas.push(replica);
        obj.replication_task = Some(id);
        Ok(id)
    }

    /// FetchTasks: hands an Active client its pending Copy/Move/promotion tasks. A Suspected
    /// client gets nothing and keeps its tasks; unknown and Offline clients get nothing.
    pub fn fetch_tasks(&mut self, client: &str) -> Vec<TaskDesc> {
        let id = self.client_id(client);
        self.deliver(id, false)
    }

    fn deliver(&mut self, id: ClientId, offload: bool) -> Vec<TaskDesc> {
        let Some(rec) = self.live.registry().get(id) else {
            return Vec::new();
        };
        if !self.seam().executor(&rec).serves() {
            return Vec::new();
        }
        self.tasks
            .take_pending(id, offload)
            .into_iter()
            .map(|t| TaskDesc {
                task: t.id,
                kind: t.kind.as_str(),
                key: t.key,
            })
            .collect()
    }

    /// Task completion (`ok`) or failure callback from its executor.
    pub fn task_done(&mut self, client: &str, task: u64, ok: bool) -> Result<(), MasterError> {
        let id = self.client_id(client);
        let rec = self.live.registry().get(id).ok_or(MasterError::IllegalClient)?;
        if !eligibility::accepts_callbacks(&rec) {
            return Err(MasterError::UnavailableInCurrentStatus);
        }
        let t = self.tasks.get(task).ok_or(MasterError::TaskNotFound)?;
        if !crate::sync::Arc::ptr_eq(&t.executor, &rec) {
            return Err(MasterError::IllegalClient);
        }
        if ok {
            self.finish_task(task);
        } else {
            self.cancel_task(task);
        }
        Ok(())
    }

    /// Applies a successful task.
    fn finish_task(&mut self, id: u64) {
        let Some(t) = self.tasks.remove(id) else {
            return;
        };
        let Some(obj) = self.objects.get_mut(&t.key) else {
            return;
        };
        let (size, tenant) = (obj.size, obj.tenant.clone());
        match t.kind {
            TaskKind::Copy | TaskKind::Move | TaskKind::Promote => {
                for r in obj
                    .replicas
                    .iter_mut()
                    .filter(|r| r.segment() == t.target && t.target.is_some())
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
                if let Some(disk) = self.local_disks.get_mut(&t.executor.client()) {
                    disk.keys.insert(t.key.clone());
                }
            }
        }
        if matches!(t.kind, TaskKind::Copy | TaskKind::Move) {
            obj.replication_task = None;
        } else {
            obj.tier_task = None;
        }
        if t.kind == TaskKind::Offload {
            self.charge(&tenant, size);
        }
        if t.kind == TaskKind::Move {
            let source = t.source;
            self.remove_replicas(&t.key, |r| r.segment() == source && source.is_some());
        }
    }

    /// Drops a task and whatever it had reserved (its target allocation or offload space).
    pub(super) fn cancel_task(&mut self, id: u64) {
        let Some(t) = self.tasks.remove(id) else {
            return;
        };
        let Some(obj) = self.objects.get_mut(&t.key) else {
            return;
        };
        if matches!(t.kind, TaskKind::Copy | TaskKind::Move) {
            obj.replication_task = None;
        } else {
            obj.tier_task = None;
        }
        let size = obj.size;
        if t.kind == TaskKind::Offload {
            if let Some(disk) = self.local_disks.get_mut(&t.executor.client()) {
                disk.used = disk.used.saturating_sub(size);
            }
        } else if let Some(target) = t.target {
            self.remove_replicas(&t.key, |r| r.segment() == Some(target) && !r.complete);
        }
    }

    /// Cancels `key`'s tasks whose source or target is `sid`.
    pub(super) fn cancel_tasks_touching(&mut self, key: &str, sid: SegmentId) {
        let Some(obj) = self.objects.get(key) else {
            return;
        };
        let ids: Vec<u64> = obj.replication_task.into_iter().chain(obj.tier_task).collect();
        for id in ids {
            if self
                .tasks
                .get(id)
                .is_some_and(|t| t.source == Some(sid) || t.target == Some(sid))
            {
                self.cancel_task(id);
            }
        }
    }

    /// Drain: the segment stops taking allocations and each of its objects gets a Move task to a
    /// serving target (never a non-Active owner's segment). Objects with no servable source or
    /// no target stay for a later drain.
    pub fn drain(&mut self, segment: &str) -> Result<Vec<TaskDesc>, MasterError> {
        let sid = self.segments.id_of(segment).ok_or(MasterError::SegmentNotFound)?;
        let seg = self.segments.get_mut(sid).ok_or(MasterError::SegmentNotFound)?;
        if matches!(seg.lifecycle, Lifecycle::Mounting | Lifecycle::Unmounting) {
            return Err(MasterError::UnavailableInCurrentStatus);
        }
        seg.lifecycle = Lifecycle::Draining;
        let keys: Vec<String> = seg.keys.iter().cloned().collect();
        let mut out = Vec::new();
        for key in keys {
            let Some(obj) = self.objects.get(&key) else {
                continue;
            };
            if obj.replication_task.is_some() || !obj.is_complete() {
                continue;
            }
            let exclude: Vec<SegmentId> = obj.replicas.iter().filter_map(Replica::segment).collect();
            let size = obj.size;
            let Some(target) = self.choose_segments(size, 1, &exclude).pop() else {
                continue;
            };
            if let Ok(task) = self.start_replication(&key, Some(sid), target, TaskKind::Move) {
                out.push(TaskDesc {
                    task,
                    kind: TaskKind::Move.as_str(),
                    key,
                });
            }
        }
        Ok(out)
    }

    /// Offload heartbeat: an Active client with a LocalDisk registration is handed offload work
    /// for completed objects on its own serving segments that have no LocalDisk replica yet,
    /// within its free capacity. A Suspected client is handed nothing and nothing new is
    /// admitted for it; work already queued waits for recovery.
    pub fn offload_heartbeat(&mut self, client: &str) -> Result<Vec<TaskDesc>, MasterError> {
        let id = self.client_id(client);
        let disk = self.local_disks.get(&id).ok_or(MasterError::SegmentNotFound)?;
        if !eligibility::accepts_callbacks(&disk.owner) {
            return Err(MasterError::UnavailableInCurrentStatus);
        }
        if !self.seam().executor(&disk.owner).serves() {
            return Ok(Vec::new());
        }
        self.admit_offloads(id);
        Ok(self.deliver(id, true))
    }

    fn admit_offloads(&mut self, id: ClientId) {
        let seam = self.seam();
        let mut candidates = Vec::new();
        for sid in self.segments.owned_by(id) {
            let Some(seg) = self.segments.get(sid) else {
                continue;
            };
            for key in &seg.keys {
                let Some(obj) = self.objects.get(key) else {
                    continue;
                };
                let servable = obj
                    .replicas
                    .iter()
                    .any(|r| r.segment() == Some(sid) && r.eligibility(seam, &self.segments).serves());
                if servable && obj.is_complete() && !obj.has_local_disk() && obj.tier_task.is_none() {
                    candidates.push((key.clone(), obj.size));
                }
            }
        }
        candidates.sort();
        candidates.dedup();
        for (key, size) in candidates {
            let Some(disk) = self.local_disks.get_mut(&id) else {
                return;
            };
            if disk.used.saturating_add(size) > disk.capacity {
                continue;
            }
            disk.used += size;
            let owner = disk.owner.clone();
            let task = self.tasks.submit(TaskKind::Offload, &key, owner, None, None);
            if let Some(o) = self.objects.get_mut(&key) {
                o.tier_task = Some(task);
            }
        }
    }

    /// Promotion on hit: an object held only on LocalDisk gets a memory replica; the LocalDisk
    /// owner (which must be Active) executes it, the target is a serving segment.
    pub fn promote(&mut self, key: &str) -> Result<u64, MasterError> {
        let seam = self.seam();
        let obj = self.objects.get(key).ok_or(MasterError::ObjectNotFound)?;
        if obj.has_memory() || obj.tier_task.is_some() {
            return Err(MasterError::InvalidParams);
        }
        let holder = obj
            .replicas
            .iter()
            .find(|r| matches!(r.kind, ReplicaKind::LocalDisk { .. }))
            .ok_or(MasterError::ReplicaNotFound)?;
        if !holder.eligibility(seam, &self.segments).serves() {
            return Err(MasterError::UnavailableInCurrentStatus);
        }
        let executor = holder.owner().clone();
        let (size, tenant) = (obj.size, obj.tenant.clone());
        let target = self
            .choose_segments(size, 1, &[])
            .pop()
            .ok_or(MasterError::NoAvailableHandle)?;
        let replica = self.allocate_on(target, &tenant, key, size);
        let id = self.tasks.submit(TaskKind::Promote, key, executor, None, Some(target));
        let obj = self.objects.get_mut(key).expect("checked above");
        obj.replicas.push(replica);
        obj.tier_task = Some(id);
        Ok(id)
    }
}
