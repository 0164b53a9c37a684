//! Simulated clients. An acquire call is the protocol's own acquisition machine,
//! `quorumlock_proto::acquisition::Acquisition`, the one the engine's `core/src/acquire.rs`
//! drives; this module is its driver in simulated time, as core's is in tokio time:
//!
//! * its requests go over the client's links, tagged with the call and the machine's round,
//!   and the replies come back as answers (`SET NX` / ACQUIRE-MULTI, FENCED-ACQUIRE with its
//!   counters, RAISE), mapped to node kinds as core's `node/ops.rs` maps Redis replies;
//! * its deadlines (the round's node timeout, the wait before the next attempt) are the
//!   client's timer;
//! * a failed attempt's cleanup (`Output::Clean`) sends RELEASE to the nodes it names and
//!   calls `handle_cleaned` once each answered or `node_timeout` passed, as core waits for
//!   its cleanup round; the next attempt waits for it;
//! * `Output::Listen` starts the call's wait in its keys' lines ([`crate::waiting`]): release
//!   notices wake it, and releases grant it the key when it registered (scenarios with
//!   `notify`; without it, a waiting call always waits its full retry delay);
//! * its clock is the client's clock (`World::mono`), its randomness the world's seeded
//!   generator ([`crate::rng`]);
//! * at the end of the run a call still waiting between attempts is cancelled.
//!
//! The mutants of the acquisition are planted in the machine (`Acquisition::with_mutant`).
//! The holder side is still sequenced here, as `core/src/lock.rs` does: the holder works,
//! optionally extends (its round judged by `quorumlock_proto::extend::verdict`), and releases.

use std::time::Duration;

use quorumlock_proto::acquisition::{Acquisition, Grant, Output, Request};
use quorumlock_proto::extend::Verdict;
use quorumlock_proto::fencing;
use quorumlock_proto::quorum::Round;
use quorumlock_proto::report::{NodeKind, NodeResult};
use quorumlock_proto::round::Answer;

use crate::checker::Window;
use crate::clock::Clock;
use crate::event::Tag;
use crate::mutant::{HolderMutant, Mutant};
use crate::node::{Cmd, Reply};
use crate::waiting::Waiting;
use crate::world::World;
use quorumlock_proto::grants::Grants;
use quorumlock_proto::line::Line;

const MS: i64 = 1_000;

/// One acquire call: the protocol's machine and what its driver keeps.
#[derive(Debug)]
pub(crate) struct Call {
    /// The client's call number (tags its messages).
    pub(crate) id: u32,
    resources: Vec<usize>,
    /// The lock keys, and the lock keys followed by their counters (fenced requests).
    pub(crate) keys: Vec<String>,
    fence_keys: Vec<String>,
    pub(crate) m: Acquisition,
    /// The cleanup in progress: the nodes that have not answered yet, and when it ends
    /// anyway (client µs).
    pub(crate) cleaning: Option<(Vec<usize>, u64)>,
    /// The call as a waiter in its keys' lines.
    pub(crate) w: Waiting,
}

/// An extend round in progress: its replies (acquisitions count theirs in the machine).
#[derive(Clone, Debug)]
pub(crate) struct ExtendTally {
    t1: i64,
    round: Round,
    answered: usize,
    ok: usize,
}

impl ExtendTally {
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
    ext: Option<ExtendTally>,
}

/// What a client is doing.
#[derive(Debug)]
pub(crate) enum Phase {
    Idle,
    Acquiring(Box<Call>),
    Holding(Box<Hold>),
    Extending(Box<Hold>),
    Done,
}

/// A simulated client process.
#[derive(Debug)]
pub struct Client {
    pub(crate) clock: Clock,
    pub(crate) epoch: u64,
    /// The true time the current timer is armed for (`None` once it fired).
    pub(crate) timer_at: Option<i64>,
    pub(crate) paused_until: i64,
    pub(crate) phase: Phase,
    /// Acquire calls started.
    calls: u32,
    /// Extend rounds started.
    extend_round: u32,
    /// The latest monotonic reading (`World::mono`).
    mono: u64,
}

