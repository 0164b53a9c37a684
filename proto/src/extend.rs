//! What an extend round means (REDLOCK.md §5.1): extended, lost for good, or failed this time.

use std::time::Duration;

use crate::config::{LockOptions, Timing};
use crate::error::{Error, ErrorKind, LostReason};
use crate::quorum::{self, Round};
use crate::report::{NodeKind, Report};

/// What an extend round means.
pub enum Verdict {
    /// A quorum extended, with this much validity left; the round's report.
    Extended(Duration, Report),
    /// The keys are gone or taken on too many nodes for a quorum ever to extend again.
    Lost(Error),
    /// Not this time (node errors, or too little validity); nothing changed.
    Failed(Error),
}

/// Judges an extend round that took `elapsed` (REDLOCK.md §5).
pub fn verdict(
    timing: &Timing,
    opts: &LockOptions,
    round: Round,
    ttl: Duration,
    elapsed: Duration,
) -> Verdict {
    let v = quorum::validity_us(ttl, elapsed, timing.drift(ttl));
    let min_v = i64::try_from(opts.effective_min_validity(ttl).as_micros()).unwrap_or(i64::MAX);
    let n = round.results.len();
    let q = quorum::quorum(n);
    let ok = round.count(NodeKind::Ok);
    let held = round.count(NodeKind::HeldByOther);
    let gone = round.count(NodeKind::NotHeld) + held;
    if ok >= q && v > 0 && v >= min_v {
        let left = Duration::from_micros(v.unsigned_abs());
        return Verdict::Extended(left, round.into_report());
    }
    if gone > n - q {
        let (reason, text) = if held > 0 {
            (LostReason::Taken, "another owner holds the lock now")
        } else {
            (
                LostReason::Expired,
                "the lock's keys are gone from a majority of nodes",
            )
        };
        return Verdict::Lost(Error::lost(reason, text, round.into_report()));
    }
    let kind = if ok >= q {
        ErrorKind::ValidityTooShort
    } else {
        ErrorKind::QuorumNotReached
    };
    Verdict::Failed(
        Error::new(
            kind,
            format!(
                "extend reached {ok} of {n} nodes ({q} needed); the previous deadline stays in force"
            ),
        )
        .with_validity_us(v)
        .with_report(round.into_report()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quorum::tests::round_of as round;
    use NodeKind::*;

    fn timing() -> Timing {
        Timing {
            drift_factor: 0.01,
            drift_constant: Duration::from_millis(2),
            max_ttl: Duration::from_secs(60),
            quarantine_period: Duration::from_secs(65),
        }
    }

    #[test]
    fn extend_verdicts() {
        let (t, o, ttl) = (timing(), LockOptions::default(), Duration::from_secs(10));
        let ms = Duration::from_millis;
        let judge = |kinds: &[NodeKind], elapsed| verdict(&t, &o, round(kinds), ttl, elapsed);
        assert!(
            matches!(judge(&[Ok, Ok, Timeout], ms(3)), Verdict::Extended(v, _) if v > ms(9_800))
        );
        let Verdict::Lost(e) = judge(&[Ok, NotHeld, NotHeld], ms(3)) else {
            panic!()
        };
        assert_eq!(e.lost_reason(), Some(LostReason::Expired));
        let Verdict::Lost(e) = judge(&[Ok, HeldByOther, NotHeld], ms(3)) else {
            panic!()
        };
        assert_eq!(e.lost_reason(), Some(LostReason::Taken));
        let Verdict::Failed(e) = judge(&[Ok, Timeout, Timeout], ms(3)) else {
            panic!()
        };
        assert_eq!(e.kind(), ErrorKind::QuorumNotReached);
        let Verdict::Failed(e) = judge(&[Ok, Ok, Ok], ms(9_950)) else {
            panic!()
        };
        assert_eq!(e.kind(), ErrorKind::ValidityTooShort);
    }
}
