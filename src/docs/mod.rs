//! Guarantees, orderings and limitations, as prose (in the manner of arc-swap's `docs`).
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
