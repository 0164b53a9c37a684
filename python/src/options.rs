//! Keyword arguments to core settings: float seconds become `Duration`s, counts become `u32`.
//! Wrong types raise `TypeError`, bad values `InvalidArgument` (a `ValueError`), before
//! anything is sent.

use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};
use quorumlock::{ClientBuilder, EvictionCheck, KeyFormat, LockOptions, Quarantine};

use crate::error::invalid;

/// Float (or int) seconds, finite and not negative, or a `datetime.timedelta` (exact to the
/// microsecond, also for durations too long for a float to hold every millisecond). `bool` is
/// refused although it is an `int`.
pub(crate) fn seconds(name: &str, v: &Bound<'_, PyAny>) -> PyResult<Duration> {
    let number = !v.is_instance_of::<PyBool>()
        && (v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>());
    if !number {
        return timedelta(name, v);
    }
    let secs: f64 = v.extract()?;
    if !secs.is_finite() || secs < 0.0 {
        return Err(invalid(format!(
            "{name} must be a finite, non-negative number of seconds (got {secs})"
        )));
    }
    Duration::try_from_secs_f64(secs)
        .map_err(|_| invalid(format!("{name} is too large (got {secs} s)")))
}

/// A `datetime.timedelta` as a `Duration`; `TypeError` for any other type.
fn timedelta(name: &str, v: &Bound<'_, PyAny>) -> PyResult<Duration> {
    static TIMEDELTA: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    if !v.is_instance(TIMEDELTA.import(v.py(), "datetime", "timedelta")?)? {
        return Err(PyTypeError::new_err(format!(
            "{name} must be a number of seconds (int or float) or a timedelta, not {}",
            v.get_type().name()?
        )));
    }
    let part = |field: &str| -> PyResult<i64> { v.getattr(field)?.extract() };
    let (days, secs, micros) = (part("days")?, part("seconds")?, part("microseconds")?);
    if days < 0 {
        return Err(invalid(format!(
            "{name} must not be negative (got {})",
            v.str()?
        )));
    }
    // days <= 999_999_999, so the seconds fit u64; the parts are normalized (secs < 86400).
    let whole = u64::try_from(days * 86_400 + secs).unwrap_or(0);
    let micros = u64::try_from(micros).unwrap_or(0);
    Ok(Duration::from_secs(whole) + Duration::from_micros(micros))
}

/// A non-negative integer that fits `u32`.
fn count(name: &str, v: &Bound<'_, PyAny>) -> PyResult<u32> {
    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "{name} must be an int, not {}",
            v.get_type().name()?
        )));
    }
    let n: i128 = v
        .extract()
        .map_err(|_| invalid(format!("{name} is out of range")))?;
    u32::try_from(n).map_err(|_| invalid(format!("{name} must be in 0..=4294967295 (got {n})")))
}

fn flag(name: &str, v: &Bound<'_, PyAny>) -> PyResult<bool> {
    if !v.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!("{name} must be a bool")));
    }
    v.extract()
}

/// A `str`.
pub(crate) fn text(name: &str, v: &Bound<'_, PyAny>) -> PyResult<String> {
    let Ok(s) = v.cast::<PyString>() else {
        return Err(PyTypeError::new_err(format!(
            "{name} must be a str, not {}",
            v.get_type().name()?
        )));
    };
    Ok(s.to_str()?.to_owned())
}

