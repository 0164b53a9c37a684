//! Automatic extensions of one client sent together (REDLOCK.md §5.3).
//!
//! A client holding many auto-extended locks sent one EXTEND per lock to every node: 100 000
//! locks at a 10 s interval are 50 000 requests a second, and the round trips, not the CPU,
//! capped the rate below what was due. Here the watchdogs hand their due extensions to one
//! task per client, which sends whatever is waiting as one EXTEND-BATCH per node (at most
//! [`MAX_BATCH`] locks), starts batches at least [`SPACING`] apart and keeps at most
//! [`MAX_BATCHES`] in flight. An extension after a quiet spell goes out at once, alone (a
//! client with a few locks waits no longer than before); under a steady stream of due locks
//! each batch takes what came due since the last one, so 10 000 extensions a second become a
//! few hundred requests per node. The wait is at most `SPACING` and at most a quarter of the
//! lock's node timeout, and the lock's validity is counted from before it (T1 is taken when
//! the watchdog hands the extension over).
//!
//! Every lock keeps its own round: its per-node answers, decided at its quorum or at its own
//! deadline exactly as an EXTEND round would be (`quorum::round`), and judged by the
//! protocol's extend verdict in `lock.rs`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use quorumlock_proto::command::{self, Extension};
use tokio::sync::{Semaphore, mpsc, oneshot};

use crate::clock::MonoTime;
use crate::node::{Node, NodeFailure, Prepared};
use crate::quorum::{self, DRAIN_BOUND, Decide, Round};
use crate::report::{NodeKind, NodeResult};

/// The most locks in one EXTEND-BATCH (a few hundred microseconds of script on a node).
pub(crate) const MAX_BATCH: usize = 256;
/// The most batches of one client in flight at once.
pub(crate) const MAX_BATCHES: usize = 4;
/// The least time between the starts of two batches of one client.
const SPACING: Duration = Duration::from_millis(2);
/// The longest a batch keeps its slot (the longest default node timeout).
const SLOT_HOLD: Duration = Duration::from_millis(50);
/// How late tokio's timer may fire (its resolution).
const TIMER_SLACK: Duration = Duration::from_millis(1);

/// One lock's extension waiting for its batch.
struct Ticket {
    keys: Arc<[Vec<u8>]>,
    value: Arc<str>,
    ttl_ms: u64,
    /// The end of this lock's round (T1 + its node timeout).
    deadline: MonoTime,
    answer: oneshot::Sender<Round>,
}

/// A client's batching task, started with its first automatic extension.
pub(crate) struct Batcher {
    tickets: mpsc::UnboundedSender<Ticket>,
}

impl Batcher {
    /// Starts the task on `runtime`; it ends when the batcher is dropped (with its client).
    pub(crate) fn start(runtime: &tokio::runtime::Handle, nodes: Vec<Arc<Node>>) -> Self {
        let (tickets, rx) = mpsc::unbounded_channel();
        runtime.spawn(serve(nodes.into(), rx));
        Self { tickets }
    }

    /// Extends `keys` holding `value` to `ttl_ms` on every node within `deadline`, in the next
    /// batch: the lock's round, as `quorum::round` with `Decide::AtQuorum` would return it.
    /// `None` when the batching task is gone (the runtime is shutting down).
    pub(crate) async fn extend(
        &self,
        keys: &Arc<[Vec<u8>]>,
        value: &Arc<str>,
        ttl_ms: u64,
        deadline: MonoTime,
    ) -> Option<Round> {
        let (answer, rx) = oneshot::channel();
        let ticket = Ticket {
            keys: keys.clone(),
            value: value.clone(),
            ttl_ms,
            deadline,
            answer,
        };
        self.tickets.send(ticket).ok()?;
        rx.await.ok()
    }
}

