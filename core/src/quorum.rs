//! One round of requests: send to every node before awaiting any reply, stop as soon as the
//! protocol says the round is decided, bound every node by a deadline (REDLOCK.md §3.2). The
//! arithmetic and the verdicts are `quorumlock_proto::quorum`'s.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

pub(crate) use quorumlock_proto::quorum::{Decide, Round, quorum};

use crate::clock::MonoTime;
use crate::node::{Node, NodeFailure};
use crate::report::{NodeKind, NodeResult};

/// How long requests still in flight when a round ends are kept alive in the background.
pub(crate) const DRAIN_BOUND: Duration = Duration::from_secs(30);

/// Runs `op` on every node in parallel, each bounded by `deadline` from now.
///
/// `op` returns the node's kind for this round (`Ok` is a vote for). Nodes whose reply had
/// not arrived when the round was decided are reported as `Pending`; those still silent at
/// the deadline as `Timeout`.
pub(crate) async fn round<F, Fut>(
    nodes: &[Arc<Node>],
    deadline: Duration,
    decide: Decide,
    op: F,
) -> Round
where
    F: Fn(Arc<Node>) -> Fut,
    Fut: Future<Output = Result<NodeKind, NodeFailure>> + Send + 'static,
{
    let n = nodes.len();
    let mut results: Vec<NodeResult> = nodes
        .iter()
        .map(|node| NodeResult::new(node.index, &node.address, NodeKind::Pending, None, None))
        .collect();
    let start = MonoTime::now();
    // One timer for the whole round: every node shares the same deadline.
    let timer = tokio::time::sleep(deadline);
    tokio::pin!(timer);
    // Poll every request once before looking at any reply, so each one is written (queued
    // on its connection) before the round can be decided: a request first polled after the
    // decision could land behind the cleanup of a failed attempt and leave its key behind.
    let mut pending: Vec<(usize, Pin<Box<Fut>>)> = nodes
        .iter()
        .enumerate()
        .map(|(i, node)| (i, Box::pin(op(node.clone()))))
        .collect();
    let first = poll_all(&mut pending).await;
    let (mut ok, mut answered) = (0usize, 0usize);
    let mut record = |i: usize, outcome: Result<NodeKind, NodeFailure>| {
        answered += 1;
        let latency = MonoTime::now() - start;
        let slot = &mut results[i];
        slot.latency = Some(latency);
        match outcome {
            Ok(kind) => slot.kind = kind,
            Err((kind, text)) => {
                slot.kind = kind;
                slot.detail = Some(text);
            }
        }
        tracing::trace!(node = slot.index, kind = %slot.kind, ?latency, "node reply");
        nodes[i].stats.observe(slot.kind, Some(latency));
        if slot.kind == NodeKind::Ok {
            ok += 1;
        }
        Round::decided(decide, n, answered, ok)
    };
    let mut decided = false;
    for (i, outcome) in first {
        decided |= record(i, outcome);
    }
    while !decided && !pending.is_empty() {
        let (i, outcome) = tokio::select! {
            biased;
            x = next_reply(&mut pending) => x,
            () = &mut timer => {
                for (j, slot) in results.iter_mut().enumerate().filter(|(_, r)| r.kind == NodeKind::Pending) {
                    nodes[j].stats.observe(NodeKind::Timeout, None);
                    nodes[j].verify_connection();
                    slot.kind = NodeKind::Timeout;
                    slot.detail = Some(format!("no reply within {deadline:?}"));
                }
                break;
            }
        };
        decided = record(i, outcome);
    }
    if !pending.is_empty() {
        // Keep the undecided or timed-out requests alive until they end (bounded): the
        // multiplexer drops queued requests whose caller went away, so an abandoned request
        // may never be written. A lock is sturdier on more than q nodes, and a release that
        // timed out (a slow node, not a dead one) must still delete its keys; a failed
        // attempt's cleanup is queued behind its requests on the same connections. Late
        // replies go nowhere but into the metrics of their node, unless it already counted
        // a timeout.
        let late: Vec<Option<Arc<Node>>> = nodes
            .iter()
            .zip(&results)
            .map(|(node, r)| (r.kind == NodeKind::Pending).then(|| node.clone()))
            .collect();
        tokio::spawn(tokio::time::timeout(DRAIN_BOUND, async move {
            while !pending.is_empty() {
                let (i, outcome) = next_reply(&mut pending).await;
                if let Some(node) = &late[i] {
                    let kind = outcome.unwrap_or_else(|(kind, _)| kind);
                    node.stats.observe(kind, Some(MonoTime::now() - start));
                }
            }
        }));
    }
    Round { results }
}

/// Polls each of `pending` once and returns those that finished, removed from it.
pub(crate) async fn poll_all<T, Fut>(pending: &mut Vec<(usize, Pin<Box<Fut>>)>) -> Vec<(usize, T)>
where
    Fut: Future<Output = T> + ?Sized,
{
    let mut done = Vec::new();
    std::future::poll_fn(|cx| {
        pending.retain_mut(|(i, fut)| match fut.as_mut().poll(cx) {
            Poll::Ready(outcome) => {
                done.push((*i, outcome));
                false
            }
            Poll::Pending => true,
        });
        Poll::Ready(())
    })
    .await;
    done
}

/// The first of `pending` to finish, removed from it; never completes when it is empty.
///
/// A round has a handful of requests, so polling each one on every wake-up costs less than
/// the allocation and bookkeeping per request of a `FuturesUnordered`.
pub(crate) async fn next_reply<T, Fut>(pending: &mut Vec<(usize, Pin<Box<Fut>>)>) -> (usize, T)
where
    Fut: Future<Output = T> + ?Sized,
{
    std::future::poll_fn(|cx| {
        for k in 0..pending.len() {
            if let Poll::Ready(outcome) = pending[k].1.as_mut().poll(cx) {
                let (i, _) = pending.swap_remove(k);
                return Poll::Ready((i, outcome));
            }
        }
        Poll::Pending
    })
    .await
}
