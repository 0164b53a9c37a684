//! The configuration builder and the client handle.

use std::ffi::c_void;
use std::time::Duration;

use quorumlock::{ClientSettings, EvictionCheck, KeyFormat, Quarantine, blocking};

use crate::error::{Error, QlResult};
use crate::ffi::{self, OnWarning, Out, WarningCallback};
use crate::lock::LockOptions;
use crate::panic::ffi_panic_boundary;

/// Client settings: node URLs, timing and default lock options. Built with
/// `quorumlock_config_new` and the setters, read by `quorumlock_client_new`.
pub struct Config {
    nodes: Vec<String>,
    /// Stored as given; `quorumlock_client_new` checks them (`ClientSettings::check`).
    settings: ClientSettings,
    on_warning: Option<OnWarning>,
    defaults: LockOptions,
}

/// A connected client over N independent Redis masters.
pub struct Client {
    pub(crate) inner: blocking::Client,
    pub(crate) defaults: LockOptions,
}

/// Creates an empty configuration with the defaults of REDLOCK.md §11 (drift factor 0.01,
/// drift constant 2 ms, max TTL 60 s, connect timeout 1 s, prefix `quorumlock:`).
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_config_new(out: *mut *mut Config) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        Out::new(out, "out")?.write(ffi::into_raw(Config {
            nodes: Vec::new(),
            settings: ClientSettings::default(),
            on_warning: None,
            defaults: LockOptions::default(),
        }));
        Ok(())
    })
}

/// Frees a configuration; NULL does nothing. Freeing twice is undefined behaviour.
///
/// Thread safety: must not race other calls on the same configuration.
/// Blocking: never blocks.
///
/// # Safety
/// `cfg` is NULL or a live configuration.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_config_free(cfg: *mut Config) {
    ffi_panic_boundary!({ ffi::free(cfg) })
}

/// Adds a node URL (`redis://[user:password@]host:port[/db]`, `rediss://` for TLS), given as
/// `url_len` UTF-8 bytes (no NUL needed). `QL_INVALID` for NULL or invalid UTF-8; the URL
/// itself is checked by `quorumlock_client_new`.
///
/// Thread safety: a configuration must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `cfg` is NULL or a live configuration; `url` has `url_len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_config_add_node(
    cfg: *mut Config,
    url: *const u8,
    url_len: usize,
    err_out: *mut *mut Error,
) -> QlResult {
    ffi_panic_boundary!(err_out => {
        let cfg = ffi::handle_mut(cfg, "cfg")?;
        let url = ffi::utf8(url, url_len, "url")?;
        cfg.nodes.push(url.to_owned());
        Ok(())
    })
}

/// Sets the clock drift allowance `ttl * factor + constant_ms` (defaults 0.01 and 2 ms);
/// the factor must be in `0.0..0.5` (checked by `quorumlock_client_new`).
///
/// Thread safety: a configuration must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `cfg` is NULL or a live configuration.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_config_set_drift(
    cfg: *mut Config,
    factor: f64,
    constant_ms: u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let cfg = ffi::handle_mut(cfg, "cfg")?;
        cfg.settings.drift_factor = factor;
        cfg.settings.drift_constant = Duration::from_millis(constant_ms);
        Ok(())
    })
}

/// Sets the largest accepted TTL (default 60 s); every client of the same nodes must agree.
///
/// Thread safety: a configuration must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `cfg` is NULL or a live configuration.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_config_set_max_ttl_ms(cfg: *mut Config, ms: u64) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        ffi::handle_mut(cfg, "cfg")?.settings.max_ttl = Duration::from_millis(ms);
        Ok(())
    })
}

/// Sets how long `quorumlock_client_new` waits for the first connections (default 1 s).
///
/// Thread safety: a configuration must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `cfg` is NULL or a live configuration.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_config_set_connect_timeout_ms(
    cfg: *mut Config,
    ms: u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        ffi::handle_mut(cfg, "cfg")?.settings.connect_timeout = Duration::from_millis(ms);
        Ok(())
    })
}

/// Sets the key prefix (default `quorumlock:`); keys are `<prefix>{<resource>}`.
///
/// Thread safety: a configuration must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `cfg` is NULL or a live configuration; `prefix` has `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_config_set_key_prefix(
    cfg: *mut Config,
    prefix: *const u8,
    len: usize,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let cfg = ffi::handle_mut(cfg, "cfg")?;
        cfg.settings.key_prefix = ffi::bytes(prefix, len, "prefix")?.to_vec();
        Ok(())
    })
}

/// Makes `quorumlock_client_new` fail unless a quorum of nodes connected (default off:
/// nodes join as they come up).
///
/// Thread safety: a configuration must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `cfg` is NULL or a live configuration.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_config_set_require_quorum(
    cfg: *mut Config,
    on: bool,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        ffi::handle_mut(cfg, "cfg")?.settings.require_quorum = on;
        Ok(())
    })
}

