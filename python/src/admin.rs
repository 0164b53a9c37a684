//! `Client.ping()` and `Client.inspect()`: what each node says about itself or about one
//! resource, as frozen `NodeInfo` and `Inspection` objects.

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

/// One node's view of a resource.
#[pyclass(frozen, get_all, module = "quorumlock._quorumlock")]
pub(crate) struct Holding {
    /// 0-based index in configuration order.
    index: usize,
    /// `host:port/db`, never with credentials.
    address: String,
    /// `"Ok"` when the node answered, else the node kind of its failure.
    kind: &'static str,
    /// Error text, when `kind` is an error.
    detail: Option<String>,
    /// The lock value stored there, if any.
    value: Option<String>,
    /// Seconds to live left there, if the key exists with a TTL.
    ttl: Option<f64>,
}

#[pymethods]
impl Holding {
    fn __repr__(&self) -> String {
        format!(
            "Holding(index={}, address={:?}, kind={:?}, value={:?}, ttl={:?})",
            self.index, self.address, self.kind, self.value, self.ttl
        )
    }
}

/// Every node's view of a resource, and the value held on a quorum of them.
#[pyclass(frozen, get_all, module = "quorumlock._quorumlock")]
pub(crate) struct Inspection {
    /// The value held on at least a quorum of nodes (that owner holds the lock), or `None`.
    holder: Option<String>,
    /// The quorum of the client.
    quorum: usize,
    /// One `Holding` per node, in configuration order.
    nodes: Vec<Py<Holding>>,
}

#[pymethods]
impl Inspection {
    fn __repr__(&self) -> String {
        format!(
            "Inspection(holder={:?}, quorum={})",
            self.holder, self.quorum
        )
    }
}

/// The inspection as a Python object.
pub(crate) fn inspection(py: Python<'_>, i: &quorumlock::Inspection) -> PyResult<Inspection> {
    let nodes = i
        .nodes
        .iter()
        .map(|h| {
            Py::new(
                py,
                Holding {
                    index: h.index,
                    address: h.address.clone(),
                    kind: h.kind.as_str(),
                    detail: h.detail.clone(),
                    value: h.value.clone(),
                    ttl: h.ttl.map(|d| d.as_secs_f64()),
                },
            )
        })
        .collect::<PyResult<_>>()?;
    Ok(Inspection {
        holder: i.holder().map(str::to_owned),
        quorum: i.quorum,
        nodes,
    })
}
