//! The offboarding schedule: which attempt of which job may run when. One [`Schedule`] serves
//! both drivers — the master's inline driver (`offboarding_mode: sync`, `master/offboard/`) and
//! the [`Executor`](super::executor::Executor)'s workers (`async`) — so the two cannot drift.
//!
//! # The rules
//!
//! 1. **Start rate.** A job's *first* attempt takes a token from a [`TokenBucket`]
//!    (`offboarding_rate_per_sec`, capacity `offboarding_burst`, full when the schedule first
//!    needs it); retries take none (their backoff already bounds them).
//! 2. **No token.** A first attempt that finds none is parked until the bucket next holds one
//!    ([`TokenBucket::next_token_ms`]): whoever polls the schedule first at or after that time
//!    runs it — the inline driver at its first tick, a worker at its next loop. (Before this
//!    schedule the inline driver waited one tick, `now + monitor_tick_ms`, and the executor
//!    `now + 10` ms; on a master ticking every `monitor_tick_ms`, the inline driver starts the
//!    same jobs at the same ticks as before whenever a token comes within one tick.)
//! 3. **Failure.** A failed attempt `k` is parked until `now + backoff·2^(k−1)`, capped
//!    ([`ClientOffboardingJob::backoff_ms`]), and counted here, once: the
//!    `offboarding_step_failures_total` / `offboarding_retries_total` metrics
//!    ([`telemetry::step_failed`](crate::telemetry::step_failed)). The [`Retry`] handed back
//!    names the step and the attempt for the driver's own report (the master's event and
//!    `Stats`).
//! 4. **Order.** Parked jobs come due by `(due, seq)`: by time, then in the order they were
//!    parked — every rate-limited first attempt keeps its place in the line.
//!
//! # Ground rules
//!
//! Plain single-owner data: no atomics, no lock. Each driver keeps its schedule behind a lock of
//! its own (the master's `offboarding` leaf; the executor's `schedule` mutex) and never holds it
//! while a step runs. A job is in the schedule or in its driver's hands, never both.
//!
//! Owns: the parked jobs, their order, the bucket and the failure count. May not touch: a job's
//! steps or its record (that is [`complete_client_offboarding`](super::complete_client_offboarding)'s).

use super::brakes::TokenBucket;
use super::{ClientOffboardingJob, Step};
use crate::config::LivenessConfig;
use crate::liveness::{ClientId, Incarnation};
use std::collections::BTreeMap;

/// The knobs of a [`Schedule`], from a [`LivenessConfig`] or an
/// [`ExecutorConfig`](super::executor::ExecutorConfig).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Job starts per second (`offboarding_rate_per_sec`).
    pub rate_per_sec: f64,
    /// Job starts allowed at once (`offboarding_burst`).
    pub burst: u64,
    /// First retry delay, ms (`offboarding_retry_backoff_ms`).
    pub retry_backoff_ms: u64,
    /// Retry delay cap, ms (`offboarding_retry_max_backoff_ms`).
    pub retry_max_backoff_ms: u64,
}

impl Limits {
    /// The schedule's part of a liveness configuration.
    pub fn from_config(c: &LivenessConfig) -> Self {
        Self {
            rate_per_sec: c.offboarding_rate_per_sec,
            burst: c.offboarding_burst,
            retry_backoff_ms: c.offboarding_retry_backoff_ms,
            retry_max_backoff_ms: c.offboarding_retry_max_backoff_ms,
        }
    }
}

/// A failed attempt, parked for its retry by [`Schedule::retry`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retry {
    /// The job's client.
    pub client: ClientId,
    /// The job's incarnation.
    pub incarnation: Incarnation,
    /// The step that failed ([`Step::Metadata`] if the job recorded no failure).
    pub step: Step,
    /// The attempt that failed (1 = the first).
    pub attempt: u32,
    /// When the next attempt may run (base clock, ms).
    pub due_ms: u64,
}

/// Parked jobs by `(due, seq)`, the start bucket, and the rules of the module documentation.
#[derive(Debug, Default)]
pub struct Schedule {
    parked: BTreeMap<(u64, u64), ClientOffboardingJob>,
    seq: u64,
    /// Made full at the first first-attempt (rule 1), with the limits of that moment.
    bucket: Option<TokenBucket>,
}

impl Schedule {
    /// An empty schedule.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parks `job` until `due_ms` (a job handed back, restored, or refused by a queue: `now`).
    pub fn park(&mut self, job: ClientOffboardingJob, due_ms: u64) {
        self.seq += 1;
        self.parked.insert((due_ms, self.seq), job);
    }

    /// Takes every job due at `now_ms`, in `(due, seq)` order (rule 4).
    pub fn take_due(&mut self, now_ms: u64) -> Vec<ClientOffboardingJob> {
        let later = self.parked.split_off(&(now_ms.saturating_add(1), 0));
        std::mem::replace(&mut self.parked, later).into_values().collect()
    }

    /// Takes every parked job, due or not, in order (shutdown hands them back).
    pub fn take_all(&mut self) -> Vec<ClientOffboardingJob> {
        std::mem::take(&mut self.parked).into_values().collect()
    }