async fn serve(nodes: Arc<[Arc<Node>]>, mut rx: mpsc::UnboundedReceiver<Ticket>) {
    let slots = Arc::new(Semaphore::new(MAX_BATCHES));
    let mut last: Option<MonoTime> = None;
    loop {
        // A free slot first: while every slot is busy the tickets wait in the channel and
        // the next batch takes them all.
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let Some(first) = rx.recv().await else {
            return;
        };
        let batch = gather(&mut rx, first, last.map(|t| t + SPACING)).await;
        last = Some(MonoTime::now());
        let nodes = nodes.clone();
        tokio::spawn(async move {
            // The slot comes back when every lock was answered, or after `SLOT_HOLD` at the
            // latest: a lock with a short node timeout never waits long behind a batch whose
            // locks have long ones.
            let mut slot = Some(slot);
            let send = send(&nodes, batch);
            tokio::pin!(send);
            let tail = match tokio::time::timeout(SLOT_HOLD, &mut send).await {
                Ok(tail) => tail,
                Err(_) => {
                    slot.take();
                    send.await
                }
            };
            drop(slot);
            drain(&nodes, tail).await;
        });
    }
}

/// The batch that starts with `first`: what is waiting, and what comes until `not_before`
/// (`SPACING` after the last batch), but no longer than a quarter of any gathered lock's time
/// left to its deadline, and at most `MAX_BATCH` locks.
async fn gather(
    rx: &mut mpsc::UnboundedReceiver<Ticket>,
    first: Ticket,
    not_before: Option<MonoTime>,
) -> Vec<Ticket> {
    let mut send_at = not_before.unwrap_or_else(MonoTime::now);
    let mut batch = Vec::with_capacity(MAX_BATCH.min(rx.len() + 1));
    let mut add = |t: Ticket, batch: &mut Vec<Ticket>| {
        let now = MonoTime::now();
        send_at = send_at.min(now + t.deadline.saturating_since(now) / 4);
        batch.push(t);
        send_at
    };
    let mut until = add(first, &mut batch);
    while batch.len() < MAX_BATCH {
        if let Ok(t) = rx.try_recv() {
            until = add(t, &mut batch);
            continue;
        }
        // tokio's timer fires up to a millisecond late: wake that much early, or not at all.
        let left = until.saturating_since(MonoTime::now());
        let Some(wait) = left.checked_sub(TIMER_SLACK) else {
            break;
        };
        tokio::select! {
            t = rx.recv() => match t {
                Some(t) => until = add(t, &mut batch),
                None => break,
            },
            () = tokio::time::sleep(wait) => break,
        }
    }
    batch
}

/// One request's answers: the lock's place in the batch and its answer, per lock carried.
type Answers = Vec<(usize, Result<NodeKind, NodeFailure>)>;
type Request = Pin<Box<dyn Future<Output = Answers> + Send>>;

/// A request in flight with its node's place: a batch on a cluster member can have a
/// request per lock (each braced key its own slot), so they wait in a `FuturesUnordered`,
/// which polls only the ones woken, not every one per reply.
struct Tagged(usize, Request);

impl Future for Tagged {
    type Output = (usize, Answers);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let j = self.0;
        self.1.as_mut().poll(cx).map(|answers| (j, answers))
    }
}

/// One lock's round while its batch runs.
struct Open {
    ticket: Ticket,
    results: Vec<NodeResult>,
    answered: usize,
    ok: usize,
}

impl Open {
    fn new(ticket: Ticket, nodes: &[Arc<Node>]) -> Self {
        let results = nodes
            .iter()
            .map(|node| NodeResult::new(node.index, &node.address, NodeKind::Pending, None, None))
            .collect();
        Self {
            ticket,
            results,
            answered: 0,
            ok: 0,
        }
    }

    /// Marks the nodes that have not answered as timed out, with `why`.
    fn time_out(&mut self, why: &str) {
        for slot in self
            .results
            .iter_mut()
            .filter(|r| r.kind == NodeKind::Pending)
        {
            slot.kind = NodeKind::Timeout;
            slot.detail = Some(why.to_owned());
        }
    }

