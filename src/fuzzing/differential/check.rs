//! The checker: the model plus what the invariants remember across steps; liveness
//! transitions (invariants 1–4, 15) and offboarding attempts (15–17) of each tick.

use super::super::model::{Config, Ev, Model, State, CLIENTS, CLIENT_NAMES};
use super::names::client_ids;
use super::names::ev_of;
use crate::config::LivenessConfig;
use crate::master::{Master, MasterEvent};
use crate::LivenessEvent;
use std::collections::BTreeSet;

/// The model plus what the invariants remember across steps.
pub(super) struct Checker {
    pub(super) model: Model,
    /// (client, incarnation) committed Offline.
    pub(super) offline_commits: BTreeSet<(usize, u64)>,
    /// (client, incarnation) offboarded.
    pub(super) offboarded: BTreeSet<(usize, u64)>,
    /// Highest incarnation seen per client.
    pub(super) max_incarnation: [u64; CLIENTS],
}

impl Checker {
    pub(super) fn new(config: &LivenessConfig, async_mode: bool) -> Self {
        Self {
            model: Model::new(Config {
                active_ttl_ms: config.active_ttl_ms,
                suspicion_ttl_ms: config.suspicion_ttl_ms,
                retry_backoff_ms: config.offboarding_retry_backoff_ms,
                retry_max_backoff_ms: config.offboarding_retry_max_backoff_ms,
                async_mode,
                start_rate: (config.offboarding_rate_per_sec < 100.0)
                    .then_some((config.offboarding_rate_per_sec as u64, config.offboarding_burst)),
                tick_ms: config.monitor_tick_ms,
                // Fractions the harness uses are whole quarters (decode.rs).
                mass_brake: config.mass_suspicion_brake.then_some((
                    config.mass_suspicion_min_clients,
                    (config.mass_suspicion_fraction * 4.0) as usize,
                )),
                stall_brake: config.stall_brake,
            }),
            offline_commits: BTreeSet::new(),
            offboarded: BTreeSet::new(),
            max_incarnation: [0; CLIENTS],
        }
    }

    /// Invariants 1–3 for a transition the master committed, against the model's state before it.
    pub(super) fn check_transition(&self, ev: &Ev) {
        let Ev::Transition {
            at,
            client,
            incarnation,
            from,
            to,
        } = ev
        else {
            return;
        };
        let allowed = matches!(
            (from, to),
            (State::Active, State::Suspected) | (State::Suspected, State::Active) | (State::Suspected, State::Offline)
        );
        assert!(
            allowed,
            "invariant 1: transition {from:?} -> {to:?} is not allowed: {ev:?}"
        );
        let rec = self.model.clients[*client]
            .rec
            .as_ref()
            .unwrap_or_else(|| panic!("invariant 1: transition of a client with no live incarnation: {ev:?}"));
        assert_eq!(
            rec.incarnation, *incarnation,
            "invariant 1: transition of a stale incarnation: {ev:?}"
        );
        assert_eq!(
            rec.state, *from,
            "invariant 1: transition from a state the incarnation is not in: {ev:?}"
        );
        match to {
            State::Suspected => assert!(
                at - rec.last_signal >= rec.signal_ttl,
                "invariant 2: Suspected at {at}, {} ms after the last signal at {} (active TTL {})",
                at - rec.last_signal,
                rec.last_signal,
                rec.signal_ttl
            ),
            State::Offline => assert!(
                at - rec.suspected_at >= rec.suspicion_ttl,
                "invariant 3: Offline at {at}, {} ms after Suspected was committed at {} (suspicion TTL {})",
                at - rec.suspected_at,
                rec.suspected_at,
                rec.suspicion_ttl
            ),
            State::Active => {}
        }
    }

