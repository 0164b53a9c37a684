//! A cluster member's acquisitions in flight, by value, so that a release or cleanup of a
//! value runs after them (REDLOCK.md §2.6).
//!
//! On a single master a request is queued on the connection at its first poll and the
//! server runs the connection's requests in order, so a release sent after an acquisition
//! was decided always runs after that acquisition's late `SET`. redis-rs's cluster driver
//! keeps no such order (it routes every request as a future of its own, through queues we
//! cannot size), and a release could overtake the `SET` it should delete, which then held the
//! key until its ttl. So on a cluster member a release waits until the acquisitions of the
//! same value on that member have answered (or were given up by their caller and the drain).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;

/// How many acquisitions of a value are in flight, and a channel whose sender is dropped
/// when the last one ends.
type Open = (usize, watch::Sender<()>);

/// Values with acquisitions in flight.
#[derive(Default)]
pub(crate) struct Writes {
    open: Mutex<HashMap<Arc<str>, Open>>,
}

/// Marks one acquisition of a value in flight until dropped.
pub(crate) struct Writing<'a> {
    writes: &'a Writes,
    value: Arc<str>,
}

impl Writes {
    /// Marks an acquisition of `value` in flight; call it before the request is sent.
    pub(crate) fn begin(&self, value: &str) -> Writing<'_> {
        let value: Arc<str> = Arc::from(value);
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.entry(value.clone())
            .or_insert_with(|| (0, watch::channel(()).0))
            .0 += 1;
        Writing {
            writes: self,
            value,
        }
    }

    /// Completes once no acquisition of `value` is in flight.
    pub(crate) async fn settled(&self, value: &str) {
        let rx = {
            let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
            match open.get(value) {
                Some((_, tx)) => tx.subscribe(),
                None => return,
            }
        };
        let mut rx = rx;
        // Ends with an error when the sender is dropped: the last acquisition ended.
        while rx.changed().await.is_ok() {}
    }
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        let mut open = self
            .writes
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((n, _)) = open.get_mut(&self.value) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_release_waits_for_every_acquisition_of_its_value() {
        let w = Writes::default();
        w.settled("v").await; // none in flight: at once
        let (a, b) = (w.begin("v"), w.begin("v"));
        let other = w.begin("x");
        let waiting = w.settled("v");
        tokio::pin!(waiting);
        assert!(futures_util::poll!(&mut waiting).is_pending());
        drop(a);
        drop(other);
        assert!(futures_util::poll!(&mut waiting).is_pending());
        drop(b);
        assert!(futures_util::poll!(&mut waiting).is_ready());
        assert!(
            w.open
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_empty()
        );
    }
}