    fn close(self) {
        // The watchdog may be gone (its lock dropped): nobody to tell.
        let _ = self.ticket.answer.send(Round {
            results: self.results,
        });
    }
}

/// Which (lock, node) pairs the nodes' metrics have counted, a reply or a timeout: each
/// once, whether it came before the lock was decided, after, or in the drain.
struct Counted {
    nodes: usize,
    seen: Vec<bool>,
    start: MonoTime,
}

impl Counted {
    /// Counts `kind` for the lock at `pos` on node `j`, unless it was counted already.
    fn observe(&mut self, nodes: &[Arc<Node>], pos: usize, j: usize, kind: NodeKind) {
        let seen = &mut self.seen[pos * self.nodes + j];
        if !std::mem::replace(seen, true) {
            let latency = (kind != NodeKind::Timeout).then(|| MonoTime::now() - self.start);
            nodes[j].stats.observe(kind, latency);
        }
    }
}

/// What is left of a batch once every lock was answered: the requests still in flight.
struct Tail {
    pending: FuturesUnordered<Tagged>,
    counted: Counted,
}

/// Sends `batch` to every node and answers each lock when its round is decided or its
/// deadline passed. A plain node gets one request; a cluster member one per hash slot, each
/// answering its own locks as soon as it replies.
async fn send(nodes: &[Arc<Node>], batch: Vec<Ticket>) -> Tail {
    let n = nodes.len();
    let start = MonoTime::now();
    let mut open: Vec<Option<Open>> = Vec::with_capacity(batch.len());
    for ticket in batch {
        let mut o = Open::new(ticket, nodes);
        if o.ticket.deadline > start {
            open.push(Some(o));
        } else {
            // Its deadline passed while it waited for a batch: not sent, and nothing for the
            // nodes' metrics (no node was asked).
            o.time_out("queued past its node timeout; not sent");
            o.close();
        }
    }
    let mut counted = Counted {
        nodes: n,
        seen: vec![false; open.len() * n],
        start,
    };
    let mut sent = requests(nodes, &open);
    // Every request is polled (written to its connection) before any reply is looked at, as
    // in `quorum::round`.
    let first = quorum::poll_all(&mut sent).await;
    let mut pending: FuturesUnordered<Tagged> =
        sent.into_iter().map(|(j, r)| Tagged(j, r)).collect();
    let mut left = open.len();
    // Applies node `j`'s answers; returns how many locks they decided.
    let record = |open: &mut [Option<Open>], counted: &mut Counted, j: usize, answers| {
        let latency = MonoTime::now() - start;
        let mut decided = 0;
        for (pos, answer) in answers {
            let (kind, detail) = match answer {
                Ok(kind) => (kind, None),
                Err((kind, text)) => (kind, Some(text)),
            };
            counted.observe(nodes, pos, j, kind);
            let Some(o) = open.get_mut(pos).and_then(Option::as_mut) else {
                continue;
            };
            let slot = &mut o.results[j];
            (slot.kind, slot.detail, slot.latency) = (kind, detail, Some(latency));
            o.answered += 1;
            o.ok += usize::from(kind == NodeKind::Ok);
            if Round::decided(Decide::AtQuorum, n, o.answered, o.ok)
                && let Some(o) = open[pos].take()
            {
                o.close();
                decided += 1;
            }
        }
        decided
    };
    for (j, answers) in first {
        left -= record(&mut open, &mut counted, j, answers);
    }
    let mut checked = vec![false; n];
    // One timer, set to the earliest deadline of the locks still open when it was set; when
    // it fires it times out those whose deadline passed and is set again.
    let earliest = |open: &[Option<Open>]| {
        let next = open.iter().flatten().map(|o| o.ticket.deadline).min();
        let wait = next.map_or(Duration::ZERO, |d| d.saturating_since(MonoTime::now()));
        tokio::time::Instant::now() + wait
    };
    let timer = tokio::time::sleep_until(earliest(&open));
    tokio::pin!(timer);
    while left > 0 && !pending.is_empty() {
        tokio::select! {
            biased;
            Some((j, answers)) = pending.next() => {
                left -= record(&mut open, &mut counted, j, answers);
            }
            () = &mut timer => {
                let now = MonoTime::now();
                for (pos, entry) in open.iter_mut().enumerate() {
                    let Some(mut o) = entry.take_if(|o| o.ticket.deadline <= now) else {
                        continue;
                    };
                    for (j, r) in o.results.iter().enumerate() {
                        if r.kind == NodeKind::Pending {
                            counted.observe(nodes, pos, j, NodeKind::Timeout);
                            if !std::mem::replace(&mut checked[j], true) {
                                nodes[j].verify_connection();
                            }
                        }
                    }
                    o.time_out("no reply before the lock's node timeout");
                    o.close();
                    left -= 1;
                }
                timer.as_mut().reset(earliest(&open));
            }
        }
    }
    // Every request answered yet a lock undecided: an answer missing from a reply.
    for mut o in open.into_iter().flatten() {
        o.time_out("no answer for this lock in the node's reply");
        o.close();
    }
    Tail { pending, counted }
}

