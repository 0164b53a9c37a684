//! Simulated clients driven by `quorumlock-proto`, sequenced as `core/src/acquire.rs` and
//! `core/src/lock.rs` do: fan out to every node, collect a `Round` until `Round::decided` or the
//! node timeout, fencing phase 2 when needed, the verdict on the validity measured on the
//! client's clock, cleanup per `cleanup_plan`, retries per `next_attempt`; the holder works,
//! optionally extends, and releases.

use std::time::Duration;

use quorumlock_proto::acquire::{AttemptVerdict, next_attempt};
use quorumlock_proto::extend::Verdict;
use quorumlock_proto::fencing;
use quorumlock_proto::quorum::Round;
use quorumlock_proto::report::{NodeKind, NodeResult};
use quorumlock_proto::value;

use crate::checker::Window;
use crate::clock::Clock;
use crate::node::{Cmd, Reply};
use crate::world::World;

const MS: i64 = 1_000;

/// One acquire call: its resources, when it started (client clock), attempts so far.
#[derive(Clone, Debug)]
pub(crate) struct Call {
    resources: Vec<usize>,
    start: i64,
    attempt: u32,
}

/// A round in progress: its replies.
#[derive(Clone, Debug)]
pub(crate) struct Tally {
    t1: i64,
    round: Round,
    answered: usize,
    ok: usize,
}

impl Tally {
    fn new(n: usize, t1: i64) -> Self {
        let results = (0..n)
            .map(|i| NodeResult::new(i, "", NodeKind::Pending, None, None))
            .collect();
        Self {
            t1,
            round: Round { results },
            answered: 0,
            ok: 0,
        }
    }

    /// Records `kind` for `node`; false when it already had an answer.
    fn record(&mut self, node: usize, kind: NodeKind) -> bool {
        let slot = &mut self.round.results[node];
        if slot.kind != NodeKind::Pending {
            return false;
        }
        slot.kind = kind;
        self.answered += 1;
        if kind == NodeKind::Ok {
            self.ok += 1;
        }
        true
    }

    /// Pending results become timeouts.
    fn time_out(&mut self) {
        for r in &mut self.round.results {
            if r.kind == NodeKind::Pending {
                r.kind = NodeKind::Timeout;
            }
        }
    }
}

/// Fencing phase 2 in progress.
#[derive(Clone, Debug)]
pub(crate) struct Raise {
    tokens: Vec<u64>,
    held: usize,
    waiting: Vec<usize>,
}

/// One attempt of a call.
#[derive(Clone, Debug)]
pub(crate) struct Attempt {
    call: Call,
    value: String,
    tally: Tally,
    counters: Vec<Option<Vec<u64>>>,
    raise: Option<Raise>,
}

/// A granted lock.
#[derive(Clone, Debug)]
pub(crate) struct Hold {
    resources: Vec<usize>,
    value: String,
    /// True time of the grant.
    acquired: i64,
    /// Client clock.
    valid_until: i64,
    release_at: i64,
    next_extend: i64,
    tokens: Option<Vec<u64>>,
    ext: Option<Tally>,
}

/// What a client is doing.
#[derive(Clone, Debug)]
pub(crate) enum Phase {
    Idle,
    Acquiring(Box<Attempt>),
    Raising(Box<Attempt>),
    Backoff(Call),
    Holding(Box<Hold>),
    Extending(Box<Hold>),
    Done,
}

/// A simulated client process.
#[derive(Debug)]
pub struct Client {
    pub(crate) clock: Clock,
    pub(crate) epoch: u64,
    pub(crate) paused_until: i64,
    pub(crate) phase: Phase,
    round: u64,
}

impl Client {
    pub(crate) fn new(_nodes: usize) -> Self {
        Self {
            clock: Clock::new(0, 1.0),
            epoch: 0,
            paused_until: 0,
            phase: Phase::Idle,
            round: 0,
        }
    }
}

fn key(r: usize) -> String {
    format!("ql:{{r{r}}}")
}

