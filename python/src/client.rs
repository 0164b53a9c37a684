//! The native client: one `quorumlock::Client` per process, rebuilt after `fork()`; blocking
//! methods wait without the GIL, `*_async` methods return asyncio awaitables.

use std::sync::{Mutex, PoisonError};

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use quorumlock::CancelToken;

use crate::admin::{self, Inspection, NodeInfo};
use crate::aio::{self, OnCancel};
use crate::error::{self, NodeResult, ResultExt};
use crate::lock::Lock;
use crate::metrics::Metrics;
use crate::options::{self, ClientConfig};
use crate::stages;
use crate::wait::{self, OnStop};
use quorumlock::runtime::Work;

/// A Redlock client over N independent Redis masters (the sync and async Python clients
/// share it).
#[pyclass(frozen, module = "quorumlock._quorumlock")]
pub(crate) struct Client {
    config: ClientConfig,
    current: Mutex<(u32, quorumlock::Client)>,
}

fn connect(py: Python<'_>, config: &ClientConfig) -> PyResult<quorumlock::Client> {
    let builder = config.builder();
    wait::run(py, builder.connect(), OnStop::Abort)?.or_raise()
}

impl Client {
    /// The core client of this process. In a `fork()` child the inherited one is abandoned
    /// without touching its sockets (they belong to the parent) and a new one connects.
    fn get(&self, py: Python<'_>) -> PyResult<quorumlock::Client> {
        let pid = std::process::id();
        {
            let slot = self.current.lock().unwrap_or_else(PoisonError::into_inner);
            if slot.0 == pid {
                return Ok(slot.1.clone());
            }
        }
        let fresh = connect(py, &self.config)?;
        let mut slot = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.0 != pid {
            let inherited = std::mem::replace(&mut *slot, (pid, fresh));
            std::mem::forget(inherited);
        }
        Ok(slot.1.clone())
    }
}

#[pymethods]
impl Client {
    /// Connects to the nodes (waits up to `connect_timeout`, default 1 s, GIL released).
    #[new]
    #[pyo3(signature = (nodes, **options))]
    fn new(
        py: Python<'_>,
        nodes: &Bound<'_, PyAny>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let config = ClientConfig::parse(nodes, options)?;
        let client = connect(py, &config)?;
        Ok(Client {
            config,
            current: Mutex::new((std::process::id(), client)),
        })
    }

    /// Acquires a lock, blocking (GIL released) for at most the retries or the `wait` budget.
    #[pyo3(signature = (resources, **options))]
    fn acquire(
        &self,
        py: Python<'_>,
        resources: &Bound<'_, PyAny>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Lock> {
        stages::mark(stages::ENTRY);
        let client = self.get(py)?;
        let resources = options::resources(resources)?;
        let opts = options::lock_options(client.lock_options(), options)?;
        let token = CancelToken::new();
        let cancel = token.clone();
        let fut = async move { client.acquire_cancellable(resources, &opts, &token).await };
        let lock = Lock::new(wait::run(py, fut, OnStop::Cancel(cancel))?.or_raise()?);
        stages::mark(stages::RETURNED);
        Ok(lock)
    }

