//! The one table of options: every lock option ([`LOCK_OPTIONS`]) and client setting
//! ([`CLIENT_SETTINGS`]) with its name, kind, range, default and meaning.
//!
//! - Bindings parse options by iterating these tables: Python keywords are the names, Node keys
//!   are [`OptionSpec::js_name`], the CLI's config file keys are the names. They check the
//!   *type* of a value themselves (a `TypeError` in Python and JavaScript) and hand it over as an
//!   [`OptionValue`] in their own representation (milliseconds, float seconds, ...).
//! - [`LockOptions::set`] and [`ClientSettings::set`] convert such a value and check it against
//!   its range ([`OptionSpec::parse`]); the error is `InvalidArgument` with one message format,
//!   `<name> must be <requirement> (got <value>)`, naming the option as the caller spells it
//!   ([`LockOptions::set_as`]).
//! - [`LockOptions::check`] and [`ClientSettings::check`] apply the same range checks to values
//!   set through the Rust builders or the C setters, when acquiring and when connecting.
//! - `docs/options.md` is [`markdown`]'s output; a test in `proto/tests/options.rs` fails when it
//!   is stale (`QL_BLESS=1` rewrites it) or when a binding's type declarations miss an option.

use std::fmt::Write as _;
use std::time::Duration;

use super::{ClientSettings, EvictionCheck, KeyFormat, LockOptions, MAX_TTL_LIMIT, Quarantine};
use crate::error::{Error, Result};
use crate::value::MIN_GIVEN_LEN;

/// Which object an option belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// A lock option ([`LockOptions`]): per acquisition, or a client's default for them.
    Lock,
    /// A client setting ([`ClientSettings`]): one value for every lock of a client.
    Client,
}

/// What kind of value an option takes, with its range.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Kind {
    /// A duration in `min..=max`: milliseconds in C and Node (keys end in `Ms`), seconds (a
    /// number or a `timedelta`) in Python, humantime (`500ms`, `30s`) in the CLI.
    Duration {
        /// The smallest accepted value.
        min: Duration,
        /// The largest accepted value.
        max: Duration,
    },
    /// A whole number in `0..=4294967295`.
    Count,
    /// A real number in `min..below`.
    Ratio {
        /// The smallest accepted value.
        min: f64,
        /// The first value above the range.
        below: f64,
    },
    /// `true` or `false`.
    Flag,
    /// Bytes; text (UTF-8) in bindings without a bytes type.
    Bytes,
    /// One of these spellings.
    Choice(&'static [&'static str]),
    /// A lock value given by the caller: at least [`MIN_GIVEN_LEN`] printable ASCII
    /// characters without spaces.
    LockValue,
}

impl Kind {
    /// The name of the kind in bindings' option tables and in the docs: `duration`, `count`,
    /// `number`, `flag`, `bytes`, `choice` or `text`.
    pub const fn unit(self) -> &'static str {
        match self {
            Kind::Duration { .. } => "duration",
            Kind::Count => "count",
            Kind::Ratio { .. } => "number",
            Kind::Flag => "flag",
            Kind::Bytes => "bytes",
            Kind::Choice(_) => "choice",
            Kind::LockValue => "text",
        }
    }
}

/// One option: the single place its name, kind, range, default and meaning are written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OptionSpec {
    /// The name: the Rust builder method, the Python keyword, the config-file key; snake_case.
    pub name: &'static str,
    /// Lock option or client setting.
    pub scope: Scope,
    /// Kind and range of the value.
    pub kind: Kind,
    /// What applies while the option is not set, for options whose default is not a value
    /// (`ttl / 10`, `unlimited`); empty when the default is a value (it is then read from
    /// [`LockOptions::default`] or [`ClientSettings::default`]).
    pub when_unset: &'static str,
    /// Only per acquisition: not accepted as a client's default lock option.
    pub per_call: bool,
    /// What the option does, in one or two sentences (Markdown).
    pub doc: &'static str,
}

const MS: Duration = Duration::from_millis(1);

const fn duration(min: Duration) -> Kind {
    Kind::Duration {
        min,
        max: MAX_TTL_LIMIT,
    }
}

const fn lock(
    name: &'static str,
    kind: Kind,
    when_unset: &'static str,
    doc: &'static str,
) -> OptionSpec {
    OptionSpec {
        name,
        scope: Scope::Lock,
        kind,
        when_unset,
        per_call: false,
        doc,
    }
}

const fn client(name: &'static str, kind: Kind, doc: &'static str) -> OptionSpec {
    OptionSpec {
        name,
        scope: Scope::Client,
        kind,
        when_unset: "",
        per_call: false,
        doc,
    }
}

/// The ttl: also the range of the ttl an extension asks for.
pub const TTL: OptionSpec = lock(
    "ttl",
    duration(MS),
    "",
    "Lock time-to-live, sent as `PX` in whole milliseconds; at most the client's `max_ttl`.",
);

