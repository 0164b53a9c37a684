//! A cluster member's acquisitions in flight, by value, so that a release, cleanup, extend or
//! raise of a value runs after them (REDLOCK.md §2.6).
//!
//! On a single master a request is queued on the connection at its first poll and the
//! server runs the connection's requests in order, so a release sent after an acquisition
//! was decided runs after that acquisition's late `SET`. redis-rs's cluster driver keeps no
//! such order (it routes every request as a future of its own), and a release could overtake
//! the `SET` it should delete, which then held the key until its ttl. So on a cluster member
//! such a request first waits until the acquisitions of the same value that began before it
//! have ended (answered, failed, or given up by the drain that keeps them alive).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;

/// The acquisitions of one value in flight, by sequence number, and a channel that ticks
/// when one ends; its sender is dropped when the last one ends.
struct Open {
    seqs: Vec<u64>,
    tx: watch::Sender<()>,
}

/// Values with acquisitions in flight. A value can be shared by many locks (a caller-chosen
/// value), so a wait covers only the acquisitions that began before it.
#[derive(Default)]
pub(crate) struct Writes {
    /// The next sequence number, and the open acquisitions by value.
    state: Mutex<(u64, HashMap<Arc<str>, Open>)>,
}

/// Marks one acquisition of a value in flight until dropped.
pub(crate) struct Writing<'a> {
    writes: &'a Writes,
    value: Arc<str>,
    seq: u64,
}

impl Writes {
    fn lock(&self) -> MutexGuard<'_, (u64, HashMap<Arc<str>, Open>)> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks an acquisition of `value` in flight; call it before the request is sent.
    pub(crate) fn begin(&self, value: &str) -> Writing<'_> {
        let value: Arc<str> = Arc::from(value);
        let mut state = self.lock();
        let seq = state.0;
        state.0 += 1;
        state
            .1
            .entry(value.clone())
            .or_insert_with(|| Open {
                seqs: Vec::new(),
                tx: watch::channel(()).0,
            })
            .seqs
            .push(seq);
        Writing {
            writes: self,
            value,
            seq,
        }
    }

    /// Completes once no acquisition of `value` that began before this call is in flight.
    /// `node` names the member in the warning logged when the wait is dropped before it ends
    /// (the drain's 30 s bound, or the runtime shutting down): the request it held back is
    /// then never sent.
    pub(crate) async fn settled(&self, value: &str, node: usize) {
        let before = self.lock().0;
        let mut waiting = GiveUp { node, done: false };
        loop {
            let mut rx = {
                let state = self.lock();
                match state.1.get(value) {
                    Some(open) if open.seqs.iter().any(|&s| s < before) => open.tx.subscribe(),
                    _ => break,
                }
            };
            // Ok when one of them ended, an error when the last one did: look again.
            let _ = rx.changed().await;
        }
        waiting.done = true;
    }
}

/// Logs a wait of [`Writes::settled`] dropped before it ended.
struct GiveUp {
    node: usize,
    done: bool,
}

impl Drop for GiveUp {
    fn drop(&mut self) {
        if !self.done {
            tracing::warn!(
                node = self.node,
                "a release, extend or raise on a cluster member was dropped unsent while it waited for an acquisition of the same value in flight; a key a release was to delete lives until its ttl"
            );
        }
    }
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        let mut state = self.writes.lock();
        let Some(open) = state.1.get_mut(&self.value) else {
            return;
        };
        open.seqs.retain(|&s| s != self.seq);
        if open.seqs.is_empty() {
            state.1.remove(&self.value);
        } else {
            open.tx.send_replace(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wait_covers_the_acquisitions_of_its_value_that_began_before_it() {
        let w = Writes::default();
        w.settled("v", 0).await; // none in flight: at once
        let (a, b) = (w.begin("v"), w.begin("v"));
        let other = w.begin("x");
        let waiting = w.settled("v", 0);
        tokio::pin!(waiting);
        assert!(futures_util::poll!(&mut waiting).is_pending());
        // An acquisition of the same value that began after the wait does not hold it up.
        let later = w.begin("v");
        drop(a);
        drop(other);
        assert!(futures_util::poll!(&mut waiting).is_pending());
        drop(b);
        assert!(futures_util::poll!(&mut waiting).is_ready());
        drop(later);
        assert!(w.lock().1.is_empty());
    }
}
