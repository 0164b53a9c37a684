//! A simulated Redis node: exactly the commands the protocol sends (`SET NX PX` and the Lua
//! scripts of `proto/src/lua/`, re-implemented in Rust), with key expiry on the node's own
//! clock, and crash/restart with or without persistence. Waiters' flags, lines and
//! registrations, and what releases publish, are in [`crate::lines`].

use std::collections::{BTreeMap, BTreeSet};

use crate::clock::Clock;
use crate::lines::{Hash, Line};

/// Unix time of the node clock's zero, in µs (FENCED-ACQUIRE's `TIME`).
pub const EPOCH_US: i64 = 1_700_000_000_000_000;

/// A command the clients send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cmd {
    /// `SET key value NX PX ttl_ms`.
    SetNx {
        /// Key.
        key: String,
        /// Value.
        value: String,
        /// TTL in ms.
        ttl_ms: u64,
    },
    /// `SET key value PX ttl_ms` on every key, unconditionally (the "extend re-creates keys"
    /// mutant; replies `OK`).
    SetAll {
        /// Keys.
        keys: Vec<String>,
        /// Value.
        value: String,
        /// TTL in ms.
        ttl_ms: u64,
    },
    /// ACQUIRE-MULTI (`acquire_multi.lua`).
    AcquireMulti {
        /// Lock keys.
        keys: Vec<String>,
        /// Value.
        value: String,
        /// TTL in ms.
        ttl_ms: u64,
    },
    /// FENCED-ACQUIRE (`fenced_acquire.lua`): lock keys, then counter keys.
    FencedAcquire {
        /// Lock keys followed by their counter keys.
        keys: Vec<String>,
        /// Value.
        value: String,
        /// TTL in ms.
        ttl_ms: u64,
        /// Counter TTL in ms, 0 for none.
        counter_ttl_ms: u64,
    },
    /// RAISE (`raise.lua`).
    Raise {
        /// Lock keys followed by their counter keys.
        keys: Vec<String>,
        /// Value.
        value: String,
        /// One token per resource.
        tokens: Vec<u64>,
        /// Counter TTL in ms, 0 for none.
        counter_ttl_ms: u64,
    },
    /// EXTEND (`extend.lua`).
    Extend {
        /// Lock keys.
        keys: Vec<String>,
        /// Value.
        value: String,
        /// New TTL in ms.
        ttl_ms: u64,
    },
    /// EXTEND-BATCH (`extend_batch.lua`): EXTEND for each lock, one answer per lock.
    ExtendBatch {
        /// Per lock: its keys, its value and its new TTL in ms.
        locks: Vec<(Vec<String>, String, u64)>,
    },
    /// RELEASE (`release.lua`): notification mode "2" (waiters' lines) with `notify`, else
    /// "0".
    Release {
        /// Lock keys.
        keys: Vec<String>,
        /// Value.
        value: String,
        /// Tell the first waiter in each deleted key's line (mode "2").
        notify: bool,
    },
    /// RELEASE-ONE (`release_one.lua`), mode "2" with `notify`, else "0".
    ReleaseOne {
        /// Lock key.
        key: String,
        /// Value.
        value: String,
        /// Tell the first waiter in the key's line (mode "2").
        notify: bool,
    },
    /// MARK (`mark.lua`) of one key: waiter `id` marks the key's flag and stands in its line;
    /// with `reg` (`<lock ttl ms>:<n>:<value>`) it registers for grants.
    Mark {
        /// Lock key.
        key: String,
        /// Waiter id (`<client>.<n>`).
        id: String,
        /// Flag and line ttl in ms.
        ttl_ms: u64,
        /// First in line.
        front: bool,
        /// The registration, if any.
        reg: Option<String>,
    },
    /// UNMARK: `ZREM <key>:q id`.
    Unmark {
        /// Lock key.
        key: String,
        /// Waiter id.
        id: String,
    },
    /// LEAVE (`leave.lua`): out of the line, registration dropped; with a non-empty `value`,
    /// a key holding it is deleted and handed on.
    Leave {
        /// Lock key.
        key: String,
        /// Waiter id.
        id: String,
        /// The registered value, or "".
        value: String,
    },
    /// `EXISTS keys...` (a waiter's vacancy check).
    Exists {
        /// Lock keys.
        keys: Vec<String>,
    },
    /// `SUBSCRIBE channels...` on the client's pub/sub connection: the node publishes to it
    /// until the connection drops (a crash). Replies `OK`.
    Subscribe {
        /// Channels.
        channels: Vec<String>,
        /// The subscribing client (the connection).
        client: usize,
    },
    /// `GET key`.
    Get {
        /// Key.
        key: String,
    },
    /// `PTTL key`.
    Pttl {
        /// Key.
        key: String,
    },
}

