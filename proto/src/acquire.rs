//! The decisions of an acquisition (REDLOCK.md §3): what a round of votes means, which nodes
//! a failed attempt must clean, and when the next attempt starts.

use std::time::Duration;

use crate::config::LockOptions;
use crate::error::ErrorKind;
use crate::quorum::{self, Round};
use crate::report::{NodeKind, Report};
use crate::value;

/// What one attempt's round means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttemptVerdict {
    /// A quorum voted for (and fencing settled), with enough validity left.
    Granted,
    /// The attempt failed: the kind, and a message that says why.
    Failed(ErrorKind, String),
}

/// Judges an attempt: `round` with `votes` for out of its nodes, `validity_us` left after the
/// attempt (and after fencing phase 2), `fence_failed` when a fenced attempt did not settle
/// its tokens on a quorum (REDLOCK.md §3.2, §3.3, §7.4).
pub fn verdict(
    round: &Round,
    validity_us: i64,
    min_validity_us: i64,
    fence_failed: bool,
) -> AttemptVerdict {
    let n = round.results.len();
    let q = quorum::quorum(n);
    let votes = round.count(NodeKind::Ok);
    if votes >= q && !fence_failed && validity_us > 0 && validity_us >= min_validity_us {
        return AttemptVerdict::Granted;
    }
    let kind = if votes >= q && fence_failed {
        ErrorKind::QuorumNotReached
    } else if votes >= q {
        ErrorKind::ValidityTooShort
    } else {
        quorum::classify_failure(round)
    };
    let message = failure_message(kind, votes, q, validity_us, round);
    AttemptVerdict::Failed(kind, message)
}

fn failure_message(kind: ErrorKind, votes: usize, q: usize, v: i64, round: &Round) -> String {
    let n = round.results.len();
    match kind {
        ErrorKind::ValidityTooShort => format!(
            "a quorum of {votes}/{n} nodes was reached but only {:.3} ms of validity were left; the attempt took too long (a stalled client or a slow network)",
            v as f64 / 1000.0
        ),
        ErrorKind::Busy => format!(
            "the resource is held by another owner on {} of {n} nodes",
            round.count(NodeKind::HeldByOther)
        ),
        _ => {
            let mut text = format!(
                "only {votes} of {n} nodes voted for, {q} needed; node errors blocked the quorum"
            );
            let quarantined = round.count(NodeKind::Quarantined);
            if quarantined > 0 {
                text.push_str(&format!(
                    " ({quarantined} in restart quarantine: nodes without durable writes are counted only after max_ttl + quarantine_margin of uptime, so a restart cannot hand out a lock twice; make them durable with appendonly yes + appendfsync always, set quarantine off for test set-ups, or wait)"
                ));
            }
            text
        }
    }
}

/// True when an acquire request that ended as `kind` cannot have written a key: the node
/// refused it (another holder, an ACL or role refusal) or it was never sent. Every other
/// outcome, a timeout or a lost connection included, may have written one.
pub fn untouched(kind: NodeKind) -> bool {
    matches!(
        kind,
        NodeKind::HeldByOther
            | NodeKind::NotConnected
            | NodeKind::ConnectionRefused
            | NodeKind::Quarantined
            | NodeKind::EvictionPolicy
            | NodeKind::Duplicate
            | NodeKind::ReadOnly
            | NodeKind::ClusterUnsupported
            | NodeKind::Auth
            | NodeKind::NoPermission
            | NodeKind::Loading
    )
}

/// The nodes (indices) a failed attempt must clean: those where it may have written a key
/// (REDLOCK.md §3.2 step 6). `cluster[i]` marks Redis Cluster members: their client retries a
/// request after an I/O error by itself, so a `HeldByOther` there may follow our own first
/// write, and they are cleaned whatever they answered (compare-and-delete touches only our
/// value).
pub fn cleanup_plan(round: &Round, cluster: &[bool]) -> Vec<usize> {
    round
        .results
        .iter()
        .filter(|r| must_clean(r.kind, cluster.get(r.index).copied().unwrap_or(false)))
        .map(|r| r.index)
        .collect()
}

/// Whether a node that answered `kind` to an acquisition may hold its key (see
/// [`cleanup_plan`]; `cluster` marks a Redis Cluster member). `Pending` may: its request may
/// still be written.
pub fn must_clean(kind: NodeKind, cluster: bool) -> bool {
    !untouched(kind) || (kind == NodeKind::HeldByOther && cluster)
}

