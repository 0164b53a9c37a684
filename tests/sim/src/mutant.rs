//! Mutants of the protocol decisions. `quorumlock-proto` stays unmutated: each mutant alters the
//! inputs or outputs of a proto call inside the simulated client, and the checker must flag it.

use std::time::Duration;

use quorumlock_proto::acquire::{self, AttemptVerdict};
use quorumlock_proto::config::{LockOptions, Timing};
use quorumlock_proto::extend::{self, Verdict};
use quorumlock_proto::quorum::{self, Decide, Round};
use quorumlock_proto::report::NodeKind;

/// A deliberate bug in the client's use of the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutant {
    /// The real protocol.
    None,
    /// Quorum `N / 2` instead of `N / 2 + 1` (one phantom vote in every count).
    QuorumHalf,
    /// Validity measured from the replies: the elapsed term dropped, `valid_until` from T2.
    NoElapsed,
    /// No drift term (`drift = 0`).
    NoDrift,
    /// Extend sends `SET key value PX ttl` (re-creating or overwriting keys).
    ExtendSet,
    /// No cleanup after a failed attempt.
    NoCleanup,
    /// Fencing without phase 2: phase 1's tokens accepted without a quorum holding them.
    NoPhase2,
}

impl Mutant {
    /// Every mutant (not `None`).
    pub const ALL: [Mutant; 6] = [
        Mutant::QuorumHalf,
        Mutant::NoElapsed,
        Mutant::NoDrift,
        Mutant::ExtendSet,
        Mutant::NoCleanup,
        Mutant::NoPhase2,
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
        }
    }

    /// `ok` as the mutant counts it.
    fn votes(self, ok: usize) -> usize {
        if self == Mutant::QuorumHalf && ok > 0 {
            ok + 1
        } else {
            ok
        }
    }

    /// `round` with the mutant's phantom vote (the first non-`Ok` result turned `Ok`).
    fn round(self, round: &Round) -> Round {
        let mut r = round.clone();
        if self == Mutant::QuorumHalf
            && r.count(NodeKind::Ok) > 0
            && let Some(x) = r.results.iter_mut().find(|x| x.kind != NodeKind::Ok)
        {
            x.kind = NodeKind::Ok;
        }
        r
    }

    /// `Round::decided` for an acquire or extend round.
    pub fn decided(self, n: usize, answered: usize, ok: usize) -> bool {
        Round::decided(Decide::AtQuorum, n, answered, self.votes(ok))
    }

    /// Whether `ok` votes make a quorum of `n`.
    pub fn quorum_reached(self, n: usize, ok: usize) -> bool {
        self.votes(ok) >= quorum::quorum(n)
    }

    /// The drift the client uses.
    pub fn drift(self, timing: &Timing, ttl: Duration) -> Duration {
        if self == Mutant::NoDrift {
            Duration::ZERO
        } else {
            timing.drift(ttl)
        }
    }

    /// The timing the client passes to `extend::verdict`.
    fn timing(self, timing: &Timing) -> Timing {
        let mut t = timing.clone();
        if self == Mutant::NoDrift {
            t.drift_factor = 0.0;
            t.drift_constant = Duration::ZERO;
        }
        t
    }

    /// `quorum::validity_us` as the mutant computes it.
    pub fn validity_us(self, ttl: Duration, elapsed: Duration, drift: Duration) -> i64 {
        let elapsed = if self == Mutant::NoElapsed {
            Duration::ZERO
        } else {
            elapsed
        };
        quorum::validity_us(ttl, elapsed, drift)
    }

    /// The client-clock instant validity counts from: T1, or T2 for `NoElapsed`.
    pub fn validity_start(self, t1: i64, t2: i64) -> i64 {
        if self == Mutant::NoElapsed { t2 } else { t1 }
    }

    /// `acquire::verdict`.
    pub fn verdict(self, round: &Round, v: i64, min_v: i64, fence_failed: bool) -> AttemptVerdict {
        acquire::verdict(&self.round(round), v, min_v, fence_failed)
    }

    /// `acquire::cleanup_plan`.
    pub fn cleanup_plan(self, round: &Round) -> Vec<usize> {
        if self == Mutant::NoCleanup {
            Vec::new()
        } else {
            acquire::cleanup_plan(round, &[])
        }
    }

    /// `extend::verdict`.
    pub fn extend_verdict(
        self,
        timing: &Timing,
        opts: &LockOptions,
        round: &Round,
        ttl: Duration,
        elapsed: Duration,
    ) -> Verdict {
        let elapsed = if self == Mutant::NoElapsed {
            Duration::ZERO
        } else {
            elapsed
        };
        extend::verdict(&self.timing(timing), opts, self.round(round), ttl, elapsed)
    }

    /// Whether phase 1's `held` nodes settle the tokens without phase 2.
    pub fn settled(self, held: usize, n: usize) -> bool {
        self == Mutant::NoPhase2 || self.votes(held) >= quorum::quorum(n)
    }
}
