//! The native lock handle: validity, extend, release, the lost signal and its callback.

use std::sync::Arc;

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use quorumlock::Error;

use crate::aio::{self, OnCancel};
use crate::error::{self, NodeResult, ResultExt};
use crate::options;
use crate::runtime;
use crate::stages;
use crate::wait::{self, OnStop};
use quorumlock::runtime::Work;

/// A held lock. Released in the background if dropped while held.
#[pyclass(frozen, module = "quorumlock._quorumlock")]
pub(crate) struct Lock {
    inner: Arc<quorumlock::Lock>,
    validity: f64,
}

impl Lock {
    pub(crate) fn new(lock: quorumlock::Lock) -> Lock {
        let validity = lock.remaining().as_secs_f64();
        Lock {
            inner: Arc::new(lock),
            validity,
        }
    }

    fn ttl_or_default(&self, ttl: Option<&Bound<'_, PyAny>>) -> PyResult<std::time::Duration> {
        ttl.map_or(Ok(self.inner.ttl()), |t| options::seconds("ttl", t))
    }
}

fn lost_exception(py: Python<'_>, e: Option<Error>) -> Option<Py<PyAny>> {
    e.map(|e| error::to_py(py, &e).into_value(py).into_any())
}

#[pymethods]
impl Lock {
    /// The value stored in the keys: 40 random hex characters, or the `value=` given.
    #[getter]
    fn value(&self) -> &str {
        self.inner.value()
    }

    /// The resources, sorted and deduplicated.
    #[getter]
    fn resources<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyBytes>> {
        self.inner
            .resources()
            .iter()
            .map(|r| PyBytes::new(py, r))
            .collect()
    }

    /// The fencing token (of the first resource, in sorted order) of a lock acquired with
    /// `fenced=True`: strictly greater than every token returned before for that resource;
    /// `None` when not fenced.
    #[getter]
    fn token(&self) -> Option<u64> {
        self.inner.token()
    }

    /// The fencing tokens, one per resource in `resources` order; `None` when not fenced.
    #[getter]
    fn tokens(&self) -> Option<Vec<u64>> {
        self.inner.tokens().map(<[u64]>::to_vec)
    }

    /// The TTL in seconds.
    #[getter]
    fn ttl(&self) -> f64 {
        self.inner.ttl().as_secs_f64()
    }

    /// Seconds of validity the acquisition left.
    #[getter]
    fn validity(&self) -> f64 {
        self.validity
    }

    /// Attempts the acquisition took.
    #[getter]
    fn attempts(&self) -> u32 {
        self.inner.attempts()
    }

    /// Successful extensions so far.
    #[getter]
    fn extensions(&self) -> u32 {
        self.inner.extensions()
    }

    /// The per-node report of the acquisition.
    #[getter]
    fn nodes(&self, py: Python<'_>) -> PyResult<Vec<Py<NodeResult>>> {
        error::nodes(py, self.inner.report())
    }

    /// True while the automatic extension runs.
    #[getter]
    fn auto_extending(&self) -> bool {
        self.inner.is_auto_extending()
    }

    /// Seconds of validity left now; 0.0 once expired, lost or released.
    fn remaining(&self) -> f64 {
        self.inner.remaining().as_secs_f64()
    }

    /// True while held and within validity.
    fn is_held(&self) -> bool {
        self.inner.is_held()
    }

    /// Starts or stops the automatic extension. Never blocks.
    fn set_auto_extend(&self, on: bool) -> PyResult<()> {
        self.inner.set_auto_extend(on).or_raise()
    }

    /// Extends to `ttl` seconds (default: the lock's TTL) on a quorum; about one round trip.
    #[pyo3(signature = (ttl=None))]
    fn extend(&self, py: Python<'_>, ttl: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let ttl = self.ttl_or_default(ttl)?;
        let lock = self.inner.clone();
        wait::run(py, async move { lock.extend(ttl).await }, OnStop::Finish)?.or_raise()
    }

    /// `extend` as an asyncio awaitable.
    #[pyo3(signature = (ttl=None))]
    fn extend_async<'py>(
        &self,
        py: Python<'py>,
        ttl: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let ttl = self.ttl_or_default(ttl)?;
        let lock = self.inner.clone();
        let fut = async move { lock.extend(ttl).await };
        aio::spawn(py, Work::Call, fut, OnCancel::Finish, |py, out| {
            out.or_raise()?;
            Ok(py.None())
        })
    }

    /// Releases on every node and returns the per-node report; idempotent.
    fn release(&self, py: Python<'_>) -> PyResult<Vec<Py<NodeResult>>> {
        stages::mark(stages::ENTRY);
        let lock = self.inner.clone();
        let report =
            wait::run(py, async move { lock.release().await }, OnStop::Finish)?.or_raise()?;
        let nodes = error::nodes(py, &report);
        stages::mark(stages::RETURNED);
        nodes
    }

    /// `release` as an asyncio awaitable. The release finishes even if the task is cancelled.
    fn release_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        stages::mark(stages::ENTRY);
        let lock = self.inner.clone();
        let fut = async move { lock.release().await };
        aio::spawn(py, Work::Call, fut, OnCancel::Finish, |py, out| {
            error::nodes(py, &out.or_raise()?)?.into_py_any(py)
        })
    }

    /// The `LockLost` exception if the lock is lost, else `None`.
    fn lost_error(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        lost_exception(py, self.inner.lost_signal().get())
    }

    /// Waits (GIL released) until the lock is lost (`True`), released or `timeout` seconds
    /// passed (`False`).
    #[pyo3(signature = (timeout=None))]
    fn wait_lost(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let timeout = timeout
            .map(|t| options::seconds("timeout", t))
            .transpose()?;
        let mut signal = self.inner.lost_signal();
        let got = wait::wait(
            py,
            async move { signal.wait().await },
            timeout,
            OnStop::Abort,
        )?;
        Ok(matches!(got, Some(Some(_))))
    }

    /// Awaitable: the `LockLost` exception once lost, or `None` once released.
    fn wait_lost_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut signal = self.inner.lost_signal();
        let fut = async move { signal.wait().await };
        aio::spawn(py, Work::Wait, fut, OnCancel::Abort, |py, lost| {
            Ok(lost_exception(py, lost).unwrap_or_else(|| py.None()))
        })
    }

    /// Calls `callback(exc)` once, on an engine thread, if the lock is lost; never during
    /// interpreter shutdown. Exceptions from the callback are reported as unraisable.
    fn on_lost(&self, callback: Py<PyAny>) -> PyResult<()> {
        let mut signal = self.inner.lost_signal();
        runtime::handle()?.spawn(async move {
            if let Some(e) = signal.wait().await {
                let _ = tokio::task::spawn_blocking(move || {
                    Python::try_attach(|py| {
                        let exc = error::to_py(py, &e).into_value(py);
                        if let Err(err) = callback.call1(py, (exc,)) {
                            err.write_unraisable(py, Some(callback.bind(py)));
                        }
                    })
                })
                .await;
            }
        });
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!(
            "Lock(value={:?}, remaining={:.3})",
            self.inner.value(),
            self.remaining()
        )
    }
}
