//! Cancellation handles for callers that cannot drop a future: the C ABI, Python threads,
//! Node `AbortSignal`s, the blocking API (REDLOCK.md §3.5).

use std::sync::Arc;

use tokio::sync::watch;

/// A cloneable cancellation handle. Cancelling an acquisition in flight abandons it and
/// releases its keys on every node; a success decided first still reaches the caller.
#[derive(Clone, Debug)]
pub struct CancelToken {
    tx: Arc<watch::Sender<bool>>,
}

impl Default for CancelToken {
    fn default() -> Self {
        Self::new()
    }
}

impl CancelToken {
    /// A new, not yet cancelled token.
    pub fn new() -> Self {
        Self {
            tx: Arc::new(watch::Sender::new(false)),
        }
    }

    /// Cancels every operation waiting on this token (now and later). Callable from any
    /// thread; never blocks.
    pub fn cancel(&self) {
        self.tx.send_replace(true);
    }

    /// True once [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        *self.tx.borrow()
    }

    /// Completes when the token is cancelled.
    pub async fn cancelled(&self) {
        let mut rx = self.tx.subscribe();
        // The sender lives in `self`, so `wait_for` only ends by seeing `true`.
        let _ = rx.wait_for(|c| *c).await;
    }
}
