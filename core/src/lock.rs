//! The lock handle (Held, Lost, Released): extend, release, the lost signal, and release on
//! drop (REDLOCK.md §4, §5).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

use crate::acquire::{release_keys, spawn_release};
use crate::client::Inner;
use crate::clock::MonoTime;
use crate::config::LockOptions;
use crate::error::{Error, ErrorKind, Result};
use crate::metrics::ClientStats;
use crate::node::Prepared;
use crate::quorum::{self, Decide};
use crate::report::Report;
use crate::watchdog;
use quorumlock_proto::command;
use quorumlock_proto::hold::{ExtendOutcome, Hold};

/// What a successful acquisition hands to [`Lock::new`].
pub(crate) struct Grant {
    pub(crate) inner: Arc<Inner>,
    pub(crate) resources: Vec<Vec<u8>>,
    pub(crate) keys: Arc<[Vec<u8>]>,
    pub(crate) value: Arc<str>,
    pub(crate) opts: LockOptions,
    pub(crate) t1: MonoTime,
    pub(crate) acquired_at: MonoTime,
    pub(crate) valid_until: MonoTime,
    pub(crate) attempts: u32,
    pub(crate) report: Report,
    /// The failed attempts' reports before the successful one (at most the error cap).
    pub(crate) history: Vec<Report>,
    /// Fencing tokens, one per resource in sorted order, for fenced acquisitions.
    pub(crate) tokens: Option<Vec<u64>>,
}

enum Phase {
    Held,
    Lost(Error),
    Released(Report),
}

struct State {
    phase: Phase,
    /// The deadline, the last renewal (the watchdog counts from it), the extensions and the
    /// caps: the protocol's `Hold`, which also makes the extend pre-checks.
    hold: Hold,
    /// The watchdog is (meant to be) running.
    auto: bool,
    /// The per-node report of the last successful extend.
    extended: Option<Report>,
}

pub(crate) struct Shared {
    pub(crate) grant: Grant,
    state: Mutex<State>,
    /// Serializes extend and release on this handle, so release waits for an extend in flight.
    op: tokio::sync::Mutex<()>,
    signal: watch::Sender<Signal>,
    /// The current watchdog generation; a watchdog runs only while its generation is
    /// current, so bumping it stops the watchdog (release, drop, `set_auto_extend(false)`).
    pub(crate) watchdog_gen: watch::Sender<u64>,
}

/// What the lost signal has seen.
#[derive(Clone)]
enum Signal {
    Held,
    Lost(Error),
    Released,
}

/// A held distributed lock on one or more resources.
///
/// Act on the protected resource only while [`remaining`](Self::remaining) is positive: a
/// holder that pauses after checking can still act late, as with every lease-based lock
/// (REDLOCK.md §1.4). Release with [`release`](Self::release); a lock dropped while held is
/// released in the background with a warning.
#[must_use = "a lock is released when dropped"]
pub struct Lock {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("resources", &self.shared.grant.resources.len())
            .field("remaining", &self.remaining())
            .field("attempts", &self.shared.grant.attempts)
            .finish_non_exhaustive()
    }
}