    /// `acquire` as an asyncio awaitable; cancelling the task abandons the attempt and cleans up.
    #[pyo3(signature = (resources, **options))]
    fn acquire_async<'py>(
        &self,
        py: Python<'py>,
        resources: &Bound<'py, PyAny>,
        options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        stages::mark(stages::ENTRY);
        let client = self.get(py)?;
        let resources = options::resources(resources)?;
        let opts = options::lock_options(client.lock_options(), options)?;
        let token = CancelToken::new();
        let cancel = OnCancel::Cancel(token.clone());
        let fut = async move { client.acquire_cancellable(resources, &opts, &token).await };
        aio::spawn(py, Work::Call, fut, cancel, |py, out| {
            Lock::new(out.or_raise()?).into_py_any(py)
        })
    }

    /// Releases `resources` wherever they hold `value` (a `Lock.value`, possibly from another
    /// process); never touches keys holding another value.
    fn release_value(
        &self,
        py: Python<'_>,
        resources: &Bound<'_, PyAny>,
        value: &str,
    ) -> PyResult<Vec<Py<NodeResult>>> {
        let client = self.get(py)?;
        let resources = options::resources(resources)?;
        let value = value.to_owned();
        let fut = async move { client.release_value(resources, &value).await };
        let report = wait::run(py, fut, OnStop::Finish)?.or_raise()?;
        error::nodes(py, &report)
    }

    /// Extends `resources` to `ttl` seconds wherever they hold `value` (a `Lock.value`,
    /// possibly from another process, or a peer library's value); returns the validity left
    /// in seconds. Keys are only lengthened, never re-created.
    fn extend_value(
        &self,
        py: Python<'_>,
        resources: &Bound<'_, PyAny>,
        value: &str,
        ttl: &Bound<'_, PyAny>,
    ) -> PyResult<f64> {
        let client = self.get(py)?;
        let resources = options::resources(resources)?;
        let ttl = options::seconds("ttl", ttl)?;
        let value = value.to_owned();
        let fut = async move { client.extend_value(resources, &value, ttl).await };
        let validity = wait::run(py, fut, OnStop::Finish)?.or_raise()?;
        Ok(validity.as_secs_f64())
    }

    /// `extend_value` as an asyncio awaitable; it finishes even if the task is cancelled.
    fn extend_value_async<'py>(
        &self,
        py: Python<'py>,
        resources: &Bound<'py, PyAny>,
        value: &str,
        ttl: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.get(py)?;
        let resources = options::resources(resources)?;
        let ttl = options::seconds("ttl", ttl)?;
        let value = value.to_owned();
        let fut = async move { client.extend_value(resources, &value, ttl).await };
        aio::spawn(py, Work::Call, fut, OnCancel::Finish, |py, out| {
            out.or_raise()?.as_secs_f64().into_py_any(py)
        })
    }

    /// Every node's value and TTL for `resource`, and the value held on a quorum (one round
    /// of reads).
    fn inspect(&self, py: Python<'_>, resource: &Bound<'_, PyAny>) -> PyResult<Inspection> {
        let client = self.get(py)?;
        let resource = single(resource)?;
        let fut = async move { client.inspect(resource).await };
        let found = wait::run(py, fut, OnStop::Abort)?.or_raise()?;
        admin::inspection(py, &found)
    }

    /// `inspect` as an asyncio awaitable.
    fn inspect_async<'py>(
        &self,
        py: Python<'py>,
        resource: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.get(py)?;
        let resource = single(resource)?;
        let fut = async move { client.inspect(resource).await };
        aio::spawn(py, Work::Call, fut, OnCancel::Abort, |py, out| {
            admin::inspection(py, &out.or_raise()?)?.into_py_any(py)
        })
    }

    /// The value held on a quorum of nodes for `resource`, or `None` (one round of reads).
    fn holder(&self, py: Python<'_>, resource: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
        let client = self.get(py)?;
        let resource = single(resource)?;
        let fut = async move { client.inspect(resource).await };
        let inspection = wait::run(py, fut, OnStop::Abort)?.or_raise()?;
        Ok(inspection.holder().map(str::to_owned))
    }

    /// `holder` as an asyncio awaitable.
    fn holder_async<'py>(
        &self,
        py: Python<'py>,
        resource: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let client = self.get(py)?;
        let resource = single(resource)?;
        let fut = async move { client.inspect(resource).await };
        aio::spawn(py, Work::Call, fut, OnCancel::Abort, |py, out| {
            out.or_raise()?.holder().into_py_any(py)
        })
    }

    /// Pings every node and reads its settings (latency, version, uptime, persistence,
    /// eviction policy, warnings); raises when fewer than a quorum answer.
    fn ping(&self, py: Python<'_>) -> PyResult<Vec<Py<NodeInfo>>> {
        let client = self.get(py)?;
        let all = wait::run(py, async move { client.ping().await }, OnStop::Abort)?.or_raise()?;
        admin::infos(py, all)
    }

    /// `ping` as an asyncio awaitable.
    fn ping_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let client = self.get(py)?;
        let fut = async move { client.ping().await };
        aio::spawn(py, Work::Call, fut, OnCancel::Abort, |py, out| {
            admin::infos(py, out.or_raise()?)?.into_py_any(py)
        })
    }

    /// A snapshot of the counters and latency histograms; it reads counters and never
    /// waits on the nodes. In a `fork()` child it is the child's own client (connected on
    /// first use, like every method), counted from zero.
    fn metrics(&self, py: Python<'_>) -> PyResult<Metrics> {
        Ok(self.get(py)?.metrics().into())
    }

    /// The Redis key of a resource.
    fn key<'py>(
        &self,
        py: Python<'py>,
        resource: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let client = self.get(py)?;
        Ok(PyBytes::new(py, &client.key(single(resource)?)))
    }

    /// Number of configured nodes N.
    #[getter]
    fn node_count(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.get(py)?.node_count())
    }

    /// The quorum `N // 2 + 1`.
    #[getter]
    fn quorum(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.get(py)?.quorum())
    }

    /// Node addresses (`host:port/db`), in configuration order.
    #[getter]
    fn addresses(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        Ok(self.get(py)?.addresses())
    }
}

fn single(resource: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let mut all = options::resources(resource)?;
    if all.len() != 1 {
        return Err(error::invalid("exactly one resource name is expected here"));
    }
    Ok(all.remove(0))
}
