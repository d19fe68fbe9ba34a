//! `--design upstream-main`: upstream's liveness records and their locks, written from the code
//! of PR #2991 (the squash `c19e7c52f`, `refs/pull/2991/head` of kvcache-ai/Mooncake: main's
//! `client_mutex_` / `snapshot_mutex_` structure with the RFC's records), around the data paths
//! of any [`MasterPaths`] (the same concurrent master `ours` drives, so only locks differ).
//!
//! Every lock step below cites upstream's file and line **at `c19e7c52f`** (`ms.cpp` =
//! `mooncake-store/src/master_service.cpp`, `ms.h` = `mooncake-store/include/master_service.h`,
//! `offb.cpp` = `mooncake-store/src/client_offboarding.cpp`; the record's own mutex is in
//! [`Record`], citing `client_liveness.h`). `main@3b5a59413` marks main as stored.
//!
//! | path | upstream's locks, in order |
//! |---|---|
//! | Ping | `client_mutex_` shared for the whole call (ms.cpp:7247); `now` read after it; the record's mutex in `Observe` (ms.cpp:7251-7252); OK only if accepted and in `ok_client_` (:7261-7264) |
//! | MountSegment | `client_mutex_` exclusive (ms.cpp:886), record `try_emplace` (:887-892), `snapshot_mutex_` shared (:896), the record's mutex around the segment mount (`ObserveAndRun`, :897-910) |
//! | ReMountSegment | `client_mutex_` then `snapshot_mutex_` exclusive for the whole call (ms.cpp:999-1000); done if already in `ok_client_` (:1022-1027); record `try_emplace` (:1029-1033); the record's mutex around the segment remount (`RunUnlessOffline`, :1088-1092); then the walk over every metadata shard (:1123-1163), unconditional for a client not yet in `ok_client_`. main@3b5a59413 walks only when a segment has standby-accounted memory, i.e. after an HA promotion (ms.cpp:1108-1113 there), and so does the released 0.3.14 master by measurement (a joining client's ReMount: 20 µs at 284k keys): `--storm-walk none` runs that; `ok_client_` insert (:1266) |
//! | GetReplicaList | `ClientServingReadView`: `client_mutex_` shared for the whole call (ms.cpp:3666, ms.h:1517-1541); `snapshot_mutex_` shared (:3667); the shard read (:3674). No record mutex |
//! | PutStart | `GetRetainedClientIdsSnapshot`: `client_mutex_` shared for an O(clients) copy, released (ms.cpp:4412 → :1316-1325); `snapshot_mutex_` shared (:4413); the shard write (:4416) |
//! | PutEnd | `snapshot_mutex_` shared (ms.cpp:4540); the shard write (:4542). The serving guard of an offload push (:4637-4652) is taken only with `enable_offload`, off by default (`mooncake-store/src/master.cpp:188`) |
//! | Remove | `snapshot_mutex_` shared (ms.cpp:6518); the shard write (:6520) |
//! | monitor | `now` read before any lock (ms.cpp:11061); `client_mutex_` shared to copy the registry (:11065-11069); each Active record evaluated under its own mutex only (:11073-11084); **each** Suspected record: `client_mutex_` exclusive (:11099), identity re-check (:11100-11104), `snapshot_mutex_` shared (:11106-11107), `EvaluateAndRetire` with the tick's `now`, retiring under the record's mutex (`ok_client_` erase, segments prepared: :11108-11164), job scheduled (:11174); then a 1 s sleep (:11184-11185, `kClientMonitorSleepMs` ms.h:2434-2435) |
//! | offboarding worker | all queued jobs as one batch (offb.cpp:123-131); `client_mutex_` then `snapshot_mutex_` shared (:140-142); retained-id copy (:143-150); `client_mutex_` released (:151); `ClearInvalidHandles`: every shard under its write lock (:155 → ms.cpp:2516-2587, each shard's write lock at :2519); segment unmount commits (offb.cpp:157-203); `snapshot_mutex_` released (:204); per job `client_mutex_` exclusive for the compare-and-erase (:242-254) |
//! | snapshot | `snapshot_mutex_` exclusive only across `fork()` (`mooncake-store/src/master_snapshot_manager.cpp:146-159`); the child serialises, the parent waits for it outside the lock (:195-198) |
//! | eviction | not modelled: `BatchEvict` takes `snapshot_mutex_` shared and shard locks (ms.cpp:10328 and its per-shard `MetadataShardAccessorRW`s), never `client_mutex_` nor a record's mutex, and starts only above the high watermark (ms.cpp:9086-9100; the harness's segments never fill) |
//!
//! Modelling choices, each stated where it is made:
//! - The data work inside the locks is the inner master's (its shard locks included); the walk
//!   and `ClearInvalidHandles` are [`MasterPaths::walk`] (every shard, one lock at a time,
//!   every replica visited), and a retired client's keys go when its segments are unmounted.
//! - PutStart's `UpdateClientHostId` (ms.cpp:4376 → :1328-1346: `client_mutex_` shared, and
//!   exclusive when the host id changes) is left out: it locks only when the request carries a
//!   host id. Leaving it out is gentler than upstream, never harsher.
//! - A snapshot forks this process for real under `snapshot_mutex_` (the child exits at once),
//!   so the exclusive section lasts what upstream's does: one `fork()` of the whole process.
//!   The capture itself then runs in this process, beside the data plane and without the
//!   service locks (upstream's child serialises a copy-on-write image in another process; both
//!   cost the same two cores).
//! - Get does not hide the replicas of a Suspected owner (upstream's check is a lock-free load
//!   of the record's state, ms.cpp `IsReplicaServing`): it changes answers, not locks.
//! - The registry is iterated in the hash map's order, as upstream's `unordered_map` copy is.
//!
//! # Ground rules
//! - Lock order: `client_mutex` → `snapshot_mutex` → a record's mutex → the inner master's own
//!   locks. `run_jobs` releases `snapshot_mutex` before taking `client_mutex` exclusive (as
//!   upstream's worker does), and the monitor takes `client_mutex` exclusive afresh per record.
//! - `clients` (upstream's `client_liveness_records_` and `ok_client_`) is read only under
//!   `client_mutex` (either mode) and written only under `client_mutex` exclusive; its own
//!   `RwLock` is never contended (it only makes the sharing safe Rust).
//! - Both service locks are real glibc `pthread_rwlock_t`s ([`PthreadRwLock`]), so their
//!   reader/writer policy is glibc's.

