//! uniffi bindings for quorumlock: the native library of the JVM package (`jvm/`), whose
//! Kotlin sources `uniffi-bindgen` generates from this crate.
//!
//! Thin by rule (ARCHITECTURE.md §5): every item converts types and errors and hands the
//! work to the engine; no lock logic lives here. Engine work runs on quorumlock's shared
//! runtime ([`quorumlock::runtime::handle`]); the futures uniffi polls only await that work,
//! so they are safe to poll from any foreign executor (Kotlin coroutines here); the blocking
//! calls (`Client::start_acquire`, `Lock::release_blocking`, ...) wait for that work on the calling thread instead. A future
//! dropped by its caller (a cancelled coroutine) cancels an acquisition in flight through
//! a [`quorumlock::CancelToken`]; the engine then releases what the attempt wrote.
//!
//! Errors are one [`NativeError`] whose `code` and `name` come from
//! [`quorumlock::ErrorKind::code`] and [`quorumlock::ErrorKind::as_str`], the same source
//! as the C ABI's `QL_*` result codes.
#![forbid(unsafe_code)]
// `NativeError` goes to the host by value with the per-node detail of every attempt; it is
// built only on the error path, so its size costs nothing.
#![allow(clippy::result_large_err)]

mod blocking;
mod client;
mod config;
mod error;
mod lock;
mod metrics;

pub use blocking::{PendingLock, Started};
pub use client::{
    CancelHandle, Client, Holding, Inspection, WarningEvent, WarningListener, connect,
};
pub use config::{ClientConfig, EvictionCheck, LockConfig, Quarantine};
pub use error::{ErrorKindInfo, LostEvent, NativeError, NodeReport, error_kinds};
pub use lock::{Lock, LostListener, ReleaseOutcome};
pub use metrics::{CountEntry, Histogram, Metrics, NodeMetrics, OpMetrics, latency_bounds_us};

uniffi::setup_scaffolding!();

/// The quorumlock version of this native library (from Cargo).
#[uniffi::export]
pub fn version() -> String {
    quorumlock::VERSION.to_owned()
}

/// The Lua source of FENCE-CHECK, for a protected resource kept in Redis: `EVAL <script> 1
/// <fence key> <token>` returns 1 and stores the token when it is at least the highest seen.
#[uniffi::export]
pub fn fence_check_script() -> String {
    quorumlock::FENCE_CHECK_SCRIPT.to_owned()
}

/// The largest `max_ttl` a client accepts (2^53 - 1 ms).
#[uniffi::export]
pub fn max_ttl_limit() -> std::time::Duration {
    quorumlock::MAX_TTL_LIMIT
}

/// The longest accepted resource name, in bytes.
#[uniffi::export]
pub fn max_resource_len() -> u32 {
    u32::try_from(quorumlock::MAX_RESOURCE_LEN).unwrap_or(u32::MAX)
}

/// Runs engine work on the shared runtime (as a call from outside it,
/// [`quorumlock::runtime::spawn_call`]) and awaits it from any executor. A panic in the
/// engine task becomes a `QL_INTERNAL` error instead of crossing into the host.
pub(crate) async fn on_runtime<T, F>(work: F) -> Result<T, NativeError>
where
    F: Future<Output = quorumlock::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let handle = quorumlock::runtime::handle().map_err(|e| NativeError::from(&e))?;
    match quorumlock::runtime::spawn_call(&handle, work).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(NativeError::from(&e)),
        Err(e) => Err(NativeError::internal(&e)),
    }
}
