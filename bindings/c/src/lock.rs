//! Lock options, the cancel handle, acquire (plain, try, with timeout, multi-resource),
//! extend, release, validity, value, auto-extension and the lost callback.

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use quorumlock::{CancelToken, blocking};

use crate::client::Client;
use crate::error::{Error, QlResult};
use crate::ffi::{self, LostCallback, OnLost, Out};
use crate::panic::ffi_panic_boundary;

/// Options of one acquisition (TTL, retries, wait, auto-extension, lost callback).
#[derive(Clone, Default)]
pub struct LockOptions {
    pub(crate) inner: quorumlock::LockOptions,
    on_lost: Option<OnLost>,
}

/// A cancellation handle for acquisitions.
pub struct Cancel {
    token: CancelToken,
}

/// A held (or lost, or released) distributed lock.
pub struct Lock {
    pub(crate) inner: blocking::Lock,
    watcher: Option<Arc<Watcher>>,
}

/// Lets `quorumlock_lock_free` wait for a callback in progress and stop later ones.
#[derive(Default)]
struct Watcher {
    alive: AtomicBool,
    running: Mutex<()>,
}

thread_local! {
    static IN_CALLBACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Lock {
    fn new(inner: blocking::Lock, on_lost: Option<OnLost>) -> Result<Lock, Error> {
        let Some(on_lost) = on_lost else {
            return Ok(Lock {
                inner,
                watcher: None,
            });
        };
        let watcher = Arc::new(Watcher {
            alive: AtomicBool::new(true),
            running: Mutex::new(()),
        });
        let mut signal = inner.lost_signal();
        let w = watcher.clone();
        quorumlock::runtime::handle()?.spawn(async move {
            let Some(lost) = signal.wait().await else {
                return;
            };
            let _running = w.running.lock().unwrap_or_else(PoisonError::into_inner);
            if w.alive.load(Ordering::SeqCst) {
                let detail = Error::from(lost);
                IN_CALLBACK.set(true);
                on_lost.call(detail.lost_reason(), &detail);
                IN_CALLBACK.set(false);
            }
        });
        Ok(Lock {
            inner,
            watcher: Some(watcher),
        })
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        if let Some(w) = &self.watcher {
            w.alive.store(false, Ordering::SeqCst);
            if !IN_CALLBACK.get() {
                drop(w.running.lock().unwrap_or_else(PoisonError::into_inner));
            }
        }
    }
}

/// Creates options with the defaults of REDLOCK.md §11 (TTL 10 s, 3 retries, delay 100 ms
/// plus jitter up to 200 ms, no auto-extension).
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_options_new(out: *mut *mut LockOptions) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        Out::new(out, "out")?.write(ffi::into_raw(LockOptions::default()));
        Ok(())
    })
}

/// Frees options; NULL does nothing. Locks acquired with them are not affected. Freeing
/// twice is undefined behaviour.
///
/// Thread safety: must not race other calls on the same options.
/// Blocking: never blocks.
///
/// # Safety
/// `opts` is NULL or live options.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_options_free(opts: *mut LockOptions) {
    ffi_panic_boundary!({ ffi::free(opts) })
}

fn set(opts: *mut LockOptions, f: impl FnOnce(&mut LockOptions)) -> Result<(), Error> {
    f(ffi::handle_mut(opts, "opts")?);
    Ok(())
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// Sets the TTL in milliseconds (default 10000; checked against 1 ms..max TTL when
/// acquiring, `QL_INVALID` otherwise).
///
/// Thread safety: options must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `opts` is NULL or live options.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_options_set_ttl_ms(
    opts: *mut LockOptions,
    ttl_ms: u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        set(opts, |o| o.inner = o.inner.clone().ttl(ms(ttl_ms)))
    })
}

/// Sets the retries after the first attempt (default 3; 0 means one attempt).
///
/// Thread safety: options must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `opts` is NULL or live options.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_options_set_retry_count(
    opts: *mut LockOptions,
    count: u32,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        set(opts, |o| o.inner = o.inner.clone().retry_count(count))
    })
}

/// Sets the delay between attempts: `delay_ms` plus a uniform random part below
/// `jitter_ms` (defaults 100 and 200).
///
/// Thread safety: options must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `opts` is NULL or live options.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_options_set_retry_delay_ms(
    opts: *mut LockOptions,
    delay_ms: u64,
    jitter_ms: u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        set(opts, |o| {
            o.inner = o.inner.clone().retry_delay(ms(delay_ms)).retry_jitter(ms(jitter_ms));
        })
    })
}

/// Sets the minimum validity a successful attempt must leave (default TTL / 10).
///
/// Thread safety: options must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `opts` is NULL or live options.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_options_set_min_validity_ms(
    opts: *mut LockOptions,
    min_ms: u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        set(opts, |o| o.inner = o.inner.clone().min_validity(ms(min_ms)))
    })
}

