//! One round of requests: send to every node before awaiting any reply, decide as soon as
//! the quorum is reached or has become impossible, bound every node by a deadline, and
//! classify failed attempts (REDLOCK.md §3.2, §3.3).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

use crate::clock::MonoTime;
use crate::error::ErrorKind;
use crate::node::{Node, NodeFailure};
use crate::report::{NodeKind, NodeResult, Report};

/// How long requests still in flight when a round ends are kept alive in the background.
const DRAIN_BOUND: Duration = Duration::from_secs(30);

/// `N / 2 + 1` in integer arithmetic (REDLOCK.md §12 rule 2: never floats, never `N / 2`).
pub(crate) const fn quorum(n: usize) -> usize {
    n / 2 + 1
}

/// How a round may end early.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decide {
    /// Stop as soon as `q` nodes answered `Ok`, or that has become impossible.
    AtQuorum,
    /// Wait for every node (release: clean everywhere and report).
    All,
}

/// The collected outcome of one round.
pub(crate) struct Round {
    pub(crate) results: Vec<NodeResult>,
}

impl Round {
    pub(crate) fn count(&self, kind: NodeKind) -> usize {
        self.results.iter().filter(|r| r.kind == kind).count()
    }

    pub(crate) fn into_report(self) -> Report {
        Report::new(self.results)
    }
}

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
    let q = quorum(n);
    let mut results: Vec<NodeResult> = nodes
        .iter()
        .map(|node| NodeResult {
            index: node.index,
            address: node.address.clone(),
            latency: None,
            kind: NodeKind::Pending,
            detail: None,
        })
        .collect();
    let start = MonoTime::now();
    // One timer for the whole round: every node shares the same deadline.
    let timer = tokio::time::sleep(deadline);
    tokio::pin!(timer);
    // Poll every request once before looking at any reply, so each one is written (queued
    // on its connection) before the round can be decided: a request first polled after the
    // decision could land behind the cleanup of a failed attempt and leave its key behind.
    let mut first = Vec::with_capacity(n);
    let mut rest = Vec::with_capacity(n);
    let mut started: Vec<(usize, Pin<Box<Fut>>)> = nodes
        .iter()
        .enumerate()
        .map(|(i, node)| (i, Box::pin(op(node.clone()))))
        .collect();
    std::future::poll_fn(|cx| {
        for (i, mut fut) in started.drain(..) {
            match fut.as_mut().poll(cx) {
                Poll::Ready(outcome) => first.push((i, outcome)),
                Poll::Pending => rest.push(async move { (i, fut.await) }),
            }
        }
        Poll::Ready(())
    })
    .await;
    let mut pending: FuturesUnordered<_> = rest.into_iter().collect();
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
        decide == Decide::AtQuorum && (ok >= q || ok + (n - answered) < q)
    };
    let mut decided = false;
    for (i, outcome) in first {
        decided |= record(i, outcome);
    }
    while !decided {
        let (i, outcome) = tokio::select! {
            biased;
            next = pending.next() => match next {
                Some(x) => x,
                None => break,
            },
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
            while let Some((i, outcome)) = pending.next().await {
                if let Some(node) = &late[i] {
                    let kind = outcome.unwrap_or_else(|(kind, _)| kind);
                    node.stats.observe(kind, Some(MonoTime::now() - start));
                }
            }
        }));
    }
    Round { results }
}

/// Classifies a failed acquire or extend round that did not reach the quorum
/// (REDLOCK.md §3.3): `Busy` when other owners alone made the quorum impossible, otherwise
/// `QuorumNotReached`.
pub(crate) fn classify_failure(round: &Round) -> ErrorKind {
    let n = round.results.len();
    if round.count(NodeKind::HeldByOther) > n - quorum(n) {
        ErrorKind::Busy
    } else {
        ErrorKind::QuorumNotReached
    }
}

/// `V = ttl - elapsed - drift` in signed microseconds (REDLOCK.md §1; never wraps).
pub(crate) fn validity_us(ttl: Duration, elapsed: Duration, drift: Duration) -> i64 {
    let as_i64 = |d: Duration| i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
    as_i64(ttl)
        .saturating_sub(as_i64(elapsed))
        .saturating_sub(as_i64(drift))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule2_quorum_table() {
        let table: Vec<usize> = (1..=7).map(quorum).collect();
        assert_eq!(table, vec![1, 2, 2, 3, 3, 4, 4]);
    }

    #[test]
    fn rule10_rule11_validity_formula() {
        let ttl = Duration::from_millis(10_000);
        let drift = Duration::from_millis(102);
        assert_eq!(validity_us(ttl, Duration::from_millis(3), drift), 9_895_000);
        assert_eq!(
            validity_us(ttl, Duration::from_millis(9_899), drift),
            -1_000
        );
        // Elapsed far beyond ttl: negative, no wrap, no panic.
        assert!(validity_us(ttl, Duration::from_secs(u64::MAX / 4), drift) < 0);
    }

    fn round_of(kinds: &[NodeKind]) -> Round {
        Round {
            results: kinds
                .iter()
                .enumerate()
                .map(|(i, k)| NodeResult {
                    index: i,
                    address: String::new(),
                    latency: None,
                    kind: *k,
                    detail: None,
                })
                .collect(),
        }
    }

    #[test]
    fn classification() {
        use NodeKind::*;
        // N=5: busy needs >= 3 held by others.
        assert_eq!(
            classify_failure(&round_of(&[HeldByOther, HeldByOther, HeldByOther, Ok, Ok])),
            ErrorKind::Busy
        );
        assert_eq!(
            classify_failure(&round_of(&[HeldByOther, HeldByOther, Timeout, Ok, Ok])),
            ErrorKind::QuorumNotReached
        );
        assert_eq!(
            classify_failure(&round_of(&[
                ConnectionRefused,
                ConnectionRefused,
                ConnectionRefused,
                Ok,
                Ok
            ])),
            ErrorKind::QuorumNotReached
        );
        // N=1: one holder is busy.
        assert_eq!(classify_failure(&round_of(&[HeldByOther])), ErrorKind::Busy);
    }
}
