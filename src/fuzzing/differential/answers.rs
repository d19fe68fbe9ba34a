//! Each operation's answer and events against the model's (invariants 6, 7, 9, 10, 14, and the
//! segment-name rule of `trace-format.md`).

use super::super::model::{Ev, PutPlan, State, CLIENT_NAMES, KEY_NAMES, SEGMENT_NAMES};
use super::check::Checker;
use super::decode::Cmd;
use super::names::{ev_of, replica_desc, replica_index_of, segment_index};
use super::run::{registry_rows, Answer};
use crate::liveness::PingStatus;
use crate::master::{Master, MasterEvent};
use std::collections::BTreeSet;

type TaskRows = Vec<(u64, &'static str, String)>;

/// The target segment the master chose for task `id`, checked against the model's `allowed`
/// (invariant 10: only a segment that may take the allocation).
fn chosen_target(m: &Master, id: u64, allowed: &[usize], what: &str) -> usize {
    let target = m
        .tasks()
        .get(id)
        .and_then(|t| t.target.as_ref().map(|t| segment_index(&t.name)))
        .unwrap_or_else(|| panic!("{what}: task {id} has no target"));
    assert!(
        allowed.contains(&target),
        "invariant 10: {what}: target {} (allowed: {allowed:?})",
        SEGMENT_NAMES[target]
    );
    target
}

impl Checker {
    /// Promotion of `k`: refused as the model says, or started to a target the model allows
    /// (the master's choice, read from its task table, is fed back).
    fn promote(&mut self, m: &Master, k: usize, now: u64, answer: &Answer) -> Result<u64, &'static str> {
        let md = &mut self.model;
        let targets = md.promote_targets(k)?;
        let Answer::Task(Ok(id)) = answer else {
            panic!(
                "Promote of {} at {now}: the master answered {answer:?}, the model allows {targets:?}",
                KEY_NAMES[k]
            );
        };
        let what = format!("Promote of {} at {now}", KEY_NAMES[k]);
        let target = chosen_target(m, *id, &targets, &what);
        Ok(md.promote(k, target))
    }

    /// Drain of `s`: each of its keys gets a Move iff the model says one can start, to a target
    /// the model allows (the master's choice, read from its task table, is fed back).
    fn drain(&mut self, m: &Master, s: usize, now: u64, answer: &Answer) -> Result<TaskRows, &'static str> {
        let md = &mut self.model;
        let keys = md.keys_on(s); // in key order, as the segment's key set is
        md.start_drain(s)?;
        let Answer::Drain(Ok(got)) = answer else {
            panic!("Drain of {} at {now}: the master answered {answer:?}", SEGMENT_NAMES[s]);
        };
        let mut got = got.iter();
        let mut want = Vec::new();
        for k in keys {
            let targets = md.drain_targets(k, s);
            if targets.is_empty() {
                continue;
            }
            let Some((id, _, key)) = got.next() else {
                panic!(
                    "Drain of {} at {now}: no Move for {} (targets {targets:?})",
                    SEGMENT_NAMES[s], KEY_NAMES[k]
                );
            };
            assert_eq!(
                key, KEY_NAMES[k],
                "Drain of {} at {now}: tasks out of key order",
                SEGMENT_NAMES[s]
            );
            let what = format!("Drain of {} at {now}, {}", SEGMENT_NAMES[s], KEY_NAMES[k]);
            let target = chosen_target(m, *id, &targets, &what);
            let mine = md.drain_move(k, s, target);
            want.push((mine, "move", KEY_NAMES[k].to_string()));
        }
        Ok(want)
    }

    /// One operation at `now`: the master answered `answer` and reported `events`.
    pub(super) fn op(&mut self, m: &Master, cmd: &Cmd, now: u64, answer: &Answer, events: &[MasterEvent]) {
        let evs: Vec<Ev> = events.iter().map(|e| ev_of(m, e)).collect();
        for e in &evs {
            self.check_transition(e);
        }
        let md = &mut self.model;
        let specs: &[(usize, u64)] = match cmd {
            Cmd::Mount { s, size, .. } => &[(*s, *size)],
            Cmd::Remount { specs, .. } => specs,
            _ => &[],
        };
        for (s, _) in specs {
            if let Some(holder) = md.held_by_pending_job(*s) {
                assert!(
                    answer != &Answer::Done(Ok(())),
                    "{cmd:?} at {now}: segment {} is still held by {}, whose offboarding is pending (its `segments` step \
                     unmounted it, a later step failed); trace-format.md: a name held by a client Offline with \
                     offboarding pending is refused, free only after offboarding (bug 1)",
                    SEGMENT_NAMES[*s],
                    CLIENT_NAMES[holder]
                );
            }
        }
        let (want, want_ev): (Answer, Option<Ev>) = match cmd {
            Cmd::Advance(_) | Cmd::Stall(_) => unreachable!(),
            Cmd::Mount { c, s, size, token } => {
                let barrier = md.clients[*c]
                    .rec
                    .as_ref()
                    .is_some_and(|r| r.state == State::Offline && token.is_none_or(|t| t == r.incarnation));
                let (r, e) = md.mount(*c, &[(*s, *size)], false, *token, now);
                if barrier {
                    assert_eq!(
                        answer,
                        &Answer::Done(Err("CLIENT_OFFBOARDING")),
                        "invariant 14: mount by {} while its Offline incarnation is being offboarded",
                        CLIENT_NAMES[*c]
                    );
                }
                (Answer::Done(r), e)
            }
            Cmd::Remount { c, specs } => {
                let (r, e) = md.mount(*c, specs, true, None, now);
                (Answer::Done(r), e)
            }
            Cmd::Unmount { c, s } => (Answer::Done(md.unmount(*c, *s)), None),
            Cmd::Ping { c, token } => {
                let offline = md.clients[*c].rec.as_ref().is_none_or(|r| r.state == State::Offline);
                let (ok, e) = md.ping(*c, *token, now);
                if offline {
                    assert_eq!(
                        answer,
                        &Answer::Ping(PingStatus::NeedRemount),
                        "invariant 7: ping of {} (unknown or Offline) must answer NEED_REMOUNT",
                        CLIENT_NAMES[*c]
                    );
                }
                let status = if ok { PingStatus::Ok } else { PingStatus::NeedRemount };
                (Answer::Ping(status), e)
            }
            Cmd::MountLocalDisk { c, capacity } => {
                let (r, e) = md.mount_local_disk(*c, *capacity, now);
                (Answer::Done(r), e)
            }
            Cmd::Put { k, size, n } => {
                // Invariant 10 first, on the master's own answer (eviction never changes owners).
                if let Answer::Replicas(Ok(descs)) = answer {
                    for d in descs {
                        assert_eq!(
                            md.owner_state(segment_index(&d.segment)),
                            Some(State::Active),
                            "invariant 10: Put {cmd:?} at {now} allocated on {} whose owner is not Active",
                            d.segment
                        );
                    }
                }
                let plan = md.put_plan(*k, *size, *n);
                match (&plan, answer) {
                    (PutPlan::Refused(code), Answer::Replicas(Err(got))) => {
                        assert_eq!(got, code, "Put {cmd:?}: refused with another code")
                    }
                    (PutPlan::Allocate { eligible, count }, Answer::Replicas(Ok(descs))) => {
                        let chosen: Vec<usize> = descs.iter().map(|d| segment_index(&d.segment)).collect();
                        for (d, s) in descs.iter().zip(&chosen) {
                            let owner = md.segments[s].owner;
                            assert_eq!(
                                d.client, CLIENT_NAMES[owner],
                                "Put {cmd:?}: wrong owner for {}",
                                d.segment
                            );
                            assert!(
                                eligible.contains(s),
                                "Put {cmd:?}: {} has no room (eligible: {eligible:?})",
                                d.segment
                            );
                        }
                        let distinct: BTreeSet<usize> = chosen.iter().copied().collect();
                        assert_eq!(
                            distinct.len(),
                            chosen.len(),
                            "Put {cmd:?}: replicas on one segment twice: {descs:?}"
                        );
                        assert_eq!(
                            chosen.len(),
                            *count,
                            "Put {cmd:?}: {} replicas handed out, the model allows {count} of {eligible:?}",
                            chosen.len()
                        );
                        md.put_commit(*k, *size, &chosen);
                    }
                    _ => panic!("Put {cmd:?} at {now}: the master answered {answer:?}, the model {plan:?}"),
                }
                (answer.clone(), None)
            }
            Cmd::PutEnd { k } => (Answer::Done(md.put_end(*k)), None),
            Cmd::PutRevoke { k } => (Answer::Done(md.put_revoke(*k)), None),
            Cmd::Get { k } => {
                if let Answer::Replicas(Ok(descs)) = answer {
                    for d in descs {
                        let s = replica_index_of(&d.segment);
                        assert_eq!(
                            md.owner_state(s),
                            Some(State::Active),
                            "invariant 9: Get {cmd:?} served a replica on {} whose owner is not Active",
                            d.segment
                        );
                    }
                }
                let want = md
                    .get(*k)
                    .map(|segs| segs.iter().map(|s| replica_desc(md, *s)).collect());
                (Answer::Replicas(want), None)
            }
            Cmd::Remove { k } => (Answer::Done(md.remove(*k)), None),
            Cmd::FailStep { step, times } => {
                md.fail_step(*step, *times);
                (Answer::Nothing, None)
            }
            Cmd::Failover => {
                md.failover(now);
                (Answer::Nothing, None)
            }
            Cmd::ReloadTtls(active, suspicion) => {
                md.cfg.active_ttl_ms = *active;
                md.cfg.suspicion_ttl_ms = *suspicion;
                (Answer::Nothing, None)
            }
            Cmd::SetQuota(limit) => {
                md.quota_limit = *limit;
                (Answer::Nothing, None)
            }
            Cmd::HandBack => {
                md.hand_back(now);
                (Answer::Nothing, None)
            }
            // Batching is how a step bounds its lock hold, not something a client or an
            // operator can observe: the attempt runs every batch of the step before the next
            // step, and an injected failure hits the step's execution, not one batch of it
            // (`offboarding/job.rs`, `complete_client_offboarding`). The model is unchanged: the
            // same events, state and refunds must follow, whatever the batch.
            Cmd::BatchKeys(_) => (Answer::Nothing, None),
            Cmd::Replicate { k, s, mv } => (Answer::Task(md.replicate(*k, *s, *mv)), None),
            Cmd::FetchTasks { c } => {
                let got = md.fetch_tasks(*c);
                let tasks = got
                    .into_iter()
                    .map(|(id, kind, k)| (id, kind, KEY_NAMES[k].to_string()));
                (Answer::Tasks(tasks.collect()), None)
            }
            Cmd::Drain { s } => (Answer::Drain(self.drain(m, *s, now, answer)), None),
            Cmd::OffloadHeartbeat { c } => {
                let r = md.offload_heartbeat(*c);
                let tasks = |v: Vec<(u64, &'static str, usize)>| {
                    v.into_iter()
                        .map(|(id, kind, k)| (id, kind, KEY_NAMES[k].to_string()))
                        .collect()
                };
                (Answer::Drain(r.map(tasks)), None)
            }
            Cmd::Promote { k } => (Answer::Task(self.promote(m, *k, now, answer)), None),
            Cmd::NofMount { n, size } => (Answer::Flag(md.nof_mount(*n, *size)), None),
            Cmd::NofProbe { n, healthy } => (Answer::Flag(md.nof_probe(*n, *healthy)), None),
            Cmd::TaskDone { c, id, ok } => {
                let c = c.expect("resolved before it applies");
                (Answer::Done(md.task_done(c, *id, *ok)), None)
            }
        };
        assert_eq!(answer, &want, "answer to {cmd:?} at {now}");
        // Invariant 6: a refused mount is not a liveness signal and creates no record.
        if let (Cmd::Mount { c, .. } | Cmd::Remount { c, .. } | Cmd::MountLocalDisk { c, .. }, Answer::Done(Err(_))) =
            (cmd, answer)
        {
            let got = registry_rows(m).into_iter().find(|r| r.0 == *c).map(|r| (r.1, r.2));
            let want = self.model.clients[*c].rec.as_ref().map(|r| (r.incarnation, r.state));
            assert_eq!(
                got, want,
                "invariant 6: {cmd:?} at {now} failed but changed {}'s (incarnation, state)",
                CLIENT_NAMES[*c]
            );
        }
        assert_eq!(
            evs,
            want_ev.into_iter().collect::<Vec<_>>(),
            "events of {cmd:?} at {now}"
        );
    }
}
