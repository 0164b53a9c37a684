//! The native client: connect, acquire (with a cancel handle), and the promise that the
//! shared runtime settles.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use napi::bindgen_prelude::{Buffer, Object, ToNapiValue};
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::{Env, Status};
use napi_derive::napi;
use quorumlock::CancelToken;

use crate::admin::{NodeInfoEntry, PingOutcome};
use crate::error::NativeError;
use crate::lock::NativeLock;
use crate::metrics::NativeMetrics;
use crate::options::NativeOptions;
use crate::settle;
use crate::stages::{self, DONE, POLLED};

/// Runs `work` as a task on quorumlock's shared runtime, where the client's connections live,
/// and returns a promise that the task settles with `outcome(result)` through the
/// environment's sink ([`settle`]): no second runtime, no thread in between, and one wake-up
/// of the event loop for every output that arrives while it sleeps. The event loop never
/// blocks. A panic in `work` becomes `QL_INTERNAL`.
pub(crate) fn promise<'env, T, O, F>(
    env: &'env Env,
    work: F,
    outcome: fn(Result<T, NativeError>) -> O,
) -> napi::Result<Object<'env>>
where
    F: Future<Output = quorumlock::Result<T>> + Send + 'static,
    T: Send + 'static,
    O: ToNapiValue + Send + 'static,
{
    let (settle, promise) = settle::pending(env, outcome)?;
    match quorumlock::runtime::handle() {
        Ok(handle) => {
            quorumlock::runtime::spawn_call(&handle, async move {
                stages::mark(POLLED);
                let result = match CatchUnwind(Box::pin(work)).await {
                    Ok(Ok(v)) => Ok(v),
                    Ok(Err(e)) => Err(NativeError::from(&e)),
                    Err(_) => Err(NativeError::internal(
                        "an engine task panicked; this is a bug",
                    )),
                };
                stages::mark(DONE);
                settle.with(result);
            });
        }
        Err(e) => settle.with(Err(NativeError::from(&e))),
    }
    Ok(promise)
}

/// A future that turns a panic while polling into `Err`.
struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = std::thread::Result<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

/// `{ value }` or `{ error }` of [`connect`].
#[napi(object, object_from_js = false)]
pub struct ConnectOutcome {
    /// The connected client.
    pub value: Option<NativeClient>,
    /// Why connecting failed.
    pub error: Option<NativeError>,
}

/// `{ value }` or `{ error }` of [`NativeClient::acquire`].
#[napi(object, object_from_js = false)]
pub struct AcquireOutcome {
    /// The held lock.
    pub value: Option<NativeLock>,
    /// Why the acquisition failed.
    pub error: Option<NativeError>,
}

/// A warning of the client (`quorumlock::Warning`): fails nothing, but a user should know.
#[napi(object, object_from_js = false)]
pub struct NativeWarning {
    /// The stable code, e.g. `"QL_W_NOT_DURABLE"`.
    pub code: String,
    /// The node's index, when it is about one node.
    pub node: Option<u32>,
    /// The node's address (`host:port/db`), when it is about one node.
    pub address: Option<String>,
    /// What happened and what to do about it.
    pub message: String,
}

impl From<&quorumlock::Warning> for NativeWarning {
    fn from(w: &quorumlock::Warning) -> Self {
        NativeWarning {
            code: w.kind().as_str().to_owned(),
            node: w.node().map(|i| u32::try_from(i).unwrap_or(u32::MAX)),
            address: w.address().map(str::to_owned),
            message: w.message().to_owned(),
        }
    }
}

/// The JS function that receives warnings; weak (unref'd), it never keeps the process alive.
type WarningCallback =
    ThreadsafeFunction<NativeWarning, UnknownReturnValue, NativeWarning, Status, false, true>;

/// Validates the configuration and connects to the nodes (waiting at most
/// `connectTimeoutMs`). Nodes not connected by then keep connecting in the background unless
/// `requireQuorum`. `onWarning` receives each warning once per kind and node.
#[napi(catch_unwind, ts_return_type = "Promise<ConnectOutcome>")]
pub fn connect<'env>(
    env: &'env Env,
    nodes: Vec<String>,
    options: &NativeOptions,
    on_warning: Option<WarningCallback>,
) -> napi::Result<Object<'env>> {
    let builder = options.builder(nodes).map(|b| match on_warning {
        Some(callback) => b.on_warning(move |w| {
            callback.call(
                NativeWarning::from(w),
                ThreadsafeFunctionCallMode::NonBlocking,
            );
        }),
        None => b,
    });
    let outcome = |result: Result<quorumlock::Client, NativeError>| match result {
        Ok(client) => ConnectOutcome {
            value: Some(NativeClient {
                inner: Arc::new(client),
            }),
            error: None,
        },
        Err(e) => ConnectOutcome {
            value: None,
            error: Some(e),
        },
    };
    match builder {
        Ok(builder) => promise(env, builder.connect(), outcome),
        Err(e) => settle::resolved(env, outcome(Err(e))),
    }
}

