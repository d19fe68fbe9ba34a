//! Hooks for `loom_tests/`, `fuzz/` and `benches/` (rustls's `internal` pattern). Nothing here is
//! public API.

pub use crate::liveness::word::{decide, Decision, Event};

/// Thin wrappers over crate-private internals for the loom models in `loom_tests/`.
///
/// They add no behaviour: each one calls exactly the code path the monitor or a signal path
/// runs, so a model exercises the real CAS loops. Times are plain liveness-clock milliseconds
/// (the models credit no stall, so their base and liveness times coincide; the wrappers say
/// which clock each number is read as). An offboarding job can still be minted only by
/// winning the Suspected → Offline CAS ([`loom::evaluate`] returns it inside [`loom::Eval::Offline`]).
pub mod loom {
    use crate::clock::{BaseMs, LivenessMs};
    use crate::liveness::record::Evaluation;
    use crate::liveness::{Applied, Change, ClientId, ClientLivenessRecord, Incarnation, Ttls, Word};
    use crate::offboarding::ClientOffboardingJob;
    use crate::sync::Arc;

    /// A record of `client`/`incarnation` starting from an arbitrary `word` (not registered).
    pub fn record_with_word(client: ClientId, incarnation: Incarnation, word: Word) -> Arc<ClientLivenessRecord> {
        Arc::new(ClientLivenessRecord::with_word(client, incarnation, word))
    }

    /// A liveness signal on `rec` at liveness time `now_ms`: what Ping and a successful mount
    /// apply to the word.
    pub fn signal(rec: &ClientLivenessRecord, now_ms: u64, ttls: Ttls) -> Applied {
        rec.signal(LivenessMs(now_ms), ttls)
    }

    /// A liveness signal on `rec` timed by `now`, which the CAS loop calls after each load of
    /// the word (the first load and every failed CAS): what Ping and a successful mount run.
    pub fn signal_at(rec: &ClientLivenessRecord, now: impl Fn() -> u64, ttls: Ttls) -> Applied {
        rec.signal_at(|| LivenessMs(now()), ttls)
    }

    /// What one monitor evaluation of a record did (the crate-private `Evaluation`, made public).
    #[derive(Debug)]
    pub enum Eval {
        /// Not due: the monitor re-arms by this word's deadline.
        Wait(Word),
        /// This call committed `from → to` (Active → Suspected, or a renewed suspicion window).
        Suspected {
            /// The word replaced.
            from: Word,
            /// The word installed.
            to: Word,
            /// Why.
            change: Change,
        },
        /// This call won the Suspected → Offline CAS and minted the incarnation's one job.
        Offline {
            /// The word replaced.
            from: Word,
            /// The word installed.
            to: Word,
            /// The job minted from the commit's proof.
            job: ClientOffboardingJob,
        },
        /// Offline is due but held by the mass-suspicion brake.
        Held,
        /// Already Offline: the monitor drops its entry.
        Retired,
    }

    /// The monitor's evaluation of `rec` at liveness time `now_ms` (`hold_offline` = the
    /// mass-suspicion brake is engaged). A won Offline commit mints the job, as the monitor does,
    /// stamped `now_ms` on the base clock (no stall credited: the same number).
    pub fn evaluate(rec: &Arc<ClientLivenessRecord>, now_ms: u64, ttls: Ttls, hold_offline: bool) -> Eval {
        match rec.evaluate(LivenessMs(now_ms), ttls, hold_offline) {
            Evaluation::Wait { word } => Eval::Wait(word),
            Evaluation::Suspected { from, to } => Eval::Suspected {
                from,
                to,
                change: Change::Suspected,
            },
            Evaluation::Renewed { from, to } => Eval::Suspected {
                from,
                to,
                change: Change::SuspicionRenewed,
            },
            Evaluation::Offline { from, to, proof } => Eval::Offline {
                from,
                to,
                job: ClientOffboardingJob::from_commit(rec.clone(), proof, BaseMs(now_ms)),
            },
            Evaluation::Held => Eval::Held,
            Evaluation::Retired => Eval::Retired,
        }
    }
}

/// The timer wheel's bits per level (the differential fuzzer files deadlines past level 1).
pub const WHEEL_LEVEL_BITS: u32 = crate::monitor::wheel::LEVEL_BITS;
