//! The one place where core errors and reports become JS objects (ARCHITECTURE.md §4).
//! `index.js` turns a [`NativeError`] into a `QuorumlockError`.

use napi_derive::napi;
use quorumlock::{Error, ErrorKind, Report};

/// One node's entry of a report.
#[napi(object, object_from_js = false)]
pub struct NodeEntry {
    /// 0-based index in configuration order.
    pub index: u32,
    /// `host:port/db`, never with credentials.
    pub address: String,
    /// Time from sending to the reply in microseconds, when a reply came.
    pub latency_us: Option<f64>,
    /// The node kind, e.g. `"HeldByOther"`.
    pub kind: String,
    /// The kind's category, e.g. `"Vote"` or `"Connection"`.
    pub category: String,
    /// The server's or the socket's text for error kinds.
    pub detail: Option<String>,
}

/// A failed operation: the stable code and the per-node detail.
#[napi(object, object_from_js = false)]
pub struct NativeError {
    /// One of `ERROR_CODES`, e.g. `"QL_BUSY"`.
    pub code: String,
    /// What failed and what to do.
    pub message: String,
    /// Acquisition attempts made (0 when nothing was sent).
    pub attempts: u32,
    /// Validity left when the failure was decided, in milliseconds, when known.
    pub validity_ms: Option<f64>,
    /// For `QL_LOST`: `"Expired"`, `"Taken"` or `"ExtensionLimit"`.
    pub lost_reason: Option<String>,
    /// One entry per configured node (empty when nothing was sent).
    pub nodes: Vec<NodeEntry>,
    /// For a failed acquisition, the entries of each attempt, oldest first (at most the 64
    /// most recent; the last is `nodes` unless cancelled between attempts).
    pub attempt_reports: Vec<Vec<NodeEntry>>,
}

/// The code of a kind: the engine's string (`ErrorKind::as_str`), never retyped here.
pub(crate) fn code(kind: ErrorKind) -> &'static str {
    kind.as_str()
}

const INTERNAL: &str = "QL_INTERNAL";

/// The entries of a report.
pub(crate) fn nodes(report: &Report) -> Vec<NodeEntry> {
    report
        .nodes()
        .iter()
        .map(|n| NodeEntry {
            index: u32::try_from(n.index).unwrap_or(u32::MAX),
            address: n.address.clone(),
            latency_us: n.latency.map(|d| d.as_micros() as f64),
            kind: n.kind.as_str().to_owned(),
            category: n.kind.category().as_str().to_owned(),
            detail: n.detail.clone(),
        })
        .collect()
}

impl From<&Error> for NativeError {
    fn from(e: &Error) -> Self {
        NativeError {
            code: code(e.kind()).to_owned(),
            message: e.to_string(),
            attempts: e.attempts(),
            validity_ms: e.validity_us().map(|us| us as f64 / 1000.0),
            lost_reason: e.lost_reason().map(|r| r.as_str().to_owned()),
            nodes: nodes(e.report()),
            attempt_reports: e.attempt_reports().iter().map(nodes).collect(),
        }
    }
}

impl NativeError {
    /// A `QL_INTERNAL` error: a panic in an engine task, or a runtime that cannot start.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::bare(INTERNAL, message.into())
    }

    fn bare(code: &str, message: String) -> Self {
        NativeError {
            code: code.to_owned(),
            message: format!("{code}: {message}"),
            attempts: 0,
            validity_ms: None,
            lost_reason: None,
            nodes: Vec::new(),
            attempt_reports: Vec::new(),
        }
    }
}

/// One core kind and the code the binding gives it.
#[napi(object, object_from_js = false)]
pub struct KindCode {
    /// The core name (`ErrorKind::as_str`).
    pub kind: String,
    /// The code `QuorumlockError.code` carries for it.
    pub code: String,
}

/// Every core error kind with its code, for the test that no kind falls back to
/// `QL_INTERNAL`.
#[napi(catch_unwind)]
pub fn error_kinds() -> Vec<KindCode> {
    ErrorKind::ALL
        .iter()
        .map(|&k| KindCode {
            kind: k.as_str().to_owned(),
            code: code(k).to_owned(),
        })
        .collect()
}
