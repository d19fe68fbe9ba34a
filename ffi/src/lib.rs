//! # mooncake-liveness-ffi
//!
//! The C ABI of the liveness core, for embedding it in Mooncake's C++ master. The header
//! `include/mooncake_liveness.h` is generated from this crate by cbindgen
//! (`scripts/cpp.sh` regenerates it and fails when the committed one is stale); the C++17
//! wrapper is `include/mooncake_liveness.hpp`.
//!
//! Thin by design: every liveness decision is the library's (`Liveness`, `Monitor`, the
//! offboarding `Executor` with the caller's steps as `SharedSteps`, `persist`). This crate only
//! checks arguments, catches unwinds, and routes reports to callbacks.
//!
//! # Contract, for every function
//! - Returns an `MlvStatus` (Mooncake `ErrorCode` numbers) unless it is a query that cannot fail.
//! - No panic crosses the boundary; null or foreign objects, invalid UTF-8, out-of-range enum
//!   integers and oversize inputs give `MLV_INVALID_PARAMS`, never undefined behaviour.
//! - Each function's documentation says what may run concurrently with it and what it may
//!   block on. In short: everything is thread-safe except freeing an object while it is used.
//! - Freeing a core makes every object that outlives it inert, and no callback runs after
//!   `mlv_core_free` returns: a pending mount's commit or abort is an error that changes and
//!   calls nothing (a commit racing with the free finishes before it returns or is inert;
//!   `gate.rs`), a handle only reads its own record, and the core's threads are joined.
//! - Every `unsafe` block has a `SAFETY` comment. This crate is where the C ABI's `unsafe`
//!   lives; the library denies `unsafe_code` except in its word slab, its `Owner` and a prefetch
//!   hint (its crate documentation lists them).
#![warn(missing_docs, unreachable_pub)]
#![allow(clippy::missing_safety_doc)] // every `# Safety` section is written; clippy misses some forms

mod boundary;
pub mod core_api;
mod gate;
mod shared;
pub mod signal_api;
pub mod types;

pub use core_api::*;
pub use signal_api::*;
pub use types::*;
