//! Deterministic runs on a manual clock.
//!
//! - [`fleet`]: the fleet simulator behind `mooncake-liveness simulate`: the same seeded
//!   workload and trouble under the legacy, rfc and rfc+brakes policies, on the real master.
//! - [`legacy`]: Mooncake main's client monitor (one TTL, 1 s tick, expiry in one batch) as a
//!   separate policy over the same reference master, for `replay --policy legacy` and `simulate`.
//! - [`replay`]: the reference master driven by a JSON-Lines trace on a virtual clock
//!   (`mooncake-liveness replay`).
#![forbid(unsafe_code)]

pub mod fleet;
pub mod legacy;
mod replay;

pub use replay::{replay, replay_policy, replay_with_warnings, ReplayError, ReplayPolicy};
