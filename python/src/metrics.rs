//! `Client.metrics()`: the engine's counters and latency histograms as frozen objects. Each
//! class wraps its engine snapshot; quantiles and the Prometheus text come from the engine.

use std::fmt::Write as _;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// A `collections.Counter({'name': count, ...})` in the engine's order: a dict whose missing
/// names read 0, so `failed["QL_BUSY"]` needs no `.get` for a code not seen yet.
fn counts_dict<'py>(
    py: Python<'py>,
    items: impl IntoIterator<Item = (&'static str, u64)>,
) -> PyResult<Bound<'py, PyAny>> {
    let counter = py.import("collections")?.getattr("Counter")?.call0()?;
    for (name, n) in items {
        counter.set_item(name, n)?;
    }
    Ok(counter)
}

/// The same dict as Python would print it (the names are plain identifiers).
fn counts_repr(items: impl IntoIterator<Item = (&'static str, u64)>) -> String {
    let mut out = String::from("{");
    for (i, (name, n)) in items.into_iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        let _ = write!(out, "{sep}'{name}': {n}");
    }
    out.push('}');
    out
}

/// A latency histogram: `counts[i]` observations fell in bucket `i`, whose upper bound is
/// `bounds_us[i]` microseconds (inclusive); the last bucket is unbounded.
#[pyclass(frozen, eq, module = "quorumlock._quorumlock")]
#[derive(PartialEq)]
pub(crate) struct Histogram {
    inner: quorumlock::Histogram,
}

#[pymethods]
impl Histogram {
    /// The bucket upper bounds in microseconds (one fewer than `counts`).
    #[getter]
    fn bounds_us<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, quorumlock::LATENCY_BOUNDS_US)
    }

    /// Observations per bucket (not cumulative).
    #[getter]
    fn counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.inner.counts)
    }

    /// The sum of all observations, in microseconds.
    #[getter]
    fn sum_us(&self) -> u64 {
        self.inner.sum_us
    }

    /// The number of observations.
    #[getter]
    fn count(&self) -> u64 {
        self.inner.count()
    }

    /// An upper estimate of quantile `q` (clamped to 0.0–1.0) in seconds: the upper bound
    /// of the bucket holding it; `None` when empty or in the unbounded last bucket.
    #[pyo3(signature = (q, /))]
    fn quantile(&self, q: f64) -> PyResult<Option<f64>> {
        if q.is_nan() {
            return Err(crate::error::invalid(
                "quantile: q must be between 0 and 1, not NaN",
            ));
        }
        Ok(self.inner.quantile(q).map(|d| d.as_secs_f64()))
    }

    fn __repr__(&self) -> String {
        format!(
            "Histogram(count={}, sum_us={})",
            self.inner.count(),
            self.inner.sum_us
        )
    }
}

fn histogram(h: &quorumlock::Histogram) -> Histogram {
    Histogram { inner: h.clone() }
}

/// The outcomes of one kind of operation (acquire, extend or release).
#[pyclass(frozen, eq, module = "quorumlock._quorumlock")]
#[derive(PartialEq)]
pub(crate) struct OpMetrics {
    inner: quorumlock::OpMetrics,
}

impl OpMetrics {
    fn failed_items(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.inner.failed.iter().map(|&(k, n)| (k.as_str(), n))
    }
}

#[pymethods]
impl OpMetrics {
    /// Calls that succeeded.
    #[getter]
    fn ok(&self) -> u64 {
        self.inner.ok
    }

    /// Calls that failed, by error code (`Counter({"QL_BUSY": 2})`): the codes seen, and 0
    /// for any other.
    #[getter]
    fn failed<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        counts_dict(py, self.failed_items())
    }

    /// All failed calls.
    #[getter]
    fn failures(&self) -> u64 {
        self.inner.failures()
    }

    /// The duration of every call, failed ones included.
    #[getter]
    fn latency(&self) -> Histogram {
        histogram(&self.inner.latency)
    }

    fn __repr__(&self) -> String {
        format!(
            "OpMetrics(ok={}, failed={}, latency={})",
            self.inner.ok,
            counts_repr(self.failed_items()),
            histogram(&self.inner.latency).__repr__()
        )
    }
}

