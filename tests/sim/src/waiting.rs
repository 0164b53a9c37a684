//! A call as a waiter (REDLOCK.md §9), driven as `core/src/acquire.rs` drives it: on the
//! machine's `Output::Listen` it subscribes to its keys' channels on every node, marks them
//! (registering for grants when [`Grants::eligible`]) and checks with `EXISTS` whether the
//! keys were released meanwhile; its place in the lines is proto's [`Line`], its registrations
//! proto's [`Grants`]. Notices arrive over each node's pub/sub link; one that names the call
//! marks the node as popped (and granted, for the current registration); enough notices wake
//! the call's next attempt; a quorum of grants between attempts wins it; grants short of a
//! quorum go back before an ordinary attempt; the call's end leaves the lines as
//! [`Grants::end`] and [`Line::leave`] say.
//!
//! As in the engine: a client's channels stay subscribed after its call ends (until a crash
//! drops the connection), a named notice for one of the client's earlier calls is late and
//! ignored, and the notices of a call that won are ignored.

use quorumlock_proto::command;
use quorumlock_proto::grants::{End, Grants, Step};
use quorumlock_proto::line::{Line, bit};
use quorumlock_proto::quorum::quorum;

use crate::client::{Call, Phase};
use crate::event::Tag;
use crate::node::{Cmd, Reply};
use crate::world::World;

/// What a call knows as a waiter.
#[derive(Debug)]
pub(crate) struct Waiting {
    /// Its id in the keys' lines, from its first wait on.
    id: Option<String>,
    line: Line,
    pub(crate) grants: Grants,
    /// The first wait's subscription, marks and `EXISTS`: the nodes that answered, how many
    /// found the keys vacant, and when it ends anyway (client µs).
    listen: Option<(u64, usize, u64)>,
    /// Whether the call listens (its subscription round ended with a node answering).
    live: bool,
    /// Since the last attempt: the nodes heard from, and those whose notice named the call.
    heard: u64,
    named: u64,
    /// The nodes whose releases popped the call from the line.
    popped: u64,
    /// The nodes that granted the current registration.
    granted: u64,
    /// Whether the call won: later notices are late.
    won: bool,
}

impl Waiting {
    /// A call that stands in no line yet.
    pub(crate) fn new(line: Line, grants: Grants) -> Self {
        Self {
            id: None,
            line,
            grants,
            listen: None,
            live: false,
            heard: 0,
            named: 0,
            popped: 0,
            granted: 0,
            won: false,
        }
    }

    /// When the subscription round ends anyway (client µs).
    pub(crate) fn deadline(&self) -> Option<u64> {
        self.listen.map(|(_, _, until)| until)
    }
}

fn all(n: usize) -> u64 {
    (0..n).fold(0, |set, i| set | bit(i))
}

impl World {
    fn notify(&self) -> bool {
        self.sc.notify
    }

    /// Sends `cmds` to every node of `nodes`, replies ignored.
    fn fire(&mut self, c: usize, nodes: u64, cmds: &[Cmd]) {
        for node in (0..self.nodes.len()).filter(|i| nodes & bit(*i) != 0) {
            for cmd in cmds {
                self.send(c, node, Tag::Line, cmd.clone());
            }
        }
    }

    /// Plain marks of `call`'s keys (first in line with `front`).
    fn marks(call: &Call, id: &str, front: bool) -> Vec<Cmd> {
        call.keys
            .iter()
            .map(|key| Cmd::Mark {
                key: key.clone(),
                id: id.to_owned(),
                ttl_ms: call.w.line.ttl_ms(),
                front,
                reg: None,
            })
            .collect()
    }

    /// A registering mark of `call`'s one key with a fresh value, sent from `now` on.
    fn register(&mut self, call: &mut Call, now: u64, front: bool) -> Option<Cmd> {
        let (Some(id), [key]) = (&call.w.id, &call.keys[..]) else {
            return None;
        };
        let ttl_ms = call.m.ttl_ms();
        let r = call.w.grants.register(now, &mut self.rng).ok()?;
        call.w.granted = 0;
        Some(Cmd::Mark {
            key: key.clone(),
            id: id.clone(),
            ttl_ms: call.w.line.ttl_ms(),
            front,
            reg: Some(format!("{ttl_ms}:{}:{}", r.number, r.value)),
        })
    }

