//! Release and extend by value: for a lock taken by another process (or another library
//! during a migration) whose value the caller knows, as redlock-rb's `unlock(lock_info)` and
//! Redis::DistLock's `release` do.

use std::time::Duration;

use crate::client::Client;
use crate::error::{Error, QlResult};
use crate::ffi::{self, Out};
use crate::panic::ffi_panic_boundary;

/// The client, the resources and the value of a call by value, checked (the caller of the
/// export guarantees the pointers as `quorumlock_client_release_value` documents).
fn by_value<'a>(
    client: *const Client,
    resources: *const *const u8,
    lens: *const usize,
    count: usize,
    value: *const u8,
    value_len: usize,
) -> Result<(&'a Client, Vec<&'a [u8]>, &'a str), Error> {
    Ok((
        ffi::handle(client, "client")?,
        ffi::byte_list(resources, lens, count)?,
        ffi::utf8(value, value_len, "value")?,
    ))
}

/// Releases the keys of `count` resources on every node where they still hold `value`
/// (compare-and-delete; other owners' keys are never touched). `value` is `value_len` bytes
/// of UTF-8, at least `QL_MIN_GIVEN_LEN` printable ASCII characters. If `held_out` is not
/// NULL, it receives whether a quorum of nodes still held the value.
///
/// Errors: `QL_INVALID` (no resources, bad value, other process, engine thread).
///
/// Thread safety: safe from any thread.
/// Blocking: one round trip, bounded by the node timeout.
///
/// # Safety
/// `client` is NULL or a live client; `resources` and `lens` have `count` readable
/// entries; `value` has `value_len` readable bytes; `held_out` and `err_out` are NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_client_release_value(
    client: *const Client,
    resources: *const *const u8,
    lens: *const usize,
    count: usize,
    value: *const u8,
    value_len: usize,
    held_out: *mut bool,
    err_out: *mut *mut Error,
) -> QlResult {
    ffi_panic_boundary!(err_out => {
        let (client, list, value) = by_value(client, resources, lens, count, value, value_len)?;
        let report = client.inner.release_value(list, value)?;
        if !held_out.is_null() {
            Out::new(held_out, "held_out")?.write(report.was_held_by_quorum());
        }
        Ok(())
    })
}

/// Extends the keys of `count` resources that hold `value` to `ttl_ms` from now, on a
/// quorum of nodes. Keys that are gone are never re-created. If `validity_ms_out` is not
/// NULL, it receives the validity left (milliseconds, rounded down).
///
/// Errors: `QL_LOST` (the keys are gone or taken on too many nodes), `QL_QUORUM` or
/// `QL_VALIDITY` (transient), `QL_INVALID` (bad TTL or value, other process, engine thread).
///
/// Thread safety: safe from any thread.
/// Blocking: one round trip, bounded by the node timeout.
///
/// # Safety
/// As `quorumlock_client_release_value`; `validity_ms_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_client_extend_value(
    client: *const Client,
    resources: *const *const u8,
    lens: *const usize,
    count: usize,
    value: *const u8,
    value_len: usize,
    ttl_ms: u64,
    validity_ms_out: *mut u64,
    err_out: *mut *mut Error,
) -> QlResult {
    ffi_panic_boundary!(err_out => {
        let (client, list, value) = by_value(client, resources, lens, count, value, value_len)?;
        let left = client.inner.extend_value(list, value, Duration::from_millis(ttl_ms))?;
        if !validity_ms_out.is_null() {
            let ms = u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
            Out::new(validity_ms_out, "validity_ms_out")?.write(ms);
        }
        Ok(())
    })
}
