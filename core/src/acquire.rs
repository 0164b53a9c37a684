//! The acquisition loop (REDLOCK.md §3.2): fresh value per attempt, parallel fan-out, decision
//! at quorum, validity on the monotonic clock, cleanup after every failed attempt and on
//! cancellation, retries with jitter within an optional wait budget.
//!
//! Waiting (REDLOCK.md §9): a call starts listening for releases after its *first failed*
//! attempt, not before its first attempt as §9 describes. Subscribing first would cost every
//! acquisition a `SUBSCRIBE` / `UNSUBSCRIBE` pair per node, although most never wait. The
//! release that could slip between the failed attempt and the live subscription is caught by
//! one `EXISTS` round right after subscribing: if a quorum of nodes no longer holds the keys,
//! the next attempt follows at once. After a wake-up the next attempt follows after
//! `uniform(0, 1 ms)`, so that the waiters woken by one release do not all collide, or after
//! `uniform(0, 20 ms)` when this caller won some nodes in its last attempt (a split vote).
//! Notices that arrive during an attempt are kept, unlike §9 says: a release that lands
//! right after the attempt's request reached a node would otherwise cost a whole retry delay
//! (seen in the hand-off benchmark); keeping it costs at most one extra attempt.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::cancel::CancelToken;
use crate::client::Inner;
use crate::clock::MonoTime;
use crate::config::LockOptions;
use crate::error::{Error, ErrorKind, MAX_ATTEMPT_REPORTS, Result};
use crate::fencing;
use crate::lock::{Grant, Lock};
use crate::metrics::ClientStats;
use crate::node::Node;
use crate::node::notify::Listener;
use crate::quorum::{self, Decide};
use crate::report::{NodeKind, Report};
use crate::value;
use quorumlock_proto::acquire::{
    AttemptVerdict, cleanup_plan, next_attempt, remember, verdict as attempt_verdict,
};

/// Sends RELEASE for `keys`/`value` to every node and waits (each node bounded by
/// `timeout`) for the per-node report.
pub(crate) async fn release_keys(
    inner: &Inner,
    keys: &Arc<[Vec<u8>]>,
    value: &Arc<str>,
    timeout: Duration,
) -> Report {
    release_on(inner, &inner.nodes, keys, value, timeout).await
}

async fn release_on(
    inner: &Inner,
    nodes: &[Arc<Node>],
    keys: &Arc<[Vec<u8>]>,
    value: &Arc<str>,
    timeout: Duration,
) -> Report {
    quorum::round(nodes, timeout, Decide::All, |node| {
        let (keys, value, notify) = (keys.clone(), value.clone(), inner.notify);
        async move { node.release(&keys, &value, notify).await }
    })
    .await
    .into_report()
}

/// Releases an attempt's keys when dropped while armed: a cancelled acquisition (its
/// future dropped mid-attempt) still cleans every node (REDLOCK.md §3.5).
struct CleanupGuard {
    inner: Arc<Inner>,
    keys: Arc<[Vec<u8>]>,
    value: Option<Arc<str>>,
    timeout: Duration,
}

impl CleanupGuard {
    /// Starts the cleanup now, in an engine-owned task.
    fn spawn(mut self) -> Option<JoinHandle<()>> {
        self.value
            .take()
            .map(|v| spawn_release(&self.inner, self.keys.clone(), v, self.timeout))
    }

    /// The attempt failed as `round` says: starts the cleanup on the nodes where it may
    /// have written a key. Nothing to clean (every node refused or was not asked): `None`.
    fn spawn_after(mut self, round: &quorum::Round) -> Option<JoinHandle<()>> {
        let value = self.value.take()?;
        // A cluster member's client retries a request after an I/O error by itself, so a
        // `HeldByOther` there may follow our own first write: clean cluster members that were
        // asked, whatever they answered (compare-and-delete touches only our value).
        let plan = cleanup_plan(round);
        let dirty: Vec<Arc<Node>> = self
            .inner
            .nodes
            .iter()
            .zip(&round.results)
            .filter(|(n, r)| {
                plan.contains(&r.index) || (n.is_cluster() && r.kind == NodeKind::HeldByOther)
            })
            .map(|(n, _)| n.clone())
            .collect();
        if dirty.is_empty() {
            return None;
        }
        let (inner, keys, timeout) = (self.inner.clone(), self.keys.clone(), self.timeout);
        Some(self.inner.runtime.spawn(async move {
            let report = release_on(&inner, &dirty, &keys, &value, timeout).await;
            tracing::trace!(%report, "cleanup done");
        }))
    }

    /// The attempt succeeded: the keys now belong to the returned lock.
    fn disarm(mut self) -> Option<Arc<str>> {
        self.value.take()
    }
}

impl Drop for CleanupGuard {
    fn drop(&mut self) {
        if let Some(v) = self.value.take() {
            tracing::debug!("acquisition cancelled; releasing its keys in the background");
            spawn_release(&self.inner, self.keys.clone(), v, self.timeout);
        }
    }
}

