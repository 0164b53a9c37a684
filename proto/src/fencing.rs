//! Fencing tokens (REDLOCK.md §7): every successful acquisition returns, per resource,
//! a 64-bit token strictly greater than every token returned before for that resource.
//!
//! Phase 1 runs FENCED-ACQUIRE instead of `SET NX`: where it takes the lock it also
//! advances the resource's counter to `max(old + 1, S * 2^20)` (S: the node's Unix time in
//! seconds) and returns it. At the success decision, `Q` is the set of nodes that voted
//! for, `t = max(c_i, i in Q)`, and `R = { i in Q : c_i == t }`. If `|R| < q`, phase 2
//! sends RAISE(value, t) to the nodes of `Q` below `t`: an owner-checked script that lifts
//! the counter to `t` only while our key is still there. The acquisition succeeds only if
//! `|R| >= q` afterwards (and the validity, measured after phase 2, is long enough).
//!
//! Why tokens increase (G1, proof sketch of §7.6). Let X and Y succeed with `T2_X < T2_Y`.
//! `|R_X| >= q` and `|Q_Y| >= q`, so some node j is in both. On j, X's key existed from
//! its write `a_j` through the moment `w_j <= T2_X` at which the counter reached `t_X`
//! (FENCED-ACQUIRE returned it, or RAISE passed its owner check): keys survive until T2
//! (lemma K), and values are unique per attempt, so nothing but expiry removes them.
//! Y's write `b_j` on j cannot fall inside `[a_j, w_j]` (`SET NX` would fail), nor before
//! `a_j` (Y's key would then still exist at `a_j`, since it survives until `T2_Y > T2_X
//! >= a_j`). So `b_j > w_j`, and as counters never decrease, Y's script on j returned more
//! than `t_X`: `t_Y >= c_j(Y) > t_X`. The proof uses only nodes of `R_X`, which is why
//! phase 2 raises only nodes of `Q`, where our key is known to exist, and checks it again.
//!
//! The time floor `S * 2^20` keeps tokens increasing across nodes that lost their counters
//! in a restart, as long as the restart quarantine keeps such nodes out for
//! `max_ttl + quarantine_margin` and node clocks stay within Δ of real time with
//! `2Δ + 2 s <= quarantine_margin` (G2, §7.7). Fenced acquisitions therefore also treat a
//! node whose uptime cannot be read as quarantined.

//! This module holds the counter keys and phase 1's arithmetic; the acquisition machine
//! (`crate::acquisition`) runs phase 2.

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
