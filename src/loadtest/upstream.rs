//! `--design upstream-main`: the same master driven with the lock structure of Mooncake's
//! `master_service.cpp` with the RFC #2953 liveness records (the structure upstream's RFC
//! #4181 measured), reproduced around any [`MasterPaths`].
//!
//! Sources (the project's reference notes on upstream's code):
//! `mooncake-master-paths.md` §1.9 (lock order `client_mutex_` → `snapshot_mutex_` → shard),
//! §3.1 (Ping), §3.2 (MountSegment), §3.3 (ReMountSegment: client + snapshot exclusive for the
//! whole call, the all-shard walk inside), §4.1 (PutStart); `upstream-rfc-implementation.md`
//! §1 (the record's transition mutex; serving guards own it), §3 (Ping under `client_mutex_`
//! shared, records its heartbeat through the record mutex; Mount/ReMount take `client_mutex_`
//! exclusive and `try_emplace` the record), §4 (the registry is guarded by `client_mutex_`;
//! `GetRetainedClientIdsSnapshot` copies the id set on every PutStart (and BatchRemove);
//! `ClientServingReadView` holds `client_mutex_` shared for a whole read), §6 (a serving guard
//! held across PutEnd's offload enqueue), §7 (monitor: `client_mutex_` shared to copy the
//! registry, exclusive for every Suspected record every tick), §8 (offboarding worker: the
//! full scan under `snapshot_mutex_` shared, compare-and-erase under `client_mutex_`
//! exclusive), §14 (#4181: the transition mutex is held for the lifetime of every serving
//! guard and through the remounting client's whole remount).
//!
//! Modelling choices, each stated where it is made:
//! - Get and PutEnd hold the owner's record mutex while they run (the serving guard of
//!   #4181); Ping takes the same mutex to record the heartbeat.
//! - A snapshot holds `snapshot_mutex_` exclusive for the whole capture. Upstream holds it only
//!   to `fork()` and serialises in the child; an in-process capture cannot fork, so this is an
//!   upper bound of upstream's pause for *data-plane* paths. Ping takes no snapshot lock in
//!   upstream nor here, so Ping figures are unaffected by this choice.
//! - No stall brake and no mass-suspicion brake (upstream has neither): the harness builds
//!   this design's master with both off.
//! - The monitor reads the clock after taking `client_mutex_` shared (the master's own tick);
//!   upstream samples `now` before waiting for it (§7). Here a monitor that waited out a
//!   ReMount therefore judges with a clock up to one hold later than upstream's would: it can
//!   suspect (and retire) up to one hold earlier. This makes `upstream-main` harsher than main,
//!   not gentler; false Offline counts in particular should be read with it in mind.
//!
//! # `std::shared_mutex` fairness
//! See [`SharedMutex`]: glibc's default `pthread_rwlock_t` — reader-preferring, with the last
//! reader handing the lock to a waiting writer.
//!
//! # Ground rules
//! - Lock order: `client_mutex` → `snapshot_mutex` → a record mutex → the inner master's own
//!   locks. `run_job` releases `snapshot_mutex` before taking `client_mutex` exclusive (as
//!   upstream's worker does), so the order is never inverted.
//! - `records` (the registry: client name → record mutex) is read under `client_mutex` shared
//!   and written only under `client_mutex` exclusive; its own `RwLock` is never contended
//!   for long (it only makes the sharing safe Rust).
//! - `suspected` (names currently Suspected, for the monitor's per-record exclusive section)
//!   is a leaf mutex.

use super::paths::{MasterPaths, TickOutcome};
use super::shared_mutex::SharedMutex;
use crate::liveness::{ClientId, LivenessState, PingOutcome, PingStatus};
use crate::master::{MasterError, ReplicaDesc, SegmentSpec};
use crate::offboarding::ClientOffboardingJob;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

type Record = Arc<Mutex<()>>;

fn hold(rec: &Record) -> MutexGuard<'_, ()> {
    rec.lock().unwrap_or_else(|e| e.into_inner())
}

/// `inner` driven with main's locks (see the module doc).
#[derive(Debug)]
pub struct UpstreamMain<P> {
    inner: P,
    client_mutex: SharedMutex,
    snapshot_mutex: SharedMutex,
    records: RwLock<HashMap<String, Record>>,
    suspected: Mutex<HashSet<ClientId>>,
}

impl<P: MasterPaths> UpstreamMain<P> {
    /// Wraps `inner`.
    pub fn new(inner: P) -> Self {
        Self {
            inner,
            client_mutex: SharedMutex::default(),
            snapshot_mutex: SharedMutex::default(),
            records: RwLock::new(HashMap::new()),
            suspected: Mutex::new(HashSet::new()),
        }
    }

