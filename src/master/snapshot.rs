//! Taking and restoring HA snapshots of the master.
//!
//! # Taking one: a per-shard cut, never stop-the-world
//!
//! A snapshot runs while requests run. It holds the membership gate exclusively (mounts,
//! unmounts and the offboarding steps that unmount wait; Ping, Get, Put, Remove, callbacks,
//! ticks and the offboarding `metadata` batches do not) and copies:
//! 1. the segment table, LocalDisk registrations and external entries (stable under the gate);
//! 2. each metadata shard in turn, under its lock, with the tasks naming its objects (every
//!    change to an object and its tasks happens under that lock: each shard is a consistent cut);
//! 3. *then* the registry, names, parked jobs, scratch, quotas limits and NoF.
//!
//! Why this is never torn (invariant 19): an offboarding sweep starts only after its Offline
//! commit, and Offline is terminal, so any incarnation whose objects a sweep touched before some
//! shard was copied is already Offline when the registry is copied in step 3: it is captured
//! with its job, which a restored master resumes (steps are idempotent and consume their inputs,
//! so progress recorded as a lower bound is safe). No job can *complete* during the snapshot —
//! its `segments` step needs the gate — so no incarnation captured in a shard disappears from
//! the registry before step 3. A job whose unmounting steps ran *before* the snapshot took the
//! gate can still erase its record during step 3 (the final compare-and-erase takes no gate):
//! the incarnation is then captured Offline with its job, its vacant slot read a moment later
//! is dropped, and the restored master runs the job again (its steps are idempotent). No mount
//! can publish a new incarnation or segment meanwhile.
//!
//! Derived state is not trusted across the cut: segment usage and key indexes, LocalDisk usage
//! and keys, and quota usage are recomputed at restore from the objects, tasks and scratch the
//! snapshot holds (they are sums over them), so they balance whatever moment each shard was
//! copied at.
//!
//! # Restoring
//!
//! Restoring builds a *new* master; any inconsistency is refused before it is returned, with an
//! error naming what is wrong (a snapshot can pass its checksum and still contradict itself).
//! Every restored client is Active with a fresh active TTL and not ready; every resource is
//! re-bound to its restored record; every pending job is re-minted by committing its restored
//! record Suspected → Offline (the only way to mint a job), stamped with the restore time, and
//! handed to whoever runs jobs in the new master (inline, the outbox or the workers), so the
//! barrier survives failover in both offboarding modes.

use super::object::{Object, Replica, ReplicaKind};
use super::offboard::Scratch;
use super::segment::Segment;
use super::task::{Task, TaskKind};
use super::{lock, LocalDisk, Master, MasterCore, MasterOptions};
use crate::clock::Clock;
use crate::config::LivenessConfig;
use crate::liveness::{ClientId, ClientLivenessRecord, Incarnation};
use crate::offboarding::{ClientOffboardingJob, Step};
use crate::snapshot::*;
use crate::sync::{Arc, CellArc};
use std::collections::{BTreeMap, BTreeSet};

type Records = BTreeMap<(u128, u64), Arc<ClientLivenessRecord>>;

/// The first 16 bytes of `key`, zero-padded, as a big-endian number. When two keys' prefixes
/// differ they order as the keys do (byte-wise); when they are equal the keys must be compared.
fn key_prefix(key: &str) -> u128 {
    let mut buf = [0u8; 16];
    let n = key.len().min(16);
    buf[..n].copy_from_slice(&key.as_bytes()[..n]);
    u128::from_be_bytes(buf)
}

fn bad(msg: String) -> SnapshotError {
    SnapshotError::Inconsistent(msg)
}

