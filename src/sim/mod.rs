//! Deterministic runs on a manual clock.
//!
//! - [`fleet`]: the fleet simulator behind `mooncake-liveness simulate`: the same seeded
//!   workload and trouble under the legacy, rfc and rfc+brakes policies, on the real master.
//! - [`replay`]: the reference master driven by a JSON-Lines trace on a virtual clock
//!   (`mooncake-liveness replay`).
#![forbid(unsafe_code)]

pub mod fleet;
mod replay;

pub use replay::{replay, replay_with_warnings, ReplayError};