/// A reply, in RESP terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`.
    Ok,
    /// Nil bulk string.
    Nil,
    /// An integer.
    Int(i64),
    /// A bulk string.
    Bulk(String),
    /// An array of integers.
    Ints(Vec<i64>),
}

#[derive(Clone, Debug)]
struct Entry {
    value: String,
    /// Expiry on the node's clock (µs), if any.
    expires_at: Option<i64>,
}

/// One simulated Redis server.
#[derive(Clone, Debug)]
pub struct Node {
    /// The node's clock (expiry and `TIME`).
    pub clock: Clock,
    /// Whether it answers.
    pub up: bool,
    /// Whether data survives a restart (`appendonly yes`, `appendfsync always`).
    pub persistent: bool,
    data: BTreeMap<String, Entry>,
    /// Sorted sets (waiters' lines), by key.
    pub(crate) lines: BTreeMap<String, Line>,
    /// Hashes (waiters' registrations), by key.
    pub(crate) hashes: BTreeMap<String, Hash>,
    /// Subscriptions: (channel, client).
    pub(crate) subs: BTreeSet<(String, usize)>,
    /// What the last command published: (channel, message).
    pub(crate) published: Vec<(String, String)>,
    /// The clock reading of the command being run (one instant per command, as in Redis).
    pub(crate) now: i64,
}

impl Node {
    /// A node with `clock`.
    pub fn new(clock: Clock, persistent: bool) -> Self {
        Self {
            clock,
            up: true,
            persistent,
            data: BTreeMap::new(),
            lines: BTreeMap::new(),
            hashes: BTreeMap::new(),
            subs: BTreeSet::new(),
            published: Vec::new(),
            now: 0,
        }
    }

    /// Crashes the node.
    pub fn crash(&mut self) {
        self.up = false;
        self.subs.clear();
    }

    /// Restarts it: without persistence, every key is gone.
    pub fn restart(&mut self) {
        self.up = true;
        if !self.persistent {
            self.data.clear();
            self.lines.clear();
            self.hashes.clear();
        }
    }

    /// Runs `cmd` at true time `t` (atomically, as Redis runs a command or a script).
    pub fn exec(&mut self, t: i64, cmd: &Cmd) -> Reply {
        self.now = self.clock.local(t);
        self.published.clear();
        match cmd {
            Cmd::SetNx { key, value, ttl_ms } => {
                if self.get(key).is_some() {
                    Reply::Nil
                } else {
                    self.set(key, value, Some(*ttl_ms));
                    Reply::Ok
                }
            }
            Cmd::SetAll {
                keys,
                value,
                ttl_ms,
            } => {
                for k in keys {
                    self.set(k, value, Some(*ttl_ms));
                }
                Reply::Ok
            }
            Cmd::AcquireMulti {
                keys,
                value,
                ttl_ms,
            } => {
                if keys.iter().any(|k| self.get(k).is_some()) {
                    return Reply::Int(0);
                }
                for k in keys {
                    self.set(k, value, Some(*ttl_ms));
                }
                Reply::Int(1)
            }
            Cmd::FencedAcquire {
                keys,
                value,
                ttl_ms,
                counter_ttl_ms,
            } => self.fenced_acquire(keys, value, *ttl_ms, *counter_ttl_ms),
            Cmd::Raise {
                keys,
                value,
                tokens,
                counter_ttl_ms,
            } => self.raise(keys, value, tokens, *counter_ttl_ms),
            Cmd::Extend {
                keys,
                value,
                ttl_ms,
            } => self.extend(keys, value, *ttl_ms),
            Cmd::ExtendBatch { locks } => Reply::Ints(
                locks
                    .iter()
                    .map(
                        |(keys, value, ttl_ms)| match self.extend(keys, value, *ttl_ms) {
                            Reply::Int(r) => r,
                            _ => 2,
                        },
                    )
                    .collect(),
            ),
            Cmd::Release {
                keys,
                value,
                notify,
            } => {
                // Every key (and flag) is read before any is deleted.
                let read: Vec<(Option<String>, bool)> = keys
                    .iter()
                    .map(|k| (self.get(k).map(str::to_owned), *notify && self.flagged(k)))
                    .collect();
                let (mut deleted, mut other) = (0, 0);
                for (k, (v, waited)) in keys.iter().zip(read) {
                    match v {
                        Some(v) if v == *value => {
                            self.data.remove(k);
                            deleted += 1;
                            if waited {
                                self.wake(k);
                            }
                        }
                        Some(_) => other += 1,
                        None => {}
                    }
                }
                Reply::Ints(vec![deleted, other])
            }
            Cmd::ReleaseOne { key, value, notify } => {
                let waited = *notify && self.flagged(key);
                match self.get(key) {
                    Some(v) if v == value => {
                        self.data.remove(key);
                        if waited {
                            self.wake(key);
                        }
                        Reply::Int(1)
                    }
                    Some(_) => Reply::Int(-1),
                    None => Reply::Int(0),
                }
            }
            Cmd::Mark {
                key,
                id,
                ttl_ms,
                front,
                reg,
            } => self.mark(key, id, *ttl_ms, *front, reg.as_deref()),
            Cmd::Unmark { key, id } => {
                let removed = self.line(key).is_some_and(|l| l.remove(id));
                Reply::Int(i64::from(removed))
            }
            Cmd::Leave { key, id, value } => self.leave(key, id, value),
            Cmd::Exists { keys } => {
                let n = keys.iter().filter(|k| self.get(k).is_some()).count();
                Reply::Int(i64::try_from(n).unwrap_or(i64::MAX))
            }
            Cmd::Subscribe { channels, client } => {
                for ch in channels {
                    self.subs.insert((ch.clone(), *client));
                }
                Reply::Ok
            }
            Cmd::Get { key } => self
                .get(key)
                .map_or(Reply::Nil, |v| Reply::Bulk(v.to_owned())),
            Cmd::Pttl { key } => Reply::Int(self.pttl(key)),
        }
    }

