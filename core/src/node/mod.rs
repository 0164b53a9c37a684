//! One Redis master: its multiplexed connection (opened at start-up, re-opened in the
//! background after it breaks), the connect-time checks that decide whether the node may
//! carry lock traffic (restart quarantine, eviction policy, role, cluster mode, duplicate
//! server), the requests the engine sends and the classification of their errors.

pub(crate) mod notify;
mod ops;
pub(crate) mod probe;
pub(crate) mod scripts;
mod slots;
pub(crate) mod target;
pub(crate) mod tls;
mod writes;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use redis::{Cmd, ErrorKind as RedisKind, RedisError, ServerErrorKind, Value};
use tokio::runtime::Handle;

use crate::clock::MonoTime;
use crate::report::NodeKind;
use crate::warning::{Warning, WarningKind};
use probe::{Checks, Probe};
use quorumlock_proto::command::{Command, Reply};
pub(crate) use target::Target;
#[cfg(test)]
use target::display_address;
use target::{Conn, reply};

/// How long an echo check of a connection waits for its reply.
const VERIFY_BOUND: Duration = Duration::from_secs(30);

/// One of the protocol's commands built once for every node of a round (the same keys and
/// arguments go to each node): its redis-rs form, `EVALSHA` for a script, is shared by the
/// nodes' connections instead of being rebuilt per node.
pub(crate) struct Prepared {
    command: Command,
    cmd: Cmd,
    script: bool,
}

impl Prepared {
    pub(crate) fn new(command: Command) -> Arc<Self> {
        let (cmd, script) = scripts::cmd(&command, false);
        Arc::new(Self {
            command,
            cmd,
            script,
        })
    }
}

/// A failed request on one node: the kind and a short text.
pub(crate) type NodeFailure = (NodeKind, String);

/// What a request is for: lock traffic (acquire, extend) goes only to usable nodes; other
/// traffic (release, administration) goes to every connected node.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Traffic {
    Lock,
    /// Fenced lock traffic: like `Lock`, and a node whose uptime could not be read counts
    /// as quarantined unless the quarantine is off (REDLOCK.md §7.4).
    Fenced,
    Any,
}

/// One live connection and what the connect-time probe found.
struct Link {
    conn: Conn,
    id: u64,
    probe: Probe,
    /// When the probe ran; it is re-run after `Checks::reprobe_every` (REDLOCK.md §8.2:
    /// `CONFIG SET` can change persistence and eviction at run time).
    probed_at: MonoTime,
    reprobing: AtomicBool,
    /// An echo check of this connection is in flight (see `Node::verify_connection`).
    verifying: AtomicBool,
}

impl Link {
    fn new(conn: Conn, id: u64, probe: Probe) -> Arc<Self> {
        Arc::new(Self {
            conn,
            id,
            probe,
            probed_at: MonoTime::now(),
            reprobing: AtomicBool::new(false),
            verifying: AtomicBool::new(false),
        })
    }
}

enum State {
    /// No connection; the last failure, if any. A reconnect loop runs while `reconnecting`.
    Down {
        last: Option<NodeFailure>,
        reconnecting: bool,
    },
    Up(Arc<Link>),
}

/// Which run ids the nodes of one client reported, to find one server listed twice.
#[derive(Default)]
pub(crate) struct RunIds(Mutex<Vec<Vec<String>>>);

impl RunIds {
    pub(crate) fn new(n: usize) -> Self {
        Self(Mutex::new(vec![Vec::new(); n]))
    }

    /// The run ids of a member's servers (one, or every primary of a cluster).
    fn set(&self, index: usize, run_ids: Vec<String>) {
        if let Some(slot) = lock(&self.0).get_mut(index) {
            *slot = run_ids;
        }
    }

    /// The first node before `index` that is the same server, if any: that one counts and
    /// this one does not, so the server votes once.
    fn duplicate_of(&self, index: usize) -> Option<usize> {
        let ids = lock(&self.0);
        let mine = ids.get(index)?;
        ids.iter()
            .take(index)
            .position(|theirs| theirs.iter().any(|id| mine.contains(id)))
    }
}

