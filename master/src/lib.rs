//! # mooncake-liveness-master
//!
//! The reference master: a metadata-only model of Mooncake Store's master over the liveness
//! core ([`mooncake_liveness_core`]), safe to drive from many request threads at once. Every
//! routing choice asks the core's serving check; see [`master`] for its rooms, its locks and
//! their order.
//!
//! The core's modules are re-exported at this crate's root, so the master's code, and a user of
//! this crate, name them as one library (`liveness`, `config`, `snapshot`, ...).
#![warn(unreachable_pub, missing_docs, missing_debug_implementations)]
#![deny(unsafe_code, unsafe_op_in_unsafe_fn, unused_must_use)]

pub use mooncake_liveness_core::*;

pub mod master;
