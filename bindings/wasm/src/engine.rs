//! The client's shared state: the transport, the settings, what each node's probe said, and
//! the two I/O primitives every operation uses: one request to one node (scripts by SHA-1
//! with an `EVAL` fallback) and one round over some nodes (a `proto` [`Tally`] with its
//! early decision and deadline).

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use js_sys::Function;
use quorumlock_proto::acquisition::Member;
use quorumlock_proto::command::{self, Command, Failure, Reply, Script};
use quorumlock_proto::error::{Error, ErrorKind};
use quorumlock_proto::probe::{self, Decision, Facts};
use quorumlock_proto::quorum::{Decide, Round, quorum};
use quorumlock_proto::report::{NodeCategory, NodeKind, Report};
use quorumlock_proto::round::{Answer, Tally};
use quorumlock_proto::warning::WarningKind;
use wasm_bindgen::JsValue;

use crate::js::{Sleep, Transport, now_us, random8, reply_text};
use crate::options::Settings;

/// A boxed local future.
pub type Local<T> = Pin<Box<dyn Future<Output = T>>>;

/// What kind of traffic a request carries: lock traffic goes only to usable, counted
/// nodes; release reaches every node that answered its probe.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Traffic {
    /// Acquire and extend.
    Lock,
    /// Fenced acquire and raise: also skips nodes whose uptime is unknown.
    Fenced,
    /// Release and checks.
    Any,
}

/// What a node's probe said.
struct Probe {
    decision: Decision,
    ready_at_us: u64,
    probed_at_us: u64,
}

enum NodeState {
    /// No probe has ended yet.
    Unknown,
    /// The last probe failed.
    Down(Failure),
    /// The last probe succeeded.
    Up(Probe),
}

struct NodeSlot {
    state: NodeState,
    probing: bool,
    last_try_us: u64,
}

/// The client's shared state.
pub struct Inner {
    pub transport: Transport,
    pub members: Arc<[Member]>,
    pub s: Settings,
    nodes: RefCell<Vec<NodeSlot>>,
    shas: HashMap<Script, String>,
    on_warning: Option<Function>,
    warned: RefCell<HashSet<(WarningKind, usize)>>,
    pub closed: Cell<bool>,
    /// This client's id in its waiters' ids and named release channels (REDLOCK.md §9):
    /// 16 random hex digits.
    pub client: Vec<u8>,
    /// Set once a node refused a release that declares waiter flags and lines (`NOPERM`: a
    /// key pattern without them); releases then publish every deleted key.
    flagless: Cell<bool>,
    /// The number of the next waiter ([`Inner::waiter_id`]).
    waiters: Cell<u64>,
}

fn sha1_hex(text: &str) -> String {
    sha1_smol::Sha1::from(text).digest().to_string()
}

/// How soon a node whose probe failed is probed again when traffic wants it.
const REPROBE_DOWN: Duration = Duration::from_millis(200);

impl Inner {
    pub fn new(
        transport: Transport,
        addresses: Vec<String>,
        s: Settings,
        on_warning: Option<Function>,
    ) -> Self {
        let members: Arc<[Member]> = addresses
            .into_iter()
            .map(|address| Member {
                address,
                cluster: false,
            })
            .collect();
        let nodes = members
            .iter()
            .map(|_| NodeSlot {
                state: NodeState::Unknown,
                probing: false,
                last_try_us: 0,
            })
            .collect();
        Self {
            transport,
            s,
            nodes: RefCell::new(nodes),
            shas: Script::ALL
                .iter()
                .map(|s| (*s, sha1_hex(s.source())))
                .collect(),
            on_warning,
            warned: RefCell::new(HashSet::new()),
            closed: Cell::new(false),
            // From `crypto.getRandomValues` (zeros only when it fails, and then no
            // acquisition starts, let alone waits: lock values come from the same source).
            client: command::client_id(random8()),
            flagless: Cell::new(false),
            waiters: Cell::new(0),
            members,
        }
    }

    pub fn n(&self) -> usize {
        self.members.len()
    }

    pub fn address(&self, i: usize) -> &str {
        self.members.get(i).map_or("", |m| m.address.as_str())
    }

    /// The Redis key of a resource.
    pub fn key(&self, resource: &[u8]) -> Vec<u8> {
        self.s.key_format.key(&self.s.prefix, resource)
    }

    /// Delivers a warning once per kind and node.
    pub fn warn(&self, kind: WarningKind, node: usize, message: &str) {
        if !self.warned.borrow_mut().insert((kind, node)) {
            return;
        }
        if let Some(f) = &self.on_warning {
            let _ = f.call3(
                &JsValue::UNDEFINED,
                &JsValue::from_str(kind.as_str()),
                &JsValue::from_f64(node as f64),
                &JsValue::from_str(&format!("node #{node} {}: {message}", self.address(node))),
            );
        }
    }

