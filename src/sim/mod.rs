//! Deterministic runs of the liveness core on a manual clock.
//!
//! For now this holds the built-in demo that `mooncake-liveness simulate` runs: four clients,
//! one healthy, one with a long GC pause, one that crashes and comes back as a new incarnation,
//! and a master stall. The full fleet simulator and `replay` come with the reference master.
#![forbid(unsafe_code)]

mod demo;

pub use demo::{run_demo, DemoReport};
