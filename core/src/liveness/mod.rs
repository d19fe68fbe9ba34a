//! Client liveness: per-incarnation records, the registry, and the signal paths.
//!
//! ```text
//!              active TTL without a signal          suspicion TTL since the commit
//!   Active ──────────────────────────────▶ Suspected ──────────────────────────▶ Offline
//!     ▲                                         │                          (terminal for the
//!     └────────── liveness signal ──────────────┘                           incarnation)
//! ```
//!
//! # Ground rules
//!
//! - The truth is each record's word (`record.rs`, layout in `word.rs`); everything else — the
//!   monitor's wheel, the registry's maps, readiness — is derived from it or independent of it.
//! - Signals ([`Liveness::ping`], [`Liveness::mount`]) are lock-free: a registry lookup (no lock)
//!   and one CAS loop on the word. Ping never touches the monitor's wheel.
//! - A new incarnation is created only by a mount whose work succeeded, and is then handed to
//!   the monitor through a short inbox (the only lock here; Ping never takes it).
//! - Time is the [`LivenessClock`]: base time minus detected master stalls.
//!
//! Owns: the words, the records, the registry and the signal paths. Imports `sync`, `clock` and
//! `config` only (its tests also drive a `Monitor`); may not touch the monitor's wheel, telemetry
//! or offboarding: an Offline commit yields the proof a job is minted from, nothing more.

mod mount;
mod owner;
pub mod record;
pub mod registry;
mod slab;
pub mod word;

/// A liveness core on a manual clock at 0 (1 s TTLs, 100 ms ticks), for other modules' tests.
#[cfg(all(test, not(loom)))]
pub(crate) use mount::tests::live as test_liveness;
pub use mount::{MountCommitted, MountRefused, PendingMount};
pub use owner::Owner;
pub use record::{Applied, ClientLivenessRecord};
pub use registry::{Registry, Slot, DEFAULT_SHARDS};
pub use word::{Change, LivenessState, Seq, Ttls, Word};

use crate::clock::{Clock, LivenessClock};
use crate::config::{ConfigHandle, LivenessConfig};
use crate::sync::{Arc, AtomicU64, AtomicUsize, CachePadded, CellArc, Mutex, Ordering};
use std::fmt;

/// A client id (Mooncake's UUID pair as one `u128`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub struct ClientId(pub u128);

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

/// A client incarnation number: 1 for a client id's first record, +1 for each later one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub struct Incarnation(pub u64);

impl Incarnation {
    /// The first incarnation of a client id.
    pub const FIRST: Incarnation = Incarnation(1);

    /// The last incarnation a client may have: nothing can follow it, so a snapshot naming it
    /// is refused at restore ([`crate::persist::restore_clients`]), and live mounting would
    /// need 2^64 − 1 incarnations of one client to reach it.
    pub const LAST: Incarnation = Incarnation(u64::MAX);

    /// The incarnation after this one; none after [`Incarnation::LAST`] (a saturated successor
    /// would equal its predecessor, and a token of the old incarnation would match the new one).
    pub fn next(self) -> Option<Incarnation> {
        self.0.checked_add(1).map(Incarnation)
    }
}

impl fmt::Display for Incarnation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Ping's wire answer (unchanged RPC schema).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum PingStatus {
    /// Active and ready.
    #[serde(rename = "OK")]
    Ok,
    /// Unknown, Offline, stale token, or alive but not (re)mounted yet.
    #[serde(rename = "NEED_REMOUNT")]
    NeedRemount,
}

/// What caused a transition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// A deadline passed (the monitor committed it).
    Timeout,
    /// A Ping recovered a Suspected incarnation.
    RecoveredByPing,
    /// A successful mount / ReMount recovered a Suspected incarnation.
    RecoveredByMount,
    /// The mass-suspicion brake released and gave the incarnation a fresh suspicion window.
    BrakeReleased,
}

/// One committed state change of one incarnation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transition {
    /// The client.
    pub client: ClientId,
    /// The incarnation.
    pub incarnation: Incarnation,
    /// State before.
    pub from: LivenessState,
    /// State after.
    pub to: LivenessState,
    /// Why.
    pub cause: Cause,
    /// Base-clock time of the commit (virtual time in replay).
    pub at_ms: u64,
}

/// The answer to a Ping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PingOutcome {
    /// The wire status.
    pub status: PingStatus,
    /// `Some` when this ping recovered a Suspected incarnation.
    pub recovered: Option<Transition>,
}

/// Why a successful mount's work could not be kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LostReason {
    /// The incarnation was committed Offline while the mount work ran.
    WentOffline,
    /// A concurrent first mount of the same client id published its incarnation first.
    Raced,
}