/// Every lock option, in the order the docs list them.
pub const LOCK_OPTIONS: &[OptionSpec] = &[
    TTL,
    lock(
        "retry_count",
        Kind::Count,
        "",
        "Retries after the first attempt; 0 means exactly one attempt, 4294967295 retries until the `wait` budget is spent or the call is cancelled.",
    ),
    lock(
        "retry_delay",
        duration(Duration::ZERO),
        "",
        "Fixed part of the delay between attempts.",
    ),
    lock(
        "retry_jitter",
        duration(Duration::ZERO),
        "",
        "Random part of the delay between attempts, drawn uniformly from `0..retry_jitter`.",
    ),
    lock(
        "wait",
        duration(Duration::ZERO),
        "none",
        "Total wait budget: no attempt starts after it would be exceeded.",
    ),
    lock(
        "min_validity",
        duration(Duration::ZERO),
        "`ttl / 10`",
        "Validity a successful attempt must leave; 0 accepts any positive validity.",
    ),
    lock(
        "node_timeout",
        duration(MS),
        "`clamp(ttl / 200, 5 ms, 50 ms)`",
        "Deadline of one request round on one node.",
    ),
    lock(
        "auto_extend",
        Kind::Flag,
        "",
        "Keep the lock alive in the background until it is released (scoped helpers and the CLI turn it on).",
    ),
    lock(
        "extend_interval",
        duration(MS),
        "`ttl / 3`",
        "Interval of the automatic extension.",
    ),
    lock(
        "max_extensions",
        Kind::Count,
        "unlimited",
        "Cap on the number of successful extensions.",
    ),
    lock(
        "max_hold",
        duration(MS),
        "unlimited",
        "Cap on the total holding time: no extension whose deadline would pass `acquired_at + max_hold` starts.",
    ),
    lock(
        "fenced",
        Kind::Flag,
        "",
        "Return a fencing token with the lock, strictly greater than every token returned before for the same resource (REDLOCK.md §7); costs a counter key per resource and node and a `TIME` call.",
    ),
    lock(
        "fence_counter_ttl",
        duration(MS),
        "never",
        "Let the fencing counters expire after this long without writes; at least `max_ttl + quarantine_margin`, a day or more recommended.",
    ),
    OptionSpec {
        per_call: true,
        ..lock(
            "value",
            Kind::LockValue,
            "fresh random per attempt",
            "Use this lock value instead of a fresh random one per attempt, for compatibility layers whose users choose it; generated values are safer (REDLOCK.md §2.2). Not a client default.",
        )
    },
];

/// Every client setting, in the order the docs list them.
pub const CLIENT_SETTINGS: &[OptionSpec] = &[
    client(
        "drift_factor",
        Kind::Ratio {
            min: 0.0,
            below: 0.5,
        },
        "Drift factor `d` of the allowance `ttl * d + drift_constant` (REDLOCK.md §1.3).",
    ),
    client(
        "drift_constant",
        duration(Duration::ZERO),
        "Drift constant `c` of the allowance `ttl * drift_factor + c`.",
    ),
    client(
        "max_ttl",
        duration(MS),
        "Upper bound for any ttl; defines the restart quarantine. Every client of the same nodes must use the same value.",
    ),
    client(
        "connect_timeout",
        duration(MS),
        "How long connecting waits for the first connections; nodes not connected by then keep connecting in the background.",
    ),
    client(
        "reprobe_every",
        duration(MS),
        "How often a connection's settings (uptime, persistence, eviction policy, role) are read again, since `CONFIG SET` can change them.",
    ),
    client(
        "key_prefix",
        Kind::Bytes,
        "Prefix of every lock key; every client of a lock must agree.",
    ),
    client(
        "key_format",
        Kind::Choice(KeyFormat::NAMES),
        "`braced`: keys are `<prefix>{<resource>}` (one Redis Cluster slot for a key and its fencing counter); `bare`: `<prefix><resource>`, for compatibility layers sharing keys with the libraries they replace.",
    ),
    client(
        "require_quorum",
        Kind::Flag,
        "Fail connecting unless a quorum of nodes connected; otherwise nodes join as they come up.",
    ),
    client(
        "quarantine",
        Kind::Choice(Quarantine::NAMES),
        "Restart quarantine (REDLOCK.md §8.2): `on` keeps a node without durable writes out until it has been up `max_ttl + quarantine_margin`; `strict` also never counts a node that refuses `INFO`; `off` skips the checks.",
    ),
    client(
        "quarantine_margin",
        duration(Duration::ZERO),
        "Extra quarantine time beyond `max_ttl`; every client of the same nodes should agree.",
    ),
    client(
        "eviction_check",
        Kind::Choice(EvictionCheck::NAMES),
        "Nodes whose eviction policy can remove lock keys (REDLOCK.md §8.3): `refuse` leaves them out, `warn` counts them with a warning, `off` skips the check.",
    ),
    client(
        "notify",
        Kind::Flag,
        "Release notification (REDLOCK.md §9): a waiting acquisition listens on its keys' release channels and stands in the key's line of waiters (its waiter flag), and a release wakes the first waiter in line at once instead of after its retry delay; a waiter for one unfenced key is granted the key by the release (set to a value it registered), so it holds the lock without an attempt of its own.",
    ),
];