/// Sets the per-node request deadline (default `clamp(ttl / 200, 5 ms, 50 ms)`).
///
/// Thread safety: options must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `opts` is NULL or live options.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_options_set_node_timeout_ms(
    opts: *mut LockOptions,
    timeout_ms: u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        set(opts, |o| o.inner = o.inner.clone().node_timeout(ms(timeout_ms)))
    })
}

/// Turns automatic extension on or off (default off); `interval_ms` 0 keeps the default
/// interval of TTL / 3.
///
/// Thread safety: options must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `opts` is NULL or live options.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_options_set_auto_extend(
    opts: *mut LockOptions,
    on: bool,
    interval_ms: u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        set(opts, |o| {
            o.inner = o.inner.clone().auto_extend(on);
            if interval_ms > 0 {
                o.inner = o.inner.clone().extend_interval(ms(interval_ms));
            }
        })
    })
}

/// Caps the automatic extension: at most `max_extensions` extensions (0: unlimited) and no
/// deadline past `max_hold_ms` after acquisition (0: unlimited).
///
/// Thread safety: options must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `opts` is NULL or live options.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_options_set_limits(
    opts: *mut LockOptions,
    max_extensions: u32,
    max_hold_ms: u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        set(opts, |o| {
            if max_extensions > 0 {
                o.inner = o.inner.clone().max_extensions(max_extensions);
            }
            if max_hold_ms > 0 {
                o.inner = o.inner.clone().max_hold(ms(max_hold_ms));
            }
        })
    })
}

/// Uses `value` (`value_len` bytes, at least 16 printable ASCII characters, checked when
/// acquiring) as the lock value instead of a fresh random one per attempt, e.g. a value a
/// peer library chose. Generated values are safer (docs/REDLOCK.md §2.2). A NULL `value`
/// with length 0 goes back to generated values.
///
/// Thread safety: options must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `opts` is NULL or live options; `value` has `value_len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_options_set_value(
    opts: *mut LockOptions,
    value: *const u8,
    value_len: usize,
    err_out: *mut *mut Error,
) -> QlResult {
    ffi_panic_boundary!(err_out => {
        let given = if value.is_null() && value_len == 0 {
            None
        } else {
            Some(ffi::utf8(value, value_len, "value")?.to_owned())
        };
        set(opts, |o| {
            o.inner = match given {
                Some(v) => o.inner.clone().value(v),
                None => o.inner.clone().without_value(),
            };
        })
    })
}

/// Sets the lost-lock callback (NULL removes it). For every lock acquired with these
/// options, it runs at most once, on an engine thread, when the lock is lost (never after a
/// release), with `reason` (`QL_LOST_*`) and `detail` (valid only during the call). It must
/// return quickly and must not call blocking functions (they return `QL_INVALID` there);
/// it may call `quorumlock_lock_free`. `userdata` must stay valid until the lock is freed;
/// `quorumlock_lock_free` waits for a callback in progress and prevents later ones.
///
/// Thread safety: options must not be changed from two threads at once; the callback must
/// be callable from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `opts` is NULL or live options; `callback` is NULL or a function of this signature.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_options_set_on_lost(
    opts: *mut LockOptions,
    callback: LostCallback,
    userdata: *mut c_void,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        set(opts, |o| o.on_lost = OnLost::new(callback, userdata))
    })
}

/// Creates a cancel handle.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_cancel_new(out: *mut *mut Cancel) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        Out::new(out, "out")?.write(ffi::into_raw(Cancel { token: CancelToken::new() }));
        Ok(())
    })
}

/// Cancels every acquisition waiting on this handle, now and later: they return
/// `QL_CANCELLED` and their keys are released in the background.
///
/// Thread safety: safe from any thread, concurrently with the acquisition.
/// Blocking: never blocks.
///
/// # Safety
/// `cancel` is NULL or a live cancel handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_cancel_trigger(cancel: *const Cancel) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        ffi::handle(cancel, "cancel")?.token.cancel();
        Ok(())
    })
}

/// Frees a cancel handle; NULL does nothing. Freeing twice is undefined behaviour.
///
/// Thread safety: must not race other calls on the same handle.
/// Blocking: never blocks.
///
/// # Safety
/// `cancel` is NULL or a live cancel handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_cancel_free(cancel: *mut Cancel) {
    ffi_panic_boundary!({ ffi::free(cancel) })
}

