//! Result codes (`quorumlock_result`), node kinds, lost reasons, and the
//! `quorumlock_error` object with its accessors (ARCHITECTURE.md §4).

use std::ffi::{CStr, c_char};

use quorumlock::{ErrorKind, LostReason};

use crate::ffi::{self, Out};
use crate::panic::ffi_panic_boundary;

/// The outcome of a call. Numbers are stable and never reused; functions that take a code
/// take a `uint32_t`.
#[repr(u32)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QlResult {
    /// Success.
    QL_OK = 0,
    /// Other owners hold the resource.
    QL_BUSY = 1,
    /// Node failures blocked the quorum.
    QL_QUORUM = 2,
    /// A quorum was reached with too little validity left.
    QL_VALIDITY = 3,
    /// The caller cancelled.
    QL_CANCELLED = 4,
    /// The held lock expired or was taken over.
    QL_LOST = 5,
    /// An extension cap was reached.
    QL_EXT_LIMIT = 6,
    /// Bad input, configuration or state (including a NULL argument, and a blocking call on
    /// an engine thread). Nothing was sent.
    QL_INVALID = 7,
    /// Fewer than a quorum of nodes could be reached (connect with require_quorum).
    QL_CONNECTION = 8,
    /// Credentials or ACL refused.
    QL_AUTH = 9,
    /// Scripting unavailable.
    QL_SCRIPT = 10,
    /// Unsafe node settings.
    QL_MISCONFIGURED = 11,
    /// No reply in time.
    QL_TIMEOUT = 12,
    /// A bug: a panic was caught at the boundary.
    QL_INTERNAL = 99,
}

impl QlResult {
    /// The code of an engine error kind; kinds this build does not know map to
    /// `QL_INTERNAL` (a test checks that every kind has its own code).
    pub(crate) fn of(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::Busy => Self::QL_BUSY,
            ErrorKind::QuorumNotReached => Self::QL_QUORUM,
            ErrorKind::ValidityTooShort => Self::QL_VALIDITY,
            ErrorKind::Cancelled => Self::QL_CANCELLED,
            ErrorKind::Lost => Self::QL_LOST,
            ErrorKind::ExtensionLimit => Self::QL_EXT_LIMIT,
            ErrorKind::InvalidArgument => Self::QL_INVALID,
            ErrorKind::Connection => Self::QL_CONNECTION,
            ErrorKind::Auth => Self::QL_AUTH,
            ErrorKind::Script => Self::QL_SCRIPT,
            ErrorKind::Misconfigured => Self::QL_MISCONFIGURED,
            ErrorKind::Timeout => Self::QL_TIMEOUT,
            _ => Self::QL_INTERNAL,
        }
    }

    fn name(code: u32) -> &'static CStr {
        match code {
            0 => c"QL_OK",
            1 => c"QL_BUSY",
            2 => c"QL_QUORUM",
            3 => c"QL_VALIDITY",
            4 => c"QL_CANCELLED",
            5 => c"QL_LOST",
            6 => c"QL_EXT_LIMIT",
            7 => c"QL_INVALID",
            8 => c"QL_CONNECTION",
            9 => c"QL_AUTH",
            10 => c"QL_SCRIPT",
            11 => c"QL_MISCONFIGURED",
            12 => c"QL_TIMEOUT",
            99 => c"QL_INTERNAL",
            _ => c"QL_UNKNOWN",
        }
    }
}