use super::paths::{Change, Job, MasterPaths, Retired, TickOutcome};
use super::posix::{self, PthreadRwLock};
use super::record::{Observation, Record, State, Transition};
use crate::liveness::{ClientId, LivenessState, PingStatus};
use crate::master::{MasterError, ReplicaDesc, SegmentSpec};
use crate::sync::{Arc, AtomicU64, Ordering, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// `client_liveness_records_` and `ok_client_` (ms.h:2425-2429), guarded by `client_mutex`.
#[derive(Debug, Default)]
struct Clients {
    records: HashMap<String, Arc<Record>>,
    ok: HashSet<String>,
}

/// `inner` driven with upstream's records and locks (see the module doc).
#[derive(Debug)]
pub struct UpstreamMain<P> {
    inner: P,
    client_mutex: PthreadRwLock,
    snapshot_mutex: PthreadRwLock,
    clients: RwLock<Clients>,
    next_serial: AtomicU64,
    active_ttl: Duration,
    suspicion_ttl: Duration,
}

impl<P: MasterPaths> UpstreamMain<P> {
    /// Wraps `inner`, with upstream's monitor judging on `active_ttl` and `suspicion_ttl`.
    pub fn new(inner: P, active_ttl: Duration, suspicion_ttl: Duration) -> Self {
        Self {
            inner,
            client_mutex: PthreadRwLock::new(),
            snapshot_mutex: PthreadRwLock::new(),
            clients: RwLock::new(Clients::default()),
            next_serial: AtomicU64::new(1),
            active_ttl,
            suspicion_ttl,
        }
    }

    /// The registry (caller holds `client_mutex` in some mode).
    fn clients(&self) -> RwLockReadGuard<'_, Clients> {
        self.clients.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The registry for writing (caller holds `client_mutex` exclusive).
    fn clients_mut(&self) -> RwLockWriteGuard<'_, Clients> {
        self.clients.write().unwrap_or_else(|e| e.into_inner())
    }

    /// `try_emplace` of a fresh Active record (caller holds `client_mutex` exclusive).
    fn emplace(&self, client: &str) -> Arc<Record> {
        let mut c = self.clients_mut();
        c.records
            .entry(client.to_string())
            .or_insert_with(|| {
                // Relaxed: a serial only has to be unique.
                let serial = self.next_serial.fetch_add(1, Ordering::Relaxed);
                Arc::new(Record::new(serial, Instant::now()))
            })
            .clone()
    }

    fn change(&self, name: &str, from: LivenessState, to: LivenessState) -> Change {
        Change {
            client: self.inner.client_id(name).unwrap_or(ClientId(u128::MAX)),
            from,
            to,
        }
    }

    /// One Suspected record's exclusive section of the monitor (ms.cpp:11099-11181).
    fn retire_if_due(&self, now: Instant, name: &str, rec: &Arc<Record>, out: &mut TickOutcome) {
        // ms.cpp:11099
        let _client = self.client_mutex.lock();
        let current = self.clients().records.get(name).is_some_and(|r| Arc::ptr_eq(r, rec));
        if !current {
            return;
        }
        // ms.cpp:11106-11107
        let _snapshot = self.snapshot_mutex.lock_shared();
        let mut segments = Vec::new();
        // record mutex, ms.cpp:11108 → client_liveness.h:141
        let t = rec.evaluate_and_retire(now, self.active_ttl, self.suspicion_ttl, |g| {
            self.clients_mut().ok.remove(name);
            segments = g.segments.clone();
        });
        if t == Transition::BecameOffline {
            let change = self.change(name, LivenessState::Suspected, LivenessState::Offline);
            out.jobs.push(Job::Retired(Retired {
                client: change.client,
                name: name.to_string(),
                serial: rec.serial,
                segments,
            }));
            out.changes.push(change);
        }
    }
}