/// The outcome of [`Liveness::mount`].
#[derive(Debug)]
#[must_use = "a Lost outcome obliges the caller to undo the mount work"]
pub enum MountOutcome<T, E> {
    /// The work succeeded and the liveness signal was committed.
    Mounted {
        /// What the work returned.
        value: T,
        /// The incarnation the work ran for.
        record: Arc<ClientLivenessRecord>,
        /// `true` if this mount created the incarnation.
        created: bool,
        /// `Some` if this mount recovered a Suspected incarnation.
        recovered: Option<Transition>,
    },
    /// The work failed: no signal, no recovery, no record created.
    Failed(E),
    /// The previous incarnation is Offline and still being offboarded (`CLIENT_OFFBOARDING`); the work did not run.
    Offboarding(Incarnation),
    /// The caller's incarnation token is not the current incarnation (`NEED_REMOUNT`); the work did not run.
    StaleToken,
    /// The work succeeded but cannot be kept; the caller must undo it (see [`LostReason`]).
    Lost(T, LostReason),
}

/// The liveness half of a master: clock, configuration, registry and signal paths.
pub struct Liveness {
    clock: LivenessClock<CellArc<dyn Clock>>,
    config: ConfigHandle,
    registry: Registry,
    inbox: Mutex<Vec<Arc<ClientLivenessRecord>>>,
    /// Suspected incarnations: +1 by the monitor's Suspected commit, −1 by its Offline commit
    /// or by a recovering signal. Relaxed: a statistic for the mass-suspicion brake.
    suspected: CachePadded<AtomicUsize>,
    /// Suspected → Active recoveries committed by any signal path (Ping through the master or
    /// straight through this core). Relaxed: a statistic.
    recovered: CachePadded<AtomicU64>,
}

impl Liveness {
    /// A liveness core on `clock` with `config`.
    pub fn new(clock: CellArc<dyn Clock>, config: LivenessConfig) -> Self {
        Self::with_registry(clock, config, Registry::default())
    }

    /// As [`Liveness::new`] with a registry of a chosen shard count.
    pub fn with_registry(clock: CellArc<dyn Clock>, config: LivenessConfig, registry: Registry) -> Self {
        Self {
            clock: LivenessClock::new(clock),
            config: ConfigHandle::new(config),
            registry,
            inbox: Mutex::new(Vec::new()),
            suspected: CachePadded::new(AtomicUsize::new(0)),
            recovered: CachePadded::new(AtomicU64::new(0)),
        }
    }

    /// The clock deadlines live on.
    pub fn clock(&self) -> &LivenessClock<CellArc<dyn Clock>> {
        &self.clock
    }