/// The common path of every acquire function.
fn acquire(
    client: *const Client,
    resources: Vec<&[u8]>,
    opts: *const LockOptions,
    adjust: impl FnOnce(quorumlock::LockOptions) -> quorumlock::LockOptions,
    cancel: *const Cancel,
    out: *mut *mut Lock,
) -> Result<(), Error> {
    let client = ffi::handle(client, "client")?;
    let out = Out::new(out, "out")?;
    let opts = if opts.is_null() {
        &client.defaults
    } else {
        ffi::handle(opts, "opts")?
    };
    let token = if cancel.is_null() {
        CancelToken::new()
    } else {
        ffi::handle(cancel, "cancel")?.token.clone()
    };
    let inner = client
        .inner
        .acquire_cancellable(resources, &adjust(opts.inner.clone()), &token)?;
    out.write(ffi::into_raw(Lock::new(inner, opts.on_lost)?));
    Ok(())
}

/// Acquires a lock on one resource (`len` bytes, any content, 1..=1024 bytes), retrying
/// as the options say. `opts` NULL uses the client's defaults; `cancel` may be NULL.
///
/// Errors: `QL_INVALID` (nothing sent), `QL_BUSY`, `QL_QUORUM`, `QL_VALIDITY`,
/// `QL_CANCELLED`, with the last attempt's node report in `*err_out`.
///
/// Thread safety: safe from any thread, concurrently on one client.
/// Blocking: about one round trip per attempt (each bounded by the node timeout) plus the
/// retry delays: with defaults, under 1 s. Returns `QL_INVALID` on an engine thread.
///
/// # Safety
/// Handles are NULL or live; `resource` has `len` readable bytes; `out` and `err_out` are
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_client_acquire(
    client: *const Client,
    resource: *const u8,
    len: usize,
    opts: *const LockOptions,
    cancel: *const Cancel,
    out: *mut *mut Lock,
    err_out: *mut *mut Error,
) -> QlResult {
    ffi_panic_boundary!(err_out => {
        let r = ffi::bytes(resource, len, "resource")?;
        acquire(client, vec![r], opts, |o| o, cancel, out)
    })
}

/// Makes exactly one attempt (no retries) to lock one resource; otherwise as
/// `quorumlock_client_acquire`. `QL_BUSY` means another owner holds it.
///
/// Thread safety: safe from any thread, concurrently on one client.
/// Blocking: one round trip, bounded by the node timeout.
///
/// # Safety
/// As `quorumlock_client_acquire`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_client_try_acquire(
    client: *const Client,
    resource: *const u8,
    len: usize,
    opts: *const LockOptions,
    out: *mut *mut Lock,
    err_out: *mut *mut Error,
) -> QlResult {
    ffi_panic_boundary!(err_out => {
        let r = ffi::bytes(resource, len, "resource")?;
        acquire(client, vec![r], opts, |o| o.retry_count(0), std::ptr::null(), out)
    })
}

/// Retries until the lock is acquired, `cancel` fires, or `timeout_ms` is spent (no attempt
/// starts after that); otherwise as `quorumlock_client_acquire`. Fails with the last
/// attempt's code, usually `QL_BUSY`.
///
/// Thread safety: safe from any thread, concurrently on one client.
/// Blocking: up to `timeout_ms` plus one attempt (bounded by the node timeout).
///
/// # Safety
/// As `quorumlock_client_acquire`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_client_acquire_timeout(
    client: *const Client,
    resource: *const u8,
    len: usize,
    opts: *const LockOptions,
    timeout_ms: u64,
    cancel: *const Cancel,
    out: *mut *mut Lock,
    err_out: *mut *mut Error,
) -> QlResult {
    ffi_panic_boundary!(err_out => {
        let r = ffi::bytes(resource, len, "resource")?;
        let adjust = |o: quorumlock::LockOptions| o.retry_forever().wait(ms(timeout_ms));
        acquire(client, vec![r], opts, adjust, cancel, out)
    })
}

/// Locks `count` resources at once, all or nothing on each node; resource `i` is
/// `lens[i]` bytes at `resources[i]`. Otherwise as `quorumlock_client_acquire`.
///
/// Thread safety: safe from any thread, concurrently on one client.
/// Blocking: as `quorumlock_client_acquire`.
///
/// # Safety
/// As `quorumlock_client_acquire`; `resources` and `lens` have `count` readable entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_client_acquire_multi(
    client: *const Client,
    resources: *const *const u8,
    lens: *const usize,
    count: usize,
    opts: *const LockOptions,
    cancel: *const Cancel,
    out: *mut *mut Lock,
    err_out: *mut *mut Error,
) -> QlResult {
    ffi_panic_boundary!(err_out => {
        let list = ffi::byte_list(resources, lens, count)?;
        acquire(client, list, opts, |o| o, cancel, out)
    })
}

