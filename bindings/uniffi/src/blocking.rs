//! Blocking calls for the JVM's platform threads: the engine work runs as a task on the shared
//! runtime and the calling thread waits for its output in native code ([`Pending`]), polling
//! briefly first. Compared with awaiting uniffi's futures from a coroutine, a call takes two
//! thread hand-offs instead of four (no coroutine dispatcher between the caller and the
//! engine, no JNA callback back into the JVM) and fewer FFI crossings, each of which costs
//! the JVM 10-30 µs through JNA (a call-status structure allocated and copied per call, an
//! object handle cloned per method call). A virtual thread should not use these (it would pin
//! its carrier while it waits), nor a fork-join pool's worker (its pool would not add a spare):
//! the Kotlin side routes both to the futures. Called on a worker of the engine's runtime (a
//! host callback resumed there), a wait hands the worker's queue over first ([`Pending`]).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use quorumlock::CancelToken;
use quorumlock::runtime::Pending;

use crate::client::Client;
use crate::config::LockConfig;
use crate::error::NativeError;
use crate::lock::{Lock, ReleaseOutcome};

/// What [`Client::start_acquire`] returns: the lock when the acquisition was decided while
/// the call polled for it, or the acquisition still running.
#[derive(Debug, uniffi::Record)]
pub struct Started {
    /// The lock, when the acquisition succeeded within the call.
    pub lock: Option<Arc<Lock>>,
    /// The acquisition still running, when `lock` is `None`.
    pub pending: Option<Arc<PendingLock>>,
}

/// An acquisition started by [`Client::start_acquire`] and not decided within that call,
/// waited for in slices so that the waiting thread can look at its interrupts in between.
/// Freeing it before its outcome was taken cancels the acquisition (a lock won meanwhile is
/// released in the background).
#[derive(Debug, uniffi::Object)]
pub struct PendingLock {
    /// `None` once the outcome was taken.
    pending: Mutex<Option<Pending<quorumlock::Result<quorumlock::Lock>>>>,
    cancel: CancelToken,
}

#[uniffi::export]
impl PendingLock {
    /// Sleeps up to `slice` for the acquisition's outcome: the lock, or `None` while it still
    /// runs.
    ///
    /// # Errors
    /// The acquisition's error (`QL_BUSY`, `QL_QUORUM`, `QL_VALIDITY`, `QL_CANCELLED`, ...);
    /// `QL_INVALID` when the outcome was taken already; `QL_INTERNAL` when the engine task
    /// ended without one.
    pub fn wait_outcome(&self, slice: Duration) -> Result<Option<Arc<Lock>>, NativeError> {
        let mut slot = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(pending) = slot.as_ref() else {
            return Err(NativeError::from(&quorumlock::Error::invalid(
                "this acquisition's outcome was taken already",
            )));
        };
        let Some(out) = pending.wait(slice).transpose() else {
            return Ok(None);
        };
        // Decided, or the task is gone: either way there is nothing more to wait for.
        *slot = None;
        Ok(Some(Arc::new(Lock::new(out??))))
    }

    /// Cancels the acquisition: the attempt in flight is abandoned and its keys are released
    /// on every node; [`wait_outcome`](Self::wait_outcome) then returns `QL_CANCELLED`, or a
    /// success that came first. Never blocks.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }
}

impl Drop for PendingLock {
    fn drop(&mut self) {
        let untaken = self
            .pending
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some();
        if untaken {
            self.cancel.cancel();
        }
    }
}

#[uniffi::export]
impl Client {
    /// Starts an acquisition as [`Client::acquire`] does, and polls for its outcome for up to
    /// 500 µs when the process allows it (one polling thread at a time, more than one CPU).
    ///
    /// # Errors
    /// The acquisition's error when it failed within the call (`QL_INVALID`, `QL_BUSY`,
    /// `QL_QUORUM`, `QL_VALIDITY`), `QL_INVALID` when the engine's runtime cannot start.
    pub fn start_acquire(
        &self,
        resources: Vec<String>,
        options: LockConfig,
    ) -> Result<Started, NativeError> {
        let client = self.engine().clone();
        let opts = options.apply(client.lock_options());
        let cancel = CancelToken::new();
        let token = cancel.clone();
        let pending = Pending::spawn(async move {
            client
                .acquire_cancellable(resources.iter().map(String::as_bytes), &opts, &token)
                .await
        })?;
        if let Some(out) = pending.poll_briefly(None) {
            return Ok(Started {
                lock: Some(Arc::new(Lock::new(out?))),
                pending: None,
            });
        }
        Ok(Started {
            lock: None,
            pending: Some(Arc::new(PendingLock {
                pending: Mutex::new(Some(pending)),
                cancel,
            })),
        })
    }
}

#[uniffi::export]
impl Lock {
    /// [`Lock::release`], blocking the calling thread until every node answered or timed out
    /// (bounded by the node timeout; never interrupted).
    ///
    /// # Errors
    /// As [`Lock::release`]; `QL_INTERNAL` when the engine task ended without an output.
    pub fn release_blocking(&self) -> Result<ReleaseOutcome, NativeError> {
        Ok(ReleaseOutcome::of(&self.release_now()?))
    }

    /// [`release_blocking`](Self::release_blocking) for `RLock.unlock`, which needs no report:
    /// nothing to copy back.
    ///
    /// # Errors
    /// `QL_LOST` when the lock was lost when the release began (expired, taken, or stopped at
    /// an extension cap; as [`Lock::lost`], with its effects; the release still ran); otherwise as
    /// [`release_blocking`](Self::release_blocking).
    pub fn unlock_blocking(&self) -> Result<(), NativeError> {
        let lost_before = self
            .engine()
            .lost_signal()
            .get()
            .as_ref()
            .map(NativeError::from);
        self.release_now()?;
        lost_before.map_or(Ok(()), Err)
    }

    /// [`Lock::extend`], blocking the calling thread until a quorum answered or the round
    /// timed out (never interrupted).
    ///
    /// # Errors
    /// As [`Lock::extend`]; `QL_INTERNAL` when the engine task ended without an output.
    pub fn extend_blocking(&self, ttl: Duration) -> Result<(), NativeError> {
        let lock = self.engine().clone();
        Ok(Pending::spawn(async move { lock.extend(ttl).await })?.join()??)
    }
}

impl Lock {
    /// Releases on the runtime and blocks until the report is there.
    fn release_now(&self) -> Result<quorumlock::Report, NativeError> {
        let lock = self.engine().clone();
        Ok(Pending::spawn(async move { lock.release().await })?.join()??)
    }
}
