//! The liveness part of a snapshot: client incarnations, vacant ids and pending offboarding
//! jobs, taken from and restored into a [`Liveness`] alone (no reference master). The master's
//! snapshot uses the same two functions for its `clients` and `vacant` sections
//! ([`client_sections`] with the jobs parked in the master; [`restore_clients`]); an embedder
//! that keeps its own metadata (a C++ master through the C ABI) snapshots only these.
//!
//! What is kept and what is not follows invariant 19: liveness words and timers are
//! process-local, so a restored incarnation is Active with a fresh active TTL and not ready; an
//! Offline incarnation with a pending job is committed Offline again at restore, which re-mints
//! its one job (the only way to mint one) with the recorded progress, so the remount barrier
//! survives failover.
//!
//! Owns: the `clients` and `vacant` sections and their restore into a [`Liveness`]. May not touch
//! the master's metadata (segments, objects, tasks, scratch), which `master::snapshot` adds around
//! these, nor decide the format (`snapshot.rs`).
#![forbid(unsafe_code)]

use crate::liveness::{ClientId, ClientLivenessRecord, Incarnation, Liveness};
use crate::offboarding::ClientOffboardingJob;
use crate::snapshot::{ClientSnap, JobSnap, Snapshot, SnapshotError, FORMAT_VERSION};
use crate::sync::Arc;
use std::collections::BTreeMap;

/// The `clients` and `vacant` sections of a snapshot of `liveness`.
///
/// An Offline record is listed with a job: the progress of the matching job in `jobs` if there
/// is one (e.g. the jobs an executor handed back at shutdown, or those parked in the master),
/// else "not started", committed now — a lower bound, harmless because steps are idempotent.
pub fn client_sections<'a>(
    liveness: &Liveness,
    jobs: impl IntoIterator<Item = &'a ClientOffboardingJob>,
) -> (Vec<ClientSnap>, Vec<(u128, u64)>) {
    let progress: BTreeMap<(ClientId, Incarnation), &ClientOffboardingJob> =
        jobs.into_iter().map(|j| ((j.client(), j.incarnation()), j)).collect();
    let clients: Vec<ClientSnap> = liveness
        .registry()
        .records()
        .iter()
        .map(|rec| ClientSnap {
            id: rec.client().0,
            incarnation: rec.incarnation().0,
            ready: rec.is_ready(),
            job: (!rec.should_retain()).then(|| match progress.get(&(rec.client(), rec.incarnation())) {
                Some(j) => JobSnap {
                    steps_done: j.steps_done(),
                    attempts: j.attempts(),
                    committed_at_ms: j.committed_at_ms(),
                },
                None => JobSnap {
                    steps_done: Vec::new(),
                    attempts: 0,
                    committed_at_ms: liveness.clock().base().now_ms(),
                },
            }),
        })
        .collect();
    // The records and the vacant slots are two reads of the registry, and a job's final
    // compare-and-erase can vacate a client between them. Such a client was captured above
    // Offline with its job (which the restoring side runs again), so its later vacant slot is
    // dropped; keeping both made the snapshot unrestorable ("client listed twice"; found for the
    // master by loom_tests/master_snapshot_vs_offboarding.rs).
    let vacant = liveness
        .registry()
        .vacant()
        .into_iter()
        .filter(|(c, _)| !clients.iter().any(|k| k.id == c.0))
        .map(|(c, n)| (c.0, n.0))
        .collect();
    (clients, vacant)
}

/// A snapshot holding only the liveness sections (every master section empty).
pub fn liveness_snapshot(liveness: &Liveness, jobs: &[ClientOffboardingJob]) -> Snapshot {
    let (clients, vacant) = client_sections(liveness, jobs);
    Snapshot {
        version: FORMAT_VERSION,
        clients,
        vacant,
        ..Snapshot::default()
    }
}

/// What [`restore_clients`] rebuilt.
#[derive(Debug, Default)]
pub struct RestoredClients {
    /// Every restored incarnation, in snapshot order.
    pub records: Vec<Arc<ClientLivenessRecord>>,
    /// The re-minted job of every incarnation that was Offline with offboarding pending.
    pub jobs: Vec<ClientOffboardingJob>,
}

