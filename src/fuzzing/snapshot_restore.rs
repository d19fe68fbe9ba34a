//! The `snapshot_restore` fuzz body: checksummed but inconsistent snapshots through
//! [`Master::restore`].
//!
//! `snapshot_decode` mutates bytes, so almost every input it makes is refused by the decoder
//! or by the first check of restore. This body instead builds a small *valid* master from the
//! input's first bytes (up to four clients with segments, LocalDisks, objects of two tenants,
//! Copy/Move/offload tasks, finished offloads, NoF segments, a quota limit, and some clients
//! Offline with their job pending because a step keeps failing), takes its [`Snapshot`], then
//! applies structured mutations the rest of the input chooses (drop, duplicate or retarget a
//! client, name, segment, object, replica, task, LocalDisk, scratch; wild sizes, usage,
//! incarnations, ids, task ids, NoF failure counts — `0`, `u32::MAX`, `u64::MAX`, `u128::MAX`;
//! 1,024+ stale LocalDisk keys; …), encodes it (so it passes the checksum) and restores it.
//!
//! Oracle:
//! - no panic; the encoded snapshot decodes to the same value;
//! - a refusal is `Inconsistent` with a message (or `FutureVersion` for a mutated version);
//! - a restored master satisfies the derived-state invariants ([`check_restored`]): every
//!   segment's usage and key index equal the sum of the replicas on it, within its size; every
//!   LocalDisk's usage is its replicas plus its offloads in flight, within its capacity; each
//!   tenant's quota usage is its replicas plus the refunds still owed; every replica, segment,
//!   disk and task is owned by the restored incarnation of its client; every task names an
//!   object that names it back;
//! - bounded time: with nobody pinging, every client goes Offline and every job (restored or
//!   new) completes within [`MAX_TICKS`] ticks — no livelock — and the master is then empty:
//!   no segment, object, task, LocalDisk or quota usage left (nothing leaked by restore);
//! - the same checks run with jobs run inline at the tick and with jobs collected in the
//!   outbox and run by the harness right after each tick (the asynchronous path), failed
//!   ones given back with `return_job`.
//!
//! An unmutated snapshot must restore, and its restored master must snapshot back to the same
//! value (up to readiness and the job stamps, which restore resets).

use crate::clock::{Clock, ManualClock};
use crate::config::LivenessConfig;
use crate::master::{Master, MasterOptions, OffboardingDriver, TaskKind};
use crate::offboarding::{complete_client_offboarding, Step};
use crate::snapshot::{ReplicaSnap, Snapshot, SnapshotError};
use arbitrary::{Arbitrary, Unstructured};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Ticks a restored master gets to offboard everyone.
const MAX_TICKS: usize = 1_000;
/// Mutations per input, at most.
const MAX_MUTATIONS: usize = 12;
const TICK_MS: u64 = 100;

/// The valid master's shape.
#[derive(Arbitrary, Debug)]
struct Shape {
    clients: u8,
    disks: u8,
    objects: u8,
    copies: u8,
    offloads: u8,
    offline: u8,
    fail: u8,
    nof: u8,
    quota: bool,
    outbox: bool,
}

/// A wild number.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Wild {
    Zero,
    One,
    Small(u8),
    Max,
    MaxMinus(u8),
    Any(u64),
}

impl Wild {
    fn u64(self) -> u64 {
        match self {
            Wild::Zero => 0,
            Wild::One => 1,
            Wild::Small(b) => u64::from(b),
            Wild::Max => u64::MAX,
            Wild::MaxMinus(b) => u64::MAX - u64::from(b),
            Wild::Any(v) => v,
        }
    }
    fn u32(self) -> u32 {
        match self {
            Wild::Max => u32::MAX,
            Wild::MaxMinus(b) => u32::MAX - u32::from(b),
            w => w.u64() as u32,
        }
    }
    fn u128(self) -> u128 {
        match self {
            Wild::Max => u128::MAX,
            Wild::MaxMinus(b) => u128::from(u64::MAX) + 1 + u128::from(b),
            w => u128::from(w.u64()),
        }
    }
}

