//! Hooks for `loom_tests/`, `fuzz/` and `benches/` (rustls's `internal` pattern). Nothing here is
//! public API.

pub use crate::liveness::word::{decide, Decision, Event};