fn lock_state(shared: &Shared) -> MutexGuard<'_, State> {
    shared.state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Lock {
    pub(crate) fn new(grant: Grant) -> Lock {
        let state = State {
            phase: Phase::Held,
            hold: Hold::new(
                &grant.opts,
                grant.t1.as_micros(),
                grant.acquired_at.as_micros(),
                grant.valid_until.as_micros(),
            ),
            extended: None,
            auto: false,
        };
        let auto = grant.opts.get_auto_extend();
        let shared = Arc::new(Shared {
            grant,
            state: Mutex::new(state),
            op: tokio::sync::Mutex::new(()),
            signal: watch::Sender::new(Signal::Held),
            watchdog_gen: watch::Sender::new(0),
        });
        let lock = Lock { shared };
        if auto {
            lock.start_watchdog();
        }
        lock
    }

    /// The resources, sorted and deduplicated.
    pub fn resources(&self) -> &[Vec<u8>] {
        &self.shared.grant.resources
    }
    /// The random value (40 hex characters) stored in the keys; usable for check-and-set at
    /// the protected resource or for [`crate::Client::release_value`].
    pub fn value(&self) -> &str {
        &self.shared.grant.value
    }
    /// The fencing token of a fenced acquisition (of its first resource, in sorted order):
    /// strictly greater than every token returned before for that resource. Pass it to the
    /// protected resource, which accepts only tokens at least as high as the highest it has
    /// seen (for a resource kept in Redis: [`crate::FENCE_CHECK_SCRIPT`]). `None` when the
    /// lock was not acquired with [`LockOptions::fenced`].
    pub fn token(&self) -> Option<u64> {
        self.shared.grant.tokens.as_ref()?.first().copied()
    }
    /// The fencing tokens, one per resource in [`resources`](Self::resources) order.
    pub fn tokens(&self) -> Option<&[u64]> {
        self.shared.grant.tokens.as_deref()
    }
    /// The TTL the lock was acquired with.
    pub fn ttl(&self) -> Duration {
        self.shared.grant.opts.get_ttl()
    }
    /// Attempts the acquisition took.
    pub fn attempts(&self) -> u32 {
        self.shared.grant.attempts
    }
    /// The per-node report of the successful attempt.
    pub fn report(&self) -> &Report {
        &self.shared.grant.report
    }
    /// The per-node report of every attempt of the acquisition, oldest first: the failed
    /// ones (the most recent [`crate::MAX_ATTEMPT_REPORTS`]), then [`report`](Self::report).
    pub fn attempt_reports(&self) -> Vec<Report> {
        let g = &self.shared.grant;
        g.history.iter().chain([&g.report]).cloned().collect()
    }
    /// The per-node report of the last successful [`extend`](Self::extend) (by the caller or
    /// the auto-extension), if any. A failed extend's report is in its error.
    pub fn extend_report(&self) -> Option<Report> {
        lock_state(&self.shared).extended.clone()
    }
    /// The per-node report of the successful [`release`](Self::release), once released (the
    /// report a repeated `release` returns).
    pub fn release_report(&self) -> Option<Report> {
        match &lock_state(&self.shared).phase {
            Phase::Released(report) => Some(report.clone()),
            _ => None,
        }
    }
    /// When the acquisition was decided (T2), on [`MonoTime`].
    pub fn acquired_at(&self) -> MonoTime {
        self.shared.grant.acquired_at
    }
    /// The instant until which the holder may act, on [`MonoTime`].
    pub fn valid_until(&self) -> MonoTime {
        MonoTime::from_micros(lock_state(&self.shared).hold.valid_until_us())
    }
    /// Validity left now; zero once expired, lost or released.
    pub fn remaining(&self) -> Duration {
        let st = lock_state(&self.shared);
        match st.phase {
            Phase::Held => st.hold.remaining(MonoTime::now().as_micros()),
            _ => Duration::ZERO,
        }
    }
    /// True while held and within validity.
    pub fn is_held(&self) -> bool {
        !self.remaining().is_zero()
    }
    /// Successful extensions so far.
    pub fn extensions(&self) -> u32 {
        lock_state(&self.shared).hold.extensions()
    }
    /// A signal that fires once when the lock is lost (see [`LostSignal`]).
    pub fn lost_signal(&self) -> LostSignal {
        LostSignal {
            rx: self.shared.signal.subscribe(),
            shared: self.shared.clone(),
        }
    }

    /// Starts or stops the automatic extension (every `extend_interval`, default `ttl / 3`)
    /// of a held lock. Never blocks.
    ///
    /// # Errors
    /// `InvalidArgument` when starting on a lock that is no longer held, or in another
    /// process.
    pub fn set_auto_extend(&self, on: bool) -> Result<()> {
        self.shared.grant.inner.check_process()?;
        if on {
            if renewed_at(&self.shared).is_none() {
                return Err(Error::invalid("the lock is no longer held"));
            }
            self.start_watchdog();
        } else {
            stop_watchdog(&self.shared);
        }
        Ok(())
    }

    /// True while the automatic extension runs.
    pub fn is_auto_extending(&self) -> bool {
        lock_state(&self.shared).auto
    }

    fn start_watchdog(&self) {
        let mut st = lock_state(&self.shared);
        if !st.auto {
            st.auto = true;
            self.shared.watchdog_gen.send_modify(|g| *g += 1);
            watchdog::spawn(&self.shared, *self.shared.watchdog_gen.borrow());
        }
    }

    /// Extends the lock to `ttl` from the start of this call, on a quorum of nodes.
    ///
    /// Checks the local deadline first, so an expired lock is never revived and nothing is
    /// sent. Keys are only ever lengthened and never re-created; a failed extend changes
    /// nothing and the previous deadline stays in force. Takes about one round trip, bounded
    /// by `node_timeout` and by the current deadline.
    ///
    /// # Errors
    /// `Lost` (expired or taken over; terminal), `ExtensionLimit` (a cap), `QuorumNotReached`
    /// or `ValidityTooShort` (transient: the lock stays held until its old deadline),
    /// `InvalidArgument` (released, bad ttl, another process).
    pub async fn extend(&self, ttl: Duration) -> Result<()> {
        extend(&self.shared, ttl, Via::Alone).await
    }

    /// Releases the lock on every node (compare-and-delete) and returns the per-node report.
    /// Stops the auto-extension first and waits for an extend in flight. Idempotent: a
    /// second call returns the first report without sending anything. Releasing a lock
    /// that expired or was taken over is not an error; the report shows `NotHeld` or
    /// `HeldByOther`. Bounded by `node_timeout` (plus an extend in flight).
    ///
    /// # Errors
    /// Only `InvalidArgument`, when called in another process than the one that acquired.
    pub async fn release(&self) -> Result<Report> {
        release(&self.shared).await
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let shared = &self.shared;
        stop_watchdog(shared);
        let held = matches!(lock_state(shared).phase, Phase::Held);
        if held && shared.grant.inner.check_process().is_ok() {
            tracing::warn!("a lock was dropped while held; releasing it in the background");
            let task = shared.clone();
            shared.grant.inner.runtime.spawn(async move {
                let _ = release(&task).await;
            });
        }
    }
}

