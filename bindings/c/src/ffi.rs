//! The only raw-pointer code of the crate: handle casts, NULL checks, `(ptr, len)` views,
//! output writes and the lost-callback call. Every export documents, in its `# Safety`
//! section, the contract these helpers rely on: a non-NULL pointer is valid for the access
//! made here, for the duration of the call.

use std::ffi::{CStr, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::error::Error;

/// A NULL pointer argument: `QL_INVALID` naming the parameter.
fn null(name: &str) -> Error {
    Error::invalid(format!("{name} is NULL"))
}

/// Borrows a handle created by a `_new` function.
pub(crate) fn handle<'a, T>(ptr: *const T, name: &str) -> Result<&'a T, Error> {
    // SAFETY: the caller passes NULL or a live handle that no other call frees meanwhile.
    unsafe { ptr.as_ref() }.ok_or_else(|| null(name))
}

/// Borrows a handle mutably (setters of builder-style objects).
pub(crate) fn handle_mut<'a, T>(ptr: *mut T, name: &str) -> Result<&'a mut T, Error> {
    // SAFETY: as `handle`, and builder objects are documented as not shared between threads
    // while being changed.
    unsafe { ptr.as_mut() }.ok_or_else(|| null(name))
}

/// Moves a value to the heap and hands ownership to C.
pub(crate) fn into_raw<T>(value: T) -> *mut T {
    Box::into_raw(Box::new(value))
}

/// Takes back and drops a handle given out by [`into_raw`]; NULL does nothing.
pub(crate) fn free<T>(ptr: *mut T) {
    if !ptr.is_null() {
        // SAFETY: non-NULL handles come from `into_raw` and are freed once (a double free
        // is documented as undefined behaviour).
        drop(unsafe { Box::from_raw(ptr) });
    }
}

/// Views `(ptr, len)` as bytes. `len == 0` gives an empty slice even for NULL.
pub(crate) fn bytes<'a>(ptr: *const u8, len: usize, name: &str) -> Result<&'a [u8], Error> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(null(name));
    }
    if len > isize::MAX as usize {
        return Err(Error::invalid(format!("{name}: length {len} is too large")));
    }
    // SAFETY: the caller guarantees `len` readable bytes at `ptr`.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Views `(ptr, len)` as UTF-8 text.
pub(crate) fn utf8<'a>(ptr: *const u8, len: usize, name: &str) -> Result<&'a str, Error> {
    std::str::from_utf8(bytes(ptr, len, name)?)
        .map_err(|e| Error::invalid(format!("{name} is not valid UTF-8 ({e})")))
}

/// Views `count` resources given as parallel arrays of pointers and lengths.
pub(crate) fn byte_list<'a>(
    ptrs: *const *const u8,
    lens: *const usize,
    count: usize,
) -> Result<Vec<&'a [u8]>, Error> {
    if count == 0 {
        return Err(Error::invalid("at least one resource is required"));
    }
    if ptrs.is_null() {
        return Err(null("resources"));
    }
    if lens.is_null() {
        return Err(null("lengths"));
    }
    if count > isize::MAX as usize / size_of::<usize>() {
        return Err(Error::invalid("count is too large"));
    }
    // SAFETY: the caller guarantees `count` readable entries in both arrays.
    let (ptrs, lens) = unsafe {
        (
            std::slice::from_raw_parts(ptrs, count),
            std::slice::from_raw_parts(lens, count),
        )
    };
    ptrs.iter()
        .zip(lens)
        .map(|(&p, &n)| bytes(p, n, "resources[i]"))
        .collect()
}

/// An output parameter, checked for NULL before any work is done and written only on
/// success.
pub(crate) struct Out<T>(*mut T);

impl<T> Out<T> {
    /// Checks `ptr` for NULL.
    pub(crate) fn new(ptr: *mut T, name: &str) -> Result<Self, Error> {
        if ptr.is_null() {
            Err(null(name))
        } else {
            Ok(Self(ptr))
        }
    }

    /// Writes the output.
    pub(crate) fn write(self, value: T) {
        // SAFETY: checked non-NULL in `new`; the caller guarantees it is writable.
        unsafe { self.0.write(value) }
    }
}

/// Writes `*err_out` when `err_out` is not NULL.
pub(crate) fn set_error(err_out: *mut *mut Error, error: Error) {
    if !err_out.is_null() {
        // SAFETY: a non-NULL `err_out` points at a writable `quorumlock_error *`.
        unsafe { err_out.write(into_raw(error)) }
    }
}

