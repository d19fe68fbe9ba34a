//! The model's monitor and offboarding: the timing rule's transitions at a tick, which jobs
//! run when, one attempt of a job (steps in order, injected failures, the backoff schedule),
//! failover and (async) the executor's hand-back.

use super::{Ev, Job, Model, State, CLIENTS};

/// `base · 2^(k−1)` capped at `max`, computed the slow way.
fn backoff(k: u32, base: u64, max: u64) -> u64 {
    let mut d = base;
    for _ in 1..k {
        d = d.saturating_mul(2);
        if d >= max {
            break;
        }
    }
    d.min(max)
}

impl Model {
    /// Start tokens the bucket holds at `now` (sync with a rate limit; `usize::MAX` without).
    pub(crate) fn start_tokens(&mut self, now: u64) -> usize {
        let Some((rate, burst)) = self.cfg.start_rate.filter(|_| !self.cfg.async_mode) else {
            return usize::MAX;
        };
        let (milli, last) = self.bucket.get_or_insert((burst * 1_000, now));
        *milli = (*milli + now.saturating_sub(*last) * rate).min(burst * 1_000);
        *last = (*last).max(now);
        (*milli / 1_000) as usize
    }

    /// Takes one start token (after [`Model::start_tokens`] said there is one).
    pub(crate) fn take_start_token(&mut self) {
        if let Some((milli, _)) = self.bucket.as_mut() {
            *milli -= 1_000;
        }
    }

    /// A first attempt of client `c`'s job found no start token at `now` (after the tick's
    /// tokens were taken): it is parked in the master until the bucket next holds a whole
    /// token, the first tick at or after that time runs it (`offboarding/schedule.rs`, rule 2).
    pub(crate) fn defer(&mut self, c: usize, now: u64) {
        let (rate, _) = self.cfg.start_rate.expect("deferred by a start rate limit");
        let (milli, _) = self.bucket.expect("the bucket was filled by `start_tokens`");
        // `rate` jobs/s refill `rate` millitokens per ms.
        let wait = 1_000u64.saturating_sub(milli).div_ceil(rate.max(1)).max(1);
        let job = self.clients[c]
            .rec
            .as_mut()
            .and_then(|r| r.job.as_mut())
            .expect("a due job");
        job.due = now + wait;
        job.fresh = false;
    }
    /// The liveness transitions of the tick at `now`, by client (the timing rule).
    pub(crate) fn tick_transitions(&mut self, now: u64) -> Vec<Ev> {
        let cfg = self.cfg;
        // The mass-suspicion brake decides first, from the states the tick starts with.
        let mut out: Vec<Ev> = self.brake_at(now).into_iter().collect();
        for c in 0..CLIENTS {
            let Some(rec) = self.clients[c].rec.as_ref() else {
                continue;
            };
            let (from, due) = (rec.state, now >= rec.deadline);
            // decisions.md: while the brake is engaged, due Offline commits pause.
            if from == State::Suspected && due && self.hold(c) {
                continue;
            }
            let Some(rec) = self.clients[c].rec.as_mut() else {
                continue;
            };
            match rec.state {
                State::Active if due => {
                    rec.state = State::Suspected;
                    rec.suspected_at = now;
                    rec.deadline = now + cfg.suspicion_ttl_ms;
                    rec.suspicion_ttl = cfg.suspicion_ttl_ms;
                }
                State::Suspected if due => {
                    rec.state = State::Offline;
                    rec.job = Some(Job {
                        attempts: 0,
                        done: [false; 5],
                        due: now,
                        fresh: true,
                        refund: 0,
                        unmounted: Vec::new(),
                        in_executor: false,
                    });
                }
                _ => continue,
            }
            out.push(Ev::Transition {
                at: now,
                client: c,
                incarnation: rec.incarnation,
                from,
                to: rec.state,
            });
        }
        out
    }

    /// Clients whose job runs at `now` (due retries and fresh jobs), by client: at a tick
    /// every due job (sync: the master runs them; async: the tick hands the parked ones to the
    /// executor, which runs them with its own due retries); between ticks (`executor_only`,
    /// async) the executor's due retries alone.
    pub(crate) fn due_jobs(&self, now: u64, executor_only: bool) -> Vec<usize> {
        (0..CLIENTS)
            .filter(|c| {
                self.clients[*c]
                    .rec
                    .as_ref()
                    .and_then(|r| r.job.as_ref())
                    .is_some_and(|j| j.due <= now && (j.in_executor || !executor_only))
            })
            .collect()
    }

