//! Mutants: deliberate protocol bugs the checker must flag. [`Mutant`] is
//! `quorumlock_proto::mutant::Mutant` (cargo feature `mutants`, which only this crate turns
//! on): the acquisition-side mutants are planted in the protocol's own acquisition machine
//! (`Acquisition::with_mutant`), at the decisions they break. The holder's extend is still
//! sequenced by the simulator ([`crate::client`]), so the same mutants alter its calls into
//! proto here (`HolderMutant`), and `ExtendSet` lives in the simulator's extend alone.

use std::time::Duration;

use quorumlock_proto::config::{LockOptions, Timing};
use quorumlock_proto::extend::{self, Verdict};
use quorumlock_proto::quorum::{Decide, Round};

pub use quorumlock_proto::mutant::Mutant;

/// A mutant's effect on the holder side (the extend round), which the simulator sequences
/// itself.
pub(crate) trait HolderMutant {
    /// `Round::decided` for an extend round.
    fn decided(self, n: usize, answered: usize, ok: usize) -> bool;
    /// The drift the holder uses.
    fn drift(self, timing: &Timing, ttl: Duration) -> Duration;
    /// The client-clock instant validity counts from: T1, or T2 for `NoElapsed`.
    fn validity_start(self, t1: i64, t2: i64) -> i64;
    /// `extend::verdict`.
    fn extend_verdict(
        self,
        timing: &Timing,
        opts: &LockOptions,
        round: &Round,
        ttl: Duration,
        elapsed: Duration,
    ) -> Verdict;
}

impl HolderMutant for Mutant {
    fn decided(self, n: usize, answered: usize, ok: usize) -> bool {
        Round::decided(Decide::AtQuorum, n, answered, self.votes(ok))
    }

    fn drift(self, timing: &Timing, ttl: Duration) -> Duration {
        if self == Mutant::NoDrift {
            Duration::ZERO
        } else {
            timing.drift(ttl)
        }
    }

    fn validity_start(self, t1: i64, t2: i64) -> i64 {
        if self == Mutant::NoElapsed { t2 } else { t1 }
    }

    fn extend_verdict(
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
        let mut timing = timing.clone();
        if self == Mutant::NoDrift {
            timing.drift_factor = 0.0;
            timing.drift_constant = Duration::ZERO;
        }
        let round = self.phantom_vote(round).unwrap_or_else(|| round.clone());
        extend::verdict(&timing, opts, round, ttl, elapsed)
    }
}
