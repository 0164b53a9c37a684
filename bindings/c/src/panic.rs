//! The panic boundary: every export runs its body inside [`ffi_panic_boundary!`], so no
//! panic ever unwinds into C. A caught panic becomes `QL_INTERNAL`, or the safe default of
//! the return type ([`PanicDefault`]) for the few functions that return no code.

use std::ffi::c_char;

/// The value an export returns when its body panicked.
pub(crate) trait PanicDefault {
    /// The safe default.
    fn panic_default() -> Self;
}

impl PanicDefault for *const c_char {
    fn panic_default() -> Self {
        std::ptr::null()
    }
}

impl PanicDefault for usize {
    fn panic_default() -> Self {
        0
    }
}

impl PanicDefault for u32 {
    fn panic_default() -> Self {
        0
    }
}

impl PanicDefault for u64 {
    fn panic_default() -> Self {
        0
    }
}

impl PanicDefault for bool {
    fn panic_default() -> Self {
        false
    }
}

impl PanicDefault for () {
    fn panic_default() -> Self {}
}

/// Runs an export's body behind `catch_unwind`.
///
/// `ffi_panic_boundary!(err_out => { ... })`: the body returns `Result<(), Error>`; the
/// export returns `QL_OK`, or the error's code with the error stored in `*err_out` (when
/// `err_out` is not NULL). A panic returns `QL_INTERNAL`.
///
/// `ffi_panic_boundary!({ ... })`: the body returns a plain value; a panic returns
/// [`PanicDefault::panic_default`].
macro_rules! ffi_panic_boundary {
    ($err_out:expr => $body:block) => {{
        let err_out = $err_out;
        let run = || -> ::std::result::Result<(), $crate::error::Error> { $body };
        let outcome = ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(run))
            .unwrap_or_else(|_| Err($crate::error::Error::internal()));
        match outcome {
            Ok(()) => $crate::error::QlResult::QL_OK,
            Err(e) => {
                let code = e.code();
                $crate::ffi::set_error(err_out, e);
                code
            }
        }
    }};
    ($body:block) => {{
        let run = || $body;
        ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(run))
            .unwrap_or_else(|_| $crate::panic::PanicDefault::panic_default())
    }};
}

pub(crate) use ffi_panic_boundary;