    /// `FindClientRecord` (caller holds `client_mutex` in some mode).
    fn find(&self, client: &str) -> Option<Record> {
        self.records
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(client)
            .cloned()
    }

    /// `try_emplace` of a record (caller holds `client_mutex` exclusive).
    fn emplace(&self, client: &str) -> Record {
        let mut map = self.records.write().unwrap_or_else(|e| e.into_inner());
        map.entry(client.to_string()).or_default().clone()
    }

    /// `GetRetainedClientIdsSnapshot`: the O(clients) copy PutStart makes (caller holds
    /// `client_mutex` shared).
    fn retained_ids_locked(&self) -> Vec<String> {
        let map = self.records.read().unwrap_or_else(|e| e.into_inner());
        map.keys().cloned().collect()
    }

    fn note_transitions(&self, out: &TickOutcome) {
        let mut s = self.suspected.lock().unwrap_or_else(|e| e.into_inner());
        for t in &out.transitions {
            match t.to {
                LivenessState::Suspected => s.insert(t.client),
                _ => s.remove(&t.client),
            };
        }
    }
}

impl<P: MasterPaths> MasterPaths for UpstreamMain<P> {
    fn ping(&self, client: &str) -> PingOutcome {
        let _client = self.client_mutex.lock_shared();
        let Some(rec) = self.find(client) else {
            return PingOutcome {
                status: PingStatus::NeedRemount,
                recovered: None,
            };
        };
        let _observe = hold(&rec);
        let out = self.inner.ping(client);
        if let Some(t) = out.recovered {
            self.suspected
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&t.client);
        }
        out
    }

    fn mount(&self, client: &str, segment: &str, size: u64) -> Result<(), MasterError> {
        let _client = self.client_mutex.lock();
        let rec = self.emplace(client);
        let _snapshot = self.snapshot_mutex.lock_shared();
        let _observe = hold(&rec);
        self.inner.mount(client, segment, size)
    }

    fn remount(&self, client: &str, specs: &[SegmentSpec]) -> Result<(), MasterError> {
        let _client = self.client_mutex.lock();
        let _snapshot = self.snapshot_mutex.lock();
        let rec = self.emplace(client);
        let _guard = hold(&rec);
        self.inner.remount(client, specs)
    }

    fn put(&self, key: &str, size: u64) -> Result<Vec<ReplicaDesc>, MasterError> {
        // PutStart: client shared + snapshot shared, copy the retained set, release the client
        // lock, keep the snapshot lock for the allocation.
        let _client = self.client_mutex.lock_shared();
        let _snapshot = self.snapshot_mutex.lock_shared();
        std::hint::black_box(self.retained_ids_locked());
        drop(_client);
        self.inner.put(key, size)
    }

    fn put_end(&self, key: &str) -> Result<(), MasterError> {
        let rec = {
            let _client = self.client_mutex.lock_shared();
            self.inner.owner_of(key).and_then(|o| self.find(&o))
        };
        let _snapshot = self.snapshot_mutex.lock_shared();
        let _guard = rec.as_ref().map(hold);
        self.inner.put_end(key)
    }

    fn get(&self, key: &str) -> Result<Vec<ReplicaDesc>, MasterError> {
        let _view = self.client_mutex.lock_shared();
        let _snapshot = self.snapshot_mutex.lock_shared();
        let rec = self.inner.owner_of(key).and_then(|o| self.find(&o));
        let _guard = rec.as_ref().map(hold);
        self.inner.get(key)
    }

    fn remove(&self, key: &str) -> Result<(), MasterError> {
        // The notes name the retained-set copy for BatchRemove, not Remove: only the snapshot
        // barrier every mutating RPC holds shared (§1.9).
        let _snapshot = self.snapshot_mutex.lock_shared();
        self.inner.remove(key)
    }

    fn owner_of(&self, key: &str) -> Option<String> {
        self.inner.owner_of(key)
    }

    fn contains(&self, key: &str) -> bool {
        self.inner.contains(key)
    }

    fn client_id(&self, name: &str) -> Option<ClientId> {
        self.inner.client_id(name)
    }

    fn tick(&self) -> TickOutcome {
        let any_suspected = !self.suspected.lock().unwrap_or_else(|e| e.into_inner()).is_empty();
        let out = if any_suspected {
            // Retirement: client exclusive + snapshot shared for the Suspected records.
            let _client = self.client_mutex.lock();
            let _snapshot = self.snapshot_mutex.lock_shared();
            self.inner.tick()
        } else {
            // The registry copy under client shared; evaluation of Active records needs no
            // service lock.
            drop(self.client_mutex.lock_shared());
            self.inner.tick()
        };
        self.note_transitions(&out);
        out
    }

    fn run_job(&self, job: ClientOffboardingJob) -> Result<(), ClientOffboardingJob> {
        let name = {
            let _client = self.client_mutex.lock_shared();
            let _snapshot = self.snapshot_mutex.lock_shared();
            std::hint::black_box(self.records.read().unwrap_or_else(|e| e.into_inner()).len());
            job.client()
        };
        let result = {
            let _snapshot = self.snapshot_mutex.lock_shared();
            self.inner.run_job(job)
        };
        if result.is_ok() {
            // Compare-and-erase of the registry entry.
            let _client = self.client_mutex.lock();
            let mut map = self.records.write().unwrap_or_else(|e| e.into_inner());
            map.retain(|n, _| self.inner.client_id(n) != Some(name));
        }
        result
    }

    fn snapshot(&self) -> usize {
        let _snapshot = self.snapshot_mutex.lock();
        self.inner.snapshot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A master whose ReMount and Get take `slow` (the all-shard walk, a long serving guard).
    #[derive(Debug, Default)]
    struct Slow {
        slow: Duration,
        entered: crate::sync::AtomicBool,
        left: crate::sync::AtomicBool,
    }

    impl Slow {
        fn work(&self) {
            use crate::sync::Ordering::{Relaxed, Release};
            self.left.store(false, Relaxed);
            self.entered.store(true, Release);
            std::thread::sleep(self.slow);
            self.left.store(true, Release);
            self.entered.store(false, Relaxed);
        }
    }

    impl MasterPaths for Slow {
        fn ping(&self, _: &str) -> PingOutcome {
            PingOutcome {
                status: PingStatus::Ok,
                recovered: None,
            }
        }
        fn mount(&self, _: &str, _: &str, _: u64) -> Result<(), MasterError> {
            Ok(())
        }
        fn remount(&self, _: &str, _: &[SegmentSpec]) -> Result<(), MasterError> {
            self.work();
            Ok(())
        }
        fn put(&self, _: &str, _: u64) -> Result<Vec<ReplicaDesc>, MasterError> {
            Ok(Vec::new())
        }
        fn put_end(&self, _: &str) -> Result<(), MasterError> {
            Ok(())
        }
        fn get(&self, _: &str) -> Result<Vec<ReplicaDesc>, MasterError> {
            self.work();
            Ok(Vec::new())
        }
        fn remove(&self, _: &str) -> Result<(), MasterError> {
            Ok(())
        }
        fn owner_of(&self, _: &str) -> Option<String> {
            Some("a".to_string())
        }
        fn contains(&self, _: &str) -> bool {
            true
        }
        fn client_id(&self, _: &str) -> Option<ClientId> {
            Some(ClientId(1))
        }
        fn tick(&self) -> TickOutcome {
            TickOutcome::default()
        }
        fn run_job(&self, _: ClientOffboardingJob) -> Result<(), ClientOffboardingJob> {
            Ok(())
        }
        fn snapshot(&self) -> usize {
            0
        }
    }

    /// Pings "a" while `op` is inside the slow part of `slow`; returns whether `op` had left
    /// it when the ping returned (i.e. whether the ping waited for it).
    fn ping_waited(paths: &dyn MasterPaths, slow: &Slow, op: impl FnOnce() + Send) -> bool {
        use crate::sync::Ordering::Acquire;
        std::thread::scope(|s| {
            s.spawn(op);
            while !slow.entered.load(Acquire) {
                std::thread::yield_now();
            }
            assert_eq!(paths.ping("a").status, PingStatus::Ok);
            slow.left.load(Acquire)
        })
    }

    #[test]
    fn ping_waits_for_a_remount_and_for_a_serving_guard_of_its_record() {
        let up = UpstreamMain::new(Slow {
            slow: Duration::from_millis(300),
            ..Slow::default()
        });
        up.mount("a", "a-seg", 1).expect("mount");
        // ReMount of *another* client holds client_mutex_ exclusive for its walk.
        assert!(ping_waited(&up, &up.inner, || up.remount("b", &[]).expect("remount")));
        // A Get routed to a's segment holds a's record mutex while it runs.
        assert!(ping_waited(&up, &up.inner, || drop(up.get("k"))));
        // The bare paths share nothing with Ping (the ping returns while the walk still runs).
        let bare = Slow {
            slow: Duration::from_secs(3),
            ..Slow::default()
        };
        assert!(!ping_waited(&bare, &bare, || bare.remount("b", &[]).expect("remount")));
    }
}
