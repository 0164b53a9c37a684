//! A held lock's deadline and its extensions (REDLOCK.md §5): the checks before an extend
//! round (caps, the local deadline, the round's bound), the new deadline after it, and the
//! auto-extension's schedule (§5.2). Times are the driver's monotonic microseconds.
//!
//! A driver keeps one [`Hold`] per lock handle, next to its own phase (held, lost,
//! released). To extend, it calls [`Hold::start_extend`], sends
//! [`crate::command::extend`] with [`ExtendRound::ttl_ms`] to every node with a
//! [`crate::round::Tally`] bounded by [`ExtendRound::timeout`] (`Decide::AtQuorum`), and
//! hands the round to [`Hold::finish_extend`]. An error of kind `Lost` from either call, or
//! [`ExtendOutcome::Lost`], means the lock is lost for good: the driver enters its lost
//! phase (once), tells the holder and releases the keys in the background.

use std::time::Duration;

use crate::config::{LockOptions, Timing};
use crate::error::{Error, ErrorKind, LostReason, Result};
use crate::extend::{Verdict, verdict};
use crate::quorum::Round;
use crate::report::Report;
use crate::value;

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// The deadline of a held lock and the count of its extensions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    acquired_at_us: u64,
    valid_until_us: u64,
    renewed_at_us: u64,
    extensions: u32,
    capped: bool,
    max_extensions: Option<u32>,
    max_hold_us: Option<u64>,
}

/// An extend round the checks allowed: what to send and how long to wait.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtendRound {
    t1_us: u64,
    ttl: Duration,
    ttl_ms: u64,
    timeout: Duration,
}

impl ExtendRound {
    /// When the round started (T1).
    pub fn t1_us(&self) -> u64 {
        self.t1_us
    }
    /// The TTL to send, in milliseconds.
    pub fn ttl_ms(&self) -> u64 {
        self.ttl_ms
    }
    /// The bound of the round: `min(node_timeout, valid_until - T1)`, so a reply that comes
    /// after the old deadline never counts.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// What an extend round did to the lock.
#[derive(Debug)]
pub enum ExtendOutcome {
    /// A quorum extended: the new deadline is in force; the round's report.
    Extended(Report),
    /// The lock is lost for good (keys gone or taken, or the deadline passed during the round).
    Lost(Error),
    /// Not this time; the previous deadline stays in force.
    Failed(Error),
}

/// What the auto-extension does after a failed extend (REDLOCK.md §5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterFailure {
    /// Stop: the lock is lost or can no longer be extended by this handle.
    Stop,
    /// A cap was reached: wait for the deadline, then the lock is lost (`ExtensionLimit`).
    WaitOut,
    /// A transient failure: retry soon, never past the deadline.
    Retry,
}

impl AfterFailure {
    /// The auto-extension's reaction to `error` from an extend.
    pub fn of(error: &Error) -> Self {
        match error.kind() {
            ErrorKind::Lost | ErrorKind::InvalidArgument => Self::Stop,
            ErrorKind::ExtensionLimit => Self::WaitOut,
            _ => Self::Retry,
        }
    }
}

impl Hold {
    /// A lock granted with `opts`: its acquisition started at `t1_us` and was decided at
    /// `acquired_at_us`, and it is valid until `valid_until_us`.
    pub fn new(opts: &LockOptions, t1_us: u64, acquired_at_us: u64, valid_until_us: u64) -> Self {
        Self {
            acquired_at_us,
            valid_until_us,
            renewed_at_us: t1_us,
            extensions: 0,
            capped: false,
            max_extensions: opts.get_max_extensions(),
            max_hold_us: opts.get_max_hold().map(micros),
        }
    }

    /// When the acquisition was decided (T2).
    pub fn acquired_at_us(&self) -> u64 {
        self.acquired_at_us
    }
    /// The instant until which the holder may act.
    pub fn valid_until_us(&self) -> u64 {
        self.valid_until_us
    }
    /// T1 of the acquisition or of the last successful extend.
    pub fn renewed_at_us(&self) -> u64 {
        self.renewed_at_us
    }
    /// Successful extensions so far.
    pub fn extensions(&self) -> u32 {
        self.extensions
    }
    /// An extension cap was reached.
    pub fn capped(&self) -> bool {
        self.capped
    }
    /// Validity left at `now_us` (zero once the deadline passed).
    pub fn remaining(&self, now_us: u64) -> Duration {
        Duration::from_micros(self.valid_until_us.saturating_sub(now_us))
    }
    /// Whether the deadline has passed at `now_us`.
    pub fn is_expired(&self, now_us: u64) -> bool {
        now_us >= self.valid_until_us
    }

