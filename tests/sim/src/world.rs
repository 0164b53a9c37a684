//! One simulation run: builds a schedule from a scenario and a seed, runs the event loop, and
//! returns what the checker found.

use std::sync::Arc;
use std::time::Duration;

use quorumlock_proto::acquisition::Member;
use quorumlock_proto::config::{LockOptions, Timing};

use crate::checker::{Checker, Violation};
use crate::client::Client;
use crate::clock::Clock;
use crate::event::{Event, Queue, Tag};
use crate::link::{Dir, Link};
use crate::mutant::Mutant;
use crate::node::{Cmd, Node};
use crate::rng::Rng;
use crate::scenario::Scenario;

/// The result of one run.
#[derive(Debug)]
pub struct Outcome {
    /// The first violation found, if any.
    pub violation: Option<Violation>,
    /// Events processed.
    pub events: u64,
    /// Locks granted.
    pub grants: usize,
    /// Of those, the locks won by releases' grants (no attempt of their own).
    pub by_grants: u64,
    /// The trace, when asked for: true time (µs) and what happened.
    pub trace: Vec<(i64, String)>,
}

/// The whole simulated system.
pub struct World {
    pub(crate) q: Queue,
    pub(crate) rng: Rng,
    pub(crate) nodes: Vec<Node>,
    /// `links[client][node]`.
    pub(crate) links: Vec<Vec<Link>>,
    pub(crate) clients: Vec<Client>,
    pub(crate) sc: Scenario,
    pub(crate) mutant: Mutant,
    pub(crate) timing: Timing,
    pub(crate) opts: LockOptions,
    /// The nodes as the acquisition machine sees them.
    pub(crate) members: Arc<[Member]>,
    pub(crate) checker: Checker,
    pub(crate) trace: Option<Vec<(i64, String)>>,
    pub(crate) stop_at: i64,
    /// Calls won by grants.
    pub(crate) by_grants: u64,
}

/// Runs `scenario` under `mutant` with `seed`; records a trace when `trace` is set.
pub fn run(scenario: &Scenario, mutant: Mutant, seed: u64, trace: bool) -> Outcome {
    let mut w = World::new(scenario, mutant, seed, trace);
    let mut events = 0u64;
    let hard_stop = w.stop_at + 60_000_000;
    while let Some(e) = w.q.pop() {
        events += 1;
        if w.q.now() > hard_stop {
            break;
        }
        w.dispatch(e);
    }
    let mut violation = w.checker.check();
    if violation.is_none() && w.sc.leak_audit {
        violation = w.leak_audit();
    }
    Outcome {
        violation,
        events,
        grants: w.checker.windows.len(),
        by_grants: w.by_grants,
        trace: w.trace.take().unwrap_or_default(),
    }
}

const MS: i64 = 1_000;

impl World {
    fn new(sc: &Scenario, mutant: Mutant, seed: u64, trace: bool) -> Self {
        let mut rng = Rng::new(seed);
        let majority = sc.nodes / 2 + 1;
        let nodes: Vec<Node> = (0..sc.nodes)
            .map(|i| {
                let rate = match sc.majority_rate {
                    Some(r) if i < majority => r,
                    _ => rng.between(sc.rate.0, sc.rate.1),
                };
                Node::new(Clock::new(rng.range(0, 1_000 * MS), rate), sc.persistent)
            })
            .collect();
        let links = (0..sc.clients)
            .map(|_| (0..sc.nodes).map(|_| Link::new(sc.link)).collect())
            .collect();
        let ttl = Duration::from_millis(sc.ttl_ms);
        let opts = LockOptions::default()
            .ttl(ttl)
            .retry_count(sc.retry_count)
            .retry_delay(Duration::from_millis(sc.retry_ms.0))
            .retry_jitter(Duration::from_millis(sc.retry_ms.1))
            .fenced(sc.fenced);
        let timing = Timing {
            drift_factor: 0.01,
            drift_constant: Duration::from_millis(2),
            max_ttl: Duration::from_secs(60),
            quarantine_period: Duration::from_secs(65),
        };
        let stop_at = sc.duration_ms * MS;
        let mut w = World {
            q: Queue::default(),
            rng,
            nodes,
            links,
            clients: (0..sc.clients).map(|_| Client::new(sc.nodes)).collect(),
            sc: sc.clone(),
            mutant,
            timing,
            opts,
            // No addresses: reports name nodes by index, and rounds allocate no strings.
            members: (0..sc.nodes)
                .map(|_| Member {
                    address: String::new(),
                    cluster: false,
                })
                .collect(),
            checker: Checker::default(),
            trace: trace.then(Vec::new),
            stop_at,
            by_grants: 0,
        };
        w.schedule_faults();
        for c in 0..sc.clients {
            let at = w.rng.range(0, 20 * MS);
            w.set_timer_at(c, at);
        }
        w
    }

    fn schedule_faults(&mut self) {
        let sc = self.sc.clone();
        let end = self.stop_at;
        for node in 0..sc.nodes {
            let (mean, (lo, hi)) = sc.crashes;
            // Bernoulli rounds approximating `mean` crashes per node.
            let mut budget = mean;
            while budget > 0.0 {
                if self.rng.chance(budget.min(1.0)) {
                    let at = self.rng.range(0, end);
                    let back = at + self.rng.range(lo * MS, hi * MS);
                    self.q.push(at, Event::Crash { node });
                    self.q.push(back, Event::Restart { node });
                }
                budget -= 1.0;
            }
        }
        if let Some(ms) = sc.majority_jump_ms {
            let at = self.rng.range(0, end);
            for node in 0..sc.nodes / 2 + 1 {
                self.q.push(
                    at,
                    Event::Jump {
                        node,
                        delta: ms * MS,
                    },
                );
            }
        }
        let (count, (lo, hi)) = sc.pauses;
        for client in 0..sc.clients {
            for _ in 0..count {
                let at = self.rng.range(0, end);
                let dur = self.rng.range(lo * MS, hi * MS);
                self.q.push(at, Event::Pause { client, dur });
            }
        }
    }

