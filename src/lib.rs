//! # mooncake-liveness
//!
//! The tools over the liveness core and the reference master: [`sim`] (`replay`, `simulate`),
//! `loadtest`, `serve` (a master real Mooncake clients talk to) and the `mooncake-liveness`
//! binary that runs them.
//!
//! The workspace's crates are its architecture:
//! - `mooncake-liveness-core` (`core/`): the liveness core an embedder links — clock,
//!   configuration, liveness words and records, the serving check, the monitor, offboarding,
//!   persistence and the snapshot format, telemetry (the C ABI, `ffi/`, links only it);
//! - `mooncake-liveness-master` (`master/`): the reference master over the core;
//! - `mooncake-liveness-wire` (`wire/`): Mooncake's wire protocol (no dependency on the rest);
//! - this package: the tools and the binary.
//!
//! Both libraries are re-exported here, so `mooncake_liveness::liveness`,
//! `mooncake_liveness::master`, ... name one library for the tests, benches, loom models and
//! fuzz targets.
#![warn(unreachable_pub, missing_docs, missing_debug_implementations)]
#![deny(unsafe_code, unsafe_op_in_unsafe_fn, unused_must_use)]

pub use mooncake_liveness_master::*;

#[cfg(not(loom))]
pub mod loadtest;
#[cfg(not(loom))]
pub mod serve;
pub mod sim;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