/// Release notification (default on): a waiting acquisition listens on its keys' release
/// channels and stands in the key's line of waiters (its waiter flag), and a release wakes the
/// first waiter in line at once instead of after its retry delay. Off: waiters only poll.
///
/// Thread safety: a configuration must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `cfg` is NULL or a live configuration.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_config_set_notify(cfg: *mut Config, on: bool) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        ffi::handle_mut(cfg, "cfg")?.settings.notify = on;
        Ok(())
    })
}

/// Calls `callback(userdata, code, node, message)` with each warning of the client, once per
/// kind and node: a node counted without durable writes while the quarantine is off
/// (`QL_W_NOT_DURABLE`), one server listed twice, counted once (`QL_W_DUPLICATE_NODE`),
/// `INFO` refused, an evicting node with `QL_EVICTION_WARN`, release notification denied.
/// NULL turns it off (warnings then go only to the engine's log).
///
/// Thread safety: a configuration must not be changed from two threads at once. The
/// callback runs on an engine thread, must be callable from any thread, must not block, and
/// `userdata` must stay valid until the client is freed.
/// Blocking: never blocks.
///
/// # Safety
/// `cfg` is NULL or a live configuration; `callback` is NULL or a function of this type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_config_set_warning_callback(
    cfg: *mut Config,
    callback: WarningCallback,
    userdata: *mut c_void,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        ffi::handle_mut(cfg, "cfg")?.on_warning = OnWarning::new(callback, userdata);
        Ok(())
    })
}

/// The mode with C constant `value`: the constants number the engine's modes in the order of
/// their `ALL` (a unit test checks each constant against its mode's spelling).
fn code<T: Copy>(all: &[T], value: u32, what: &str) -> Result<T, Error> {
    usize::try_from(value)
        .ok()
        .and_then(|i| all.get(i).copied())
        .ok_or_else(|| Error::invalid(format!("unknown {what} {value}")))
}

/// Restart quarantine modes (`quorumlock_config_set_quarantine`); numbers are stable.
#[repr(u32)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub enum QuarantineCode {
    /// A node without durable writes is not counted until it has been up for max TTL +
    /// quarantine margin; a node that refuses `INFO` is counted, with a warning (default).
    QL_QUARANTINE_ON = 0,
    /// As `QL_QUARANTINE_ON`, but a node that refuses `INFO` is never counted.
    QL_QUARANTINE_STRICT = 1,
    /// No checks: only for nodes whose operators delay restarts themselves.
    QL_QUARANTINE_OFF = 2,
}

/// How resource names become keys (`quorumlock_config_set_key_format`); numbers are stable.
#[repr(u32)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub enum KeyFormatCode {
    /// `<prefix>{<resource>}`: a lock key and its fencing counter share a Redis Cluster hash
    /// slot whatever the name contains (default).
    QL_KEY_BRACED = 0,
    /// `<prefix><resource>`: with an empty prefix, the bare name, as redlock-rb, redlock-php,
    /// Redis::DistLock and RedLock.net use; for drop-ins that share keys with those libraries
    /// during a migration.
    QL_KEY_BARE = 1,
}

/// Sets how resource names become keys (`QL_KEY_*`, default `QL_KEY_BRACED`). `QL_INVALID`
/// for an unknown format.
///
/// Thread safety: a configuration must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `cfg` is NULL or a live configuration.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_config_set_key_format(
    cfg: *mut Config,
    format: u32,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let cfg = ffi::handle_mut(cfg, "cfg")?;
        cfg.settings.key_format = code(KeyFormat::ALL, format, "key format")?;
        Ok(())
    })
}

/// What to do with a node whose eviction policy can remove lock keys
/// (`quorumlock_config_set_eviction_check`); numbers are stable.
#[repr(u32)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub enum EvictionCheckCode {
    /// Exclude the node, reported as `QL_NODE_EVICTION_POLICY` (default).
    QL_EVICTION_REFUSE = 0,
    /// Count the node and log a warning.
    QL_EVICTION_WARN = 1,
    /// Skip the check.
    QL_EVICTION_OFF = 2,
}

/// Sets the restart quarantine mode (`QL_QUARANTINE_*`, default `QL_QUARANTINE_ON`) and,
/// when `margin_ms` is not 0, the margin a fresh non-durable node stays out beyond the max
/// TTL (default 5000). `QL_INVALID` for an unknown mode.
///
/// Thread safety: a configuration must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `cfg` is NULL or a live configuration.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_config_set_quarantine(
    cfg: *mut Config,
    mode: u32,
    margin_ms: u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let cfg = ffi::handle_mut(cfg, "cfg")?;
        cfg.settings.quarantine = code(Quarantine::ALL, mode, "quarantine mode")?;
        if margin_ms > 0 {
            cfg.settings.quarantine_margin = Duration::from_millis(margin_ms);
        }
        Ok(())
    })
}

