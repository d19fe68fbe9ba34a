//! The mass-suspicion brake's state (decisions.md): while more than a configured fraction of
//! the registered incarnations (and at least a minimum number) are Suspected, Suspected →
//! Offline commits pause; when the condition clears, every paused incarnation gets a fresh
//! suspicion window. The monitor decides engagement once per tick from two relaxed counters.

use crate::clock::LivenessMs;
use crate::liveness::record::Evaluation;
use crate::liveness::{ClientId, ClientLivenessRecord, Incarnation, Ttls};
use crate::sync::Arc;
use std::collections::BTreeMap;

/// Engagement and the incarnations whose Offline commit was held.
#[derive(Debug, Default)]
pub(super) struct MassSuspicionBrake {
    engaged: bool,
    held: BTreeMap<(ClientId, Incarnation), Arc<ClientLivenessRecord>>,
}

impl MassSuspicionBrake {
    pub(super) fn engaged(&self) -> bool {
        self.engaged
    }

    pub(super) fn engage(&mut self) {
        self.engaged = true;
    }

    /// Remembers a held incarnation (once, however often it is held).
    pub(super) fn hold(&mut self, rec: Arc<ClientLivenessRecord>) {
        self.held.insert((rec.client(), rec.incarnation()), rec);
    }

    /// Releases: each held incarnation that is still Suspected starts a fresh suspicion window
    /// at `now_l`, unless its window already ends later (it recovered and was suspected again
    /// since; a renewal never shortens a window, `liveness::word::decide`). Their wheel entries
    /// stay armed; the next firing re-reads the word.
    pub(super) fn release(&mut self, now_l: LivenessMs, ttls: Ttls) -> usize {
        self.engaged = false;
        let held = std::mem::take(&mut self.held);
        held.values()
            .filter(|rec| matches!(rec.renew_suspicion(now_l, ttls), Evaluation::Renewed { .. }))
            .count()
    }
}
