//! # mooncake-liveness-wire
//!
//! The Mooncake Store master's wire protocol as the PyPI `mooncake-transfer-engine-non-cuda`
//! 0.3.13.post1 client speaks it: yalantinglibs' coro_rpc framing ([`frame`], [`codec`] on
//! tokio) and the subset of struct_pack its messages use ([`pack`]), the message types
//! ([`types`], [`enums`]) and the RPCs ([`rpc`]). Everything was checked against yalantinglibs'
//! and Mooncake's sources and against traffic recorded between the real client and the real
//! master (`tests/data`, replayed byte for byte by `tests/golden.rs`).
//!
//! The type hashes pin a client version: a client whose types differ (another Mooncake release)
//! is refused with coro_rpc's "invalid rpc arg", as the real master of another version would.
//!
//! This crate knows the protocol only; `mooncake-liveness serve` puts the master behind it.
//!
//! ```
//! use mooncake_liveness_wire::rpc::{Ping, Rpc, Function};
//! use mooncake_liveness_wire::types::{PingResponse, Uuid};
//! use mooncake_liveness_wire::enums::ClientStatus;
//!
//! let body = Ping::encode_request(&Uuid { first: 1, second: 2 });
//! assert_eq!(Ping::decode_request(&body), Ok(Uuid { first: 1, second: 2 }));
//! assert_eq!(Function::Ping.id(), 0xd6c2dae5);
//! let reply = Ping::encode_reply(&Ok(PingResponse { view_version_id: 0, client_status: ClientStatus::OK }));
//! assert!(Ping::decode_reply(&reply).is_ok());
//! ```
#![forbid(unsafe_code)]
#![warn(unreachable_pub, missing_docs, missing_debug_implementations)]

pub mod codec;
pub mod enums;
pub mod frame;
pub mod pack;
pub mod rpc;
pub mod types;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