/// The lock option called `name`.
pub fn lock_option(name: &str) -> Option<&'static OptionSpec> {
    LOCK_OPTIONS.iter().find(|s| s.name == name)
}

/// The client setting called `name`.
pub fn client_setting(name: &str) -> Option<&'static OptionSpec> {
    CLIENT_SETTINGS.iter().find(|s| s.name == name)
}

/// A value as a binding received it; [`OptionSpec::parse`] converts it to the option's
/// [`Value`] and checks it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum OptionValue {
    /// A boolean.
    Flag(bool),
    /// An exact duration (Rust, Python's `timedelta`, the CLI's humantime).
    Duration(Duration),
    /// A duration as a number of milliseconds (C, Node); must be whole.
    Millis(f64),
    /// A duration as a number of seconds (Python).
    Seconds(f64),
    /// A number: a count (must be whole) or a ratio.
    Number(f64),
    /// Text: a choice's spelling, a lock value, or bytes given as UTF-8.
    Text(String),
    /// Bytes.
    Bytes(Vec<u8>),
}

impl OptionValue {
    /// What kind of value this is, for messages.
    fn describe(&self) -> &'static str {
        match self {
            OptionValue::Flag(_) => "a flag",
            OptionValue::Duration(_) | OptionValue::Millis(_) | OptionValue::Seconds(_) => {
                "a duration"
            }
            OptionValue::Number(_) => "a number",
            OptionValue::Text(_) => "text",
            OptionValue::Bytes(_) => "bytes",
        }
    }
}

/// A converted and checked value of an option.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// [`Kind::Flag`].
    Flag(bool),
    /// [`Kind::Duration`].
    Duration(Duration),
    /// [`Kind::Count`].
    Count(u32),
    /// [`Kind::Ratio`].
    Ratio(f64),
    /// [`Kind::Choice`] (the spelling) and [`Kind::LockValue`].
    Text(String),
    /// [`Kind::Bytes`].
    Bytes(Vec<u8>),
}

fn invalid(message: String) -> Error {
    Error::invalid(message)
}

/// The largest whole number of milliseconds every binding carries exactly: 2^53 - 1.
const MAX_SAFE_MS: f64 = 9_007_199_254_740_991.0;

/// `1 ms`, `0 ms`, or the `Debug` form for durations that are not whole milliseconds.
fn show(d: Duration) -> String {
    if d.subsec_nanos().is_multiple_of(1_000_000) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{d:?}")
    }
}

/// The limit as the docs and messages write it.
fn show_max(d: Duration) -> String {
    if d == MAX_TTL_LIMIT {
        "2^53 - 1 ms".to_owned()
    } else {
        show(d)
    }
}

/// Converts a duration given as a number (`Millis`: finite, whole, at most 2^53 - 1;
/// `Seconds`: finite) or exactly (`Duration`), with no range check beyond what a duration can
/// hold; `shown` names it in the error. Bindings also use it for durations that are not
/// options (a timeout, the ttl of an extend).
///
/// # Errors
/// `InvalidArgument` for a negative, infinite, NaN or fractional (milliseconds) number, or a
/// value that is not a duration.
pub fn to_duration(shown: &str, value: &OptionValue) -> Result<Duration> {
    match *value {
        OptionValue::Duration(d) => Ok(d),
        OptionValue::Millis(ms) => {
            if !ms.is_finite() || ms < 0.0 {
                return Err(invalid(format!(
                    "{shown} must be a finite, non-negative number of milliseconds (got {ms})"
                )));
            }
            if ms.fract() != 0.0 {
                return Err(invalid(format!(
                    "{shown} must be a whole number of milliseconds (got {ms})"
                )));
            }
            if ms > MAX_SAFE_MS {
                return Err(invalid(format!(
                    "{shown} must be at most {} (got {ms})",
                    show_max(MAX_TTL_LIMIT)
                )));
            }
            // Whole and at most 2^53 - 1: the conversion is exact.
            Ok(Duration::from_millis(ms as u64))
        }
        OptionValue::Seconds(s) => {
            if !s.is_finite() || s < 0.0 {
                return Err(invalid(format!(
                    "{shown} must be a finite, non-negative number of seconds (got {s})"
                )));
            }
            Duration::try_from_secs_f64(s).map_err(|_| {
                invalid(format!(
                    "{shown} must be at most {} (got {s} s)",
                    show_max(MAX_TTL_LIMIT)
                ))
            })
        }
        ref other => Err(invalid(format!(
            "{shown} must be a duration (got {})",
            other.describe()
        ))),
    }
}

/// The error of a spelling that is not one of `names`.
pub(crate) fn choice_error(shown: &str, names: &[&str], got: &str) -> Error {
    invalid(format!(
        "{shown} must be one of {} (got {got:?})",
        names.join(", ")
    ))
}