    /// `Output::Listen`: the call's first wait.
    pub(crate) fn listen(&mut self, c: usize, call: &mut Call, now: u64) {
        if !self.notify() {
            return;
        }
        let id = format!("c{c}.{}", call.id);
        call.w.id = Some(id.clone());
        let bytes: Vec<Vec<u8>> = call.keys.iter().map(|k| k.clone().into_bytes()).collect();
        let marks = if Grants::eligible(&bytes, call.m.options(), false) {
            self.register(call, now, false).into_iter().collect()
        } else {
            Self::marks(call, &id, false)
        };
        call.w.line.join(now);
        let channels: Vec<String> = call
            .keys
            .iter()
            .flat_map(|k| [format!("{k}:released"), format!("{k}:released:c{c}")])
            .collect();
        for node in 0..self.nodes.len() {
            let subscribe = Cmd::Subscribe {
                channels: channels.clone(),
                client: c,
            };
            self.send(c, node, Tag::Line, subscribe);
            for m in &marks {
                self.send(c, node, Tag::Line, m.clone());
            }
            let exists = Cmd::Exists {
                keys: call.keys.clone(),
            };
            self.send(c, node, Tag::Listen { call: call.id }, exists);
        }
        // The engine waits for its subscriptions, then for the vacancy round: two bounded
        // waits.
        let timeout = u64::try_from(call.m.node_timeout().as_micros()).unwrap_or(u64::MAX);
        call.w.listen = Some((0, 0, now.saturating_add(timeout.saturating_mul(2))));
    }

    /// A node answered the vacancy check of call `id`.
    pub(crate) fn on_listen_reply(&mut self, c: usize, node: usize, id: u32, reply: &Reply) {
        let n = self.nodes.len();
        let Phase::Acquiring(call) = &mut self.clients[c].phase else {
            return;
        };
        let Some((answered, vacant, _)) = &mut call.w.listen else {
            return;
        };
        if call.id != id {
            return;
        }
        *answered |= bit(node);
        if *reply == Reply::Int(0) {
            *vacant += 1;
        }
        if *answered == all(n) {
            self.resume(c);
        }
    }

    /// Ends the subscription round once every node answered or its time is up: the call
    /// listens when a node answered, and attempts at once when a quorum found the keys vacant.
    pub(crate) fn listened(&mut self, call: &mut Call, now: u64) {
        let n = self.nodes.len();
        let Some((answered, vacant, until)) = call.w.listen else {
            return;
        };
        if answered != all(n) && now < until {
            return;
        }
        call.w.listen = None;
        call.w.live = answered != 0;
        if !call.w.live {
            // No subscription: the engine sends no marks, so nothing is registered.
            call.w.grants.forget();
        }
        if vacant >= quorum(n) {
            call.m.handle_vacant(now);
        }
    }

    /// A message published on `channel` by `node` reached client `c`.
    pub(crate) fn on_notice(&mut self, c: usize, node: usize, channel: &str, message: &str) {
        let Phase::Acquiring(call) = &mut self.clients[c].phase else {
            return;
        };
        let w = &mut call.w;
        if w.won || w.id.is_none() {
            return;
        }
        let b = bit(node);
        let named = format!(":released:c{c}");
        if let Some(key) = channel.strip_suffix(named.as_str()) {
            if !call.keys.iter().any(|k| k == key) {
                return;
            }
            let (id, grant) = command::read_notice(message.as_bytes());
            if Some(id) != w.id.as_deref().map(str::as_bytes) {
                return;
            }
            w.heard |= b;
            w.named |= b;
            w.popped |= b;
            if grant.is_some_and(|n| w.grants.counts(n)) {
                w.granted |= b;
            }
        } else if let Some(key) = channel.strip_suffix(":released")
            && call.keys.iter().any(|k| k == key)
        {
            w.heard |= b;
        } else {
            return;
        }
        self.note(|| format!("client {c} hears {message:?} from node {node}"));
        self.resume(c);
    }