impl MasterCore {
    /// Captures the master's metadata while requests run (see the module doc).
    pub fn snapshot(&self) -> Snapshot {
        let _gate = self.gate.write().unwrap_or_else(|e| e.into_inner());
        let segments = self.segment_snaps();
        let local_disks = lock(&self.local_disks).values().map(local_disk_snap).collect();
        let external = lock(&self.external).entries();
        let (objects, tasks) = self.shard_snaps();
        let clients = self
            .live
            .registry()
            .records()
            .iter()
            .map(|rec| ClientSnap {
                id: rec.client().0,
                incarnation: rec.incarnation().0,
                ready: rec.is_ready(),
                job: self.job_snap(rec),
            })
            .collect::<Vec<ClientSnap>>();
        // The records and the vacant slots are two reads of the registry, and a job's final
        // compare-and-erase takes no gate: it can vacate a client between them. Such a client
        // was captured above Offline with its job (which the restored master runs again), so
        // its later vacant slot is dropped; keeping both made the snapshot unrestorable
        // ("client listed twice"; found by loom_tests/master_snapshot_vs_offboarding.rs).
        let vacant = self
            .live
            .registry()
            .vacant()
            .into_iter()
            .filter(|(c, _)| !clients.iter().any(|k| k.id == c.0))
            .map(|(c, n)| (c.0, n.0))
            .collect();
        let names = self
            .names
            .all()
            .into_iter()
            .map(|(n, id)| (n.to_string(), id.0))
            .collect();
        // Scratch is read after the registry: an incarnation captured before its Offline
        // commit may have had its `metadata` batch (which takes no gate) write scratch since.
        // Only the scratch of incarnations captured with their job belongs to this cut
        // (found by loom_tests/master_snapshot_vs_offboarding.rs).
        let scratch = self
            .scratch()
            .iter()
            .filter(|((c, i), _)| {
                clients
                    .iter()
                    .any(|k| k.id == c.0 && k.incarnation == i.0 && k.job.is_some())
            })
            .map(|((c, i), s)| scratch_snap(*c, *i, s))
            .collect();
        Snapshot {
            version: FORMAT_VERSION,
            names,
            clients,
            vacant,
            segments,
            objects,
            next_task_id: lock(&self.tasks).last_id(),
            tasks,
            local_disks,
            quotas: lock(&self.quotas)
                .iter()
                .map(|(t, q)| (t.clone(), q.used, q.limit))
                .collect(),
            lru_clock: self.shards.clock(),
            nof: lock(&self.nof)
                .iter()
                .map(|(n, s)| (n.clone(), s.size, s.failures))
                .collect(),
            external,
            scratch,
        }
    }

    fn job_snap(&self, rec: &ClientLivenessRecord) -> Option<JobSnap> {
        if crate::eligibility::accepts_callbacks(rec) {
            return None;
        }
        let (steps_done, attempts) = self
            .pending_job_of(rec.client(), rec.incarnation())
            .map_or((Vec::new(), 0), |j| (j.steps_done, j.attempts));
        Some(JobSnap {
            steps_done,
            attempts,
            committed_at_ms: self.live.clock().base().now_ms(),
        })
    }

    fn segment_snaps(&self) -> Vec<SegmentSnap> {
        self.segments()
            .iter()
            .map(|s| SegmentSnap {
                name: s.name.clone(),
                size: s.size,
                used: s.used(),
                owner: s.owner.client().0,
                incarnation: s.owner.incarnation().0,
                lifecycle: s.lifecycle(),
            })
            .collect()
    }

    /// Every shard, one lock at a time, with the tasks naming its objects.
    fn shard_snaps(&self) -> (Vec<ObjectSnap>, Vec<TaskSnap>) {
        let mut entries: Vec<(u128, String, ObjectSnap)> = Vec::new();
        let mut tasks = Vec::new();
        for i in 0..self.shards.len() {
            let shard = self.shards.lock(i);
            entries.extend(
                shard
                    .objects
                    .iter()
                    .map(|(k, o)| (key_prefix(k), k.clone(), object_snap(k, o))),
            );
            let table = lock(&self.tasks);
            tasks.extend(
                table
                    .of_shard(i)
                    .into_iter()
                    .filter_map(|id| table.get(id))
                    .map(task_snap),
            );
        }
        // Keys are unique, so the unstable sort is deterministic; comparing key prefixes held
        // inline saves a cache miss per comparison (`snapshot/encode_1m`).
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        tasks.sort_by_key(|t: &TaskSnap| t.id);
        (entries.into_iter().map(|e| e.2).collect(), tasks)
    }
}

fn object_snap(key: &str, o: &Object) -> ObjectSnap {
    let replicas = o
        .replicas
        .iter()
        .map(|r| match &r.kind {
            ReplicaKind::Memory { segment, .. } => ReplicaSnap::Memory {
                segment: segment.name.clone(),
                complete: r.complete,
            },
            ReplicaKind::LocalDisk { owner } => ReplicaSnap::LocalDisk {
                owner: owner.client().0,
                incarnation: owner.incarnation().0,
                complete: r.complete,
            },
        })
        .collect();
    ObjectSnap {
        key: key.to_string(),
        tenant: o.tenant.clone(),
        size: o.size,
        touched: o.touched,
        replicas,
        replication_task: o.replication_task,
        tier_task: o.tier_task,
    }
}