impl OptionSpec {
    /// The Node key: camelCase of the name, with `Ms` appended for durations (`ttlMs`,
    /// `retryCount`, `keyPrefix`).
    pub fn js_name(&self) -> String {
        let mut out = String::with_capacity(self.name.len() + 2);
        let mut upper = false;
        for c in self.name.chars() {
            if c == '_' {
                upper = true;
            } else if upper {
                out.push(c.to_ascii_uppercase());
                upper = false;
            } else {
                out.push(c);
            }
        }
        if matches!(self.kind, Kind::Duration { .. }) {
            out.push_str("Ms");
        }
        out
    }

    /// Converts `value` to this option's kind and checks its range; `shown` is how the
    /// caller's surface spells the option (`ttl`, `ttlMs`, `--max-ttl`), used in the error.
    ///
    /// # Errors
    /// `InvalidArgument`: `<shown> must be <requirement> (got <value>)`.
    pub fn parse(&self, shown: &str, value: OptionValue) -> Result<Value> {
        let converted = match (self.kind, value) {
            (
                Kind::Duration { .. },
                v @ (OptionValue::Duration(_) | OptionValue::Millis(_) | OptionValue::Seconds(_)),
            ) => Value::Duration(to_duration(shown, &v)?),
            (Kind::Count, OptionValue::Number(n)) => {
                if n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n <= f64::from(u32::MAX) {
                    // Whole and in range: the conversion is exact.
                    Value::Count(n as u32)
                } else {
                    return Err(invalid(format!(
                        "{shown} must be a whole number in 0..={} (got {n})",
                        u32::MAX
                    )));
                }
            }
            (Kind::Ratio { .. }, OptionValue::Number(n)) => Value::Ratio(n),
            (Kind::Flag, OptionValue::Flag(b)) => Value::Flag(b),
            (Kind::Bytes, OptionValue::Bytes(b)) => Value::Bytes(b),
            (Kind::Bytes, OptionValue::Text(t)) => Value::Bytes(t.into_bytes()),
            (Kind::Choice(_) | Kind::LockValue, OptionValue::Text(t)) => Value::Text(t),
            (kind, other) => {
                return Err(invalid(format!(
                    "{shown} must be {} (got {})",
                    expected(kind),
                    other.describe()
                )));
            }
        };
        self.check(shown, &converted)?;
        Ok(converted)
    }

    /// Checks a converted value against this option's range; `shown` names it in the error.
    ///
    /// # Errors
    /// `InvalidArgument`: `<shown> must be <requirement> (got <value>)`.
    pub fn check(&self, shown: &str, value: &Value) -> Result<()> {
        match (self.kind, value) {
            (Kind::Duration { min, max }, Value::Duration(d)) => {
                if *d < min {
                    return Err(invalid(format!(
                        "{shown} must be at least {} (got {})",
                        show(min),
                        show(*d)
                    )));
                }
                if *d > max {
                    return Err(invalid(format!(
                        "{shown} must be at most {} (got {})",
                        show_max(max),
                        show(*d)
                    )));
                }
                Ok(())
            }
            (Kind::Ratio { min, below }, Value::Ratio(r)) => {
                if r.is_finite() && *r >= min && *r < below {
                    Ok(())
                } else {
                    Err(invalid(format!(
                        "{shown} must be a number in {min:?}..{below:?} (got {r})"
                    )))
                }
            }
            (Kind::Choice(names), Value::Text(t)) => {
                if names.contains(&t.as_str()) {
                    Ok(())
                } else {
                    Err(choice_error(shown, names, t))
                }
            }
            (Kind::LockValue, Value::Text(t)) => crate::value::check_given(t),
            (Kind::Count, Value::Count(_))
            | (Kind::Flag, Value::Flag(_))
            | (Kind::Bytes, Value::Bytes(_)) => Ok(()),
            (kind, _) => Err(invalid(format!("{shown} must be {}", expected(kind)))),
        }
    }

    /// The range as the docs write it.
    pub fn range_text(&self) -> String {
        match self.kind {
            Kind::Duration { min, max } => format!("{} to {}", show(min), show_max(max)),
            Kind::Count => format!("0 to {}", u32::MAX),
            Kind::Ratio { min, below } => format!("{min:?} to below {below:?}"),
            Kind::Flag => "`true`, `false`".to_owned(),
            Kind::Bytes => "any".to_owned(),
            Kind::Choice(names) => names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", "),
            Kind::LockValue => {
                format!("{MIN_GIVEN_LEN}+ printable ASCII characters, no spaces")
            }
        }
    }

    /// The default as the docs write it: the value of a fresh [`LockOptions`] or
    /// [`ClientSettings`], or [`when_unset`](Self::when_unset).
    pub fn default_text(&self) -> String {
        let value = match self.scope {
            Scope::Lock => LockOptions::default().get(self.name),
            Scope::Client => ClientSettings::default().get(self.name),
        };
        match value {
            None => self.when_unset.to_owned(),
            Some(Value::Duration(d)) if d >= Duration::from_secs(1) && d.subsec_nanos() == 0 => {
                format!("{} s", d.as_secs())
            }
            Some(Value::Duration(d)) => show(d),
            Some(Value::Count(n)) => n.to_string(),
            Some(Value::Ratio(r)) => r.to_string(),
            Some(Value::Flag(b)) => format!("`{b}`"),
            Some(Value::Text(t)) => format!("`{t}`"),
            Some(Value::Bytes(b)) => format!("`{}`", String::from_utf8_lossy(&b)),
        }
    }
}

