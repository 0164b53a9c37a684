//! The C ABI with arbitrary arguments (bindings/c): configuration and lock-option setters
//! with any bytes (non-UTF-8 included) and numbers, `quorumlock_client_new` on configurations
//! the engine refuses, and `quorumlock_client_try_acquire` with any resource bytes and
//! options on a client whose one node refuses connections. Every call returns a result code
//! of the header, never `QL_INTERNAL` (a caught panic; libFuzzer also aborts on the panic
//! itself); errors can be read and freed.
#![no_main]

use std::ffi::{CStr, c_char};
use std::ptr;
use std::sync::OnceLock;

use ffi::client::{self as c, Client, Config};
use ffi::error::{self as e, Error, QlResult};
use ffi::lock::{self as l, LockOptions};
use libfuzzer_sys::fuzz_target;
use quorumlock_fuzz::Input;

/// A client whose one node (127.0.0.1:1) refuses connections: no traffic ever leaves the
/// machine, and an acquire ends at once with `QL_QUORUM` (or `QL_INVALID`).
struct Shared(*mut Client);
// SAFETY: a client handle is safe to use from any thread (include/quorumlock.h).
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

fn shared() -> *mut Client {
    static CLIENT: OnceLock<Shared> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            let mut cfg = ptr::null_mut();
            let mut client = ptr::null_mut();
            let url = b"redis://127.0.0.1:1";
            // SAFETY: fresh handles and live buffers.
            unsafe {
                assert_eq!(c::quorumlock_config_new(&mut cfg), QlResult::QL_OK);
                assert_eq!(
                    c::quorumlock_config_add_node(cfg, url.as_ptr(), url.len(), ptr::null_mut()),
                    QlResult::QL_OK
                );
                c::quorumlock_config_set_connect_timeout_ms(cfg, 50);
                assert_eq!(
                    c::quorumlock_client_new(cfg, &mut client, ptr::null_mut()),
                    QlResult::QL_OK
                );
                c::quorumlock_config_free(cfg);
            }
            Shared(client)
        })
        .0
}

/// Reads everything an error offers, then frees it.
fn inspect(err: *mut Error, len: usize) {
    if err.is_null() {
        return;
    }
    let mut buf = vec![0 as c_char; len];
    let mut n = 0usize;
    // SAFETY: `err` is a live error; `buf` has `len` bytes.
    unsafe {
        let code = e::quorumlock_error_code(err);
        assert_ne!(code, QlResult::QL_INTERNAL as u32);
        assert_eq!(
            e::quorumlock_error_message(err, buf.as_mut_ptr(), len, &mut n),
            QlResult::QL_OK
        );
        if len > 0 {
            assert!(CStr::from_ptr(buf.as_ptr()).to_bytes().len() < len);
        }
        for i in 0..e::quorumlock_error_node_count(err) + 1 {
            let mut kind = 0u32;
            let _ = e::quorumlock_error_node_kind(err, i, &mut kind);
            let _ = e::quorumlock_error_node_address(err, i, buf.as_mut_ptr(), len, &mut n);
        }
        e::quorumlock_error_free(err);
    }
}

