//! The global event queue: every message delivery, timer, crash, restart, clock jump and client
//! pause is an event at a true time in µs; ties break by insertion order, so a seed fixes the
//! whole schedule.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::node::{Cmd, Reply};

/// What a request belongs to; its reply carries the same tag back. (32-bit ids keep an event
/// small: the event queue moves events around on every push and pop.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    /// A vote (`SET NX`, ACQUIRE-MULTI or FENCED-ACQUIRE) of round `round` of the client's
    /// acquire call `call` (the machine's round ids restart with each call).
    Acquire {
        /// The client's call.
        call: u32,
        /// The machine's round.
        round: u32,
    },
    /// Fencing phase 2 (RAISE), round `round` of call `call`.
    Raise {
        /// The client's call.
        call: u32,
        /// The machine's round.
        round: u32,
    },
    /// The cleanup of a failed attempt of call `call` (RELEASE of its value).
    Clean {
        /// The client's call.
        call: u32,
    },
    /// The holder's extend round `round`.
    Extend {
        /// The client's extend round.
        round: u32,
    },
    /// The holder's release: nobody waits for the reply.
    Release,
    /// A waiter's vacancy check (`EXISTS`, after its subscription and first marks) in call
    /// `call`.
    Listen {
        /// The client's call.
        call: u32,
    },
    /// A waiter's marks, unmarks, leaves and subscriptions: nobody waits for the reply.
    Line,
}

/// What happens at an instant.
#[derive(Clone, Debug)]
pub enum Event {
    /// A request from `client` reaches `node`.
    ToNode {
        /// Target node.
        node: usize,
        /// Sender.
        client: usize,
        /// What the request belongs to.
        tag: Tag,
        /// The command.
        cmd: Cmd,
    },
    /// A reply from `node` reaches `client`.
    ToClient {
        /// Target client.
        client: usize,
        /// Replying node.
        node: usize,
        /// The request's tag.
        tag: Tag,
        /// The reply.
        reply: Reply,
    },
    /// A message `node` published on `channel` reaches `client`, subscribed to it (over its
    /// pub/sub connection, a link direction of its own).
    Notice {
        /// Target client.
        client: usize,
        /// Publishing node.
        node: usize,
        /// The channel.
        channel: String,
        /// The message.
        message: String,
    },
    /// A client timer; stale when `epoch` is not the client's current one.
    Timer {
        /// The client.
        client: usize,
        /// Timer epoch.
        epoch: u64,
    },
    /// The node stops (requests to it are lost).
    Crash {
        /// The node.
        node: usize,
    },
    /// The node comes back (with its data if persistent).
    Restart {
        /// The node.
        node: usize,
    },
    /// The node's clock jumps by `delta` µs.
    Jump {
        /// The node.
        node: usize,
        /// Signed jump.
        delta: i64,
    },
    /// The client process stalls for `dur` µs (a GC pause, a stopped VM).
    Pause {
        /// The client.
        client: usize,
        /// Length of the stall.
        dur: i64,
    },
}

struct Entry {
    at: i64,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: the heap pops the earliest event, first inserted first.
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// Events ordered by true time, then by insertion.
#[derive(Default)]
pub struct Queue {
    heap: BinaryHeap<Entry>,
    seq: u64,
    now: i64,
}

impl Queue {
    /// The current true time in µs.
    pub fn now(&self) -> i64 {
        self.now
    }

    /// Schedules `event` at `at` (never in the past).
    pub fn push(&mut self, at: i64, event: Event) {
        self.seq += 1;
        self.heap.push(Entry {
            at: at.max(self.now),
            seq: self.seq,
            event,
        });
    }

    /// The next event; advances the time to it.
    pub fn pop(&mut self) -> Option<Event> {
        let e = self.heap.pop()?;
        self.now = e.at;
        Some(e.event)
    }
}