/// One configured lock node.
pub(crate) struct Node {
    pub(crate) index: usize,
    pub(crate) address: String,
    target: Target,
    checks: Arc<Checks>,
    run_ids: Arc<RunIds>,
    runtime: Handle,
    me: Weak<Node>,
    next_id: AtomicU64,
    state: Mutex<State>,
    /// What this node answered over the client's life.
    pub(crate) stats: crate::metrics::NodeStats,
    /// A cluster member's acquisitions in flight, which its releases, extends and raises of
    /// the same value wait for.
    writes: writes::Writes,
    /// Set once this node refused a release that declares waiter flags and lines (`NOPERM`: a
    /// key pattern without them); its releases then publish every deleted key.
    flagless: std::sync::atomic::AtomicBool,
    /// Rung by a request that found the node without a connection: the reconnect loop dials
    /// again soon (at most every [`REDIAL_EVERY`]) instead of sleeping out its backoff.
    redial: Arc<tokio::sync::Notify>,
}

/// How often a reconnect loop dials while requests keep finding the node down; without
/// requests it backs off from 20 ms to 1 s.
const REDIAL_EVERY: Duration = Duration::from_millis(100);
/// The longest pause between two dials of a reconnect loop.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

impl Node {
    pub(crate) fn new(
        index: usize,
        target: Target,
        checks: Arc<Checks>,
        run_ids: Arc<RunIds>,
        runtime: Handle,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            index,
            address: target.display(),
            target,
            checks,
            run_ids,
            runtime,
            me: me.clone(),
            next_id: AtomicU64::new(1),
            state: Mutex::new(State::Down {
                last: None,
                reconnecting: false,
            }),
            stats: crate::metrics::NodeStats::default(),
            writes: writes::Writes::default(),
            flagless: std::sync::atomic::AtomicBool::new(false),
            redial: Arc::new(tokio::sync::Notify::new()),
        })
    }

    /// Connects and probes once; on failure records why. True when connected.
    pub(crate) async fn connect_once(&self) -> bool {
        let timeout = self.checks.connect_timeout;
        let attempt = tokio::time::timeout(timeout.saturating_mul(2), async {
            let mut conn = self.target.connect(timeout).await?;
            let probe = probe::probe(&mut conn, &self.checks, (self.index, &self.address)).await?;
            Ok::<_, RedisError>((conn, probe))
        })
        .await;
        let failure = match attempt {
            Ok(Ok((conn, probe))) => {
                self.run_ids.set(self.index, probe.run_ids.clone());
                let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(node = self.index, address = %self.address, ?probe, "connected");
                *lock(&self.state) = State::Up(Link::new(conn, id, probe));
                return true;
            }
            Ok(Err(e)) => classify(&e),
            Err(_) => (
                NodeKind::Timeout,
                format!("no connection within {timeout:?}"),
            ),
        };
        tracing::debug!(node = self.index, address = %self.address, kind = %failure.0, text = %failure.1, "connect failed");
        if let State::Down { last, .. } = &mut *lock(&self.state) {
            *last = Some(failure);
        }
        false
    }

    /// Re-reads the node's settings on `link` in the background and swaps in the new probe;
    /// the request that noticed the old probe's age proceeds with it.
    fn spawn_reprobe(&self, link: &Arc<Link>) {
        let weak = self.me.clone();
        let link = link.clone();
        let (mut conn, id) = (link.conn.clone(), link.id);
        self.runtime.spawn(async move {
            let Some(node) = weak.upgrade() else { return };
            let timeout = node.checks.connect_timeout.saturating_mul(2);
            // After a failure, the next try comes one period later.
            let retry_later = |node: Arc<Node>| async move {
                tokio::time::sleep(node.checks.reprobe_every).await;
                link.reprobing.store(false, Ordering::Relaxed);
            };
            let probe = probe::probe(&mut conn, &node.checks, (node.index, &node.address));
            let result = tokio::time::timeout(timeout, probe).await;
            let probe = match result {
                Ok(Ok(p)) => p,
                Ok(Err(e)) if e.is_io_error() || e.is_unrecoverable_error() => {
                    node.mark_down(id, &classify(&e));
                    return;
                }
                Ok(Err(e)) => {
                    tracing::debug!(node = node.index, error = %e, "re-probe failed; keeping the last probe");
                    return retry_later(node).await;
                }
                Err(_) => {
                    tracing::debug!(node = node.index, "re-probe timed out; keeping the last probe");
                    return retry_later(node).await;
                }
            };
            tracing::debug!(node = node.index, ?probe, "re-probed");
            node.run_ids.set(node.index, probe.run_ids.clone());
            let mut st = lock(&node.state);
            if matches!(&*st, State::Up(l) if l.id == id) {
                *st = State::Up(Link::new(conn, id, probe));
            }
        });
    }

    /// Starts the background reconnect loop unless the node is up or one already runs.
    pub(crate) fn ensure_reconnecting(&self) {
        {
            let mut st = lock(&self.state);
            match &mut *st {
                State::Up(_)
                | State::Down {
                    reconnecting: true, ..
                } => return,
                State::Down { reconnecting, .. } => *reconnecting = true,
            }
        }
        let (weak, redial) = (self.me.clone(), self.redial.clone());
        self.runtime.spawn(async move {
            let mut backoff = Duration::from_millis(20);
            loop {
                let since = MonoTime::now();
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    () = redial.notified() => {
                        // A caller needs the node: dial at most every REDIAL_EVERY, never
                        // later than the backoff.
                        let waited = MonoTime::now() - since;
                        let pause = REDIAL_EVERY.min(backoff).saturating_sub(waited);
                        tokio::time::sleep(pause).await;
                    }
                }
                let Some(node) = weak.upgrade() else { return };
                if node.connect_once().await {
                    return;
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        });
    }

    /// The connection broke: forget it (if it is still the current one) and reconnect.
    fn mark_down(&self, id: u64, failure: &NodeFailure) {
        {
            let mut st = lock(&self.state);
            match &*st {
                State::Up(link) if link.id == id => {}
                _ => return,
            }
            tracing::debug!(node = self.index, kind = %failure.0, "connection lost; reconnecting");
            *st = State::Down {
                last: Some(failure.clone()),
                reconnecting: false,
            };
        }
        self.ensure_reconnecting();
    }

    /// A request on this node got no reply in time: check that the connection is still in
    /// step (REDLOCK.md §2.7). A late reply is harmless, since the multiplexer keeps the
    /// abandoned slot and discards it. But a request that never gets a reply (discarded on
    /// the way, which TCP itself never does but a faulty middlebox can) would shift every
    /// later reply onto the wrong request. So an echo `PING <nonce>` is queued behind the
    /// late request: its own nonce back means the connection is in step; any other reply
    /// means replies are shifted, and the connection is dropped. A slow or briefly paused node
    /// just answers late, and its connection is kept, so that each failed attempt's cleanup
    /// still runs after the attempt's own requests on the same connection. No reply at all
    /// within `VERIFY_BOUND` also drops the connection: the requests queued on it (and any
    /// endless reply being read) would otherwise hold memory for as long as it lives.
    pub(crate) fn verify_connection(&self) {
        let link = match &*lock(&self.state) {
            // A cluster connection has one connection per node, each with its own queue:
            // an echo on one of them tells nothing about the others.
            State::Up(link) if !self.target.is_cluster() => link.clone(),
            State::Up(_) | State::Down { .. } => return,
        };
        if link.verifying.swap(true, Ordering::Relaxed) {
            return;
        }
        let nonce = format!(
            "quorumlock-verify-{}",
            self.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let weak = self.me.clone();
        self.runtime.spawn(async move {
            let mut conn = link.conn.clone();
            let mut ping = redis::cmd("PING");
            ping.arg(&nonce);
            let r = tokio::time::timeout(VERIFY_BOUND, conn.send(&ping)).await;
            let in_step = match &r {
                Ok(Ok(Value::BulkString(b))) => b.as_slice() == nonce.as_bytes(),
                Ok(Ok(Value::SimpleString(s))) => *s == nonce,
                // No reply in VERIFY_BOUND: the node may be paused, or it never answers (a
                // hostile or wedged server, an endless reply). Every request sent since stays
                // queued on the connection, and a half-read reply keeps growing, for as long as
                // the connection lives: replace it (TESTING.md §3.6). A paused node's queued
                // requests were already written; the reconnect costs one connect.
                Err(_) => false,
                Ok(Err(e)) if e.is_io_error() || e.is_connection_dropped() => true,
                Ok(_) => false,
            };
            link.verifying.store(false, Ordering::Relaxed);
            if !in_step && let Some(node) = weak.upgrade() {
                let failure = if r.is_err() {
                    tracing::warn!(node = node.index, "no reply to an echo check within {VERIFY_BOUND:?}; reconnecting");
                    (
                        NodeKind::Timeout,
                        format!("no reply within {VERIFY_BOUND:?}; reconnecting"),
                    )
                } else {
                    tracing::warn!(node = node.index, reply = ?r, "replies on this connection are out of step (a request was lost on the way); reconnecting");
                    (
                        NodeKind::Protocol,
                        "replies were out of step; reconnecting".to_owned(),
                    )
                };
                node.mark_down(link.id, &failure);
            }
        });
    }

    /// Whether this member is a Redis Cluster.
    pub(crate) fn is_cluster(&self) -> bool {
        self.target.is_cluster()
    }

    /// Why the node cannot carry lock traffic now, if it cannot.
    pub(crate) fn unusable(&self) -> Option<NodeFailure> {
        self.link(Traffic::Lock).err()
    }

    fn link(&self, traffic: Traffic) -> Result<Arc<Link>, NodeFailure> {
        let link = match &*lock(&self.state) {
            State::Up(link) => link.clone(),
            State::Down { last, .. } => {
                self.redial.notify_one();
                return Err(match last {
                    // Keep the real cause (refused, auth, ...) visible in reports.
                    Some((kind, text)) => (*kind, format!("not connected: {text}")),
                    None => (NodeKind::NotConnected, "not connected yet".to_owned()),
                });
            }
        };
        // One clock read per request: the reprobe interval and the restart quarantine.
        let now = MonoTime::now();
        if now - link.probed_at >= self.checks.reprobe_every
            && !link.reprobing.swap(true, Ordering::Relaxed)
        {
            self.spawn_reprobe(&link);
        }
        if traffic == Traffic::Fenced && link.probe.uptime_unknown {
            return Err((
                NodeKind::Quarantined,
                "the node's uptime cannot be read (INFO refused); fenced locks do not count it"
                    .to_owned(),
            ));
        }
        if traffic != Traffic::Any {
            if let Some(f) = &link.probe.unusable {
                return Err(f.clone());
            }
            if let Some(first) = self.run_ids.duplicate_of(self.index) {
                let text = format!(
                    "the same server as node #{first} (same run_id); it counts once, as node #{first}"
                );
                self.checks.warner.warn(Warning::new(
                    WarningKind::DuplicateNode,
                    Some((self.index, &self.address)),
                    format!(
                        "{text}; list each server once (db 0 and db 1 of one server are one master)"
                    ),
                ));
                return Err((NodeKind::Duplicate, text));
            }
            if now < link.probe.ready_at {
                let wait = link.probe.ready_at.saturating_since(now);
                return Err((
                    NodeKind::Quarantined,
                    format!(
                        "up {} s without durable writes; counted in {:.1} s (restart quarantine). To count it now, make its writes durable (appendonly yes, appendfsync always) or, for test set-ups, turn the quarantine off",
                        link.probe.uptime.as_secs(),
                        wait.as_secs_f64()
                    ),
                ));
            }
        }
        Ok(link)
    }

    /// Sends one command and returns its reply. Error replies become failures; a broken
    /// connection is replaced in the background.
    pub(crate) async fn send(&self, cmd: &Cmd, traffic: Traffic) -> Result<Value, NodeFailure> {
        let link = self.link(traffic)?;
        let mut conn = link.conn.clone();
        let r = reply(conn.send(cmd).await);
        self.finish(&link, r)
    }

    /// Runs one of the protocol's commands: scripts by SHA-1, falling back once to `EVAL` on
    /// `NOSCRIPT`. The reply comes back as the protocol's.
    pub(crate) async fn run(
        &self,
        command: &Command,
        traffic: Traffic,
    ) -> Result<Reply, NodeFailure> {
        let link = self.link(traffic)?;
        let (first, script) = scripts::cmd(command, false);
        self.run_on(&link, command, &first, script).await
    }

    /// [`run`](Self::run) with a command built once for every node of a round.
    pub(crate) async fn run_prepared(
        &self,
        prepared: &Prepared,
        traffic: Traffic,
    ) -> Result<Reply, NodeFailure> {
        let link = self.link(traffic)?;
        let (command, first, script) = (&prepared.command, &prepared.cmd, prepared.script);
        self.run_on(&link, command, first, script).await
    }

    async fn run_on(
        &self,
        link: &Link,
        command: &Command,
        first: &Cmd,
        script: bool,
    ) -> Result<Reply, NodeFailure> {
        let mut conn = link.conn.clone();
        // The first reply is bound before it is matched, and the rare re-send is boxed: the
        // future, built for every node of every round, then holds one send, not two.
        let first = reply(conn.send(first).await);
        let r = match first {
            Err(e) if script && e.kind() == RedisKind::Server(ServerErrorKind::NoScript) => {
                let again = scripts::cmd(command, true).0;
                reply(Box::pin(conn.send(&again)).await)
            }
            other => other,
        };
        self.finish(link, r).map(scripts::reply)
    }

    fn finish(&self, link: &Link, r: redis::RedisResult<Value>) -> Result<Value, NodeFailure> {
        r.map_err(|e| {
            let failure = classify(&e);
            // A cluster connection reconnects to each of its nodes by itself.
            let broken = e.is_io_error() || e.is_unrecoverable_error() || e.is_connection_dropped();
            if broken && !self.target.is_cluster() {
                self.mark_down(link.id, &failure);
            }
            failure
        })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned state mutex only means a panic elsewhere while holding it; the state itself
    // is always a complete value, so keep using it.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Maps a redis-rs error to a node kind and a short text (REDLOCK.md §10).
pub(crate) fn classify(e: &RedisError) -> NodeFailure {
    let text = e.to_string();
    let kind = match e.kind() {
        RedisKind::AuthenticationFailed => NodeKind::Auth,
        RedisKind::Io => {
            let lower = text.to_ascii_lowercase();
            if e.is_connection_refusal() || lower.contains("connection refused") {
                NodeKind::ConnectionRefused
            } else if lower.contains("tls") || lower.contains("certificate") {
                NodeKind::Tls
            } else {
                NodeKind::ConnectionLost
            }
        }
        RedisKind::Parse | RedisKind::UnexpectedReturnType => NodeKind::Protocol,
        RedisKind::Server(ServerErrorKind::NoPerm) => NodeKind::NoPermission,
        RedisKind::Server(ServerErrorKind::ReadOnly) => NodeKind::ReadOnly,
        RedisKind::Server(ServerErrorKind::BusyLoading) => NodeKind::Loading,
        RedisKind::Server(ServerErrorKind::NoScript) => NodeKind::Script,
        RedisKind::Server(
            ServerErrorKind::Moved
            | ServerErrorKind::Ask
            | ServerErrorKind::CrossSlot
            | ServerErrorKind::ClusterDown
            | ServerErrorKind::TryAgain
            | ServerErrorKind::MasterDown,
        ) => NodeKind::ClusterUnsupported,
        _ => by_code(e.code().unwrap_or(""), &text),
    };
    (kind, text)
}

fn by_code(code: &str, text: &str) -> NodeKind {
    quorumlock_proto::command::error_kind(code, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_kinds() {
        assert_eq!(by_code("WRONGPASS", ""), NodeKind::Auth);
        assert_eq!(by_code("NOAUTH", ""), NodeKind::Auth);
        assert_eq!(by_code("OOM", ""), NodeKind::OutOfMemory);
        assert_eq!(by_code("BUSY", ""), NodeKind::ServerBusy);
        assert_eq!(by_code("WRONGTYPE", ""), NodeKind::WrongType);
        assert_eq!(
            by_code("ERR", "Error running script (call to f_x)"),
            NodeKind::Script
        );
        assert_eq!(by_code("ERR", "unknown command"), NodeKind::Other);
    }

    #[test]
    fn addresses_hide_credentials() {
        let c = redis::Client::open("redis://user:s3cret@127.0.0.1:6390/2").unwrap();
        let a = display_address(&c);
        assert_eq!(a, "127.0.0.1:6390/2");
        assert!(!a.contains("s3cret"));
    }
}
