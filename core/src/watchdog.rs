//! Automatic extension (REDLOCK.md §5.2): extend every `interval` from the last renewal,
//! retry transient failures quickly while the lock is still valid, and fire the lost
//! signal exactly once when extension fails for good.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::MonoTime;
use crate::lock::{self, Shared};
use crate::report::Report;
use crate::value;

/// Starts a watchdog of generation `gen`. It ends when the generation changes (release,
/// drop, `set_auto_extend(false)`) or the lock is lost.
pub(crate) fn spawn(shared: &Arc<Shared>, generation: u64) {
    shared
        .grant
        .inner
        .runtime
        .spawn(run(shared.clone(), generation));
}

async fn run(shared: Arc<Shared>, generation: u64) {
    let mut retry = false;
    let mut current = shared.watchdog_gen.subscribe();
    loop {
        if *current.borrow_and_update() != generation {
            return;
        }
        let Some((renewed_at, valid_until)) = lock::renewed_at(&shared) else {
            return;
        };
        let opts = &shared.grant.opts;
        let interval = opts.effective_extend_interval(opts.get_ttl());
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
            _ = current.changed() => continue,
            () = tokio::time::sleep(sleep) => {}
        }
        if *current.borrow() != generation {
            return;
        }
        match lock::extend(&shared, opts.get_ttl()).await {
            Ok(()) => retry = false,
            Err(e) if e.is_lost() || e.is_invalid_argument() => return,
            Err(e) if e.is_extension_limit() => {
                wait_out(&shared, generation).await;
                return;
            }
            Err(e) => {
                tracing::debug!(error = %e, "auto-extension failed; retrying");
                retry = true;
            }
        }
    }
}

/// After a cap stopped the extensions: wait for the deadline, then signal the loss
/// (unless the lock is released or the watchdog stopped first).
async fn wait_out(shared: &Arc<Shared>, generation: u64) {
    let Some((_, valid_until)) = lock::renewed_at(shared) else {
        return;
    };
    let mut current = shared.watchdog_gen.subscribe();
    let stopped = current.wait_for(|g| *g != generation);
    tokio::select! {
        _ = stopped => {}
        () = tokio::time::sleep(valid_until.saturating_since(MonoTime::now())) => {
            lock::expired(shared, Report::default());
        }
    }
}