/// What a kind requires, for messages.
fn expected(kind: Kind) -> String {
    match kind {
        Kind::Duration { .. } => "a duration".to_owned(),
        Kind::Count => format!("a whole number in 0..={}", u32::MAX),
        Kind::Ratio { min, below } => format!("a number in {min:?}..{below:?}"),
        Kind::Flag => "true or false".to_owned(),
        Kind::Bytes => "text or bytes".to_owned(),
        Kind::Choice(names) => format!("one of {}", names.join(", ")),
        Kind::LockValue => "text".to_owned(),
    }
}

fn unknown(what: &str, name: &str) -> Error {
    invalid(format!("unknown {what} {name:?}"))
}

/// A value whose kind does not match its option: only a bug in this module (the tests set
/// every option) can produce it.
fn mismatch(name: &str) -> Error {
    invalid(format!(
        "{name}: the value does not match the option's kind"
    ))
}

impl LockOptions {
    /// Sets the option called `name` (see [`LOCK_OPTIONS`]) from a binding's value, after
    /// converting and checking it; errors name the option `name`.
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown name or a value out of range; nothing changes then.
    pub fn set(&mut self, name: &str, value: OptionValue) -> Result<()> {
        self.set_as(name, name, value)
    }

    /// [`set`](Self::set), with errors naming the option `shown` (the caller's spelling, e.g.
    /// `ttlMs`).
    ///
    /// # Errors
    /// As [`set`](Self::set).
    pub fn set_as(&mut self, name: &str, shown: &str, value: OptionValue) -> Result<()> {
        let spec = lock_option(name).ok_or_else(|| unknown("lock option", name))?;
        let value = spec.parse(shown, value)?;
        self.apply(spec.name, value)
    }

    fn apply(&mut self, name: &str, value: Value) -> Result<()> {
        match (name, value) {
            ("ttl", Value::Duration(d)) => self.ttl = d,
            ("retry_count", Value::Count(n)) => self.retry_count = n,
            ("retry_delay", Value::Duration(d)) => self.retry_delay = d,
            ("retry_jitter", Value::Duration(d)) => self.retry_jitter = d,
            ("wait", Value::Duration(d)) => self.wait = Some(d),
            ("min_validity", Value::Duration(d)) => self.min_validity = Some(d),
            ("node_timeout", Value::Duration(d)) => self.node_timeout = Some(d),
            ("auto_extend", Value::Flag(b)) => self.auto_extend = b,
            ("extend_interval", Value::Duration(d)) => self.extend_interval = Some(d),
            ("max_extensions", Value::Count(n)) => self.max_extensions = Some(n),
            ("max_hold", Value::Duration(d)) => self.max_hold = Some(d),
            ("fenced", Value::Flag(b)) => self.fenced = b,
            ("fence_counter_ttl", Value::Duration(d)) => self.fence_counter_ttl = Some(d),
            ("value", Value::Text(t)) => self.value = Some(t),
            _ => return Err(mismatch(name)),
        }
        Ok(())
    }

    /// The value of the option called `name`; `None` while it is not set (its default is
    /// then computed, see [`OptionSpec::when_unset`]) or for an unknown name.
    pub fn get(&self, name: &str) -> Option<Value> {
        let d = Value::Duration;
        match name {
            "ttl" => Some(d(self.ttl)),
            "retry_count" => Some(Value::Count(self.retry_count)),
            "retry_delay" => Some(d(self.retry_delay)),
            "retry_jitter" => Some(d(self.retry_jitter)),
            "wait" => self.wait.map(d),
            "min_validity" => self.min_validity.map(d),
            "node_timeout" => self.node_timeout.map(d),
            "auto_extend" => Some(Value::Flag(self.auto_extend)),
            "extend_interval" => self.extend_interval.map(d),
            "max_extensions" => self.max_extensions.map(Value::Count),
            "max_hold" => self.max_hold.map(d),
            "fenced" => Some(Value::Flag(self.fenced)),
            "fence_counter_ttl" => self.fence_counter_ttl.map(d),
            "value" => self.value.clone().map(Value::Text),
            _ => None,
        }
    }

