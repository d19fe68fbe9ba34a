//! Guarantees, orderings and limitations, as prose (in the manner of arc-swap's `docs`).
//!
//! **None of our own operations use `SeqCst`.** Every synchronization edge is a
//! `Release`/`Acquire` pair (`AcqRel` on a compare-and-swap), or `Relaxed` on a self-contained
//! number that publishes nothing else; no operation needs a total order across different
//! records. The only `SeqCst` in the process is inside arc-swap, which publishes the registry
//! shards and the configuration ([`orderings`] has every edge; `scripts/check_invariant_map.py`
//! fails if our code names `SeqCst`).
//!
//! - [`guarantees`]: what each path promises (progress, timing, barrier).
//! - [`orderings`]: every synchronization edge and why its ordering suffices.
//! - [`invariants`]: each contract invariant and the tests, loom models and fuzz bodies that check it.
//! - [`limitations`]: what the design does not do, and why.
//! - [`calibration`]: where every number of `simulate`'s scenarios comes from.

pub mod calibration;
pub mod guarantees;
pub mod invariants;
pub mod limitations;
pub mod orderings;