impl Client {
    pub(crate) fn new(_nodes: usize) -> Self {
        Self {
            clock: Clock::new(0, 1.0),
            epoch: 0,
            timer_at: None,
            paused_until: 0,
            phase: Phase::Idle,
            calls: 0,
            extend_round: 0,
            mono: 0,
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

fn signed(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}

/// What node `reply` means for an acquire (or, with `raise`, a RAISE) request, as core's
/// `node/ops.rs` reads Redis replies; FENCED-ACQUIRE's counters come back separately.
fn answer(reply: &Reply, raise: bool) -> (Answer, Option<Vec<u64>>) {
    let unexpected = || Err((NodeKind::Protocol, format!("unexpected reply {reply:?}")));
    match reply {
        Reply::Ok | Reply::Int(1) => (Ok(NodeKind::Ok), None),
        Reply::Int(0) if raise => (Ok(NodeKind::NotHeld), None),
        Reply::Nil | Reply::Int(0) if !raise => (Ok(NodeKind::HeldByOther), None),
        Reply::Ints(t) if !raise => {
            let counters: Option<Vec<u64>> = t
                .iter()
                .map(|x| u64::try_from(*x).ok().filter(|x| *x > 0))
                .collect();
            match counters {
                Some(c) => (Ok(NodeKind::Ok), Some(c)),
                None => (unexpected(), None),
            }
        }
        _ => (unexpected(), None),
    }
}

impl World {
    /// Client `c`'s monotonic clock in µs, the acquisition machine's time. Client clocks model
    /// the engine's `CLOCK_BOOTTIME`: they start at 0, never jump (the scenarios' clock
    /// jumps hit node clocks only) and run at their rate; a reading is never below the
    /// previous one (a backward step, were a scenario ever to make one, would read as a
    /// clock that stood still), nor below 0.
    pub(crate) fn mono(&mut self, c: usize) -> u64 {
        let client = &mut self.clients[c];
        let local = u64::try_from(client.clock.local(self.q.now())).unwrap_or(0);
        client.mono = client.mono.max(local);
        client.mono
    }

    /// The same reading as a signed client time (the holder's arithmetic).
    fn local(&mut self, c: usize) -> i64 {
        signed(self.mono(c))
    }

    fn timer_local(&mut self, c: usize, local: i64) {
        let at = self.clients[c].clock.true_at(local);
        self.set_timer_at(c, at);
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
            Phase::Acquiring(mut call) => {
                let now = self.mono(c);
                if call.cleaning.as_ref().is_some_and(|(_, end)| now >= *end) {
                    call.cleaning = None;
                    call.m.handle_cleaned(now);
                }
                if call.m.poll_timeout().is_some_and(|at| now >= at) {
                    call.m.handle_timeout(now);
                }
                self.listened(&mut call, now);
                self.drive(c, call);
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

    pub(crate) fn on_reply(&mut self, c: usize, node: usize, tag: Tag, reply: &Reply) {
        match tag {
            Tag::Acquire { call, round } => self.on_answer(c, node, (call, round), false, reply),
            Tag::Raise { call, round } => self.on_answer(c, node, (call, round), true, reply),
            Tag::Clean { call } => self.on_cleaned(c, node, call),
            Tag::Extend { round } => self.on_extend_reply(c, node, round, reply),
            Tag::Listen { call } => self.on_listen_reply(c, node, call, reply),
            Tag::Release | Tag::Line => {}
        }
    }

    /// A node answered a vote (or with `raise`, a RAISE) of round `round` of call `id`.
    fn on_answer(
        &mut self,
        c: usize,
        node: usize,
        (id, round): (u32, u32),
        raise: bool,
        reply: &Reply,
    ) {
        let now = self.mono(c);
        let Phase::Acquiring(call) = &mut self.clients[c].phase else {
            return;
        };
        if call.id != id {
            return;
        }
        let (answer, counters) = answer(reply, raise);
        let round = u64::from(round);
        let counted = match counters {
            Some(counters) => call.m.handle_counters(round, node, counters, now),
            None => call.m.handle_answer(round, node, answer, now),
        };
        if counted {
            self.resume(c);
        }
    }

    /// A node answered the cleanup of call `id`: once every node did, the machine moves on.
    fn on_cleaned(&mut self, c: usize, node: usize, id: u32) {
        let now = self.mono(c);
        let Phase::Acquiring(call) = &mut self.clients[c].phase else {
            return;
        };
        let Some((pending, _)) = &mut call.cleaning else {
            return;
        };
        if call.id != id {
            return;
        }
        pending.retain(|n| *n != node);
        if pending.is_empty() {
            call.cleaning = None;
            call.m.handle_cleaned(now);
            self.resume(c);
        }
    }

    /// Drives the acquisition of client `c` after an event changed it.
    pub(crate) fn resume(&mut self, c: usize) {
        if let Phase::Acquiring(mut call) =
            std::mem::replace(&mut self.clients[c].phase, Phase::Done)
        {
            let now = self.mono(c);
            self.listened(&mut call, now);
            self.drive(c, call);
        }
    }

    fn start_call(&mut self, c: usize) {
        let r = self.sc.resources;
        let mut resources: Vec<usize> = (0..r).filter(|_| self.rng.chance(0.5)).collect();
        if resources.is_empty() {
            resources.push(usize::try_from(self.rng.range(0, r as i64 - 1)).unwrap_or(0));
        }
        let now = self.mono(c);
        let m = match Acquisition::new(self.members.clone(), self.opts.clone(), &self.timing, now) {
            Ok(m) => m.with_mutant(self.mutant),
            Err(e) => {
                self.note(|| format!("client {c} cannot acquire: {e}"));
                return;
            }
        };
        self.clients[c].calls += 1;
        let keys: Vec<String> = resources.iter().map(|r| key(*r)).collect();
        let bytes: Vec<Vec<u8>> = keys.iter().map(|k| k.clone().into_bytes()).collect();
        let fence_keys = fencing::with_counters(&bytes)
            .into_iter()
            .map(|k| String::from_utf8_lossy(&k).into_owned())
            .collect();
        let line = Line::new(m.options(), m.node_timeout(), keys.len(), self.nodes.len());
        let call = Call {
            id: self.clients[c].calls,
            resources,
            keys,
            fence_keys,
            m,
            cleaning: None,
            w: Waiting::new(line, Grants::new().with_mutant(self.mutant)),
        };
        self.drive(c, Box::new(call));
    }

    /// Acts on the machine's outputs until it has none, then arms the timer for its next
    /// deadline (or the cleanup's).
    fn drive(&mut self, c: usize, mut call: Box<Call>) {
        loop {
            let now = self.mono(c);
            self.heard(c, &mut call, now);
            let Some(out) = call.m.poll_output(now, &mut self.rng) else {
                break;
            };
            match out {
                Output::Attempt { number } => {
                    let resources = &call.resources;
                    self.note(|| format!("client {c} attempt {number} on {resources:?}"));
                    self.attempt(c, &mut call, now);
                }
                Output::Send {
                    round,
                    node,
                    request,
                } => {
                    let raise = matches!(request, Request::Raise { .. });
                    self.attempt_marks(c, &mut call, node, raise);
                    let (tag, cmd) = self.request(&call, round, request);
                    self.send(c, node, tag, cmd);
                }
                Output::Clean { nodes, value } => {
                    self.send_clean(c, &call, &nodes, &value);
                    let end = now.saturating_add(
                        u64::try_from(call.m.node_timeout().as_micros()).unwrap_or(u64::MAX),
                    );
                    call.cleaning = Some((nodes, end));
                }
                Output::Listen => self.listen(c, &mut call, now),
                Output::Done(Ok(grant)) => {
                    call.w.grants.won_with(&grant.value);
                    self.leave_lines(c, &mut call, true);
                    return self.granted(c, &call, grant);
                }
                Output::Done(Err(e)) => {
                    self.note(|| format!("client {c} call failed: {e}"));
                    self.leave_lines(c, &mut call, false);
                    return self.go_idle(c);
                }
            }
        }
        let now = self.mono(c);
        self.requeue(c, &mut call, now);
        // The caller gives up at the end of the run: a call waiting between attempts is
        // cancelled. Its outputs are all acted on by now (a failed attempt's cleanup is sent,
        // only not awaited); what cancelling leaves to clean are the nodes of its last attempt
        // that had not answered yet when it was decided. Without release notices, wanting one
        // means exactly that the call waits for its next attempt.
        if self.q.now() >= self.stop_at && call.m.wants_release_notice() {
            self.leave_lines(c, &mut call, false);
            let cancelled = call.m.cancel();
            self.note(|| format!("client {c} gives up: the run is over"));
            if let Some((nodes, value)) = cancelled.clean {
                self.send_clean(c, &call, &nodes, &value);
            }
            return;
        }
        let cleanup = call.cleaning.as_ref().map(|(_, end)| *end);
        let wake = call
            .m
            .poll_timeout()
            .into_iter()
            .chain(cleanup)
            .chain(call.w.deadline())
            .min();
        self.clients[c].phase = Phase::Acquiring(call);
        if let Some(at) = wake {
            self.timer_local(c, signed(at));
        }
    }

    /// The command for `request` of round `round`, and its tag.
    fn request(&self, call: &Call, round: u64, request: Request) -> (Tag, Cmd) {
        let ttl_ms = call.m.ttl_ms();
        let counter_ttl_ms = call
            .m
            .options()
            .get_fence_counter_ttl()
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let round = u32::try_from(round).unwrap_or(u32::MAX);
        let vote = Tag::Acquire {
            call: call.id,
            round,
        };
        match request {
            Request::Acquire { value } => {
                let value = value.to_string();
                let cmd = match call.keys.as_slice() {
                    [k] => Cmd::SetNx {
                        key: k.clone(),
                        value,
                        ttl_ms,
                    },
                    keys => Cmd::AcquireMulti {
                        keys: keys.to_vec(),
                        value,
                        ttl_ms,
                    },
                };
                (vote, cmd)
            }
            Request::FencedAcquire { value } => {
                let cmd = Cmd::FencedAcquire {
                    keys: call.fence_keys.clone(),
                    value: value.to_string(),
                    ttl_ms,
                    counter_ttl_ms,
                };
                (vote, cmd)
            }
            Request::Raise { value, tokens } => {
                let cmd = Cmd::Raise {
                    keys: call.fence_keys.clone(),
                    value: value.to_string(),
                    tokens: tokens.to_vec(),
                    counter_ttl_ms,
                };
                (
                    Tag::Raise {
                        call: call.id,
                        round,
                    },
                    cmd,
                )
            }
        }
    }

    /// The holder of `grant` starts its work.
    fn granted(&mut self, c: usize, call: &Call, g: Grant) {
        let (t2, valid_until) = (signed(g.t2_us), signed(g.valid_until_us));
        self.note(|| {
            format!(
                "client {c} granted after {} attempts, valid until {valid_until} (client µs), tokens {:?}",
                g.attempts, g.tokens
            )
        });
        let ttl = self.ttl();
        let hold = self
            .rng
            .range(self.sc.hold_ms.0 * MS, self.sc.hold_ms.1 * MS);
        let interval = us(self.opts.effective_extend_interval(ttl));
        let h = Hold {
            resources: call.resources.clone(),
            value: g.value.to_string(),
            acquired: self.q.now(),
            valid_until,
            release_at: t2 + hold,
            next_extend: t2 + interval,
            tokens: g.tokens,
            ext: None,
        };
        self.hold_tick(c, Box::new(h));
    }

    fn on_extend_reply(&mut self, c: usize, node: usize, round: u32, reply: &Reply) {
        if round != self.clients[c].extend_round {
            return;
        }
        let n = self.nodes.len();
        let mutant = self.mutant;
        let Phase::Extending(h) = &mut self.clients[c].phase else {
            return;
        };
        let Some(t) = &mut h.ext else { return };
        let kind = match reply {
            Reply::Ok | Reply::Int(1) => NodeKind::Ok,
            Reply::Int(0) => NodeKind::NotHeld,
            Reply::Int(-1) => NodeKind::HeldByOther,
            _ => NodeKind::Protocol,
        };
        if t.record(node, kind) && mutant.decided(n, t.answered, t.ok) {
            let Phase::Extending(h) = std::mem::replace(&mut self.clients[c].phase, Phase::Done)
            else {
                return;
            };
            self.finish_extend(c, h);
        }
    }

    /// A cleanup of `call`'s attempt with `value`: RELEASE on `nodes`, tagged as its cleanup.
    fn send_clean(&mut self, c: usize, call: &Call, nodes: &[usize], value: &str) {
        self.note(|| format!("client {c} cleans {nodes:?}"));
        for &node in nodes {
            let tag = Tag::Clean { call: call.id };
            self.send_release(c, node, tag, &call.keys, value, false);
        }
    }

    /// RELEASE of `value` on `keys` at `node`; with `notify`, in the engine's mode for
    /// waiters' lines (a failed attempt's cleanup tells nobody).
    fn send_release(
        &mut self,
        c: usize,
        node: usize,
        tag: Tag,
        keys: &[String],
        value: &str,
        notify: bool,
    ) {
        let notify = notify && self.sc.notify;
        let cmd = match keys {
            [k] => Cmd::ReleaseOne {
                key: k.clone(),
                value: value.to_owned(),
                notify,
            },
            _ => Cmd::Release {
                keys: keys.to_vec(),
                value: value.to_owned(),
                notify,
            },
        };
        self.send(c, node, tag, cmd);
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
        self.clients[c].extend_round += 1;
        let round = self.clients[c].extend_round;
        let keys: Vec<String> = h.resources.iter().map(|r| key(*r)).collect();
        let (value, ttl_ms) = (h.value.clone(), self.sc.ttl_ms);
        let cmd = if self.mutant == Mutant::ExtendSet {
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
            self.send(c, node, Tag::Extend { round }, cmd.clone());
        }
        let deadline = t1 + self.node_timeout().min(h.valid_until - t1);
        h.ext = Some(ExtendTally::new(n, t1));
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
            self.send_release(c, node, Tag::Release, &keys, &h.value, true);
        }
        self.go_idle(c);
    }
}