/// Rebuilds the `clients` and `vacant` sections into `liveness`, which should be fresh (a client
/// id it already knows is refused as "listed twice"). On `Err` the liveness may hold part of the
/// snapshot: restore into a new one and drop it on failure.
pub fn restore_clients(
    liveness: &Liveness,
    clients: &[ClientSnap],
    vacant: &[(u128, u64)],
) -> Result<RestoredClients, SnapshotError> {
    let twice = |id: u128| SnapshotError::Inconsistent(format!("client {id} listed twice"));
    // An incarnation with no successor: the client's next mount would reuse its number, and a
    // token of the old incarnation would match the new one (issue 29). A real master never
    // gets there (2^64 − 1 mounts of one client); only a crafted or corrupt snapshot does.
    let last_one = |id: u128, n: u64| {
        SnapshotError::Inconsistent(format!(
            "client {id}: incarnation {n} is the last one and can have no successor"
        ))
    };
    if let Some((id, n)) = vacant
        .iter()
        .copied()
        .chain(clients.iter().map(|c| (c.id, c.incarnation)))
        .find(|(_, n)| *n == Incarnation::LAST.0)
    {
        return Err(last_one(id, n));
    }
    for (id, last) in vacant {
        if !liveness.registry().restore_vacant(ClientId(*id), Incarnation(*last)) {
            return Err(twice(*id));
        }
    }
    let mut out = RestoredClients::default();
    // Restored jobs are stamped with the restoring process's clock, so job-age metrics stay on
    // one clock after failover.
    let now = liveness.clock().base_now();
    for c in clients {
        let (rec, proof) = liveness
            .restore_incarnation(ClientId(c.id), Incarnation(c.incarnation), c.job.is_some())
            .ok_or_else(|| twice(c.id))?;
        if let (Some(j), Some(proof)) = (&c.job, proof) {
            let mut job = ClientOffboardingJob::from_commit(rec.clone(), proof, now);
            job.restore_progress(&j.steps_done, j.attempts);
            out.jobs.push(job);
        }
        out.records.push(rec);
    }
    Ok(out)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::config::LivenessConfig;
    use crate::monitor::Monitor;
    use crate::offboarding::Step;
    use crate::sync::CellArc;

    fn liveness() -> (CellArc<ManualClock>, Liveness) {
        let clock = CellArc::new(ManualClock::new(0));
        let config = LivenessConfig {
            active_ttl_ms: 1_000,
            suspicion_ttl_ms: 2_000,
            monitor_tick_ms: 100,
            ..LivenessConfig::default()
        };
        let dyn_clock: CellArc<dyn crate::clock::Clock> = clock.clone();
        (clock, Liveness::new(dyn_clock, config))
    }

    #[test]
    fn round_trip_keeps_incarnations_vacancies_and_job_progress() {
        let (clock, live) = liveness();
        let mut monitor = Monitor::new(&live);
        for id in [1u128, 2, 3] {
            assert!(matches!(
                live.mount(ClientId(id), None, |_| Ok::<_, ()>(())),
                crate::MountOutcome::Mounted { .. }
            ));
        }
        // Client 3 goes away and is offboarded completely: its id becomes vacant.
        // Client 2 goes Offline and keeps a pending job with one step done.
        let mut jobs = Vec::new();
        for _ in 0..40 {
            clock.advance_ms(100);
            live.ping(ClientId(1), None);
            jobs.extend(monitor.tick(&live).jobs);
        }
        assert_eq!(jobs.len(), 2);
        let (mut two, three): (Vec<_>, Vec<_>) = jobs.into_iter().partition(|j| j.client() == ClientId(2));
        for j in three {
            crate::offboarding::complete_client_offboarding(&mut crate::offboarding::NoResources, live.registry(), j)
                .unwrap();
        }
        two[0].restore_progress(&[Step::Metadata], 1);

        let snap = liveness_snapshot(&live, &two);
        let decoded = Snapshot::decode(&snap.encode()).unwrap();
        let (_, fresh) = liveness();
        let restored = restore_clients(&fresh, &decoded.clients, &decoded.vacant).unwrap();
        assert_eq!(restored.records.len(), 2);
        assert_eq!(restored.jobs.len(), 1);
        let job = &restored.jobs[0];
        assert_eq!((job.client(), job.incarnation()), (ClientId(2), Incarnation(1)));
        assert_eq!((job.steps_done(), job.attempts()), (vec![Step::Metadata], 1));
        assert!(
            !fresh.registry().get(ClientId(2)).unwrap().should_retain(),
            "barrier survives"
        );
        assert!(fresh.registry().get(ClientId(1)).unwrap().is_serving());
        assert_eq!(fresh.registry().vacant(), vec![(ClientId(3), Incarnation(1))]);
        assert!(
            restore_clients(&fresh, &decoded.clients, &[]).is_err(),
            "a known id is refused"
        );
    }
}