    /// The hot-swappable configuration.
    pub fn config(&self) -> &ConfigHandle {
        &self.config
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The TTLs in force now ([`ConfigHandle::ttls`]: two loads).
    pub fn ttls(&self) -> Ttls {
        self.config.ttls()
    }

    /// Ping: refresh, or recover then answer by readiness; `NEED_REMOUNT` for unknown, Offline
    /// or stale-token callers (no record is created). Lock-free.
    pub fn ping(&self, client: ClientId, token: Option<Incarnation>) -> PingOutcome {
        let ttls = self.ttls();
        let need_remount = PingOutcome {
            status: PingStatus::NeedRemount,
            recovered: None,
        };
        self.registry.with_slot(client, |slot| {
            let Some(Slot::Live(rec)) = slot else {
                return need_remount;
            };
            if token.is_some_and(|t| t != rec.incarnation()) {
                return need_remount;
            }
            match rec.signal_at(|| self.clock.now(), ttls) {
                Applied::Offline => need_remount,
                applied => PingOutcome {
                    status: if rec.is_ready() {
                        PingStatus::Ok
                    } else {
                        PingStatus::NeedRemount
                    },
                    recovered: self.recovery(rec, &applied, Cause::RecoveredByPing),
                },
            }
        })
    }

    fn recovery(&self, rec: &ClientLivenessRecord, applied: &Applied, cause: Cause) -> Option<Transition> {
        match applied {
            Applied::Committed {
                change: Change::Recovered,
                from,
                to,
            } => {
                self.suspected.fetch_sub(1, Ordering::Relaxed);
                self.recovered.fetch_add(1, Ordering::Relaxed);
                let t = Transition {
                    client: rec.client(),
                    incarnation: rec.incarnation(),
                    from: from.state(),
                    to: to.state(),
                    cause,
                    // Event times are the base clock's (deadlines the liveness clock's).
                    at_ms: self.clock.base_now().0,
                };
                tracing::info!(client = %t.client, incarnation = t.incarnation.0, cause = ?cause, at_ms = t.at_ms,
                    "liveness transition: Suspected -> Active (recovered)");
                Some(t)
            }
            _ => None,
        }
    }

    /// Runs mount work `op` for `client` and commits a liveness signal only if it succeeds.
    ///
    /// `op` receives the incarnation its resources must bind to. For a known client that is the
    /// current record; for a new client it is a fresh record that is published only after `op`
    /// succeeded (a failed first mount creates nothing). The protocol is lock-free and closes
    /// both windows upstream needed a mutex for:
    /// - an Offline record refuses the mount before `op` runs ([`MountOutcome::Offboarding`]);
    /// - if the incarnation is committed Offline *while* `op` runs, the signal's CAS fails and
    ///   the caller gets [`MountOutcome::Lost`] and must undo `op`'s work; the Offline commit is
    ///   never undone and a failed mount never recovers anyone.
    ///
    /// `op` must register its resources where offboarding will find them *before* returning, so
    /// that an Offline commit that wins either sees them or makes this mount `Lost`.
    ///
    /// This is [`Liveness::begin_mount`] → `op` → [`Liveness::commit_mount`] (module `mount`).
    pub fn mount<T, E>(
        &self,
        client: ClientId,
        token: Option<Incarnation>,
        op: impl FnOnce(&Arc<ClientLivenessRecord>) -> Result<T, E>,
    ) -> MountOutcome<T, E> {
        let pending = match self.begin_mount(client, token) {
            Ok(p) => p,
            Err(MountRefused::Offboarding(incarnation)) => return MountOutcome::Offboarding(incarnation),
            Err(MountRefused::StaleToken) => return MountOutcome::StaleToken,
        };
        let value = match op(pending.record()) {
            Ok(v) => v,
            Err(e) => return MountOutcome::Failed(e),
        };
        match self.commit_mount(pending) {
            Ok(MountCommitted {
                record,
                created,
                recovered,
            }) => MountOutcome::Mounted {
                value,
                record,
                created,
                recovered,
            },
            Err(reason) => MountOutcome::Lost(value, reason),
        }
    }

    /// Rebuilds an incarnation from a snapshot: Active with a fresh active TTL and not ready,
    /// or — for an incarnation whose offboarding was pending — committed Offline right away,
    /// which yields the proof that mints its job (the only way to mint one). `None` if the
    /// client id is already taken.
    pub(crate) fn restore_incarnation(
        &self,
        client: ClientId,
        incarnation: Incarnation,
        offboarding: bool,
    ) -> Option<(Arc<ClientLivenessRecord>, Option<record::OfflineCommitted>)> {
        let now = self.clock.now();
        let ttls = self.ttls();
        let word = if offboarding {
            // Suspected and due: the evaluation below commits Offline.
            Word::pack(LivenessState::Suspected, Seq::default(), now)
        } else {
            Word::first(now, ttls.active_ms)
        };
        let rec = Arc::new(ClientLivenessRecord::with_word(client, incarnation, word));
        self.registry.publish(rec.clone(), None).ok()?;
        if !offboarding {
            self.inbox.lock().unwrap_or_else(|e| e.into_inner()).push(rec.clone());
            return Some((rec, None));
        }
        match rec.evaluate(now, ttls, false) {
            record::Evaluation::Offline { proof, .. } => Some((rec, Some(proof))),
            _ => None,
        }
    }

    /// Marks the current incarnation of `client` ready (ReMount finished) or not.
    /// Returns `false` if the client has no live record.
    pub fn set_ready(&self, client: ClientId, ready: bool) -> bool {
        match self.registry.get(client) {
            Some(rec) => {
                rec.set_ready(ready);
                true
            }
            None => false,
        }
    }

    /// Incarnations currently Suspected.
    pub fn suspected_count(&self) -> usize {
        // A recovery may decrement before the monitor's matching increment lands (the monitor
        // counts after its CAS): the counter can be transiently "−1", i.e. wrapped. Read it as
        // signed and clamp (found by the `suspected_count_vs_recovering_ping` loom model).
        (self.suspected.load(Ordering::Relaxed) as isize).max(0) as usize
    }

    /// Suspected → Active recoveries committed so far, by any signal path.
    pub fn recoveries_total(&self) -> u64 {
        self.recovered.load(Ordering::Relaxed)
    }

    pub(crate) fn note_suspected(&self, delta: isize) {
        if delta >= 0 {
            self.suspected.fetch_add(delta as usize, Ordering::Relaxed);
        } else {
            self.suspected.fetch_sub(delta.unsigned_abs(), Ordering::Relaxed);
        }
    }

    /// Takes the records published since the last call (the monitor arms them in its wheel).
    pub(crate) fn take_new_records(&self) -> Vec<Arc<ClientLivenessRecord>> {
        std::mem::take(&mut *self.inbox.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl fmt::Debug for Liveness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Liveness")
            .field("now_ms", &self.clock.now().0)
            .field("registry", &self.registry)
            .finish()
    }
}