/// What happened on one node (`quorumlock_error_node_kind`); numbers are stable.
#[repr(u32)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub enum NodeKindCode {
    /// Vote for: the key was written or lengthened.
    QL_NODE_OK = 0,
    /// Another value holds the key.
    QL_NODE_HELD_BY_OTHER = 1,
    /// The key is absent.
    QL_NODE_NOT_HELD = 2,
    /// Release deleted our key(s).
    QL_NODE_RELEASED = 3,
    /// Release deleted only some keys of a multi-resource lock.
    QL_NODE_PARTIAL = 4,
    /// No reply within the node timeout.
    QL_NODE_TIMEOUT = 5,
    /// Connection refused.
    QL_NODE_CONNECTION_REFUSED = 6,
    /// The connection broke during the request.
    QL_NODE_CONNECTION_LOST = 7,
    /// No connection yet; reconnecting in the background.
    QL_NODE_NOT_CONNECTED = 8,
    /// TLS failure.
    QL_NODE_TLS = 9,
    /// Credentials refused.
    QL_NODE_AUTH = 10,
    /// The ACL lacks a permission.
    QL_NODE_NO_PERMISSION = 11,
    /// A script error.
    QL_NODE_SCRIPT = 12,
    /// The node is out of memory.
    QL_NODE_OUT_OF_MEMORY = 13,
    /// The eviction policy can remove lock keys.
    QL_NODE_EVICTION_POLICY = 14,
    /// Another configured entry points at the same server.
    QL_NODE_DUPLICATE = 15,
    /// The node is a replica.
    QL_NODE_READ_ONLY = 16,
    /// The node is loading its data set.
    QL_NODE_LOADING = 17,
    /// Another script is running on the node.
    QL_NODE_SERVER_BUSY = 18,
    /// A Redis Cluster node.
    QL_NODE_CLUSTER_UNSUPPORTED = 19,
    /// A foreign key uses our name.
    QL_NODE_WRONG_TYPE = 20,
    /// The node is in its restart quarantine.
    QL_NODE_QUARANTINED = 21,
    /// A reply of unexpected shape.
    QL_NODE_PROTOCOL = 22,
    /// Any other error reply.
    QL_NODE_OTHER = 23,
    /// No reply had arrived when the operation was decided.
    QL_NODE_PENDING = 24,
}

/// Why a held lock was lost (the `reason` of the lost callback,
/// `quorumlock_error_lost_reason`).
#[repr(u32)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub enum LostReasonCode {
    /// Not a loss.
    QL_LOST_NONE = 0,
    /// The validity ran out, or the keys expired or vanished.
    QL_LOST_EXPIRED = 1,
    /// Another owner holds the keys now.
    QL_LOST_TAKEN = 2,
    /// The auto-extension stopped at a cap and the validity ran out.
    QL_LOST_EXTENSION_LIMIT = 3,
}

/// `quorumlock_error_node_latency_us` when the node gave no reply.
pub const QL_NO_LATENCY: u64 = u64::MAX;

/// A failure: its code, its message and, for engine failures, the per-node report.
pub struct Error {
    code: QlResult,
    message: String,
    /// Boxed: it keeps `Result<_, Error>` small on every FFI call.
    source: Option<Box<quorumlock::Error>>,
}

impl Error {
    /// A `QL_INVALID` error raised by the binding itself (NULL pointers, bad bytes).
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self {
            code: QlResult::QL_INVALID,
            message: format!("QL_INVALID: {}", message.into()),
            source: None,
        }
    }

    /// The error of a caught panic.
    pub(crate) fn internal() -> Self {
        Self {
            code: QlResult::QL_INTERNAL,
            message:
                "QL_INTERNAL: a bug in quorumlock was caught at the C boundary; please report it"
                    .to_owned(),
            source: None,
        }
    }

    /// The result code.
    pub(crate) fn code(&self) -> QlResult {
        self.code
    }

    /// The lost reason code, `QL_LOST_NONE` when this is not a loss.
    pub(crate) fn lost_reason(&self) -> u32 {
        let reason = self
            .source
            .as_deref()
            .and_then(quorumlock::Error::lost_reason);
        match reason {
            Some(LostReason::Expired) => LostReasonCode::QL_LOST_EXPIRED as u32,
            Some(LostReason::Taken) => LostReasonCode::QL_LOST_TAKEN as u32,
            Some(LostReason::ExtensionLimit) => LostReasonCode::QL_LOST_EXTENSION_LIMIT as u32,
            _ => LostReasonCode::QL_LOST_NONE as u32,
        }
    }

    fn node(&self, index: usize) -> Result<&quorumlock::NodeResult, Error> {
        self.source
            .as_ref()
            .and_then(|e| e.report().nodes().get(index))
            .ok_or_else(|| Error::invalid(format!("node index {index} is out of range")))
    }
}