    /// Before the machine's outputs: grants heard between attempts (a quorum wins; too
    /// little validity left, they go back and the call attempts at once), then a wake-up
    /// when enough nodes told a release.
    pub(crate) fn heard(&mut self, c: usize, call: &mut Call, now: u64) {
        let n = self.nodes.len();
        if !call.w.live {
            return;
        }
        match call.w.grants.check(&mut call.m, call.w.granted, n, now) {
            Step::Won => self.by_grants += 1,
            Step::Again => {
                self.note(|| format!("client {c} gives back grants with too little validity"));
                self.register_again(c, call, now);
                call.m.handle_vacant(now);
            }
            Step::Wait => {}
        }
        if call.m.wants_release_notice()
            && call.w.heard.count_ones() as usize >= quorum(n)
            && call.m.handle_released(now)
        {
            self.note(|| format!("client {c} woken by a release"));
        }
    }

    /// `Output::Attempt`: what was heard is answered by this attempt; grants short of a
    /// quorum go back first, and the call registers again first in line.
    pub(crate) fn attempt(&mut self, c: usize, call: &mut Call, now: u64) {
        let named = call.w.named != 0;
        call.w.heard = 0;
        call.w.named = 0;
        if call.w.grants.before_attempt(call.w.granted) {
            self.note(|| format!("client {c} gives back grants short of a quorum"));
            self.register_again(c, call, now);
        }
        call.w.line.attempt(now, call.w.live, named);
    }

    /// The marks an attempt's request to `node` carries first, when due.
    pub(crate) fn attempt_marks(&mut self, c: usize, call: &mut Call, node: usize, raise: bool) {
        if !call.w.line.sends_marks(node, raise) {
            return;
        }
        if let Some(id) = call.w.id.clone() {
            self.fire(c, bit(node), &Self::marks(call, &id, false));
        }
    }

    /// LEAVE with the registration's value on every node, then a new registration first in
    /// line on every node.
    fn register_again(&mut self, c: usize, call: &mut Call, now: u64) {
        let Some(value) = call.w.grants.give_back() else {
            return;
        };
        let n = self.nodes.len();
        self.leave_all(c, call, &value);
        if let Some(mark) = self.register(call, now, true) {
            self.fire(c, all(n), &[mark]);
            call.w.line.remark(all(n));
        }
    }

    fn leave_all(&mut self, c: usize, call: &Call, value: &str) {
        if let (Some(id), [key]) = (&call.w.id, &call.keys[..]) {
            let leave = Cmd::Leave {
                key: key.clone(),
                id: id.clone(),
                value: value.to_owned(),
            };
            self.fire(c, all(self.nodes.len()), &[leave]);
        }
    }

    /// After a woken attempt lost and its cleanup ended: first in line again where releases
    /// popped the call ([`Line::requeue`]).
    pub(crate) fn requeue(&mut self, c: usize, call: &mut Call, now: u64) {
        if !(call.w.line.woken() && call.cleaning.is_none() && call.m.wants_release_notice()) {
            return;
        }
        let r = call.w.line.requeue(now, call.w.popped);
        let Some(id) = call.w.id.clone() else {
            return;
        };
        self.fire(c, r.popped, &Self::marks(call, &id, r.front));
        self.fire(c, r.renew, &Self::marks(call, &id, false));
    }

    /// The call ends, won or not: out of the lines, its registration given back unless it
    /// won with it.
    pub(crate) fn leave_lines(&mut self, c: usize, call: &mut Call, won: bool) {
        call.w.won |= won;
        let end = call.w.grants.end();
        if let End::GiveBack(value) = &end {
            self.leave_all(c, call, value);
            call.w.line.leave(0);
            call.w.id = None;
            return;
        }
        let Some(id) = call.w.id.take() else {
            return;
        };
        let nodes = call.w.line.leave(call.w.popped);
        let cmds: Vec<Cmd> = match (end, &call.keys[..]) {
            (End::Won, [key]) => vec![Cmd::Leave {
                key: key.clone(),
                id,
                value: String::new(),
            }],
            _ => call
                .keys
                .iter()
                .map(|key| Cmd::Unmark {
                    key: key.clone(),
                    id: id.clone(),
                })
                .collect(),
        };
        self.fire(c, nodes, &cmds);
    }
}
