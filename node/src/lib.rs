//! Node bindings for quorumlock (napi-rs): the native module behind the npm package
//! `quorumlock`. Every method converts arguments and results only; the engine runs on
//! quorumlock's shared runtime. Failures resolve to `{ error }` objects that `index.js`
//! turns into `QuorumlockError`s.
// `forbid` would clash with the `allow(unsafe_code)` inside the `#[napi]` expansions; our own
// code has no `unsafe`.
#![deny(unsafe_code)]

pub mod client;
pub mod error;
pub mod lock;
pub mod options;

use napi_derive::napi;

/// The package version (from Cargo).
#[napi(catch_unwind)]
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}
