//! Deterministic runs on a manual clock.
//!
//! - [`run_demo`]: the built-in demo that `mooncake-liveness simulate` runs: four clients, one
//!   healthy, one with a long GC pause, one that crashes and comes back as a new incarnation,
//!   and a master stall.
//! - [`replay`]: the reference master driven by a JSON-Lines trace on a virtual clock
//!   (`mooncake-liveness replay`).
#![forbid(unsafe_code)]

mod demo;
mod replay;

pub use demo::{run_demo, DemoReport};
pub use replay::{replay, replay_with_warnings, ReplayError};