    /// One monitor tick at `tau` that produced `events`.
    pub(super) fn tick(&mut self, m: &Master, tau: u64, events: &[MasterEvent]) {
        // Invariant 5: a tick more than the bound late credits the whole gap, once.
        let stalls: Vec<(u64, u64)> = events
            .iter()
            .filter_map(|e| match e {
                MasterEvent::Liveness(LivenessEvent::StallDetected { at_ms, ms }) => Some((*at_ms, *ms)),
                _ => None,
            })
            .collect();
        let credited = self.model.stall_check(tau);
        assert_eq!(
            stalls,
            credited.map(|gap| (tau, gap)).into_iter().collect::<Vec<_>>(),
            "invariant 5: stall credit of the tick at {tau} (at, ms)"
        );
        let events: Vec<&MasterEvent> = events
            .iter()
            .filter(|e| !matches!(e, MasterEvent::Liveness(LivenessEvent::StallDetected { .. })))
            .collect();
        let evs: Vec<Ev> = events.iter().map(|e| ev_of(m, e)).collect();
        // The brake's event (first: it decides before the tick's commits), the transitions,
        // then the offboarding attempts.
        let n_brake = evs.iter().take_while(|e| matches!(e, Ev::Brake { .. })).count();
        let n_trans = evs[n_brake..]
            .iter()
            .take_while(|e| matches!(e, Ev::Transition { .. }))
            .count();
        let (brakes, rest) = evs.split_at(n_brake);
        let (trans, jobs) = rest.split_at(n_trans);
        assert!(
            jobs.iter()
                .all(|e| matches!(e, Ev::Retry { .. } | Ev::Offboarded { .. })),
            "a transition or brake event after an offboarding attempt within one tick at {tau}: {evs:?}"
        );
        for e in brakes {
            assert!(
                matches!(e, Ev::Brake { at, .. } if *at == tau),
                "brake event not stamped with its tick {tau}: {e:?}"
            );
        }
        for e in trans {
            assert!(
                matches!(e, Ev::Transition { at, .. } if *at == tau),
                "transition not stamped with its tick {tau}: {e:?}"
            );
            self.check_transition(e);
        }
        let mut observed: Vec<Ev> = brakes.iter().chain(trans).cloned().collect();
        observed.sort();
        let mut expected = self.model.tick_transitions(tau);
        expected.sort();
        for e in &expected {
            assert!(
                observed.contains(e),
                "invariant 4: late commit: the model commits {e:?} at the tick {tau}, the master committed {observed:?}"
            );
        }
        assert_eq!(observed, expected, "transitions of the tick at {tau}");
        for e in &observed {
            if let Ev::Transition {
                client,
                incarnation,
                to: State::Offline,
                ..
            } = e
            {
                assert!(
                    self.offline_commits.insert((*client, *incarnation)),
                    "invariant 15: a second Offline commit for {e:?}"
                );
            }
        }
        self.jobs(m, tau, jobs, false);
    }

    /// The executor's retries that fell due between ticks (async), run at `now`.
    pub(super) fn executor(&mut self, m: &Master, now: u64, events: &[MasterEvent]) {
        let evs: Vec<Ev> = events.iter().map(|e| ev_of(m, e)).collect();
        assert!(
            evs.iter().all(|e| !matches!(e, Ev::Transition { .. })),
            "a transition from the executor at {now}: {evs:?}"
        );
        self.jobs(m, now, &evs, true);
    }

