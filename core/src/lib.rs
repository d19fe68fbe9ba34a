//! # mooncake-liveness-core
//!
//! Recoverable client liveness for a cache master (Mooncake Store's master): every client
//! incarnation moves **Active → Suspected → Offline** on two TTLs, a liveness signal recovers a
//! Suspected incarnation, and terminal cleanup is a retryable, exactly-once
//! [`ClientOffboardingJob`]. This crate is the core an embedder links (the C ABI links only
//! it): no master, no simulator, no command line.
//!
//! ```text
//!              active TTL without a signal          suspicion TTL since the commit
//!   Active ──────────────────────────────▶ Suspected ──────────────────────────▶ Offline
//!     ▲                                         │
//!     └────────── liveness signal ──────────────┘
//! ```
//!
//! Guarantees in five lines (details in [`docs`]):
//! 1. Each incarnation's state is one 64-bit atomic word; "may this resource serve?" is one `Acquire` load.
//! 2. Ping is a lock-free registry lookup plus one CAS loop on that word; it shares no lock with data-plane work.
//! 3. The monitor's hierarchical timer wheel costs O(entries due) per tick and commits by CAS.
//! 4. Suspicion counts from the committed transition; master stalls are credited, never charged to clients.
//! 5. Exactly one offboarding job per incarnation; the Offline record bars remounts until it completes.
//!
//! # Modules
//!
//! [`clock`], [`config`], [`liveness`] (words, records, registry, signal paths),
//! [`eligibility`] (the serving check), [`monitor`] (the timer wheel and its brakes),
//! [`offboarding`] (the job, its steps, the retry schedule, the queue and the executor),
//! [`persist`] and [`snapshot`] (failover: the snapshot format, whose liveness sections the C ABI
//! uses alone), [`telemetry`]; [`docs`] holds the guarantees as prose. The reference master is
//! the crate `mooncake-liveness-master`; the tools (`simulate`, `replay`, `loadtest`, `serve`)
//! are the package `mooncake-liveness`.
//!
//! `unsafe` is denied crate-wide; it is allowed only where it lives, each block with a
//! `SAFETY` comment: the word slab (`liveness/slab.rs`), the `Owner`'s raw record count
//! (`liveness/owner.rs`) and a prefetch hint (`sync.rs`).
#![warn(unreachable_pub, missing_docs, missing_debug_implementations)]
#![deny(unsafe_code, unsafe_op_in_unsafe_fn, unused_must_use)]

pub mod clock;
pub mod config;
pub mod docs;
pub mod eligibility;
pub mod liveness;
pub mod monitor;
pub mod offboarding;
pub mod persist;
pub mod resources;
pub mod snapshot;
/// The one switch between `std` and `loom` synchronization, shared with the crates built on
/// the core (the reference master takes its locks and atomics from here too). Not public API.
#[doc(hidden)]
pub mod sync;
pub mod telemetry;

// The public interface is:
pub use clock::{Clock, LivenessClock, ManualClock, SystemClock, Tick};
pub use config::{ConfigError, ConfigHandle, LivenessConfig};
pub use liveness::{
    ClientId, ClientLivenessRecord, Incarnation, Liveness, LivenessState, MountOutcome, Owner, PingOutcome, PingStatus,
    Transition,
};
pub use monitor::{LivenessEvent, Monitor, TickReport};
pub use offboarding::{complete_client_offboarding, ClientOffboardingJob};

/// Internals for the loom models, fuzz targets, benches and the crates built on the core only:
/// not part of the public interface and outside any stability promise.
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