    /// Whether node `i` may carry `traffic` now; starts a probe in the background when the
    /// node was never probed, failed its last probe, or its probe is old.
    fn gate(self: &Rc<Self>, i: usize, traffic: Traffic) -> Result<(), Failure> {
        let now = now_us();
        let (reprobe, verdict) = {
            let nodes = self.nodes.borrow();
            let Some(slot) = nodes.get(i) else {
                return Err((NodeKind::NotConnected, "no such node".to_owned()));
            };
            match &slot.state {
                NodeState::Unknown => (
                    !slot.probing,
                    Err((NodeKind::NotConnected, "not connected yet".to_owned())),
                ),
                NodeState::Down(f) => (
                    !slot.probing
                        && now.saturating_sub(slot.last_try_us) >= REPROBE_DOWN.as_micros() as u64,
                    Err(f.clone()),
                ),
                NodeState::Up(p) => (
                    !slot.probing
                        && now.saturating_sub(p.probed_at_us)
                            >= self.s.reprobe_every.as_micros() as u64,
                    self.admit(i, p, traffic, now, &nodes),
                ),
            }
        };
        if reprobe {
            self.spawn_probe(i);
        }
        verdict
    }

    fn admit(
        &self,
        i: usize,
        p: &Probe,
        traffic: Traffic,
        now: u64,
        nodes: &[NodeSlot],
    ) -> Result<(), Failure> {
        if traffic == Traffic::Any {
            return Ok(());
        }
        if traffic == Traffic::Fenced && p.decision.uptime_unknown {
            return Err((
                NodeKind::Quarantined,
                "the node's uptime cannot be read (INFO refused); fenced locks do not count it"
                    .to_owned(),
            ));
        }
        if let Some(f) = &p.decision.unusable {
            return Err(f.clone());
        }
        let mine = &p.decision.run_ids;
        let first = nodes.iter().take(i).position(|s| match &s.state {
            NodeState::Up(other) => other.decision.run_ids.iter().any(|id| mine.contains(id)),
            _ => false,
        });
        if let Some(first) = first {
            let text = format!(
                "the same server as node #{first} (same run_id); it counts once, as node #{first}"
            );
            self.warn(
                WarningKind::DuplicateNode,
                i,
                &format!(
                    "{text}; list each server once (db 0 and db 1 of one server are one master)"
                ),
            );
            return Err((NodeKind::Duplicate, text));
        }
        if now < p.ready_at_us {
            let uptime = p.decision.uptime.unwrap_or_default().as_secs();
            let wait = (p.ready_at_us - now) as f64 / 1e6;
            return Err((
                NodeKind::Quarantined,
                format!(
                    "up {uptime} s without durable writes; counted in {wait:.1} s (restart quarantine). To count it now, make its writes durable (appendonly yes, appendfsync always) or, for test set-ups, turn the quarantine off (quarantine: 'off')"
                ),
            ));
        }
        Ok(())
    }

    fn spawn_probe(self: &Rc<Self>, i: usize) {
        let me = self.clone();
        wasm_bindgen_futures::spawn_local(async move {
            me.probe(i).await;
        });
    }

    /// Probes node `i` (INFO and the persistence settings) within the connect timeout and
    /// records what the protocol decides about it.
    pub async fn probe(self: &Rc<Self>, i: usize) {
        {
            let mut nodes = self.nodes.borrow_mut();
            let Some(slot) = nodes.get_mut(i) else {
                return;
            };
            if slot.probing {
                return;
            }
            slot.probing = true;
            slot.last_try_us = now_us();
        }
        let t = &self.transport;
        let info = t.request(i, &[b"INFO".to_vec()]);
        let append = t.request(
            i,
            &[b"CONFIG".to_vec(), b"GET".to_vec(), b"append*".to_vec()],
        );
        let rewrite = t.request(
            i,
            &[
                b"CONFIG".to_vec(),
                b"GET".to_vec(),
                b"no-appendfsync-on-rewrite".to_vec(),
            ],
        );
        let all = futures_util::future::join3(info, append, rewrite);
        let deadline = Sleep::until(now_us() + self.s.connect_timeout.as_micros() as u64, true);
        let outcome = match futures_util::future::select(Box::pin(all), deadline).await {
            futures_util::future::Either::Left((r, _)) => Some(r),
            futures_util::future::Either::Right(_) => None,
        };
        let state = match outcome {
            None => NodeState::Down((
                NodeKind::Timeout,
                format!("no reply to INFO within {:?}", self.s.connect_timeout),
            )),
            Some((info, append, rewrite)) => self.decide(i, info, append, rewrite),
        };
        let mut nodes = self.nodes.borrow_mut();
        if let Some(slot) = nodes.get_mut(i) {
            slot.state = state;
            slot.probing = false;
        }
    }