    /// The loss when the deadline passed: `ExtensionLimit` if a cap stopped the extensions,
    /// else `Expired`.
    pub fn expired_error(&self, report: Report) -> Error {
        if self.capped {
            Error::lost(
                LostReason::ExtensionLimit,
                "the extensions reached their cap and the validity ran out",
                report,
            )
        } else {
            Error::lost(
                LostReason::Expired,
                "the lock's validity ran out before it was extended",
                report,
            )
        }
    }

    fn cap_reached(&mut self, what: &str) -> Error {
        self.capped = true;
        Error::new(
            ErrorKind::ExtensionLimit,
            format!("{what}; the lock stays valid until its deadline"),
        )
    }

    /// The checks before extending to `ttl` at `now_us` (T1): the TTL, `max_extensions`,
    /// the local deadline (an expired lock is never revived) and `max_hold`.
    ///
    /// # Errors
    /// `InvalidArgument` (bad TTL), `ExtensionLimit` (a cap; the lock stays valid until its
    /// deadline) or `Lost` (the deadline passed: the driver marks the lock lost).
    pub fn start_extend(
        &mut self,
        timing: &Timing,
        opts: &LockOptions,
        ttl: Duration,
        now_us: u64,
    ) -> Result<ExtendRound> {
        let ttl_ms = timing.check(opts, ttl)?;
        if self.max_extensions.is_some_and(|m| self.extensions >= m) {
            return Err(self.cap_reached("max_extensions reached"));
        }
        if now_us >= self.valid_until_us {
            return Err(self.expired_error(Report::default()));
        }
        if self.max_hold_us.is_some_and(|m| {
            now_us.saturating_add(micros(ttl)) > self.acquired_at_us.saturating_add(m)
        }) {
            return Err(self.cap_reached("max_hold would be exceeded"));
        }
        let left = Duration::from_micros(self.valid_until_us - now_us);
        Ok(ExtendRound {
            t1_us: now_us,
            ttl,
            ttl_ms,
            timeout: opts.effective_node_timeout(ttl).min(left),
        })
    }

    /// Applies an extend round decided at `now_us` (T2): a reply after the old deadline
    /// never revives the lock; otherwise the verdict of [`crate::extend::verdict`], and on
    /// success the deadline becomes `max(old, T1 + ttl - drift)`.
    pub fn finish_extend(
        &mut self,
        timing: &Timing,
        opts: &LockOptions,
        extend: ExtendRound,
        round: Round,
        now_us: u64,
    ) -> ExtendOutcome {
        if now_us >= self.valid_until_us {
            return ExtendOutcome::Lost(self.expired_error(round.into_report()));
        }
        let elapsed = Duration::from_micros(now_us.saturating_sub(extend.t1_us));
        match verdict(timing, opts, round, extend.ttl, elapsed) {
            Verdict::Extended(_, report) => {
                let drift = timing.drift(extend.ttl);
                let until = extend
                    .t1_us
                    .saturating_add(micros(extend.ttl.saturating_sub(drift)));
                self.valid_until_us = self.valid_until_us.max(until);
                self.renewed_at_us = extend.t1_us;
                self.extensions += 1;
                ExtendOutcome::Extended(report)
            }
            Verdict::Lost(e) => ExtendOutcome::Lost(e),
            Verdict::Failed(e) => ExtendOutcome::Failed(e),
        }
    }

