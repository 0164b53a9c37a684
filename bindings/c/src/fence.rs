//! Fencing tokens (REDLOCK.md §7): the fenced lock option, the token accessors and the
//! server-side check script.

use std::ffi::{CString, c_char};
use std::sync::OnceLock;
use std::time::Duration;

use crate::error::{Error, QlResult};
use crate::ffi::{self, Out};
use crate::lock::{Lock, LockOptions};
use crate::panic::ffi_panic_boundary;

/// Turns fenced acquisition on or off (default off). A fenced lock carries a 64-bit token
/// per resource, strictly greater than every token returned before for that resource
/// (`quorumlock_lock_token`). `counter_ttl_ms` lets the per-resource counters expire after
/// that long without writes (0: never; otherwise at least max TTL + quarantine margin,
/// checked when acquiring, `QL_INVALID` otherwise).
///
/// Thread safety: options must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `opts` is NULL or live options.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_options_set_fenced(
    opts: *mut LockOptions,
    on: bool,
    counter_ttl_ms: u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let opts = ffi::handle_mut(opts, "opts")?;
        let mut inner = opts.inner.clone().fenced(on);
        if counter_ttl_ms > 0 {
            inner = inner.fence_counter_ttl(Duration::from_millis(counter_ttl_ms));
        }
        opts.inner = inner;
        Ok(())
    })
}

fn tokens<'a>(lock: *const Lock) -> Result<&'a [u64], Error> {
    ffi::handle(lock, "lock")?
        .inner
        .as_async()
        .tokens()
        .ok_or_else(|| Error::invalid("the lock was not acquired fenced"))
}

/// Writes the fencing token of the lock's first resource (in sorted order) to `*out`. Pass
/// it to the protected resource, which must refuse tokens lower than the highest it has
/// seen (for a resource in Redis: `quorumlock_fence_check_script`). `QL_INVALID` when the
/// lock was not acquired fenced, or for NULL.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `lock` is NULL or a live lock; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_token(lock: *const Lock, out: *mut u64) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let first = tokens(lock)?.first().copied();
        let token = first.ok_or_else(|| Error::invalid("the lock has no token"))?;
        Out::new(out, "out")?.write(token);
        Ok(())
    })
}

/// Number of fencing tokens: one per resource of a fenced lock, 0 for an unfenced lock
/// and for NULL.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `lock` is NULL or a live lock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_token_count(lock: *const Lock) -> usize {
    ffi_panic_boundary!({ tokens(lock).map_or(0, <[u64]>::len) })
}

/// Writes the fencing token of resource `index` (in sorted resource order) to `*out`.
/// `QL_INVALID` when the lock was not acquired fenced, `index` is out of range, or for NULL.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `lock` is NULL or a live lock; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_token_at(
    lock: *const Lock,
    index: usize,
    out: *mut u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let all = tokens(lock)?;
        let token = all.get(index).copied().ok_or_else(|| {
            Error::invalid(format!("token index {index} is out of range (count {})", all.len()))
        })?;
        Out::new(out, "out")?.write(token);
        Ok(())
    })
}

/// The Lua source of the fence check for a resource kept in Redis (a static, NUL-terminated
/// string; never free it): `EVAL <script> 1 <fence key> <token>` returns 1 and stores the
/// token when it is at least the highest seen, 0 (a stale holder: stop) otherwise. Run it
/// in the same atomic step as the protected write (REDLOCK.md §7.9).
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
#[unsafe(no_mangle)]
pub extern "C" fn quorumlock_fence_check_script() -> *const c_char {
    static SCRIPT: OnceLock<CString> = OnceLock::new();
    ffi_panic_boundary!({
        SCRIPT
            .get_or_init(|| CString::new(quorumlock::FENCE_CHECK_SCRIPT).unwrap_or_default())
            .as_ptr()
    })
}