impl From<quorumlock::Error> for Error {
    fn from(e: quorumlock::Error) -> Self {
        Self {
            code: QlResult::of(e.kind()),
            message: e.to_string(),
            source: Some(Box::new(e)),
        }
    }
}

/// The static name of a result code (`"QL_BUSY"`), or `"QL_UNKNOWN"`.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
#[unsafe(no_mangle)]
pub extern "C" fn quorumlock_result_name(code: u32) -> *const c_char {
    ffi_panic_boundary!({ ffi::static_str(QlResult::name(code)) })
}

/// Frees an error; NULL does nothing. Freeing twice is undefined behaviour.
///
/// Thread safety: must not race other calls on the same error.
/// Blocking: never blocks.
///
/// # Safety
/// `err` is NULL or an error returned through an `err_out` parameter, not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_error_free(err: *mut Error) {
    ffi_panic_boundary!({ ffi::free(err) })
}

/// The error's result code; `QL_INVALID` for NULL.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `err` is NULL or a live error.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_error_code(err: *const Error) -> u32 {
    ffi_panic_boundary!({
        ffi::handle(err, "err").map_or(QlResult::QL_INVALID as u32, |e| e.code as u32)
    })
}

/// Copies the full message (what failed, what to do, and the node report) into `buf`,
/// `snprintf`-style: at most `len` bytes including the NUL; `*out_n` (if not NULL) gets the
/// full length without the NUL.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `err` is NULL or a live error; `buf` has `len` writable bytes (or `len` is 0); `out_n` is
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_error_message(
    err: *const Error,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        ffi::write_text(&ffi::handle(err, "err")?.message, buf, len, out_n)
    })
}

/// Acquisition attempts made (0 when nothing was sent, or for NULL).
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `err` is NULL or a live error.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_error_attempts(err: *const Error) -> u32 {
    ffi_panic_boundary!({
        ffi::handle(err, "err")
            .ok()
            .and_then(|e| e.source.as_deref())
            .map_or(0, quorumlock::Error::attempts)
    })
}

/// Reports kept for the attempts of a failed acquisition (oldest first, at most 64, the most
/// recent), 0 when nothing was sent or for NULL. The last one is the error's own report.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `err` is NULL or a live error.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_error_attempt_count(err: *const Error) -> usize {
    ffi_panic_boundary!({
        ffi::handle(err, "err")
            .ok()
            .and_then(|e| e.source.as_deref())
            .map_or(0, |e| e.attempt_reports().len())
    })
}

/// Writes the kind (`QL_NODE_*`) of node `node` in the report of attempt `attempt` (see
/// `quorumlock_error_attempt_count`) to `*kind_out`. `QL_INVALID` for NULL or an index out
/// of range.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `err` is NULL or a live error; `kind_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_error_attempt_node_kind(
    err: *const Error,
    attempt: usize,
    node: usize,
    kind_out: *mut u32,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let out = Out::new(kind_out, "kind_out")?;
        let result = ffi::handle(err, "err")?
            .source
            .as_deref()
            .and_then(|e| e.attempt_reports().get(attempt))
            .and_then(|r| r.nodes().get(node))
            .ok_or_else(|| {
                Error::invalid(format!("attempt {attempt}, node {node} is out of range"))
            })?;
        out.write(result.kind.code());
        Ok(())
    })
}

/// For `QL_LOST`, why the lock was lost (`QL_LOST_EXPIRED`, ...); `QL_LOST_NONE` otherwise
/// and for NULL.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `err` is NULL or a live error.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_error_lost_reason(err: *const Error) -> u32 {
    ffi_panic_boundary!({ ffi::handle(err, "err").map_or(0, Error::lost_reason) })
}

/// Entries in the per-node report: one per configured node, 0 when nothing was sent or for
/// NULL.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `err` is NULL or a live error.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_error_node_count(err: *const Error) -> usize {
    ffi_panic_boundary!({
        ffi::handle(err, "err")
            .ok()
            .and_then(|e| e.source.as_deref())
            .map_or(0, |e| e.report().nodes().len())
    })
}

