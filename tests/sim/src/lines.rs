//! Waiters on a simulated node (REDLOCK.md §9): a lock key's waiter flag (`<key>:w`, a string
//! key), its line (`<key>:q`, a sorted set) and its registrations (`<key>:g`, a hash), MARK,
//! LEAVE and the WAKE of a release (`mark.lua`, `leave.lua`, `wake.lua`), re-implemented as
//! Redis runs them, and what they publish. The differential test runs the same commands on a
//! real `redis-server` and compares replies and published messages.

use std::collections::BTreeMap;

use crate::node::{EPOCH_US, Node, Reply};

/// A sorted set with an optional expiry (node µs): members by (score, member), as Redis
/// orders them.
#[derive(Clone, Debug, Default)]
pub struct Line {
    members: Vec<(i64, String)>,
    expires_at: Option<i64>,
}

impl Line {
    fn sort(&mut self) {
        self.members.sort();
    }

    /// `ZADD` (`nx`: only when absent).
    fn add(&mut self, score: i64, id: &str, nx: bool) {
        match self.members.iter_mut().find(|(_, m)| m == id) {
            Some(_) if nx => {}
            Some(entry) => entry.0 = score,
            None => self.members.push((score, id.to_owned())),
        }
        self.sort();
    }

    /// `ZREM`: whether it was there.
    pub(crate) fn remove(&mut self, id: &str) -> bool {
        let before = self.members.len();
        self.members.retain(|(_, m)| m != id);
        self.members.len() != before
    }

    /// The first (`front`) or last member with its score (`ZRANGE line i i WITHSCORES`).
    fn edge(&self, front: bool) -> Option<&(i64, String)> {
        if front {
            self.members.first()
        } else {
            self.members.last()
        }
    }

    /// The waiter ids, first in line first.
    pub fn ids(&self) -> Vec<&str> {
        self.members.iter().map(|(_, m)| m.as_str()).collect()
    }
}

/// A hash with an optional expiry (node µs).
#[derive(Clone, Debug, Default)]
pub struct Hash {
    fields: BTreeMap<String, String>,
    expires_at: Option<i64>,
}

/// A sorted set or hash, gone once expired or empty.
trait Expiring {
    fn gone(&self, now: i64) -> bool;
}

impl Expiring for Line {
    fn gone(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|x| now > x) || self.members.is_empty()
    }
}

impl Expiring for Hash {
    fn gone(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|x| now > x) || self.fields.is_empty()
    }
}

/// The live value at `k` in `map` (a gone one is removed, as Redis does on access).
fn live<'a, T: Expiring>(map: &'a mut BTreeMap<String, T>, k: &str, now: i64) -> Option<&'a mut T> {
    if map.get(k).is_some_and(|v| v.gone(now)) {
        map.remove(k);
    }
    map.get_mut(k)
}

fn flag(key: &str) -> String {
    format!("{key}:w")
}

fn line_key(key: &str) -> String {
    format!("{key}:q")
}

fn regs_key(key: &str) -> String {
    format!("{key}:g")
}

fn ms(x: u64) -> i64 {
    i64::try_from(x).unwrap_or(i64::MAX)
}

impl Node {
    /// The node's `TIME` in Unix ms, as the scripts read it.
    fn time_ms(&self) -> i64 {
        (EPOCH_US + self.now).div_euclid(1_000)
    }

    /// Whether `key`'s waiter flag exists (RELEASE mode "2" reads it with the key).
    pub(crate) fn flagged(&mut self, key: &str) -> bool {
        self.get(&flag(key)).is_some()
    }

    /// The live line of `key` (an expired or empty one is removed, as Redis does on access).
    pub(crate) fn line(&mut self, key: &str) -> Option<&mut Line> {
        live(&mut self.lines, &line_key(key), self.now)
    }

    /// The live registrations of `key`.
    fn regs(&mut self, key: &str) -> Option<&mut Hash> {
        live(&mut self.hashes, &regs_key(key), self.now)
    }

