//! The quorum arithmetic of a round: `N / 2 + 1`, the validity left after an attempt, and
//! the classification of a failed attempt (REDLOCK.md §3.2, §3.3). The driver runs the round
//! (sends, waits, times out); these functions decide.

use std::time::Duration;

use crate::error::ErrorKind;
use crate::report::{NodeKind, NodeResult, Report};

/// `N / 2 + 1` in integer arithmetic (REDLOCK.md §12 rule 2: never floats, never `N / 2`).
pub const fn quorum(n: usize) -> usize {
    n / 2 + 1
}

/// How a round may end early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decide {
    /// Stop as soon as `q` nodes answered `Ok`, or that has become impossible.
    AtQuorum,
    /// Wait for every node (release: clean everywhere and report).
    All,
}

/// The collected outcome of one round: one result per node, in node order.
#[derive(Clone, Debug, Default)]
pub struct Round {
    /// One entry per node.
    pub results: Vec<NodeResult>,
}

impl Round {
    /// How many nodes ended with `kind`.
    pub fn count(&self, kind: NodeKind) -> usize {
        self.results.iter().filter(|r| r.kind == kind).count()
    }

    /// The round as a per-node report.
    pub fn into_report(self) -> Report {
        Report::new(self.results)
    }

    /// Whether a round that has `answered` of its nodes' results, `ok` of them votes for,
    /// can stop now under `decide`: the quorum is reached, or it has become impossible.
    pub fn decided(decide: Decide, n: usize, answered: usize, ok: usize) -> bool {
        let q = quorum(n);
        decide == Decide::AtQuorum && (ok >= q || ok + (n - answered) < q)
    }
}

/// Classifies a failed acquire or extend round that did not reach the quorum
/// (REDLOCK.md §3.3): `Busy` when other owners alone made the quorum impossible, otherwise
/// `QuorumNotReached`.
pub fn classify_failure(round: &Round) -> ErrorKind {
    let n = round.results.len();
    if round.count(NodeKind::HeldByOther) > n - quorum(n) {
        ErrorKind::Busy
    } else {
        ErrorKind::QuorumNotReached
    }
}

/// `V = ttl - elapsed - drift` in signed microseconds (REDLOCK.md §1; never wraps).
pub fn validity_us(ttl: Duration, elapsed: Duration, drift: Duration) -> i64 {
    let as_i64 = |d: Duration| i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
    as_i64(ttl)
        .saturating_sub(as_i64(elapsed))
        .saturating_sub(as_i64(drift))
}

#[cfg(test)]
pub(crate) mod tests {
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

    /// A round whose node `i` answered `kinds[i]` (for the tests of every module).
    pub(crate) fn round_of(kinds: &[NodeKind]) -> Round {
        Round {
            results: kinds
                .iter()
                .enumerate()
                .map(|(i, k)| NodeResult::new(i, "", *k, None, None))
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
