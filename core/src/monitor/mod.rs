//! The liveness monitor: a hierarchical timer wheel of hints over the records' words.
//!
//! # How a tick works
//!
//! 1. **Stall brake** (invariant 5). The monitor knows when it last ran. If this tick runs more
//!    than `stall_bound_ms` after it was scheduled, the master itself did not run: the whole gap
//!    since the last tick is added to the [`LivenessClock`](crate::clock::LivenessClock)'s
//!    stall credit, which moves every deadline later by the gap in O(1), and a
//!    [`LivenessEvent::StallDetected`] is reported. No client is charged for it.
//! 2. New records (published by mounts since the last tick) are armed at their deadline.
//! 3. The wheel yields the entries whose tick is due — O(entries due), not O(clients).
//! 4. For each, the monitor **re-reads the word** (the truth; the wheel is only a hint) and
//!    applies `Event::Expire` by CAS: commit Active → Suspected (re-arm at the suspicion
//!    deadline), commit Suspected → Offline (mint the one offboarding job), or — because a
//!    ping moved the deadline — re-arm the entry at the deadline the word now holds (lazy
//!    rescheduling, as tokio's timer does). Ping never touches the wheel.
//!
//! # Timing
//!
//! Ticks are at multiples of `monitor_tick_ms` on the liveness clock; the entry of a deadline
//! `d` sits in tick `⌊d / tick⌋` and is re-armed at the next tick while `now < d`, so a
//! transition commits at the first tick with `now ≥ d`: never early, at most one tick late
//! (invariant 4). Suspicion starts at the committing tick (invariant 3).
//!
//! Lazy re-arming works because a signal only moves an Active deadline *later*. The one signal
//! that moves a deadline earlier is a recovery (Suspected → Active at `r`, due again at
//! `r + active TTL`, possibly before the suspicion deadline the entry sleeps on), so a Suspected
//! entry never sleeps longer than one active TTL: it wakes at
//! `min(suspicion deadline, now + active TTL)`, which is never after `r + active TTL`.
//!
//! The monitor is single-owner data (`&mut self`): it runs on a background thread
//! ([`MonitorThread`]) with the system clock, or is stepped by hand on a manual clock (tests,
//! replay, loom).
//!
//! Owns: the wheel, the tick, the stall and mass-suspicion brakes. It changes a word only through
//! the record's CAS loops (`Event::Expire`) and may not touch any master table: the jobs its
//! Offline commits mint go back to the caller in [`TickReport`].

mod brake;
mod lookahead;
#[cfg(not(loom))]
mod thread;
pub(crate) mod wheel;

#[cfg(not(loom))]
pub use thread::MonitorThread;

use crate::clock::{BaseMs, LivenessMs, Tick};
use crate::liveness::record::Evaluation;
use crate::liveness::{Cause, ClientLivenessRecord, Liveness, LivenessState, Transition, Ttls, Word};
use crate::offboarding::ClientOffboardingJob;
use crate::sync::Arc;
use std::fmt;
use wheel::Wheel;

/// Something the monitor committed or detected, in the order it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LivenessEvent {
    /// A committed state change.
    Transition(Transition),
    /// The master stalled for `ms`; every deadline was extended by it.
    StallDetected {
        /// Base-clock time the master resumed.
        at_ms: u64,
        /// The stall charged to the master.
        ms: u64,
    },
    /// The mass-suspicion brake engaged (Suspected → Offline commits pause) or released (each
    /// paused incarnation got a fresh suspicion window).
    MassSuspicionBrake {
        /// Base-clock time.
        at_ms: u64,
        /// `true` when it engaged, `false` when it released.
        engaged: bool,
        /// Suspected incarnations at that moment.
        suspected: usize,
        /// Registered incarnations at that moment.
        registered: usize,
    },
}

/// What one tick produced.
#[derive(Debug, Default)]
pub struct TickReport {
    /// Events in commit order.
    pub events: Vec<LivenessEvent>,
    /// One job per incarnation this tick committed Offline.
    pub jobs: Vec<ClientOffboardingJob>,
}