    fn decide(
        &self,
        i: usize,
        info: Result<Reply, Failure>,
        append: Result<Reply, Failure>,
        rewrite: Result<Reply, Failure>,
    ) -> NodeState {
        let info = match info {
            Ok(r) => reply_text(&r).map(|t| probe::parse_info(&t)),
            // INFO refused by an ACL (NOPERM) or unknown to the endpoint (ERR ...): the node
            // answers but cannot be described. Anything else (auth, connection, timeout,
            // a server error) means it cannot carry traffic now.
            Err((NodeKind::NoPermission | NodeKind::Other, _)) => None,
            Err(f) => return NodeState::Down(f),
        };
        let mut config = HashMap::new();
        for r in [append, rewrite].into_iter().flatten() {
            if let Reply::Array(items) = r {
                for pair in items.chunks(2) {
                    if let [k, v] = pair
                        && let (Some(k), Some(v)) = (reply_text(k), reply_text(v))
                    {
                        config.insert(k, v);
                    }
                }
            }
        }
        let mut decision = Decision::default();
        decision.add(
            &Facts {
                server: "",
                info: info.as_ref(),
                config: &config,
                cluster: false,
            },
            &probe::Settings {
                quarantine: self.s.quarantine,
                quarantine_period: self.s.timing.quarantine_period,
                eviction: self.s.eviction,
            },
        );
        for (kind, text) in &decision.warnings {
            self.warn(*kind, i, text);
        }
        let now = now_us();
        NodeState::Up(Probe {
            ready_at_us: now.saturating_add(decision.wait.as_micros() as u64),
            probed_at_us: now,
            decision,
        })
    }

    /// Probes every node in parallel; with `require_quorum`, fails unless a quorum is usable.
    pub async fn connect(self: &Rc<Self>) -> Result<(), Error> {
        let probes: FuturesUnordered<_> = (0..self.n()).map(|i| self.probe(i)).collect();
        probes.collect::<Vec<()>>().await;
        if !self.s.require_quorum {
            return Ok(());
        }
        let results: Vec<_> = (0..self.n())
            .map(|i| {
                let kind = match self.gate(i, Traffic::Lock) {
                    Ok(()) => Ok(NodeKind::Ok),
                    Err(f) => Err(f),
                };
                (i, kind)
            })
            .collect();
        let mut tally = Tally::new(
            (0..self.n()).map(|i| (i, self.address(i))),
            Decide::All,
            0,
            Duration::ZERO,
        );
        let mut usable = 0;
        let mut worst: HashMap<NodeCategory, usize> = HashMap::new();
        for (i, answer) in results {
            if answer.is_ok() {
                usable += 1;
            } else if let Err((k, _)) = &answer {
                *worst.entry(k.category()).or_default() += 1;
            }
            tally.record(i, answer, 0);
        }
        if usable >= quorum(self.n()) {
            return Ok(());
        }
        let category = worst
            .into_iter()
            .max_by_key(|(_, n)| *n)
            .map_or(NodeCategory::Connection, |(c, _)| c);
        Err(Error::new(
            ErrorKind::from_category(category),
            format!(
                "only {usable} of {} nodes are usable, {} needed",
                self.n(),
                quorum(self.n())
            ),
        )
        .with_report(tally.into_round().into_report()))
    }

    /// Sends `cmd` to node `i` now (unless the node may not carry `traffic`: then the
    /// refusal comes back without I/O), scripts by SHA-1 first, except those that go out
    /// whole ([`Command::goes_whole`]: a second request after `NOSCRIPT` could land behind
    /// the driver's next request on the connection).
    pub fn request(
        self: &Rc<Self>,
        i: usize,
        cmd: &Command,
        traffic: Traffic,
    ) -> Local<Result<Reply, Failure>> {
        if let Err(f) = self.gate(i, traffic) {
            return Box::pin(async move { Err(f) });
        }
        let Command::Eval { script, keys, args } = cmd else {
            return Box::pin(self.transport.request(i, &cmd.argv()));
        };
        if cmd.goes_whole() {
            return Box::pin(self.transport.request(i, &cmd.argv()));
        }
        let sha = self.shas.get(script).cloned().unwrap_or_default();
        let mut argv = vec![
            b"EVALSHA".to_vec(),
            sha.into_bytes(),
            keys.len().to_string().into_bytes(),
        ];
        argv.extend(keys.iter().cloned());
        argv.extend(args.iter().cloned());
        let first = self.transport.request(i, &argv);
        let me = self.clone();
        let script = *script;
        Box::pin(async move {
            match first.await {
                Err((_, text)) if text.starts_with("NOSCRIPT") => {
                    // The whole script ([`Command::argv`]) goes out only after a NOSCRIPT.
                    argv[0] = b"EVAL".to_vec();
                    argv[1] = script.source().as_bytes().to_vec();
                    me.transport.request(i, &argv).await
                }
                other => other,
            }
        })
    }