/// Extends the lock to `ttl_ms` from now on a quorum of nodes. An expired lock is never
/// revived; a failed extend keeps the previous deadline.
///
/// Errors: `QL_LOST` (terminal), `QL_EXT_LIMIT`, `QL_QUORUM` or `QL_VALIDITY` (transient),
/// `QL_INVALID` (released, bad TTL, other process, engine thread).
///
/// Thread safety: safe from any thread.
/// Blocking: one round trip, bounded by the node timeout and the current deadline.
///
/// # Safety
/// `lock` is NULL or a live lock; `err_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_extend(
    lock: *const Lock,
    ttl_ms: u64,
    err_out: *mut *mut Error,
) -> QlResult {
    ffi_panic_boundary!(err_out => {
        ffi::handle(lock, "lock")?.inner.extend(ms(ttl_ms))?;
        Ok(())
    })
}

/// Releases the lock on every node (compare-and-delete) and stops its auto-extension.
/// Idempotent: a second call returns `QL_OK` and sends nothing. Releasing a lock that was
/// lost is not an error. If `held_out` is not NULL, it receives whether a quorum of nodes
/// still held the lock.
///
/// Thread safety: safe from any thread.
/// Blocking: one round trip, bounded by the node timeout (plus an extend in flight).
/// Returns `QL_INVALID` on an engine thread.
///
/// # Safety
/// `lock` is NULL or a live lock; `held_out` and `err_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_release(
    lock: *const Lock,
    held_out: *mut bool,
    err_out: *mut *mut Error,
) -> QlResult {
    ffi_panic_boundary!(err_out => {
        let report = ffi::handle(lock, "lock")?.inner.release()?;
        if !held_out.is_null() {
            Out::new(held_out, "held_out")?.write(report.was_held_by_quorum());
        }
        Ok(())
    })
}

/// Starts or stops the automatic extension of a held lock.
///
/// Errors: `QL_INVALID` when starting on a lock no longer held, or in another process.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `lock` is NULL or a live lock; `err_out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_set_auto_extend(
    lock: *const Lock,
    on: bool,
    err_out: *mut *mut Error,
) -> QlResult {
    ffi_panic_boundary!(err_out => {
        ffi::handle(lock, "lock")?.inner.as_async().set_auto_extend(on)?;
        Ok(())
    })
}

/// Validity left in milliseconds (rounded down); 0 once expired, lost or released, and for
/// NULL. Act on the protected resource only while this is positive.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `lock` is NULL or a live lock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_remaining_ms(lock: *const Lock) -> u64 {
    ffi_panic_boundary!({
        ffi::handle(lock, "lock").map_or(0, |l| {
            u64::try_from(l.inner.remaining().as_millis()).unwrap_or(u64::MAX)
        })
    })
}

/// The TTL the lock was acquired with, in milliseconds (what an extension with the lock's
/// own TTL uses); 0 for NULL.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `lock` is NULL or a live lock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_ttl_ms(lock: *const Lock) -> u64 {
    ffi_panic_boundary!({
        ffi::handle(lock, "lock").map_or(0, |l| {
            u64::try_from(l.inner.as_async().ttl().as_millis()).unwrap_or(u64::MAX)
        })
    })
}

/// Why the lock was lost (`QL_LOST_EXPIRED`, `QL_LOST_TAKEN`, `QL_LOST_EXTENSION_LIMIT`), or
/// `QL_LOST_NONE` while it is held, after a release, and for NULL. For languages that cannot
/// take the lost callback on an engine thread: poll this (with
/// `quorumlock_lock_remaining_ms`) instead. Sends nothing.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `lock` is NULL or a live lock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_lost_reason(lock: *const Lock) -> u32 {
    ffi_panic_boundary!({
        ffi::handle(lock, "lock")
            .ok()
            .and_then(|l| l.inner.lost_signal().get())
            .map_or(crate::error::LostReasonCode::QL_LOST_NONE as u32, |e| {
                Error::from(e).lost_reason()
            })
    })
}

/// Copies the lock's random value (40 hex characters) into `buf`, `snprintf`-style: at
/// most `len` bytes including the NUL; `*out_n` (if not NULL) gets the full length.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `lock` is NULL or a live lock; `buf` has `len` writable bytes (or `len` is 0); `out_n`
/// is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_value(
    lock: *const Lock,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        ffi::write_text(ffi::handle(lock, "lock")?.inner.value(), buf, len, out_n)
    })
}

/// Frees a lock; NULL does nothing. A lock still held is released in the background.
/// Waits for a lost callback in progress (unless called from it) and prevents later ones.
/// Freeing twice, or using the lock afterwards, is undefined behaviour.
///
/// Thread safety: must not race other calls on the same lock.
/// Blocking: only while a lost callback of this lock runs on another thread.
///
/// # Safety
/// `lock` is NULL or a live lock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_lock_free(lock: *mut Lock) {
    ffi_panic_boundary!({ ffi::free(lock) })
}
