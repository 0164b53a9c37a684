//! The one error model shared by every binding (REDLOCK.md §10, ARCHITECTURE.md §4).

use std::fmt;
use std::time::Duration;

use crate::report::{NodeCategory, Report};

/// Result alias for quorumlock operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The outcome class of a failed operation. Numbers and names are stable across languages:
/// the C `quorumlock_result`, the Python exception classes and the Node `code` map 1:1 onto it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(u32)]
pub enum ErrorKind {
    /// Other owners hold the resource on enough nodes that a quorum was impossible.
    Busy = 1,
    /// Node failures (timeouts, refused connections, error replies) contributed to the failure.
    QuorumNotReached = 2,
    /// A quorum was reached but the remaining validity was not positive or below the minimum.
    ValidityTooShort = 3,
    /// The caller cancelled the operation.
    Cancelled = 4,
    /// A held lock expired or was taken over.
    Lost = 5,
    /// An extension cap (`max_extensions`, `max_hold`) was reached.
    ExtensionLimit = 6,
    /// Bad input or configuration, or a handle in the wrong state. Nothing was sent.
    InvalidArgument = 7,
    /// Fewer than a quorum of nodes could be reached (connect and ping only).
    Connection = 8,
    /// Credentials or ACL refused on too many nodes (connect and ping only).
    Auth = 9,
    /// Scripting unavailable on too many nodes (connect and ping only).
    Script = 10,
    /// Unsafe node settings on too many nodes (connect and ping only).
    Misconfigured = 11,
    /// No reply in time from too many nodes (connect and ping only).
    Timeout = 12,
}

impl ErrorKind {
    /// Every kind, in numeric order.
    pub const ALL: &'static [ErrorKind] = &[
        Self::Busy,
        Self::QuorumNotReached,
        Self::ValidityTooShort,
        Self::Cancelled,
        Self::Lost,
        Self::ExtensionLimit,
        Self::InvalidArgument,
        Self::Connection,
        Self::Auth,
        Self::Script,
        Self::Misconfigured,
        Self::Timeout,
    ];

    /// The stable string code, e.g. `"QL_BUSY"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Busy => "QL_BUSY",
            Self::QuorumNotReached => "QL_QUORUM",
            Self::ValidityTooShort => "QL_VALIDITY",
            Self::Cancelled => "QL_CANCELLED",
            Self::Lost => "QL_LOST",
            Self::ExtensionLimit => "QL_EXT_LIMIT",
            Self::InvalidArgument => "QL_INVALID",
            Self::Connection => "QL_CONNECTION",
            Self::Auth => "QL_AUTH",
            Self::Script => "QL_SCRIPT",
            Self::Misconfigured => "QL_MISCONFIGURED",
            Self::Timeout => "QL_TIMEOUT",
        }
    }

    /// The stable number (the C result code).
    pub const fn code(self) -> u32 {
        self as u32
    }

    /// The connect-stage kind matching a node category, for failures that are not a quorum
    /// vote (connect, ping).
    pub(crate) fn from_category(category: NodeCategory) -> Self {
        match category {
            NodeCategory::Auth => Self::Auth,
            NodeCategory::Script => Self::Script,
            NodeCategory::Misconfigured | NodeCategory::Quarantined => Self::Misconfigured,
            NodeCategory::Timeout => Self::Timeout,
            NodeCategory::Vote | NodeCategory::Connection | NodeCategory::Server => {
                Self::Connection
            }
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a held lock was lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(u32)]
pub enum LostReason {
    /// The validity ran out without a successful extension, or the keys expired.
    Expired = 1,
    /// Another owner holds the keys now.
    Taken = 2,
    /// The auto-extension stopped at a cap and the validity ran out.
    ExtensionLimit = 3,
}

impl LostReason {
    /// The stable name, e.g. `"Expired"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Expired => "Expired",
            Self::Taken => "Taken",
            Self::ExtensionLimit => "ExtensionLimit",
        }
    }
}

impl fmt::Display for LostReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed quorumlock operation: a kind, a message that says what failed and what to do,
/// and, for network operations, the attempt count, the validity when known and one report
/// entry per node. `Display` and `Debug` never contain credentials.
#[derive(Clone)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    attempts: u32,
    validity_us: Option<i64>,
    lost_reason: Option<LostReason>,
    report: Report,
    /// Boxed, not a `Vec`: it keeps `Error` small on every `Result` path.
    history: Box<[Report]>,
}

