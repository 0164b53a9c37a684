//! Deliberate protocol bugs for the simulator (cargo feature `mutants`, off by default; only
//! `quorumlock-sim` turns it on, never the engine or a binding).
//!
//! [`crate::acquisition::Acquisition::with_mutant`] plants one in an acquisition: each hook is
//! a `#[cfg(feature = "mutants")]` adjustment at the decision it breaks (the round's early
//! decision in [`crate::round::Tally`], the quorum checks, the validity terms and the cleanup
//! plan in [`crate::acquisition`]); [`crate::grants::Grants::with_mutant`] plants
//! [`Mutant::StaleGrants`] in a waiter's registrations. With [`Mutant::None`] the machine
//! behaves exactly as without the feature. [`Mutant::ExtendSet`] has no hook here: it is the simulator's extend
//! that sends `SET`.

use crate::quorum::Round;
use crate::report::NodeKind;

/// A deliberate bug in the protocol.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mutant {
    /// The real protocol.
    #[default]
    None,
    /// Quorum `N / 2` instead of `N / 2 + 1` (one phantom vote in every count that has a
    /// vote).
    QuorumHalf,
    /// Validity measured from the replies: the elapsed term dropped, `valid_until` from T2.
    NoElapsed,
    /// No drift term (`drift = 0`).
    NoDrift,
    /// Extend sends `SET key value PX ttl` (re-creating or overwriting keys); acted on by the
    /// simulator's extend, not by the acquisition.
    ExtendSet,
    /// No cleanup after a failed attempt.
    NoCleanup,
    /// Fencing without phase 2: phase 1's tokens accepted without a quorum holding them.
    NoPhase2,
    /// A grant's validity counted from the grant, not from the registering marks.
    GrantFromNow,
    /// Grant notices of a registration given back since counted for the current one.
    StaleGrants,
}

impl Mutant {
    /// Every mutant (not `None`).
    pub const ALL: [Mutant; 8] = [
        Mutant::QuorumHalf,
        Mutant::NoElapsed,
        Mutant::NoDrift,
        Mutant::ExtendSet,
        Mutant::NoCleanup,
        Mutant::NoPhase2,
        Mutant::GrantFromNow,
        Mutant::StaleGrants,
    ];

    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Mutant::None => "none",
            Mutant::QuorumHalf => "mutant: quorum N/2",
            Mutant::NoElapsed => "mutant: validity from replies (no elapsed)",
            Mutant::NoDrift => "mutant: no drift term",
            Mutant::ExtendSet => "mutant: extend re-creates keys (SET)",
            Mutant::NoCleanup => "mutant: no cleanup after a failed attempt",
            Mutant::NoPhase2 => "mutant: fencing without phase 2",
            Mutant::GrantFromNow => "mutant: grant validity from the grant",
            Mutant::StaleGrants => "mutant: stale grants counted",
        }
    }

    /// `ok` votes for as this mutant counts them: one more for `QuorumHalf` when there is at
    /// least one, so `ok + 1 >= N / 2 + 1` is `ok >= N / 2`.
    pub fn votes(self, ok: usize) -> usize {
        if self == Mutant::QuorumHalf && ok > 0 {
            ok + 1
        } else {
            ok
        }
    }

    /// For `QuorumHalf`, `round` with its phantom vote (the first result that is not `Ok`
    /// turned `Ok`); `None` for the other mutants or when nothing changes.
    pub fn phantom_vote(self, round: &Round) -> Option<Round> {
        if self != Mutant::QuorumHalf || round.count(NodeKind::Ok) == 0 {
            return None;
        }
        let mut r = round.clone();
        let slot = r.results.iter_mut().find(|x| x.kind != NodeKind::Ok)?;
        slot.kind = NodeKind::Ok;
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_counts_one_phantom_vote() {
        use NodeKind::*;
        let r = crate::quorum::tests::round_of(&[Ok, Ok, HeldByOther, Timeout, Timeout]);
        let p = Mutant::QuorumHalf.phantom_vote(&r).unwrap();
        assert_eq!(p.count(Ok), 3);
        assert!(Mutant::None.phantom_vote(&r).is_none());
        assert_eq!(Mutant::QuorumHalf.votes(0), 0);
        assert_eq!(Mutant::QuorumHalf.votes(2), 3);
        assert_eq!(Mutant::NoDrift.votes(2), 2);
    }
}
