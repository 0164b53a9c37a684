//! A round in progress (REDLOCK.md §3.2): one request per node, replies recorded as they come,
//! the early decision at quorum, and the deadline after which silent nodes count as timeouts.
//! Times are the driver's monotonic microseconds.

use std::time::Duration;

use crate::quorum::{Decide, Round};
use crate::report::{NodeKind, NodeResult};

/// What a node answered to one request of a round: a kind (`Ok` is a vote for), or a failure
/// with the node's text.
pub type Answer = Result<NodeKind, (NodeKind, String)>;

/// One round in progress over some of the configured nodes.
#[derive(Clone, Debug)]
pub struct Tally {
    decide: Decide,
    started_us: u64,
    deadline_us: u64,
    timeout: Duration,
    round: Round,
    answered: usize,
    ok: usize,
    #[cfg(feature = "mutants")]
    mutant: crate::mutant::Mutant,
}

impl Tally {
    /// A round over `nodes` (node index and address), started at `now_us`, each node bounded
    /// by `timeout`.
    pub fn new<'a>(
        nodes: impl IntoIterator<Item = (usize, &'a str)>,
        decide: Decide,
        now_us: u64,
        timeout: Duration,
    ) -> Self {
        let results = nodes
            .into_iter()
            .map(|(i, address)| NodeResult::new(i, address, NodeKind::Pending, None, None))
            .collect();
        let timeout_us = u64::try_from(timeout.as_micros()).unwrap_or(u64::MAX);
        Self {
            decide,
            started_us: now_us,
            deadline_us: now_us.saturating_add(timeout_us),
            timeout,
            round: Round { results },
            answered: 0,
            ok: 0,
            #[cfg(feature = "mutants")]
            mutant: crate::mutant::Mutant::None,
        }
    }

    /// The same round with `mutant`'s count of votes in its early decision.
    #[cfg(feature = "mutants")]
    pub fn with_mutant(mut self, mutant: crate::mutant::Mutant) -> Self {
        self.mutant = mutant;
        self
    }

    /// When the round's silent nodes time out.
    pub fn deadline_us(&self) -> u64 {
        self.deadline_us
    }

    /// Records node `index`'s answer at `now_us`. False (and nothing changes) when the node is
    /// not in this round or was already decided (answered or timed out).
    pub fn record(&mut self, index: usize, answer: Answer, now_us: u64) -> bool {
        let Some(slot) = self.round.results.iter_mut().find(|r| r.index == index) else {
            return false;
        };
        if slot.kind != NodeKind::Pending {
            return false;
        }
        slot.latency = Some(Duration::from_micros(
            now_us.saturating_sub(self.started_us),
        ));
        match answer {
            Ok(kind) => slot.kind = kind,
            Err((kind, text)) => {
                slot.kind = kind;
                slot.detail = Some(text);
            }
        }
        self.answered += 1;
        if slot.kind == NodeKind::Ok {
            self.ok += 1;
        }
        true
    }

    /// Whether the round is over: every node answered or timed out, or (`Decide::AtQuorum`)
    /// the quorum is reached or has become impossible.
    pub fn is_decided(&self) -> bool {
        let n = self.round.results.len();
        let ok = self.ok;
        #[cfg(feature = "mutants")]
        let ok = self.mutant.votes(ok);
        self.answered >= n || Round::decided(self.decide, n, self.answered, ok)
    }

    /// Marks the nodes still silent at `now_us` as timeouts if the deadline has passed, and
    /// returns their indices (empty before the deadline).
    pub fn expire(&mut self, now_us: u64) -> Vec<usize> {
        if now_us < self.deadline_us || self.is_decided() {
            return Vec::new();
        }
        let timeout = self.timeout;
        let mut expired = Vec::new();
        for slot in &mut self.round.results {
            if slot.kind == NodeKind::Pending {
                slot.kind = NodeKind::Timeout;
                slot.detail = Some(format!("no reply within {timeout:?}"));
                expired.push(slot.index);
                self.answered += 1;
            }
        }
        expired
    }

    /// The results so far (undecided nodes are `Pending`).
    pub fn round(&self) -> &Round {
        &self.round
    }

    /// The results so far, moved out (an empty round stays behind): for the owner of a
    /// decided tally, without copying every node's address.
    pub fn take_round(&mut self) -> Round {
        std::mem::take(&mut self.round)
    }

    /// The results; nodes that had not answered when the round was decided stay `Pending`.
    pub fn into_round(self) -> Round {
        self.round
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn five(decide: Decide) -> Tally {
        let addresses = ["a", "b", "c", "d", "e"];
        Tally::new(
            addresses.iter().copied().enumerate(),
            decide,
            100,
            Duration::from_millis(50),
        )
    }

    #[test]
    fn decides_at_quorum_or_when_it_is_impossible() {
        let mut t = five(Decide::AtQuorum);
        assert!(t.record(0, Ok(NodeKind::Ok), 110));
        assert!(
            !t.record(0, Ok(NodeKind::HeldByOther), 111),
            "a second answer is ignored"
        );
        assert!(!t.record(9, Ok(NodeKind::Ok), 111), "not in the round");
        t.record(1, Ok(NodeKind::Ok), 120);
        assert!(!t.is_decided());
        t.record(2, Ok(NodeKind::Ok), 130);
        assert!(t.is_decided());
        let round = t.into_round();
        assert_eq!(round.count(NodeKind::Pending), 2);
        assert_eq!(round.results[2].latency, Some(Duration::from_micros(30)));

        let mut lost = five(Decide::AtQuorum);
        for i in 0..3 {
            lost.record(i, Err((NodeKind::ConnectionRefused, "refused".into())), 101);
        }
        assert!(lost.is_decided(), "two votes can no longer make three");
    }

    #[test]
    fn all_waits_for_every_node_and_the_deadline_times_out_the_rest() {
        let mut t = five(Decide::All);
        for i in 0..3 {
            t.record(i, Ok(NodeKind::Released), 110);
        }
        assert!(!t.is_decided());
        assert!(t.expire(50_099).is_empty(), "before the deadline");
        assert_eq!(t.deadline_us(), 50_100);
        assert_eq!(t.expire(50_100), vec![3, 4]);
        assert!(t.is_decided());
        let round = t.into_round();
        assert_eq!(round.count(NodeKind::Timeout), 2);
        assert!(
            round.results[4]
                .detail
                .as_deref()
                .unwrap()
                .contains("no reply")
        );
    }
}