    /// The live value of `key` (expired keys are removed lazily, as Redis does on access).
    pub(crate) fn get(&mut self, key: &str) -> Option<&str> {
        let now = self.now;
        if self
            .data
            .get(key)
            .is_some_and(|e| e.expires_at.is_some_and(|x| now > x))
        {
            self.data.remove(key);
        }
        self.data.get(key).map(|e| e.value.as_str())
    }

    /// `DEL key`.
    pub(crate) fn del(&mut self, key: &str) {
        self.data.remove(key);
    }

    pub(crate) fn set(&mut self, key: &str, value: &str, ttl_ms: Option<u64>) {
        let expires_at = ttl_ms.map(|ms| self.now + i64::try_from(ms).unwrap_or(i64::MAX) * 1000);
        self.data.insert(
            key.to_owned(),
            Entry {
                value: value.to_owned(),
                expires_at,
            },
        );
    }

    /// `PTTL`: -2 absent, -1 no expiry, else the ms left.
    pub(crate) fn pttl(&mut self, key: &str) -> i64 {
        if self.get(key).is_none() {
            return -2;
        }
        match self.data.get(key).and_then(|e| e.expires_at) {
            None => -1,
            Some(x) => (x - self.now).max(0) / 1000,
        }
    }

    fn counter(&mut self, key: &str) -> u64 {
        self.get(key).and_then(|v| v.parse().ok()).unwrap_or(0)
    }