impl<P: MasterPaths> MasterPaths for UpstreamMain<P> {
    fn ping(&self, client: &str) -> PingStatus {
        // ms.cpp:7247
        let _client = self.client_mutex.lock_shared();
        let (rec, ready) = {
            let c = self.clients();
            (c.records.get(client).cloned(), c.ok.contains(client))
        };
        // `now` is read after the client lock (ms.cpp:7251-7252).
        // record mutex, ms.cpp:7251-7252 → client_liveness.h:89
        let accepted = rec.is_some_and(|r| r.observe(Instant::now()) != Observation::RejectedOffline);
        if accepted && ready {
            PingStatus::Ok
        } else {
            PingStatus::NeedRemount
        }
    }

    fn mount(&self, client: &str, segment: &str, size: u64) -> Result<(), MasterError> {
        // ms.cpp:886
        let _client = self.client_mutex.lock();
        let rec = self.emplace(client);
        // ms.cpp:896
        let _snapshot = self.snapshot_mutex.lock_shared();
        let mut result = Ok(());
        // record mutex, ms.cpp:897-910 → client_liveness.h:89
        let seen = rec.observe_and_run(Instant::now(), |g| {
            result = self.inner.mount(client, segment, size);
            if result.is_ok() && !g.segments.iter().any(|s| s == segment) {
                g.segments.push(segment.to_string());
            }
            result.is_ok()
        });
        if seen == Observation::RejectedOffline {
            return Err(MasterError::ClientOffboarding);
        }
        result
    }

    fn remount_segments(&self, client: &str, specs: &[SegmentSpec]) -> Result<(), MasterError> {
        // Not a path of upstream's own: the harness drives `remount`.
        self.inner.remount_segments(client, specs)
    }

    fn walk(&self, client: &str, specs: &[SegmentSpec]) -> usize {
        self.inner.walk(client, specs)
    }

    fn remount(&self, client: &str, specs: &[SegmentSpec], walk: bool) -> Result<(), MasterError> {
        // ms.cpp:999
        let _client = self.client_mutex.lock();
        // ms.cpp:1000
        let _snapshot = self.snapshot_mutex.lock();
        if self.clients().ok.contains(client) {
            return Ok(());
        }
        let rec = self.emplace(client);
        let mut result = Ok(());
        // record mutex, ms.cpp:1088-1092 → client_liveness.h:122
        let accepted = rec.run_unless_offline(|g| {
            result = self.inner.remount_segments(client, specs);
            if result.is_ok() {
                for s in specs {
                    if !g.segments.contains(&s.segment) {
                        g.segments.push(s.segment.clone());
                    }
                }
            }
        });
        if !accepted {
            return Err(MasterError::ClientOffboarding);
        }
        result?;
        if walk {
            // Every metadata shard under its own lock (the inner master's), ms.cpp:1123-1163.
            std::hint::black_box(self.inner.walk(client, specs));
        }
        self.clients_mut().ok.insert(client.to_string());
        Ok(())
    }

    fn unmount(&self, client: &str, segment: &str) -> Result<(), MasterError> {
        // Not driven by the harness; offboarding's unmounts run under its own locks.
        self.inner.unmount(client, segment)
    }