/// How many attempt reports an error keeps (the most recent ones).
pub const MAX_ATTEMPT_REPORTS: usize = 64;

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            attempts: 0,
            validity_us: None,
            lost_reason: None,
            report: Report::default(),
            history: Box::default(),
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    pub(crate) fn with_report(mut self, report: Report) -> Self {
        self.report = report;
        self
    }

    /// The per-node reports of the attempts, oldest first (the last one is `report`).
    pub(crate) fn with_history(mut self, history: Vec<Report>) -> Self {
        self.history = history.into_boxed_slice();
        self
    }

    pub(crate) fn with_attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts;
        self
    }

    pub(crate) fn with_validity_us(mut self, validity_us: i64) -> Self {
        self.validity_us = Some(validity_us);
        self
    }

    pub(crate) fn lost(reason: LostReason, message: impl Into<String>, report: Report) -> Self {
        let mut e = Self::new(ErrorKind::Lost, message).with_report(report);
        e.lost_reason = Some(reason);
        e
    }

    /// The outcome class.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The human-readable message (without the node report; `Display` adds it).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Acquisition attempts made (0 when nothing was sent).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The validity left when the failure was decided, in microseconds; negative when the
    /// attempt took longer than the TTL. `None` when not known.
    pub fn validity_us(&self) -> Option<i64> {
        self.validity_us
    }

    /// The validity left as a duration, when it was known and positive.
    pub fn validity(&self) -> Option<Duration> {
        self.validity_us
            .and_then(|us| u64::try_from(us).ok())
            .map(Duration::from_micros)
    }

    /// For [`ErrorKind::Lost`], why the lock was lost.
    pub fn lost_reason(&self) -> Option<LostReason> {
        self.lost_reason
    }

    /// One entry per configured node (empty when nothing was sent).
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// For a failed acquisition, the per-node report of each attempt, oldest first: the last
    /// is [`report`](Self::report) unless the call was cancelled between attempts. At most
    /// [`MAX_ATTEMPT_REPORTS`] (the most recent); empty when nothing was sent.
    pub fn attempt_reports(&self) -> &[Report] {
        &self.history
    }

    /// True for [`ErrorKind::Busy`].
    pub fn is_busy(&self) -> bool {
        self.kind == ErrorKind::Busy
    }
    /// True for [`ErrorKind::QuorumNotReached`].
    pub fn is_quorum_not_reached(&self) -> bool {
        self.kind == ErrorKind::QuorumNotReached
    }
    /// True for [`ErrorKind::ValidityTooShort`].
    pub fn is_validity_too_short(&self) -> bool {
        self.kind == ErrorKind::ValidityTooShort
    }
    /// True for [`ErrorKind::Cancelled`].
    pub fn is_cancelled(&self) -> bool {
        self.kind == ErrorKind::Cancelled
    }
    /// True for [`ErrorKind::Lost`].
    pub fn is_lost(&self) -> bool {
        self.kind == ErrorKind::Lost
    }
    /// True for [`ErrorKind::ExtensionLimit`].
    pub fn is_extension_limit(&self) -> bool {
        self.kind == ErrorKind::ExtensionLimit
    }
    /// True for [`ErrorKind::InvalidArgument`].
    pub fn is_invalid_argument(&self) -> bool {
        self.kind == ErrorKind::InvalidArgument
    }
    /// True for [`ErrorKind::Connection`].
    pub fn is_connection(&self) -> bool {
        self.kind == ErrorKind::Connection
    }
    /// True for [`ErrorKind::Auth`].
    pub fn is_auth(&self) -> bool {
        self.kind == ErrorKind::Auth
    }
    /// True for [`ErrorKind::Script`].
    pub fn is_script(&self) -> bool {
        self.kind == ErrorKind::Script
    }
    /// True for [`ErrorKind::Misconfigured`].
    pub fn is_misconfigured(&self) -> bool {
        self.kind == ErrorKind::Misconfigured
    }
    /// True for [`ErrorKind::Timeout`].
    pub fn is_timeout(&self) -> bool {
        self.kind == ErrorKind::Timeout
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)?;
        if let Some(reason) = self.lost_reason {
            write!(f, " [{reason}]")?;
        }
        if self.attempts > 0 {
            write!(f, " after {} attempt(s)", self.attempts)?;
        }
        if !self.report.nodes().is_empty() {
            write!(f, "; nodes: {}", self.report)?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.kind)
            .field("message", &self.message)
            .field("attempts", &self.attempts)
            .field("validity_us", &self.validity_us)
            .field("lost_reason", &self.lost_reason)
            .field("report", &self.report)
            .field("attempt_reports", &self.history.len())
            .finish()
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_have_distinct_stable_codes_and_names() {
        let mut codes: Vec<u32> = ErrorKind::ALL.iter().map(|k| k.code()).collect();
        codes.dedup();
        assert_eq!(codes, (1..=12).collect::<Vec<_>>());
        let mut names: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ErrorKind::ALL.len());
        assert_eq!(ErrorKind::Busy.as_str(), "QL_BUSY");
        assert_eq!(ErrorKind::Timeout.code(), 12);
    }

    #[test]
    fn predicates_follow_kind() {
        for &k in ErrorKind::ALL {
            let e = Error::new(k, "x");
            let flags = [
                e.is_busy(),
                e.is_quorum_not_reached(),
                e.is_validity_too_short(),
                e.is_cancelled(),
                e.is_lost(),
                e.is_extension_limit(),
                e.is_invalid_argument(),
                e.is_connection(),
                e.is_auth(),
                e.is_script(),
                e.is_misconfigured(),
                e.is_timeout(),
            ];
            assert_eq!(flags.iter().filter(|f| **f).count(), 1, "{k:?}");
            assert!(flags[(k.code() - 1) as usize], "{k:?}");
        }
    }

    #[test]
    fn negative_validity_is_not_a_duration() {
        let e = Error::new(ErrorKind::ValidityTooShort, "x").with_validity_us(-1000);
        assert_eq!(e.validity(), None);
        assert_eq!(e.validity_us(), Some(-1000));
    }
}