fn stop_watchdog(shared: &Shared) {
    let mut st = lock_state(shared);
    if st.auto {
        st.auto = false;
        shared.watchdog_gen.send_modify(|g| *g += 1);
    }
}

pub(crate) fn renewed_at(shared: &Shared) -> Option<(MonoTime, MonoTime)> {
    let st = lock_state(shared);
    matches!(st.phase, Phase::Held).then_some((
        MonoTime::from_micros(st.hold.renewed_at_us()),
        MonoTime::from_micros(st.hold.valid_until_us()),
    ))
}

/// Enters the terminal Lost state (once), fires the signal and releases in the background.
pub(crate) fn mark_lost(shared: &Shared, error: &Error) {
    {
        let mut st = lock_state(shared);
        if !matches!(st.phase, Phase::Held) {
            return;
        }
        st.phase = Phase::Lost(error.clone());
    }
    ClientStats::bump(&shared.grant.inner.stats.lost);
    tracing::warn!(%error, "lock lost");
    shared.signal.send_replace(Signal::Lost(error.clone()));
    let g = &shared.grant;
    spawn_release(
        &g.inner,
        g.keys.clone(),
        g.value.clone(),
        g.opts.effective_node_timeout(g.opts.get_ttl()),
    );
}

/// The deadline passed: the lock is lost, by `ExtensionLimit` if a cap stopped the
/// extensions, else `Expired`.
pub(crate) fn expired(shared: &Shared, report: Report) -> Error {
    let e = lock_state(shared).hold.expired_error(report);
    mark_lost(shared, &e);
    e
}

/// When the watchdog extends next (`Hold::next_extend_us`), while the lock is held.
pub(crate) fn next_extend(
    shared: &Shared,
    interval: Duration,
    retry: bool,
    random: [u8; 8],
) -> Option<MonoTime> {
    let st = lock_state(shared);
    matches!(st.phase, Phase::Held).then(|| {
        MonoTime::from_micros(st.hold.next_extend_us(
            interval,
            retry,
            MonoTime::now().as_micros(),
            random,
        ))
    })
}

/// How an extend round goes out.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    /// Its own requests (an explicit `extend`).
    Alone,
    /// In the client's next extension batch (the watchdog; see `batch`).
    Batched,
}

pub(crate) async fn extend(shared: &Shared, ttl: Duration, via: Via) -> Result<()> {
    let start = MonoTime::now();
    let result = extend_once(shared, ttl, via).await;
    let outcome = result.as_ref().map(|_| ()).map_err(Error::kind);
    shared
        .grant
        .inner
        .stats
        .extend
        .done(outcome, MonoTime::now() - start);
    tracing::debug!(target: "quorumlock", op = "extend", outcome = outcome.err().map_or("ok", ErrorKind::as_str), "extend finished");
    result
}

