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
use std::time::Duration;

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
            let tail = send(&nodes, batch).await;
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

/// A node's answers to a batch: one per lock.
type Answers = Vec<Result<NodeKind, NodeFailure>>;
type NodeFuture = Pin<Box<dyn Future<Output = Answers> + Send>>;

/// One lock's round while its batch runs.
struct Open {
    ticket: Ticket,
    /// Its place in the batch (and in every node's answers).
    pos: usize,
    results: Vec<NodeResult>,
    answered: usize,
    ok: usize,
}

impl Open {
    fn close(self) {
        // The watchdog may be gone (its lock dropped): nobody to tell.
        let _ = self.ticket.answer.send(Round {
            results: self.results,
        });
    }
}

/// What is left of a batch once every lock was answered: the requests still in flight,
/// which nodes timed out for some lock, and when the batch was sent.
struct Tail {
    pending: Vec<(usize, NodeFuture)>,
    timed_out: Vec<bool>,
    start: MonoTime,
}

/// Sends `batch` to every node and answers each lock when its round is decided or its
/// deadline passed.
async fn send(nodes: &[Arc<Node>], batch: Vec<Ticket>) -> Tail {
    let n = nodes.len();
    let mut timed_out = vec![false; n];
    let start = MonoTime::now();
    let mut open = Vec::with_capacity(batch.len());
    for ticket in batch {
        let mut o = Open {
            ticket,
            pos: open.len(),
            results: nodes
                .iter()
                .map(|node| {
                    NodeResult::new(node.index, &node.address, NodeKind::Pending, None, None)
                })
                .collect(),
            answered: 0,
            ok: 0,
        };
        if o.ticket.deadline > start {
            open.push(o);
        } else {
            // Its deadline passed while it waited for a slot: not sent.
            time_out(
                nodes,
                &mut o.results,
                &mut timed_out,
                "queued past its node timeout",
            );
            o.close();
        }
    }
    if open.is_empty() {
        return Tail {
            pending: Vec::new(),
            timed_out,
            start,
        };
    }
    let locks: Arc<[Owned]> = open
        .iter()
        .map(|o| {
            (
                o.ticket.keys.clone(),
                o.ticket.value.clone(),
                o.ticket.ttl_ms,
            )
        })
        .collect();
    let prepared = Prepared::new(command::extend_batch(&extensions(&locks)));
    let mut pending: Vec<(usize, NodeFuture)> = nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let (node, locks, prepared) = (node.clone(), locks.clone(), prepared.clone());
            let fut: NodeFuture = Box::pin(async move {
                node.extend_batch(&extensions(&locks), Some(&prepared))
                    .await
            });
            (i, fut)
        })
        .collect();
    // Every request is polled (written to its connection) before any reply is looked at, as
    // in `quorum::round`.
    let first = quorum::poll_all(&mut pending).await;
    let record = |open: &mut Vec<Open>, i: usize, answers: Answers| {
        let latency = MonoTime::now() - start;
        let mut k = 0;
        while k < open.len() {
            let o = &mut open[k];
            let slot = &mut o.results[i];
            slot.latency = Some(latency);
            match answers.get(o.pos) {
                Some(Ok(kind)) => slot.kind = *kind,
                Some(Err((kind, text))) => {
                    slot.kind = *kind;
                    slot.detail = Some(text.clone());
                }
                None => {
                    slot.kind = NodeKind::Protocol;
                    slot.detail = Some("no answer for this lock".to_owned());
                }
            }
            nodes[i].stats.observe(slot.kind, Some(latency));
            o.answered += 1;
            o.ok += usize::from(slot.kind == NodeKind::Ok);
            if Round::decided(Decide::AtQuorum, n, o.answered, o.ok) {
                open.swap_remove(k).close();
            } else {
                k += 1;
            }
        }
    };
    for (i, answers) in first {
        record(&mut open, i, answers);
    }
    while !open.is_empty() && !pending.is_empty() {
        let next = open
            .iter()
            .map(|o| o.ticket.deadline)
            .min()
            .unwrap_or(start);
        tokio::select! {
            biased;
            (i, answers) = quorum::next_reply(&mut pending) => record(&mut open, i, answers),
            () = tokio::time::sleep(next.saturating_since(MonoTime::now())) => {
                let now = MonoTime::now();
                let mut k = 0;
                while k < open.len() {
                    if open[k].ticket.deadline <= now {
                        let mut o = open.swap_remove(k);
                        let why = "no reply before the lock's node timeout";
                        time_out(nodes, &mut o.results, &mut timed_out, why);
                        o.close();
                    } else {
                        k += 1;
                    }
                }
            }
        }
    }
    Tail {
        pending,
        timed_out,
        start,
    }
}

/// Marks the nodes that have not answered as timed out, and has each such node's connection
/// checked once per batch.
fn time_out(nodes: &[Arc<Node>], results: &mut [NodeResult], checked: &mut [bool], why: &str) {
    for (j, slot) in results
        .iter_mut()
        .enumerate()
        .filter(|(_, r)| r.kind == NodeKind::Pending)
    {
        nodes[j].stats.observe(NodeKind::Timeout, None);
        if !std::mem::replace(&mut checked[j], true) {
            nodes[j].verify_connection();
        }
        slot.kind = NodeKind::Timeout;
        slot.detail = Some(why.to_owned());
    }
}

/// Waits out the requests still in flight (bounded), so each one is written and its reply
/// read: a late reply goes into its node's metrics, unless that node already counted
/// timeouts in this batch.
async fn drain(nodes: &[Arc<Node>], tail: Tail) {
    let Tail {
        mut pending,
        timed_out,
        start,
    } = tail;
    let _ = tokio::time::timeout(DRAIN_BOUND, async move {
        while !pending.is_empty() {
            let (j, answers) = quorum::next_reply(&mut pending).await;
            if !timed_out[j] {
                let latency = MonoTime::now() - start;
                for answer in answers {
                    let kind = answer.unwrap_or_else(|(kind, _)| kind);
                    nodes[j].stats.observe(kind, Some(latency));
                }
            }
        }
    })
    .await;
}

/// A lock of a batch as the node requests own it: keys, value, ttl ms.
type Owned = (Arc<[Vec<u8>]>, Arc<str>, u64);

fn extensions(locks: &[Owned]) -> Vec<Extension<'_>> {
    locks
        .iter()
        .map(|(keys, value, ttl_ms)| Extension {
            keys,
            value,
            ttl_ms: *ttl_ms,
        })
        .collect()
}