    /// One attempt of client `c`'s job at `now`: the steps not done yet, in order; an injected
    /// failure stops it (retry after the backoff); success erases the record.
    pub(crate) fn attempt(&mut self, c: usize, now: u64) -> Ev {
        let cfg = self.cfg;
        let rec = self.clients[c].rec.as_ref().expect("job of a live record");
        let (inc, mut job) = (rec.incarnation, rec.job.clone().expect("job of an Offline record"));
        job.attempts += 1;
        job.fresh = false;
        let mine: Vec<usize> = self
            .segments
            .iter()
            .filter(|(_, seg)| seg.owner == c && seg.incarnation == inc)
            .map(|(s, _)| *s)
            .collect();
        for step in 0..5 {
            if job.done[step] {
                continue;
            }
            if self.faults[step] > 0 {
                self.faults[step] -= 1;
                job.due = now + backoff(job.attempts, cfg.retry_backoff_ms, cfg.retry_max_backoff_ms);
                // Async: the executor keeps the job for its retry; sync: the master parks it.
                job.in_executor = cfg.async_mode;
                let attempt = job.attempts;
                self.clients[c].rec.as_mut().expect("live").job = Some(job);
                return Ev::Retry {
                    at: now,
                    client: c,
                    incarnation: inc,
                    step,
                    attempt,
                };
            }
            match step {
                0 => {
                    // The tasks it executes (a promotion's target is another client's), the
                    // tasks touching its segments, its replicas there and on its LocalDisk.
                    job.refund += self.cancel_tasks_of((c, inc));
                    for s in &mine {
                        job.refund += self.drop_replicas_on(*s);
                    }
                    job.refund += self.drop_replicas_on(super::disk(c));
                }
                1 => {
                    for s in &mine {
                        self.segments.remove(s);
                        job.unmounted.push(*s);
                    }
                }
                2 => self.clients[c].rec.as_mut().expect("live").local_disk = None,
                3 => job.refund = 0,
                _ => job.unmounted.clear(),
            }
            job.done[step] = true;
        }
        let client = &mut self.clients[c];
        client.last_incarnation = inc;
        client.rec = None;
        Ev::Offboarded {
            at: now,
            client: c,
            incarnation: inc,
            attempts: job.attempts,
        }
    }

    /// Failover at `now` from a snapshot taken now: every retained incarnation is Active with a
    /// fresh active TTL and not ready; pending jobs resume (at the next tick) with their
    /// progress; injected failures are not part of a snapshot.
    ///
    /// A job the executor held when the master died (async) is not in the master: the
    /// snapshot records its incarnation Offline with a job of no attempts and no steps done
    /// (`core/src/docs/limitations.rs`, "Snapshots in asynchronous mode"); the scratch (refunds,
    /// unmounted names) is the master's and survives, and re-running done steps is harmless.
    pub(crate) fn failover(&mut self, now: u64) {
        self.last_tick = now; // the restored monitor's start
        self.faults = [0; 5];
        self.reset_brake();
        self.bucket = None;
        for client in &mut self.clients {
            let Some(rec) = client.rec.as_mut() else { continue };
            rec.ready = false;
            match rec.job.as_mut() {
                Some(job) => {
                    if job.in_executor {
                        job.attempts = 0;
                        job.done = [false; 5];
                        job.in_executor = false;
                    }
                    job.due = now;
                }
                None => {
                    rec.state = State::Active;
                    rec.last_signal = now;
                    rec.deadline = now + self.cfg.active_ttl_ms;
                    rec.signal_ttl = self.cfg.active_ttl_ms;
                }
            }
        }
    }

    /// The executor's shutdown (async): every job it holds is handed back to the master with
    /// its progress, parked due at once (decisions.md, "Shutdown": returned, never dropped; the
    /// next snapshot records it, the next tick hands it on).
    pub(crate) fn hand_back(&mut self, now: u64) {
        for client in &mut self.clients {
            if let Some(job) = client.rec.as_mut().and_then(|r| r.job.as_mut()) {
                if job.in_executor {
                    job.in_executor = false;
                    job.due = now;
                }
            }
        }
    }
}
