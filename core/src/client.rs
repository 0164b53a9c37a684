//! The client: N independent Redis masters, their connections, the timing settings, and the
//! entry point of every operation.

use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;

use crate::batch::Batcher;
use crate::cancel::CancelToken;
use crate::config::{
    self, ClientSettings, EvictionCheck, KeyFormat, LockOptions, Quarantine, Timing,
};
use crate::error::{Error, ErrorKind, Result};
use crate::lock::Lock;
use crate::metrics::{ClientStats, Metrics};
use crate::node::notify::Notifier;
use crate::node::probe::Checks;
use crate::node::{Node, RunIds, Target, target};
use crate::quorum::{self, Decide};
use crate::report::{NodeKind, NodeResult, Report};
use crate::warning::{Warner, Warning, WarningHook, WarningKind};
use quorumlock_proto::acquisition::Member;

/// What every operation of a client shares.
pub(crate) struct Inner {
    pub(crate) nodes: Vec<Arc<Node>>,
    /// The nodes as the protocol's acquisition sees them.
    pub(crate) members: Arc<[Member]>,
    pub(crate) timing: Timing,
    pub(crate) prefix: Vec<u8>,
    pub(crate) key_format: KeyFormat,
    pub(crate) defaults: LockOptions,
    pub(crate) runtime: Handle,
    pub(crate) stats: ClientStats,
    /// Bounds the automatic extensions in flight at once (see `watchdog`).
    pub(crate) extend_permits: tokio::sync::Semaphore,
    /// Sends the automatic extensions in batches; started with the first one.
    batcher: std::sync::OnceLock<Batcher>,
    /// How releases tell waiters (REDLOCK.md §9): off, every time (bare keys), or while a
    /// waiter flag exists, the first waiter in line (braced keys).
    pub(crate) notify: quorumlock_proto::command::Notify,
    /// The subscribers waiting acquisitions listen through; `None` with notification off.
    pub(crate) notifier: Option<Arc<Notifier>>,
    pid: u32,
}

impl Inner {
    pub(crate) fn quorum(&self) -> usize {
        quorum::quorum(self.nodes.len())
    }

    /// Handles belong to the process that created them; after `fork()` they must not write
    /// to the inherited sockets.
    pub(crate) fn check_process(&self) -> Result<()> {
        if std::process::id() == self.pid {
            Ok(())
        } else {
            Err(Error::invalid(
                "this client was created in another process (before fork()); create a new client in this process",
            ))
        }
    }

    /// The client's extension batcher (started on first use).
    pub(crate) fn batcher(&self) -> &Batcher {
        self.batcher
            .get_or_init(|| Batcher::start(&self.runtime, self.nodes.clone()))
    }

    /// `<prefix>{<resource>}`, or `<prefix><resource>` with [`KeyFormat::Bare`].
    pub(crate) fn key(&self, resource: &[u8]) -> Vec<u8> {
        self.key_format.key(&self.prefix, resource)
    }
}

/// A Redlock client over N independent Redis masters. Cheap to clone; clones share the
/// connections.
///
/// ```no_run
/// # async fn demo() -> quorumlock::Result<()> {
/// let client = quorumlock::Client::connect([
///     "redis://127.0.0.1:7001", "redis://127.0.0.1:7002", "redis://127.0.0.1:7003",
/// ]).await?;
/// let lock = client.acquire(["invoice:7"]).await?;
/// // ... act only while lock.remaining() > 0 ...
/// let report = lock.release().await?;
/// assert!(report.was_held_by_quorum());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let addrs: Vec<&str> = self
            .inner
            .nodes
            .iter()
            .map(|n| n.address.as_str())
            .collect();
        f.debug_struct("Client").field("nodes", &addrs).finish()
    }
}

enum NodeSpec {
    Url(String),
    Client(Box<redis::Client>),
}

/// Builds a [`Client`]; see [`Client::builder`].
#[must_use]
#[derive(Default)]
pub struct ClientBuilder {
    nodes: Vec<NodeSpec>,
    settings: ClientSettings,
    defaults: LockOptions,
    on_warning: Option<WarningHook>,
}

