//! The acquisition's timer. tokio's timer wheel has 1 ms slots and rounds every deadline up to
//! the next one, so an attempt due now (after a release notice) or in a few hundred µs (the
//! shortest split-vote spreads and retry delays) would wait for the next tick, and the waiters
//! of one process due within one millisecond would all start on the same tick (until
//! 2026-12-05 every waiter of a client woken by a release drew a `uniform(0, 1 ms)` spread).
//! A deadline less than [`FINE_BELOW`] away therefore runs as a sleep of the OS (nanosecond
//! resolution, tens of µs of slack) on tokio's blocking pool, at most [`FINE_MAX`] at once per
//! process, and one already due fires at once; longer ones on tokio's timer. (A `timerfd`
//! watched by the runtime would save the thread hop, but registering a file descriptor with
//! tokio is `unsafe`, which the engine forbids.)

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::{Instant, Sleep};

use crate::clock::MonoTime;

/// Deadlines closer than this use the fine timer.
pub(crate) const FINE_BELOW: Duration = Duration::from_millis(2);
/// Fine sleeps a process runs at once, at most: beyond, deadlines go to tokio's timer (a tick
/// late), so that a burst of waiters woken together never fills the blocking pool, which also
/// runs host callbacks and the user's blocking work.
const FINE_MAX: usize = 32;
/// Fine sleeps running now.
static FINE_NOW: AtomicUsize = AtomicUsize::new(0);

/// One of the [`FINE_MAX`] fine sleeps, given back when dropped.
struct Slot;

impl Slot {
    /// A slot, when fewer than [`FINE_MAX`] are taken.
    fn take() -> Option<Slot> {
        // Counted first, so that two callers cannot both take the last one; given back by the
        // drop when over the limit.
        let slot = Slot;
        (FINE_NOW.fetch_add(1, Ordering::Relaxed) < FINE_MAX).then_some(slot)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        FINE_NOW.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Clears the count in a child process after `fork()` (the parent's sleeps do not end there);
/// called when the runtime is created anew there.
pub(crate) fn after_fork() {
    FINE_NOW.store(0, Ordering::Relaxed);
}

/// One timer, re-armed with [`Timer::reset`] and awaited with [`Timer::fired`]; its coarse
/// part is a `Sleep` pinned by the caller (on its stack, no allocation per acquisition).
pub(crate) struct Timer<'a> {
    coarse: Pin<&'a mut Sleep>,
    fine: Fine,
}

/// The fine sleep of the last reset.
enum Fine {
    /// The last reset was far: the coarse timer holds the deadline.
    Unused,
    /// Sleeping on the blocking pool.
    Sleeping(JoinHandle<()>),
    /// Done (a finished `JoinHandle` must not be polled again).
    Fired,
}

impl<'a> Timer<'a> {
    /// A timer over `coarse`; it fires when `coarse` does until it is reset.
    pub(crate) fn new(coarse: Pin<&'a mut Sleep>) -> Timer<'a> {
        Timer {
            coarse,
            fine: Fine::Unused,
        }
    }

    /// Fires `left` from now, replacing the previous deadline. (A replaced fine sleep ends on
    /// its own within [`FINE_BELOW`].)
    pub(crate) fn reset(&mut self, left: Duration) {
        if left.is_zero() {
            self.fine = Fine::Fired;
        } else if let Some(slot) = (left < FINE_BELOW).then(Slot::take).flatten() {
            let until = MonoTime::now() + left;
            // The slot is given back however the sleep ends, also when the runtime drops it
            // unrun.
            self.fine = Fine::Sleeping(tokio::task::spawn_blocking(move || {
                let _slot = slot;
                std::thread::sleep(until.saturating_since(MonoTime::now()));
            }));
        } else {
            self.fine = Fine::Unused;
            self.coarse.as_mut().reset(Instant::now() + left);
        }
    }

    /// Completes at the deadline (at once if it passed, and again at once until the next
    /// [`reset`](Self::reset)). Dropped before it completes, it keeps the deadline.
    pub(crate) async fn fired(&mut self) {
        match &mut self.fine {
            Fine::Sleeping(sleep) => {
                // A sleep cannot fail; a runtime shutting down ends the call anyway.
                let _ = sleep.await;
                self.fine = Fine::Fired;
            }
            Fine::Fired => {}
            Fine::Unused => self.coarse.as_mut().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_close_deadline_fires_on_time_and_a_reset_replaces_it() {
        let coarse = tokio::time::sleep(Duration::ZERO);
        tokio::pin!(coarse);
        let mut timer = Timer::new(coarse);
        // Fires at once until reset.
        tokio::time::timeout(Duration::from_secs(5), timer.fired())
            .await
            .expect("a new timer fires at once");
        // A close deadline: not before it.
        let t0 = MonoTime::now();
        timer.reset(Duration::from_micros(300));
        tokio::time::timeout(Duration::from_secs(5), timer.fired())
            .await
            .expect("fires");
        assert!(MonoTime::now() - t0 >= Duration::from_micros(300));
        tokio::time::timeout(Duration::from_secs(5), timer.fired())
            .await
            .expect("fired stays fired until a reset");
        // A close deadline replaced by a far one does not fire at the close one.
        timer.reset(Duration::from_micros(100));
        timer.reset(Duration::from_secs(30));
        assert!(
            tokio::time::timeout(Duration::from_millis(50), timer.fired())
                .await
                .is_err(),
            "the replaced close deadline fired"
        );
        // And a far one replaced by a close one fires at the close one.
        timer.reset(Duration::from_micros(200));
        tokio::time::timeout(Duration::from_secs(10), timer.fired())
            .await
            .expect("the new close deadline fires, not the far one");
        timer.reset(Duration::ZERO);
        tokio::time::timeout(Duration::from_secs(5), timer.fired())
            .await
            .expect("a zero deadline fires");
    }
}