fn task_snap(t: &Task) -> TaskSnap {
    TaskSnap {
        id: t.id,
        kind: t.kind,
        key: t.key.clone(),
        executor: t.executor.client().0,
        incarnation: t.executor.incarnation().0,
        source: t.source.as_ref().map(|s| s.name.clone()),
        target: t.target.as_ref().map(|s| s.name.clone()),
        delivered: t.delivered,
    }
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
        let m = Master::new(clock, config, options);
        for (name, id) in &snap.names {
            if !m.names.restore(name, ClientId(*id)) {
                return Err(bad(format!("client {name:?} / id {id} named twice")));
            }
        }
        phases.mark("names", &mut since);
        let mut r = Restorer {
            m: &m,
            snap,
            records: Records::new(),
            quota_used: BTreeMap::new(),
            segments: BTreeMap::new(),
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
        r.check_claims(&mut jobs, &scratch);
        r.quotas();
        m.shards.restore_clock(snap.lru_clock);
        {
            let mut nof = lock(&m.nof);
            for (name, size, failures) in &snap.nof {
                if !nof.restore(name, *size, *failures) {
                    return Err(bad(format!("NoF segment {name:?} listed twice or of size 0")));
                }
            }
        }
        {
            let mut external = lock(&m.external);
            for name in &snap.external {
                external.put(name);
            }
        }
        m.note_restored_offline(jobs.len() as u64);
        m.restore_offboarding(scratch, jobs);
        phases.mark("tasks, quotas and jobs", &mut since);
        Ok((m, phases))
    }
}

/// The restore in progress: each method restores one table and checks it against the others.
struct Restorer<'a> {
    m: &'a Master,
    snap: &'a Snapshot,
    records: Records,
    /// Quota usage recomputed from what is restored.
    quota_used: BTreeMap<String, u64>,
    /// The restored segments by name (one lookup per replica, no table lock).
    segments: BTreeMap<&'a str, Arc<Segment>>,
}

