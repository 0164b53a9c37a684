//! A waiting acquire call's place in the lines of its keys (REDLOCK.md §9): each braced lock
//! key has a waiter flag `<key>:w` and a line `<key>:q` of waiter ids, and while the flag
//! exists a release wakes the first in line by name. The waiter joins at its first wait and
//! renews its place while it waits, stands first again when an attempt that answered a
//! release naming it lost, and leaves every line when the call ends.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

use quorumlock_proto::command::{self, Command, Failure, Notify, Reply};

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
    /// Whether marks went out: the call then leaves the lines when it ends.
    marked: Cell<bool>,
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
            marked: Cell::new(false),
        }))
    }

    /// The waiter's id.
    pub fn id(&self) -> &[u8] {
        &self.id
    }

    /// Writes the marks to node `node` now: at the back of each line (or in its place
    /// there), or first with `front`.
    pub fn mark(&self, node: usize, front: bool, traffic: Traffic) {
        self.marked.set(true);
        let marks = if front { &self.front } else { &self.back };
        collect(
            marks
                .iter()
                .map(|m| self.inner.request(node, m, traffic))
                .collect(),
        );
    }

    /// Writes the marks to every node now (see [`Waiter::mark`]).
    pub fn mark_all(&self, front: bool) {
        for node in 0..self.inner.n() {
            self.mark(node, front, Traffic::Any);
        }
    }

    /// The call ends: when it marked, writes UNMARK ([`command::unmark`]) to every node now,
    /// ahead of the caller's next request there (a release that popped this waiter on a
    /// node left nothing to remove; the `ZREM` is harmless).
    pub fn leave(&self) {
        if !self.marked.replace(false) {
            return;
        }
        let unmark = command::unmark(&self.keys, &self.id);
        collect(
            (0..self.inner.n())
                .flat_map(|node| {
                    unmark
                        .iter()
                        .map(move |c| self.inner.request(node, c, Traffic::Any))
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
