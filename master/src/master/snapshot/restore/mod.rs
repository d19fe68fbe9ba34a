//! Restoring a master from an HA snapshot: a *new* master is built table by table, each table
//! checked against the ones restored before it, and any contradiction refused with an error
//! naming it (see [the module doc](super)).
//!
//! Owns: [`Master::restore`], [`Master::restore_timed`], [`RestorePhases`] and the `Restorer`
//! (one method per table; the objects phase, the bulk of a large restore, in `objects.rs`).
//! Derived state (segment and LocalDisk usage and key indexes, quota usage) is recomputed here
//! from the objects, tasks and scratch, never read from the snapshot.
//!
//! # Ground rules
//!
//! - The master being built is not shared with any other thread until it is returned, so its
//!   locks are uncontended; they are still taken in the master's order (never two shards,
//!   never two leaves).
//! - Every phase runs on the calling thread except the objects phase, which from 16k objects
//!   on builds the shards on the caller and one scoped helper thread (joined before the phase
//!   ends; see `objects.rs` for the split and why its result and its error do not depend on the
//!   threads' timing).
//! - May not touch: the snapshot being read (borrowed immutably) or any other master. Which
//!   claimed offboarding progress is kept is decided in `claims.rs`.

use super::super::offboard::Scratch;
use super::super::rooms::{Task, TaskKind};
use super::super::segment::Segment;
use super::super::{LocalDisk, Master, MasterCore, MasterOptions};
use super::claims::check_claims;
use crate::clock::Clock;
use crate::config::LivenessConfig;
use crate::liveness::{ClientId, ClientLivenessRecord, Incarnation};
use crate::offboarding::ClientOffboardingJob;
use crate::snapshot::*;
use crate::sync::{Arc, CellArc};
use std::collections::{BTreeMap, BTreeSet};

mod objects;

type Records = BTreeMap<(u128, u64), Arc<ClientLivenessRecord>>;

fn bad(msg: String) -> SnapshotError {
    SnapshotError::Inconsistent(msg)
}

/// How long each phase of a restore took (the `snapshot/restore_1m` bench prints it).
#[derive(Clone, Debug, Default)]
pub struct RestorePhases {
    /// Phase name and its duration, in order.
    pub phases: Vec<(&'static str, std::time::Duration)>,
}

impl RestorePhases {
    fn mark(&mut self, name: &'static str, since: &mut std::time::Instant) {
        let now = std::time::Instant::now();
        self.phases.push((name, now - *since));
        *since = now;
    }
}

impl Master {
    /// Builds a master from `snap` on `clock` (the failover time is the clock's now), or refuses
    /// a snapshot that contradicts itself, naming what is wrong.
    pub fn restore(
        clock: CellArc<dyn Clock>,
        config: LivenessConfig,
        options: MasterOptions,
        snap: &Snapshot,
    ) -> Result<Master, SnapshotError> {
        Self::restore_timed(clock, config, options, snap).map(|(m, _)| m)
    }

    /// [`Master::restore`], also reporting how long each phase took.
    pub fn restore_timed(
        clock: CellArc<dyn Clock>,
        config: LivenessConfig,
        options: MasterOptions,
        snap: &Snapshot,
    ) -> Result<(Master, RestorePhases), SnapshotError> {
        let mut phases = RestorePhases::default();
        let mut since = std::time::Instant::now();
        if snap.version > FORMAT_VERSION || snap.version == 0 {
            return Err(SnapshotError::FutureVersion {
                found: snap.version,
                supported: FORMAT_VERSION,
            });
        }
        let master = Master::new(clock, config, options);
        let m: &MasterCore = &master.core;
        for (name, id) in &snap.names {
            if !m.membership.names().restore(name, ClientId(*id)) {
                return Err(bad(format!("client {name:?} / id {id} named twice")));
            }
        }
        phases.mark("names", &mut since);
        let mut r = Restorer {
            m,
            snap,
            records: Records::new(),
            quota_used: BTreeMap::new(),
            segments: Vec::new(),
            segment_ids: hashbrown::HashMap::default(),
        };
        let mut jobs = r.clients()?;
        phases.mark("records", &mut since);
        r.segments()?;
        r.local_disks()?;
        phases.mark("segments", &mut since);
        r.objects()?;
        r.local_disk_keys()?;
        phases.mark("objects", &mut since);
        r.tasks()?;
        let scratch = r.scratch(&jobs)?;
        check_claims(m, &mut jobs, &scratch);
        r.quotas();
        m.data.shards().restore_clock(snap.lru_clock);
        {
            let mut nof = m.data.nof();
            for (name, size, failures) in &snap.nof {
                if !nof.restore(name, *size, *failures) {
                    return Err(bad(format!("NoF segment {name:?} listed twice or of size 0")));
                }
            }
        }
        {
            let mut external = m.membership.external();
            for name in &snap.external {
                external.put(name);
            }
        }
        m.journal.note_restored_offline(jobs.len() as u64);
        m.restore_offboarding(scratch, jobs);
        phases.mark("tasks, quotas and jobs", &mut since);
        Ok((master, phases))
    }
}

/// The restore in progress: each method restores one table and checks it against the others.
struct Restorer<'m, 'a> {
    m: &'m MasterCore,
    snap: &'a Snapshot,
    records: Records,
    /// Quota usage recomputed from what is restored.
    quota_used: BTreeMap<String, u64>,
    /// The restored segments, in snapshot order (what the objects phase tallies by index).
    segments: Vec<Arc<Segment>>,
    /// Index into `segments` by name (one lookup per replica, no table lock).
    segment_ids: hashbrown::HashMap<&'a str, u32, foldhash::fast::FixedState>,
}

impl<'a> Restorer<'_, 'a> {
    fn owner(&self, id: u128, inc: u64, what: &str) -> Result<Arc<ClientLivenessRecord>, SnapshotError> {
        self.records.get(&(id, inc)).cloned().ok_or_else(|| {
            bad(format!(
                "{what} owned by client {id} incarnation {inc}, which is not in the snapshot"
            ))
        })
    }

