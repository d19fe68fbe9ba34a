//! The structured mutations the `snapshot_restore` body applies to a valid snapshot: drop,
//! duplicate or retarget an entry of any table, or set a field to a wild value.
//!
//! Owns: [`Mutation`], [`Wild`] and [`mutate`]. Pure functions over a [`Snapshot`] value: no
//! master, no clock, no lock. May not touch: the oracle (`check.rs`).

use super::{key, sname, tenant};
use crate::offboarding::Step;
use crate::snapshot::{ReplicaSnap, Snapshot};
use arbitrary::Arbitrary;
use std::collections::BTreeMap;

/// A wild number.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub(super) enum Wild {
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
pub(super) enum Mutation {
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

pub(super) fn mutate(snap: &mut Snapshot, m: Mutation) {
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