impl Restorer<'_> {
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
        let mut table = self.m.segments_mut();
        let snap = self.snap;
        for s in &snap.segments {
            let owner = self.owner(s.owner, s.incarnation, &format!("segment {}", s.name))?;
            if table.id_of(&s.name).is_some() || s.size == 0 {
                return Err(bad(format!("segment {} duplicated or of size 0", s.name)));
            }
            let client_name = self
                .m
                .names
                .name(owner.client())
                .unwrap_or_else(|| CellArc::from(owner.client().to_string()));
            let seg = table.insert_with(|id| Segment::new(id, s.name.clone(), client_name, s.size, owner, s.lifecycle));
            seg.mark_restored();
            self.segments.insert(s.name.as_str(), seg);
        }
        Ok(())
    }

    fn local_disks(&mut self) -> Result<(), SnapshotError> {
        let mut disks = lock(&self.m.local_disks);
        for d in &self.snap.local_disks {
            let owner = self.owner(d.client, d.incarnation, "local disk")?;
            if disks.contains_key(&ClientId(d.client)) {
                return Err(bad(format!("client {} has two LocalDisk registrations", d.client)));
            }
            let client_name = self
                .m
                .names
                .name(owner.client())
                .unwrap_or_else(|| CellArc::from(owner.client().to_string()));
            // Usage and keys are recomputed from the objects and tasks below.
            let disk = LocalDisk {
                owner,
                client_name,
                capacity: d.capacity,
                used: 0,
                keys: Default::default(),
            };
            disks.insert(ClientId(d.client), disk);
        }
        Ok(())
    }

    /// LocalDisk keys a snapshot lists must be LocalDisk replicas of that disk's owner (this
    /// build recomputes them and writes none; an older or hand-made snapshot may list them).
    fn local_disk_keys(&self) -> Result<(), SnapshotError> {
        let disks = lock(&self.m.local_disks);
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

    fn objects(&mut self) -> Result<(), SnapshotError> {
        let mut touched = BTreeSet::new();
        for o in &self.snap.objects {
            if o.replicas.is_empty() || o.size == 0 {
                return Err(bad(format!("object {:?} has no replica or size 0", o.key)));
            }
            if !touched.insert(o.touched) {
                return Err(bad(format!(
                    "object {:?} (or its recency {}) listed twice",
                    o.key, o.touched
                )));
            }
            let mut replicas: Vec<Replica> = Vec::new();
            for r in &o.replicas {
                let replica = self.replica(o, r)?;
                if replicas.iter().any(|x| same_place(x, &replica)) {
                    return Err(bad(format!("object {:?} has two replicas in one place", o.key)));
                }
                replicas.push(replica);
            }
            let object = Object {
                tenant: o.tenant.clone(),
                size: o.size,
                touched: o.touched,
                replicas,
                replication_task: o.replication_task,
                tier_task: o.tier_task,
                writer: None,
            };
            let mut shard = self.m.shards.lock_key(&o.key);
            if shard.objects.contains_key(&o.key) {
                return Err(bad(format!("object {:?} listed twice", o.key)));
            }
            shard.insert(&o.key, object, o.touched);
        }
        Ok(())
    }

    /// One replica, charged to its segment or disk and to the tenant's quota.
    fn replica(&mut self, o: &ObjectSnap, r: &ReplicaSnap) -> Result<Replica, SnapshotError> {
        let key = &o.key;
        let replica = match r {
            ReplicaSnap::Memory { segment, complete } => {
                let seg = self
                    .segments
                    .get(segment.as_str())
                    .cloned()
                    .ok_or_else(|| bad(format!("object {key} on unknown segment {segment}")))?;
                {
                    let mut a = seg.alloc();
                    a.used = a.used.saturating_add(o.size);
                    if a.used > seg.size {
                        return Err(bad(format!("segment {segment} holds more than its size {}", seg.size)));
                    }
                    a.keys.insert(key.clone());
                }
                let mut rep = Replica::memory(seg);
                rep.complete = *complete;
                rep
            }
            ReplicaSnap::LocalDisk {
                owner,
                incarnation,
                complete,
            } => {
                let owner = self.owner(*owner, *incarnation, key)?;
                let mut disks = lock(&self.m.local_disks);
                let disk = disks
                    .get_mut(&owner.client())
                    .filter(|d| Arc::ptr_eq(&d.owner, &owner))
                    .ok_or_else(|| {
                        bad(format!(
                            "object {key} on the LocalDisk of client {}, which has none",
                            owner.client()
                        ))
                    })?;
                disk.used = disk.used.saturating_add(o.size);
                if disk.used > disk.capacity {
                    return Err(bad(format!(
                        "LocalDisk of client {} holds more than its capacity {}",
                        owner.client(),
                        disk.capacity
                    )));
                }
                disk.keys.insert(key.clone());
                Replica {
                    kind: ReplicaKind::LocalDisk { owner },
                    complete: *complete,
                }
            }
        };
        self.charge(&o.tenant, o.size);
        Ok(replica)
    }

    fn tasks(&mut self) -> Result<(), SnapshotError> {
        if self.snap.next_task_id == u64::MAX {
            return Err(bad("next task id u64::MAX leaves no task id to allocate".to_string()));
        }
        // Even with no task left: ids already handed out must not be handed out again.
        lock(&self.m.tasks).restore_next_id(self.snap.next_task_id);
        let mut seen = BTreeSet::new();
        for t in &self.snap.tasks {
            if !seen.insert(t.id) || t.id > self.snap.next_task_id {
                return Err(bad(format!(
                    "task {} listed twice or past next id {}",
                    t.id, self.snap.next_task_id
                )));
            }
            let task = self.task(t)?;
            lock(&self.m.tasks).restore(task, self.snap.next_task_id);
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
                    .segments()
                    .by_name(n)
                    .cloned()
                    .map(Some)
                    .ok_or_else(|| bad(format!("task {} names unknown segment {n}", t.id))),
            }
        };
        let (source, target) = (seg(&t.source)?, seg(&t.target)?);
        let si = self.m.shards.index_of(&t.key);
        let shard = self.m.shards.lock(si);
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
            let mut disks = lock(&self.m.local_disks);
            let disk = disks
                .get_mut(&executor.client())
                .filter(|d| Arc::ptr_eq(&d.owner, &executor))
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
            executor,
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

    /// A restored job's "steps done" is trusted only as a prefix of the steps in order, and only
    /// where nothing of that step is left: a claim the restored tables contradict (its segments,
    /// LocalDisk, replicas, tasks, refunds or segment names still there), and every claim after
    /// it, is dropped and those steps run again (steps are idempotent).
    /// Trusting it would skip the step and leak what it should remove, with the barrier lifted.
    fn check_claims(&self, jobs: &mut [ClientOffboardingJob], scratch: &BTreeMap<(ClientId, Incarnation), Scratch>) {
        let segments = self.m.segments();
        let disks = lock(&self.m.local_disks);
        let tasks = lock(&self.m.tasks);
        for job in jobs.iter_mut() {
            let rec = job.record().clone();
            let owned: Vec<_> = segments
                .iter()
                .filter(|s| Arc::ptr_eq(&s.owner, &rec))
                .cloned()
                .collect();
            let disk = disks.get(&rec.client()).filter(|d| Arc::ptr_eq(&d.owner, &rec));
            let s = scratch.get(&(job.client(), job.incarnation()));
            let left = |step: Step| match step {
                Step::Metadata => {
                    owned.iter().any(|s| s.key_count() > 0)
                        || disk.is_some_and(|d| !d.keys.is_empty() || d.used > 0)
                        || !tasks.of_client(rec.client()).is_empty()
                        || tasks.iter().any(|t| owned.iter().any(|s| t.touches(s.id)))
                }
                Step::Segments => !owned.is_empty(),
                Step::LocalDisk => disk.is_some(),
                Step::Quota => s.is_some_and(|s| !s.refunds.is_empty()),
                Step::ExternalMetadata => s.is_some_and(|s| !s.segment_names.is_empty()),
            };
            // Steps run in order, so real progress is a prefix of `Step::ALL`: a later claim
            // after a step not done would skip that step's output (e.g. refunds the re-run
            // `metadata` records for a `quota` claimed done).
            let claimed = job.steps_done();
            let kept: Vec<Step> = Step::ALL
                .into_iter()
                .take_while(|st| claimed.contains(st) && !left(*st))
                .collect();
            if kept != claimed {
                job.reset_progress(&kept);
            }
        }
    }

    /// Limits from the snapshot; usage recomputed (replicas + refunds not yet applied).
    fn quotas(&mut self) {
        let mut quotas = lock(&self.m.quotas);
        for (tenant, _, limit) in &self.snap.quotas {
            quotas.entry(tenant.clone()).or_default().limit = *limit;
        }
        for (tenant, used) in std::mem::take(&mut self.quota_used) {
            quotas.entry(tenant).or_default().used = used;
        }
    }
}