/// Whether a round of EXISTS probes found the keys gone on a quorum of its `n` nodes
/// (`NotHeld`): the holder released before a waiter's subscription was live (REDLOCK.md §9).
pub fn vacant(round: &Round, n: usize) -> bool {
    round.count(NodeKind::NotHeld) >= quorum::quorum(n)
}

/// After failed attempt number `attempt` (1-based), `elapsed` since the call started: the
/// delay before the next attempt (`retry_delay + uniform(0, retry_jitter)` from `random`),
/// or `None` when the retries or the wait budget are spent (REDLOCK.md §3.4).
pub fn next_attempt(
    opts: &LockOptions,
    attempt: u32,
    elapsed: Duration,
    random: [u8; 8],
) -> Option<Duration> {
    let jitter_us = u64::try_from(opts.get_retry_jitter().as_micros()).unwrap_or(u64::MAX);
    let jitter = Duration::from_micros(value::below(jitter_us, random));
    let delay = opts.get_retry_delay().saturating_add(jitter);
    let out_of_budget = opts
        .get_wait()
        .is_some_and(|w| elapsed.saturating_add(delay) > w);
    (attempt <= opts.get_retry_count() && !out_of_budget).then_some(delay)
}

/// The report kept for an error: rounds become reports, the history at most `cap` long.
pub fn remember(history: &mut Vec<Report>, report: &Report, cap: usize) {
    if cap == 0 {
        return;
    }
    if history.len() >= cap {
        history.remove(0);
    }
    history.push(report.clone());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quorum::tests::round_of as round;
    use NodeKind::*;

    #[test]
    fn verdicts() {
        let three = round(&[Ok, Ok, Ok, HeldByOther, Timeout]);
        assert_eq!(
            verdict(&three, 9_000, 1_000, false),
            AttemptVerdict::Granted
        );
        let slow = verdict(&three, 500, 1_000, false);
        assert!(matches!(
            slow,
            AttemptVerdict::Failed(ErrorKind::ValidityTooShort, _)
        ));
        let unfenced = verdict(&three, 9_000, 1_000, true);
        assert!(matches!(
            unfenced,
            AttemptVerdict::Failed(ErrorKind::QuorumNotReached, _)
        ));
        let busy = verdict(
            &round(&[HeldByOther, HeldByOther, HeldByOther, Ok, Ok]),
            9_000,
            0,
            false,
        );
        assert!(matches!(busy, AttemptVerdict::Failed(ErrorKind::Busy, _)));
        // Two votes of five: never granted, whatever the validity.
        let two = round(&[Ok, Ok, Timeout, Timeout, HeldByOther]);
        assert!(matches!(
            verdict(&two, 9_000, 0, false),
            AttemptVerdict::Failed(ErrorKind::QuorumNotReached, _)
        ));
        let q = verdict(&round(&[Quarantined, Quarantined, Ok]), 9_000, 0, false);
        let AttemptVerdict::Failed(_, text) = q else {
            panic!()
        };
        assert!(text.contains("appendfsync always"), "{text}");
    }

    #[test]
    fn cleanup_skips_only_nodes_that_cannot_have_written() {
        let r = round(&[
            Ok,
            HeldByOther,
            Timeout,
            Quarantined,
            ConnectionLost,
            Pending,
        ]);
        assert_eq!(cleanup_plan(&r, &[]), vec![0, 2, 4, 5]);
        let clustered = [false, true, false, false, false, false];
        assert_eq!(cleanup_plan(&r, &clustered), vec![0, 1, 2, 4, 5]);
    }

    #[test]
    fn retry_schedule() {
        let o = LockOptions::default()
            .retry_count(2)
            .retry_delay(Duration::from_millis(100))
            .retry_jitter(Duration::from_millis(200));
        let d = next_attempt(&o, 1, Duration::ZERO, [7; 8]).unwrap();
        assert!(d >= Duration::from_millis(100) && d < Duration::from_millis(300));
        assert!(next_attempt(&o, 2, Duration::ZERO, [7; 8]).is_some());
        assert!(next_attempt(&o, 3, Duration::ZERO, [7; 8]).is_none());
        let budget = o.wait(Duration::from_millis(150));
        assert!(next_attempt(&budget, 1, Duration::from_millis(100), [0; 8]).is_none());
        assert!(next_attempt(&budget, 1, Duration::ZERO, [0; 8]).is_some());
    }
}
