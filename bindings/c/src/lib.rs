//! The C ABI of quorumlock: opaque handles, stable result codes, an error object with a
//! per-node report, and blocking calls over the one engine (ARCHITECTURE.md §5.1). The
//! header `include/quorumlock.h` is generated from these doc comments by cbindgen.
//!
//! Conventions: handle first, then inputs, then outputs; outputs are written only on
//! `QL_OK`; the optional last parameter `quorumlock_error **err_out` is written only on
//! failure and freed with `quorumlock_error_free`; `_free(NULL)` does nothing; byte inputs
//! are `(ptr, len)`; text outputs are `snprintf`-style. No panic crosses the boundary.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod by_value;
pub mod client;
pub mod error;
pub mod fence;
mod ffi;
pub mod lock;
pub mod metrics;
mod panic;

pub use ffi::LostCallback;

use std::ffi::c_char;

/// The library version (`"0.2.0"`), matching the `QUORUMLOCK_VERSION_*` defines of the
/// header it was built with.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
#[unsafe(no_mangle)]
pub extern "C" fn quorumlock_version() -> *const c_char {
    panic::ffi_panic_boundary!({ ffi::static_str(VERSION) })
}

const VERSION: &std::ffi::CStr = match std::ffi::CStr::from_bytes_with_nul(
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes(),
) {
    Ok(v) => v,
    Err(_) => panic!("the package version contains a NUL byte"),
};
