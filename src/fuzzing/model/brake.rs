//! The model's mass-suspicion brake (decisions.md, "Mass offboarding"): when at least
//! `mass_suspicion_min_clients` clients are Suspected and they are more than
//! `mass_suspicion_fraction` of all registered clients, Suspected → Offline commits pause and
//! an event says so, until the condition clears; then each paused client gets a fresh
//! suspicion window.
//!
//! Read as the monitor decides it, once per tick before the tick's transitions: "registered"
//! counts every live incarnation (an Offline one whose job is pending included), "Suspected"
//! the incarnations in that state when the tick starts. A paused client is one whose Offline
//! commit fell due while the brake was engaged; at the release, each of them that is still
//! Suspected (same incarnation) gets the window `[release, release + suspicion TTL)`, unless
//! its window already ends later (it recovered and was suspected again since: a renewal never
//! shortens a window).

use super::{Ev, Model, State};
use std::collections::BTreeSet;

/// The brake's configuration and state.
#[derive(Clone, Debug, Default)]
pub(crate) struct Brake {
    /// `(min clients, fraction in quarters)`; `None`: the brake is disabled.
    pub(crate) config: Option<(usize, usize)>,
    pub(crate) engaged: bool,
    /// (client, incarnation) whose Offline commit was paused.
    pub(crate) held: BTreeSet<(usize, u64)>,
}

impl Model {
    /// The brake's decision at the tick at `now` (an engage or release event, if it changed).
    pub(crate) fn brake_at(&mut self, now: u64) -> Option<Ev> {
        let (min, quarters) = self.brake.config?;
        let live = || self.clients.iter().filter_map(|c| c.rec.as_ref());
        let registered = live().count();
        let suspected = live().filter(|r| r.state == State::Suspected).count();
        // suspected > fraction · registered, with fraction = quarters / 4.
        let should = suspected >= min && suspected * 4 > quarters * registered;
        if should == self.brake.engaged {
            return None;
        }
        self.brake.engaged = should;
        if !should {
            for (c, inc) in std::mem::take(&mut self.brake.held) {
                let ttl = self.cfg.suspicion_ttl_ms;
                if let Some(rec) = self.clients[c].rec.as_mut() {
                    // A renewal never shortens a window (one started since the pause may
                    // be longer).
                    if rec.incarnation == inc && rec.state == State::Suspected && now + ttl > rec.deadline {
                        rec.deadline = now + ttl;
                        rec.suspicion_ttl = ttl;
                    }
                }
            }
        }
        Some(Ev::Brake {
            at: now,
            engaged: should,
            suspected,
            registered,
        })
    }

    /// Client `c`'s Offline commit fell due at a tick while the brake is engaged: paused.
    pub(crate) fn hold(&mut self, c: usize) -> bool {
        if !self.brake.engaged {
            return false;
        }
        let inc = self.clients[c].rec.as_ref().map_or(0, |r| r.incarnation);
        self.brake.held.insert((c, inc));
        true
    }

    /// A failover: the restored master's monitor starts with the brake released and nothing
    /// held (every restored client is Active).
    pub(crate) fn reset_brake(&mut self) {
        self.brake.engaged = false;
        self.brake.held.clear();
    }
}