/// Sets the eviction-policy check (`QL_EVICTION_*`, default `QL_EVICTION_REFUSE`).
/// `QL_INVALID` for an unknown mode.
///
/// Thread safety: a configuration must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `cfg` is NULL or a live configuration.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_config_set_eviction_check(
    cfg: *mut Config,
    mode: u32,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        ffi::handle_mut(cfg, "cfg")?.settings.eviction_check =
            code(EvictionCheck::ALL, mode, "eviction check mode")?;
        Ok(())
    })
}

/// Copies `opts` (callback included) as the client's defaults, used when an acquire
/// function gets NULL options.
///
/// Thread safety: a configuration must not be changed from two threads at once.
/// Blocking: never blocks.
///
/// # Safety
/// `cfg` is NULL or a live configuration; `opts` is NULL or live options.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_config_set_lock_options(
    cfg: *mut Config,
    opts: *const LockOptions,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let cfg = ffi::handle_mut(cfg, "cfg")?;
        cfg.defaults = ffi::handle(opts, "opts")?.clone();
        Ok(())
    })
}

/// Validates the configuration and connects to every node in parallel.
///
/// Errors: `QL_INVALID` for a bad configuration (no nodes, a bad URL, a duplicate node, a
/// TTL outside the limits; nothing is sent); with require_quorum, `QL_CONNECTION`,
/// `QL_AUTH`, ... when fewer than a quorum connected (with the node report).
///
/// Thread safety: safe from any thread; `cfg` may be reused and freed afterwards.
/// Blocking: up to twice the connect timeout (default 1 s). Returns `QL_INVALID` on an
/// engine thread (inside a lost callback).
///
/// # Safety
/// `cfg` is NULL or a live configuration; `out` is NULL or writable; `err_out` is NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_client_new(
    cfg: *const Config,
    out: *mut *mut Client,
    err_out: *mut *mut Error,
) -> QlResult {
    ffi_panic_boundary!(err_out => {
        let cfg = ffi::handle(cfg, "cfg")?;
        let out = Out::new(out, "out")?;
        let mut builder = quorumlock::Client::builder()
            .nodes(cfg.nodes.iter().cloned())
            .settings(cfg.settings.clone())
            .lock_options(cfg.defaults.inner.clone());
        if let Some(hook) = cfg.on_warning {
            builder = builder.on_warning(move |w| hook.call(w));
        }
        let inner = blocking::Client::from_builder(builder)?;
        out.write(ffi::into_raw(Client {
            inner,
            defaults: cfg.defaults.clone(),
        }));
        Ok(())
    })
}

/// Frees a client; NULL does nothing. Locks acquired through it stay usable. Freeing twice
/// is undefined behaviour.
///
/// Thread safety: must not race other calls on the same client.
/// Blocking: never blocks.
///
/// # Safety
/// `client` is NULL or a live client.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_client_free(client: *mut Client) {
    ffi_panic_boundary!({ ffi::free(client) })
}

/// Number of configured nodes N (0 for NULL).
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `client` is NULL or a live client.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_client_node_count(client: *const Client) -> usize {
    ffi_panic_boundary!({
        ffi::handle(client, "client").map_or(0, |c| c.inner.as_async().node_count())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_constants_number_the_engines_modes() {
        use EvictionCheckCode::*;
        use KeyFormatCode::*;
        use QuarantineCode::*;
        let quarantine = [
            (QL_QUARANTINE_ON as u32, "on"),
            (QL_QUARANTINE_STRICT as u32, "strict"),
            (QL_QUARANTINE_OFF as u32, "off"),
        ];
        for (c, name) in quarantine {
            assert_eq!(
                code(Quarantine::ALL, c, "").ok().map(Quarantine::as_str),
                Some(name)
            );
        }
        let eviction = [
            (QL_EVICTION_REFUSE as u32, "refuse"),
            (QL_EVICTION_WARN as u32, "warn"),
            (QL_EVICTION_OFF as u32, "off"),
        ];
        for (c, name) in eviction {
            assert_eq!(
                code(EvictionCheck::ALL, c, "")
                    .ok()
                    .map(EvictionCheck::as_str),
                Some(name)
            );
        }
        let formats = [
            (QL_KEY_BRACED as u32, "braced"),
            (QL_KEY_BARE as u32, "bare"),
        ];
        for (c, name) in formats {
            assert_eq!(
                code(KeyFormat::ALL, c, "").ok().map(KeyFormat::as_str),
                Some(name)
            );
        }
        assert_eq!(Quarantine::ALL.len(), quarantine.len());
        assert_eq!(EvictionCheck::ALL.len(), eviction.len());
        assert_eq!(KeyFormat::ALL.len(), formats.len());
        assert!(code(Quarantine::ALL, 3, "").is_err());
    }
}