/// The requests of a batch: one per node for plain nodes (the command built once), one per
/// hash slot for a cluster member, and a lock whose keys span slots alone.
fn requests(nodes: &[Arc<Node>], open: &[Option<Open>]) -> Vec<(usize, Request)> {
    if open.is_empty() {
        return Vec::new();
    }
    let locks: Arc<[Owned]> = open
        .iter()
        .flatten()
        .map(|o| {
            (
                o.ticket.keys.clone(),
                o.ticket.value.clone(),
                o.ticket.ttl_ms,
            )
        })
        .collect();
    let all: Vec<Extension<'_>> = locks.iter().map(extension).collect();
    // The whole batch's command, built once when a plain node takes it (never on cluster
    // members alone).
    let mut whole_batch: Option<Arc<Prepared>> = None;
    let mut out = Vec::with_capacity(nodes.len());
    for (j, node) in nodes.iter().enumerate() {
        for (one_request, group) in node.batch_groups(&all) {
            let whole = group.len() == all.len() && !node.is_cluster();
            let (node, locks) = (node.clone(), locks.clone());
            let prepared = whole.then(|| {
                whole_batch
                    .get_or_insert_with(|| Prepared::new(command::extend_batch(&all)))
                    .clone()
            });
            let request: Request = Box::pin(async move {
                let sub: Vec<Extension<'_>> = group.iter().map(|&p| extension(&locks[p])).collect();
                let answers = node
                    .extend_batch(&sub, one_request, prepared.as_deref())
                    .await;
                group.into_iter().zip(answers).collect()
            });
            out.push((j, request));
        }
    }
    out
}

/// Waits out the requests still in flight (bounded), so each one is written and its reply
/// read; a late answer goes into its node's metrics unless that lock counted a timeout there.
async fn drain(nodes: &[Arc<Node>], tail: Tail) {
    let Tail {
        mut pending,
        mut counted,
    } = tail;
    let _ = tokio::time::timeout(DRAIN_BOUND, async move {
        while let Some((j, answers)) = pending.next().await {
            for (pos, answer) in answers {
                let kind = answer.unwrap_or_else(|(kind, _)| kind);
                counted.observe(nodes, pos, j, kind);
            }
        }
    })
    .await;
}

/// A lock of a batch as the node requests own it: keys, value, ttl ms.
type Owned = (Arc<[Vec<u8>]>, Arc<str>, u64);

fn extension((keys, value, ttl_ms): &Owned) -> Extension<'_> {
    Extension {
        keys,
        value,
        ttl_ms: *ttl_ms,
    }
}

#[cfg(test)]
#[path = "batch_tests.rs"]
mod tests;
