//! The tokio driver of an acquisition (REDLOCK.md §3.2). The decisions (fresh value per
//! attempt, decision at quorum, validity, fencing phase 2, cleanup after every failed attempt
//! and on cancellation, retries with jitter within an optional wait budget) are
//! `quorumlock_proto::acquisition`'s; this module sends its requests in parallel on the
//! nodes' connections, runs its timers, its cleanups and its release subscriptions, and
//! turns its grant into a [`Lock`].
//!
//! Waiting (REDLOCK.md §9): a call starts listening for releases after its *first failed*
//! attempt, not before its first attempt as §9 describes. Subscribing first would cost every
//! acquisition a `SUBSCRIBE` / `UNSUBSCRIBE` pair per node, although most never wait. The
//! release that could slip between the failed attempt and the live subscription is caught by
//! one `EXISTS` round right after subscribing: if a quorum of nodes no longer holds the keys,
//! the next attempt follows at once. A release wakes one waiter of the client per key, the
//! longest waiting ([`crate::node::notify`]). Its attempt follows at once, or after
//! `uniform(0, 20 ms)` when this caller won some nodes in its last attempt (a split vote);
//! short delays run on [`crate::timer::Timer`]'s fine sleep, not on tokio's 1 ms tick.
//! Notices that arrive during an attempt are kept, unlike §9 says: a release that lands
//! right after the attempt's request reached a node would otherwise cost a whole retry delay
//! (seen in the hand-off benchmark); keeping it costs at most one extra attempt.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::cancel::CancelToken;
use crate::client::Inner;
use crate::clock::MonoTime;
use crate::config::LockOptions;
use crate::error::{Error, ErrorKind, Result};
use crate::fencing;
use crate::lock::{Grant, Lock};
use crate::metrics::ClientStats;
use crate::node::notify::{Listener, Notifier};
use crate::node::{Node, Prepared};
use crate::quorum::{self, Decide};
use crate::report::{NodeKind, Report};
use crate::timer::Timer;
use crate::value::OsRandomAhead;
use quorumlock_proto::acquire::vacant;
use quorumlock_proto::acquisition::{Acquisition, Output, Request};
use quorumlock_proto::command;
use quorumlock_proto::grants::{End, Grants, Step};
use quorumlock_proto::line::{Line, bit};
use quorumlock_proto::round::Answer;

/// Sends RELEASE for `keys`/`value` to every node and waits (each node bounded by
/// `timeout`) for the per-node report.
pub(crate) async fn release_keys(
    inner: &Inner,
    keys: &Arc<[Vec<u8>]>,
    value: &Arc<str>,
    timeout: Duration,
) -> Report {
    release_on(&inner.nodes, keys, value, timeout, inner.notify).await
}

