//! `client.ping()`: what each node says about itself.

use napi_derive::napi;

use crate::error::NativeError;

/// The persistence settings of a node (`CONFIG GET`).
#[napi(object, object_from_js = false)]
pub struct Persistence {
    /// `appendonly`.
    pub appendonly: bool,
    /// `appendfsync`: `always`, `everysec` or `no`.
    pub appendfsync: String,
    /// `no-appendfsync-on-rewrite`.
    pub no_appendfsync_on_rewrite: bool,
}

/// One node's answer to `ping()`.
#[napi(object, object_from_js = false)]
pub struct NodeInfoEntry {
    /// 0-based index in configuration order.
    pub index: u32,
    /// `host:port/db`, never with credentials.
    pub address: String,
    /// `Ok`, or the node kind that made the node unusable; null if unknown.
    pub kind: Option<String>,
    /// Error text, when `kind` is an error.
    pub detail: Option<String>,
    /// Round trip of a `PING`, in (fractional) milliseconds.
    pub latency_ms: Option<f64>,
    /// `redis_version`.
    pub version: Option<String>,
    /// `run_id`: changes on every restart.
    pub run_id: Option<String>,
    /// Time since the server started, in milliseconds.
    pub uptime_ms: Option<f64>,
    /// `master` or `slave`.
    pub role: Option<String>,
    /// `maxmemory` in bytes (0 = unlimited).
    pub maxmemory: Option<f64>,
    /// `maxmemory-policy`.
    pub maxmemory_policy: Option<String>,
    /// Persistence settings; null when `CONFIG` is refused.
    pub persistence: Option<Persistence>,
    /// True when every acknowledged write is on disk.
    pub durable: bool,
    /// Problems an operator should fix, in plain words.
    pub warnings: Vec<String>,
}

impl From<quorumlock::NodeInfo> for NodeInfoEntry {
    fn from(n: quorumlock::NodeInfo) -> Self {
        NodeInfoEntry {
            durable: n.durable(),
            index: u32::try_from(n.index).unwrap_or(u32::MAX),
            address: n.address,
            kind: n.kind.map(|k| k.as_str().to_owned()),
            detail: n.detail,
            latency_ms: n.latency.map(|d| d.as_secs_f64() * 1000.0),
            version: n.version,
            run_id: n.run_id,
            uptime_ms: n.uptime.map(|d| d.as_millis() as f64),
            role: n.role,
            maxmemory: n.maxmemory.map(|m| m as f64),
            maxmemory_policy: n.maxmemory_policy,
            persistence: n
                .persistence
                .map(|(appendonly, appendfsync, rewrite)| Persistence {
                    appendonly,
                    appendfsync,
                    no_appendfsync_on_rewrite: rewrite,
                }),
            warnings: n.warnings,
        }
    }
}

/// `{ value }` or `{ error }` of `NativeClient::ping`.
#[napi(object, object_from_js = false)]
pub struct PingOutcome {
    /// One entry per configured node.
    pub value: Option<Vec<NodeInfoEntry>>,
    /// Why the ping failed (fewer than a quorum answered).
    pub error: Option<NativeError>,
}