    /// The offboarding attempts of the tick at `tau`, in the order the master ran them.
    fn jobs(&mut self, m: &Master, tau: u64, jobs: &[Ev], executor_only: bool) {
        let order: Vec<usize> = jobs
            .iter()
            .map(|e| match e {
                Ev::Retry { client, .. } | Ev::Offboarded { client, .. } => *client,
                Ev::Transition { .. } | Ev::Brake { .. } => unreachable!(),
            })
            .collect();
        let mut due = self.model.due_jobs(tau, executor_only);
        // The start rate limit (decisions.md, "Mass offboarding"): a first attempt needs a
        // token; the master's jobs take them in its order (parked before fresh), and within
        // one tick no token comes back, so exactly min(tokens, first attempts) run and the rest
        // wait until the bucket next holds a token. The model checks the count and the
        // priority.
        let job = |md: &Model, c: usize| {
            md.clients[c]
                .rec
                .as_ref()
                .and_then(|r| r.job.clone())
                .expect("a due job")
        };
        let first: Vec<usize> = due
            .iter()
            .copied()
            .filter(|c| job(&self.model, *c).attempts == 0)
            .collect();
        let tokens = self.model.start_tokens(tau);
        if tokens < first.len() {
            let ran: Vec<usize> = first.iter().copied().filter(|c| order.contains(c)).collect();
            assert_eq!(
                ran.len(),
                tokens,
                "start rate limit at {tau}: {tokens} token(s) for first attempts of {first:?}, the master ran {order:?}"
            );
            let fresh_ran = ran.iter().any(|c| job(&self.model, *c).fresh);
            let parked_waiting = first.iter().any(|c| !order.contains(c) && !job(&self.model, *c).fresh);
            assert!(
                !(fresh_ran && parked_waiting),
                "start rate limit at {tau}: a fresh job took a token before a parked one: ran {order:?} of {first:?}"
            );
            for _ in 0..tokens {
                self.model.take_start_token();
            }
            for c in first.iter().filter(|c| !order.contains(c)) {
                self.model.defer(*c, tau);
            }
            due.retain(|c| !first.contains(c) || ran.contains(c));
        } else {
            for _ in 0..first.len() {
                self.model.take_start_token();
            }
        }
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(
            sorted, due,
            "offboarding attempts at {tau}: the master ran jobs of {order:?}, the model has jobs of {due:?} due (first attempt at the committing tick, retries on the backoff schedule)"
        );
        let fresh: Vec<bool> = order
            .iter()
            .map(|c| {
                self.model.clients[*c]
                    .rec
                    .as_ref()
                    .and_then(|r| r.job.as_ref())
                    .is_some_and(|j| j.fresh)
            })
            .collect();
        assert!(
            fresh.windows(2).all(|w| w[0] <= w[1]),
            "a due retry ran after a fresh job at {tau}: {jobs:?}"
        );
        for (c, got) in order.iter().zip(jobs) {
            let want = self.model.attempt(*c, tau);
            assert_eq!(got, &want, "offboarding attempt at {tau}");
            if let Ev::Offboarded {
                client, incarnation, ..
            } = got
            {
                assert!(
                    self.offboarded.insert((*client, *incarnation)),
                    "invariant 15: offboarded twice: {got:?}"
                );
                self.check_offboarded(m, *client, *incarnation);
            }
        }
    }

    /// Invariant 16 right after `offboarded` (client, incarnation), on the master itself.
    fn check_offboarded(&self, m: &Master, client: usize, incarnation: u64) {
        let name = CLIENT_NAMES[client];
        for seg in m.segments().iter() {
            assert!(
                !(m.client_name(seg.owner.client()) == name && seg.owner.incarnation().0 == incarnation),
                "invariant 16: segment {} of offboarded {name}#{incarnation} still mounted",
                seg.name
            );
        }
        for (key, obj) in m.objects() {
            for r in &obj.replicas {
                assert!(
                    !(m.client_name(r.owner().client()) == name && r.owner().incarnation().0 == incarnation),
                    "invariant 16: object {key} keeps a replica of offboarded {name}#{incarnation}"
                );
                if let Some(sid) = r.segment() {
                    assert!(
                        m.segments().get(sid).is_some(),
                        "invariant 10/16: object {key} references an unmounted segment"
                    );
                }
            }
        }
        assert!(
            m.local_disks()
                .values()
                .all(|d| !(m.client_name(d.owner.client()) == name && d.owner.incarnation().0 == incarnation)),
            "invariant 16: LocalDisk of offboarded {name}#{incarnation} still registered"
        );
        let id = client_ids(m)[client].expect("an offboarded client has an id");
        assert!(
            m.liveness()
                .registry()
                .get(id)
                .is_none_or(|r| r.incarnation().0 != incarnation),
            "invariant 16: record of offboarded {name}#{incarnation} still registered"
        );
    }
}