fn ok_or_invalid(r: QlResult) {
    assert!(matches!(r, QlResult::QL_OK | QlResult::QL_INVALID), "{r:?}");
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let mut cfg: *mut Config = ptr::null_mut();
    let mut opts: *mut LockOptions = ptr::null_mut();
    let mut urls: Vec<Vec<u8>> = Vec::new();
    // SAFETY: every handle below is live (or NULL, which every call accepts); every buffer
    // pointer comes with its own length.
    unsafe {
        assert_eq!(c::quorumlock_config_new(&mut cfg), QlResult::QL_OK);
        assert_eq!(l::quorumlock_lock_options_new(&mut opts), QlResult::QL_OK);
        for _ in 0..24 {
            if input.is_empty() {
                break;
            }
            // NULL handles now and then: a result code, never a crash.
            let op = input.u8();
            let (cfg, opts) = if op >= 0xF0 {
                (ptr::null_mut(), ptr::null_mut())
            } else {
                (cfg, opts)
            };
            match op % 20 {
                0 => {
                    let url = input.chunk();
                    let mut err = ptr::null_mut();
                    let r = c::quorumlock_config_add_node(cfg, url.as_ptr(), url.len(), &mut err);
                    ok_or_invalid(r);
                    if r == QlResult::QL_OK {
                        urls.push(url.to_vec());
                    }
                    inspect(err, usize::from(input.u8()));
                }
                1 => ok_or_invalid(c::quorumlock_config_set_drift(
                    cfg,
                    input.f64(),
                    input.u64(),
                )),
                2 => ok_or_invalid(c::quorumlock_config_set_max_ttl_ms(cfg, input.u64())),
                // Tiny connect timeouts only: `quorumlock_client_new` below must not wait.
                3 => ok_or_invalid(c::quorumlock_config_set_connect_timeout_ms(
                    cfg,
                    input.u64() % 100,
                )),
                4 => {
                    let p = input.chunk();
                    ok_or_invalid(c::quorumlock_config_set_key_prefix(
                        cfg,
                        p.as_ptr(),
                        p.len(),
                    ));
                }
                5 => ok_or_invalid(c::quorumlock_config_set_key_format(cfg, input.u32())),
                6 => ok_or_invalid(c::quorumlock_config_set_quarantine(
                    cfg,
                    input.u32(),
                    input.u64(),
                )),
                7 => ok_or_invalid(c::quorumlock_config_set_eviction_check(cfg, input.u32())),
                8 => ok_or_invalid(c::quorumlock_config_set_require_quorum(
                    cfg,
                    input.u8() & 1 == 1,
                )),
                9 => ok_or_invalid(l::quorumlock_lock_options_set_ttl_ms(opts, input.u64())),
                10 => ok_or_invalid(l::quorumlock_lock_options_set_retry_count(
                    opts,
                    input.u32(),
                )),
                11 => ok_or_invalid(l::quorumlock_lock_options_set_retry_delay_ms(
                    opts,
                    input.u64(),
                    input.u64(),
                )),
                12 => ok_or_invalid(l::quorumlock_lock_options_set_min_validity_ms(
                    opts,
                    input.u64(),
                )),
                13 => ok_or_invalid(l::quorumlock_lock_options_set_node_timeout_ms(
                    opts,
                    input.u64(),
                )),
                14 => ok_or_invalid(l::quorumlock_lock_options_set_auto_extend(
                    opts,
                    input.u8() & 1 == 1,
                    input.u64(),
                )),
                15 => ok_or_invalid(l::quorumlock_lock_options_set_limits(
                    opts,
                    input.u32(),
                    input.u64(),
                )),
                16 => {
                    let v = input.chunk();
                    let p = if input.u8() == 0 {
                        ptr::null()
                    } else {
                        v.as_ptr()
                    };
                    let mut err = ptr::null_mut();
                    ok_or_invalid(l::quorumlock_lock_options_set_value(
                        opts,
                        p,
                        v.len(),
                        &mut err,
                    ));
                    inspect(err, usize::from(input.u8()));
                }
                17 => ok_or_invalid(ffi::fence::quorumlock_lock_options_set_fenced(
                    opts,
                    input.u8() & 1 == 1,
                    input.u64(),
                )),
                18 => ok_or_invalid(c::quorumlock_config_set_lock_options(cfg, opts)),
                _ => {
                    let name = e::quorumlock_result_name(input.u32());
                    assert!(!name.is_null());
                    let _ = CStr::from_ptr(name);
                    let name = e::quorumlock_node_kind_name(input.u32());
                    assert!(!name.is_null());
                    let _ = CStr::from_ptr(name);
                }
            }
        }
        // A configuration the engine refuses before connecting: `QL_INVALID`, nothing sent.
        // One it would accept is not connected here (it could name any host).
        let mut builder = quorumlock::Client::builder();
        for u in &urls {
            builder = builder.node(String::from_utf8_lossy(u).into_owned());
        }
        if quorumlock::fuzzing::check(&builder).is_err() || urls.is_empty() {
            let mut client = ptr::null_mut();
            let mut err = ptr::null_mut();
            let r = c::quorumlock_client_new(cfg, &mut client, &mut err);
            assert_eq!(
                r,
                QlResult::QL_INVALID,
                "a configuration refused by the engine"
            );
            assert!(client.is_null());
            inspect(err, 64);
        }
        // Any resource bytes with these options on a client whose node refuses connections.
        let resource = input.rest();
        let mut lock = ptr::null_mut();
        let mut err = ptr::null_mut();
        let r = l::quorumlock_client_try_acquire(
            shared(),
            resource.as_ptr(),
            resource.len(),
            opts,
            &mut lock,
            &mut err,
        );
        assert!(
            matches!(r, QlResult::QL_INVALID | QlResult::QL_QUORUM),
            "{r:?}"
        );
        assert!(lock.is_null());
        inspect(err, 32);
        c::quorumlock_config_free(cfg);
        l::quorumlock_lock_options_free(opts);
    }
});