    /// The parked jobs in order, with the time each is due.
    pub fn parked(&self) -> impl Iterator<Item = (u64, &ClientOffboardingJob)> + '_ {
        self.parked.iter().map(|((due, _), job)| (*due, job))
    }

    /// Jobs parked.
    pub fn len(&self) -> usize {
        self.parked.len()
    }

    /// Whether no job is parked.
    pub fn is_empty(&self) -> bool {
        self.parked.is_empty()
    }

    /// May an attempt of `job` start at `now_ms`? A retry may; a first attempt takes a start
    /// token (rule 1). `Some(job)`: run it now. `None`: it found no token and is parked until
    /// the bucket next holds one (rule 2).
    pub fn admit(&mut self, job: ClientOffboardingJob, now_ms: u64, limits: &Limits) -> Option<ClientOffboardingJob> {
        if job.attempts() > 0 {
            return Some(job);
        }
        let bucket = self
            .bucket
            .get_or_insert_with(|| TokenBucket::new(limits.rate_per_sec, limits.burst, now_ms));
        if bucket.try_take(now_ms) {
            return Some(job);
        }
        let due = bucket.next_token_ms(now_ms);
        self.park(job, due);
        None
    }

    /// Parks `job`, whose attempt just failed, on the backoff schedule and counts the failure
    /// (rule 3).
    pub fn retry(&mut self, job: ClientOffboardingJob, now_ms: u64, limits: &Limits) -> Retry {
        let (client, incarnation) = (job.client(), job.incarnation());
        let step = job.last_error().map_or(Step::Metadata, |e| e.step);
        let attempt = job.attempts();
        let delay = ClientOffboardingJob::backoff_ms(attempt, limits.retry_backoff_ms, limits.retry_max_backoff_ms);
        let due_ms = now_ms.saturating_add(delay);
        crate::telemetry::step_failed(step);
        self.park(job, due_ms);
        Retry {
            client,
            incarnation,
            step,
            attempt,
            due_ms,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::offboarding::{complete_client_offboarding, CleanupError, OffboardingSteps, Progress};

    const LIMITS: Limits = Limits {
        rate_per_sec: 2.0,
        burst: 1,
        retry_backoff_ms: 100,
        retry_max_backoff_ms: 250,
    };

    struct FailAt(Step);

    impl OffboardingSteps for FailAt {
        fn run_step(&mut self, step: Step, _job: &mut ClientOffboardingJob) -> Result<Progress, CleanupError> {
            if step == self.0 {
                Err(CleanupError::new(step, "injected"))
            } else {
                Ok(Progress::Done)
            }
        }
    }

    #[test]
    fn first_attempts_queue_for_tokens_in_order_and_retries_take_none() {
        let (registry, mut jobs) = crate::offboarding::job::tests_support::jobs(3);
        let mut s = Schedule::new();
        let (c, b, a) = (jobs.pop().unwrap(), jobs.pop().unwrap(), jobs.pop().unwrap());
        let a = s.admit(a, 1_000, &LIMITS).expect("the burst's one token");
        assert!(s.admit(b, 1_000, &LIMITS).is_none());
        assert!(s.admit(c, 1_000, &LIMITS).is_none());
        let parked: Vec<u64> = s.parked().map(|(due, _)| due).collect();
        assert_eq!(parked, [1_500, 1_500], "2 per second: the next token at +500 ms");
        assert!(s.take_due(1_499).is_empty());
        let due = s.take_due(1_500);
        assert_eq!(due.len(), 2);
        let mut due = due.into_iter();
        let b = s.admit(due.next().unwrap(), 1_500, &LIMITS).expect("first in line");
        assert!(
            s.admit(due.next().unwrap(), 1_500, &LIMITS).is_none(),
            "one token at +500 ms"
        );
        assert_eq!(s.parked().map(|(due, _)| due).collect::<Vec<_>>(), [2_000]);

        // A failed attempt is parked on the backoff and needs no token to run again.
        let mut fail = FailAt(Step::Segments);
        let a = complete_client_offboarding(&mut fail, &registry, a).unwrap_err();
        let (client, incarnation) = (a.client(), a.incarnation());
        let r = s.retry(a, 1_500, &LIMITS);
        let want = Retry {
            client,
            incarnation,
            step: Step::Segments,
            attempt: 1,
            due_ms: 1_600,
        };
        assert_eq!(r, want);
        let a = s.take_due(1_600).pop().expect("due");
        let a = complete_client_offboarding(&mut fail, &registry, a).unwrap_err();
        assert_eq!(s.retry(a, 1_600, &LIMITS).due_ms, 1_800, "doubles");
        let a = s.take_due(1_800).pop().expect("due");
        let a = s.admit(a, 1_800, &LIMITS).expect("a retry takes no token");
        let a = complete_client_offboarding(&mut fail, &registry, a).unwrap_err();
        assert_eq!(s.retry(a, 1_800, &LIMITS).due_ms, 2_050, "capped at 250 ms");
        drop(b);
        assert_eq!(s.len(), 2);
        assert_eq!(s.take_all().len(), 2);
        assert!(s.is_empty());
    }

    #[test]
    fn jobs_parked_at_one_time_leave_in_the_order_they_came() {
        let (_registry, jobs) = crate::offboarding::job::tests_support::jobs(4);
        let ids: Vec<_> = jobs.iter().map(|j| j.client()).collect();
        let mut s = Schedule::new();
        for (j, due) in jobs.into_iter().zip([20, 10, 20, 10]) {
            s.park(j, due);
        }
        let order: Vec<_> = s.take_due(20).iter().map(|j| j.client()).collect();
        assert_eq!(order, [ids[1], ids[3], ids[0], ids[2]]);
    }
}