/// One structured mutation of the snapshot (indices wrap around the table they name).
#[derive(Arbitrary, Debug)]
enum Mutation {
    DropName(u8),
    DuplicateName(u8),
    NameId(u8, Wild),
    DropClient(u8),
    DuplicateClient(u8),
    ClientId(u8, Wild),
    ClientIncarnation(u8, Wild),
    ClientJob {
        i: u8,
        pending: bool,
        attempts: Wild,
        steps: u8,
    },
    Vacant(Wild, Wild),
    DropSegment(u8),
    DuplicateSegment(u8),
    SegmentSize(u8, Wild),
    SegmentUsed(u8, Wild),
    SegmentOwner {
        i: u8,
        client: u8,
        incarnation: Option<Wild>,
    },
    SegmentRename(u8, u8),
    DropObject(u8),
    DuplicateObject(u8),
    ObjectSize(u8, Wild),
    ObjectTouched(u8, Wild),
    ObjectTenant(u8, u8),
    ObjectTask {
        i: u8,
        tier: bool,
        id: Option<Wild>,
    },
    DropReplica(u8, u8),
    DuplicateReplica(u8, u8),
    RetargetReplica {
        o: u8,
        r: u8,
        segment: u8,
    },
    ReplicaToDisk {
        o: u8,
        r: u8,
        client: u8,
        incarnation: Option<Wild>,
    },
    DropTask(u8),
    DuplicateTask(u8),
    TaskId(u8, Wild),
    TaskKey(u8, u8),
    TaskKindOf(u8, u8),
    TaskExecutor {
        i: u8,
        client: u8,
        incarnation: Option<Wild>,
    },
    TaskSegment {
        i: u8,
        target: bool,
        segment: Option<u8>,
    },
    NextTaskId(Wild),
    DropDisk(u8),
    DuplicateDisk(u8),
    DiskCapacity(u8, Wild),
    DiskUsed(u8, Wild),
    StaleDiskKeys(u8, u16),
    DiskOwner {
        i: u8,
        client: u8,
        incarnation: Option<Wild>,
    },
    Quota {
        tenant: u8,
        used: Wild,
        limit: Option<Wild>,
    },
    LruClock(Wild),
    Nof {
        name: u8,
        size: Wild,
        failures: Wild,
    },
    External(u8),
    Scratch {
        client: u8,
        incarnation: Option<Wild>,
        tenant: u8,
        bytes: Wild,
        segment: u8,
    },
    DropScratch(u8),
    Version(u32),
}

fn cname(i: usize) -> String {
    format!("c{i}")
}
fn sname(i: usize) -> String {
    format!("s{i}")
}
fn key(j: usize) -> String {
    format!("k{j}")
}
fn tenant(t: usize) -> String {
    format!("t{}", t % 3)
}

fn config() -> LivenessConfig {
    LivenessConfig {
        active_ttl_ms: 1_000,
        suspicion_ttl_ms: 1_000,
        monitor_tick_ms: TICK_MS,
        stall_bound_ms: 500,
        ..LivenessConfig::default()
    }
}

fn options(driver: OffboardingDriver) -> MasterOptions {
    MasterOptions {
        registry_shards: 2,
        metadata_shards: 2,
        offboarding: driver,
        ..MasterOptions::default()
    }
}

/// A small valid master shaped by `s`, and the base time it reached.
fn build(s: &Shape) -> (Master, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(0));
    let m = Master::new(
        clock.clone() as Arc<dyn Clock>,
        config(),
        options(OffboardingDriver::Inline),
    );
    let n = 2 + usize::from(s.clients % 3);
    for i in 0..n {
        let _ = m.mount(&cname(i), &sname(i), 1_024);
        if s.disks & (1 << i) != 0 {
            let _ = m.mount_local_disk(&cname(i), 2_048);
        }
    }
    if s.quota {
        m.set_quota_limit("t0", Some(4_096));
    }
    let objects = 1 + usize::from(s.objects % 8);
    for j in 0..objects {
        let size = 16 + 8 * j as u64;
        if m.put_for(&tenant(j), &key(j), size, 1 + j % 2).is_ok() && j % 5 != 4 {
            let _ = m.put_end(&key(j));
        }
    }
    for j in 0..objects {
        if s.copies & (1 << j) != 0 {
            let _ = m.replicate(&key(j), &sname((j + 1) % n), j % 3 == 0);
        }
    }
    for i in 0..n {
        if s.offloads & (1 << i) != 0 {
            if let Ok(tasks) = m.offload_heartbeat(&cname(i)) {
                // Finish every other one: LocalDisk replicas, and offloads still in flight.
                for t in tasks.iter().step_by(2) {
                    let _ = m.task_done(&cname(i), t.task, true);
                }
            }
        }
    }
    for j in 0..objects {
        let _ = m.promote(&key(j));
    }
    for k in 0..usize::from(s.nof % 3) {
        let name = format!("n{k}");
        let mut nof = m.nof();
        nof.mount(&name, 100);
        for _ in 0..k {
            nof.probe(&name, false);
        }
    }
    if s.fail % 2 == 1 {
        m.fail_step(crate::offboarding::Step::ALL[usize::from(s.fail / 2) % 5], 1_000);
    }
    // The clients in the `offline` mask stop pinging: Suspected at 1 s, Offline at 2 s, their
    // job run inline (and parked, if a step keeps failing).
    for t in 1..=25u64 {
        clock.set_ms(t * TICK_MS);
        for i in (0..n).filter(|i| s.offline & (1 << i) == 0) {
            m.ping(&cname(i));
        }
        m.tick();
    }
    (m, clock)
}