impl ClientBuilder {
    /// Adds a node by URL: `redis://[user:password@]host:port[/db]`, `rediss://...` for TLS,
    /// `?protocol=resp3` for RESP3. With TLS, `?tls_ca=PATH` names the CA file (PEM) that
    /// signs the server's certificate (default: the system's trust store), and
    /// `tls_cert=PATH&tls_key=PATH` a client certificate and key (mTLS); paths are
    /// percent-encoded. A `#fragment` (redis-rs's `#insecure`) is refused: there is no
    /// insecure mode (docs/SECURITY.md). A Redis Cluster is one member:
    /// `redis+cluster://[user:password@]host:port,host:port,...` (`rediss+cluster://` for
    /// TLS) lists some of its nodes; keys route by hash slot, and the member votes for a lock
    /// only when every resource's primary accepted it.
    pub fn node(mut self, url: impl Into<String>) -> Self {
        self.nodes.push(NodeSpec::Url(url.into()));
        self
    }
    /// Adds several nodes by URL.
    pub fn nodes<I, S>(mut self, urls: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.nodes
            .extend(urls.into_iter().map(|u| NodeSpec::Url(u.into())));
        self
    }
    /// Adds a node from an already configured `redis::Client` (TLS certificates, auth, RESP
    /// version). A client that skips certificate checks (`#insecure`) is refused when
    /// connecting.
    pub fn redis_client(mut self, client: redis::Client) -> Self {
        self.nodes.push(NodeSpec::Client(Box::new(client)));
        self
    }
    /// Drift factor `d` (default 0.01); must be in `0.0..0.5`.
    pub fn drift_factor(mut self, d: f64) -> Self {
        self.settings.drift_factor = d;
        self
    }
    /// Drift constant `c` (default 2 ms).
    pub fn drift_constant(mut self, c: Duration) -> Self {
        self.settings.drift_constant = c;
        self
    }
    /// Upper bound for any TTL (default 60 s, at most [`crate::MAX_TTL_LIMIT`]). All clients
    /// of the same nodes must agree.
    pub fn max_ttl(mut self, d: Duration) -> Self {
        self.settings.max_ttl = d;
        self
    }
    /// How long [`connect`](Self::connect) waits for the first connections (default 1 s).
    /// Nodes not connected by then keep connecting in the background.
    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.settings.connect_timeout = d;
        self
    }
    /// Key prefix (default `quorumlock:`); lock keys are `<prefix>{<resource>}`.
    pub fn key_prefix(mut self, prefix: impl AsRef<[u8]>) -> Self {
        self.settings.key_prefix = prefix.as_ref().to_vec();
        self
    }
    /// How resource names become keys (default [`KeyFormat::Braced`]). Compatibility layers
    /// use [`KeyFormat::Bare`] with an empty prefix to share keys with the libraries they
    /// replace.
    pub fn key_format(mut self, format: KeyFormat) -> Self {
        self.settings.key_format = format;
        self
    }
    /// Every client setting at once (see `docs/options.md`), replacing those set before;
    /// bindings fill a [`ClientSettings`] by name with [`ClientSettings::set`].
    pub fn settings(mut self, settings: ClientSettings) -> Self {
        self.settings = settings;
        self
    }
    /// Default options for [`Client::acquire`].
    pub fn lock_options(mut self, opts: LockOptions) -> Self {
        self.defaults = opts;
        self
    }
    /// Release notification (REDLOCK.md §9; default on): releases publish on
    /// `<lock key>:released`, and an acquisition that has to wait listens there, so a release
    /// cuts its retry delay short. Off: releases publish nothing and waiters only poll.
    /// Notifications are hints; safety never depends on them.
    pub fn notify(mut self, on: bool) -> Self {
        self.settings.notify = on;
        self
    }

    /// How often a connection's settings (uptime, persistence, eviction policy, role) are
    /// read again (default 60 s), since `CONFIG SET` can change them at run time. The
    /// re-read runs in the background when a request finds the last one older than this.
    pub fn reprobe_every(mut self, d: Duration) -> Self {
        self.settings.reprobe_every = d;
        self
    }

    /// Fail [`connect`](Self::connect) unless a quorum of nodes connected (default off: the
    /// client starts and nodes join as they come up).
    pub fn require_quorum(mut self, on: bool) -> Self {
        self.settings.require_quorum = on;
        self
    }

    /// Restart quarantine mode (default [`Quarantine::On`]): a node that restarted without
    /// durable writes is not counted until it has been up for `max_ttl + quarantine_margin`.
    pub fn quarantine(mut self, mode: Quarantine) -> Self {
        self.settings.quarantine = mode;
        self
    }
    /// Extra quarantine time beyond `max_ttl` (default 5 s).
    pub fn quarantine_margin(mut self, d: Duration) -> Self {
        self.settings.quarantine_margin = d;
        self
    }
    /// What to do with nodes whose eviction policy can remove lock keys (default
    /// [`EvictionCheck::Refuse`]).
    pub fn eviction_check(mut self, mode: EvictionCheck) -> Self {
        self.settings.eviction_check = mode;
        self
    }

    /// Calls `hook` with each [`Warning`] (once per kind and node), besides logging it as a
    /// `tracing` warning: a node counted without durable writes while the quarantine is off,
    /// one server listed twice, `INFO` refused, an evicting node with `EvictionCheck::Warn`,
    /// release notification denied. The hook runs on the client's runtime and must not block.
    pub fn on_warning(mut self, hook: impl Fn(&Warning) + Send + Sync + 'static) -> Self {
        self.on_warning = Some(Arc::new(hook));
        self
    }

    /// Validates the settings; returns the timing, one client per distinct server and the
    /// warnings about servers listed more than once (the later entries are dropped).
    pub(crate) fn check(&self) -> Result<(Timing, Vec<Target>, Vec<Warning>)> {
        if self.nodes.is_empty() {
            return Err(Error::invalid("at least one node is required"));
        }
        self.settings.check()?;
        let mut targets: Vec<Target> = Vec::with_capacity(self.nodes.len());
        let mut warnings = Vec::new();
        for (i, spec) in self.nodes.iter().enumerate() {
            let target = match spec {
                NodeSpec::Client(c) => {
                    target::tls::refuse_insecure(c)
                        .map_err(|e| Error::invalid(format!("node #{i}: {e}")))?;
                    Target::Single((**c).clone())
                }
                NodeSpec::Url(url) => parse_url(i, url, self.settings.connect_timeout)?,
            };
            let servers = target.servers();
            let same = |t: &Target| t.servers().iter().any(|s| servers.contains(s));
            if let Some(first) = targets.iter().position(same) {
                warnings.push(Warning::new(
                    WarningKind::DuplicateNode,
                    Some((first, &targets[first].display())),
                    format!(
                        "entry #{i} ({}) is the same server as node #{first} ({}) and counts once, as node #{first}; list each server once (db 0 and db 1 of one server are one master, not two)",
                        target.display(),
                        targets[first].display()
                    ),
                ));
                continue;
            }
            targets.push(target);
        }
        let timing = self.settings.timing();
        timing.check(&self.defaults, self.defaults.get_ttl())?;
        Ok((timing, targets, warnings))
    }

    /// Validates the configuration, opens one connection per node (in parallel, waiting up
    /// to the connect timeout) and returns the client. Nodes that did not connect keep
    /// trying in the background and count as node errors until they do.
    ///
    /// Must be called inside a tokio runtime; the client's background work runs there.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad configuration (nothing is sent); with
    /// [`require_quorum`](Self::require_quorum), `Connection`, `Auth`, `Timeout`, ... when
    /// fewer than a quorum of nodes connected, with the per-node report.
    pub async fn connect(self) -> Result<Client> {
        let (timing, targets, warnings) = self.check()?;
        let runtime = Handle::try_current().map_err(|_| {
            Error::invalid(
                "Client::connect must run inside a tokio runtime (or use quorumlock::blocking)",
            )
        })?;
        let s = self.settings;
        let checks = Arc::new(Checks {
            connect_timeout: s.connect_timeout,
            quarantine: s.quarantine,
            quarantine_period: timing.quarantine_period,
            eviction: s.eviction_check,
            reprobe_every: s.reprobe_every,
            warner: Warner::new(self.on_warning),
        });
        for w in warnings {
            checks.warner.warn(w);
        }
        let run_ids = Arc::new(RunIds::new(targets.len()));
        let nodes: Vec<Arc<Node>> = targets
            .into_iter()
            .enumerate()
            .map(|(i, c)| Node::new(i, c, checks.clone(), run_ids.clone(), runtime.clone()))
            .collect();
        let connected = quorum::round(
            &nodes,
            s.connect_timeout.saturating_mul(2),
            Decide::All,
            |node| async move {
                if !node.connect_once().await {
                    node.ensure_reconnecting();
                }
                node.unusable().map_or(Ok(NodeKind::Ok), Err)
            },
        )
        .await;
        let notifier = s.notify.then(|| Arc::new(Notifier::new(&nodes, &runtime)));
        let members = nodes
            .iter()
            .map(|n| Member {
                address: n.address.clone(),
                cluster: n.is_cluster(),
            })
            .collect();
        let inner = Inner {
            nodes,
            members,
            timing,
            prefix: s.key_prefix,
            key_format: s.key_format,
            defaults: self.defaults,
            runtime,
            stats: ClientStats::default(),
            extend_permits: tokio::sync::Semaphore::new(crate::watchdog::MAX_IN_FLIGHT),
            batcher: std::sync::OnceLock::new(),
            notify: quorumlock_proto::command::Notify::of(s.notify, s.key_format),
            notifier,
            pid: std::process::id(),
        };
        let ok = connected.count(NodeKind::Ok);
        if s.require_quorum && ok < inner.quorum() {
            let report = connected.into_report();
            return Err(connect_error(&report, inner.quorum()));
        }
        Ok(Client {
            inner: Arc::new(inner),
        })
    }
}