async fn release_on(
    nodes: &[Arc<Node>],
    keys: &Arc<[Vec<u8>]>,
    value: &Arc<str>,
    timeout: Duration,
    notify: command::Notify,
) -> Report {
    let prepared = Prepared::new(command::release(keys, value, notify));
    quorum::round(nodes, timeout, Decide::All, |node| {
        let (keys, value) = (keys.clone(), value.clone());
        let prepared = prepared.clone();
        async move { node.release(&keys, &value, notify, Some(&prepared)).await }
    })
    .await
    .into_report()
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

/// What one node answered to one request: the round, the node, the answer, when the request
/// was sent (the reader of the reply takes its latency, one clock read per wake-up) and, for a
/// fenced acquisition that took the lock, the counters.
type Reply = (u64, usize, Answer, MonoTime, Option<Vec<u64>>);
/// The requests in flight, by node: an acquisition has a handful at a time (more only while
/// an earlier round's stragglers are still out), so a `Vec` polled on each wake-up costs
/// less than a `FuturesUnordered`, which allocates per request and per set.
type InFlight = Vec<(usize, Pin<Box<dyn Future<Output = Reply> + Send>>)>;
/// The subscription of the first wait, and whether the keys were vacant once it was live.
type Listening<'a> = Pin<Box<dyn Future<Output = (Option<Listener>, bool)> + Send + 'a>>;

/// One acquisition: the protocol's machine, the keys its requests carry, and the call's I/O
/// state. Dropped while an attempt is in flight (the caller's future was dropped), it still
/// cleans the nodes that may hold that attempt's key (REDLOCK.md §3.5).
struct Driver<'a> {
    m: Acquisition,
    inner: &'a Arc<Inner>,
    keys: Arc<[Vec<u8>]>,
    /// The lock keys, followed by their counters when fenced.
    all_keys: Arc<[Vec<u8>]>,
    ttl_ms: u64,
    counter_ttl_ms: u64,
    inflight: InFlight,
    /// Replies that were ready when their requests were sent: fed to the machine together.
    ready: Vec<Reply>,
    /// Nodes reported as timed out, by round: their late replies stay out of the metrics.
    timed_out: Vec<(u64, usize)>,
    cleanup: Option<JoinHandle<()>>,
    /// The ACQUIRE of the current round, built once for all nodes.
    prepared: Option<(u64, Arc<Prepared>)>,
    /// This call's id in the keys' lines, from its first wait on (braced keys with
    /// notification on: [`command::Notify::Waiters`]).
    waiter: Option<Vec<u8>>,
    /// The marks of the keys' waiter flags with that id: empty until the first wait.
    marks: Arc<[Arc<Prepared>]>,
    /// Which nodes get marks and unmarks, and when.
    line: Line,
    /// This waiter's registrations for grants, from its first marks on (REDLOCK.md §9): a
    /// release that pops it sets the key to the registered value.
    grants: Grants,
    listening: Option<Listening<'a>>,
    listener: Option<Listener>,
}

impl Drop for Driver<'_> {
    fn drop(&mut self) {
        self.unmark();
        if let Some((nodes, value)) = self.m.cancel().clean {
            tracing::debug!("acquisition cancelled; releasing its keys in the background");
            self.clean(nodes, value);
        }
        self.drain();
    }
}

fn now_us() -> u64 {
    MonoTime::now().as_micros()
}

/// Polls `fut` once, without a waker to be woken by: a request it sends is queued on its
/// connection now. Whoever keeps the future polls it again.
fn poll_once<F: Future + ?Sized>(fut: Pin<&mut F>) -> Poll<F::Output> {
    let waker = futures_util::task::noop_waker();
    fut.poll(&mut std::task::Context::from_waker(&waker))
}

/// Prepares `commands` once for every node.
fn prepare(commands: Vec<command::Command>) -> Arc<[Arc<Prepared>]> {
    commands.into_iter().map(Prepared::new).collect()
}