/// Writes the kind (`QL_NODE_*`) of node `index` to `*kind_out`. `QL_INVALID` for NULL or
/// an index out of range.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `err` is NULL or a live error; `kind_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_error_node_kind(
    err: *const Error,
    index: usize,
    kind_out: *mut u32,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let out = Out::new(kind_out, "kind_out")?;
        out.write(ffi::handle(err, "err")?.node(index)?.kind.code());
        Ok(())
    })
}

/// Writes the reply latency of node `index` in microseconds to `*latency_out`, or
/// `QL_NO_LATENCY` when the node gave no reply. `QL_INVALID` for NULL or an index out of
/// range.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `err` is NULL or a live error; `latency_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_error_node_latency_us(
    err: *const Error,
    index: usize,
    latency_out: *mut u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let out = Out::new(latency_out, "latency_out")?;
        let node = ffi::handle(err, "err")?.node(index)?;
        let us = node.latency.map_or(QL_NO_LATENCY, |d| {
            u64::try_from(d.as_micros()).unwrap_or(QL_NO_LATENCY - 1)
        });
        out.write(us);
        Ok(())
    })
}

/// Copies the address (`host:port/db`, never credentials) of node `index` into `buf`,
/// `snprintf`-style (see `quorumlock_error_message`). `QL_INVALID` for NULL or an index out
/// of range.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `err` is NULL or a live error; `buf` has `len` writable bytes (or `len` is 0); `out_n` is
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_error_node_address(
    err: *const Error,
    index: usize,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let node = ffi::handle(err, "err")?.node(index)?;
        ffi::write_text(&node.address, buf, len, out_n)
    })
}

/// The static name of a node kind (`"HeldByOther"`), or `"Unknown"`.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
#[unsafe(no_mangle)]
pub extern "C" fn quorumlock_node_kind_name(kind: u32) -> *const c_char {
    ffi_panic_boundary!({
        let name = quorumlock::NodeKind::ALL
            .iter()
            .find(|k| k.code() == kind)
            .map_or("Unknown", |k| k.as_str());
        ffi::static_str(node_kind_cstr(name))
    })
}

fn node_kind_cstr(name: &str) -> &'static CStr {
    NODE_KIND_NAMES
        .iter()
        .find(|c| c.to_bytes() == name.as_bytes())
        .copied()
        .unwrap_or(c"Unknown")
}

const NODE_KIND_NAMES: &[&CStr] = &[
    c"Ok",
    c"HeldByOther",
    c"NotHeld",
    c"Released",
    c"Partial",
    c"Timeout",
    c"ConnectionRefused",
    c"ConnectionLost",
    c"NotConnected",
    c"Tls",
    c"Auth",
    c"NoPermission",
    c"Script",
    c"OutOfMemory",
    c"EvictionPolicy",
    c"Duplicate",
    c"ReadOnly",
    c"Loading",
    c"ServerBusy",
    c"ClusterUnsupported",
    c"WrongType",
    c"Quarantined",
    c"Protocol",
    c"Other",
    c"Pending",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_kind_has_its_own_code() {
        for &k in ErrorKind::ALL {
            let code = QlResult::of(k);
            assert_ne!(code, QlResult::QL_INTERNAL, "{k:?} has no C code");
            assert_eq!(code as u32, k.code(), "{k:?}");
            assert_eq!(QlResult::name(code as u32).to_str().ok(), Some(k.as_str()));
        }
        assert_eq!(QlResult::name(99), c"QL_INTERNAL");
        assert_eq!(QlResult::name(1234), c"QL_UNKNOWN");
    }

    #[test]
    fn every_node_kind_has_its_name() {
        for &k in quorumlock::NodeKind::ALL {
            assert_eq!(node_kind_cstr(k.as_str()).to_str().ok(), Some(k.as_str()));
        }
        assert_eq!(NODE_KIND_NAMES.len(), quorumlock::NodeKind::ALL.len());
    }
}
