//! `connect`, the client object, cancellation handles and the warning listener.

use std::sync::Arc;
use std::time::Duration;

use quorumlock::{CancelToken, Warning};

use crate::config::{ClientConfig, LockConfig};
use crate::error::{NativeError, NodeReport, nodes};
use crate::lock::Lock;
use crate::metrics::Metrics;
use crate::on_runtime;

/// One engine warning (`QL_W_*`), delivered once per kind and node.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct WarningEvent {
    /// The stable code, e.g. `"QL_W_NOT_DURABLE"` (`WarningKind::as_str`).
    pub code: String,
    /// The node's index, when the warning is about one node.
    pub node: Option<u32>,
    /// The node's `host:port/db`, when the warning is about one node.
    pub address: Option<String>,
    /// What is wrong and what to do.
    pub message: String,
}

impl WarningEvent {
    fn of(w: &Warning) -> Self {
        Self {
            code: w.kind().as_str().to_owned(),
            node: w.node().map(|i| u32::try_from(i).unwrap_or(u32::MAX)),
            address: w.address().map(str::to_owned),
            message: w.message().to_owned(),
        }
    }
}

/// Receives engine warnings; implemented by the host language. Called on a blocking-pool
/// thread of the engine, never on a thread that runs lock work.
#[uniffi::export(with_foreign)]
pub trait WarningListener: Send + Sync {
    /// One warning.
    fn on_warning(&self, warning: WarningEvent);
}

/// Calls a foreign callback off the runtime's worker threads, so a slow host callback
/// never stalls lock work.
pub(crate) fn call_foreign(f: impl FnOnce() + Send + 'static) {
    match tokio::runtime::Handle::try_current() {
        Ok(h) => {
            h.spawn_blocking(f);
        }
        Err(_) => f(),
    }
}

/// Connects to the node URLs (`redis://host:port`, `rediss://`, `redis+cluster://...`)
/// with `config`; nodes that do not answer keep reconnecting in the background.
///
/// # Errors
/// `QL_INVALID` for bad settings or URLs (nothing sent); with `require_quorum`,
/// `QL_CONNECTION`, `QL_AUTH`, ... with the per-node report.
#[uniffi::export]
pub async fn connect(
    nodes: Vec<String>,
    config: ClientConfig,
    warnings: Option<Arc<dyn WarningListener>>,
) -> Result<Arc<Client>, NativeError> {
    let mut builder = config.builder(nodes);
    if let Some(listener) = warnings {
        builder = builder.on_warning(move |w| {
            let (listener, event) = (listener.clone(), WarningEvent::of(w));
            call_foreign(move || listener.on_warning(event));
        });
    }
    let inner = on_runtime(builder.connect()).await?;
    Ok(Arc::new(Client { inner }))
}

/// Cancels an acquisition from another thread: the attempt in flight is abandoned and its
/// keys are released on every node before the acquisition returns `QL_CANCELLED`.
#[derive(Debug, Default, uniffi::Object)]
pub struct CancelHandle {
    token: CancelToken,
}

#[uniffi::export]
impl CancelHandle {
    /// A handle not yet cancelled.
    #[uniffi::constructor]
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Cancels (now and for later calls given this handle). Never blocks.
    pub fn cancel(&self) {
        self.token.cancel();
    }

    /// True once cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }
}

/// Cancels its token when dropped before [`disarm`](Self::disarm): a caller that drops the
/// acquire future (a cancelled coroutine) cancels the acquisition, and the engine cleans up.
struct CancelOnDrop(Option<CancelToken>);

impl CancelOnDrop {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            t.cancel();
        }
    }
}

/// One node's view of a resource (`inspect`).
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct Holding {
    /// 0-based index in configuration order.
    pub index: u32,
    /// `host:port/db`.
    pub address: String,
    /// `"Ok"` when the node answered, else the node error kind.
    pub kind: String,
    /// Error text for error kinds.
    pub detail: Option<String>,
    /// The lock value stored there, if any.
    pub value: Option<String>,
    /// Time to live left there, if the key exists.
    pub ttl: Option<Duration>,
}

/// Every node's view of a resource, and the value a quorum holds.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct Inspection {
    /// The value held on at least a quorum of nodes: that owner holds the lock.
    pub holder: Option<String>,
    /// One entry per node.
    pub nodes: Vec<Holding>,
}