    /// One round: `cmd` to each of `nodes` (all written before any reply is read), each
    /// reply read by `read`, decided by `decide` or at `timeout`.
    pub async fn round(
        self: &Rc<Self>,
        nodes: &[usize],
        decide: Decide,
        timeout: Duration,
        traffic: Traffic,
        cmd: &Command,
        read: impl Fn(&Reply) -> Answer,
    ) -> Round {
        let start = now_us();
        let mut tally = Tally::new(
            nodes.iter().map(|&i| (i, self.address(i))),
            decide,
            start,
            timeout,
        );
        let mut inflight: FuturesUnordered<_> = nodes
            .iter()
            .map(|&i| {
                let f = self.request(i, cmd, traffic);
                async move { (i, f.await) }
            })
            .collect();
        let mut sleep = Sleep::until(tally.deadline_us(), false);
        while !tally.is_decided() {
            let event = std::future::poll_fn(|cx| {
                if let Poll::Ready(Some(r)) = inflight.poll_next_unpin(cx) {
                    return Poll::Ready(Some(r));
                }
                if Pin::new(&mut sleep).poll(cx).is_ready() {
                    return Poll::Ready(None);
                }
                Poll::Pending
            })
            .await;
            let now = now_us();
            match event {
                Some((i, reply)) => {
                    tally.record(i, reply.and_then(|r| read(&r)), now);
                }
                None => {
                    tally.expire(now);
                    if !tally.is_decided() {
                        sleep = Sleep::until(tally.deadline_us(), false);
                    }
                }
            }
        }
        tally.into_round()
    }

    /// Releases `value` on `nodes` (compare-and-delete), each bounded by `timeout`, telling
    /// waiters as [`Inner::notify`] says. Nodes whose ACL refuses the keys of a release that
    /// declares waiter flags and lines are released again without them, and so is every
    /// later release (REDLOCK.md §9).
    pub async fn release_on(
        self: &Rc<Self>,
        nodes: &[usize],
        keys: &[Vec<u8>],
        value: &str,
        timeout: Duration,
    ) -> Report {
        let notify = self.notify();
        let report = self
            .release_round(nodes, keys, value, timeout, notify)
            .await;
        let refused: Vec<usize> = report
            .nodes()
            .iter()
            .filter(|r| command::refused_flags(keys, notify, r.kind))
            .map(|r| r.index)
            .collect();
        if refused.is_empty() {
            return report;
        }
        self.flagless.set(true);
        let again = self
            .release_round(&refused, keys, value, timeout, notify.without_flags())
            .await;
        let merged = report
            .nodes()
            .iter()
            .map(|r| {
                again
                    .nodes()
                    .iter()
                    .find(|a| a.index == r.index && refused.contains(&r.index))
                    .unwrap_or(r)
                    .clone()
            })
            .collect();
        Report::new(merged)
    }

    async fn release_round(
        self: &Rc<Self>,
        nodes: &[usize],
        keys: &[Vec<u8>],
        value: &str,
        timeout: Duration,
        notify: command::Notify,
    ) -> Report {
        let n = keys.len();
        let cmd = command::release(keys, value, notify);
        self.round(nodes, Decide::All, timeout, Traffic::Any, &cmd, |r| {
            command::read_release(r, n)
                .map(|(deleted, other)| command::release_kind(deleted, other, n))
        })
        .await
        .into_report()
    }

    /// How this client's releases tell waiters (REDLOCK.md §9): without waiter flags and
    /// lines once a node refused them.
    pub fn notify(&self) -> command::Notify {
        let notify = command::Notify::of(self.s.notify, self.s.key_format);
        if self.flagless.get() {
            notify.without_flags()
        } else {
            notify
        }
    }

    /// A new waiter id of this client ([`command::waiter_id`]).
    pub fn waiter_id(&self) -> Vec<u8> {
        let n = self.waiters.get();
        self.waiters.set(n.wrapping_add(1));
        command::waiter_id(&self.client, n)
    }

    /// Every node index.
    pub fn all(&self) -> Vec<usize> {
        (0..self.n()).collect()
    }
}