    fn charge(&mut self, tenant: &str, bytes: u64) {
        match self.quota_used.get_mut(tenant) {
            Some(q) => *q = q.saturating_add(bytes),
            None => {
                self.quota_used.insert(tenant.to_string(), bytes);
            }
        }
    }

    /// Records: Active with a fresh active TTL and not ready, or Offline with a re-minted job.
    fn clients(&mut self) -> Result<Vec<ClientOffboardingJob>, SnapshotError> {
        let restored = crate::persist::restore_clients(&self.m.live, &self.snap.clients, &self.snap.vacant)?;
        self.records = restored
            .records
            .into_iter()
            .map(|rec| ((rec.client().0, rec.incarnation().0), rec))
            .collect();
        Ok(restored.jobs)
    }

    fn segments(&mut self) -> Result<(), SnapshotError> {
        let mut table = self.m.data.segments_mut();
        let snap = self.snap;
        for s in &snap.segments {
            let owner = self.owner(s.owner, s.incarnation, &format!("segment {}", s.name))?;
            if table.id_of(&s.name).is_some() || s.size == 0 {
                return Err(bad(format!("segment {} duplicated or of size 0", s.name)));
            }
            let client_name = self
                .m
                .membership
                .names()
                .name(owner.client())
                .unwrap_or_else(|| CellArc::from(owner.client().to_string()));
            let seg = table
                .insert_with(|id| Segment::new(id, s.name.clone(), client_name, s.size, owner.into(), s.lifecycle));
            seg.mark_restored();
            self.segment_ids.insert(s.name.as_str(), self.segments.len() as u32);
            self.segments.push(seg);
        }
        Ok(())
    }

    fn local_disks(&mut self) -> Result<(), SnapshotError> {
        let mut disks = self.m.membership.local_disks();
        for d in &self.snap.local_disks {
            let owner = self.owner(d.client, d.incarnation, "local disk")?;
            if disks.contains_key(&ClientId(d.client)) {
                return Err(bad(format!("client {} has two LocalDisk registrations", d.client)));
            }
            let client_name = self
                .m
                .membership
                .names()
                .name(owner.client())
                .unwrap_or_else(|| CellArc::from(owner.client().to_string()));
            // Usage and keys are recomputed from the objects and tasks below.
            let disk = LocalDisk {
                owner: owner.into(),
                client_name,
                capacity: d.capacity,
                used: 0,
                keys: Default::default(),
                held: 0,
                hold: false,
            };
            disks.insert(ClientId(d.client), disk);
        }
        Ok(())
    }

    /// LocalDisk keys a snapshot lists must be LocalDisk replicas of that disk's owner (this
    /// build recomputes them and writes none; an older or hand-made snapshot may list them).
    fn local_disk_keys(&self) -> Result<(), SnapshotError> {
        let disks = self.m.membership.local_disks();
        for d in &self.snap.local_disks {
            let restored = disks.get(&ClientId(d.client));
            if let Some(key) = d.keys.iter().find(|k| !restored.is_some_and(|r| r.keys.contains(*k))) {
                return Err(bad(format!(
                    "LocalDisk of client {} lists key {key:?}, which has no replica there ({} keys listed)",
                    d.client,
                    d.keys.len()
                )));
            }
        }
        Ok(())
    }