async fn extend_once(shared: &Shared, ttl: Duration, via: Via) -> Result<()> {
    let g = &shared.grant;
    g.inner.check_process()?;
    let _op = shared.op.lock().await;
    // The options first, as before the checks moved into `Hold` (which repeats them).
    g.inner.timing.check(&g.opts, ttl)?;
    let checked = {
        let mut st = lock_state(shared);
        match &st.phase {
            Phase::Held => {}
            Phase::Lost(e) => return Err(e.clone()),
            Phase::Released(_) => {
                return Err(Error::invalid("the lock was released; acquire it again"));
            }
        }
        st.hold
            .start_extend(&g.inner.timing, &g.opts, ttl, MonoTime::now().as_micros())
    };
    let extend = match checked {
        Ok(extend) => extend,
        Err(e) => {
            if e.is_lost() {
                mark_lost(shared, &e);
            }
            return Err(e);
        }
    };
    let ttl_ms = extend.ttl_ms();
    let deadline = MonoTime::from_micros(extend.t1_us()) + extend.timeout();
    let batched = match via {
        Via::Batched => {
            let batcher = g.inner.batcher();
            batcher.extend(&g.keys, &g.value, ttl_ms, deadline).await
        }
        Via::Alone => None,
    };
    let round = match batched {
        Some(round) => round,
        None => {
            let prepared = Prepared::new(command::extend(&g.keys, &g.value, ttl_ms));
            let bound = deadline.saturating_since(MonoTime::now());
            quorum::round(&g.inner.nodes, bound, Decide::AtQuorum, |node| {
                let (keys, value, prepared) = (g.keys.clone(), g.value.clone(), prepared.clone());
                async move { node.extend(&keys, &value, ttl_ms, Some(&prepared)).await }
            })
            .await
        }
    };
    let t2 = MonoTime::now().as_micros();
    let outcome =
        lock_state(shared)
            .hold
            .finish_extend(&g.inner.timing, &g.opts, extend, round, t2);
    match outcome {
        ExtendOutcome::Extended(report) => {
            let mut st = lock_state(shared);
            if matches!(st.phase, Phase::Held) {
                st.extended = Some(report);
            }
            Ok(())
        }
        ExtendOutcome::Lost(e) => {
            mark_lost(shared, &e);
            Err(e)
        }
        ExtendOutcome::Failed(e) => Err(e),
    }
}

async fn release(shared: &Shared) -> Result<Report> {
    // One fork check per call (a system call each).
    let in_process = shared.grant.inner.check_process();
    // A repeated release sends nothing and is not counted again.
    if in_process.is_ok()
        && let Phase::Released(report) = &lock_state(shared).phase
    {
        return Ok(report.clone());
    }
    let start = MonoTime::now();
    let result = match in_process {
        Ok(()) => release_once(shared).await,
        Err(e) => Err(e),
    };
    let outcome = result.as_ref().map(|_| ()).map_err(Error::kind);
    shared
        .grant
        .inner
        .stats
        .release
        .done(outcome, MonoTime::now() - start);
    result
}

/// The release itself; the caller checked the process.
async fn release_once(shared: &Shared) -> Result<Report> {
    let g = &shared.grant;
    stop_watchdog(shared);
    let _op = shared.op.lock().await;
    if let Phase::Released(report) = &lock_state(shared).phase {
        return Ok(report.clone());
    }
    let timeout = g.opts.effective_node_timeout(g.opts.get_ttl());
    let report = release_keys(&g.inner, &g.keys, &g.value, timeout).await;
    let was_held = {
        let mut st = lock_state(shared);
        let held = matches!(st.phase, Phase::Held);
        st.phase = Phase::Released(report.clone());
        held
    };
    if was_held {
        shared.signal.send_replace(Signal::Released);
    }
    Ok(report)
}

/// Fires once when a lock is lost: an extend proved the keys gone or taken, the deadline
/// passed without a successful extend, or a cap stopped the auto-extension. Never fires
/// after a successful release.
#[derive(Clone)]
pub struct LostSignal {
    rx: watch::Receiver<Signal>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for LostSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LostSignal")
            .field("lost", &self.get().is_some())
            .finish()
    }
}

impl LostSignal {
    /// The loss, if the lock is lost (including a held lock whose deadline has passed).
    pub fn get(&self) -> Option<Error> {
        match &*self.rx.borrow() {
            Signal::Lost(e) => return Some(e.clone()),
            Signal::Released => return None,
            Signal::Held => {}
        }
        let (_, valid_until) = renewed_at(&self.shared)?;
        (MonoTime::now() >= valid_until).then(|| expired(&self.shared, Report::default()))
    }

    /// True once the lock was released (the signal will never fire).
    pub fn is_released(&self) -> bool {
        matches!(&*self.rx.borrow(), Signal::Released)
    }

    /// Waits until the lock is lost and returns the `Lost` error (reason and node report),
    /// or `None` once the lock is released.
    pub async fn wait(&mut self) -> Option<Error> {
        loop {
            if let Some(e) = self.get() {
                return Some(e);
            }
            let sleep_for = match renewed_at(&self.shared) {
                Some((_, valid_until)) => valid_until.saturating_since(MonoTime::now()),
                None if self.is_released() => return None,
                None => Duration::from_millis(10),
            };
            tokio::select! {
                changed = self.rx.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                }
                () = tokio::time::sleep(sleep_for) => {}
            }
        }
    }
}