pub(crate) fn spawn_release(
    inner: &Arc<Inner>,
    keys: Arc<[Vec<u8>]>,
    value: Arc<str>,
    timeout: Duration,
) -> JoinHandle<()> {
    let task_inner = inner.clone();
    inner.runtime.spawn(async move {
        let report = release_keys(&task_inner, &keys, &value, timeout).await;
        tracing::trace!(%report, "background release done");
    })
}

/// Completes when `cancel` is cancelled; never without a token.
async fn cancelled(cancel: Option<&CancelToken>) {
    match cancel {
        Some(c) => c.cancelled().await,
        None => std::future::pending().await,
    }
}

/// The `Cancelled` outcome, after the attempt's cleanup has finished (bounded by
/// `node_timeout`), so a caller that exits right away leaves no key behind.
async fn cancel_now(
    cleanup: Option<JoinHandle<()>>,
    attempts: u32,
    history: &mut Vec<Report>,
) -> Error {
    if let Some(c) = cleanup {
        let _ = c.await;
    }
    Error::new(ErrorKind::Cancelled, "the acquisition was cancelled")
        .with_attempts(attempts)
        .with_history(std::mem::take(history))
}

/// One acquire call: the attempts of [`attempts`], counted in the client's metrics.
pub(crate) async fn acquire(
    inner: &Arc<Inner>,
    resources: Vec<Vec<u8>>,
    opts: LockOptions,
    cancel: Option<&CancelToken>,
) -> Result<Lock> {
    let start = MonoTime::now();
    let result = attempts(inner, resources, opts, cancel).await;
    let elapsed = MonoTime::now() - start;
    let outcome = result.as_ref().map(|_| ()).map_err(Error::kind);
    inner.stats.acquire.done(outcome, elapsed);
    tracing::debug!(
        target: "quorumlock",
        op = "acquire",
        outcome = outcome.err().map_or("ok", ErrorKind::as_str),
        attempts = result.as_ref().map_or_else(Error::attempts, Lock::attempts),
        elapsed_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
        "acquire finished"
    );
    result
}

