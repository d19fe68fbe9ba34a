//! Deterministic runs on a manual clock.
//!
//! - [`fleet`]: the fleet simulator behind `mooncake-liveness simulate`: the same seeded
//!   workload and trouble under the legacy, rfc and rfc+brakes policies, on the real master.
//! - [`legacy`]: Mooncake main's client monitor (one TTL, 1 s tick, expiry in one batch) as a
//!   separate policy over the same reference master, for `replay --policy legacy` and `simulate`.
//! - [`replay`]: the reference master driven by a JSON-Lines trace on a virtual clock
//!   (`mooncake-liveness replay`).
//!
//! Owns: deterministic drivers of the reference master on one thread and a manual clock. May not
//! touch the master's locks or liveness words directly: it goes through the master's paths, so
//! its output is what a master would do.
#![forbid(unsafe_code)]

pub mod fleet;
pub mod legacy;
mod replay;

pub use replay::{replay, replay_policy, replay_with_warnings, ReplayError, ReplayPolicy};
