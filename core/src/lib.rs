//! # quorumlock
//!
//! One audited Redlock engine: distributed locks over N independent Redis masters, with
//! parallel fan-out, a decision at the quorum `N / 2 + 1`, validity measured on a monotonic
//! clock, cleanup of partial locks after every failed attempt and on cancellation, safe
//! extension that never re-creates keys, and automatic extension with a lost-lock signal.
//! The protocol is specified in `docs/REDLOCK.md` of the repository.
//!
//! ```no_run
//! # async fn demo() -> quorumlock::Result<()> {
//! use std::time::Duration;
//! let client = quorumlock::Client::connect([
//!     "redis://127.0.0.1:7001", "redis://127.0.0.1:7002", "redis://127.0.0.1:7003",
//! ]).await?;
//! let opts = quorumlock::LockOptions::default().ttl(Duration::from_secs(5));
//! let lock = client.acquire_with(["invoice:7"], &opts).await?;
//! println!("held for {:?} more", lock.remaining());
//! lock.release().await?;
//! # Ok(()) }
//! ```
//!
//! Errors follow one model across languages: [`Error`] with an [`ErrorKind`] and a per-node
//! [`Report`]. A blocking API over the same engine lives in [`blocking`].
#![forbid(unsafe_code)]

mod acquire;
mod batch;
/// The protocol's modules, under the names the engine has always used.
pub(crate) use quorumlock_proto::{config, error, report};
mod admin;
pub mod blocking;
mod cancel;
mod client;
pub mod clock;
mod fencing;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod lock;
mod metrics;
mod node;
mod pending;
mod quorum;
pub mod runtime;
mod timer;
mod value;
mod warning;
mod watchdog;

pub use admin::{Holding, Inspection, NodeInfo};
pub use cancel::CancelToken;
pub use client::{Client, ClientBuilder};
pub use clock::MonoTime;
pub use config::{
    ClientSettings, DEFAULT_CONNECT_TIMEOUT, DEFAULT_DRIFT_CONSTANT, DEFAULT_DRIFT_FACTOR,
    DEFAULT_KEY_PREFIX, DEFAULT_MAX_TTL, DEFAULT_QUARANTINE_MARGIN, DEFAULT_REPROBE_EVERY,
    DEFAULT_RETRY_COUNT, DEFAULT_RETRY_DELAY, DEFAULT_RETRY_JITTER, DEFAULT_TTL, EvictionCheck,
    KeyFormat, LockOptions, MAX_RESOURCE_LEN, MAX_TTL_LIMIT, OptionValue, Quarantine,
    default_node_timeout,
};
pub use error::{Error, ErrorKind, LostReason, MAX_ATTEMPT_REPORTS, Result};
pub use lock::{Lock, LostSignal};
pub use metrics::{Histogram, LATENCY_BOUNDS_US, Metrics, NodeMetrics, OpMetrics};
/// The one table of options (name, kind, range, default, meaning) and the by-name setters'
/// values: `docs/options.md`.
pub use quorumlock_proto::config::spec as options;
pub use quorumlock_proto::value::{MIN_GIVEN_LEN, VALUE_BYTES};
pub use report::{NodeCategory, NodeKind, NodeResult, Report};
pub use warning::{Warning, WarningHook, WarningKind};

/// FENCE-CHECK, a Lua script for a protected resource kept in Redis (REDLOCK.md §7.9):
/// `EVAL <script> 1 <fence key> <token>` returns 1 and stores the token when it is at least
/// the highest seen, and 0 (a stale holder: stop) otherwise. Run it in the same atomic step
/// as the protected write, e.g. in a `MULTI` with it or inside your own script.
pub const FENCE_CHECK_SCRIPT: &str = quorumlock_proto::scripts::FENCE_CHECK;

/// The crate version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