    /// Checks every option against its range ([`LOCK_OPTIONS`]), however it was set.
    /// [`Timing::check`](super::Timing::check) runs it before each acquisition and extension.
    ///
    /// # Errors
    /// `InvalidArgument` naming the first option out of range.
    pub fn check(&self) -> Result<()> {
        for spec in LOCK_OPTIONS {
            if let Some(v) = self.get(spec.name) {
                spec.check(spec.name, &v)?;
            }
        }
        Ok(())
    }
}

impl ClientSettings {
    /// Sets the setting called `name` (see [`CLIENT_SETTINGS`]) from a binding's value, after
    /// converting and checking it; errors name the setting `name`.
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown name or a value out of range; nothing changes then.
    pub fn set(&mut self, name: &str, value: OptionValue) -> Result<()> {
        self.set_as(name, name, value)
    }

    /// [`set`](Self::set), with errors naming the setting `shown` (the caller's spelling,
    /// e.g. `maxTtlMs` or `--max-ttl`).
    ///
    /// # Errors
    /// As [`set`](Self::set).
    pub fn set_as(&mut self, name: &str, shown: &str, value: OptionValue) -> Result<()> {
        let spec = client_setting(name).ok_or_else(|| unknown("client setting", name))?;
        let value = spec.parse(shown, value)?;
        self.apply(spec.name, value)
    }

    fn apply(&mut self, name: &str, value: Value) -> Result<()> {
        match (name, value) {
            ("drift_factor", Value::Ratio(r)) => self.drift_factor = r,
            ("drift_constant", Value::Duration(d)) => self.drift_constant = d,
            ("max_ttl", Value::Duration(d)) => self.max_ttl = d,
            ("connect_timeout", Value::Duration(d)) => self.connect_timeout = d,
            ("reprobe_every", Value::Duration(d)) => self.reprobe_every = d,
            ("key_prefix", Value::Bytes(b)) => self.key_prefix = b,
            ("key_format", Value::Text(t)) => self.key_format = t.parse()?,
            ("require_quorum", Value::Flag(b)) => self.require_quorum = b,
            ("quarantine", Value::Text(t)) => self.quarantine = t.parse()?,
            ("quarantine_margin", Value::Duration(d)) => self.quarantine_margin = d,
            ("eviction_check", Value::Text(t)) => self.eviction_check = t.parse()?,
            ("notify", Value::Flag(b)) => self.notify = b,
            _ => return Err(mismatch(name)),
        }
        Ok(())
    }

    /// The value of the setting called `name`; `None` for an unknown name.
    pub fn get(&self, name: &str) -> Option<Value> {
        let text = |s: &str| Some(Value::Text(s.to_owned()));
        match name {
            "drift_factor" => Some(Value::Ratio(self.drift_factor)),
            "drift_constant" => Some(Value::Duration(self.drift_constant)),
            "max_ttl" => Some(Value::Duration(self.max_ttl)),
            "connect_timeout" => Some(Value::Duration(self.connect_timeout)),
            "reprobe_every" => Some(Value::Duration(self.reprobe_every)),
            "key_prefix" => Some(Value::Bytes(self.key_prefix.clone())),
            "key_format" => text(self.key_format.as_str()),
            "require_quorum" => Some(Value::Flag(self.require_quorum)),
            "quarantine" => text(self.quarantine.as_str()),
            "quarantine_margin" => Some(Value::Duration(self.quarantine_margin)),
            "eviction_check" => text(self.eviction_check.as_str()),
            "notify" => Some(Value::Flag(self.notify)),
            _ => None,
        }
    }

    /// Checks every setting against its range ([`CLIENT_SETTINGS`]), however it was set;
    /// connecting runs it first.
    ///
    /// # Errors
    /// `InvalidArgument` naming the first setting out of range.
    pub fn check(&self) -> Result<()> {
        for spec in CLIENT_SETTINGS {
            if let Some(v) = self.get(spec.name) {
                spec.check(spec.name, &v)?;
            }
        }
        Ok(())
    }
}

/// The header of `docs/options.md`.
const DOC_INTRO: &str = "\
<!-- Generated from proto/src/config/spec.rs: run `QL_BLESS=1 cargo test -p quorumlock-proto --test options` after changing an option, never edit by hand. -->
# Options

