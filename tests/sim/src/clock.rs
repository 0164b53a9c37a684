//! Simulated clocks. True time is the event queue's microsecond counter; every node and client
//! reads its own clock, which runs at `rate` true microseconds per microsecond and may jump.

/// A piecewise linear clock: `local(t) = base_local + (t - base_true) * rate`.
#[derive(Clone, Debug)]
pub struct Clock {
    base_true: i64,
    base_local: i64,
    rate: f64,
}

impl Clock {
    /// A clock that reads `offset` at true time 0 and runs at `rate`.
    pub fn new(offset: i64, rate: f64) -> Self {
        Self {
            base_true: 0,
            base_local: offset,
            rate,
        }
    }

    /// The clock's reading at true time `t`.
    pub fn local(&self, t: i64) -> i64 {
        self.base_local + ((t - self.base_true) as f64 * self.rate) as i64
    }

    /// The first true time (not before the last jump) at which the clock reads `local` or
    /// more.
    pub fn true_at(&self, local: i64) -> i64 {
        if local <= self.base_local {
            return self.base_true;
        }
        let mut t = self.base_true + ((local - self.base_local) as f64 / self.rate).ceil() as i64;
        while self.local(t) < local {
            t += 1;
        }
        while t > self.base_true && self.local(t - 1) >= local {
            t -= 1;
        }
        t
    }

    /// Jumps the clock by `delta` µs (forward when positive) at true time `now`.
    pub fn jump(&mut self, now: i64, delta: i64) {
        self.base_local = self.local(now) + delta;
        self.base_true = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn true_at_inverts_local() {
        let mut c = Clock::new(1_000, 1.007);
        for x in [1_000, 1_001, 5_000, 123_456_789] {
            let t = c.true_at(x);
            assert!(c.local(t) >= x && (t == 0 || c.local(t - 1) < x));
        }
        c.jump(10_000, 500_000);
        assert!(c.local(10_000) > 500_000);
        assert_eq!(c.true_at(0), 10_000);
    }
}