/// Counters kept by the monitor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MonitorStats {
    /// Ticks run.
    pub ticks: u64,
    /// Wheel entries examined (due entries re-read).
    pub entries_examined: u64,
    /// Active → Suspected commits.
    pub suspected: u64,
    /// Suspected → Offline commits.
    pub offline: u64,
    /// Stalls detected.
    pub stalls: u64,
    /// Total stall time credited, ms.
    pub stall_ms: u64,
    /// Times the mass-suspicion brake engaged.
    pub brake_engagements: u64,
    /// Offline commits held back by the brake (counted per evaluation).
    pub offline_held: u64,
}

/// The monitor: owns the wheel; the records' words are the truth.
pub struct Monitor {
    wheel: Wheel<Arc<ClientLivenessRecord>>,
    tick_ms: u64,
    /// Base-clock time of the last tick (the stall detector's).
    last_tick_base: BaseMs,
    /// Liveness-clock time of the last tick (a signal after it is at least this late).
    last_tick_l: LivenessMs,
    /// The TTLs the wheel's entries were armed under (see [`Monitor::follow_ttl_reload`]).
    armed: Ttls,
    due: Vec<Arc<ClientLivenessRecord>>,
    brake: brake::MassSuspicionBrake,
    stats: MonitorStats,
}

/// The time of one tick, in the forms the evaluation needs.
#[derive(Clone, Copy, Debug)]
struct Now {
    /// Liveness-clock time: deadlines are compared with it.
    l: LivenessMs,
    /// The tick being processed.
    tick: Tick,
    /// Base-clock time: events are stamped with it.
    base: BaseMs,
    ttls: Ttls,
    /// The mass-suspicion brake is engaged.
    hold: bool,
}

impl Monitor {
    /// A monitor for `liveness`, starting now. The tick length is fixed at construction.
    pub fn new(liveness: &Liveness) -> Self {
        let tick_ms = liveness.config().load().monitor_tick_ms.max(1);
        let now_l = liveness.clock().now();
        Self {
            wheel: Wheel::new(Tick::of(now_l, tick_ms)),
            tick_ms,
            last_tick_base: liveness.clock().base_now(),
            last_tick_l: now_l,
            armed: liveness.ttls(),
            due: Vec::new(),
            brake: brake::MassSuspicionBrake::default(),
            stats: MonitorStats::default(),
        }
    }

    /// The tick length, ms.
    pub fn tick_ms(&self) -> u64 {
        self.tick_ms
    }

    /// Counters so far.
    pub fn stats(&self) -> MonitorStats {
        self.stats
    }

    /// Entries in the wheel (one per Active or Suspected incarnation).
    pub fn armed(&self) -> usize {
        self.wheel.len()
    }

    /// Runs one tick at the clock's current time.
    pub fn tick(&mut self, liveness: &Liveness) -> TickReport {
        let mut report = TickReport::default();
        let base_now = liveness.clock().base_now();
        self.stats.ticks += 1;
        self.check_stall(liveness, base_now, &mut report);
        // After the stall's credit: the liveness time of this same base reading.
        let now_l = liveness.clock().to_liveness(base_now);
        let now_tick = Tick::of(now_l, self.tick_ms);
        for rec in liveness.take_new_records() {
            let deadline = rec.word().deadline();
            self.wheel.insert(Tick::of(deadline, self.tick_ms), rec);
        }
        let lowest = liveness.config().take_lowest_ttls();
        let ttls = liveness.ttls();
        self.follow_ttl_reload(ttls, lowest, now_l);
        let hold = self.update_brake(liveness, now_l, base_now, ttls, &mut report);
        let now = Now {
            l: now_l,
            tick: now_tick,
            base: base_now,
            ttls,
            hold,
        };
        let mut due = std::mem::take(&mut self.due);
        self.wheel.poll_expired(now_tick, &mut due);
        for rec in lookahead::Lookahead::new(due.drain(..)) {
            self.stats.entries_examined += 1;
            self.evaluate(liveness, rec, now, &mut report);
        }
        self.due = due;
        report
    }