Every lock option and client setting is declared once, in `quorumlock_proto::config::spec`
(`LOCK_OPTIONS`, `CLIENT_SETTINGS`); this page, the bindings' option parsing and the engine's
checks all come from that table. The reasons behind the defaults are in
[REDLOCK.md §11](REDLOCK.md#11-defaults).

- **Names.** Rust builder methods, Python keywords and `quorumlock.toml` keys use the name;
  Node uses the Node key (camelCase, `Ms` appended for durations). C has setters per option or
  group (`quorumlock_lock_options_set_*`, `quorumlock_config_set_*` in `include/quorumlock.h`);
  its `wait` is the timeout of `quorumlock_client_acquire_timeout`, and `reprobe_every` has no
  setter yet.
- **Durations** are milliseconds in C and Node (whole numbers), seconds (a number or a
  `datetime.timedelta`) in Python, and humantime (`500ms`, `30s`, `2m`) in the CLI.
- **Checks.** A value of the wrong type is a `TypeError` in Python and Node. A value out of
  range is refused by the engine with one message, `<name> must be <requirement> (got
  <value>)`: `InvalidArgument` (`QL_INVALID`) in Rust, C and Python, a `RangeError` whose
  `code` is `QL_INVALID` in Node, exit 113 in the CLI. Python and Node check when the options
  are given; C, like Rust's builders, when acquiring or connecting. Checks that involve two
  settings (a ttl above `max_ttl`, no validity left after the drift) run when acquiring.
";

fn table(out: &mut String, specs: &[OptionSpec]) {
    out.push_str("| name | Node key | kind | default | range | meaning |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for s in specs {
        let _ = writeln!(
            out,
            "| `{}` | `{}` | {} | {} | {} | {} |",
            s.name,
            s.js_name(),
            s.kind.unit(),
            s.default_text(),
            s.range_text(),
            s.doc
        );
    }
}

/// `docs/options.md`: the tables of lock options and client settings.
pub fn markdown() -> String {
    let mut out = String::from(DOC_INTRO);
    out.push_str("\n## Lock options\n\n");
    out.push_str(
        "Per acquisition, or as a client's defaults (given with the client settings); `value` only per acquisition.\n\n",
    );
    table(&mut out, LOCK_OPTIONS);
    out.push_str("\n## Client settings\n\n");
    out.push_str("One value for every lock of a client.\n\n");
    table(&mut out, CLIENT_SETTINGS);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid value of each option, different from its default where one exists.
    fn sample(spec: &OptionSpec) -> OptionValue {
        let default = match spec.scope {
            Scope::Lock => LockOptions::default().get(spec.name),
            Scope::Client => ClientSettings::default().get(spec.name),
        };
        match spec.kind {
            Kind::Flag => OptionValue::Flag(default != Some(Value::Flag(true))),
            Kind::Duration { .. } => OptionValue::Duration(Duration::from_secs(3600)),
            Kind::Count => OptionValue::Number(7.0),
            Kind::Ratio { .. } => OptionValue::Number(0.25),
            Kind::Bytes => OptionValue::Text("app:".into()),
            Kind::Choice(names) => OptionValue::Text(names[names.len() - 1].into()),
            Kind::LockValue => OptionValue::Text("0123456789abcdef-given".into()),
        }
    }

    #[test]
    fn every_option_is_set_and_read_back_by_name() {
        let mut names: Vec<&str> = Vec::new();
        for spec in LOCK_OPTIONS {
            let mut o = LockOptions::default();
            o.set(spec.name, sample(spec)).unwrap();
            let got = o.get(spec.name).unwrap();
            assert_eq!(
                Some(got.clone()),
                spec.parse(spec.name, sample(spec)).ok(),
                "{}",
                spec.name
            );
            assert_ne!(
                Some(got),
                LockOptions::default().get(spec.name),
                "{}",
                spec.name
            );
            names.push(spec.name);
        }
        for spec in CLIENT_SETTINGS {
            let mut s = ClientSettings::default();
            s.set(spec.name, sample(spec)).unwrap();
            let got = s.get(spec.name).unwrap();
            assert_ne!(
                Some(got),
                ClientSettings::default().get(spec.name),
                "{}",
                spec.name
            );
            names.push(spec.name);
        }
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "an option name is declared twice");
    }

    #[test]
    fn defaults_are_values_or_described() {
        for spec in LOCK_OPTIONS.iter().chain(CLIENT_SETTINGS) {
            let unset = match spec.scope {
                Scope::Lock => LockOptions::default().get(spec.name).is_none(),
                Scope::Client => ClientSettings::default().get(spec.name).is_none(),
            };
            assert_eq!(
                unset,
                !spec.when_unset.is_empty(),
                "{}: when_unset describes exactly the defaults that are not values",
                spec.name
            );
            // The defaults pass their own checks.
            if let Some(v) = LockOptions::default().get(spec.name) {
                spec.check(spec.name, &v).unwrap();
            }
        }
        LockOptions::default().check().unwrap();
        ClientSettings::default().check().unwrap();
    }

    #[test]
    fn unknown_names_and_other_kinds_are_refused() {
        let mut o = LockOptions::default();
        assert!(o.set("ttls", OptionValue::Millis(5.0)).is_err());
        assert!(o.set("ttl", OptionValue::Flag(true)).is_err());
        assert!(o.set("retry_count", OptionValue::Millis(3.0)).is_err());
        let mut s = ClientSettings::default();
        assert!(s.set("ttl", OptionValue::Millis(5.0)).is_err());
        assert!(s.set("notify", OptionValue::Text("yes".into())).is_err());
        assert_eq!(o, LockOptions::default());
        assert_eq!(s, ClientSettings::default());
    }

    fn message(r: Result<()>) -> String {
        r.err().map(|e| e.message().to_owned()).unwrap_or_default()
    }

    #[test]
    fn ranges_with_one_message_format() {
        let mut o = LockOptions::default();
        let m = message(o.set_as("ttl", "ttlMs", OptionValue::Millis(0.0)));
        assert_eq!(m, "ttlMs must be at least 1 ms (got 0 ms)");
        for bad in [-1.0, f64::NAN, f64::INFINITY, 1.5, 2f64.powi(60)] {
            assert!(o.set("ttl", OptionValue::Millis(bad)).is_err(), "{bad}");
        }
        assert!(o.set("ttl", OptionValue::Millis(MAX_SAFE_MS)).is_ok());
        let m = message(o.set("ttl", OptionValue::Seconds(-1.0)));
        assert!(m.contains("non-negative") && m.contains("seconds"), "{m}");
        assert!(o.set("ttl", OptionValue::Seconds(2f64.powi(70))).is_err());
        assert!(o.set("node_timeout", OptionValue::Seconds(0.0)).is_err());
        assert!(o.set("retry_delay", OptionValue::Seconds(0.0)).is_ok());
        let m = message(o.set("retry_count", OptionValue::Number(2f64.powi(40))));
        assert_eq!(
            m,
            "retry_count must be a whole number in 0..=4294967295 (got 1099511627776)"
        );
        assert!(o.set("retry_count", OptionValue::Number(-1.0)).is_err());
        assert!(
            o.set("retry_count", OptionValue::Number(f64::INFINITY))
                .is_err()
        );
        assert!(
            o.set("retry_count", OptionValue::Number(4_294_967_295.0))
                .is_ok()
        );
        let m = message(o.set("value", OptionValue::Text("short".into())));
        assert!(m.contains("16 printable"), "{m}");

        let mut s = ClientSettings::default();
        let m = message(s.set("drift_factor", OptionValue::Number(0.7)));
        assert_eq!(m, "drift_factor must be a number in 0.0..0.5 (got 0.7)");
        assert!(
            s.set("drift_factor", OptionValue::Number(f64::NAN))
                .is_err()
        );
        assert!(s.set("drift_factor", OptionValue::Number(0.0)).is_ok());
        let m = message(s.set_as("quarantine", "--quarantine", OptionValue::Text("On".into())));
        assert_eq!(
            m,
            "--quarantine must be one of on, strict, off (got \"On\")"
        );
        assert!(s.set("max_ttl", OptionValue::Millis(0.0)).is_err());
        assert!(s.set("quarantine_margin", OptionValue::Millis(0.0)).is_ok());
        assert!(s.set("key_prefix", OptionValue::Bytes(vec![0xff])).is_ok());
    }

    #[test]
    fn values_set_by_builders_are_checked_too() {
        assert!(
            LockOptions::default()
                .node_timeout(Duration::ZERO)
                .check()
                .is_err()
        );
        assert!(
            LockOptions::default()
                .ttl(Duration::from_secs(u64::MAX))
                .check()
                .is_err()
        );
        assert!(LockOptions::default().value("short").check().is_err());
        let mut s = ClientSettings {
            drift_factor: 0.9,
            ..ClientSettings::default()
        };
        assert!(s.check().is_err());
        s.drift_factor = 0.01;
        s.max_ttl = MAX_TTL_LIMIT + MS;
        assert!(s.check().is_err());
        s.max_ttl = MAX_TTL_LIMIT;
        assert!(s.check().is_ok());
    }

    #[test]
    fn choices_parse_and_print_their_spellings() {
        for &m in Quarantine::ALL {
            assert_eq!(m.as_str().parse::<Quarantine>().ok(), Some(m));
            assert_eq!(m.to_string(), m.as_str());
        }
        for &m in EvictionCheck::ALL {
            assert_eq!(m.as_str().parse::<EvictionCheck>().ok(), Some(m));
        }
        for &m in KeyFormat::ALL {
            assert_eq!(m.as_str().parse::<KeyFormat>().ok(), Some(m));
        }
        assert_eq!(Quarantine::default().as_str(), "on");
        assert_eq!(EvictionCheck::default().as_str(), "refuse");
        assert_eq!(KeyFormat::default().as_str(), "braced");
        let e = "maybe".parse::<Quarantine>().err();
        assert_eq!(
            e.map(|e| e.message().to_owned()).as_deref(),
            Some("quarantine must be one of on, strict, off (got \"maybe\")")
        );
    }

    #[test]
    fn node_keys_are_derived_mechanically() {
        let js = |name| {
            lock_option(name)
                .or(client_setting(name))
                .map(OptionSpec::js_name)
        };
        assert_eq!(js("ttl").as_deref(), Some("ttlMs"));
        assert_eq!(js("retry_count").as_deref(), Some("retryCount"));
        assert_eq!(
            js("fence_counter_ttl").as_deref(),
            Some("fenceCounterTtlMs")
        );
        assert_eq!(js("key_prefix").as_deref(), Some("keyPrefix"));
        assert_eq!(js("drift_factor").as_deref(), Some("driftFactor"));
    }
}