fn same_place(a: &Replica, b: &Replica) -> bool {
    match (&a.kind, &b.kind) {
        (ReplicaKind::Memory { segment: x, .. }, ReplicaKind::Memory { segment: y, .. }) => x.id == y.id,
        (ReplicaKind::LocalDisk { owner: x }, ReplicaKind::LocalDisk { owner: y }) => Arc::ptr_eq(x, y),
        _ => false,
    }
}

/// A LocalDisk registration. Its keys and usage are derived from the objects and tasks, which
/// are copied shard by shard after it, so they are written as none and recomputed at restore.
fn local_disk_snap(d: &LocalDisk) -> LocalDiskSnap {
    LocalDiskSnap {
        client: d.owner.client().0,
        incarnation: d.owner.incarnation().0,
        capacity: d.capacity,
        used: d.used,
        keys: Vec::new(),
    }
}

fn scratch_snap(c: ClientId, i: Incarnation, s: &Scratch) -> ScratchSnap {
    ScratchSnap {
        client: c.0,
        incarnation: i.0,
        refunds: s.refunds.clone(),
        segment_names: s.segment_names.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::key_prefix;
    use proptest::prelude::*;

    /// The snapshot's object order: prefix first, the whole key on a tie.
    fn prefix_sorted(keys: &[String]) -> Vec<String> {
        let mut v: Vec<_> = keys.iter().map(|k| (key_prefix(k), k.clone())).collect();
        v.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        v.into_iter().map(|(_, k)| k).collect()
    }

    #[test]
    fn prefix_order_is_key_order_at_the_edges() {
        let keys: Vec<String> = [
            "",
            "\0",
            "a",
            "a\0",
            "a\0\0",
            "ab",
            "b",
            "0123456789abcdef",
            "0123456789abcdef\0",
            "0123456789abcdeg",
            "0123456789abcdef0",
            "0123456789abcdee~",
            "é",
            "\u{10FFFF}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut want = keys.clone();
        want.sort();
        assert_eq!(prefix_sorted(&keys), want);
    }

    proptest! {
        #[test]
        fn prefix_order_is_key_order(keys in proptest::collection::vec("[\\x00ab]{0,20}", 0..40)) {
            let mut want = keys.clone();
            want.sort();
            prop_assert_eq!(prefix_sorted(&keys), want);
        }
    }
}