fn pick(i: u8, len: usize) -> Option<usize> {
    (len > 0).then(|| usize::from(i) % len)
}

/// A (client id, incarnation) of the snapshot, or a wild incarnation of it.
fn owner_of(snap: &Snapshot, client: u8, incarnation: Option<Wild>) -> (u128, u64) {
    let Some(c) = pick(client, snap.clients.len()).map(|i| &snap.clients[i]) else {
        return (u128::from(client), incarnation.map_or(1, Wild::u64));
    };
    (c.id, incarnation.map_or(c.incarnation, Wild::u64))
}

fn mutate(snap: &mut Snapshot, m: Mutation) {
    use Mutation::*;
    match m {
        DropName(i) => drop_at(&mut snap.names, i),
        DuplicateName(i) => dup_at(&mut snap.names, i),
        NameId(i, v) => at(&mut snap.names, i, |n| n.1 = v.u128()),
        DropClient(i) => drop_at(&mut snap.clients, i),
        DuplicateClient(i) => dup_at(&mut snap.clients, i),
        ClientId(i, v) => at(&mut snap.clients, i, |c| c.id = v.u128()),
        ClientIncarnation(i, v) => at(&mut snap.clients, i, |c| c.incarnation = v.u64()),
        ClientJob {
            i,
            pending,
            attempts,
            steps,
        } => at(&mut snap.clients, i, |c| {
            c.job = pending.then(|| crate::snapshot::JobSnap {
                steps_done: Step::ALL
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| steps & (1 << k) != 0)
                    .map(|(_, s)| *s)
                    .collect(),
                attempts: attempts.u32(),
                committed_at_ms: attempts.u64(),
            })
        }),
        Vacant(id, last) => snap.vacant.push((id.u128(), last.u64())),
        DropSegment(i) => drop_at(&mut snap.segments, i),
        DuplicateSegment(i) => dup_at(&mut snap.segments, i),
        SegmentSize(i, v) => at(&mut snap.segments, i, |s| s.size = v.u64()),
        SegmentUsed(i, v) => at(&mut snap.segments, i, |s| s.used = v.u64()),
        SegmentOwner { i, client, incarnation } => {
            let (id, inc) = owner_of(snap, client, incarnation);
            at(&mut snap.segments, i, |s| (s.owner, s.incarnation) = (id, inc))
        }
        SegmentRename(i, to) => at(&mut snap.segments, i, |s| s.name = sname(usize::from(to % 6))),
        DropObject(i) => drop_at(&mut snap.objects, i),
        DuplicateObject(i) => dup_at(&mut snap.objects, i),
        ObjectSize(i, v) => at(&mut snap.objects, i, |o| o.size = v.u64()),
        ObjectTouched(i, v) => at(&mut snap.objects, i, |o| o.touched = v.u64()),
        ObjectTenant(i, t) => at(&mut snap.objects, i, |o| o.tenant = tenant(usize::from(t))),
        ObjectTask { i, tier, id } => at(&mut snap.objects, i, |o| {
            let slot = if tier {
                &mut o.tier_task
            } else {
                &mut o.replication_task
            };
            *slot = id.map(Wild::u64);
        }),
        DropReplica(o, r) => at(&mut snap.objects, o, |o| drop_at(&mut o.replicas, r)),
        DuplicateReplica(o, r) => at(&mut snap.objects, o, |o| dup_at(&mut o.replicas, r)),
        RetargetReplica { o, r, segment } => {
            let name = pick(segment, snap.segments.len())
                .map_or_else(|| sname(usize::from(segment)), |i| snap.segments[i].name.clone());
            at(&mut snap.objects, o, |o| {
                at(&mut o.replicas, r, |r| {
                    let complete = matches!(
                        r,
                        ReplicaSnap::Memory { complete: true, .. } | ReplicaSnap::LocalDisk { complete: true, .. }
                    );
                    *r = ReplicaSnap::Memory {
                        segment: name,
                        complete,
                    };
                })
            })
        }
        ReplicaToDisk {
            o,
            r,
            client,
            incarnation,
        } => {
            let (owner, incarnation) = owner_of(snap, client, incarnation);
            at(&mut snap.objects, o, |o| {
                at(&mut o.replicas, r, |r| {
                    *r = ReplicaSnap::LocalDisk {
                        owner,
                        incarnation,
                        complete: true,
                    }
                })
            })
        }
        DropTask(i) => drop_at(&mut snap.tasks, i),
        DuplicateTask(i) => dup_at(&mut snap.tasks, i),
        TaskId(i, v) => at(&mut snap.tasks, i, |t| t.id = v.u64()),
        TaskKey(i, k) => at(&mut snap.tasks, i, |t| t.key = key(usize::from(k % 9))),
        TaskKindOf(i, k) => at(&mut snap.tasks, i, |t| {
            t.kind = [
                crate::master::TaskKind::Copy,
                crate::master::TaskKind::Move,
                crate::master::TaskKind::Offload,
                crate::master::TaskKind::Promote,
            ][usize::from(k % 4)]
        }),
        TaskExecutor { i, client, incarnation } => {
            let (id, inc) = owner_of(snap, client, incarnation);
            at(&mut snap.tasks, i, |t| (t.executor, t.incarnation) = (id, inc))
        }
        TaskSegment { i, target, segment } => at(&mut snap.tasks, i, |t| {
            let name = segment.map(|s| sname(usize::from(s % 6)));
            if target {
                t.target = name;
            } else {
                t.source = name;
            }
        }),
        NextTaskId(v) => snap.next_task_id = v.u64(),
        DropDisk(i) => drop_at(&mut snap.local_disks, i),
        DuplicateDisk(i) => dup_at(&mut snap.local_disks, i),
        DiskCapacity(i, v) => at(&mut snap.local_disks, i, |d| d.capacity = v.u64()),
        DiskUsed(i, v) => at(&mut snap.local_disks, i, |d| d.used = v.u64()),
        StaleDiskKeys(i, n) => at(&mut snap.local_disks, i, |d| {
            d.keys
                .extend((0..1_024 + usize::from(n % 1_024)).map(|j| format!("stale{j}")))
        }),
        DiskOwner { i, client, incarnation } => {
            let (id, inc) = owner_of(snap, client, incarnation);
            at(&mut snap.local_disks, i, |d| (d.client, d.incarnation) = (id, inc))
        }
        Quota { tenant: t, used, limit } => {
            snap.quotas
                .push((tenant(usize::from(t)), used.u64(), limit.map(Wild::u64)))
        }
        LruClock(v) => snap.lru_clock = v.u64(),
        Nof { name, size, failures } => snap.nof.push((format!("n{}", name % 4), size.u64(), failures.u32())),
        External(s) => snap.external.push(sname(usize::from(s % 8))),
        Scratch {
            client,
            incarnation,
            tenant: t,
            bytes,
            segment,
        } => {
            let (id, inc) = owner_of(snap, client, incarnation);
            snap.scratch.push(crate::snapshot::ScratchSnap {
                client: id,
                incarnation: inc,
                refunds: BTreeMap::from([(tenant(usize::from(t)), bytes.u64())]),
                segment_names: vec![sname(usize::from(segment % 8))],
            })
        }
        DropScratch(i) => drop_at(&mut snap.scratch, i),
        Version(v) => snap.version = v,
    }
}