async fn attempts(
    inner: &Arc<Inner>,
    resources: Vec<Vec<u8>>,
    opts: LockOptions,
    cancel: Option<&CancelToken>,
) -> Result<Lock> {
    let ttl = opts.get_ttl();
    let ttl_ms = inner.timing.check(&opts, ttl)?;
    let keys: Arc<[Vec<u8>]> = resources.iter().map(|r| inner.key(r)).collect();
    let node_timeout = opts.effective_node_timeout(ttl);
    let drift = inner.timing.drift(ttl);
    let min_validity_us =
        i64::try_from(opts.effective_min_validity(ttl).as_micros()).unwrap_or(i64::MAX);
    let q = inner.quorum();
    let fenced = opts.get_fenced();
    let all_keys = if fenced {
        fencing::with_counters(&keys)
    } else {
        keys.clone()
    };
    let counter_ttl_ms = opts
        .get_fence_counter_ttl()
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let start = MonoTime::now();
    let mut attempt: u32 = 0;
    // Created at the first wait (once per call); listening ends with the call
    // (REDLOCK.md §9).
    let mut listener: Option<Listener> = None;
    let mut history: Vec<Report> = Vec::new();
    loop {
        attempt = attempt.saturating_add(1);
        ClientStats::bump(&inner.stats.attempts);
        // Notices from before this attempt are answered by it. Notices that arrive while it
        // runs are kept: a release that lands just after this attempt's request reached a
        // node must still wake the wait that follows a failure (at the cost of one more
        // attempt when the notice was older than the key this attempt met).
        if let Some(l) = &listener {
            l.reset();
        }
        let span = tracing::debug_span!("quorumlock.acquire", attempt, nodes = inner.nodes.len());
        let guard = CleanupGuard {
            inner: inner.clone(),
            keys: keys.clone(),
            value: Some(match opts.get_value() {
                Some(given) => given.into(),
                None => value::fresh()?.into(),
            }),
            timeout: node_timeout,
        };
        let value: Arc<str> = guard.value.clone().unwrap_or_else(|| Arc::from(""));
        let slots = fenced.then(|| fencing::slots(inner.nodes.len()));
        let t1 = MonoTime::now();
        let round = quorum::round(&inner.nodes, node_timeout, Decide::AtQuorum, |node| {
            let (keys, value, slots) = (all_keys.clone(), value.clone(), slots.clone());
            async move {
                let Some(slots) = slots else {
                    return node.acquire(&keys, &value, ttl_ms).await;
                };
                match node
                    .fenced_acquire(&keys, &value, ttl_ms, counter_ttl_ms)
                    .await?
                {
                    Some(tokens) => {
                        fencing::record(&slots, node.index, tokens);
                        Ok(NodeKind::Ok)
                    }
                    None => Ok(NodeKind::HeldByOther),
                }
            }
        })
        .instrument(span);
        let round = tokio::select! {
            biased;
            round = round => round,
            () = cancelled(cancel) => return Err(cancel_now(guard.spawn(), attempt, &mut history).await),
        };
        let mut round = round;
        let votes = round.count(NodeKind::Ok);
        let mut tokens = None;
        if let Some(slots) = &slots
            && votes >= q
        {
            let settled = fencing::settle_tokens(
                inner,
                &mut round,
                slots,
                &all_keys,
                &value,
                node_timeout,
                counter_ttl_ms,
            );
            tokens = settled.await;
        }
        let fence_failed = fenced && tokens.is_none();
        let t2 = MonoTime::now();
        let v = quorum::validity_us(ttl, t2 - t1, drift);
        let kind = match attempt_verdict(&round, v, min_validity_us, fence_failed) {
            AttemptVerdict::Failed(kind, message) => (kind, message),
            AttemptVerdict::Granted => {
                let value = guard.disarm().unwrap_or(value);
                tracing::debug!(attempt, validity_us = v, "acquired");
                return Ok(Lock::new(Grant {
                    inner: inner.clone(),
                    resources,
                    keys,
                    value,
                    opts,
                    t1,
                    acquired_at: t2,
                    valid_until: t1 + (ttl - drift),
                    attempts: attempt,
                    report: round.into_report(),
                    history,
                    tokens,
                }));
            }
        };
        let (kind, message) = kind;
        let mut cleanup = guard.spawn_after(&round);
        let report = round.into_report();
        remember(&mut history, &report, MAX_ATTEMPT_REPORTS);
        let error = Error::new(kind, message)
            .with_attempts(attempt)
            .with_validity_us(v)
            .with_report(report);
        tracing::debug!(attempt, %kind, "attempt failed");
        let elapsed = MonoTime::now() - start;
        let Some(delay) = next_attempt(&opts, attempt, elapsed, value::random8()) else {
            await_cleanup(&mut cleanup).await;
            return Err(error.with_history(history));
        };
        let mut vacant = false;
        if attempt == 1
            && let Some(notifier) = &inner.notifier
        {
            // The first wait of this call: listen (while our cleanup finishes), then look
            // whether the holder released before the subscription was live.
            tokio::select! {
                (l, v) = async {
                    let (l, ()) = tokio::join!(
                        notifier.listen(&keys, q, node_timeout),
                        await_cleanup(&mut cleanup)
                    );
                    let vacant = l.is_some() && vacant_on_quorum(inner, &keys, node_timeout).await;
                    (l, vacant)
                } => (listener, vacant) = (l, v),
                () = cancelled(cancel) => return Err(cancel_now(cleanup, attempt, &mut history).await),
            }
        }
        if !vacant {
            let released = async {
                match &listener {
                    Some(l) => l.released().await,
                    None => std::future::pending().await,
                }
            };
            let woke = tokio::select! {
                () = tokio::time::sleep(delay) => false,
                () = released => true,
                () = cancelled(cancel) => return Err(cancel_now(cleanup, attempt, &mut history).await),
            };
            if woke {
                ClientStats::bump(&inner.stats.wakeups);
                tracing::trace!(attempt, "woken by a release");
                // Every waiter wakes on the same release: spread them out so that the first
                // one's request lands everywhere before the next one's. A waiter that won some
                // nodes just lost a split vote to other waiters: spread it much wider.
                let cap = if votes > 0 {
                    SPLIT_SPREAD_US
                } else {
                    WAKE_SPREAD_US
                };
                let spread = Duration::from_micros(value::jitter(cap));
                tokio::select! {
                    () = tokio::time::sleep(spread) => {}
                    () = cancelled(cancel) => return Err(cancel_now(cleanup, attempt, &mut history).await),
                }
            }
        }
        await_cleanup(&mut cleanup).await;
    }
}

/// The longest pause before the attempt that follows a wake-up (REDLOCK.md §9). Measured
/// with 32 waiting clients (`tokens_strictly_increase_across_concurrent_clients`): 1 ms
/// halves the time per hand-off against none; wider spreads gain nothing more.
const WAKE_SPREAD_US: u64 = 1_000;
/// The same after a split vote among waiters (REDLOCK.md §9: `uniform(0, 20 ms)`).
const SPLIT_SPREAD_US: u64 = 20_000;

/// Waits for a background cleanup (bounded by `node_timeout`); a panic in the task is not
/// the caller's failure. Left in place if this wait is cancelled.
async fn await_cleanup(cleanup: &mut Option<JoinHandle<()>>) {
    if let Some(c) = cleanup {
        let _ = c.await;
    }
    *cleanup = None;
}

/// True when a quorum of nodes holds none of `keys`: the holder released between the failed
/// attempt and the moment the subscription became live, so no message will come.
async fn vacant_on_quorum(inner: &Inner, keys: &Arc<[Vec<u8>]>, timeout: Duration) -> bool {
    let round = quorum::round(&inner.nodes, timeout, Decide::All, |node| {
        let keys = keys.clone();
        async move { node.vacant(&keys).await }
    })
    .await;
    round.count(NodeKind::NotHeld) >= inner.quorum()
}
