//! The held lock: its facts, extend, release and the lost signal.

use std::sync::Arc;
use std::time::Duration;

use crate::client::call_foreign;
use crate::error::{LostEvent, NativeError, NodeReport, nodes};
use crate::on_runtime;

/// What a release found (the C ABI's `held` output and the report).
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct ReleaseOutcome {
    /// True when at least a quorum of nodes still held the lock and deleted it.
    pub held_by_quorum: bool,
    /// One entry per node: `Released`, `NotHeld`, `HeldByOther`, or a node error.
    pub nodes: Vec<NodeReport>,
}

impl ReleaseOutcome {
    pub(crate) fn of(report: &quorumlock::Report) -> Self {
        Self {
            held_by_quorum: report.was_held_by_quorum(),
            nodes: nodes(report),
        }
    }
}

/// Receives the loss of a held lock; implemented by the host language. Called at most once
/// per registration, on a blocking-pool thread of the engine, never after a release.
#[uniffi::export(with_foreign)]
pub trait LostListener: Send + Sync {
    /// The lock was lost: expired, taken over, or stopped at an extension cap.
    fn on_lost(&self, event: LostEvent);
}

/// A held distributed lock on one or more resources. Act on the protected resource only
/// while `remaining()` is positive. A lock freed while held is released in the background.
#[derive(Debug, uniffi::Object)]
pub struct Lock {
    inner: Arc<quorumlock::Lock>,
}

impl Lock {
    pub(crate) fn new(inner: quorumlock::Lock) -> Self {
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The engine's lock.
    pub(crate) fn engine(&self) -> &Arc<quorumlock::Lock> {
        &self.inner
    }
}

#[uniffi::export]
impl Lock {
    /// The resources, sorted and deduplicated.
    pub fn resources(&self) -> Vec<String> {
        self.inner
            .resources()
            .iter()
            .map(|r| String::from_utf8_lossy(r).into_owned())
            .collect()
    }

    /// The lock value (unguessable; the same on every node).
    pub fn value(&self) -> String {
        self.inner.value().to_owned()
    }

    /// The fencing token of a fenced lock (the one of its first resource).
    pub fn token(&self) -> Option<u64> {
        self.inner.token()
    }

    /// The fencing tokens of a fenced lock, one per resource in `resources()` order.
    pub fn tokens(&self) -> Option<Vec<u64>> {
        self.inner.tokens().map(<[u64]>::to_vec)
    }

    /// The ttl it was acquired (or last extended) with.
    pub fn ttl(&self) -> Duration {
        self.inner.ttl()
    }

    /// Validity left now; zero once expired, lost or released.
    pub fn remaining(&self) -> Duration {
        self.inner.remaining()
    }

    /// True while held and within validity.
    pub fn is_held(&self) -> bool {
        self.inner.is_held()
    }

    /// Attempts the acquisition took.
    pub fn attempts(&self) -> u32 {
        self.inner.attempts()
    }

    /// Successful extensions so far.
    pub fn extensions(&self) -> u32 {
        self.inner.extensions()
    }

    /// The per-node report of the successful acquisition.
    pub fn report(&self) -> Vec<NodeReport> {
        nodes(self.inner.report())
    }

    /// The per-node reports of the failed attempts before the successful one.
    pub fn attempt_reports(&self) -> Vec<Vec<NodeReport>> {
        self.inner.attempt_reports().iter().map(nodes).collect()
    }

    /// The per-node report of the last successful extend, if any.
    pub fn extend_report(&self) -> Option<Vec<NodeReport>> {
        self.inner.extend_report().as_ref().map(nodes)
    }

    /// Starts or stops the automatic extension. Never blocks.
    ///
    /// # Errors
    /// `QL_INVALID` when starting on a lock that is no longer held.
    pub fn set_auto_extend(&self, on: bool) -> Result<(), NativeError> {
        Ok(self.inner.set_auto_extend(on)?)
    }

    /// True while the automatic extension runs.
    pub fn is_auto_extending(&self) -> bool {
        self.inner.is_auto_extending()
    }

    /// The loss, if the lock is lost now (a held lock past its deadline included).
    pub fn lost(&self) -> Option<LostEvent> {
        self.inner.lost_signal().get().as_ref().map(LostEvent::of)
    }

    /// Calls `listener` once when the lock is lost (at once if it is lost already); never
    /// after a release.
    ///
    /// # Errors
    /// `QL_INVALID` when the engine's runtime cannot start.
    pub fn on_lost(&self, listener: Arc<dyn LostListener>) -> Result<(), NativeError> {
        let handle = quorumlock::runtime::handle()?;
        let mut signal = self.inner.lost_signal();
        handle.spawn(async move {
            if let Some(e) = signal.wait().await {
                let event = LostEvent::of(&e);
                call_foreign(move || listener.on_lost(event));
            }
        });
        Ok(())
    }

    /// Extends the lock to `ttl` from now on a quorum of nodes; an expired lock is never
    /// revived. A failed extend changes nothing.
    ///
    /// # Errors
    /// `QL_LOST` (terminal), `QL_EXT_LIMIT`, `QL_QUORUM` or `QL_VALIDITY` (transient),
    /// `QL_INVALID` (released, bad ttl).
    pub async fn extend(&self, ttl: Duration) -> Result<(), NativeError> {
        let lock = self.inner.clone();
        on_runtime(async move { lock.extend(ttl).await }).await
    }

    /// Releases the lock on every node and returns the per-node report; idempotent.
    /// Releasing a lock that expired or was taken is not an error: the report shows it.
    ///
    /// # Errors
    /// Only `QL_INVALID`, in another process than the one that acquired.
    pub async fn release(&self) -> Result<ReleaseOutcome, NativeError> {
        let lock = self.inner.clone();
        let report = on_runtime(async move { lock.release().await }).await?;
        Ok(ReleaseOutcome::of(&report))
    }
}