/// Applies one lock option; `Ok(false)` when `key` is not a lock option.
fn lock_option(opts: &mut LockOptions, key: &str, v: &Bound<'_, PyAny>) -> PyResult<bool> {
    let o = opts.clone();
    *opts = match key {
        "ttl" => o.ttl(seconds(key, v)?),
        "retry_count" => o.retry_count(count(key, v)?),
        "retry_forever" => {
            if flag(key, v)? {
                o.retry_forever()
            } else {
                o
            }
        }
        "retry_delay" => o.retry_delay(seconds(key, v)?),
        "retry_jitter" => o.retry_jitter(seconds(key, v)?),
        "wait" => o.wait(seconds(key, v)?),
        "min_validity" => o.min_validity(seconds(key, v)?),
        "node_timeout" => o.node_timeout(seconds(key, v)?),
        "auto_extend" => o.auto_extend(flag(key, v)?),
        "extend_interval" => o.extend_interval(seconds(key, v)?),
        "max_extensions" => o.max_extensions(count(key, v)?),
        "max_hold" => o.max_hold(seconds(key, v)?),
        "fenced" => o.fenced(flag(key, v)?),
        "fence_counter_ttl" => o.fence_counter_ttl(seconds(key, v)?),
        "value" => o.value(text(key, v)?),
        _ => return Ok(false),
    };
    Ok(true)
}

fn unexpected(key: &str) -> PyErr {
    PyTypeError::new_err(format!("unexpected keyword argument {key:?}"))
}

/// `base` with the lock options of `kwargs` applied.
pub(crate) fn lock_options(
    base: &LockOptions,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<LockOptions> {
    let mut opts = base.clone();
    for (k, v) in kwargs.into_iter().flat_map(|d| d.iter()) {
        let key: String = k.extract()?;
        if !lock_option(&mut opts, &key, &v)? {
            return Err(unexpected(&key));
        }
    }
    Ok(opts)
}

/// Everything needed to build a client again (after `fork()`).
pub(crate) struct ClientConfig {
    urls: Vec<String>,
    drift_factor: Option<f64>,
    max_ttl: Option<Duration>,
    connect_timeout: Option<Duration>,
    key_prefix: Option<Vec<u8>>,
    key_format: Option<KeyFormat>,
    require_quorum: bool,
    quarantine: Option<Quarantine>,
    quarantine_margin: Option<Duration>,
    eviction_check: Option<EvictionCheck>,
    notify: bool,
    defaults: LockOptions,
}

impl ClientConfig {
    /// Reads node URLs and client keyword arguments (client settings and default lock
    /// options).
    pub(crate) fn parse(
        nodes: &Bound<'_, PyAny>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        if !(nodes.is_instance_of::<PyList>() || nodes.is_instance_of::<PyTuple>()) {
            return Err(PyTypeError::new_err(
                "nodes must be a list of node URLs such as \"redis://host:6379\"",
            ));
        }
        let mut urls = Vec::new();
        for n in nodes.try_iter()? {
            let n = n?;
            if !n.is_instance_of::<PyString>() {
                return Err(PyTypeError::new_err(format!(
                    "every node must be a URL string, not {}",
                    n.get_type().name()?
                )));
            }
            urls.push(n.extract()?);
        }
        let mut cfg = ClientConfig {
            urls,
            drift_factor: None,
            max_ttl: None,
            connect_timeout: None,
            key_prefix: None,
            key_format: None,
            require_quorum: false,
            quarantine: None,
            quarantine_margin: None,
            eviction_check: None,
            notify: true,
            defaults: LockOptions::default(),
        };
        for (k, v) in kwargs.into_iter().flat_map(|d| d.iter()) {
            let key: String = k.extract()?;
            match key.as_str() {
                "drift_factor" => {
                    if v.is_instance_of::<PyBool>() {
                        return Err(PyTypeError::new_err("drift_factor must be a float"));
                    }
                    cfg.drift_factor = Some(
                        v.extract()
                            .map_err(|_| PyTypeError::new_err("drift_factor must be a float"))?,
                    );
                }
                "max_ttl" => cfg.max_ttl = Some(seconds(&key, &v)?),
                "connect_timeout" => cfg.connect_timeout = Some(seconds(&key, &v)?),
                "key_prefix" => cfg.key_prefix = Some(name_bytes("key_prefix", &v)?),
                "key_format" => cfg.key_format = Some(key_format(&v)?),
                "require_quorum" => cfg.require_quorum = flag(&key, &v)?,
                "quarantine" => cfg.quarantine = Some(quarantine(&v)?),
                "quarantine_margin" => cfg.quarantine_margin = Some(seconds(&key, &v)?),
                "eviction_check" => cfg.eviction_check = Some(eviction_check(&v)?),
                "notify" => cfg.notify = flag(&key, &v)?,
                "value" => {
                    return Err(PyTypeError::new_err(
                        "value is a lock option (acquire, lock), not a client setting",
                    ));
                }
                _ => {
                    if !lock_option(&mut cfg.defaults, &key, &v)? {
                        return Err(unexpected(&key));
                    }
                }
            }
        }
        Ok(cfg)
    }

    /// A core builder with these settings.
    pub(crate) fn builder(&self) -> ClientBuilder {
        let mut b = quorumlock::Client::builder()
            .nodes(self.urls.iter().cloned())
            .lock_options(self.defaults.clone())
            .require_quorum(self.require_quorum)
            .notify(self.notify)
            .on_warning(crate::warning::forward);
        if let Some(d) = self.drift_factor {
            b = b.drift_factor(d);
        }
        if let Some(d) = self.max_ttl {
            b = b.max_ttl(d);
        }
        if let Some(d) = self.connect_timeout {
            b = b.connect_timeout(d);
        }
        if let Some(p) = &self.key_prefix {
            b = b.key_prefix(p);
        }
        if let Some(f) = self.key_format {
            b = b.key_format(f);
        }
        if let Some(q) = self.quarantine {
            b = b.quarantine(q);
        }
        if let Some(d) = self.quarantine_margin {
            b = b.quarantine_margin(d);
        }
        if let Some(e) = self.eviction_check {
            b = b.eviction_check(e);
        }
        b
    }
}

