//! `Client.ping()`: what each node says about itself, as frozen `NodeInfo` objects.

use pyo3::prelude::*;

/// One node's answer to `ping()`: reachability, latency, server facts and warnings.
#[pyclass(frozen, get_all, module = "quorumlock._quorumlock")]
pub(crate) struct NodeInfo {
    /// 0-based index in configuration order.
    index: usize,
    /// `host:port/db`, never with credentials.
    address: String,
    /// `"Ok"`, or the node kind that made the node unusable; `None` if unknown.
    kind: Option<&'static str>,
    /// Error text, when `kind` is an error.
    detail: Option<String>,
    /// Seconds of a `PING` round trip.
    latency: Option<f64>,
    /// `redis_version`.
    version: Option<String>,
    /// `run_id`: changes on every restart.
    run_id: Option<String>,
    /// Seconds since the server started.
    uptime: Option<f64>,
    /// `"master"` or `"slave"`.
    role: Option<String>,
    /// `maxmemory` in bytes (0 = unlimited).
    maxmemory: Option<u64>,
    /// `maxmemory-policy`.
    maxmemory_policy: Option<String>,
    /// `(appendonly, appendfsync, no-appendfsync-on-rewrite)`; `None` when `CONFIG` is refused.
    persistence: Option<(bool, String, bool)>,
    /// True when every acknowledged write is on disk (may serve again at once after a restart).
    durable: bool,
    /// Problems an operator should fix, in plain words.
    warnings: Vec<String>,
}

#[pymethods]
impl NodeInfo {
    fn __repr__(&self) -> String {
        format!(
            "NodeInfo(index={}, address={:?}, kind={:?})",
            self.index, self.address, self.kind
        )
    }
}

impl From<quorumlock::NodeInfo> for NodeInfo {
    fn from(n: quorumlock::NodeInfo) -> Self {
        NodeInfo {
            durable: n.durable(),
            index: n.index,
            address: n.address,
            kind: n.kind.map(|k| k.as_str()),
            detail: n.detail,
            latency: n.latency.map(|d| d.as_secs_f64()),
            version: n.version,
            run_id: n.run_id,
            uptime: n.uptime.map(|d| d.as_secs_f64()),
            role: n.role,
            maxmemory: n.maxmemory,
            maxmemory_policy: n.maxmemory_policy,
            persistence: n.persistence,
            warnings: n.warnings,
        }
    }
}

/// The infos as Python objects.
pub(crate) fn infos(py: Python<'_>, all: Vec<quorumlock::NodeInfo>) -> PyResult<Vec<Py<NodeInfo>>> {
    all.into_iter()
        .map(|n| Py::new(py, NodeInfo::from(n)))
        .collect()
}