fn at<T>(v: &mut [T], i: u8, f: impl FnOnce(&mut T)) {
    if let Some(i) = pick(i, v.len()) {
        f(&mut v[i]);
    }
}
fn drop_at<T>(v: &mut Vec<T>, i: u8) {
    if let Some(i) = pick(i, v.len()) {
        v.remove(i);
    }
}
fn dup_at<T: Clone>(v: &mut Vec<T>, i: u8) {
    if let Some(i) = pick(i, v.len()) {
        let x = v[i].clone();
        v.insert(i, x);
    }
}

/// The fuzz body (see the module doc).
pub fn snapshot_restore(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(shape) = Shape::arbitrary(&mut u) else { return };
    let (base, _) = build(&shape);
    let valid = base.snapshot();
    drop(base);
    let mut snap = valid.clone();
    let mut mutations = Vec::new();
    while !u.is_empty() && mutations.len() < MAX_MUTATIONS {
        let Ok(m) = Mutation::arbitrary(&mut u) else { break };
        mutations.push(format!("{m:?}"));
        mutate(&mut snap, m);
    }
    if std::env::var_os("SNAPSHOT_RESTORE_EXPLAIN").is_some() {
        eprintln!("shape {shape:?}\nmutations {mutations:?}\nsnapshot {}", snap.to_json());
    }
    let bytes = snap.encode();
    let decoded = Snapshot::decode(&bytes);
    if snap.version == crate::snapshot::FORMAT_VERSION {
        assert_eq!(decoded.as_ref(), Ok(&snap), "an encoded snapshot decodes to itself");
    }
    let driver = if shape.outbox {
        OffboardingDriver::Outbox
    } else {
        OffboardingDriver::Inline
    };
    let clock = Arc::new(ManualClock::new(100_000));
    let restored = Master::restore(clock.clone() as Arc<dyn Clock>, config(), options(driver), &snap);
    let m = match restored {
        Err(SnapshotError::Inconsistent(msg)) => {
            assert!(snap != valid, "a valid snapshot refused: {msg}");
            assert!(!msg.is_empty(), "a refusal must say what is wrong");
            return;
        }
        Err(SnapshotError::FutureVersion { found, .. }) => {
            assert_eq!(found, snap.version);
            assert_ne!(found, crate::snapshot::FORMAT_VERSION);
            return;
        }
        Err(e) => panic!("restore refused a decoded snapshot with {e:?}, not Inconsistent"),
        Ok(m) => m,
    };
    check_restored(&m, &snap);
    if snap == valid {
        check_round_trip(&m, &valid);
    }
    drain(m, &clock, shape.outbox);
}