fn parse_url(i: usize, url: &str, connect_timeout: Duration) -> Result<Target> {
    // The TLS parameters and the #fragment check come first, for cluster URLs too.
    let split = target::tls::split(url).map_err(|e| Error::invalid(format!("node #{i}: {e}")))?;
    match target::parse_cluster(&split.url, split.certs.clone(), connect_timeout) {
        Ok(Some(cluster)) => return Ok(cluster),
        Ok(None) => {}
        Err(e) => return Err(Error::invalid(format!("node #{i}: {e}"))),
    }
    let lower = split.url.to_ascii_lowercase();
    if ![
        "redis://",
        "rediss://",
        "unix://",
        "redis+unix://",
        "valkey://",
        "valkeys://",
    ]
    .iter()
    .any(|s| lower.starts_with(s))
    {
        return Err(Error::invalid(format!(
            "node #{i}: a node URL must start with redis://, rediss://, unix:// or redis+cluster://"
        )));
    }
    let client = match split.certs {
        Some(certs) => redis::Client::build_with_tls(split.url, certs),
        None => redis::Client::open(split.url),
    };
    client.map(Target::Single).map_err(|e| {
        // The redis error never echoes the URL, so no credentials leak here.
        Error::invalid(format!("node #{i}: invalid node URL ({e})"))
    })
}

