//! The whole observable state of the master against the model after a step: registry rows
//! and the diagnostic query, segments, objects, quota, external metadata, pending jobs, stats
//! (invariants 13, 16, 17).

use super::super::model::{disk, Kind, State, Task, CLIENTS, CLIENT_NAMES};
use super::check::Checker;
use super::executor::Held;
use super::names::{client_index, key_index, nof_index, segment_index, state_of};
use super::run::{registry_rows, ClientRow, When};
use crate::master::{Lifecycle, Master, Segment, TaskKind};
use std::collections::BTreeSet;

/// One object as compared: key, size, and each replica's segment with its completion.
type ObjectRow = (usize, u64, Vec<(usize, bool)>);

/// The model's index of replica `r` of object `k`: its segment's, or its LocalDisk's
/// (`SEGMENTS + client`); checks the replica's owner is its segment's.
fn replica_index(m: &Master, k: &str, r: &crate::master::Replica, when: &When<'_>) -> usize {
    let Some(sid) = r.segment() else {
        return disk(client_index(&m.client_name(r.owner().client())));
    };
    let seg = m
        .segments()
        .get(sid)
        .cloned()
        .unwrap_or_else(|| panic!("invariant 10/16: object {k} references an unmounted segment {when}"));
    assert!(
        r.owner().is(&seg.owner),
        "object {k}: replica owner differs from its segment's owner {when}"
    );
    segment_index(&seg.name)
}

impl Checker {
    /// Every live incarnation in the model, as the diagnostic query must show it.
    fn client_rows(&self) -> Vec<ClientRow> {
        let md = &self.model;
        (0..CLIENTS)
            .filter_map(|c| {
                let r = md.clients[c].rec.as_ref()?;
                let segments = md.segments.values().filter(|s| s.owner == c).count();
                Some((
                    c,
                    r.incarnation,
                    r.state,
                    r.ready,
                    r.state == State::Offline,
                    segments,
                    md.tasks_of(c),
                    r.local_disk.is_some(),
                ))
            })
            .collect()
    }

    /// The diagnostic query against the model (it walks every registry shard, so the per-step
    /// comparison reads the registry directly and this runs after failovers and at the end).
    pub(super) fn compare_query(&self, m: &Master, when: &When<'_>) {
        let got: Vec<ClientRow> = m
            .query(None, None)
            .clients
            .iter()
            .map(|c| {
                (
                    client_index(&c.client),
                    c.incarnation,
                    state_of(c.state),
                    c.ready,
                    c.offboarding,
                    c.segments,
                    c.tasks,
                    c.local_disk,
                )
            })
            .collect();
        assert_eq!(
            got,
            self.client_rows(),
            "query {when}: (client, incarnation, state, ready, offboarding, segments, tasks, local_disk)"
        );
    }