impl Driver<'_> {
    /// Starts `request` on `node`; the future is polled once right away, so the request is
    /// queued on its connection before any reply is looked at (a request first polled after
    /// the round's decision could land behind the cleanup of a failed attempt). `sent` is the
    /// time the round's requests go out, read once for all of them.
    fn send(&mut self, round: u64, index: usize, request: Request, sent: MonoTime) {
        let Some(node) = self.inner.nodes.get(index).cloned() else {
            return;
        };
        let (keys, ttl_ms, counter_ttl_ms) =
            (self.all_keys.clone(), self.ttl_ms, self.counter_ttl_ms);
        // Every node of a round gets the same ACQUIRE: build it once per round.
        let prepared = match &request {
            Request::Acquire { value } => Some(match &self.prepared {
                Some((r, p)) if *r == round => p.clone(),
                _ => {
                    let p = Prepared::new(command::acquire(&keys, value, ttl_ms));
                    self.prepared = Some((round, p.clone()));
                    p
                }
            }),
            _ => None,
        };
        // While subscribed, an attempt first renews the marks of the keys' waiter flags on
        // each node when they could lapse before the next one (REDLOCK.md §9).
        let marks = self
            .line
            .sends_marks(index, matches!(request, Request::Raise { .. }))
            .then(|| self.marks.clone());
        // The common case (no marks) stays one small future: a join would be moved and
        // polled for nothing on every request.
        let mut fut: Pin<Box<dyn Future<Output = Reply> + Send>> = match marks {
            None => Box::pin(async move {
                let (answer, counters) =
                    ask(&node, request, &keys, ttl_ms, counter_ttl_ms, prepared).await;
                (round, index, answer, sent, counters)
            }),
            Some(marks) => Box::pin(async move {
                let asking = ask(&node, request, &keys, ttl_ms, counter_ttl_ms, prepared);
                let ((), (answer, counters)) =
                    futures_util::future::join(node.mark(&marks), asking).await;
                (round, index, answer, sent, counters)
            }),
        };
        match poll_once(fut.as_mut()) {
            Poll::Ready(reply) => self.ready.push(reply),
            Poll::Pending => self.inflight.push((index, fut)),
        }
    }

    /// The nodes whose releases popped this waiter from the lines.
    fn popped(&self) -> u64 {
        self.listener.as_ref().map_or(0, Listener::popped)
    }

    /// At the first wait: this call's waiter id and marks ([`command::mark`]), when the
    /// client's releases wake waiters in line ([`command::Notify::Waiters`]).
    ///
    /// Returns the first marks: for one unfenced key off Redis Cluster and no value given by
    /// the caller, they register the waiter for grants with a fresh value, sent from `now_us`
    /// on; the later marks register nothing.
    fn join_lines(
        &mut self,
        notifier: &Notifier,
        now_us: u64,
        random: &mut OsRandomAhead,
    ) -> Arc<[Arc<Prepared>]> {
        if self.inner.notify != command::Notify::Waiters {
            return Arc::from([]);
        }
        let id = notifier.waiter();
        self.marks = prepare(command::mark(&self.keys, &id, self.line.ttl_ms(), false));
        if self.marks.is_empty() {
            return Arc::from([]);
        }
        self.waiter = Some(id);
        let cluster = self.inner.nodes.iter().any(|n| n.is_cluster());
        Grants::eligible(&self.keys, self.m.options(), cluster)
            .then(|| self.register(now_us, false, random))
            .flatten()
            .unwrap_or_else(|| self.marks.clone())
    }

    /// A registering mark of this waiter's one key with a fresh value, sent from `now_us` on,
    /// first in line with `front`: the registration it starts.
    fn register(
        &mut self,
        now_us: u64,
        front: bool,
        random: &mut OsRandomAhead,
    ) -> Option<Arc<[Arc<Prepared>]>> {
        let (Some(id), [key]) = (&self.waiter, &self.keys[..]) else {
            return None;
        };
        let r = self.grants.register(now_us, random).ok()?;
        let c = r.mark(key, id, self.line.ttl_ms(), self.ttl_ms, front)?;
        Some(prepare(vec![c]))
    }

    /// Gives the keys granted so far back ([`Self::give_back`]) and registers anew, first in
    /// line on every node, with a new value: grants short of a quorum before an ordinary
    /// attempt, or a quorum with too little validity left.
    fn register_again(&mut self, now_us: u64, random: &mut OsRandomAhead) {
        if !self.give_back() {
            return;
        }
        if let Some(marks) = self.register(now_us, true, random) {
            // Before the marks go out: a grant of the new registration may come at once.
            if let (Some(l), Some(reg)) = (&self.listener, self.grants.current()) {
                l.expect_grants(reg.number);
            }
            let all = self.all_nodes();
            self.fire(all, &marks);
            self.line.remark(all);
        }
    }

    fn all_nodes(&self) -> u64 {
        (0..self.inner.nodes.len()).fold(0, |set, i| set | bit(i))
    }

    /// Grants heard while no attempt is in flight: a quorum with enough validity left wins
    /// the call ([`Acquisition::handle_granted`]); too little left, the keys go back.
    fn grants(&mut self, now_us: u64, random: &mut OsRandomAhead) {
        let granted = self.listener.as_ref().map_or(0, Listener::granted);
        let n = self.inner.nodes.len();
        if self.grants.check(&mut self.m, granted, n, now_us) == Step::Again {
            // The keys go back (LEAVE, queued first on each connection): try at once.
            self.register_again(now_us, random);
            self.m.handle_vacant(now_us);
        }
    }

    /// Ends the registration: this waiter leaves every line and hands on every key granted to
    /// it so far or later (LEAVE with the value, on every node: a grant may still be on its
    /// way). Returns whether there was a registration.
    fn give_back(&mut self) -> bool {
        let Some(value) = self.grants.give_back() else {
            return false;
        };
        self.leave_all(&value);
        true
    }

    /// LEAVE with `value` on every node: out of every line, the registration dropped, and a
    /// key granted to it handed on.
    fn leave_all(&self, value: &str) {
        if let (Some(id), [key]) = (&self.waiter, &self.keys[..])
            && let Some(c) = command::leave(key, id, Some(value))
        {
            self.fire(self.all_nodes(), &prepare(vec![c]));
        }
    }

    /// After an attempt that answered a release naming this waiter lost, once its cleanup
    /// ended: the marks [`Line::requeue`] asks for (first in line where releases popped it).
    fn requeue(&mut self, now_us: u64) {
        let r = self.line.requeue(now_us, self.popped());
        let Some(id) = &self.waiter else {
            return;
        };
        if r.popped != 0 {
            let marks = prepare(command::mark(&self.keys, id, self.line.ttl_ms(), r.front));
            self.fire(r.popped, &marks);
        }
        if r.renew != 0 {
            let marks = self.marks.clone();
            self.fire(r.renew, &marks);
        }
    }

    /// When the call ends, won or not: this waiter leaves the lines [`Line::leave`] names
    /// (the common hand-off, named by every node: none). A waiter registered for grants
    /// sends LEAVE instead: on every node, handing on the keys granted to it, unless it won
    /// with them.
    fn unmark(&mut self) {
        let end = self.grants.end();
        if let End::GiveBack(value) = &end {
            // LEAVE on every node: out of every line too.
            self.leave_all(value);
            self.line.leave(0);
            self.waiter = None;
            return;
        }
        let Some(id) = self.waiter.take() else {
            return;
        };
        let nodes = self.line.leave(self.popped());
        if nodes == 0 {
            return;
        }
        match (end, &self.keys[..]) {
            // Won with the registered value: out of the lines, registration dropped, and a
            // key granted meanwhile is the lock's own.
            (End::Won, [key]) => {
                if let Some(c) = command::leave(key, &id, None) {
                    self.fire(nodes, &prepare(vec![c]));
                }
            }
            _ => self.fire(nodes, &prepare(command::unmark(&self.keys, &id))),
        }
    }

    /// Sends `commands` to `nodes` now, ignoring their replies: each request is queued on its
    /// node's connection before this returns (ahead of the caller's next request there), and
    /// the replies are awaited in an engine-owned task.
    fn fire(&self, nodes: u64, commands: &Arc<[Arc<Prepared>]>) {
        for (i, node) in self.inner.nodes.iter().enumerate() {
            if nodes & bit(i) == 0 {
                continue;
            }
            let (node, commands) = (node.clone(), commands.clone());
            let mut fut = Box::pin(async move { node.mark(&commands).await });
            if poll_once(fut.as_mut()).is_pending() {
                self.inner
                    .runtime
                    .spawn(tokio::time::timeout(DRAIN_BOUND, fut));
            }
        }
    }

    /// Counts a reply in its node's metrics (unless that node already counted a timeout).
    fn observe(&self, round: u64, index: usize, answer: &Answer, latency: Duration) {
        if self.timed_out.contains(&(round, index)) {
            return;
        }
        if let Some(node) = self.inner.nodes.get(index) {
            let kind = match answer {
                Ok(k) => *k,
                Err((k, _)) => *k,
            };
            node.stats.observe(kind, Some(latency));
        }
    }

    /// Starts a cleanup: releases `value` on `nodes` in an engine-owned task, which outlives
    /// the caller. With waiters' lines it tells no waiter (REDLOCK.md §9): it frees a minority
    /// of nodes, and popping the first in line there would only grant it those, often to the
    /// cleaning waiter itself, whose next attempt gives them back.
    fn clean(&mut self, nodes: Vec<usize>, value: Arc<str>) {
        let dirty: Vec<Arc<Node>> = nodes
            .iter()
            .filter_map(|i| self.inner.nodes.get(*i).cloned())
            .collect();
        let (inner, keys, timeout) = (self.inner.clone(), self.keys.clone(), self.m.node_timeout());
        let notify = match inner.notify {
            command::Notify::Waiters => command::Notify::Off,
            other => other,
        };
        self.cleanup = Some(self.inner.runtime.spawn(async move {
            let report = release_on(&dirty, &keys, &value, timeout, notify).await;
            tracing::trace!(%report, "cleanup done");
        }));
    }

    /// Keeps the requests still in flight alive until they end (bounded): the multiplexer
    /// drops queued requests whose caller went away, so an abandoned request may never be
    /// written. A lock is sturdier on more than q nodes, and a failed attempt's cleanup is
    /// queued behind its requests on the same connections. Late replies go nowhere but into
    /// the metrics of their node.
    fn drain(&mut self) {
        if self.inflight.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.inflight);
        let (inner, timed_out) = (self.inner.clone(), std::mem::take(&mut self.timed_out));
        self.inner
            .runtime
            .spawn(tokio::time::timeout(DRAIN_BOUND, async move {
                while !pending.is_empty() {
                    let (_, (round, i, answer, sent, _)) = quorum::next_reply(&mut pending).await;
                    if let Some(node) = inner.nodes.get(i)
                        && !timed_out.contains(&(round, i))
                    {
                        let kind = answer.unwrap_or_else(|(kind, _)| kind);
                        node.stats.observe(kind, Some(MonoTime::now() - sent));
                    }
                }
            }));
    }
}