/// The error of a connect or ping that reached fewer than `q` nodes: the stage that failed
/// on most unusable nodes (ties to the lowest index) names the kind (ARCHITECTURE.md §4).
pub(crate) fn connect_error(report: &Report, q: usize) -> Error {
    let failures: Vec<&NodeResult> = report
        .nodes()
        .iter()
        .filter(|n| n.kind.is_error())
        .collect();
    let mut best: Option<(ErrorKind, usize)> = None;
    for f in &failures {
        let kind = ErrorKind::from_category(f.kind.category());
        let count = failures
            .iter()
            .filter(|g| ErrorKind::from_category(g.kind.category()) == kind)
            .count();
        if best.is_none_or(|(_, c)| count > c) {
            best = Some((kind, count));
        }
    }
    let kind = best.map_or(ErrorKind::Connection, |(k, _)| k);
    Error::new(
        kind,
        format!(
            "only {} of {} nodes are usable, {q} needed; see the node report",
            report.nodes().len() - failures.len(),
            report.nodes().len()
        ),
    )
    .with_report(report.clone())
}

impl Client {
    /// A builder with the defaults of REDLOCK.md §11.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Connects to the given node URLs with default settings; see [`ClientBuilder::connect`].
    pub async fn connect<I, S>(urls: I) -> Result<Client>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::builder().nodes(urls).connect().await
    }

    /// Number of configured nodes N.
    pub fn node_count(&self) -> usize {
        self.inner.nodes.len()
    }

    /// The quorum `N / 2 + 1`.
    pub fn quorum(&self) -> usize {
        self.inner.quorum()
    }

    /// Node addresses (`host:port/db`), in configuration order.
    pub fn addresses(&self) -> Vec<String> {
        self.inner.nodes.iter().map(|n| n.address.clone()).collect()
    }

    /// A snapshot of this client's counters and latency histograms (shared by its clones):
    /// acquisitions by outcome, extends, releases, losses, wake-ups, and per node the
    /// replies by kind and their latency. [`Metrics::to_prometheus`] renders it as text.
    pub fn metrics(&self) -> Metrics {
        let nodes = self
            .inner
            .nodes
            .iter()
            .map(|n| n.stats.snapshot(n.index, &n.address))
            .collect();
        self.inner.stats.snapshot(nodes)
    }

    /// The default lock options of this client.
    pub fn lock_options(&self) -> &LockOptions {
        &self.inner.defaults
    }

    /// The drift allowance `ttl * d + c` for `ttl`.
    pub fn drift(&self, ttl: Duration) -> Duration {
        self.inner.timing.drift(ttl)
    }

    /// The largest TTL this client accepts.
    pub fn max_ttl(&self) -> Duration {
        self.inner.timing.max_ttl
    }

    /// The Redis key of a resource: `<prefix>{<resource>}`.
    pub fn key(&self, resource: impl AsRef<[u8]>) -> Vec<u8> {
        self.inner.key(resource.as_ref())
    }

    /// Acquires a lock on one or more resources with the client's default options.
    /// See [`acquire_with`](Self::acquire_with).
    pub async fn acquire<I, R>(&self, resources: I) -> Result<Lock>
    where
        I: IntoIterator<Item = R>,
        R: AsRef<[u8]>,
    {
        self.acquire_with(resources, &self.inner.defaults).await
    }

    /// Acquires a lock on one or more resources (all or nothing on each node).
    ///
    /// Each attempt uses a fresh random value, writes to every node in parallel, decides at
    /// the quorum, and succeeds only if the validity left is positive and at least
    /// `min_validity`. A failed attempt is cleaned up on every node before the next. At most
    /// `retry_count + 1` attempts, within the `wait` budget if set. Dropping the future
    /// cancels: the current attempt's keys are released in the background.
    ///
    /// Takes about one round trip to the q-th fastest node per attempt, plus the retry
    /// delays; each attempt is bounded by `node_timeout`.
    ///
    /// # Errors
    /// `InvalidArgument` (nothing sent), `Busy`, `QuorumNotReached`, `ValidityTooShort`,
    /// each with the last attempt's per-node report.
    pub async fn acquire_with<I, R>(&self, resources: I, opts: &LockOptions) -> Result<Lock>
    where
        I: IntoIterator<Item = R>,
        R: AsRef<[u8]>,
    {
        self.inner.check_process()?;
        let resources = config::normalize_resources(resources)?;
        crate::acquire::acquire(&self.inner, resources, opts.clone(), None).await
    }

    /// [`acquire_with`](Self::acquire_with) that gives up when `cancel` is cancelled: the
    /// attempt in flight is abandoned, its keys are released on every node (the call waits
    /// for that release, bounded by `node_timeout`), and the call returns `Cancelled`. A
    /// success decided first is returned instead. A token cancelled before the call sends
    /// nothing.
    ///
    /// # Errors
    /// As [`acquire_with`](Self::acquire_with), plus `Cancelled`.
    pub async fn acquire_cancellable<I, R>(
        &self,
        resources: I,
        opts: &LockOptions,
        cancel: &CancelToken,
    ) -> Result<Lock>
    where
        I: IntoIterator<Item = R>,
        R: AsRef<[u8]>,
    {
        if cancel.is_cancelled() {
            return Err(Error::new(
                ErrorKind::Cancelled,
                "the acquisition was cancelled",
            ));
        }
        self.inner.check_process()?;
        let resources = config::normalize_resources(resources)?;
        crate::acquire::acquire(&self.inner, resources, opts.clone(), Some(cancel)).await
    }

    /// Extends the given resources to `ttl` on every node where they hold `value` (a value
    /// taken from a [`Lock::value`], possibly in another process, or a peer library's value
    /// during a migration) and returns the validity left. Like [`Lock::extend`], keys are
    /// only lengthened, never re-created. Unlike it, there is no local deadline to check:
    /// prefer `Lock::extend` when you have the lock.
    ///
    /// # Errors
    /// `Lost` when the keys are gone or held by another value on too many nodes,
    /// `QuorumNotReached` or `ValidityTooShort` (nothing changed), `InvalidArgument` for an
    /// empty resource set, a bad ttl, or a value shorter than 16 printable characters.
    pub async fn extend_value<I, R>(
        &self,
        resources: I,
        value: &str,
        ttl: Duration,
    ) -> Result<Duration>
    where
        I: IntoIterator<Item = R>,
        R: AsRef<[u8]>,
    {
        self.inner.check_process()?;
        quorumlock_proto::value::check_given(value)?;
        let opts = &self.inner.defaults;
        let ttl_ms = self.inner.timing.check(opts, ttl)?;
        let resources = config::normalize_resources(resources)?;
        let keys: Arc<[Vec<u8>]> = resources.iter().map(|r| self.inner.key(r)).collect();
        let value: Arc<str> = Arc::from(value);
        let t1 = crate::clock::MonoTime::now();
        let round = quorum::round(
            &self.inner.nodes,
            opts.effective_node_timeout(ttl),
            Decide::AtQuorum,
            |node| {
                let (keys, value) = (keys.clone(), value.clone());
                async move { node.extend(&keys, &value, ttl_ms, None).await }
            },
        )
        .await;
        let elapsed = crate::clock::MonoTime::now() - t1;
        use quorumlock_proto::extend::{Verdict, verdict};
        match verdict(&self.inner.timing, opts, round, ttl, elapsed) {
            Verdict::Extended(validity, _) => Ok(validity),
            Verdict::Lost(e) | Verdict::Failed(e) => Err(e),
        }
    }

    /// Releases the given resources on every node where they hold `value` (a value taken
    /// from a [`Lock::value`], possibly in another process). Never touches keys holding
    /// another value.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty resource set or a value shorter than 16 printable
    /// characters. Node failures appear in the report, not as errors.
    pub async fn release_value<I, R>(&self, resources: I, value: &str) -> Result<Report>
    where
        I: IntoIterator<Item = R>,
        R: AsRef<[u8]>,
    {
        self.inner.check_process()?;
        quorumlock_proto::value::check_given(value)?;
        let resources = config::normalize_resources(resources)?;
        let keys: Arc<[Vec<u8>]> = resources.iter().map(|r| self.inner.key(r)).collect();
        let timeout = self
            .inner
            .defaults
            .effective_node_timeout(self.inner.defaults.get_ttl());
        let value: Arc<str> = Arc::from(value);
        Ok(crate::acquire::release_keys(&self.inner, &keys, &value, timeout).await)
    }
}