/// The restored master's derived state balances (see the module doc).
fn check_restored(m: &Master, snap: &Snapshot) {
    let registry = m.liveness().registry();
    let current = |rec: &Arc<crate::liveness::ClientLivenessRecord>, what: &str| {
        let now = registry.get(rec.client());
        assert!(
            now.is_some_and(|r| Arc::ptr_eq(&r, rec)),
            "{what} owned by client {} incarnation {}, not the restored incarnation",
            rec.client(),
            rec.incarnation()
        );
        assert!(
            snap.clients
                .iter()
                .any(|c| c.id == rec.client().0 && c.incarnation == rec.incarnation().0),
            "{what} owned by an incarnation the snapshot does not list"
        );
    };
    let objects = m.objects();
    let tasks: Vec<crate::master::Task> = m.tasks().iter().cloned().collect();
    let segments = m.segments();
    for seg in segments.iter() {
        current(&seg.owner, &format!("segment {}", seg.name));
        let on: Vec<u64> = objects
            .values()
            .filter(|o| o.on_segment(seg.id))
            .map(|o| o.size)
            .collect();
        let sum = on.iter().fold(0u64, |a, b| a.saturating_add(*b));
        assert_eq!(
            seg.used(),
            sum,
            "segment {} usage is not the sum of its replicas",
            seg.name
        );
        assert_eq!(seg.key_count(), on.len(), "segment {} key index", seg.name);
        assert!(seg.used() <= seg.size, "segment {} over its size", seg.name);
    }
    let mut quota: BTreeMap<String, u64> = BTreeMap::new();
    for (k, o) in &objects {
        for r in &o.replicas {
            current(r.owner(), &format!("a replica of {k}"));
            if let Some(id) = r.segment() {
                let seg = segments.get(id).unwrap_or_else(|| panic!("{k} on a missing segment"));
                assert!(Arc::ptr_eq(seg, r.segment_ref().expect("memory replica")));
            }
            let q = quota.entry(o.tenant.clone()).or_default();
            *q = q.saturating_add(o.size);
        }
        for id in o.replication_task.iter().chain(o.tier_task.iter()) {
            let t = tasks.iter().find(|t| t.id == *id);
            assert!(
                t.is_some_and(|t| &t.key == k),
                "{k} names task {id}, which does not name it"
            );
        }
    }
    for t in &tasks {
        current(&t.executor, &format!("task {}", t.id));
        let o = objects
            .get(&t.key)
            .unwrap_or_else(|| panic!("task {} on a missing object", t.id));
        let named = match t.kind {
            TaskKind::Copy | TaskKind::Move => o.replication_task,
            TaskKind::Offload | TaskKind::Promote => o.tier_task,
        };
        assert_eq!(named, Some(t.id), "task {} not named by its object", t.id);
        for s in t.source.iter().chain(t.target.iter()) {
            assert!(
                segments.get(s.id).is_some_and(|x| Arc::ptr_eq(x, s)),
                "task {} names a missing segment",
                t.id
            );
        }
    }
    drop(segments);
    for (id, d) in m.local_disks().iter() {
        current(&d.owner, &format!("the LocalDisk of {id}"));
        let mut used = 0u64;
        let mut keys = std::collections::BTreeSet::new();
        for (k, o) in &objects {
            if o.replicas
                .iter()
                .any(|r| r.segment().is_none() && Arc::ptr_eq(r.owner(), &d.owner))
            {
                used = used.saturating_add(o.size);
                keys.insert(k.clone());
            }
        }
        for t in tasks
            .iter()
            .filter(|t| t.kind == TaskKind::Offload && Arc::ptr_eq(&t.executor, &d.owner))
        {
            used = used.saturating_add(objects[&t.key].size);
        }
        assert_eq!(
            d.used, used,
            "LocalDisk of {id}: usage is not its replicas and offloads"
        );
        assert_eq!(d.keys, keys, "LocalDisk of {id}: key index (stale keys kept?)");
        assert!(d.used <= d.capacity, "LocalDisk of {id} over its capacity");
    }
    for s in &snap.scratch {
        for (t, b) in &s.refunds {
            let q = quota.entry(t.clone()).or_default();
            *q = q.saturating_add(*b);
        }
    }
    let used: BTreeMap<String, u64> = m
        .quotas()
        .iter()
        .filter(|(_, q)| q.used > 0)
        .map(|(t, q)| (t.clone(), q.used))
        .collect();
    quota.retain(|_, v| *v > 0);
    assert_eq!(used, quota, "quota usage is not replicas plus refunds owed");
}