/// How long requests still in flight when an acquisition ends are kept alive in the
/// background.
const DRAIN_BOUND: Duration = Duration::from_secs(30);

/// Drives the protocol's [`Acquisition`]: sends its requests, feeds it replies, timers,
/// cleanup ends, release notices and cancellation, and turns its result into a [`Lock`].
async fn attempts(
    inner: &Arc<Inner>,
    resources: Vec<Vec<u8>>,
    opts: LockOptions,
    cancel: Option<&CancelToken>,
) -> Result<Lock> {
    let m = Acquisition::new(inner.members.clone(), opts, &inner.timing, now_us())?;
    let keys: Arc<[Vec<u8>]> = resources.iter().map(|r| inner.key(r)).collect();
    let fenced = m.options().get_fenced();
    let counter_ttl_ms = m
        .options()
        .get_fence_counter_ttl()
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let line = Line::new(m.options(), m.node_timeout(), keys.len(), inner.nodes.len());
    let mut d = Driver {
        inner,
        all_keys: if fenced {
            fencing::with_counters(&keys)
        } else {
            keys.clone()
        },
        keys,
        ttl_ms: m.ttl_ms(),
        counter_ttl_ms,
        m,
        inflight: Vec::with_capacity(inner.nodes.len()),
        ready: Vec::new(),
        timed_out: Vec::new(),
        cleanup: None,
        prepared: None,
        waiter: None,
        marks: Arc::from([]),
        line,
        grants: Grants::new(),
        listening: None,
        listener: None,
    };
    let timeout = d.m.node_timeout();
    let mut random = OsRandomAhead::new();
    // One clock read per wake-up: the machine's outputs are polled with the time its last
    // input was handled at (an attempt's start then reads as no later than it is, which only
    // shortens the validity it computes), and a round's requests share one send time.
    let mut now = now_us();
    // One timer for the call, moved only when the machine's next deadline changes.
    let coarse = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(coarse);
    let mut timer = Timer::new(coarse);
    let mut armed = None;
    loop {
        d.grants(now, &mut random);
        while let Some(out) = d.m.poll_output(now, &mut random) {
            match out {
                Output::Attempt { number } => {
                    ClientStats::bump(&inner.stats.attempts);
                    tracing::trace!(attempt = number, nodes = inner.nodes.len(), "attempt");
                    // Notices from before this attempt are answered by it. Notices that
                    // arrive while it runs are kept: a release that lands just after this
                    // attempt's request reached a node must still wake the wait that follows.
                    let named = d.listener.as_ref().is_some_and(|l| {
                        let named = l.named() != 0;
                        l.reset();
                        named
                    });
                    // Grants short of a quorum (a split among waiters, or a failed attempt's
                    // cleanup on a minority) go back before an ordinary attempt; the waiter
                    // registers again, first in line.
                    if d.grants
                        .before_attempt(d.listener.as_ref().map_or(0, Listener::granted))
                    {
                        d.register_again(now, &mut random);
                    }
                    d.line.attempt(now, d.listener.is_some(), named);
                }
                Output::Send {
                    round,
                    node,
                    request,
                } => d.send(round, node, request, MonoTime::from_micros(now)),
                Output::Clean { nodes, value } => d.clean(nodes, value),
                Output::Listen => {
                    if let Some(notifier) = &inner.notifier {
                        let marks = d.join_lines(notifier, now, &mut random);
                        let (keys, q) = (d.keys.clone(), inner.quorum());
                        let registration = d.grants.current().map(|r| r.number);
                        let id = d.waiter.clone();
                        if id.is_some() {
                            d.line.join(now);
                        }
                        d.listening = Some(Box::pin(async move {
                            let l = notifier.listen(&keys, id, q, timeout).await;
                            if let (Some(l), Some(n)) = (&l, registration) {
                                l.expect_grants(n);
                            }
                            let vacant = l.is_some()
                                && vacant_on_quorum(inner, &keys, &marks, timeout).await;
                            (l, vacant)
                        }));
                    }
                }
                Output::Done(Ok(grant)) => {
                    tracing::debug!(attempt = grant.attempts, "acquired");
                    d.grants.won_with(&grant.value);
                    // Notices heard during the winning attempt were answered by it: the
                    // client's next waiter must not be handed them.
                    if let Some(l) = &d.listener {
                        l.reset();
                        l.won();
                    }
                    let (keys, opts) = (d.keys.clone(), d.m.options().clone());
                    return Ok(Lock::new(granted(inner, resources, keys, opts, grant)));
                }
                Output::Done(Err(e)) => {
                    tracing::debug!(attempts = e.attempts(), kind = %e.kind(), "acquisition failed");
                    return Err(e);
                }
            }
        }
        if d.line.woken() && d.cleanup.is_none() && d.m.wants_release_notice() {
            d.requeue(now);
        }
        if !d.ready.is_empty() {
            now = now_us();
            let mut batch = Vec::with_capacity(d.ready.len());
            let mut round = 0;
            for (r, node, answer, sent, counters) in std::mem::take(&mut d.ready) {
                d.observe(r, node, &answer, MonoTime::from_micros(now) - sent);
                round = r;
                batch.push((node, answer, counters));
            }
            d.m.handle_batch(round, batch, now);
            continue;
        }
        let deadline = d.m.poll_timeout();
        if deadline != armed {
            if let Some(at) = deadline {
                let left = Duration::from_micros(at.saturating_sub(now));
                timer.reset(left);
            }
            armed = deadline;
        }
        let wants_notice = d.m.wants_release_notice();
        let released = async {
            match &d.listener {
                Some(l) if wants_notice => l.released().await,
                _ => std::future::pending().await,
            }
        };
        let cleaned = async {
            match &mut d.cleanup {
                Some(c) => {
                    let _ = c.await;
                }
                None => std::future::pending().await,
            }
        };
        let listened = async {
            match &mut d.listening {
                Some(f) => f.await,
                None => std::future::pending().await,
            }
        };
        let event = tokio::select! {
            biased;
            (_, reply) = quorum::next_reply(&mut d.inflight), if !d.inflight.is_empty() => Event::Reply(reply),
            () = cleaned => Event::Cleaned,
            (l, vacant) = listened => Event::Listened(l, vacant),
            () = released => Event::Released,
            () = timer.fired(), if armed.is_some() => Event::Timer,
            () = cancelled(cancel) => Event::Cancelled,
        };
        now = now_us();
        match event {
            Event::Reply((round, node, answer, sent, counters)) => {
                d.observe(round, node, &answer, MonoTime::from_micros(now) - sent);
                d.m.handle_batch(round, vec![(node, answer, counters)], now);
            }
            Event::Timer => {
                // The machine's next deadline, even if it is the same instant, re-arms.
                armed = None;
                let round = d.m.round();
                for i in d.m.handle_timeout(now) {
                    if let Some(node) = inner.nodes.get(i) {
                        node.stats.observe(NodeKind::Timeout, None);
                        node.verify_connection();
                    }
                    d.timed_out.push((round, i));
                }
            }
            Event::Cleaned => {
                d.cleanup = None;
                d.m.handle_cleaned(now);
            }
            Event::Listened(l, vacant) => {
                d.listening = None;
                if l.is_none() {
                    // No subscription, so no marks were sent: nothing is registered.
                    d.grants.forget();
                }
                d.listener = l;
                if vacant {
                    d.m.handle_vacant(now);
                }
            }
            Event::Released => {
                if d.m.handle_released(now) {
                    ClientStats::bump(&inner.stats.wakeups);
                    tracing::trace!(attempt = d.m.attempts(), "woken by a release");
                }
            }
            Event::Cancelled => {
                // Out of the lines first: the cleanup's release then wakes the next waiter,
                // not this one.
                d.unmark();
                let c = d.m.cancel();
                if let Some((nodes, value)) = c.clean {
                    d.clean(nodes, value);
                }
                // The requests in flight go to the background first: on a cluster member the
                // cleanup waits for them (`node/writes.rs`), and only the drain polls them now.
                d.drain();
                // The caller may exit right away: it leaves no key behind.
                if let Some(cleanup) = d.cleanup.take() {
                    let _ = cleanup.await;
                }
                return Err(c.error);
            }
        }
    }
}

