//! The native lock handle: extend, release, auto-extension and the lost callback.

use std::sync::Arc;

use napi::bindgen_prelude::{BigInt, Object};
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::{Env, Status};
use napi_derive::napi;

use crate::client::promise;
use crate::error::{NativeError, NodeEntry, nodes};
use crate::options::millis;

/// `{ value }` or `{ error }` of [`NativeLock::extend`]: the validity left in milliseconds.
#[napi(object, object_from_js = false)]
pub struct ExtendOutcome {
    /// Validity left after the extension, in milliseconds.
    pub value: Option<f64>,
    /// Why the extension failed.
    pub error: Option<NativeError>,
}

/// What a release did: the counts. Its per-node entries come from
/// [`NativeLock::release_nodes`] when asked for: converting them to JavaScript objects costs
/// the event loop about 2 µs per node, and most callers never read them.
#[napi(object, object_from_js = false)]
pub struct ReleaseReport {
    /// How many nodes deleted our keys.
    pub released_count: u32,
    /// True when a quorum still held the lock when it was released.
    pub was_held_by_quorum: bool,
}

/// `{ value }` or `{ error }` of [`NativeLock::release`].
#[napi(object, object_from_js = false)]
pub struct ReleaseOutcome {
    /// The per-node report.
    pub value: Option<ReleaseReport>,
    /// Why the release failed.
    pub error: Option<NativeError>,
}

/// A held lock.
#[napi]
pub struct NativeLock {
    inner: Arc<quorumlock::Lock>,
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_millis() as f64
}

#[napi]
impl NativeLock {
    pub(crate) fn new(lock: quorumlock::Lock) -> Self {
        NativeLock {
            inner: Arc::new(lock),
        }
    }

    /// The random value (40 hex characters) stored in the keys.
    #[napi(getter)]
    pub fn value(&self) -> String {
        self.inner.value().to_owned()
    }

    /// The fencing token (of the first resource in sorted order) of a fenced lock; null when
    /// not fenced.
    #[napi(getter)]
    pub fn token(&self) -> Option<BigInt> {
        self.inner.token().map(BigInt::from)
    }

    /// The fencing tokens, one per resource in sorted order; null when not fenced.
    #[napi(getter)]
    pub fn tokens(&self) -> Option<Vec<BigInt>> {
        self.inner
            .tokens()
            .map(|t| t.iter().copied().map(BigInt::from).collect())
    }

    /// The TTL the lock was acquired with, in milliseconds.
    #[napi(getter)]
    pub fn ttl_ms(&self) -> f64 {
        ms(self.inner.ttl())
    }

    /// Attempts the acquisition took.
    #[napi(getter)]
    pub fn attempts(&self) -> u32 {
        self.inner.attempts()
    }

    /// Validity left now in whole milliseconds; 0 once expired, lost or released.
    #[napi(getter)]
    pub fn remaining_ms(&self) -> f64 {
        ms(self.inner.remaining())
    }

    /// Successful extensions so far.
    #[napi(getter)]
    pub fn extensions(&self) -> u32 {
        self.inner.extensions()
    }

    /// True while the automatic extension runs.
    #[napi(getter)]
    pub fn auto_extending(&self) -> bool {
        self.inner.is_auto_extending()
    }

    /// The per-node report of the successful attempt.
    #[napi(getter)]
    pub fn nodes(&self) -> Vec<NodeEntry> {
        nodes(self.inner.report())
    }

    /// The per-node report of every attempt of the acquisition, oldest first; the last is
    /// `nodes`.
    #[napi(getter)]
    pub fn attempt_reports(&self) -> Vec<Vec<NodeEntry>> {
        self.inner.attempt_reports().iter().map(nodes).collect()
    }

    /// The per-node report of the successful release; empty before it.
    #[napi]
    pub fn release_nodes(&self) -> Vec<NodeEntry> {
        self.inner
            .release_report()
            .as_ref()
            .map(nodes)
            .unwrap_or_default()
    }

    /// The per-node report of the last successful extend; null before the first.
    #[napi(getter)]
    pub fn extend_nodes(&self) -> Option<Vec<NodeEntry>> {
        self.inner.extend_report().as_ref().map(nodes)
    }

    /// Starts or stops the automatic extension; returns the error, if any. Never blocks.
    #[napi(catch_unwind)]
    pub fn set_auto_extend(&self, on: bool) -> Option<NativeError> {
        self.inner
            .set_auto_extend(on)
            .err()
            .map(|e| NativeError::from(&e))
    }

    /// The `QL_LOST` error if the lock is lost, else nothing.
    #[napi(catch_unwind)]
    pub fn lost_error(&self) -> Option<NativeError> {
        self.inner
            .lost_signal()
            .get()
            .map(|e| NativeError::from(&e))
    }

    /// Calls `callback` once with the `QL_LOST` error when the lock is lost; never after a
    /// release. The callback is weak (unref'd): it never keeps the process alive.
    #[napi(catch_unwind)]
    pub fn on_lost(
        &self,
        callback: ThreadsafeFunction<
            NativeError,
            UnknownReturnValue,
            NativeError,
            Status,
            false,
            true,
        >,
    ) -> Option<NativeError> {
        let mut signal = self.inner.lost_signal();
        match quorumlock::runtime::handle() {
            Ok(handle) => {
                handle.spawn(async move {
                    if let Some(e) = signal.wait().await {
                        callback.call(
                            NativeError::from(&e),
                            ThreadsafeFunctionCallMode::NonBlocking,
                        );
                    }
                });
                None
            }
            Err(e) => Some(NativeError::from(&e)),
        }
    }

    /// Extends the lock to `ttlMs` from now on a quorum of nodes; about one round trip.
    /// Resolves to `{ value: remainingMs }` or `{ error }`.
    #[napi(catch_unwind, ts_return_type = "Promise<ExtendOutcome>")]
    pub fn extend<'env>(&self, env: &'env Env, ttl_ms: f64) -> napi::Result<Object<'env>> {
        let lock = self.inner.clone();
        let outcome = |result: Result<f64, NativeError>| match result {
            Ok(v) => ExtendOutcome {
                value: Some(v),
                error: None,
            },
            Err(e) => ExtendOutcome {
                value: None,
                error: Some(e),
            },
        };
        match millis("ttlMs", ttl_ms) {
            Ok(ttl) => promise(
                env,
                async move {
                    lock.extend(ttl).await?;
                    Ok(ms(lock.remaining()))
                },
                outcome,
            ),
            Err(e) => crate::settle::resolved(env, outcome(Err(e))),
        }
    }

    /// Releases the lock on every node (compare-and-delete); idempotent. About one round
    /// trip. Resolves to `{ value: ReleaseReport }` or `{ error }`; the per-node entries are
    /// then [`release_nodes`](Self::release_nodes).
    #[napi(catch_unwind, ts_return_type = "Promise<ReleaseOutcome>")]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        crate::stages::mark(crate::stages::ENTRY);
        let lock = self.inner.clone();
        promise(
            env,
            async move {
                let report = lock.release().await?;
                Ok((report.released_count(), report.was_held_by_quorum()))
            },
            |result| match result {
                Ok((released_count, was_held_by_quorum)) => ReleaseOutcome {
                    value: Some(ReleaseReport {
                        released_count: u32::try_from(released_count).unwrap_or(u32::MAX),
                        was_held_by_quorum,
                    }),
                    error: None,
                },
                Err(e) => ReleaseOutcome {
                    value: None,
                    error: Some(e),
                },
            },
        )
    }
}
