//! Automatic extension (REDLOCK.md §5.2): extend every `interval` from the last renewal,
//! retry transient failures quickly while the lock is still valid, and fire the lost
//! signal exactly once when extension fails for good.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::MonoTime;
use crate::lock::{self, Shared};
use crate::report::Report;
use crate::value;

/// Starts the watchdog. It ends when the lock is released, dropped (both notify `stop`) or
/// lost.
pub(crate) fn spawn(shared: &Arc<Shared>) {
    shared.grant.inner.runtime.spawn(run(shared.clone()));
}

async fn run(shared: Arc<Shared>) {
    let mut retry = false;
    loop {
        let Some((renewed_at, valid_until)) = lock::renewed_at(&shared) else {
            return;
        };
        let opts = &shared.grant.opts;
        let interval = opts.effective_extend_interval(opts.ttl);
        let next = if retry {
            let quick = (interval / 4).min(Duration::from_millis(100))
                + Duration::from_micros(value::jitter(20_000));
            MonoTime::now() + quick
        } else {
            renewed_at + interval
        };
        // Never sleep past the deadline: the loss must be seen by then.
        let wake = next.min(valid_until);
        let sleep = wake.saturating_since(MonoTime::now());
        tokio::select! {
            () = shared.stop.notified() => return,
            () = tokio::time::sleep(sleep) => {}
        }
        match lock::extend(&shared, opts.ttl).await {
            Ok(()) => retry = false,
            Err(e) if e.is_lost() || e.is_invalid_argument() => return,
            Err(e) if e.is_extension_limit() => {
                wait_out(&shared).await;
                return;
            }
            Err(e) => {
                tracing::debug!(error = %e, "auto-extension failed; retrying");
                retry = true;
            }
        }
    }
}

/// After a cap stopped the extensions: wait for the deadline, then signal the loss.
async fn wait_out(shared: &Arc<Shared>) {
    let Some((_, valid_until)) = lock::renewed_at(shared) else {
        return;
    };
    let stop = shared.stop.notified();
    tokio::select! {
        () = stop => {}
        () = tokio::time::sleep(valid_until.saturating_since(MonoTime::now())) => {
            lock::expired(shared, Report::default());
        }
    }
}
