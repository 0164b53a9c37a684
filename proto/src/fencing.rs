//! Fencing tokens (REDLOCK.md §7): the counter keys, and what phase 1's counters mean.
//!
//! Phase 1 runs FENCED-ACQUIRE, which returns each resource's advanced counter on every node
//! that voted for. At the success decision, `Q` is the set of nodes that voted for,
//! `t = max(c_i, i in Q)` per resource, and `R = { i in Q : c_i == t }`. If `|R| < q`,
//! phase 2 sends the owner-checked RAISE(value, t) to the nodes of `Q` below `t`, and the
//! acquisition succeeds only if `|R| >= q` afterwards. Why this makes tokens strictly
//! increase is the proof sketch of §7.6 (repeated in the engine's `fencing.rs`).

use crate::quorum::Round;
use crate::report::NodeKind;

/// Lock keys followed by their counter keys (`<lock key>:fence`), in the same order.
pub fn with_counters(keys: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let counters = keys.iter().map(|k| {
        let mut c = k.clone();
        c.extend_from_slice(b":fence");
        c
    });
    keys.iter().cloned().chain(counters).collect()
}

/// What phase 1 decided: the tokens, and whether phase 2 is needed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phase1 {
    /// `t`: per resource, the highest counter among the nodes that voted for.
    pub tokens: Vec<u64>,
    /// `|R|`: nodes of `Q` whose counters already equal `t`.
    pub held: usize,
    /// Nodes of `Q` (indices) whose counters are below `t`: phase 2 raises them.
    pub lagging: Vec<usize>,
}

impl Phase1 {
    /// Whether the tokens are settled on a quorum of `n` nodes without phase 2.
    pub fn settled(&self, n: usize) -> bool {
        self.held >= crate::quorum::quorum(n)
    }
}

/// Derives the tokens from a phase-1 `round` and the counters each node returned
/// (`counters[i]` for node `i`, `None` where none came back). `None` when no node of `Q`
/// returned counters.
pub fn phase1(round: &Round, counters: &[Option<Vec<u64>>]) -> Option<Phase1> {
    let q_nodes: Vec<(usize, &Vec<u64>)> = round
        .results
        .iter()
        .filter(|r| r.kind == NodeKind::Ok)
        .filter_map(|r| Some((r.index, counters.get(r.index)?.as_ref()?)))
        .collect();
    let width = q_nodes.first()?.1.len();
    let tokens: Vec<u64> = (0..width)
        .map(|r| {
            q_nodes
                .iter()
                .filter_map(|(_, c)| c.get(r).copied())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let held = q_nodes.iter().filter(|(_, c)| **c == tokens).count();
    let lagging = q_nodes
        .iter()
        .filter(|(_, c)| **c != tokens)
        .map(|(i, _)| *i)
        .collect();
    Some(Phase1 {
        tokens,
        held,
        lagging,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_the_highest_counters_of_the_voters() {
        let kinds = [
            NodeKind::Ok,
            NodeKind::Ok,
            NodeKind::Ok,
            NodeKind::HeldByOther,
            NodeKind::Ok,
        ];
        let round = crate::quorum::tests::round_of(&kinds);
        // Node 3 refused (its counter must not count), node 4 lags on the second resource.
        let counters = vec![
            Some(vec![5, 9]),
            Some(vec![5, 9]),
            Some(vec![4, 9]),
            Some(vec![99, 99]),
            Some(vec![5, 8]),
        ];
        let p = phase1(&round, &counters).unwrap();
        assert_eq!(p.tokens, vec![5, 9]);
        assert_eq!(p.held, 2);
        assert_eq!(p.lagging, vec![2, 4]);
        assert!(!p.settled(5));
        assert!(phase1(&round, &[None, None, None, None, None]).is_none());
    }

    #[test]
    fn counter_keys_follow_the_lock_keys() {
        let k = with_counters(&[b"q:{a}".to_vec(), b"q:{b}".to_vec()]);
        assert_eq!(k[2], b"q:{a}:fence".to_vec());
        assert_eq!(k.len(), 4);
    }
}
