//! Node bindings for quorumlock (napi-rs): the native module behind the npm package
//! `quorumlock`. Every method converts arguments and results only; the engine runs on
//! quorumlock's shared runtime. Failures resolve to `{ error }` objects that `index.js`
//! turns into `QuorumlockError`s.
// `forbid` would clash with the `allow(unsafe_code)` inside the `#[napi]` expansions; our own
// `unsafe` is in `settle` only (raw N-API calls, each with its SAFETY note).
#![deny(unsafe_code)]
// `NativeError` is a napi object handed to JavaScript by value, with the per-node detail of
// every attempt; it is only built on the error path, so its size costs nothing.
#![allow(clippy::result_large_err)]

pub mod admin;
pub mod client;
pub mod error;
pub mod lock;
pub mod metrics;
pub mod options;
mod settle;
mod stages;

use napi_derive::napi;

/// The addon's Rust allocations (the engine's per-call buffers, futures and outputs) go to
/// mimalloc instead of glibc's malloc: most of them are made on a runtime worker and freed on
/// the event loop's thread or the other way round, which glibc's per-thread arenas handle
/// slowly. At 16 and 64 concurrent callers the process spent about a tenth less CPU per
/// acquire + release (docs/BENCHMARKS.md). Allocations of Node and V8 are not affected.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The package version (from Cargo).
#[napi(catch_unwind)]
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The Lua source of the fence check for a protected resource kept in Redis.
#[napi(catch_unwind)]
pub fn fence_check_script() -> &'static str {
    quorumlock::FENCE_CHECK_SCRIPT
}