/// What one node answered over the client's life.
#[pyclass(frozen, eq, module = "quorumlock._quorumlock")]
#[derive(PartialEq)]
pub(crate) struct NodeMetrics {
    inner: quorumlock::NodeMetrics,
}

impl NodeMetrics {
    fn reply_items(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.inner.replies.iter().map(|&(k, n)| (k.as_str(), n))
    }
}

#[pymethods]
impl NodeMetrics {
    /// 0-based index in configuration order.
    #[getter]
    fn index(&self) -> usize {
        self.inner.index
    }

    /// `host:port/db`, never with credentials (as in `Client.addresses`).
    #[getter]
    fn address(&self) -> &str {
        &self.inner.address
    }

    /// Requests by node kind (`Counter({"Ok": 3, "HeldByOther": 1})`): the kinds seen, and 0
    /// for any other. A reply that came after its operation was decided is counted when it
    /// arrives.
    #[getter]
    fn replies<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        counts_dict(py, self.reply_items())
    }

    /// All requests sent to the node.
    #[getter]
    fn requests(&self) -> u64 {
        self.inner.requests()
    }

    /// Requests that ended in a node error (timeout, connection or server error, ...).
    #[getter]
    fn errors(&self) -> u64 {
        self.inner.errors()
    }

    /// The time to each reply that arrived.
    #[getter]
    fn latency(&self) -> Histogram {
        histogram(&self.inner.latency)
    }

    fn __repr__(&self) -> String {
        format!(
            "NodeMetrics(index={}, address={:?}, replies={}, latency={})",
            self.inner.index,
            self.inner.address,
            counts_repr(self.reply_items()),
            histogram(&self.inner.latency).__repr__()
        )
    }
}

/// A snapshot of a client's counters; they only grow, so subtract two snapshots for a rate.
#[pyclass(frozen, eq, module = "quorumlock._quorumlock")]
#[derive(PartialEq)]
pub(crate) struct Metrics {
    inner: quorumlock::Metrics,
}

impl From<quorumlock::Metrics> for Metrics {
    fn from(inner: quorumlock::Metrics) -> Self {
        Metrics { inner }
    }
}

fn op(m: &quorumlock::OpMetrics) -> OpMetrics {
    OpMetrics { inner: m.clone() }
}

#[pymethods]
impl Metrics {
    /// Acquisition rounds sent (one acquire call may take several).
    #[getter]
    fn acquire_attempts(&self) -> u64 {
        self.inner.acquire_attempts
    }

    /// Acquire calls.
    #[getter]
    fn acquire(&self) -> OpMetrics {
        op(&self.inner.acquire)
    }

    /// Extend calls, the automatic extensions included.
    #[getter]
    fn extend(&self) -> OpMetrics {
        op(&self.inner.extend)
    }

    /// Releases of locks, explicit or on drop (failed attempts' cleanups and repeated releases are not counted).
    #[getter]
    fn release(&self) -> OpMetrics {
        op(&self.inner.release)
    }

    /// Locks lost while held (expired or taken over).
    #[getter]
    fn lost(&self) -> u64 {
        self.inner.lost
    }

    /// Waits cut short by a release notification.
    #[getter]
    fn wakeups(&self) -> u64 {
        self.inner.wakeups
    }

    /// One entry per configured node, in configuration order.
    #[getter]
    fn nodes(&self) -> Vec<NodeMetrics> {
        self.inner
            .nodes
            .iter()
            .map(|n| NodeMetrics { inner: n.clone() })
            .collect()
    }

    /// The snapshot in the Prometheus text exposition format (0.0.4), names prefixed
    /// `quorumlock_`.
    fn to_prometheus(&self) -> String {
        self.inner.to_prometheus()
    }

    fn __repr__(&self) -> String {
        let nodes: Vec<String> = self.nodes().iter().map(NodeMetrics::__repr__).collect();
        format!(
            "Metrics(acquire_attempts={}, acquire={}, extend={}, release={}, lost={}, \
             wakeups={}, nodes=[{}])",
            self.inner.acquire_attempts,
            self.acquire().__repr__(),
            self.extend().__repr__(),
            self.release().__repr__(),
            self.inner.lost,
            self.inner.wakeups,
            nodes.join(", ")
        )
    }
}
