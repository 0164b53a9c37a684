//! The only reader of time in the engine: a monotonic clock that keeps counting while the
//! process is paused, and on Linux while the host is suspended (`CLOCK_BOOTTIME`, REDLOCK.md
//! §1.3). The wall clock is never used to measure elapsed time (REDLOCK.md §12 rule 1).

use std::ops::{Add, Sub};
use std::time::Duration;

/// An instant on quorumlock's monotonic clock, in nanoseconds since an unspecified origin
/// (boot on Linux). Comparable only with other `MonoTime`s from the same host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MonoTime(u64);

impl MonoTime {
    /// Reads the clock now.
    pub fn now() -> Self {
        Self(read_ns())
    }

    /// The instant `us` microseconds after the clock's origin (times of the protocol machine).
    pub(crate) fn from_micros(us: u64) -> Self {
        Self(us.saturating_mul(1_000))
    }

    /// Nanoseconds since the clock's origin.
    pub fn as_nanos(self) -> u64 {
        self.0
    }

    /// Microseconds since the clock's origin.
    pub fn as_micros(self) -> u64 {
        self.0 / 1_000
    }

    /// Time elapsed from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_since(self, earlier: MonoTime) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for MonoTime {
    type Output = MonoTime;
    fn add(self, d: Duration) -> MonoTime {
        MonoTime(
            self.0
                .saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
        )
    }
}

impl Sub<MonoTime> for MonoTime {
    type Output = Duration;
    fn sub(self, earlier: MonoTime) -> Duration {
        self.saturating_since(earlier)
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn read_ns() -> u64 {
    use nix::time::{ClockId, clock_gettime};
    // CLOCK_BOOTTIME cannot fail on Linux >= 2.6.39; fall back to CLOCK_MONOTONIC anyway.
    let ts = clock_gettime(ClockId::CLOCK_BOOTTIME)
        .or_else(|_| clock_gettime(ClockId::CLOCK_MONOTONIC))
        .unwrap_or_else(|_| nix::sys::time::TimeSpec::new(0, 0));
    to_ns(ts.tv_sec(), ts.tv_nsec())
}

#[cfg(all(unix, not(any(target_os = "linux", target_os = "android"))))]
fn read_ns() -> u64 {
    use nix::time::{ClockId, clock_gettime};
    let ts = clock_gettime(ClockId::CLOCK_MONOTONIC)
        .unwrap_or_else(|_| nix::sys::time::TimeSpec::new(0, 0));
    to_ns(ts.tv_sec(), ts.tv_nsec())
}

fn to_ns(sec: i64, nsec: i64) -> u64 {
    u64::try_from(sec)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(nsec).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_monotonic_and_counts() {
        let a = MonoTime::now();
        std::thread::sleep(Duration::from_millis(5));
        let b = MonoTime::now();
        assert!(b > a);
        assert!(b - a >= Duration::from_millis(5));
        assert_eq!(a - b, Duration::ZERO);
        assert_eq!(
            (a + Duration::from_micros(3)).as_nanos(),
            a.as_nanos() + 3_000
        );
    }
}
