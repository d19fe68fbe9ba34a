//! Guarantees, orderings and limitations, as prose (in the manner of arc-swap's `docs`).
//!
//! - [`guarantees`]: what each path promises (progress, timing, barrier).
//! - [`orderings`]: every synchronization edge and why its ordering suffices.
//! - [`limitations`]: what the design does not do, and why.

pub mod guarantees;
pub mod limitations;
pub mod orderings;
