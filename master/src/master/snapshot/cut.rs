//! Taking an HA snapshot of the master: the per-shard cut (see [the module doc](super) for why it
//! is never torn) and the encoding of each table into its `*Snap` form.
//!
//! Owns: [`Master::snapshot`] and the table → `*Snap` conversions. Reads every table of the
//! master; writes none. Locks: the membership `gate` exclusively for the whole cut, then one
//! metadata shard at a time (with the `tasks` leaf under it), then leaves one at a time, in the
//! master's lock order; it never holds two shards or two leaves. The registry, names and
//! scratch are lock-free or leaf reads taken *after* the shards (the order the module doc's
//! argument needs). May not touch: restore (`restore.rs`) or the liveness words (it only loads).

use super::super::object::{Object, ReplicaKind};
use super::super::offboard::Scratch;
use super::super::rooms::Task;
use super::super::{LocalDisk, Master, MasterCore};
use crate::liveness::{ClientId, Incarnation};
use crate::snapshot::*;

/// The first 16 bytes of `key`, zero-padded, as a big-endian number. When two keys' prefixes
/// differ they order as the keys do (byte-wise); when they are equal the keys must be compared.
fn key_prefix(key: &str) -> u128 {
    let mut buf = [0u8; 16];
    let n = key.len().min(16);
    buf[..n].copy_from_slice(&key.as_bytes()[..n]);
    u128::from_be_bytes(buf)
}

/// Holds every segment's and LocalDisk's releases while a snapshot copies the shards (the
/// gate is held, so no segment or disk comes or goes meanwhile); dropping it lets them go.
struct HoldFrees<'a>(&'a MasterCore);

impl<'a> HoldFrees<'a> {
    fn start(m: &'a MasterCore) -> Self {
        hold_all(m, true);
        Self(m)
    }
}

impl Drop for HoldFrees<'_> {
    fn drop(&mut self) {
        hold_all(self.0, false);
    }
}

/// Each segment's allocator, then the LocalDisk table, one leaf at a time.
fn hold_all(m: &MasterCore, hold: bool) {
    for s in m.data.segments().iter() {
        s.hold_frees(hold);
    }
    for d in m.membership.local_disks().values_mut() {
        d.hold_frees(hold);
    }
}

impl Master {
    /// Captures the master's metadata while requests run (see the module doc).
    pub fn snapshot(&self) -> Snapshot {
        self.core.snapshot()
    }
}

impl MasterCore {
    /// The work behind [`Master::snapshot`].
    pub(crate) fn snapshot(&self) -> Snapshot {
        let _gate = self.membership.gate_exclusive();
        // Before any shard is copied (see `Segment::hold_frees`); released on every exit.
        let _hold = HoldFrees::start(self);
        let segments = self.segment_snaps();
        let local_disks = self.membership.local_disks().values().map(local_disk_snap).collect();
        let external = self.membership.external().entries();
        let (objects, tasks) = self.shard_snaps();
        // The liveness sections as `persist` takes them (a job's final compare-and-erase takes no
        // gate: `persist::client_sections` drops the vacant slot of a client it also captured),
        // with the progress of the jobs parked in the master.
        let (clients, vacant) = self.client_sections();
        let names = self
            .membership
            .names()
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
        // One leaf per statement (in the struct literal below the guards would all be held).
        let next_task_id = self.work.tasks().last_id();
        let quotas = self
            .data
            .quotas()
            .table()
            .iter()
            .map(|(t, q)| (t.clone(), q.used, q.limit))
            .collect();
        let nof = self
            .data
            .nof()
            .iter()
            .map(|(n, s)| (n.clone(), s.size, s.failures))
            .collect();
        Snapshot {
            version: FORMAT_VERSION,
            names,
            clients,
            vacant,
            segments,
            objects,
            next_task_id,
            tasks,
            local_disks,
            quotas,
            lru_clock: self.data.shards().clock(),
            nof,
            external,
            scratch,
        }
    }

    fn segment_snaps(&self) -> Vec<SegmentSnap> {
        self.data
            .segments()
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
        for i in 0..self.data.shards().len() {
            let shard = self.data.shards().lock(i);
            entries.extend(
                shard
                    .objects
                    .iter()
                    .map(|(k, o)| (key_prefix(k), k.clone(), object_snap(k, o))),
            );
            let table = self.work.tasks();
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
