//! What the master decided, booked against the ground truth: transitions, Offline commits (or
//! legacy expiries) classified by what silenced the client, objects lost, crash detection, and
//! the end-of-run accounting of offboarding jobs still pending.

use super::counters::CrashDetection;
use super::run::{key_name, Sim};
use crate::liveness::{LivenessState, Transition};
use crate::master::MasterEvent;
use crate::LivenessEvent;

impl Sim<'_> {
    pub(super) fn drain(&mut self) {
        for ev in self.master.take_events() {
            match ev {
                MasterEvent::Liveness(LivenessEvent::Transition(tr)) => self.on_transition(tr),
                MasterEvent::Liveness(LivenessEvent::StallDetected { ms, .. }) => {
                    self.m.stalls += 1;
                    self.m.stall_ms += ms;
                }
                MasterEvent::Liveness(LivenessEvent::MassSuspicionBrake { engaged, .. }) => {
                    self.m.brake_engagements += u64::from(engaged)
                }
                MasterEvent::OffboardingRetry { .. } => self.m.retries += 1,
                MasterEvent::Offboarded { client, at_ms, .. } => self.on_offboarded(self.index_of(client), at_ms),
            }
        }
    }

    /// The detection record of crashed client `i`, if it had crashed by `t`.
    pub(super) fn crash_entry(&mut self, i: usize, t: u64) -> Option<&mut CrashDetection> {
        let crash_ms = self.truth()?.crash_ms[i].filter(|c| *c <= t)?;
        let name = &self.w.names[i];
        Some(self.crash.entry(i).or_insert_with(|| CrashDetection {
            client: name.clone(),
            crash_ms,
            last_ping_ms: 0,
            suspected_ms: None,
            offline_ms: None,
        }))
    }

    fn on_transition(&mut self, tr: Transition) {
        let (i, t) = (self.index_of(tr.client), tr.at_ms);
        match (tr.from, tr.to) {
            (LivenessState::Active, LivenessState::Suspected) => {
                self.m.suspicions += 1;
                self.clients[i].suspected_since = Some(t);
                if let Some(d) = self.crash_entry(i, t) {
                    d.suspected_ms.get_or_insert(t);
                }
            }
            (LivenessState::Suspected, LivenessState::Active) => {
                self.m.recoveries += 1;
                self.close_suspicion(i, t);
            }
            (_, LivenessState::Offline) => {
                self.clients[i].job_pending = true;
                self.on_offline(i, t);
            }
            _ => {}
        }
    }

    /// Client `i`'s incarnation went Offline (legacy: expired) at `t`.
    pub(super) fn on_offline(&mut self, i: usize, t: u64) {
        self.m.offline_commits += 1;
        self.close_suspicion(i, t);
        self.clients[i].offboarded = true;
        self.m.offboarded_clients.insert(i as u32);
        let Some(truth) = self.truth() else { return };
        if truth.crashed(i, t) {
            if let Some(d) = self.crash_entry(i, t) {
                d.offline_ms.get_or_insert(t);
            }
            return;
        }
        self.m.false_offboards += 1;
        self.m.false_clients.insert(i as u32);
        let cause = self.w.cause(i, self.clients[i].last_heard_ms, t);
        self.m.false_by_cause[cause.slot()].insert(i as u32);
    }

    /// Ends client `i`'s Suspected interval at `t`, split into time alive and time dead.
    fn close_suspicion(&mut self, i: usize, t: u64) {
        let Some(s) = self.clients[i].suspected_since.take() else {
            return;
        };
        let crash = self.truth().and_then(|g| g.crash_ms[i]).unwrap_or(u64::MAX);
        let dead = t.saturating_sub(s.max(crash));
        self.m.suspected_ms_dead += dead;
        self.m.suspected_ms_alive += t.saturating_sub(s) - dead;
    }

    /// Offboarding of client `i`'s incarnation completed: which of its keys went with it?
    pub(super) fn on_offboarded(&mut self, i: usize, t: u64) {
        self.m.offboarded += 1;
        self.clients[i].job_pending = false;
        for id in std::mem::take(&mut self.clients[i].keys) {
            if self.master.object(&key_name(id)).is_none() {
                self.lose(id, t);
            }
        }
    }

    fn lose(&mut self, id: u64, t: u64) {
        let owners = self
            .keys
            .get_mut(&id)
            .map(|k| std::mem::take(&mut k.owners))
            .unwrap_or_default();
        for &o in &owners {
            self.clients[o as usize].keys.remove(&id);
        }
        self.m.lost_total += 1;
        if let Some(g) = self.truth() {
            if owners.iter().any(|&o| !g.crashed(o as usize, t)) {
                self.m.lost_false += 1;
            } else {
                self.m.lost_crash += 1;
            }
        }
    }

    /// Objects whose every replica waits on an unfinished offboarding job: lost once it runs.
    fn count_pending_losses(&mut self, end: u64) {
        self.m.jobs_pending_at_end = self.clients.iter().filter(|c| c.job_pending).count() as u64;
        if self.m.jobs_pending_at_end == 0 {
            return;
        }
        let truth = self.truth();
        for k in self.keys.values() {
            let doomed = !k.owners.is_empty() && k.owners.iter().all(|&o| self.clients[o as usize].job_pending);
            if !doomed {
                continue;
            }
            if truth.is_some_and(|g| k.owners.iter().any(|&o| !g.crashed(o as usize, end))) {
                self.m.pending_lost_false += 1;
            } else {
                self.m.pending_lost_crash += 1;
            }
        }
    }

    pub(super) fn finish(mut self) -> super::counters::Metrics {
        let end = self.w.duration_ms;
        self.count_pending_losses(end);
        for i in 0..self.clients.len() {
            self.close_suspicion(i, end);
            if self.truth().is_some_and(|g| g.crash_ms[i].is_some()) {
                let last = self.clients[i].last_heard_ms;
                if let Some(d) = self.crash_entry(i, u64::MAX) {
                    d.last_ping_ms = last;
                    // Suspected before it died (e.g. during a mass suspicion): detected at once.
                    if d.offline_ms.is_some() && d.suspected_ms.is_none() {
                        d.suspected_ms = Some(d.crash_ms);
                    }
                }
            }
        }
        self.m.crashes = std::mem::take(&mut self.crash).into_values().collect();
        self.m
    }
}
