//! mooncake-liveness (skeleton, filled in by the liveness-core work).
#![allow(dead_code)]
pub mod clock;
pub(crate) mod sync;
pub mod config;
pub(crate) mod monitor;