    /// When the auto-extension extends next, at `now_us`: `interval` after the last renewal,
    /// or after a failure (`retry`) within `min(interval / 4, 100 ms) + uniform(0, 20 ms)`
    /// (from `random`); never later than the deadline, so the loss is seen by then.
    pub fn next_extend_us(
        &self,
        interval: Duration,
        retry: bool,
        now_us: u64,
        random: [u8; 8],
    ) -> u64 {
        let next = if retry {
            let quick = (interval / 4).min(Duration::from_millis(100));
            now_us
                .saturating_add(micros(quick))
                .saturating_add(value::below(20_000, random))
        } else {
            self.renewed_at_us.saturating_add(micros(interval))
        };
        next.min(self.valid_until_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quorum::tests::round_of as round;
    use crate::report::NodeKind::*;

    fn timing() -> Timing {
        Timing {
            drift_factor: 0.01,
            drift_constant: Duration::from_millis(2),
            max_ttl: Duration::from_secs(60),
            quarantine_period: Duration::from_secs(65),
        }
    }

    const S: u64 = 1_000_000;

    #[test]
    fn extends_to_the_later_deadline_and_counts() {
        let (t, o) = (timing(), LockOptions::default());
        let mut h = Hold::new(&o, 0, 1_000, 9_898_000);
        let r = h.start_extend(&t, &o, Duration::from_secs(10), S).unwrap();
        assert_eq!(r.ttl_ms(), 10_000);
        assert_eq!(r.timeout(), Duration::from_millis(50));
        let ExtendOutcome::Extended(_) =
            h.finish_extend(&t, &o, r, round(&[Ok, Ok, Timeout]), S + 3_000)
        else {
            panic!()
        };
        assert_eq!(h.valid_until_us(), S + 10 * S - 102_000);
        assert_eq!((h.renewed_at_us(), h.extensions()), (S, 1));
        // A shorter TTL never moves the deadline back.
        let r = h
            .start_extend(&t, &o, Duration::from_secs(1), 2 * S)
            .unwrap();
        let before = h.valid_until_us();
        assert!(matches!(
            h.finish_extend(&t, &o, r, round(&[Ok, Ok, Ok]), 2 * S + 1),
            ExtendOutcome::Extended(_)
        ));
        assert_eq!(h.valid_until_us(), before);
    }

    #[test]
    fn the_round_is_bounded_by_the_deadline_and_a_late_reply_never_revives() {
        let (t, o) = (timing(), LockOptions::default());
        let mut h = Hold::new(&o, 0, 0, S);
        let r = h
            .start_extend(&t, &o, Duration::from_secs(10), S - 10_000)
            .unwrap();
        assert_eq!(r.timeout(), Duration::from_millis(10));
        let ExtendOutcome::Lost(e) = h.finish_extend(&t, &o, r, round(&[Ok, Ok, Ok]), S) else {
            panic!()
        };
        assert_eq!(e.lost_reason(), Some(LostReason::Expired));
        let e = h
            .start_extend(&t, &o, Duration::from_secs(10), S)
            .unwrap_err();
        assert!(e.is_lost(), "nothing is sent after the deadline");
        let e = h.start_extend(&t, &o, Duration::ZERO, 0).unwrap_err();
        assert!(e.is_invalid_argument());
    }

    #[test]
    fn caps_refuse_and_turn_the_loss_into_extension_limit() {
        let t = timing();
        let o = LockOptions::default().max_extensions(1);
        let mut h = Hold::new(&o, 0, 0, 9 * S);
        let r = h.start_extend(&t, &o, Duration::from_secs(10), 0).unwrap();
        let _ = h.finish_extend(&t, &o, r, round(&[Ok, Ok, Ok]), 1);
        let e = h
            .start_extend(&t, &o, Duration::from_secs(10), 2)
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ExtensionLimit);
        assert_eq!(AfterFailure::of(&e), AfterFailure::WaitOut);
        assert!(h.capped());
        assert_eq!(
            h.expired_error(Report::default()).lost_reason(),
            Some(LostReason::ExtensionLimit)
        );
        let o = LockOptions::default().max_hold(Duration::from_secs(15));
        let mut h = Hold::new(&o, 0, 0, 9 * S);
        assert!(
            h.start_extend(&t, &o, Duration::from_secs(10), 5 * S)
                .is_ok()
        );
        let e = h
            .start_extend(&t, &o, Duration::from_secs(10), 5 * S + 1)
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ExtensionLimit);
    }

    #[test]
    fn failures_keep_the_deadline_and_the_schedule_never_passes_it() {
        let (t, o) = (timing(), LockOptions::default());
        let mut h = Hold::new(&o, 0, 0, 9 * S);
        let r = h.start_extend(&t, &o, Duration::from_secs(10), S).unwrap();
        let ExtendOutcome::Failed(e) =
            h.finish_extend(&t, &o, r, round(&[Ok, Timeout, Timeout]), S + 1)
        else {
            panic!()
        };
        assert_eq!(AfterFailure::of(&e), AfterFailure::Retry);
        assert_eq!(h.valid_until_us(), 9 * S);
        let r = h.start_extend(&t, &o, Duration::from_secs(10), S).unwrap();
        let ExtendOutcome::Lost(e) =
            h.finish_extend(&t, &o, r, round(&[Ok, HeldByOther, NotHeld]), S + 1)
        else {
            panic!()
        };
        assert_eq!(AfterFailure::of(&e), AfterFailure::Stop);
        let third = Duration::from_secs(3);
        assert_eq!(h.next_extend_us(third, false, S, [0; 8]), 3 * S);
        assert_eq!(h.next_extend_us(third, true, S, [0; 8]), S + 100_000);
        assert!(h.next_extend_us(third, true, S, [7; 8]) < S + 120_000);
        assert_eq!(
            h.next_extend_us(Duration::from_secs(30), false, S, [0; 8]),
            9 * S
        );
    }
}