/// Cancels one pending acquisition; `index.js` triggers it on the `AbortSignal`'s `abort`.
#[napi]
pub struct CancelHandle {
    token: CancelToken,
}

#[napi]
impl CancelHandle {
    /// A handle that is not triggered yet.
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        CancelHandle {
            token: CancelToken::new(),
        }
    }

    /// Abandons the acquisition: its keys are released on every node in the background and
    /// it resolves with `QL_CANCELLED`. Never blocks.
    #[napi(catch_unwind)]
    pub fn trigger(&self) {
        self.token.cancel();
    }
}

/// A Redlock client over N independent Redis masters.
#[napi]
pub struct NativeClient {
    inner: Arc<quorumlock::Client>,
}

#[napi]
impl NativeClient {
    /// Acquires a lock on the resources (all or nothing). Each attempt takes about one round
    /// trip; retries follow the options. Resolves to `{ value: NativeLock }` or `{ error }`.
    #[napi(catch_unwind, ts_return_type = "Promise<AcquireOutcome>")]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        resources: Vec<Buffer>,
        options: &NativeOptions,
        cancel: &CancelHandle,
    ) -> napi::Result<Object<'env>> {
        stages::mark(stages::ENTRY);
        let client = self.inner.clone();
        let token = cancel.token.clone();
        let resources: Vec<Vec<u8>> = resources.iter().map(|b| b.to_vec()).collect();
        let outcome = |result: Result<quorumlock::Lock, NativeError>| match result {
            Ok(lock) => AcquireOutcome {
                value: Some(NativeLock::new(lock)),
                error: None,
            },
            Err(e) => AcquireOutcome {
                value: None,
                error: Some(e),
            },
        };
        match options.lock_options(client.lock_options().clone()) {
            Ok(opts) => promise(
                env,
                async move { client.acquire_cancellable(resources, &opts, &token).await },
                outcome,
            ),
            Err(e) => settle::resolved(env, outcome(Err(e))),
        }
    }

    /// Pings every node and reads its settings; resolves to `{ value: [...] }`, or
    /// `{ error }` when fewer than a quorum answer.
    #[napi(catch_unwind, ts_return_type = "Promise<PingOutcome>")]
    pub fn ping<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let client = self.inner.clone();
        promise(
            env,
            async move { client.ping().await },
            |result| match result {
                Ok(all) => PingOutcome {
                    value: Some(all.into_iter().map(NodeInfoEntry::from).collect()),
                    error: None,
                },
                Err(e) => PingOutcome {
                    value: None,
                    error: Some(e),
                },
            },
        )
    }

    /// Number of configured nodes N.
    #[napi(getter)]
    pub fn node_count(&self) -> u32 {
        u32::try_from(self.inner.node_count()).unwrap_or(u32::MAX)
    }

    /// The quorum `N / 2 + 1`.
    #[napi(getter)]
    pub fn quorum(&self) -> u32 {
        u32::try_from(self.inner.quorum()).unwrap_or(u32::MAX)
    }

    /// Node addresses (`host:port/db`), in configuration order.
    #[napi(getter)]
    pub fn addresses(&self) -> Vec<String> {
        self.inner.addresses()
    }

    /// The Redis key of a resource: `<prefix>{<resource>}`.
    #[napi(catch_unwind)]
    pub fn key(&self, resource: Buffer) -> Buffer {
        self.inner.key(&resource[..]).into()
    }

    /// A snapshot of the client's counters and latency histograms. Reads atomics only: no
    /// I/O, never blocks.
    #[napi(catch_unwind)]
    pub fn metrics(&self) -> NativeMetrics {
        NativeMetrics::from(&self.inner.metrics())
    }

    /// The same snapshot in the Prometheus text exposition format (version 0.0.4), metric
    /// names prefixed `quorumlock_`. No I/O.
    #[napi(catch_unwind)]
    pub fn metrics_prometheus(&self) -> String {
        self.inner.metrics().to_prometheus()
    }
}
