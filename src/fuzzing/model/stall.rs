//! Master stalls in the model (invariant 5): a tick later than the stall bound credits the
//! whole gap since the previous tick to the liveness clock, so no client is charged for time the
//! master did not run.
//!
//! The model keeps its times on the base clock. A credit of `gap` moves every liveness-clock
//! time of every live incarnation `gap` later on the base clock (its last signal, the tick that
//! committed Suspected, its window's deadline): liveness time is base time minus the credit.
//! Offboarding schedules (job due times, the start bucket) stay on the base clock, as the
//! master keeps them. A failover re-bases everything at the restore, so the credit needs no
//! snapshot.

use super::Model;

impl Model {
    /// The tick at `tau` after the previous one at `last`: if the stall brake is on and the tick
    /// is more than the bound late, the gap is credited. Returns the gap credited, if any.
    pub(crate) fn stall_check(&mut self, tau: u64) -> Option<u64> {
        let last = std::mem::replace(&mut self.last_tick, tau);
        let bound = self.cfg.active_ttl_ms / 2; // the harness's `stall_bound_ms`
        let lateness = tau.saturating_sub(last + self.cfg.tick_ms);
        if !self.cfg.stall_brake || lateness <= bound {
            return None;
        }
        let gap = tau - last;
        for rec in self.clients.iter_mut().filter_map(|c| c.rec.as_mut()) {
            rec.last_signal += gap;
            rec.suspected_at += gap;
            rec.deadline += gap;
        }
        Some(gap)
    }
}