fn us(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

fn since(a: i64, b: i64) -> Duration {
    Duration::from_micros(u64::try_from(b - a).unwrap_or(0))
}

impl World {
    fn local(&self, c: usize) -> i64 {
        self.clients[c].clock.local(self.q.now())
    }

    fn timer_local(&mut self, c: usize, local: i64) {
        let at = self.clients[c].clock.true_at(local);
        self.set_timer_at(c, at);
    }

    fn new_round(&mut self, c: usize) -> u64 {
        self.clients[c].round += 1;
        self.clients[c].round
    }

    fn ttl(&self) -> Duration {
        self.opts.get_ttl()
    }

    fn node_timeout(&self) -> i64 {
        us(self.opts.effective_node_timeout(self.ttl()))
    }

    pub(crate) fn on_timer(&mut self, c: usize) {
        let phase = std::mem::replace(&mut self.clients[c].phase, Phase::Done);
        match phase {
            Phase::Idle => {
                if self.q.now() >= self.stop_at {
                    self.note(|| format!("client {c} done"));
                } else {
                    self.start_call(c);
                }
            }
            Phase::Acquiring(mut a) => {
                a.tally.time_out();
                self.finish_acquire(c, a);
            }
            Phase::Raising(mut a) => {
                if let Some(r) = &mut a.raise {
                    for w in r.waiting.drain(..) {
                        a.tally.round.results[w].kind = NodeKind::Timeout;
                    }
                }
                self.finish_raise(c, *a);
            }
            Phase::Backoff(call) => {
                if self.q.now() >= self.stop_at {
                    self.note(|| format!("client {c} gives up: the run is over"));
                } else {
                    self.start_attempt(c, call);
                }
            }
            Phase::Holding(h) => self.hold_tick(c, h),
            Phase::Extending(mut h) => {
                if let Some(t) = &mut h.ext {
                    t.time_out();
                }
                self.finish_extend(c, h);
            }
            Phase::Done => {}
        }
    }

    pub(crate) fn on_reply(&mut self, c: usize, node: usize, round: u64, reply: &Reply) {
        if round != self.clients[c].round {
            return;
        }
        let n = self.nodes.len();
        let mutant = self.mutant;
        match &mut self.clients[c].phase {
            Phase::Acquiring(a) => {
                let (kind, counters) = match reply {
                    Reply::Ok | Reply::Int(1) => (NodeKind::Ok, None),
                    Reply::Ints(t) => (
                        NodeKind::Ok,
                        Some(t.iter().map(|x| u64::try_from(*x).unwrap_or(0)).collect()),
                    ),
                    Reply::Nil | Reply::Int(0) => (NodeKind::HeldByOther, None),
                    _ => (NodeKind::Protocol, None),
                };
                if !a.tally.record(node, kind) {
                    return;
                }
                a.counters[node] = counters;
                if mutant.decided(n, a.tally.answered, a.tally.ok) {
                    let Phase::Acquiring(a) =
                        std::mem::replace(&mut self.clients[c].phase, Phase::Done)
                    else {
                        return;
                    };
                    self.finish_acquire(c, a);
                }
            }
            Phase::Raising(a) => {
                let Some(r) = &mut a.raise else { return };
                let Some(pos) = r.waiting.iter().position(|w| *w == node) else {
                    return;
                };
                r.waiting.remove(pos);
                if *reply == Reply::Int(1) {
                    r.held += 1;
                } else {
                    a.tally.round.results[node].kind = NodeKind::NotHeld;
                }
                if r.waiting.is_empty() {
                    let Phase::Raising(a) =
                        std::mem::replace(&mut self.clients[c].phase, Phase::Done)
                    else {
                        return;
                    };
                    self.finish_raise(c, *a);
                }
            }
            Phase::Extending(h) => {
                let Some(t) = &mut h.ext else { return };
                let kind = match reply {
                    Reply::Ok | Reply::Int(1) => NodeKind::Ok,
                    Reply::Int(0) => NodeKind::NotHeld,
                    Reply::Int(-1) => NodeKind::HeldByOther,
                    _ => NodeKind::Protocol,
                };
                if t.record(node, kind) && mutant.decided(n, t.answered, t.ok) {
                    let Phase::Extending(h) =
                        std::mem::replace(&mut self.clients[c].phase, Phase::Done)
                    else {
                        return;
                    };
                    self.finish_extend(c, h);
                }
            }
            _ => {}
        }
    }

    fn start_call(&mut self, c: usize) {
        let r = self.sc.resources;
        let mut resources: Vec<usize> = (0..r).filter(|_| self.rng.chance(0.5)).collect();
        if resources.is_empty() {
            resources.push(usize::try_from(self.rng.range(0, r as i64 - 1)).unwrap_or(0));
        }
        let call = Call {
            resources,
            start: self.local(c),
            attempt: 0,
        };
        self.start_attempt(c, call);
    }

    fn start_attempt(&mut self, c: usize, mut call: Call) {
        call.attempt += 1;
        let n = self.nodes.len();
        let value = value::from_random(&self.rng.bytes());
        let keys: Vec<String> = call.resources.iter().map(|r| key(*r)).collect();
        let ttl_ms = self.sc.ttl_ms;
        let cmd = if self.sc.fenced {
            let bytes: Vec<Vec<u8>> = keys.iter().map(|k| k.clone().into_bytes()).collect();
            let all = fencing::with_counters(&bytes)
                .into_iter()
                .map(|k| String::from_utf8_lossy(&k).into_owned())
                .collect();
            Cmd::FencedAcquire {
                keys: all,
                value: value.clone(),
                ttl_ms,
                counter_ttl_ms: 0,
            }
        } else if let [k] = keys.as_slice() {
            Cmd::SetNx {
                key: k.clone(),
                value: value.clone(),
                ttl_ms,
            }
        } else {
            Cmd::AcquireMulti {
                keys,
                value: value.clone(),
                ttl_ms,
            }
        };
        let t1 = self.local(c);
        let round = self.new_round(c);
        self.note(|| {
            format!(
                "client {c} attempt {} on {:?} value {}",
                call.attempt,
                call.resources,
                &value[..8]
            )
        });
        for node in 0..n {
            self.send(c, node, round, cmd.clone());
        }
        self.clients[c].phase = Phase::Acquiring(Box::new(Attempt {
            call,
            value,
            tally: Tally::new(n, t1),
            counters: vec![None; n],
            raise: None,
        }));
        let deadline = t1 + self.node_timeout();
        self.timer_local(c, deadline);
    }

    fn fence_keys(&self, resources: &[usize]) -> Vec<String> {
        let mut keys: Vec<String> = resources.iter().map(|r| key(*r)).collect();
        let counters: Vec<String> = keys.iter().map(|k| format!("{k}:fence")).collect();
        keys.extend(counters);
        keys
    }

    fn finish_acquire(&mut self, c: usize, mut a: Box<Attempt>) {
        let n = self.nodes.len();
        let mut tokens = None;
        if self.sc.fenced
            && self
                .mutant
                .quorum_reached(n, a.tally.round.count(NodeKind::Ok))
            && let Some(p) = fencing::phase1(&a.tally.round, &a.counters)
        {
            if self.mutant.settled(p.held, n) {
                tokens = Some(p.tokens);
            } else {
                let round = self.new_round(c);
                let keys = self.fence_keys(&a.call.resources);
                for &i in &p.lagging {
                    let cmd = Cmd::Raise {
                        keys: keys.clone(),
                        value: a.value.clone(),
                        tokens: p.tokens.clone(),
                        counter_ttl_ms: 0,
                    };
                    self.send(c, i, round, cmd);
                }
                self.note(|| format!("client {c} phase 2 on {:?}", p.lagging));
                a.raise = Some(Raise {
                    tokens: p.tokens,
                    held: p.held,
                    waiting: p.lagging,
                });
                self.clients[c].phase = Phase::Raising(a);
                let deadline = self.local(c) + self.node_timeout();
                self.timer_local(c, deadline);
                return;
            }
        }
        self.conclude(c, *a, tokens);
    }

    fn finish_raise(&mut self, c: usize, mut a: Attempt) {
        let n = self.nodes.len();
        let tokens = a
            .raise
            .take()
            .and_then(|r| self.mutant.quorum_reached(n, r.held).then_some(r.tokens));
        self.conclude(c, a, tokens);
    }

    fn conclude(&mut self, c: usize, a: Attempt, tokens: Option<Vec<u64>>) {
        let t2 = self.local(c);
        let ttl = self.ttl();
        let drift = self.mutant.drift(&self.timing, ttl);
        let v = self.mutant.validity_us(ttl, since(a.tally.t1, t2), drift);
        let min_v = us(self.opts.effective_min_validity(ttl));
        let fence_failed = self.sc.fenced && tokens.is_none();
        let verdict = self.mutant.verdict(&a.tally.round, v, min_v, fence_failed);
        self.note(|| format!("client {c} verdict {verdict:?} validity {v} µs"));
        match verdict {
            AttemptVerdict::Granted => {
                let start = self.mutant.validity_start(a.tally.t1, t2);
                let hold = self
                    .rng
                    .range(self.sc.hold_ms.0 * MS, self.sc.hold_ms.1 * MS);
                let interval = us(self.opts.effective_extend_interval(ttl));
                let h = Hold {
                    resources: a.call.resources,
                    value: a.value,
                    acquired: self.q.now(),
                    valid_until: start + us(ttl - drift),
                    release_at: t2 + hold,
                    next_extend: t2 + interval,
                    tokens,
                    ext: None,
                };
                self.hold_tick(c, Box::new(h));
            }
            AttemptVerdict::Failed(..) => {
                let keys: Vec<String> = a.call.resources.iter().map(|r| key(*r)).collect();
                for node in self.mutant.cleanup_plan(&a.tally.round) {
                    self.send_release(c, node, &keys, &a.value);
                }
                let elapsed = since(a.call.start, t2);
                let next = next_attempt(&self.opts, a.call.attempt, elapsed, self.rng.bytes());
                match next {
                    Some(d) if self.q.now() < self.stop_at => {
                        self.clients[c].phase = Phase::Backoff(a.call);
                        self.timer_local(c, t2 + us(d));
                    }
                    _ => self.go_idle(c),
                }
            }
        }
    }

    fn send_release(&mut self, c: usize, node: usize, keys: &[String], value: &str) {
        let cmd = match keys {
            [k] => Cmd::ReleaseOne {
                key: k.clone(),
                value: value.to_owned(),
            },
            _ => Cmd::Release {
                keys: keys.to_vec(),
                value: value.to_owned(),
            },
        };
        self.send(c, node, 0, cmd);
    }

    fn go_idle(&mut self, c: usize) {
        self.clients[c].phase = Phase::Idle;
        let gap = self
            .rng
            .range(self.sc.idle_ms.0 * MS, self.sc.idle_ms.1 * MS);
        let at = self.q.now() + gap;
        self.set_timer_at(c, at);
    }

    fn hold_tick(&mut self, c: usize, mut h: Box<Hold>) {
        let now_l = self.local(c);
        let ignore = self.sc.ignore_validity;
        let valid_end = self.clients[c].clock.true_at(h.valid_until);
        if !ignore && now_l >= h.valid_until {
            return self.end_work(c, &h, valid_end.min(self.q.now()), "validity ran out");
        }
        if now_l >= h.release_at {
            let now = self.q.now();
            let end = if ignore { now } else { now.min(valid_end) };
            return self.end_work(c, &h, end, "release");
        }
        if self.sc.extend && now_l >= h.next_extend && now_l < h.valid_until {
            return self.start_extend(c, h);
        }
        let mut wake = h.release_at;
        if !ignore {
            wake = wake.min(h.valid_until);
        }
        if self.sc.extend {
            wake = wake.min(h.next_extend.max(now_l));
        }
        h.ext = None;
        self.clients[c].phase = Phase::Holding(h);
        self.timer_local(c, wake);
    }

    fn start_extend(&mut self, c: usize, mut h: Box<Hold>) {
        let n = self.nodes.len();
        let t1 = self.local(c);
        let round = self.new_round(c);
        let keys: Vec<String> = h.resources.iter().map(|r| key(*r)).collect();
        let (value, ttl_ms) = (h.value.clone(), self.sc.ttl_ms);
        let cmd = if self.mutant == crate::mutant::Mutant::ExtendSet {
            Cmd::SetAll {
                keys,
                value,
                ttl_ms,
            }
        } else {
            Cmd::Extend {
                keys,
                value,
                ttl_ms,
            }
        };
        self.note(|| format!("client {c} extends"));
        for node in 0..n {
            self.send(c, node, round, cmd.clone());
        }
        let deadline = t1 + self.node_timeout().min(h.valid_until - t1);
        h.ext = Some(Tally::new(n, t1));
        self.clients[c].phase = Phase::Extending(h);
        self.timer_local(c, deadline);
    }

    fn finish_extend(&mut self, c: usize, mut h: Box<Hold>) {
        let Some(t) = h.ext.take() else {
            return self.hold_tick(c, h);
        };
        let t2 = self.local(c);
        let ttl = self.ttl();
        let interval = us(self.opts.effective_extend_interval(ttl));
        h.next_extend = t2 + interval;
        if !self.sc.ignore_validity && t2 >= h.valid_until {
            return self.hold_tick(c, h);
        }
        let elapsed = since(t.t1, t2);
        let verdict = self
            .mutant
            .extend_verdict(&self.timing, &self.opts, &t.round, ttl, elapsed);
        match verdict {
            Verdict::Extended(..) => {
                let drift = self.mutant.drift(&self.timing, ttl);
                let from = self.mutant.validity_start(t.t1, t2);
                h.valid_until = h.valid_until.max(from + us(ttl - drift));
                self.note(|| format!("client {c} extended to {} (client µs)", h.valid_until));
                self.hold_tick(c, h);
            }
            Verdict::Lost(_) => {
                self.note(|| format!("client {c} lost its lock"));
                let now = self.q.now();
                let end = if self.sc.ignore_validity {
                    now
                } else {
                    now.min(self.clients[c].clock.true_at(h.valid_until))
                };
                self.end_work(c, &h, end, "lost");
            }
            Verdict::Failed(_) => self.hold_tick(c, h),
        }
    }

    fn end_work(&mut self, c: usize, h: &Hold, end: i64, why: &str) {
        self.note(|| {
            format!(
                "client {c} stops work on {:?} ({why}): window [{}, {end}) token {:?}",
                h.resources, h.acquired, h.tokens
            )
        });
        for (i, r) in h.resources.iter().enumerate() {
            self.checker.windows.push(Window {
                resource: *r,
                client: c,
                start: h.acquired,
                end,
                value: h.value.clone(),
                token: h.tokens.as_ref().and_then(|t| t.get(i).copied()),
            });
        }
        let keys: Vec<String> = h.resources.iter().map(|r| key(*r)).collect();
        for node in 0..self.nodes.len() {
            self.send_release(c, node, &keys, &h.value);
        }
        self.go_idle(c);
    }
}
