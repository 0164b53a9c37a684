//! Client and lock options from plain JavaScript objects, with the native Node package's
//! names (`ttlMs`, `retryCount`, ...). Durations are whole milliseconds; every bad value is a
//! `QL_INVALID` error naming the field.

use std::time::Duration;

use js_sys::Object;
use quorumlock_proto::config::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_KEY_PREFIX, DEFAULT_QUARANTINE_MARGIN, DEFAULT_REPROBE_EVERY,
    EvictionCheck, KeyFormat, LockOptions, Quarantine, Timing,
};
use quorumlock_proto::error::{Error, Result};
use wasm_bindgen::{JsCast, JsValue};

use crate::js::field;

const MAX_COUNT: f64 = 4_294_967_295.0;

fn number(o: &JsValue, name: &'static str) -> Result<Option<f64>> {
    match field(o, name) {
        None => Ok(None),
        Some(v) => v.as_f64().map(Some).ok_or_else(|| {
            Error::invalid(format!(
                "{name} must be a number (got {})",
                v.js_typeof().as_string().unwrap_or_default()
            ))
        }),
    }
}

fn ms(o: &JsValue, name: &'static str) -> Result<Option<Duration>> {
    number(o, name)?
        .map(|v| {
            if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= 9_007_199_254_740_991.0 {
                Ok(Duration::from_millis(v as u64))
            } else {
                Err(Error::invalid(format!(
                    "{name} must be a whole number of milliseconds >= 0 (got {v})"
                )))
            }
        })
        .transpose()
}

fn count(o: &JsValue, name: &'static str, infinite_ok: bool) -> Result<Option<u32>> {
    number(o, name)?
        .map(|v| {
            if infinite_ok && v == f64::INFINITY {
                return Ok(u32::MAX);
            }
            if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= MAX_COUNT {
                Ok(v as u32)
            } else {
                Err(Error::invalid(format!(
                    "{name} must be a whole number in 0..4294967295{} (got {v})",
                    if infinite_ok { " or Infinity" } else { "" }
                )))
            }
        })
        .transpose()
}

fn boolean(o: &JsValue, name: &'static str) -> Result<Option<bool>> {
    match field(o, name) {
        None => Ok(None),
        Some(v) => v
            .as_bool()
            .map(Some)
            .ok_or_else(|| Error::invalid(format!("{name} must be a boolean"))),
    }
}

fn choice<T: Copy>(o: &JsValue, name: &'static str, options: &[(&str, T)]) -> Result<Option<T>> {
    let Some(v) = field(o, name) else {
        return Ok(None);
    };
    let s = v.as_string().unwrap_or_default();
    options
        .iter()
        .find(|(k, _)| *k == s)
        .map(|(_, t)| Some(*t))
        .ok_or_else(|| {
            let allowed: Vec<String> = options.iter().map(|(k, _)| format!("'{k}'")).collect();
            Error::invalid(format!(
                "{name} must be one of {} (got {v:?})",
                allowed.join(", ")
            ))
        })
}

fn object(o: &JsValue, what: &str) -> Result<()> {
    if o.is_undefined()
        || o.is_null()
        || o.is_instance_of::<Object>() && !js_sys::Array::is_array(o)
    {
        Ok(())
    } else {
        Err(Error::invalid(format!("{what} must be an object")))
    }
}

