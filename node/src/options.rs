//! Client and lock options, driven by the engine's options table (`quorumlock::options`):
//! `optionSpecs()` tells `index.js` each option's Node key and kind (it checks the types), and
//! `parseOptions()` converts and checks the values with the engine, naming them by their Node
//! keys. Durations are integer milliseconds.

use std::time::Duration;

use napi_derive::napi;
use quorumlock::options::{self, Kind, OptionSpec, Scope};
use quorumlock::{ClientBuilder, ClientSettings, LockOptions, OptionValue};

use crate::error::NativeError;

/// One option of the engine's table, as `index.js` needs it.
#[napi(object, object_from_js = false)]
pub struct OptionSpecEntry {
    /// The engine's name (snake_case), e.g. `"ttl"`.
    pub name: String,
    /// The key in Node options objects, e.g. `"ttlMs"`.
    pub key: String,
    /// `"lock"` or `"client"`.
    pub scope: String,
    /// `"duration"` (milliseconds), `"count"`, `"number"`, `"flag"`, `"bytes"`, `"choice"` or
    /// `"text"`.
    pub unit: String,
    /// Only per acquisition, not as a client default.
    pub per_call: bool,
}

/// Every lock option, then every client setting.
#[napi(catch_unwind)]
pub fn option_specs() -> Vec<OptionSpecEntry> {
    options::LOCK_OPTIONS
        .iter()
        .chain(options::CLIENT_SETTINGS)
        .map(|s| OptionSpecEntry {
            name: s.name.to_owned(),
            key: s.js_name(),
            scope: match s.scope {
                Scope::Lock => "lock",
                Scope::Client => "client",
            }
            .to_owned(),
            unit: s.kind.unit().to_owned(),
            per_call: s.per_call,
        })
        .collect()
}

/// One option's value as `index.js` passes it (type-checked there): the engine's name and
/// the value in the field its unit uses.
#[napi(object)]
pub struct NativeOption {
    /// The engine's name.
    pub name: String,
    /// Durations (milliseconds), counts and numbers.
    pub number: Option<f64>,
    /// Flags.
    pub flag: Option<bool>,
    /// Choices, bytes and text.
    pub text: Option<String>,
}

/// Options the engine has converted and checked, ready to apply.
#[napi]
pub struct NativeOptions {
    entries: Vec<(&'static OptionSpec, OptionValue)>,
}

/// `{ value }` or `{ error }` of [`parse_options`].
#[napi(object, object_from_js = false)]
pub struct OptionsOutcome {
    /// The checked options.
    pub value: Option<NativeOptions>,
    /// The engine's message about the first value out of range (`index.js` throws it as a
    /// `RangeError` with code `QL_INVALID`).
    pub error: Option<String>,
}

fn spec(name: &str) -> Option<&'static OptionSpec> {
    options::lock_option(name).or_else(|| options::client_setting(name))
}

/// The engine's value of `o`.
fn value(spec: &OptionSpec, o: NativeOption) -> OptionValue {
    let number = o.number.unwrap_or(f64::NAN);
    match spec.kind {
        Kind::Duration { .. } => OptionValue::Millis(number),
        Kind::Count | Kind::Ratio { .. } => OptionValue::Number(number),
        Kind::Flag => OptionValue::Flag(o.flag.unwrap_or_default()),
        Kind::Bytes => OptionValue::Bytes(o.text.unwrap_or_default().into_bytes()),
        _ => OptionValue::Text(o.text.unwrap_or_default()),
    }
}

impl NativeOptions {
    fn parse(list: Vec<NativeOption>) -> quorumlock::Result<NativeOptions> {
        let mut entries = Vec::with_capacity(list.len());
        let (mut lock, mut client) = (LockOptions::default(), ClientSettings::default());
        for o in list {
            let Some(spec) = spec(&o.name) else {
                return Err(quorumlock::Error::invalid(format!(
                    "unknown option {:?}",
                    o.name
                )));
            };
            let v = value(spec, o);
            match spec.scope {
                Scope::Lock => lock.set_as(spec.name, &spec.js_name(), v.clone())?,
                Scope::Client => client.set_as(spec.name, &spec.js_name(), v.clone())?,
            }
            entries.push((spec, v));
        }
        Ok(NativeOptions { entries })
    }

    /// These options' lock options over `base`.
    pub(crate) fn lock_options(&self, mut base: LockOptions) -> Result<LockOptions, NativeError> {
        for (spec, v) in &self.entries {
            if spec.scope == Scope::Lock {
                base.set_as(spec.name, &spec.js_name(), v.clone())
                    .map_err(|e| NativeError::from(&e))?;
            }
        }
        Ok(base)
    }

    /// A core builder for `nodes` with these options' client settings and default lock
    /// options.
    pub(crate) fn builder(&self, nodes: Vec<String>) -> Result<ClientBuilder, NativeError> {
        let mut settings = ClientSettings::default();
        for (spec, v) in &self.entries {
            if spec.scope == Scope::Client {
                settings
                    .set_as(spec.name, &spec.js_name(), v.clone())
                    .map_err(|e| NativeError::from(&e))?;
            }
        }
        Ok(quorumlock::Client::builder()
            .nodes(nodes)
            .settings(settings)
            .lock_options(self.lock_options(LockOptions::default())?))
    }
}

/// Converts and checks options with the engine (nothing is sent); resolves to
/// `{ value: NativeOptions }`, or `{ error }` with the engine's message.
#[napi(catch_unwind)]
pub fn parse_options(options: Vec<NativeOption>) -> OptionsOutcome {
    match NativeOptions::parse(options) {
        Ok(v) => OptionsOutcome {
            value: Some(v),
            error: None,
        },
        Err(e) => OptionsOutcome {
            value: None,
            error: Some(e.message().to_owned()),
        },
    }
}

/// A duration in milliseconds that is not an option (the ttl of an extend), converted by the
/// engine's rules; a `QL_INVALID` error naming it otherwise.
pub(crate) fn millis(name: &str, v: f64) -> Result<Duration, NativeError> {
    options::to_duration(name, &OptionValue::Millis(v)).map_err(|e| NativeError::from(&e))
}
