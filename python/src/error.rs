//! Errors: every `quorumlock::Error` becomes an instance of its class from
//! `quorumlock._errors` (ARCHITECTURE.md §4), with `.code`, `.attempts`, `.validity`,
//! `.reason`, `.nodes` (one frozen `NodeResult` per node) and `.attempt_reports` (the
//! nodes of each acquire attempt).

use pyo3::prelude::*;
use pyo3::types::PyDict;
use quorumlock::{Error, ErrorKind, Report};

/// What happened on one node during one operation.
#[pyclass(frozen, eq, get_all, module = "quorumlock._quorumlock")]
#[derive(PartialEq)]
pub(crate) struct NodeResult {
    /// 0-based index in configuration order.
    index: usize,
    /// `host:port/db`, never with credentials.
    address: String,
    /// Seconds from sending to the reply, when a reply came.
    latency: Option<f64>,
    /// The node kind's stable name, e.g. `"HeldByOther"`.
    kind: &'static str,
    /// The server's or the socket's text for error kinds.
    detail: Option<String>,
}

#[pymethods]
impl NodeResult {
    fn __repr__(&self) -> String {
        format!(
            "NodeResult(index={}, address={:?}, kind={:?})",
            self.index, self.address, self.kind
        )
    }
}

/// The report as a list of `NodeResult`s.
pub(crate) fn nodes(py: Python<'_>, report: &Report) -> PyResult<Vec<Py<NodeResult>>> {
    report
        .nodes()
        .iter()
        .map(|n| {
            Py::new(
                py,
                NodeResult {
                    index: n.index,
                    address: n.address.clone(),
                    latency: n.latency.map(|d| d.as_secs_f64()),
                    kind: n.kind.as_str(),
                    detail: n.detail.clone(),
                },
            )
        })
        .collect()
}

/// The Python class of each kind; one arm per kind, so a new kind fails the test that walks
/// `error_kinds()` instead of quietly reaching the fallback.
fn class_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Busy => "LockBusy",
        ErrorKind::QuorumNotReached => "QuorumNotReached",
        ErrorKind::ValidityTooShort => "ValidityTooShort",
        ErrorKind::Cancelled => "Cancelled",
        ErrorKind::Lost => "LockLost",
        ErrorKind::ExtensionLimit => "ExtensionLimit",
        ErrorKind::InvalidArgument => "InvalidArgument",
        ErrorKind::Connection => "ConnectionFailed",
        ErrorKind::Auth => "AuthFailed",
        ErrorKind::Script => "ScriptFailed",
        ErrorKind::Misconfigured => "Misconfigured",
        ErrorKind::Timeout => "TimedOut",
        _ => "QuorumlockError",
    }
}

fn build(py: Python<'_>, class: &str, message: String, extra: &Bound<'_, PyDict>) -> PyErr {
    let made = py
        .import("quorumlock._errors")
        .and_then(|m| m.getattr(class))
        .and_then(|cls| cls.call((message,), Some(extra)));
    match made {
        Ok(exc) => PyErr::from_value(exc),
        Err(e) => e,
    }
}

/// The Python exception instance for a core error.
pub(crate) fn to_py(py: Python<'_>, e: &Error) -> PyErr {
    let extra = PyDict::new(py);
    let filled = (|| -> PyResult<()> {
        extra.set_item("code", e.kind().as_str())?;
        extra.set_item("attempts", e.attempts())?;
        extra.set_item("validity", e.validity_us().map(|us| us as f64 / 1e6))?;
        extra.set_item("reason", e.lost_reason().map(|r| r.as_str()))?;
        extra.set_item("nodes", nodes(py, e.report())?)?;
        let attempts = e
            .attempt_reports()
            .iter()
            .map(|r| nodes(py, r))
            .collect::<PyResult<Vec<_>>>()?;
        extra.set_item("attempt_reports", attempts)?;
        Ok(())
    })();
    if let Err(err) = filled {
        return err;
    }
    build(py, class_name(e.kind()), e.to_string(), &extra)
}

/// `InvalidArgument` raised by the binding itself (bad values found while converting).
pub(crate) fn invalid(message: impl Into<String>) -> PyErr {
    Python::attach(|py| {
        let extra = PyDict::new(py);
        if let Err(err) = extra.set_item("code", ErrorKind::InvalidArgument.as_str()) {
            return err;
        }
        let kind = ErrorKind::InvalidArgument;
        build(
            py,
            "InvalidArgument",
            format!("{kind}: {}", message.into()),
            &extra,
        )
    })
}

/// Converts core results into Python results with the mapped exception.
pub(crate) trait ResultExt<T> {
    /// The value, or the core error as its Python exception.
    fn or_raise(self) -> PyResult<T>;
}

impl<T> ResultExt<T> for Result<T, Error> {
    fn or_raise(self) -> PyResult<T> {
        self.map_err(|e| Python::attach(|py| to_py(py, &e)))
    }
}

/// Every error kind as `(code, number)`, in numeric order.
#[pyfunction]
pub(crate) fn error_kinds() -> Vec<(&'static str, u32)> {
    ErrorKind::ALL
        .iter()
        .map(|k| (k.as_str(), k.code()))
        .collect()
}

/// The exception the binding raises for the kind with this number (for the mapping test).
#[pyfunction]
pub(crate) fn error_for_kind(py: Python<'_>, number: u32) -> PyResult<Py<PyAny>> {
    let kind = ErrorKind::ALL
        .iter()
        .find(|k| k.code() == number)
        .ok_or_else(|| invalid(format!("no error kind has the number {number}")))?;
    let extra = PyDict::new(py);
    extra.set_item("code", kind.as_str())?;
    let err = build(py, class_name(*kind), format!("{kind}: example"), &extra);
    Ok(err.into_value(py).into_any())
}
