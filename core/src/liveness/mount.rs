//! The mount protocol in two halves, for callers that cannot hand the mount work over as a
//! closure (an embedder across a C ABI runs its segment registration between the halves).
//!
//! [`Liveness::begin_mount`] decides which incarnation the work binds to, or refuses;
//! [`Liveness::commit_mount`] commits the liveness signal after the work succeeded; dropping the
//! [`PendingMount`] instead is the abort (a failed mount signals nothing, recovers nobody and
//! creates nothing). [`Liveness::mount`] is exactly `begin` → work → `commit`.
//!
//! # Ground rules
//!
//! - `begin` takes no lock: a registry lookup. For a new client it makes a record that nobody
//!   else can see until `commit` publishes it (insert-if-still-vacant, so of two concurrent
//!   first mounts one publishes and the other gets [`LostReason::Raced`]).
//! - `commit` of a known incarnation is one signal CAS on its word: if the monitor committed
//!   Offline while the work ran, the CAS is refused and the caller gets
//!   [`LostReason::WentOffline`] and must undo its work (the Offline commit is never undone).
//! - Between the halves nothing is held: no lock, no reservation. The work must register its
//!   resources where offboarding will find them *before* `commit`, so that an Offline commit
//!   that wins either sees them or makes the mount `Lost`.

use super::record::{Applied, ClientLivenessRecord};
use super::{Cause, ClientId, Incarnation, Liveness, LostReason, Slot, Transition};
use crate::sync::Arc;

/// Why [`Liveness::begin_mount`] refused: the mount work must not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MountRefused {
    /// The previous incarnation is Offline and still being offboarded (the remount barrier).
    Offboarding(Incarnation),
    /// The caller's incarnation token is not the current incarnation (`NEED_REMOUNT`).
    StaleToken,
}

/// A mount between its two halves: the incarnation the work binds to. Drop it to abort.
#[derive(Debug)]
#[must_use = "commit the mount after its work succeeded, or drop it to abort"]
pub struct PendingMount {
    record: Arc<ClientLivenessRecord>,
    /// `Some(last)` when the record is new and must be published over `Vacant(last)` (`None`
    /// inside: over nothing); `None` when it is the current incarnation already.
    publish_over: Option<Option<Incarnation>>,
}

impl PendingMount {
    /// The incarnation the mount work must bind its resources to.
    pub fn record(&self) -> &Arc<ClientLivenessRecord> {
        &self.record
    }

    /// `true` if committing creates a new incarnation.
    pub fn creates(&self) -> bool {
        self.publish_over.is_some()
    }
}

/// A committed mount.
#[derive(Debug)]
pub struct MountCommitted {
    /// The incarnation the work ran for (now current and Active).
    pub record: Arc<ClientLivenessRecord>,
    /// `true` if this mount created the incarnation.
    pub created: bool,
    /// `Some` if this mount recovered a Suspected incarnation.
    pub recovered: Option<Transition>,
}

impl Liveness {
    /// First half of a mount: the incarnation its work must bind to, or why it must not run.
    /// Lock-free; nothing is held until [`Liveness::commit_mount`] or the drop of the [`PendingMount`].
    pub fn begin_mount(&self, client: ClientId, token: Option<Incarnation>) -> Result<PendingMount, MountRefused> {
        match self.registry.slot(client) {
            Some(Slot::Live(rec)) => {
                if token.is_some_and(|t| t != rec.incarnation()) {
                    return Err(MountRefused::StaleToken);
                }
                if !rec.should_retain() {
                    return Err(MountRefused::Offboarding(rec.incarnation()));
                }
                Ok(PendingMount {
                    record: rec,
                    publish_over: None,
                })
            }
            Some(Slot::Vacant(last)) => self.begin_new(client, Some(last), token),
            None => self.begin_new(client, None, token),
        }
    }

    fn begin_new(
        &self,
        client: ClientId,
        last: Option<Incarnation>,
        token: Option<Incarnation>,
    ) -> Result<PendingMount, MountRefused> {
        if token.is_some() {
            // The token names an incarnation that no longer exists: the client must mount
            // without one to start a new incarnation.
            return Err(MountRefused::StaleToken);
        }
        let Some(incarnation) = last.map_or(Some(Incarnation::FIRST), Incarnation::next) else {
            // No incarnation can follow the last one (a crafted snapshot is the only way there:
            // restore refuses `Incarnation::LAST` itself). Refused as a token that cannot be
            // honoured (`INVALID_PARAMS` from the master) rather than reusing a number.
            return Err(MountRefused::StaleToken);
        };
        let now = self.clock.now();
        let record = Arc::new(ClientLivenessRecord::new(
            client,
            incarnation,
            now,
            self.ttls().active_ms,
        ));
        Ok(PendingMount {
            record,
            publish_over: Some(last),
        })
    }

    /// Second half of a mount whose work succeeded: commits the liveness signal (and publishes a
    /// new incarnation). `Err` means the work cannot be kept and the caller must undo it.
    pub fn commit_mount(&self, pending: PendingMount) -> Result<MountCommitted, LostReason> {
        let PendingMount { record, publish_over } = pending;
        let Some(last) = publish_over else {
            return match record.signal_at(|| self.clock.now(), self.ttls()) {
                Applied::Offline => Err(LostReason::WentOffline),
                applied => Ok(MountCommitted {
                    recovered: self.recovery(&record, &applied, Cause::RecoveredByMount),
                    record,
                    created: false,
                }),
            };
        };
        // The first signal is the mount itself; refresh it to the time the work finished.
        record.signal_at(|| self.clock.now(), self.ttls());
        match self.registry.publish(record.clone(), last) {
            Ok(()) => {
                self.inbox
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(record.clone());
                Ok(MountCommitted {
                    record,
                    created: true,
                    recovered: None,
                })
            }
            Err(super::registry::PublishError::Raced) => Err(LostReason::Raced),
        }
    }
}

#[cfg(all(test, not(loom)))]
pub(crate) mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};
    use crate::config::LivenessConfig;
    use crate::sync::CellArc;

    pub(crate) fn live() -> (CellArc<ManualClock>, Liveness) {
        let clock = CellArc::new(ManualClock::new(0));
        let config = LivenessConfig {
            active_ttl_ms: 1_000,
            suspicion_ttl_ms: 1_000,
            monitor_tick_ms: 100,
            ..LivenessConfig::default()
        };
        let dyn_clock: CellArc<dyn Clock> = clock.clone();
        (clock, Liveness::new(dyn_clock, config))
    }

    #[test]
    fn abort_creates_nothing_and_commit_publishes() {
        let (_, l) = live();
        let p = l.begin_mount(ClientId(1), None).unwrap();
        assert!(p.creates());
        drop(p);
        assert!(
            l.registry().slot(ClientId(1)).is_none(),
            "an aborted first mount leaves no trace"
        );
        let c = l.commit_mount(l.begin_mount(ClientId(1), None).unwrap()).unwrap();
        assert!(c.created && c.record.is_serving());
        assert_eq!(
            l.begin_mount(ClientId(1), Some(Incarnation(9))).unwrap_err(),
            MountRefused::StaleToken
        );
        assert!(!l.begin_mount(ClientId(1), Some(Incarnation(1))).unwrap().creates());
    }

    #[test]
    fn concurrent_first_mounts_one_publishes() {
        let (_, l) = live();
        let a = l.begin_mount(ClientId(2), None).unwrap();
        let b = l.begin_mount(ClientId(2), None).unwrap();
        assert!(l.commit_mount(a).is_ok());
        assert_eq!(l.commit_mount(b).unwrap_err(), LostReason::Raced);
    }
}