/// Lock options from `o` over `base`.
pub fn lock_options(o: &JsValue, mut opts: LockOptions) -> Result<LockOptions> {
    object(o, "the lock options")?;
    if o.is_undefined() || o.is_null() {
        return Ok(opts);
    }
    if let Some(d) = ms(o, "ttlMs")? {
        opts = opts.ttl(d);
    }
    if let Some(n) = count(o, "retryCount", true)? {
        opts = opts.retry_count(n);
    }
    if let Some(d) = ms(o, "retryDelayMs")? {
        opts = opts.retry_delay(d);
    }
    if let Some(d) = ms(o, "retryJitterMs")? {
        opts = opts.retry_jitter(d);
    }
    if let Some(d) = ms(o, "waitMs")? {
        opts = opts.wait(d);
    }
    if let Some(d) = ms(o, "minValidityMs")? {
        opts = opts.min_validity(d);
    }
    if let Some(d) = ms(o, "nodeTimeoutMs")? {
        opts = opts.node_timeout(d);
    }
    if let Some(on) = boolean(o, "autoExtend")? {
        opts = opts.auto_extend(on);
    }
    if let Some(d) = ms(o, "extendIntervalMs")? {
        opts = opts.extend_interval(d);
    }
    if let Some(n) = count(o, "maxExtensions", false)? {
        opts = opts.max_extensions(n);
    }
    if let Some(d) = ms(o, "maxHoldMs")? {
        opts = opts.max_hold(d);
    }
    if let Some(on) = boolean(o, "fenced")? {
        opts = opts.fenced(on);
    }
    if let Some(d) = ms(o, "fenceCounterTtlMs")? {
        opts = opts.fence_counter_ttl(d);
    }
    Ok(opts)
}

/// Client-wide settings.
pub struct Settings {
    pub timing: Timing,
    pub defaults: LockOptions,
    pub prefix: Vec<u8>,
    pub key_format: KeyFormat,
    pub quarantine: Quarantine,
    pub eviction: EvictionCheck,
    pub connect_timeout: Duration,
    pub reprobe_every: Duration,
    pub require_quorum: bool,
    pub notify: bool,
}

/// Client settings from `o`; the lock fields of `o` are the default lock options.
pub fn settings(o: &JsValue) -> Result<Settings> {
    object(o, "the client options")?;
    let defaults = lock_options(o, LockOptions::default())?;
    let drift_factor = number(o, "driftFactor")?.unwrap_or(0.01);
    let timing = Timing::checked(
        drift_factor,
        ms(o, "driftConstantMs")?.unwrap_or(Duration::from_millis(2)),
        ms(o, "maxTtlMs")?.unwrap_or(Duration::from_secs(60)),
        ms(o, "quarantineMarginMs")?.unwrap_or(DEFAULT_QUARANTINE_MARGIN),
    )?;
    timing.check(&defaults, defaults.get_ttl())?;
    let connect_timeout = ms(o, "connectTimeoutMs")?.unwrap_or(DEFAULT_CONNECT_TIMEOUT);
    if connect_timeout.is_zero() {
        return Err(Error::invalid("connectTimeoutMs must be positive"));
    }
    let prefix = match field(o, "keyPrefix") {
        None => DEFAULT_KEY_PREFIX.as_bytes().to_vec(),
        Some(v) => v
            .as_string()
            .ok_or_else(|| Error::invalid("keyPrefix must be a string"))?
            .into_bytes(),
    };
    Ok(Settings {
        timing,
        defaults,
        prefix,
        key_format: choice(
            o,
            "keyFormat",
            &[("braced", KeyFormat::Braced), ("bare", KeyFormat::Bare)],
        )?
        .unwrap_or_default(),
        quarantine: choice(
            o,
            "quarantine",
            &[
                ("on", Quarantine::On),
                ("strict", Quarantine::Strict),
                ("off", Quarantine::Off),
            ],
        )?
        .unwrap_or_default(),
        eviction: choice(
            o,
            "evictionCheck",
            &[
                ("refuse", EvictionCheck::Refuse),
                ("warn", EvictionCheck::Warn),
                ("off", EvictionCheck::Off),
            ],
        )?
        .unwrap_or_default(),
        connect_timeout,
        reprobe_every: DEFAULT_REPROBE_EVERY,
        require_quorum: boolean(o, "requireQuorum")?.unwrap_or(false),
        notify: boolean(o, "notify")?.unwrap_or(true),
    })
}