    fn put(&self, key: &str, size: u64) -> Result<Vec<ReplicaDesc>, MasterError> {
        let retained: Vec<String> = {
            // GetRetainedClientIdsSnapshot, ms.cpp:4412 → :1317
            let _client = self.client_mutex.lock_shared();
            let c = self.clients();
            c.records
                .iter()
                .filter(|(_, r)| r.state() != State::Offline)
                .map(|(n, _)| n.clone())
                .collect()
        };
        // ms.cpp:4413
        let _snapshot = self.snapshot_mutex.lock_shared();
        std::hint::black_box(&retained);
        self.inner.put(key, size)
    }

    fn put_end(&self, key: &str) -> Result<(), MasterError> {
        // ms.cpp:4540
        let _snapshot = self.snapshot_mutex.lock_shared();
        self.inner.put_end(key)
    }

    fn get(&self, key: &str) -> Result<Vec<ReplicaDesc>, MasterError> {
        // ClientServingReadView, ms.cpp:3666 → ms.h:1520
        let _view = self.client_mutex.lock_shared();
        // ms.cpp:3667
        let _snapshot = self.snapshot_mutex.lock_shared();
        self.inner.get(key)
    }

    fn remove(&self, key: &str) -> Result<(), MasterError> {
        // ms.cpp:6518
        let _snapshot = self.snapshot_mutex.lock_shared();
        self.inner.remove(key)
    }

    fn contains(&self, key: &str) -> bool {
        self.inner.contains(key)
    }

    fn client_id(&self, name: &str) -> Option<ClientId> {
        self.inner.client_id(name)
    }

    fn tick(&self) -> TickOutcome {
        let now = Instant::now();
        let records: Vec<(String, Arc<Record>)> = {
            // ms.cpp:11065
            let _client = self.client_mutex.lock_shared();
            let c = self.clients();
            c.records.iter().map(|(n, r)| (n.clone(), r.clone())).collect()
        };
        let mut out = TickOutcome::default();
        for (name, rec) in &records {
            match rec.state() {
                State::Active => {
                    // record mutex, ms.cpp:11074-11076 → client_liveness.h:141
                    let t = rec.evaluate_and_retire(now, self.active_ttl, self.suspicion_ttl, |_| {});
                    if t == Transition::BecameSuspected {
                        out.changes
                            .push(self.change(name, LivenessState::Active, LivenessState::Suspected));
                    }
                }
                State::Suspected => self.retire_if_due(now, name, rec, &mut out),
                State::Offline => {}
            }
        }
        out
    }

    fn run_jobs(&self, jobs: Vec<Job>) -> Vec<Job> {
        let retired: Vec<Retired> = jobs
            .into_iter()
            .filter_map(|j| match j {
                Job::Retired(r) => Some(r),
                Job::Ours(_) => None,
            })
            .collect();
        let Some(first) = retired.first() else {
            return Vec::new();
        };
        {
            // offb.cpp:140
            let client = self.client_mutex.lock_shared();
            // offb.cpp:141-142
            let snapshot = self.snapshot_mutex.lock_shared();
            let retained: Vec<String> = {
                let c = self.clients();
                c.records
                    .iter()
                    .filter(|(_, r)| r.state() != State::Offline)
                    .map(|(n, _)| n.clone())
                    .collect()
            };
            drop(client);
            // ClearInvalidHandles(retained), offb.cpp:155: every shard under its own write lock
            // (the inner master's), every replica, ms.cpp:2516-2587.
            std::hint::black_box((&retained, self.inner.walk(&first.name, &[])));
            for r in &retired {
                for segment in &r.segments {
                    // CommitUnmountSegment, offb.cpp:157-203 (under the inner master's segment
                    // lock); a segment already gone is nothing to commit.
                    let _ = self.inner.unmount(&r.name, segment);
                }
            }
            drop(snapshot);
        }
        for r in &retired {
            // offb.cpp:243-244
            let _client = self.client_mutex.lock();
            let mut c = self.clients_mut();
            if c.records.get(&r.name).is_some_and(|rec| rec.serial == r.serial) {
                c.records.remove(&r.name);
            }
        }
        Vec::new()
    }

    fn snapshot(&self) -> usize {
        let child = {
            // master_snapshot_manager.cpp:146, held across the fork() of :159
            let _snapshot = self.snapshot_mutex.lock();
            posix::fork_and_reap()
        };
        // WaitForSnapshotChild, outside the lock (:195-198).
        if let Ok(pid) = child {
            let _ = posix::reap(pid);
        }
        // The child's serialisation (see the module doc).
        self.inner.snapshot()
    }
}

#[cfg(test)]
#[path = "upstream_tests.rs"]
mod tests;
