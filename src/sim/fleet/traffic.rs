//! The traffic of a simulated run: Puts and Gets at exponential gaps, where their replicas went,
//! the application's own eviction (beyond `max_objects`) and the recompute after a miss, each
//! booked against the ground truth (was an owner unreachable?).

use super::run::{key_name, Key, Kind, Sim};
use crate::master::{MasterError, ReplicaDesc};
use rand::Rng;
use rand_distr::{Distribution, Exp};

impl Sim<'_> {
    pub(super) fn schedule_put(&mut self) {
        if self.traffic.puts_per_s > 0.0 {
            let gap = Exp::new(self.traffic.puts_per_s / 1_000.0).expect("positive rate");
            self.put_at += gap.sample(&mut self.traffic_rng);
            self.push(self.put_at as u64, Kind::Put, 0);
        }
    }

    pub(super) fn schedule_get(&mut self) {
        if self.traffic.gets_per_s > 0.0 {
            let gap = Exp::new(self.traffic.gets_per_s / 1_000.0).expect("positive rate");
            self.get_at += gap.sample(&mut self.traffic_rng);
            self.push(self.get_at as u64, Kind::Get, 0);
        }
    }

    fn owners(&self, descs: &[ReplicaDesc]) -> Vec<u32> {
        descs
            .iter()
            .filter_map(|d| self.by_name.get(&d.client).copied())
            .collect()
    }

    fn any_unreachable(&self, owners: &[u32], t: u64) -> bool {
        self.truth()
            .is_some_and(|g| owners.iter().any(|&o| g.unreachable(o as usize, t)))
    }

    pub(super) fn on_put(&mut self, t: u64) {
        self.schedule_put();
        let tr = self.traffic;
        let size = self
            .traffic_rng
            .random_range(tr.object_min_bytes..=tr.object_max_bytes.max(tr.object_min_bytes));
        let replicas = self.traffic_rng.random_range(1..=tr.max_replicas.max(1));
        if self.w.master_paused(t) {
            return;
        }
        self.clock.set_ms(t);
        let id = self.next_key;
        self.next_key += 1;
        self.m.puts += 1;
        if self.store(id, size, replicas, t) {
            self.pool.push_back(id);
            self.trim();
        } else {
            self.m.puts_failed += 1;
        }
    }

    /// Put + PutEnd of key `id`; records where its replicas went. `false` when refused.
    fn store(&mut self, id: u64, size: u64, replicas: usize, t: u64) -> bool {
        let key = key_name(id);
        let Ok(descs) = self.master.put(&key, size, replicas) else {
            return false;
        };
        let _ = self.master.put_end(&key);
        let owners = self.owners(&descs);
        if self.any_unreachable(&owners, t) {
            self.m.puts_unreachable += 1;
        }
        for &o in &owners {
            self.clients[o as usize].keys.insert(id);
        }
        self.keys.insert(id, Key { size, replicas, owners });
        true
    }

    /// The application's own eviction: beyond `max_objects`, the oldest key is removed.
    fn trim(&mut self) {
        while self.pool.len() > self.traffic.max_objects {
            let Some(id) = self.pool.pop_front() else { break };
            let _ = self.master.remove(&key_name(id));
            for o in self.keys.remove(&id).map(|k| k.owners).unwrap_or_default() {
                self.clients[o as usize].keys.remove(&id);
            }
        }
    }

    pub(super) fn on_get(&mut self, t: u64) {
        self.schedule_get();
        let u: f64 = self.traffic_rng.random();
        if self.w.master_paused(t) || self.pool.is_empty() {
            return;
        }
        let n = self.pool.len();
        let id = self.pool[((u * n as f64) as usize).min(n - 1)];
        self.clock.set_ms(t);
        self.m.gets += 1;
        let incident = self.w.in_incident(t);
        self.m.incident_gets += u64::from(incident);
        let missed = match self.master.get(&key_name(id)) {
            Ok(descs) => {
                if self.any_unreachable(&self.owners(&descs), t) {
                    self.m.gets_unreachable += 1;
                }
                false
            }
            Err(MasterError::ReplicaIsNotReady) => {
                self.m.gets_not_ready += 1;
                true
            }
            Err(MasterError::ObjectNotFound) => {
                self.m.gets_not_found += 1;
                self.recompute(id, t);
                true
            }
            Err(_) => {
                self.m.gets_other += 1;
                true
            }
        };
        self.m.incident_misses += u64::from(incident && missed);
    }

    /// A miss on a key that is gone: the cache recomputes it and puts it again.
    fn recompute(&mut self, id: u64, t: u64) {
        let Some(k) = self.keys.get(&id) else { return };
        let (size, replicas) = (k.size, k.replicas);
        if self.store(id, size, replicas, t) {
            self.m.reputs += 1;
        }
    }
}
