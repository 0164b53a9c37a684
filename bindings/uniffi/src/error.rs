//! The one place where engine errors and reports become uniffi values (ARCHITECTURE.md §4).
//! Codes and names are read from the engine's `ErrorKind`, never retyped here.

use std::time::Duration;

use quorumlock::{Error, ErrorKind, Report};

/// `QL_INTERNAL`: a bug (a panic in an engine task); the C ABI's number for it.
pub const INTERNAL_CODE: u32 = 99;
/// The name of [`INTERNAL_CODE`].
pub const INTERNAL_NAME: &str = "QL_INTERNAL";

/// One node's entry of a per-node report.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct NodeReport {
    /// 0-based index in configuration order.
    pub index: u32,
    /// `host:port/db`, never with credentials.
    pub address: String,
    /// The node kind's stable name, e.g. `"HeldByOther"` (`NodeKind::as_str`).
    pub kind: String,
    /// The node kind's stable number (the C `QL_NODE_*` value).
    pub kind_code: u32,
    /// The kind's category, e.g. `"Vote"` or `"Connection"`.
    pub category: String,
    /// Time from sending to the reply, when a reply came.
    pub latency: Option<Duration>,
    /// The server's or the socket's text for error kinds.
    pub detail: Option<String>,
}

/// A failed operation. `code` and `name` are the C ABI's result code and its name
/// (`2`, `"QL_QUORUM"`); the JVM package maps them to its exception classes.
#[derive(Clone, Debug, PartialEq, uniffi::Error)]
pub enum NativeError {
    /// The only variant: every failure carries the same fields.
    Failed {
        /// The stable number (`ErrorKind::code`, or 99 for `QL_INTERNAL`).
        code: u32,
        /// The stable name (`ErrorKind::as_str`, e.g. `"QL_BUSY"`).
        name: String,
        /// What failed and what to do, with the node report.
        text: String,
        /// Acquisition attempts made (0 when nothing was sent).
        attempts: u32,
        /// Validity left when the failure was decided, in microseconds, when known
        /// (negative when the attempt took longer than the ttl).
        validity_us: Option<i64>,
        /// For `QL_LOST`: `"Expired"`, `"Taken"` or `"ExtensionLimit"`.
        lost_reason: Option<String>,
        /// One entry per configured node (empty when nothing was sent).
        nodes: Vec<NodeReport>,
        /// For a failed acquisition, the entries of each attempt, oldest first (at most 64).
        attempt_reports: Vec<Vec<NodeReport>>,
    },
}

impl std::fmt::Display for NativeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self::Failed { text, .. } = self;
        f.write_str(text)
    }
}

impl std::error::Error for NativeError {}

/// The entries of a report.
pub(crate) fn nodes(report: &Report) -> Vec<NodeReport> {
    report
        .nodes()
        .iter()
        .map(|n| NodeReport {
            index: u32::try_from(n.index).unwrap_or(u32::MAX),
            address: n.address.clone(),
            kind: n.kind.as_str().to_owned(),
            kind_code: n.kind.code(),
            category: n.kind.category().as_str().to_owned(),
            latency: n.latency,
            detail: n.detail.clone(),
        })
        .collect()
}

impl From<&Error> for NativeError {
    fn from(e: &Error) -> Self {
        Self::Failed {
            code: e.kind().code(),
            name: e.kind().as_str().to_owned(),
            text: e.to_string(),
            attempts: e.attempts(),
            validity_us: e.validity_us(),
            lost_reason: e.lost_reason().map(|r| r.as_str().to_owned()),
            nodes: nodes(e.report()),
            attempt_reports: e.attempt_reports().iter().map(nodes).collect(),
        }
    }
}

impl From<quorumlock::runtime::TaskGone> for NativeError {
    fn from(gone: quorumlock::runtime::TaskGone) -> Self {
        Self::internal(&gone)
    }
}

impl From<Error> for NativeError {
    fn from(e: Error) -> Self {
        Self::from(&e)
    }
}

impl NativeError {
    /// A `QL_INTERNAL` error: a panic in an engine task.
    pub(crate) fn internal(e: &dyn std::fmt::Display) -> Self {
        Self::Failed {
            code: INTERNAL_CODE,
            name: INTERNAL_NAME.to_owned(),
            text: format!("{INTERNAL_NAME}: a bug in quorumlock ({e}); please report it"),
            attempts: 0,
            validity_us: None,
            lost_reason: None,
            nodes: Vec::new(),
            attempt_reports: Vec::new(),
        }
    }
}

/// One error kind of the engine: its C result code and name.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct ErrorKindInfo {
    /// The stable number, e.g. 1.
    pub code: u32,
    /// The stable name, e.g. `"QL_BUSY"`.
    pub name: String,
}

/// Every error kind the engine has (`ErrorKind::ALL`), then `QL_INTERNAL`: the JVM package
/// checks that each has its own exception class.
#[uniffi::export]
pub fn error_kinds() -> Vec<ErrorKindInfo> {
    ErrorKind::ALL
        .iter()
        .map(|k| ErrorKindInfo {
            code: k.code(),
            name: k.as_str().to_owned(),
        })
        .chain(std::iter::once(ErrorKindInfo {
            code: INTERNAL_CODE,
            name: INTERNAL_NAME.to_owned(),
        }))
        .collect()
}

/// A lost lock, as the lost listener sees it: the reason and the `QL_LOST` error.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct LostEvent {
    /// `"Expired"`, `"Taken"` or `"ExtensionLimit"`.
    pub reason: String,
    /// The `QL_LOST` error with its node report.
    pub error: NativeError,
}

impl LostEvent {
    pub(crate) fn of(e: &Error) -> Self {
        Self {
            reason: e
                .lost_reason()
                .map_or("Expired", quorumlock::LostReason::as_str)
                .to_owned(),
            error: NativeError::from(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes this crate hands out are the C header's, number for number.
    #[test]
    fn codes_match_the_c_header() {
        let header = include_str!("../../../include/quorumlock.h");
        for k in error_kinds() {
            let line = format!("{} = {},", k.name, k.code);
            assert!(header.contains(&line), "{line} is not in quorumlock.h");
        }
        assert_eq!(error_kinds().len(), ErrorKind::ALL.len() + 1);
    }

    #[test]
    fn errors_carry_kind_and_reason() {
        let e = Error::lost(quorumlock::LostReason::Taken, "gone", Report::default());
        let NativeError::Failed {
            code,
            name,
            lost_reason,
            ..
        } = NativeError::from(&e);
        assert_eq!((code, name.as_str()), (5, "QL_LOST"));
        assert_eq!(lost_reason.as_deref(), Some("Taken"));
        assert_eq!(LostEvent::of(&e).reason, "Taken");
    }
}