/// One node's answer to one of the machine's requests, and a fenced acquisition's counters.
async fn ask(
    node: &Node,
    request: Request,
    keys: &[Vec<u8>],
    ttl_ms: u64,
    counter_ttl_ms: u64,
    prepared: Option<Arc<Prepared>>,
) -> (Answer, Option<Vec<u64>>) {
    // A future of this function is built and boxed for every node of every attempt: the
    // common request (a single master, the round's prepared ACQUIRE) awaits one send, and the
    // others are boxed, so that this future holds one redis-rs send instead of several (each
    // over 1 KB, a copy and an allocation outside the allocator's fast sizes).
    match request {
        Request::Acquire { value } => match prepared {
            Some(p) if !node.is_cluster() => (node.acquire_prepared(&p).await, None),
            _ => (
                Box::pin(node.acquire(keys, &value, ttl_ms, prepared.as_deref())).await,
                None,
            ),
        },
        Request::FencedAcquire { value } => {
            match Box::pin(node.fenced_acquire(keys, &value, ttl_ms, counter_ttl_ms)).await {
                Ok(Some(c)) => (Ok(NodeKind::Ok), Some(c)),
                Ok(None) => (Ok(NodeKind::HeldByOther), None),
                Err(e) => (Err(e), None),
            }
        }
        Request::Raise { value, tokens } => (
            Box::pin(node.raise(keys, &value, &tokens, counter_ttl_ms)).await,
            None,
        ),
    }
}