    /// A reload that shortened the active TTL: a recovery since the last tick starts an Active
    /// window ending as early as that tick + the new TTL, earlier than a Suspected entry armed
    /// under the old TTL (at commit + the old TTL at the latest) would wake. Likewise a shorter
    /// suspicion TTL: a brake release renews paused entries with it, and they sleep up to the
    /// shorter old TTL (`Evaluation::Held`). Windows already started keep their TTL (a signal
    /// only moves a deadline later), so pulling every entry in to that tick + the shorter new
    /// TTL once is simpler than finding the few that could be late and only makes some fire
    /// early (O(entries), once per such reload). Found by the differential fuzz target
    /// (`finding_ttl_shrink_delays_suspicion_after_recovery`).
    ///
    /// `lowest` holds the shortest TTLs published since the last tick: a reload that shortens a
    /// TTL and another that lengthens it again before this tick leave `ttls` unchanged, yet a
    /// recovery between them started a short window (found by the fuzzer again,
    /// `finding_brief_ttl_shrink_delays_suspicion_after_recovery`).
    ///
    /// A Suspected entry sleeps up to one armed active TTL, a held one up to the shorter armed
    /// TTL: a new recovery window shorter than the first, or a renewal shorter than the second,
    /// could end before the entry wakes.
    fn follow_ttl_reload(&mut self, ttls: Ttls, lowest: Ttls, now_l: LivenessMs) {
        let active = ttls.active_ms.min(lowest.active_ms);
        let suspicion = ttls.suspicion_ms.min(lowest.suspicion_ms);
        if active < self.armed.active_ms || suspicion < shorter_ttl(self.armed) {
            let limit = self.last_tick_l.saturating_add(active.min(suspicion));
            self.wheel.pull_in(Tick::of(limit, self.tick_ms));
        }
        self.armed = ttls;
        self.last_tick_l = now_l;
    }

    /// Engages or releases the mass-suspicion brake; returns whether it holds Offline commits.
    fn update_brake(
        &mut self,
        liveness: &Liveness,
        now_l: LivenessMs,
        base_now: BaseMs,
        ttls: Ttls,
        report: &mut TickReport,
    ) -> bool {
        let config = liveness.config().load();
        let (suspected, registered) = (liveness.suspected_count(), liveness.registry().len());
        let should = config.mass_suspicion_brake
            && suspected >= config.mass_suspicion_min_clients
            && suspected as f64 > config.mass_suspicion_fraction * registered as f64;
        if should == self.brake.engaged() {
            return should;
        }
        if should {
            self.stats.brake_engagements += 1;
            self.brake.engage();
            tracing::warn!(
                suspected,
                registered,
                "mass-suspicion brake engaged: Offline commits paused"
            );
        } else {
            self.brake.release(now_l, ttls);
            tracing::info!(
                suspected,
                registered,
                "mass-suspicion brake released: fresh suspicion windows"
            );
        }
        report.events.push(LivenessEvent::MassSuspicionBrake {
            at_ms: base_now.0,
            engaged: should,
            suspected,
            registered,
        });
        should
    }

    fn check_stall(&mut self, liveness: &Liveness, base_now: BaseMs, report: &mut TickReport) {
        let last = std::mem::replace(&mut self.last_tick_base, base_now);
        let config = liveness.config().load();
        let lateness = base_now.since(last.saturating_add(self.tick_ms));
        if !config.stall_brake || lateness <= config.stall_bound_ms {
            return;
        }
        let gap = base_now.since(last);
        liveness.clock().add_stall_ms(gap);
        self.stats.stalls += 1;
        self.stats.stall_ms += gap;
        tracing::warn!(stall_ms = gap, "master stall detected; deadlines extended");
        report.events.push(LivenessEvent::StallDetected {
            at_ms: base_now.0,
            ms: gap,
        });
    }