    /// Records a trace line (only when tracing).
    pub(crate) fn note(&mut self, line: impl FnOnce() -> String) {
        if let Some(t) = &mut self.trace {
            t.push((self.q.now(), line()));
        }
    }

    fn dispatch(&mut self, e: Event) {
        // A paused client handles nothing until its pause ends.
        let client = match &e {
            Event::ToClient { client, .. }
            | Event::Timer { client, .. }
            | Event::Notice { client, .. } => Some(*client),
            _ => None,
        };
        if let Some(c) = client
            && self.clients[c].paused_until > self.q.now()
        {
            let at = self.clients[c].paused_until;
            self.q.push(at, e);
            return;
        }
        match e {
            Event::ToNode {
                node,
                client,
                tag,
                cmd,
            } => self.at_node(node, client, tag, &cmd),
            Event::ToClient {
                client,
                node,
                tag,
                reply,
            } => self.on_reply(client, node, tag, &reply),
            Event::Notice {
                client,
                node,
                channel,
                message,
            } => self.on_notice(client, node, &channel, &message),
            Event::Timer { client, epoch } => {
                if self.clients[client].epoch == epoch {
                    self.clients[client].timer_at = None;
                    self.on_timer(client);
                }
            }
            Event::Crash { node } => {
                self.note(|| format!("node {node} crashes"));
                self.nodes[node].crash();
            }
            Event::Restart { node } => {
                self.note(|| format!("node {node} restarts"));
                self.nodes[node].restart();
            }
            Event::Jump { node, delta } => {
                self.note(|| format!("node {node} clock jumps {delta} µs"));
                let now = self.q.now();
                self.nodes[node].clock.jump(now, delta);
            }
            Event::Pause { client, dur } => {
                self.note(|| format!("client {client} pauses {dur} µs"));
                let until = self.q.now() + dur;
                let c = &mut self.clients[client];
                c.paused_until = c.paused_until.max(until);
            }
        }
    }

    fn at_node(&mut self, node: usize, client: usize, tag: Tag, cmd: &Cmd) {
        if !self.nodes[node].up {
            self.note(|| format!("node {node} down: drops {cmd:?} from client {client}"));
            return;
        }
        let now = self.q.now();
        let reply = self.nodes[node].exec(now, cmd);
        self.note(|| format!("node {node} runs {cmd:?} from client {client} -> {reply:?}"));
        self.publish(node);
        if let Some(at) = self.links[client][node].arrival(&mut self.rng, now, Dir::Reply) {
            self.q.push(
                at,
                Event::ToClient {
                    client,
                    node,
                    tag,
                    reply,
                },
            );
        }
    }

    /// Delivers what `node`'s last command published to the clients subscribed to each
    /// channel, over their pub/sub connections.
    fn publish(&mut self, node: usize) {
        let published = std::mem::take(&mut self.nodes[node].published);
        for (channel, message) in published {
            self.note(|| format!("node {node} publishes {message:?} on {channel}"));
            let to: Vec<usize> = self.nodes[node]
                .subs
                .iter()
                .filter(|(ch, _)| *ch == channel)
                .map(|(_, c)| *c)
                .collect();
            let now = self.q.now();
            for client in to {
                if let Some(at) = self.links[client][node].arrival(&mut self.rng, now, Dir::Notice)
                {
                    let (channel, message) = (channel.clone(), message.clone());
                    self.q.push(
                        at,
                        Event::Notice {
                            client,
                            node,
                            channel,
                            message,
                        },
                    );
                }
            }
        }
    }

    /// Sends `cmd` from `client` to `node`, tagged with what it belongs to.
    pub(crate) fn send(&mut self, client: usize, node: usize, tag: Tag, cmd: Cmd) {
        let now = self.q.now();
        if let Some(at) = self.links[client][node].arrival(&mut self.rng, now, Dir::Request) {
            self.q.push(
                at,
                Event::ToNode {
                    node,
                    client,
                    tag,
                    cmd,
                },
            );
        }
    }

    /// Arms `client`'s timer at true time `at` (replacing any earlier one; nothing to do when
    /// it is already armed for `at`).
    pub(crate) fn set_timer_at(&mut self, client: usize, at: i64) {
        let c = &mut self.clients[client];
        if c.timer_at == Some(at) {
            return;
        }
        c.timer_at = Some(at);
        c.epoch += 1;
        let epoch = c.epoch;
        self.q.push(at, Event::Timer { client, epoch });
    }

    /// Every lock key still alive at the end of a lossless, crash-free run: a leak.
    fn leak_audit(&mut self) -> Option<Violation> {
        let now = self.q.now();
        for (i, n) in self.nodes.iter_mut().enumerate() {
            if let Some((k, v)) = n.live_lock_keys(now).into_iter().next() {
                return Some(Violation {
                    kind: "leak",
                    detail: format!(
                        "node {i} still holds {k} = {v} after every call ended (at {now} µs)"
                    ),
                    at: now,
                });
            }
        }
        None
    }
}