/// A Redlock client over N independent Redis masters; thread-safe, shared by its locks.
#[derive(Debug, uniffi::Object)]
pub struct Client {
    inner: quorumlock::Client,
}

impl Client {
    /// The engine's client.
    pub(crate) fn engine(&self) -> &quorumlock::Client {
        &self.inner
    }
}

#[uniffi::export]
impl Client {
    /// Number of configured nodes N.
    pub fn node_count(&self) -> u32 {
        u32::try_from(self.inner.node_count()).unwrap_or(u32::MAX)
    }

    /// The quorum `N / 2 + 1`.
    pub fn quorum(&self) -> u32 {
        u32::try_from(self.inner.quorum()).unwrap_or(u32::MAX)
    }

    /// Node addresses (`host:port/db`), in configuration order.
    pub fn addresses(&self) -> Vec<String> {
        self.inner.addresses()
    }

    /// The largest ttl this client accepts.
    pub fn max_ttl(&self) -> Duration {
        self.inner.max_ttl()
    }

    /// The client's default ttl.
    pub fn default_ttl(&self) -> Duration {
        self.inner.lock_options().get_ttl()
    }

    /// A snapshot of the client's counters and latency histograms (no I/O).
    pub fn metrics(&self) -> Metrics {
        Metrics::of(&self.inner.metrics())
    }

    /// The same snapshot as Prometheus text.
    pub fn metrics_prometheus(&self) -> String {
        self.inner.metrics().to_prometheus()
    }

    /// Acquires a lock on `resources` (all or nothing) with the client's defaults changed
    /// by `options`. Dropping the returned future, or cancelling `cancel`, cancels the
    /// acquisition; its keys are released on every node.
    ///
    /// # Errors
    /// `QL_INVALID` (nothing sent), `QL_BUSY`, `QL_QUORUM`, `QL_VALIDITY`, `QL_CANCELLED`,
    /// each with the per-node report.
    pub async fn acquire(
        &self,
        resources: Vec<String>,
        options: LockConfig,
        cancel: Option<Arc<CancelHandle>>,
    ) -> Result<Arc<Lock>, NativeError> {
        let client = self.inner.clone();
        let opts = options.apply(client.lock_options());
        let token = cancel.map_or_else(CancelToken::new, |c| c.token.clone());
        let guard = CancelOnDrop(Some(token.clone()));
        let lock = on_runtime(async move {
            client
                .acquire_cancellable(resources.iter().map(String::as_bytes), &opts, &token)
                .await
        })
        .await;
        guard.disarm();
        Ok(Arc::new(Lock::new(lock?)))
    }

    /// Releases `resources` on every node where they hold `value` (a lock's value, maybe
    /// from another process) and returns the per-node report.
    ///
    /// # Errors
    /// `QL_INVALID` for an empty resource set or a bad value.
    pub async fn release_value(
        &self,
        resources: Vec<String>,
        value: String,
    ) -> Result<Vec<NodeReport>, NativeError> {
        let client = self.inner.clone();
        let report = on_runtime(async move {
            client
                .release_value(resources.iter().map(String::as_bytes), &value)
                .await
        })
        .await?;
        Ok(nodes(&report))
    }

    /// Reads a resource's key on every node: the value held there and its ttl.
    ///
    /// # Errors
    /// `QL_INVALID` for an empty or too long name.
    pub async fn inspect(&self, resource: String) -> Result<Inspection, NativeError> {
        let client = self.inner.clone();
        let found = on_runtime(async move { client.inspect(resource.as_bytes()).await }).await?;
        Ok(Inspection {
            holder: found.holder().map(str::to_owned),
            nodes: found
                .nodes
                .iter()
                .map(|h| Holding {
                    index: u32::try_from(h.index).unwrap_or(u32::MAX),
                    address: h.address.clone(),
                    kind: h.kind.as_str().to_owned(),
                    detail: h.detail.clone(),
                    value: h.value.clone(),
                    ttl: h.ttl,
                })
                .collect(),
        })
    }

    /// Deletes a resource's key on every node without an owner check (operators only: the
    /// holder is not told). The report says `Released` where a key was deleted.
    ///
    /// # Errors
    /// `QL_INVALID` for an empty or too long name.
    pub async fn force_break(&self, resource: String) -> Result<Vec<NodeReport>, NativeError> {
        let client = self.inner.clone();
        let report =
            on_runtime(async move { client.force_break(resource.as_bytes()).await }).await?;
        Ok(nodes(&report))
    }
}
