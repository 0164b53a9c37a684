//! Automatic extension (REDLOCK.md §5.2): extend every `interval` from the last renewal,
//! retry transient failures quickly while the lock is still valid, and fire the lost
//! signal exactly once when extension fails for good.

use std::sync::Arc;

use crate::batch;
use crate::clock::MonoTime;
use crate::lock::{self, Shared};
use crate::report::Report;
use crate::value;
use quorumlock_proto::hold::AfterFailure;

/// How many automatic extensions of one client may be in flight at once: as many as its
/// batches in flight carry (`batch`). A client holding many locks (tens of thousands) extends
/// in bursts: without a bound every due lock sent its round at once, replies queued behind
/// each other past the node timeout, every extension failed and retried within 100 ms, and
/// the retries kept the queue full (measured with 10 000 locks on one thread: 41 616 failed
/// extensions in 20 s, 99 successful). With the bound, due locks wait their turn for a permit,
/// and a round's clock starts only once the permit is taken; with the extensions batched, a
/// due lock waits for a permit at most about one batch's round trip. Explicit `extend` calls
/// are not bounded.
pub(crate) const MAX_IN_FLIGHT: usize = batch::MAX_BATCH * batch::MAX_BATCHES;

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
    'watch: loop {
        if *current.borrow_and_update() != generation {
            return;
        }
        let opts = &shared.grant.opts;
        let interval = opts.effective_extend_interval(opts.get_ttl());
        let Some((renewed, _)) = lock::renewed_at(&shared) else {
            return;
        };
        // Random bytes (a system call) only for a retry's jitter.
        let random = if retry { value::random8() } else { [0; 8] };
        let Some(wake) = lock::next_extend(&shared, interval, retry, random) else {
            return;
        };
        // `next_extend` never lies past the deadline: the loss must be seen by then.
        let sleep = wake.saturating_since(MonoTime::now());
        // `biased`: the branches in order, without drawing a random start per poll.
        tokio::select! {
            biased;
            _ = current.changed() => continue,
            () = tokio::time::sleep(sleep) => {}
        }
        if *current.borrow() != generation {
            return;
        }
        let inner = &shared.grant.inner;
        // The wait for a permit is bounded by the deadline like the sleep above: a lock whose
        // validity runs out in the queue is lost then, not when its turn comes. Mostly a permit
        // is free: then no timer and no select.
        let permit = match inner.extend_permits.try_acquire() {
            Ok(p) => Ok(p),
            Err(_) => loop {
                let Some((_, valid_until)) = lock::renewed_at(&shared) else {
                    return;
                };
                tokio::select! {
                    biased;
                    _ = current.changed() => continue 'watch,
                    p = inner.extend_permits.acquire() => break p,
                    () = tokio::time::sleep(valid_until.saturating_since(MonoTime::now())) => {
                        // An explicit extend may have renewed it meanwhile: then wait on.
                        if lock::renewed_at(&shared).is_some_and(|(_, v)| v <= MonoTime::now()) {
                            lock::expired(&shared, Report::default());
                            return;
                        }
                    }
                }
            },
        };
        if *current.borrow() != generation {
            return;
        }
        // An explicit extend during the waits may have renewed the lock: then this one is not
        // due any more (and would count against max_extensions for nothing). (Not a due time
        // recomputed now: a retry's lies ahead of every "now", so it never came due.)
        match lock::renewed_at(&shared) {
            None => return,
            Some((r, _)) if r != renewed => {
                retry = false;
                continue;
            }
            Some(_) => {}
        }
        let result = lock::extend(&shared, opts.get_ttl(), lock::Via::Batched).await;
        drop(permit);
        match result {
            Ok(()) => retry = false,
            Err(e) => match AfterFailure::of(&e) {
                AfterFailure::Stop => return,
                AfterFailure::WaitOut => {
                    wait_out(&shared, generation).await;
                    return;
                }
                AfterFailure::Retry => {
                    tracing::debug!(error = %e, "auto-extension failed; retrying");
                    retry = true;
                }
            },
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