    fn fenced_acquire(&mut self, keys: &[String], value: &str, ttl: u64, cttl: u64) -> Reply {
        let n = keys.len() / 2;
        if keys[..n].iter().any(|k| self.get(k).is_some()) {
            return Reply::Int(0);
        }
        let seconds = u64::try_from((EPOCH_US + self.now) / 1_000_000).unwrap_or(0);
        let floor = seconds * 1_048_576;
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            self.set(&keys[i], value, Some(ttl));
            let new = (self.counter(&keys[n + i]) + 1).max(floor);
            self.set(&keys[n + i], &new.to_string(), (cttl != 0).then_some(cttl));
            out.push(i64::try_from(new).unwrap_or(i64::MAX));
        }
        Reply::Ints(out)
    }

    fn raise(&mut self, keys: &[String], value: &str, tokens: &[u64], cttl: u64) -> Reply {
        let n = keys.len() / 2;
        for k in &keys[..n] {
            if self.get(k) != Some(value) {
                return Reply::Int(0);
            }
        }
        for i in 0..n {
            let token = tokens.get(i).copied().unwrap_or(0);
            if self.counter(&keys[n + i]) < token {
                self.set(
                    &keys[n + i],
                    &token.to_string(),
                    (cttl != 0).then_some(cttl),
                );
            }
        }
        Reply::Int(1)
    }

    fn extend(&mut self, keys: &[String], value: &str, ttl_ms: u64) -> Reply {
        let mut absent = false;
        for k in keys {
            match self.get(k) {
                None => absent = true,
                Some(v) if v != value => return Reply::Int(-1),
                Some(_) => {}
            }
        }
        if absent {
            return Reply::Int(0);
        }
        let ttl = i64::try_from(ttl_ms).unwrap_or(i64::MAX);
        for k in keys {
            if self.pttl(k) < ttl {
                let at = self.now + ttl * 1000;
                if let Some(e) = self.data.get_mut(k) {
                    e.expires_at = Some(at);
                }
            }
        }
        Reply::Int(1)
    }

    /// What the last command published: (channel, message).
    pub fn published(&self) -> &[(String, String)] {
        &self.published
    }

    /// Lock keys (not counters or waiter flags) alive now at true time `t`, with their values.
    pub fn live_lock_keys(&mut self, t: i64) -> Vec<(String, String)> {
        self.now = self.clock.local(t);
        let keys: Vec<String> = self
            .data
            .keys()
            .filter(|k| !k.ends_with(":fence") && !k.ends_with(":w"))
            .cloned()
            .collect();
        keys.into_iter()
            .filter_map(|k| self.get(&k).map(|v| (k.clone(), v.to_owned())))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> String {
        x.to_owned()
    }

    #[test]
    fn set_nx_expiry_and_scripts() {
        let mut n = Node::new(Clock::new(0, 1.0), true);
        let set = |v: &str| Cmd::SetNx {
            key: s("k"),
            value: s(v),
            ttl_ms: 100,
        };
        assert_eq!(n.exec(0, &set("a")), Reply::Ok);
        assert_eq!(n.exec(50_000, &set("b")), Reply::Nil);
        assert_eq!(n.exec(100_000, &Cmd::Pttl { key: s("k") }), Reply::Int(0));
        assert_eq!(n.exec(100_001, &set("b")), Reply::Ok);
        let ext = |v: &str, ms| Cmd::Extend {
            keys: vec![s("k")],
            value: s(v),
            ttl_ms: ms,
        };
        assert_eq!(n.exec(100_002, &ext("a", 500)), Reply::Int(-1));
        assert_eq!(n.exec(100_002, &ext("b", 500)), Reply::Int(1));
        assert_eq!(n.exec(100_002, &Cmd::Pttl { key: s("k") }), Reply::Int(500));
        // Never shortens.
        assert_eq!(n.exec(100_002, &ext("b", 10)), Reply::Int(1));
        assert_eq!(n.exec(100_002, &Cmd::Pttl { key: s("k") }), Reply::Int(500));
        let rel = |v: &str| Cmd::ReleaseOne {
            key: s("k"),
            value: s(v),
            notify: false,
        };
        assert_eq!(n.exec(200_000, &rel("a")), Reply::Int(-1));
        assert_eq!(n.exec(200_000, &rel("b")), Reply::Int(1));
        assert_eq!(n.exec(200_000, &rel("b")), Reply::Int(0));
        assert_eq!(n.exec(200_000, &ext("b", 10)), Reply::Int(0));
    }

    #[test]
    fn fenced_counters_and_restart() {
        let mut n = Node::new(Clock::new(0, 1.0), false);
        let keys = vec![s("k"), s("k:fence")];
        let fa = |v: &str| Cmd::FencedAcquire {
            keys: keys.clone(),
            value: s(v),
            ttl_ms: 10,
            counter_ttl_ms: 0,
        };
        let Reply::Ints(t1) = n.exec(0, &fa("a")) else {
            panic!()
        };
        assert_eq!(n.exec(1, &fa("b")), Reply::Int(0));
        let Reply::Ints(t2) = n.exec(20_000, &fa("b")) else {
            panic!()
        };
        assert_eq!(t2[0], t1[0] + 1);
        let raise = Cmd::Raise {
            keys: keys.clone(),
            value: s("b"),
            tokens: vec![u64::try_from(t2[0]).unwrap() + 5],
            counter_ttl_ms: 0,
        };
        assert_eq!(n.exec(20_001, &raise), Reply::Int(1));
        assert_eq!(
            n.exec(20_001, &Cmd::Get { key: s("k:fence") }),
            Reply::Bulk((t2[0] + 5).to_string())
        );
        n.crash();
        n.restart();
        assert_eq!(n.exec(20_002, &Cmd::Get { key: s("k") }), Reply::Nil);
    }
}
