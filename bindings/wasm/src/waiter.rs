//! A waiting acquire call's place in the lines of its keys (REDLOCK.md §9): each braced lock
//! key has a waiter flag `<key>:w` and a line `<key>:q` of waiter ids, and while the flag
//! exists a release wakes the first in line by name. The decisions of where and when it marks
//! and leaves are `quorumlock_proto::line::Line`'s, and those of its registrations for grants
//! (`<key>:g`) `quorumlock_proto::grants::Grants`'s; this writes them.

use std::rc::Rc;
use std::sync::Arc;

use quorumlock_proto::command::{self, Command, Failure, Notify, Reply};
use quorumlock_proto::grants::Registration;
use quorumlock_proto::line::bit;

use crate::engine::{Inner, Local, Traffic};

/// One acquire call as a waiter in the lines of its keys.
pub struct Waiter {
    inner: Rc<Inner>,
    keys: Arc<[Vec<u8>]>,
    /// The waiter's id ([`command::waiter_id`]).
    id: Vec<u8>,
    /// MARK at the back of each key's line (or in its place there).
    back: Vec<Command>,
    /// MARK first in each key's line.
    front: Vec<Command>,
    /// How long marks last (ms).
    ttl_ms: u64,
}

impl Waiter {
    /// A new waiter of `inner` on `keys` whose marks last `ttl_ms`; `None` when the client's
    /// releases wake no waiter in line (notification off, or keys without waiter flags).
    pub fn new(inner: &Rc<Inner>, keys: &Arc<[Vec<u8>]>, ttl_ms: u64) -> Option<Rc<Waiter>> {
        if inner.notify() != Notify::Waiters {
            return None;
        }
        let id = inner.waiter_id();
        let back = command::mark(keys, &id, ttl_ms, false);
        if back.is_empty() {
            return None;
        }
        Some(Rc::new(Waiter {
            inner: inner.clone(),
            keys: keys.clone(),
            front: command::mark(keys, &id, ttl_ms, true),
            back,
            id,
            ttl_ms,
        }))
    }

    /// The waiter's id.
    pub fn id(&self) -> &[u8] {
        &self.id
    }

    /// Writes the marks to the nodes of `nodes` (one bit per node, [`bit`]) now: at the back
    /// of each line (or in its place there), or first with `front`.
    pub fn mark(&self, nodes: u64, front: bool, traffic: Traffic) {
        let marks = if front { &self.front } else { &self.back };
        self.write(nodes, marks, traffic);
    }

    /// The call ends: writes UNMARK ([`command::unmark`]) to the nodes of `nodes` now, ahead
    /// of the caller's next request there.
    pub fn leave(&self, nodes: u64) {
        self.write(nodes, &command::unmark(&self.keys, &self.id), Traffic::Any);
    }

    /// The registering mark of `reg` for a lock of `ttl_ms` ([`command::mark_registered`]),
    /// first in line with `front`; `None` unless the call is for one braced key.
    pub fn registering(&self, reg: &Registration, ttl_ms: u64, front: bool) -> Option<Command> {
        let [key] = &self.keys[..] else {
            return None;
        };
        reg.mark(key, &self.id, self.ttl_ms, ttl_ms, front)
    }

    /// Writes `cmd` to the nodes of `nodes` now.
    pub fn send(&self, nodes: u64, cmd: Command) {
        self.write(nodes, &[cmd], Traffic::Any);
    }

    /// LEAVE ([`command::leave`]) on the nodes of `nodes` now: out of the line, the
    /// registration dropped; with `value` (not won with it), a key granted to it is deleted
    /// and handed on.
    pub fn leave_registered(&self, nodes: u64, value: Option<&str>) {
        if let [key] = &self.keys[..]
            && let Some(c) = command::leave(key, &self.id, value)
        {
            self.send(nodes, c);
        }
    }

    fn write(&self, nodes: u64, commands: &[Command], traffic: Traffic) {
        collect(
            (0..self.inner.n())
                .filter(|node| nodes & bit(*node) != 0)
                .flat_map(|node| {
                    commands
                        .iter()
                        .map(move |c| self.inner.request(node, c, traffic))
                })
                .collect(),
        );
    }
}

/// Collects the replies of requests already written, in the background: a mark's or
/// unmark's reply carries nothing (a refused one only costs a notice), and a node that
/// never answers must not hold up the call.
fn collect(replies: Vec<Local<Result<Reply, Failure>>>) {
    if !replies.is_empty() {
        wasm_bindgen_futures::spawn_local(async move {
            futures_util::future::join_all(replies).await;
        });
    }
}