    /// The waiter ids in `key`'s line at true time `t`, first first.
    pub fn line_ids(&mut self, t: i64, key: &str) -> Vec<String> {
        self.now = self.clock.local(t);
        self.line(key)
            .map(|l| l.ids().into_iter().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    /// `mark.lua`.
    pub(crate) fn mark(
        &mut self,
        key: &str,
        id: &str,
        ttl_ms: u64,
        front: bool,
        reg: Option<&str>,
    ) -> Reply {
        let ttl = ms(ttl_ms);
        let edge = self.line(key).and_then(|l| l.edge(front).cloned());
        let mut left = self.pttl(&flag(key));
        let renew = left < ttl;
        if renew {
            left = 2 * ttl;
            self.set(&flag(key), "1", Some(ttl_ms.saturating_mul(2)));
        }
        if edge.as_ref().is_none_or(|(_, m)| m != id) {
            let line = self.lines.entry(line_key(key)).or_default();
            match (&edge, front) {
                (Some((score, _)), true) => line.add(score - 1, id, false),
                (None, true) => line.add(0, id, false),
                (Some((score, _)), false) => line.add(score + 1, id, true),
                (None, false) => line.add(0, id, true),
            }
        }
        let lasts = left.max(2 * ttl);
        if renew || edge.is_none() {
            let at = self.now + lasts * 1_000;
            if let Some(l) = self.lines.get_mut(&line_key(key)) {
                l.expires_at = Some(at);
            }
        }
        if let Some(reg) = reg {
            let at = self.time_ms();
            let now = self.now;
            // An expired hash is gone before the write.
            self.regs(key);
            let h = self.hashes.entry(regs_key(key)).or_default();
            h.fields.insert(id.to_owned(), format!("{at}:{reg}"));
            h.expires_at = Some(now + lasts * 1_000);
        }
        Reply::Int(1)
    }

    /// `leave.lua`.
    pub(crate) fn leave(&mut self, key: &str, id: &str, value: &str) -> Reply {
        if let Some(l) = self.line(key) {
            l.remove(id);
        }
        if let Some(h) = self.regs(key) {
            h.fields.remove(id);
        }
        if !value.is_empty() && self.get(key) == Some(value) {
            self.del(key);
            self.wake(key);
            return Reply::Int(1);
        }
        Reply::Int(0)
    }

    /// `wake.lua` after `key` was deleted: pops the first waiter and names it on its client's
    /// channel, granting it the key when it registered and its registration is still live;
    /// with nobody in line, publishes the key on the plain channel.
    pub(crate) fn wake(&mut self, key: &str) {
        let first = self
            .line(key)
            .and_then(|l| (!l.members.is_empty()).then(|| l.members.remove(0).1));
        let Some(id) = first else {
            self.published
                .push((format!("{key}:released"), key.to_owned()));
            return;
        };
        let client = id
            .rsplit_once('.')
            .map_or(id.as_str(), |(c, _)| c)
            .to_owned();
        let mut message = id.clone();
        let reg = self.regs(key).and_then(|h| h.fields.remove(&id));
        if let Some(reg) = reg {
            let mut parts = reg.splitn(4, ':');
            let fields = (
                parts.next().and_then(|x| x.parse::<i64>().ok()),
                parts.next().and_then(|x| x.parse::<i64>().ok()),
                parts.next(),
                parts.next(),
            );
            if let (Some(at), Some(ttl), Some(n), Some(value)) = fields {
                let left = at + ttl - self.time_ms();
                if left > 0 && self.get(key).is_none() {
                    self.set(key, value, Some(u64::try_from(left).unwrap_or(0)));
                    message = format!("{id} g{n}");
                }
            }
        }
        self.published
            .push((format!("{key}:released:{client}"), message));
    }
}

#[cfg(test)]
mod tests {
    use crate::clock::Clock;
    use crate::node::{Cmd, Node, Reply};

    fn s(x: &str) -> String {
        x.to_owned()
    }

    /// `SET k value NX PX ttl_ms`.
    fn set(value: &str, ttl_ms: u64) -> Cmd {
        Cmd::SetNx {
            key: s("k"),
            value: s(value),
            ttl_ms,
        }
    }

    /// RELEASE-ONE of `k` in mode "2".
    fn release(value: &str) -> Cmd {
        Cmd::ReleaseOne {
            key: s("k"),
            value: s(value),
            notify: true,
        }
    }

    fn mark(id: &str, front: bool, reg: Option<&str>) -> Cmd {
        Cmd::Mark {
            key: s("k"),
            id: s(id),
            ttl_ms: 1_000,
            front,
            reg: reg.map(s),
        }
    }

    #[test]
    fn a_release_grants_the_first_registered_waiter_and_names_the_next() {
        let mut n = Node::new(Clock::new(0, 1.0), true);
        assert_eq!(n.exec(0, &set("holder", 10_000)), Reply::Ok);
        assert_eq!(
            n.exec(1, &mark("c0.1", false, Some("500:1:v1"))),
            Reply::Int(1)
        );
        assert_eq!(n.exec(2, &mark("c1.1", false, None)), Reply::Int(1));
        assert_eq!(n.exec(3, &mark("c2.1", true, None)), Reply::Int(1));
        assert_eq!(n.line_ids(4, "k"), ["c2.1", "c0.1", "c1.1"]);
        assert_eq!(
            n.exec(5, &mark("c2.1", true, None)),
            Reply::Int(1),
            "already first"
        );
        assert_eq!(n.exec(10, &release("holder")), Reply::Int(1));
        assert_eq!(n.published, [(s("k:released:c2"), s("c2.1"))]);
        assert_eq!(n.exec(20, &set("x", 100)), Reply::Ok);
        assert_eq!(n.exec(30, &release("x")), Reply::Int(1));
        assert_eq!(n.published, [(s("k:released:c0"), s("c0.1 g1"))]);
        assert_eq!(n.exec(31, &Cmd::Get { key: s("k") }), Reply::Bulk(s("v1")));
        // The grant lasts until the registration's time plus its ttl (500 ms).
        assert_eq!(n.exec(31, &Cmd::Pttl { key: s("k") }), Reply::Int(499));
        // LEAVE with the value hands the key on to the next in line.
        let leave = Cmd::Leave {
            key: s("k"),
            id: s("c0.1"),
            value: s("v1"),
        };
        assert_eq!(n.exec(40, &leave), Reply::Int(1));
        assert_eq!(n.published, [(s("k:released:c1"), s("c1.1"))]);
        assert_eq!(n.exec(41, &leave), Reply::Int(0));
        // Nobody in line: the plain channel.
        assert_eq!(n.exec(50, &set("y", 100)), Reply::Ok);
        assert_eq!(n.exec(60, &release("y")), Reply::Int(1));
        assert_eq!(n.published, [(s("k:released"), s("k"))]);
    }

    #[test]
    fn an_expired_registration_grants_nothing() {
        let mut n = Node::new(Clock::new(0, 1.0), true);
        n.exec(0, &set("h", 10_000));
        n.exec(0, &mark("c0.1", false, Some("100:1:v")));
        assert_eq!(n.exec(200_000, &release("h")), Reply::Int(1));
        assert_eq!(n.published, [(s("k:released:c0"), s("c0.1"))]);
        assert_eq!(n.exec(200_001, &Cmd::Get { key: s("k") }), Reply::Nil);
    }
}