    fn tasks(&mut self) -> Result<(), SnapshotError> {
        if self.snap.next_task_id == u64::MAX {
            return Err(bad("next task id u64::MAX leaves no task id to allocate".to_string()));
        }
        // Even with no task left: ids already handed out must not be handed out again.
        self.m.work.tasks().restore_next_id(self.snap.next_task_id);
        let mut seen = BTreeSet::new();
        for t in &self.snap.tasks {
            if !seen.insert(t.id) || t.id > self.snap.next_task_id {
                return Err(bad(format!(
                    "task {} listed twice or past next id {}",
                    t.id, self.snap.next_task_id
                )));
            }
            let task = self.task(t)?;
            self.m.work.tasks().restore(task, self.snap.next_task_id);
        }
        // Every task an object names must exist and name that object back, in the right slot.
        let by_id: BTreeMap<u64, &TaskSnap> = self.snap.tasks.iter().map(|t| (t.id, t)).collect();
        for o in &self.snap.objects {
            let named = [(o.replication_task, false), (o.tier_task, true)];
            for (id, tier) in named.iter().filter_map(|(id, tier)| id.map(|id| (id, *tier))) {
                let Some(t) = by_id.get(&id) else {
                    return Err(bad(format!(
                        "object {:?} names task {id}, which is not in the snapshot",
                        o.key
                    )));
                };
                let tier_kind = matches!(t.kind, TaskKind::Offload | TaskKind::Promote);
                if t.key != o.key || tier_kind != tier {
                    return Err(bad(format!(
                        "object {:?} names task {id}, which is a {:?} task of {:?}",
                        o.key, t.kind, t.key
                    )));
                }
            }
        }
        Ok(())
    }

    fn task(&mut self, t: &TaskSnap) -> Result<Task, SnapshotError> {
        let executor = self.owner(t.executor, t.incarnation, &format!("task {}", t.id))?;
        let seg = |name: &Option<String>| -> Result<Option<Arc<Segment>>, SnapshotError> {
            match name {
                None => Ok(None),
                Some(n) => self
                    .m
                    .data
                    .segments()
                    .by_name(n)
                    .cloned()
                    .map(Some)
                    .ok_or_else(|| bad(format!("task {} names unknown segment {n}", t.id))),
            }
        };
        let (source, target) = (seg(&t.source)?, seg(&t.target)?);
        let si = self.m.data.shards().index_of(&t.key);
        let shard = self.m.data.shards().lock(si);
        let obj = shard.objects.get(&t.key).ok_or_else(|| {
            bad(format!(
                "task {} names object {:?}, which is not in the snapshot",
                t.id, t.key
            ))
        })?;
        let named = match t.kind {
            TaskKind::Copy | TaskKind::Move => obj.replication_task,
            TaskKind::Offload | TaskKind::Promote => obj.tier_task,
        };
        if named != Some(t.id) {
            return Err(bad(format!("task {} is not the task object {:?} names", t.id, t.key)));
        }
        if let Some(target) = &target {
            if !obj.replicas.iter().any(|r| r.segment() == Some(target.id)) {
                return Err(bad(format!(
                    "task {} targets {}, where {:?} has no replica",
                    t.id, target.name, t.key
                )));
            }
        }
        if t.kind == TaskKind::Offload {
            let size = obj.size;
            let mut disks = self.m.membership.local_disks();
            let disk = disks
                .get_mut(&executor.client())
                .filter(|d| d.owner.is(&executor))
                .ok_or_else(|| bad(format!("offload task {} for a client without a LocalDisk", t.id)))?;
            disk.used = disk.used.saturating_add(size);
            if disk.used > disk.capacity {
                return Err(bad(format!(
                    "LocalDisk of client {} holds more than its capacity",
                    executor.client()
                )));
            }
        }
        Ok(Task {
            id: t.id,
            kind: t.kind,
            key: t.key.clone(),
            executor: executor.into(),
            source,
            target,
            shard: si,
            delivered: t.delivered,
        })
    }

    /// Scratch belongs to incarnations whose job is pending; its refunds are still charged.
    fn scratch(
        &mut self,
        jobs: &[ClientOffboardingJob],
    ) -> Result<BTreeMap<(ClientId, Incarnation), Scratch>, SnapshotError> {
        let mut out = BTreeMap::new();
        for s in &self.snap.scratch {
            let key = (ClientId(s.client), Incarnation(s.incarnation));
            if !jobs.iter().any(|j| (j.client(), j.incarnation()) == key) {
                return Err(bad(format!(
                    "offboarding scratch for client {} incarnation {}, which has no pending job",
                    s.client, s.incarnation
                )));
            }
            for (tenant, bytes) in &s.refunds {
                self.charge(tenant, *bytes);
            }
            let scratch = Scratch {
                refunds: s.refunds.clone(),
                segment_names: s.segment_names.clone(),
            };
            if out.insert(key, scratch).is_some() {
                return Err(bad(format!("offboarding scratch for client {} listed twice", s.client)));
            }
        }
        Ok(out)
    }

    /// Limits from the snapshot; usage recomputed (replicas + refunds not yet applied).
    fn quotas(&mut self) {
        let mut quotas = self.m.data.quotas().table();
        for (tenant, _, limit) in &self.snap.quotas {
            quotas.entry(tenant.clone()).or_default().limit = *limit;
        }
        for (tenant, used) in std::mem::take(&mut self.quota_used) {
            quotas.entry(tenant).or_default().used = used;
        }
    }
}