/// An unmutated snapshot restores to the same metadata.
fn check_round_trip(m: &Master, valid: &Snapshot) {
    let mut again = m.snapshot();
    let mut want = valid.clone();
    for s in [&mut again, &mut want] {
        for c in &mut s.clients {
            c.ready = false;
            if let Some(j) = &mut c.job {
                j.committed_at_ms = 0;
            }
        }
        s.clients.sort_by_key(|c| c.id);
    }
    assert_eq!(again, want, "restore changed an unmutated snapshot");
}

/// Nobody pings: everyone goes Offline and every job completes within [`MAX_TICKS`]; then
/// nothing is left.
fn drain(mut m: Master, clock: &ManualClock, outbox: bool) {
    let live = m.liveness_handle();
    let mut ticks = 0;
    while !live.registry().records().is_empty() {
        assert!(
            ticks < MAX_TICKS,
            "livelock: {} incarnations left after {MAX_TICKS} ticks: {:?}",
            live.registry().len(),
            live.registry()
                .records()
                .iter()
                .map(|r| (r.client(), r.state()))
                .collect::<Vec<_>>()
        );
        ticks += 1;
        clock.advance_ms(TICK_MS);
        m.tick();
        if outbox {
            for job in m.take_jobs() {
                if let Err(job) = complete_client_offboarding(&mut m, live.registry(), job) {
                    m.return_job(job);
                }
            }
        }
    }
    let left: Vec<_> = m
        .segments()
        .iter()
        .map(|s| (s.name.clone(), s.owner.client(), s.owner.incarnation(), s.owner.state()))
        .collect();
    assert!(left.is_empty(), "segments left after everyone was offboarded: {left:?}");
    assert!(m.objects().is_empty(), "objects left after everyone was offboarded");
    assert_eq!(m.tasks().iter().count(), 0, "tasks left after everyone was offboarded");
    assert!(
        m.local_disks().is_empty(),
        "LocalDisks left after everyone was offboarded"
    );
    assert_eq!(m.quota_used(), 0, "quota still charged after everyone was offboarded");
}