    /// The whole observable state of the master against the model (and invariant 13).
    pub(super) fn compare_state(&mut self, m: &Master, held: &[Held], when: &When<'_>) {
        let md = &self.model;
        let want = self.client_rows();
        // The same rows straight from the registry (cheap: the query walks every registry shard).
        let got = registry_rows(m);
        assert_eq!(
            got, want,
            "registry {when}: (client, incarnation, state, ready, offboarding, segments, tasks, local_disk)"
        );
        for (c, inc, ..) in &got {
            assert!(
                *inc >= self.max_incarnation[*c],
                "invariant 13: {} went from incarnation {} back to {inc} {when}",
                CLIENT_NAMES[*c],
                self.max_incarnation[*c]
            );
            self.max_incarnation[*c] = *inc;
        }
        // Segments: owner incarnation, size, usage, lifecycle, keys.
        let got: Vec<(usize, usize, u64, u64, u64, BTreeSet<usize>)> = m
            .segments()
            .iter()
            .map(|s| {
                let draining = md.segments.get(&segment_index(&s.name)).is_some_and(|m| m.draining);
                let want = if draining { Lifecycle::Draining } else { Lifecycle::Ok };
                assert_eq!(s.lifecycle(), want, "segment {} lifecycle {when}", s.name);
                (
                    segment_index(&s.name),
                    client_index(&m.client_name(s.owner.client())),
                    s.owner.incarnation().0,
                    s.size,
                    s.used(),
                    s.alloc().keys.iter().map(|k| key_index(k)).collect(),
                )
            })
            .collect();
        let want: Vec<(usize, usize, u64, u64, u64, BTreeSet<usize>)> = md
            .segments
            .iter()
            .map(|(s, seg)| {
                (
                    *s,
                    seg.owner,
                    seg.incarnation,
                    seg.size,
                    md.used(*s),
                    md.keys_on(*s).into_iter().collect(),
                )
            })
            .collect();
        assert_eq!(
            got, want,
            "segments {when}: (segment, owner, incarnation, size, used, keys)"
        );
        // Objects: size, replicas in order with their completion.
        let mut got: Vec<ObjectRow> = m
            .objects()
            .iter()
            .map(|(k, o)| {
                let replicas = o.replicas.iter().map(|r| (replica_index(m, k, r, when), r.complete));
                (key_index(k), o.size, replicas.collect())
            })
            .collect();
        got.sort(); // the object table is a hash map
        let want: Vec<ObjectRow> = md
            .objects
            .iter()
            .map(|(k, o)| {
                let replicas = o.replicas.iter().map(|s| (*s, md.replica_complete(*k, o, *s)));
                (*k, o.size, replicas.collect())
            })
            .collect();
        assert_eq!(got, want, "objects {when}: (key, size, [(replica, complete)])");
        // LocalDisks: capacity, bytes used (replicas and offloads in flight), keys.
        let mut got: Vec<(usize, u64, u64, BTreeSet<usize>)> = m
            .local_disks()
            .iter()
            .map(|(id, d)| {
                let keys = d.keys.iter().map(|k| key_index(k)).collect();
                (client_index(&m.client_name(*id)), d.capacity, d.used, keys)
            })
            .collect();
        got.sort(); // by client id in the master
        let want: Vec<(usize, u64, u64, BTreeSet<usize>)> = (0..CLIENTS)
            .filter_map(|c| {
                let capacity = md.clients[c].rec.as_ref()?.local_disk?;
                let keys = md.objects.iter().filter(|(_, o)| o.replicas.contains(&disk(c)));
                Some((c, capacity, md.disk_used(c), keys.map(|(k, _)| *k).collect()))
            })
            .collect();
        assert_eq!(got, want, "LocalDisks {when}: (client, capacity, used, keys)");
        // NoF segments (invariant 20: nothing but probes and mounts changes them).
        let got: Vec<(usize, u64, u32)> = m
            .nof()
            .iter()
            .map(|(name, seg)| (nof_index(name), seg.size, seg.failures))
            .collect();
        let want: Vec<(usize, u64, u32)> = md.nof.iter().map(|(n, (size, f))| (*n, *size, *f)).collect();
        assert_eq!(
            got, want,
            "invariant 20: NoF segments {when}: (segment, size, failed probes)"
        );
        // Tasks: id, kind, key, executor, source, target, delivered.
        let got: Vec<Task> = m
            .tasks()
            .iter()
            .map(|t| {
                let seg = |s: &Option<crate::sync::Arc<Segment>>| s.as_ref().map(|s| segment_index(&s.name));
                Task {
                    key: key_index(&t.key),
                    kind: match t.kind {
                        TaskKind::Copy => Kind::Copy,
                        TaskKind::Move => Kind::Move,
                        TaskKind::Offload => Kind::Offload,
                        TaskKind::Promote => Kind::Promote,
                    },
                    executor: (
                        client_index(&m.client_name(t.executor.client())),
                        t.executor.incarnation().0,
                    ),
                    source: seg(&t.source),
                    target: seg(&t.target),
                    delivered: t.delivered,
                }
            })
            .collect();
        let ids: Vec<u64> = m.tasks().iter().map(|t| t.id).collect();
        assert_eq!(ids, md.tasks.keys().copied().collect::<Vec<_>>(), "task ids {when}");
        assert_eq!(
            got,
            md.tasks.values().cloned().collect::<Vec<_>>(),
            "tasks {when}: (key, kind, executor, source, target, delivered)"
        );
        // Quota and external metadata (invariant 16's convergence, at every step).
        assert_eq!(
            m.quotas().get(crate::master::DEFAULT_TENANT).and_then(|q| q.limit),
            md.quota_limit,
            "quota limit {when}"
        );
        assert_eq!(
            m.quota_used(),
            md.quota_used(),
            "invariant 16: quota used {when} is not the sum of remaining usage plus pending refunds"
        );
        let got: BTreeSet<usize> = m
            .external_metadata()
            .entries()
            .iter()
            .map(|n| segment_index(n))
            .collect();
        assert_eq!(got, md.external(), "external metadata entries {when}");
        // Pending jobs (invariant 17: attempts, steps done, next attempt on the backoff schedule).
        let mut got: Vec<(usize, u32, Vec<usize>, u64)> = m
            .pending_jobs()
            .into_iter()
            .map(|(id, j)| {
                (
                    client_index(&m.client_name(id)),
                    j.attempts,
                    j.steps_done.iter().map(|s| *s as usize).collect(),
                    j.next_attempt_ms,
                )
            })
            .collect();
        got.sort();
        let want = |in_executor: bool| -> Vec<(usize, u32, Vec<usize>, u64)> {
            (0..CLIENTS)
                .filter_map(|c| {
                    let j = md.clients[c].rec.as_ref()?.job.as_ref()?;
                    let done = (0..5).filter(|s| j.done[*s]).collect();
                    (j.in_executor == in_executor).then_some((c, j.attempts, done, j.due))
                })
                .collect()
        };
        assert_eq!(
            got,
            want(false),
            "jobs parked in the master {when}: (client, attempts, steps done, next attempt)"
        );
        // Async: the jobs waiting in the executor for their retry (invariant 18: nowhere else).
        let mut got: Vec<(usize, u32, Vec<usize>, u64)> = held
            .iter()
            .map(|(id, attempts, done, due)| (client_index(&m.client_name(*id)), *attempts, done.clone(), *due))
            .collect();
        got.sort();
        assert_eq!(
            got,
            want(true),
            "jobs in the executor {when}: (client, attempts, steps done, next attempt)"
        );
        // Stats derived from the states.
        let s = m.stats();
        let count = |st: State| {
            md.clients
                .iter()
                .filter(|c| c.rec.as_ref().is_some_and(|r| r.state == st))
                .count()
        };
        assert_eq!(
            (s.active, s.suspected, s.offline, s.jobs_pending),
            (
                count(State::Active),
                count(State::Suspected),
                count(State::Offline),
                count(State::Offline)
            ),
            "stats {when}: (active, suspected, offline, jobs pending)"
        );
    }
}