    fn evaluate(&mut self, liveness: &Liveness, rec: Arc<ClientLivenessRecord>, now: Now, report: &mut TickReport) {
        match rec.evaluate(now.l, now.ttls, now.hold) {
            // A renewal is the brake release's (`brake.rs`), never an expiry's; like a wait, it
            // only re-arms.
            Evaluation::Wait { word } | Evaluation::Renewed { to: word, .. } => {
                self.rearm(rec, wake(word, now.l, now.ttls), now.tick)
            }
            Evaluation::Suspected { from, to } => {
                self.stats.suspected += 1;
                liveness.note_suspected(1);
                report.events.push(transition(&rec, from, to, Cause::Timeout, now.base));
                self.rearm(rec, wake(to, now.l, now.ttls), now.tick);
            }
            Evaluation::Offline { from, to, proof } => {
                self.stats.offline += 1;
                liveness.note_suspected(-1);
                report.events.push(transition(&rec, from, to, Cause::Timeout, now.base));
                report
                    .jobs
                    .push(ClientOffboardingJob::from_commit(rec, proof, now.base));
            }
            Evaluation::Held => {
                // Parked for renewal at release; armed the shorter TTL out: a recovery from now
                // is due again one active TTL after it, a release renews the suspicion window
                // to one suspicion TTL after it, and neither may be later than the wake-up
                // (nothing tells the wheel of either). Waking one active TTL out made Offline
                // late after a release whenever the suspicion TTL was the shorter (invariant 4,
                // `monitor_brakes::a_client_paused_by_the_mass_suspicion_brake_goes_offline_on_time_after_the_release`).
                self.stats.offline_held += 1;
                self.brake.hold(rec.clone());
                self.rearm(rec, now.l.saturating_add(shorter_ttl(now.ttls)), now.tick);
            }
            Evaluation::Retired => {}
        }
    }

    /// Re-arms at the deadline's tick, but never at or before the tick being processed.
    fn rearm(&mut self, rec: Arc<ClientLivenessRecord>, deadline: LivenessMs, now_tick: Tick) {
        let at = Tick::of(deadline, self.tick_ms).max(Tick(now_tick.0 + 1));
        self.wheel.insert(at, rec);
    }
}

/// The shorter of the two TTLs: the longest a paused (brake-held) entry may sleep.
fn shorter_ttl(ttls: Ttls) -> u64 {
    ttls.active_ms.min(ttls.suspicion_ms)
}

/// When the entry of a record whose word is `word` must next wake, on the liveness clock.
///
/// Active: its deadline (signals only move it later, which lazy re-arming handles). Suspected:
/// the suspicion deadline, but no later than one active TTL from now — a recovery at any time
/// `r ≥ now` sets an Active deadline `r + active TTL`, and the entry must not sleep past it, since
/// nothing tells the wheel about a recovery (Ping never touches the wheel).
fn wake(word: Word, now_l: LivenessMs, ttls: Ttls) -> LivenessMs {
    match word.state() {
        LivenessState::Suspected => word.deadline().min(now_l.saturating_add(ttls.active_ms)),
        _ => word.deadline(),
    }
}

/// The event of a committed transition, stamped with base-clock time (event times are the
/// base clock's; deadlines are the liveness clock's).
fn transition(rec: &ClientLivenessRecord, from: Word, to: Word, cause: Cause, at: BaseMs) -> LivenessEvent {
    let at_ms = at.0;
    let t = Transition {
        client: rec.client(),
        incarnation: rec.incarnation(),
        from: from.state(),
        to: to.state(),
        cause,
        at_ms,
    };
    tracing::info!(client = %t.client, incarnation = t.incarnation.0, from = %t.from, to = %t.to, at_ms, "liveness transition");
    LivenessEvent::Transition(t)
}

impl fmt::Debug for Monitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Monitor")
            .field("tick_ms", &self.tick_ms)
            .field("armed", &self.wheel.len())
            .field("stats", &self.stats)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Monitor;
    use crate::liveness::{ClientId, Incarnation, LostReason, MountRefused};

    /// The mount's two halves against the monitor: an Offline commit between them loses the
    /// mount, and the Offline record then bars a new one (here, beside the monitor, so that
    /// `liveness` never names the monitor, not even in a test).
    #[test]
    fn offline_between_the_halves_loses_the_mount_and_then_bars_it() {
        let (clock, l) = crate::liveness::test_liveness();
        let mut m = Monitor::new(&l);
        let _ = l.commit_mount(l.begin_mount(ClientId(3), None).unwrap()).unwrap();
        m.tick(&l);
        let pending = l.begin_mount(ClientId(3), None).unwrap();
        let mut jobs = Vec::new();
        for _ in 0..25 {
            clock.advance_ms(100);
            jobs.extend(m.tick(&l).jobs);
        }
        assert_eq!(jobs.len(), 1);
        assert_eq!(l.commit_mount(pending).unwrap_err(), LostReason::WentOffline);
        assert_eq!(
            l.begin_mount(ClientId(3), None).unwrap_err(),
            MountRefused::Offboarding(Incarnation(1))
        );
    }
}