/// One of `names` (a `str`), as its index.
fn choice(what: &str, v: &Bound<'_, PyAny>, names: &[&str]) -> PyResult<usize> {
    let Ok(s) = v.cast::<PyString>() else {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a str, not {}",
            v.get_type().name()?
        )));
    };
    let s = s.to_str()?;
    names.iter().position(|n| *n == s).ok_or_else(|| {
        invalid(format!(
            "{what} must be one of {} (got {s:?})",
            names.join(", ")
        ))
    })
}

/// `"on"`, `"strict"` or `"off"`.
fn quarantine(v: &Bound<'_, PyAny>) -> PyResult<Quarantine> {
    Ok(match choice("quarantine", v, &["on", "strict", "off"])? {
        0 => Quarantine::On,
        1 => Quarantine::Strict,
        _ => Quarantine::Off,
    })
}

/// `"braced"` (`<prefix>{<name>}`) or `"bare"` (`<prefix><name>`).
fn key_format(v: &Bound<'_, PyAny>) -> PyResult<KeyFormat> {
    Ok(match choice("key_format", v, &["braced", "bare"])? {
        0 => KeyFormat::Braced,
        _ => KeyFormat::Bare,
    })
}

/// `"refuse"`, `"warn"` or `"off"`.
fn eviction_check(v: &Bound<'_, PyAny>) -> PyResult<EvictionCheck> {
    Ok(
        match choice("eviction_check", v, &["refuse", "warn", "off"])? {
            0 => EvictionCheck::Refuse,
            1 => EvictionCheck::Warn,
            _ => EvictionCheck::Off,
        },
    )
}

/// A `str` (UTF-8) or `bytes` value.
fn name_bytes(what: &str, v: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(s.to_str()?.as_bytes().to_vec());
    }
    if let Ok(b) = v.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be str or bytes, not {}",
        v.get_type().name()?
    )))
}

/// One resource name (`str` or `bytes`) or a list or tuple of them.
pub(crate) fn resources(v: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<u8>>> {
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        v.try_iter()?
            .map(|r| name_bytes("a resource name", &r?))
            .collect()
    } else {
        Ok(vec![name_bytes("a resource name", v)?])
    }
}
