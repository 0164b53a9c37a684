//! Links between a client and a node: one TCP connection, so messages in each direction arrive
//! in order and never twice; each may be delayed (uniform within bounds, sometimes slow) or
//! lost (a lost request or reply is a timeout for the client), and a node may be partitioned
//! from every client for a window of time.

use crate::rng::Rng;

/// Delay and loss parameters of a link.
#[derive(Clone, Copy, Debug)]
pub struct LinkSpec {
    /// Shortest one-way delay (µs).
    pub min_us: i64,
    /// Longest ordinary one-way delay (µs).
    pub max_us: i64,
    /// Probability that a message is slow (delay up to `slow_us`).
    pub slow_p: f64,
    /// Longest slow delay (µs).
    pub slow_us: i64,
    /// Probability that a message is lost.
    pub loss: f64,
}

/// One connection: both directions keep FIFO order.
#[derive(Clone, Debug)]
pub struct Link {
    spec: LinkSpec,
    last: [i64; 3],
}

/// Direction of a message.
#[derive(Clone, Copy, Debug)]
pub enum Dir {
    /// Client to node.
    Request = 0,
    /// Node to client.
    Reply = 1,
    /// Node to client on the client's pub/sub connection (published messages).
    Notice = 2,
}

impl Link {
    /// A link with `spec`.
    pub fn new(spec: LinkSpec) -> Self {
        Self { spec, last: [0; 3] }
    }

    /// When a message sent at `now` in direction `dir` arrives, or `None` if it is lost.
    pub fn arrival(&mut self, rng: &mut Rng, now: i64, dir: Dir) -> Option<i64> {
        if rng.chance(self.spec.loss) {
            return None;
        }
        let delay = if rng.chance(self.spec.slow_p) {
            rng.range(self.spec.max_us, self.spec.slow_us)
        } else {
            rng.range(self.spec.min_us, self.spec.max_us)
        };
        let last = &mut self.last[dir as usize];
        let at = (now + delay).max(*last);
        *last = at;
        Some(at)
    }
}