/// What ended a wait of [`attempts`].
enum Event {
    Reply(Reply),
    Timer,
    Cleaned,
    Listened(Option<Listener>, bool),
    Released,
    Cancelled,
}

/// The lock of a grant.
fn granted(
    inner: &Arc<Inner>,
    resources: Vec<Vec<u8>>,
    keys: Arc<[Vec<u8>]>,
    opts: LockOptions,
    g: quorumlock_proto::acquisition::Grant,
) -> Grant {
    let at = |us: u64| MonoTime::from_micros(us);
    Grant {
        inner: inner.clone(),
        resources,
        keys,
        value: g.value,
        opts,
        t1: at(g.t1_us),
        acquired_at: at(g.t2_us),
        valid_until: at(g.valid_until_us),
        attempts: g.attempts,
        report: g.report,
        history: g.history,
        tokens: g.tokens,
    }
}

/// True when a quorum of nodes holds none of `keys`: the holder released between the failed
/// attempt and the moment the subscription became live, so no message will come. Each node
/// gets the waiter's `marks` first: a release after them publishes (REDLOCK.md §9).
async fn vacant_on_quorum(
    inner: &Inner,
    keys: &Arc<[Vec<u8>]>,
    marks: &Arc<[Arc<Prepared>]>,
    timeout: Duration,
) -> bool {
    let round = quorum::round(&inner.nodes, timeout, Decide::All, |node| {
        let (keys, marks) = (keys.clone(), marks.clone());
        async move {
            let ((), held) =
                futures_util::future::join(node.mark(&marks), node.vacant(&keys)).await;
            held
        }
    })
    .await;
    vacant(&round, inner.nodes.len())
}
