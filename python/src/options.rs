//! Keyword arguments to core settings, driven by the engine's options table
//! (`quorumlock::options`): a keyword is an option's name; its kind says which Python types it
//! takes (a wrong type raises `TypeError`); the engine converts and checks the value (a value
//! out of range raises `InvalidArgument`, a `ValueError`) before anything is sent.

use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};
use quorumlock::options::{self, Kind, OptionSpec};
use quorumlock::{ClientBuilder, ClientSettings, LockOptions, OptionValue};

use crate::error::ResultExt;

/// Float (or int) seconds, or a `datetime.timedelta` (exact to the microsecond, also for
/// durations too long for a float to hold every millisecond), as the engine's value; `bool`
/// is refused although it is an `int`.
fn seconds_value(name: &str, v: &Bound<'_, PyAny>) -> PyResult<OptionValue> {
    let number = !v.is_instance_of::<PyBool>()
        && (v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>());
    if number {
        return Ok(OptionValue::Seconds(v.extract()?));
    }
    timedelta(name, v)
}

/// A duration argument that is not an option (a timeout, the ttl of an extend): converted by
/// the engine's rules for durations.
pub(crate) fn seconds(name: &str, v: &Bound<'_, PyAny>) -> PyResult<Duration> {
    options::to_duration(name, &seconds_value(name, v)?).or_raise()
}

/// A `datetime.timedelta` as the engine's value (a negative one as its negative seconds,
/// which the engine refuses); `TypeError` for any other type.
fn timedelta(name: &str, v: &Bound<'_, PyAny>) -> PyResult<OptionValue> {
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
        return Ok(OptionValue::Seconds(
            v.call_method0("total_seconds")?.extract()?,
        ));
    }
    // days <= 999_999_999, so the seconds fit u64; the parts are normalized (secs < 86400).
    let whole = u64::try_from(days * 86_400 + secs).unwrap_or(0);
    let micros = u64::try_from(micros).unwrap_or(0);
    Ok(OptionValue::Duration(
        Duration::from_secs(whole) + Duration::from_micros(micros),
    ))
}

/// An `int` (not `bool`), as a number for the engine's range check.
fn count(name: &str, v: &Bound<'_, PyAny>) -> PyResult<OptionValue> {
    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "{name} must be an int, not {}",
            v.get_type().name()?
        )));
    }
    // Beyond i128 it is far out of range anyway; NaN makes the engine say so.
    let n = v.extract::<i128>().map_or(f64::NAN, |n| n as f64);
    Ok(OptionValue::Number(n))
}

/// An `int` or `float` (not `bool`).
fn number(name: &str, v: &Bound<'_, PyAny>) -> PyResult<OptionValue> {
    let ok = !v.is_instance_of::<PyBool>()
        && (v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>());
    if !ok {
        return Err(PyTypeError::new_err(format!(
            "{name} must be a float, not {}",
            v.get_type().name()?
        )));
    }
    Ok(OptionValue::Number(v.extract()?))
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

/// The engine's value of keyword `name` for an option of this kind; `TypeError` for a type
/// the kind does not take.
fn value(spec: &OptionSpec, name: &str, v: &Bound<'_, PyAny>) -> PyResult<OptionValue> {
    Ok(match spec.kind {
        Kind::Duration { .. } => seconds_value(name, v)?,
        Kind::Count => count(name, v)?,
        Kind::Ratio { .. } => number(name, v)?,
        Kind::Flag => OptionValue::Flag(flag(name, v)?),
        Kind::Bytes => OptionValue::Bytes(name_bytes(name, v)?),
        _ => OptionValue::Text(text(name, v)?),
    })
}

/// Python's spelling of `retry_count = 4294967295`: retry until the wait budget is spent or
/// the call is cancelled.
const RETRY_FOREVER: &str = "retry_forever";

/// Applies one lock option; `Ok(false)` when `key` is not a lock option.
fn lock_option(opts: &mut LockOptions, key: &str, v: &Bound<'_, PyAny>) -> PyResult<bool> {
    if key == RETRY_FOREVER {
        if flag(key, v)? {
            *opts = opts.clone().retry_forever();
        }
        return Ok(true);
    }
    let Some(spec) = options::lock_option(key) else {
        return Ok(false);
    };
    opts.set(key, value(spec, key, v)?).or_raise()?;
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
    settings: ClientSettings,
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
            settings: ClientSettings::default(),
            defaults: LockOptions::default(),
        };
        for (k, v) in kwargs.into_iter().flat_map(|d| d.iter()) {
            let key: String = k.extract()?;
            if let Some(spec) = options::client_setting(&key) {
                cfg.settings.set(&key, value(spec, &key, &v)?).or_raise()?;
            } else if options::lock_option(&key).is_some_and(|s| s.per_call) {
                return Err(PyTypeError::new_err(format!(
                    "{key} is a lock option (acquire, lock), not a client setting"
                )));
            } else if !lock_option(&mut cfg.defaults, &key, &v)? {
                return Err(unexpected(&key));
            }
        }
        Ok(cfg)
    }

    /// A core builder with these settings.
    pub(crate) fn builder(&self) -> ClientBuilder {
        quorumlock::Client::builder()
            .nodes(self.urls.iter().cloned())
            .settings(self.settings.clone())
            .lock_options(self.defaults.clone())
            .on_warning(crate::warning::forward)
    }
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