/// `snprintf`-style text output: writes at most `len` bytes including the NUL to `buf`
/// (nothing when `len == 0`) and the full length of `text` to `*out_n` (if not NULL).
pub(crate) fn write_text(
    text: &str,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> Result<(), Error> {
    if buf.is_null() && len > 0 {
        return Err(null("buf"));
    }
    if len > 0 {
        let n = text.len().min(len - 1);
        // SAFETY: `buf` is non-NULL with `len` writable bytes (caller contract), and at most
        // `n + 1 <= len` bytes are written; the source is a distinct Rust string.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), buf, n);
            buf.add(n).write(0);
        }
    }
    if !out_n.is_null() {
        // SAFETY: a non-NULL `out_n` points at a writable `size_t`.
        unsafe { out_n.write(text.len()) }
    }
    Ok(())
}

/// A static C string.
pub(crate) fn static_str(s: &'static CStr) -> *const c_char {
    s.as_ptr()
}

/// The lost-lock callback as C sees it.
pub type LostCallback =
    Option<unsafe extern "C" fn(userdata: *mut c_void, reason: u32, detail: *const Error)>;

/// Called with each warning of a client (`quorumlock_config_set_warning_callback`): its
/// stable code (`QL_W_NOT_DURABLE`, ...), the node index (-1 when about no one node) and
/// the message, both NUL-terminated and valid only during the call.
pub type WarningCallback = Option<
    unsafe extern "C" fn(
        userdata: *mut c_void,
        code: *const c_char,
        node: i64,
        message: *const c_char,
    ),
>;

/// A warning callback and its `userdata`, carried to an engine thread.
#[derive(Clone, Copy)]
pub(crate) struct OnWarning {
    callback: unsafe extern "C" fn(*mut c_void, *const c_char, i64, *const c_char),
    userdata: *mut c_void,
}

// SAFETY: the header requires the callback to be callable from any thread and `userdata` to
// stay valid (and usable from that thread) until the client is freed; the crate never
// dereferences `userdata` itself.
unsafe impl Send for OnWarning {}
// SAFETY: as for `Send`; the pair is only copied and passed back to C.
unsafe impl Sync for OnWarning {}

impl OnWarning {
    /// `None` for a NULL callback.
    pub(crate) fn new(callback: WarningCallback, userdata: *mut c_void) -> Option<Self> {
        callback.map(|callback| Self { callback, userdata })
    }

    /// Calls the callback with `w`; texts with a NUL byte (never produced) are cut there.
    pub(crate) fn call(&self, w: &quorumlock::Warning) {
        let text = |s: &str| {
            std::ffi::CString::new(s.split('\0').next().unwrap_or_default()).unwrap_or_default()
        };
        let (code, message) = (text(w.kind().as_str()), text(w.message()));
        let node = w.node().and_then(|n| i64::try_from(n).ok()).unwrap_or(-1);
        let _ = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: the callback and userdata were registered together by the caller for
            // this purpose; both strings live for the duration of the call.
            unsafe { (self.callback)(self.userdata, code.as_ptr(), node, message.as_ptr()) }
        }));
    }
}

/// A callback and its `userdata`, carried to an engine thread.
#[derive(Clone, Copy)]
pub(crate) struct OnLost {
    callback: unsafe extern "C" fn(*mut c_void, u32, *const Error),
    userdata: *mut c_void,
}

// SAFETY: the header requires the callback to be callable from any thread and `userdata` to
// stay valid (and usable from that thread) until the lock is freed; the crate never
// dereferences `userdata` itself.
unsafe impl Send for OnLost {}
// SAFETY: as for `Send`; the pair is only copied and passed back to C.
unsafe impl Sync for OnLost {}

impl OnLost {
    /// `None` for a NULL callback.
    pub(crate) fn new(callback: LostCallback, userdata: *mut c_void) -> Option<Self> {
        callback.map(|callback| Self { callback, userdata })
    }

    /// Calls the callback; a panic (impossible from C, but cheap to rule out) is swallowed.
    pub(crate) fn call(&self, reason: u32, detail: &Error) {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: the callback and userdata were registered together by the caller for
            // this purpose; `detail` lives for the duration of the call.
            unsafe { (self.callback)(self.userdata, reason, detail) }
        }));
    }
}
