//! Configuration: client-wide settings, per-lock options, their defaults and their checks
//! (REDLOCK.md §11). Every option is declared once, in [`spec`]: its name, kind, range, default
//! and meaning; bindings parse options by iterating that table and apply them by name
//! ([`LockOptions::set`], [`ClientSettings::set`]), and the engine checks every value against it
//! ([`LockOptions::check`], [`ClientSettings::check`]) wherever the value came from.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::error::{Error, Result};

pub mod spec;

pub use spec::{OptionSpec, OptionValue, Value};

/// `ALL`, `NAMES`, `as_str`, `Display` and `FromStr` of a setting with a fixed set of
/// spellings. The spellings are the setting's values in every binding, the CLI and config
/// files; `FromStr` refuses any other one with the message every surface shows.
macro_rules! choices {
    ($ty:ident, $setting:literal, [$($variant:ident => $name:literal),+ $(,)?]) => {
        impl $ty {
            /// Every mode, in the order of [`Self::NAMES`] (also the order of the C constants).
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];
            /// The spellings, in the order of [`Self::ALL`].
            pub const NAMES: &'static [&'static str] = &[$($name),+];

            /// The spelling of this mode.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $ty {
            type Err = Error;

            /// The mode spelled `s` (exactly, lowercase).
            fn from_str(s: &str) -> Result<Self> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|m| m.as_str() == s)
                    .ok_or_else(|| spec::choice_error($setting, Self::NAMES, s))
            }
        }
    };
}

/// Default lock time-to-live.
pub const DEFAULT_TTL: Duration = Duration::from_secs(10);
/// Default upper bound for any TTL.
pub const DEFAULT_MAX_TTL: Duration = Duration::from_secs(60);
/// The largest `max_ttl` a client accepts: 2^53 - 1 ms (about 285 000 years), the largest
/// whole number every binding's numbers carry exactly (JavaScript's `MAX_SAFE_INTEGER`). The
/// compatibility layers use it: their peers cap no TTL.
pub const MAX_TTL_LIMIT: Duration = Duration::from_millis((1 << 53) - 1);
/// Default drift factor `d`.
pub const DEFAULT_DRIFT_FACTOR: f64 = 0.01;
/// Default drift constant `c`.
pub const DEFAULT_DRIFT_CONSTANT: Duration = Duration::from_millis(2);
/// Default connect timeout (in the background, never on an operation's critical path).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How often a connection's settings are read again (REDLOCK.md §8.2).
pub const DEFAULT_REPROBE_EVERY: Duration = Duration::from_secs(60);
/// Default number of retries after the first attempt.
pub const DEFAULT_RETRY_COUNT: u32 = 3;
/// Default fixed part of the delay between attempts.
pub const DEFAULT_RETRY_DELAY: Duration = Duration::from_millis(100);
/// Default random part of the delay between attempts (`uniform(0, jitter)`).
pub const DEFAULT_RETRY_JITTER: Duration = Duration::from_millis(200);
/// Default key prefix.
pub const DEFAULT_KEY_PREFIX: &str = "quorumlock:";
/// Longest accepted resource name in bytes.
pub const MAX_RESOURCE_LEN: usize = 1024;

/// Default extra time a restarted, non-durable node stays out of lock traffic beyond
/// `max_ttl` (REDLOCK.md §8.2).
pub const DEFAULT_QUARANTINE_MARGIN: Duration = Duration::from_secs(5);

/// How a resource name becomes a Redis key (REDLOCK.md §2.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyFormat {
    /// `<prefix>{<resource>}`: the braces keep a lock key and its fencing counter in one
    /// Redis Cluster hash slot whatever the name contains.
    #[default]
    Braced,
    /// `<prefix><resource>`: with an empty prefix, the bare resource name, as redlock-py,
    /// aioredlock and node-redlock use; for compatibility layers sharing keys with them.
    Bare,
}

choices!(KeyFormat, "key_format", [Braced => "braced", Bare => "bare"]);

impl KeyFormat {
    /// The Redis key of `resource` under `prefix` (REDLOCK.md §2.1).
    pub fn key(self, prefix: &[u8], resource: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(prefix.len() + resource.len() + 2);
        k.extend_from_slice(prefix);
        match self {
            KeyFormat::Braced => {
                k.push(b'{');
                k.extend_from_slice(resource);
                k.push(b'}');
            }
            KeyFormat::Bare => k.extend_from_slice(resource),
        }
        k
    }
}

/// Restart quarantine mode (REDLOCK.md §8.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Quarantine {
    /// A node without durable writes (`appendonly yes`, `appendfsync always`,
    /// `no-appendfsync-on-rewrite no`) is not counted until it has been up for
    /// `max_ttl + quarantine_margin`; a node that refuses `INFO` is counted, with a warning.
    #[default]
    On,
    /// As `On`, but a node that refuses `INFO` is never counted.
    Strict,
    /// No checks: only for nodes whose operators delay restarts themselves.
    Off,
}

choices!(Quarantine, "quarantine", [On => "on", Strict => "strict", Off => "off"]);

/// What to do with a node whose eviction policy can remove lock keys (REDLOCK.md §8.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum EvictionCheck {
    /// Exclude the node and report `EvictionPolicy`.
    #[default]
    Refuse,
    /// Count the node and emit a warning event.
    Warn,
    /// Skip the check.
    Off,
}

choices!(EvictionCheck, "eviction_check", [Refuse => "refuse", Warn => "warn", Off => "off"]);

/// Client-wide settings: the timing every client of the same nodes must agree on, how
/// resource names become keys, and how nodes are checked. The fields are described in
/// [`spec::CLIENT_SETTINGS`] (and `docs/options.md`); [`ClientSettings::check`] validates them.
///
/// ```
/// use std::time::Duration;
/// use quorumlock_proto::config::{ClientSettings, OptionValue};
/// let mut s = ClientSettings::default();
/// s.max_ttl = Duration::from_secs(120);
/// s.set("quarantine", OptionValue::Text("strict".into())).unwrap();
/// assert!(s.set("drift_factor", OptionValue::Number(0.7)).is_err());
/// assert!(s.check().is_ok());
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ClientSettings {
    /// Drift factor `d`, in `0.0..0.5`.
    pub drift_factor: f64,
    /// Drift constant `c`.
    pub drift_constant: Duration,
    /// Upper bound for any TTL; every client of the same nodes must agree.
    pub max_ttl: Duration,
    /// How long connecting waits for the first connections.
    pub connect_timeout: Duration,
    /// How often a connection's settings are read again (REDLOCK.md §8.2).
    pub reprobe_every: Duration,
    /// Key prefix.
    pub key_prefix: Vec<u8>,
    /// How resource names become keys.
    pub key_format: KeyFormat,
    /// Fail connecting unless a quorum of nodes connected.
    pub require_quorum: bool,
    /// Restart quarantine mode.
    pub quarantine: Quarantine,
    /// Extra quarantine time beyond `max_ttl`.
    pub quarantine_margin: Duration,
    /// What to do with nodes whose eviction policy can remove lock keys.
    pub eviction_check: EvictionCheck,
    /// Release notification (REDLOCK.md §9).
    pub notify: bool,
}

impl Default for ClientSettings {
    fn default() -> Self {
        Self {
            drift_factor: DEFAULT_DRIFT_FACTOR,
            drift_constant: DEFAULT_DRIFT_CONSTANT,
            max_ttl: DEFAULT_MAX_TTL,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            reprobe_every: DEFAULT_REPROBE_EVERY,
            key_prefix: DEFAULT_KEY_PREFIX.as_bytes().to_vec(),
            key_format: KeyFormat::default(),
            require_quorum: false,
            quarantine: Quarantine::default(),
            quarantine_margin: DEFAULT_QUARANTINE_MARGIN,
            eviction_check: EvictionCheck::default(),
            notify: true,
        }
    }
}

impl ClientSettings {
    /// The timing these settings give; check them first ([`check`](Self::check)).
    pub fn timing(&self) -> Timing {
        Timing {
            drift_factor: self.drift_factor,
            drift_constant: self.drift_constant,
            max_ttl: self.max_ttl,
            quarantine_period: self.max_ttl.saturating_add(self.quarantine_margin),
        }
    }
}

/// Options of one acquisition. Start from [`LockOptions::default`] (or a client's defaults,
/// `quorumlock::Client::lock_options`) and change what you need.
///
/// ```
/// use std::time::Duration;
/// let opts = quorumlock_proto::config::LockOptions::default()
///     .ttl(Duration::from_secs(5))
///     .retry_count(0)
///     .auto_extend(true);
/// assert_eq!(opts.get_ttl(), Duration::from_secs(5));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct LockOptions {
    pub(crate) ttl: Duration,
    pub(crate) retry_count: u32,
    pub(crate) retry_delay: Duration,
    pub(crate) retry_jitter: Duration,
    pub(crate) wait: Option<Duration>,
    pub(crate) min_validity: Option<Duration>,
    pub(crate) node_timeout: Option<Duration>,
    pub(crate) auto_extend: bool,
    pub(crate) extend_interval: Option<Duration>,
    pub(crate) max_extensions: Option<u32>,
    pub(crate) max_hold: Option<Duration>,
    pub(crate) fenced: bool,
    pub(crate) fence_counter_ttl: Option<Duration>,
    pub(crate) value: Option<String>,
}

impl Default for LockOptions {
    fn default() -> Self {
        Self {
            ttl: DEFAULT_TTL,
            retry_count: DEFAULT_RETRY_COUNT,
            retry_delay: DEFAULT_RETRY_DELAY,
            retry_jitter: DEFAULT_RETRY_JITTER,
            wait: None,
            min_validity: None,
            node_timeout: None,
            auto_extend: false,
            extend_interval: None,
            max_extensions: None,
            max_hold: None,
            fenced: false,
            fence_counter_ttl: None,
            value: None,
        }
    }
}

impl LockOptions {
    /// Lock time-to-live, sent as `PX` in whole milliseconds. Must be in `1 ms..=max_ttl`.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }
    /// Retries after the first attempt; `0` means exactly one attempt.
    pub fn retry_count(mut self, n: u32) -> Self {
        self.retry_count = n;
        self
    }
    /// Retry until acquired, cancelled, or the [`wait`](Self::wait) budget is spent.
    pub fn retry_forever(mut self) -> Self {
        self.retry_count = u32::MAX;
        self
    }
    /// Fixed part of the delay between attempts.
    pub fn retry_delay(mut self, d: Duration) -> Self {
        self.retry_delay = d;
        self
    }
    /// Random part of the delay between attempts, drawn uniformly from `0..jitter`.
    pub fn retry_jitter(mut self, d: Duration) -> Self {
        self.retry_jitter = d;
        self
    }
    /// Total wait budget: no attempt starts after it would be exceeded.
    pub fn wait(mut self, d: Duration) -> Self {
        self.wait = Some(d);
        self
    }
    /// Minimum validity a successful attempt must leave (default `ttl / 10`; zero accepts any
    /// positive validity).
    pub fn min_validity(mut self, d: Duration) -> Self {
        self.min_validity = Some(d);
        self
    }
    /// Deadline for one request round on one node (default `clamp(ttl / 200, 5 ms, 50 ms)`).
    pub fn node_timeout(mut self, d: Duration) -> Self {
        self.node_timeout = Some(d);
        self
    }
    /// Keep the lock alive in the background until it is released (default off for
    /// `acquire`).
    pub fn auto_extend(mut self, on: bool) -> Self {
        self.auto_extend = on;
        self
    }
    /// Interval of the auto-extension (default `ttl / 3`).
    pub fn extend_interval(mut self, d: Duration) -> Self {
        self.extend_interval = Some(d);
        self
    }
    /// Cap on the number of successful extensions (default unlimited).
    pub fn max_extensions(mut self, n: u32) -> Self {
        self.max_extensions = Some(n);
        self
    }
    /// Cap on the total holding time: no extension whose deadline would pass
    /// `acquired_at + max_hold` starts (default unlimited).
    pub fn max_hold(mut self, d: Duration) -> Self {
        self.max_hold = Some(d);
        self
    }

    /// Return a fencing token with the lock: a 64-bit number strictly greater than every
    /// token returned before for the same resource (REDLOCK.md §7). Costs one counter key
    /// per resource and node and a `TIME` call per acquisition; default off.
    pub fn fenced(mut self, on: bool) -> Self {
        self.fenced = on;
        self
    }
    /// Let the fencing counters expire after this long without writes (default: never).
    /// Must be at least `max_ttl + quarantine_margin`; a day or more is recommended.
    pub fn fence_counter_ttl(mut self, d: Duration) -> Self {
        self.fence_counter_ttl = Some(d);
        self
    }
    /// Use this lock value instead of a fresh random one per attempt (at least 16 printable
    /// ASCII characters), for compatibility layers whose users choose it (aioredlock's
    /// `lock_identifier`). Generated values are safer: see `docs/REDLOCK.md` §2.2.
    pub fn value(mut self, value: impl Into<String>) -> Self {
        self.value = Some(value.into());
        self
    }
    /// Back to a fresh random value per attempt (the default).
    pub fn without_value(mut self) -> Self {
        self.value = None;
        self
    }
    /// The caller's lock value, if one was given.
    pub fn get_value(&self) -> Option<&str> {
        self.value.as_deref()
    }

    /// The fencing counters' TTL, if one was set.
    pub fn get_fence_counter_ttl(&self) -> Option<Duration> {
        self.fence_counter_ttl
    }
    /// Whether acquisitions are fenced.
    pub fn get_fenced(&self) -> bool {
        self.fenced
    }

    /// The TTL.
    pub fn get_ttl(&self) -> Duration {
        self.ttl
    }
    /// The retry count.
    pub fn get_retry_count(&self) -> u32 {
        self.retry_count
    }
    /// The fixed retry delay.
    pub fn get_retry_delay(&self) -> Duration {
        self.retry_delay
    }
    /// The retry jitter bound.
    pub fn get_retry_jitter(&self) -> Duration {
        self.retry_jitter
    }
    /// The wait budget, if any.
    pub fn get_wait(&self) -> Option<Duration> {
        self.wait
    }
    /// Whether auto-extension is on.
    pub fn get_auto_extend(&self) -> bool {
        self.auto_extend
    }
    /// The extension cap, if any.
    pub fn get_max_extensions(&self) -> Option<u32> {
        self.max_extensions
    }
    /// The holding cap, if any.
    pub fn get_max_hold(&self) -> Option<Duration> {
        self.max_hold
    }
    /// The effective minimum validity for `ttl`.
    pub fn effective_min_validity(&self, ttl: Duration) -> Duration {
        self.min_validity.unwrap_or(ttl / 10)
    }
    /// The effective node timeout for `ttl`.
    pub fn effective_node_timeout(&self, ttl: Duration) -> Duration {
        self.node_timeout
            .unwrap_or_else(|| default_node_timeout(ttl))
    }
    /// The effective auto-extension interval for `ttl`.
    pub fn effective_extend_interval(&self, ttl: Duration) -> Duration {
        self.extend_interval.unwrap_or(ttl / 3)
    }
}

/// `clamp(ttl / 200, 5 ms, 50 ms)`.
pub fn default_node_timeout(ttl: Duration) -> Duration {
    (ttl / 200).clamp(Duration::from_millis(5), Duration::from_millis(50))
}

/// Client-wide timing settings shared by all locks of a client.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    /// Drift factor `d`.
    pub drift_factor: f64,
    /// Drift constant `c`.
    pub drift_constant: Duration,
    /// Upper bound for any TTL.
    pub max_ttl: Duration,
    /// `Qp = max_ttl + quarantine_margin`.
    pub quarantine_period: Duration,
}

impl Timing {
    /// The timing of a client with drift factor `d`, drift constant `c`, `max_ttl` and the
    /// quarantine margin, checked: `0 <= d < 0.5`, `1 ms <= max_ttl <=` [`MAX_TTL_LIMIT`].
    ///
    /// # Errors
    /// `InvalidArgument` naming the bad setting.
    pub fn checked(
        drift_factor: f64,
        drift_constant: Duration,
        max_ttl: Duration,
        quarantine_margin: Duration,
    ) -> Result<Self> {
        if !(drift_factor.is_finite() && (0.0..0.5).contains(&drift_factor)) {
            return Err(Error::invalid("drift_factor must be a number in 0.0..0.5"));
        }
        if max_ttl.is_zero() || max_ttl > MAX_TTL_LIMIT {
            return Err(Error::invalid(format!(
                "max_ttl must be between 1 ms and {} ms (2^53 - 1)",
                MAX_TTL_LIMIT.as_millis()
            )));
        }
        Ok(Self {
            drift_factor,
            drift_constant,
            max_ttl,
            quarantine_period: max_ttl.saturating_add(quarantine_margin),
        })
    }

    /// `drift(ttl) = ttl * d + c`, rounded up to the next microsecond.
    pub fn drift(&self, ttl: Duration) -> Duration {
        let us = (ttl.as_micros() as f64 * self.drift_factor).ceil();
        // ttl <= max_ttl and d is checked to be finite and small, so this fits.
        Duration::from_micros(us as u64).saturating_add(self.drift_constant)
    }

    /// Validates `ttl`, the options (each against its range, [`LockOptions::check`]), and the
    /// options against these settings; returns the TTL in whole milliseconds.
    ///
    /// # Errors
    /// `InvalidArgument` naming the first bad setting.
    pub fn check(&self, opts: &LockOptions, ttl: Duration) -> Result<u64> {
        // Above max_ttl first: that message says what to change (max_ttl is at most the
        // ttl's absolute limit, so this also covers it).
        if ttl > self.max_ttl {
            return Err(Error::invalid(format!(
                "ttl {ttl:?} exceeds max_ttl {:?}; raise the max_ttl setting (the same on every client of these nodes) or use a shorter ttl",
                self.max_ttl
            )));
        }
        spec::TTL.check(spec::TTL.name, &Value::Duration(ttl))?;
        if !ttl.subsec_nanos().is_multiple_of(1_000_000) {
            return Err(Error::invalid(format!(
                "ttl must be a whole number of milliseconds (got {ttl:?})"
            )));
        }
        opts.check()?;
        let floor = self
            .drift(ttl)
            .saturating_add(opts.effective_min_validity(ttl));
        if ttl <= floor {
            return Err(Error::invalid(format!(
                "ttl {ttl:?} leaves no validity after drift {:?} and min_validity {:?}",
                self.drift(ttl),
                opts.effective_min_validity(ttl)
            )));
        }
        if let Some(c) = opts.fence_counter_ttl
            && c < self.quarantine_period
        {
            return Err(Error::invalid(format!(
                "fence_counter_ttl {c:?} must be at least max_ttl + quarantine_margin ({:?})",
                self.quarantine_period
            )));
        }
        if opts.value.is_some() && opts.fenced {
            return Err(Error::invalid(
                "a fenced lock needs a fresh value per attempt: the token guarantee rests on it (REDLOCK.md §7.6); drop the given value or the fencing",
            ));
        }
        u64::try_from(ttl.as_millis()).map_err(|_| Error::invalid("ttl is too large"))
    }
}

/// Checks and normalizes a set of resource names: non-empty, each 1..=1024 bytes; returns
/// them sorted by byte order and deduplicated (REDLOCK.md §6).
///
/// # Errors
/// `InvalidArgument` for an empty set, an empty name or one above 1024 bytes.
pub fn normalize_resources<I, R>(resources: I) -> Result<Vec<Vec<u8>>>
where
    I: IntoIterator<Item = R>,
    R: AsRef<[u8]>,
{
    let mut out: Vec<Vec<u8>> = Vec::new();
    for r in resources {
        let r = r.as_ref();
        if r.is_empty() {
            return Err(Error::invalid("a resource name must not be empty"));
        }
        if r.len() > MAX_RESOURCE_LEN {
            return Err(Error::invalid(format!(
                "a resource name must be at most {MAX_RESOURCE_LEN} bytes (got {})",
                r.len()
            )));
        }
        out.push(r.to_vec());
    }
    if out.is_empty() {
        return Err(Error::invalid("at least one resource is required"));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing() -> Timing {
        Timing {
            drift_factor: DEFAULT_DRIFT_FACTOR,
            drift_constant: DEFAULT_DRIFT_CONSTANT,
            max_ttl: DEFAULT_MAX_TTL,
            quarantine_period: DEFAULT_MAX_TTL + DEFAULT_QUARANTINE_MARGIN,
        }
    }

    #[test]
    fn rule11_drift_formula() {
        assert_eq!(
            timing().drift(Duration::from_secs(10)),
            Duration::from_millis(102)
        );
        assert_eq!(
            timing().drift(Duration::from_millis(1)),
            Duration::from_micros(2010)
        );
    }

    #[test]
    fn client_timing_is_checked() {
        let ms = Duration::from_millis;
        let t = Timing::checked(0.01, ms(2), ms(60_000), ms(5_000)).unwrap();
        assert_eq!(t, timing());
        assert!(Timing::checked(0.5, ms(2), ms(60_000), ms(5_000)).is_err());
        assert!(Timing::checked(f64::NAN, ms(2), ms(60_000), ms(5_000)).is_err());
        assert!(Timing::checked(0.01, ms(2), Duration::ZERO, ms(5_000)).is_err());
        assert!(Timing::checked(0.01, ms(2), MAX_TTL_LIMIT + ms(1), ms(5_000)).is_err());
    }

    #[test]
    fn node_timeout_defaults() {
        assert_eq!(
            default_node_timeout(Duration::from_secs(10)),
            Duration::from_millis(50)
        );
        assert_eq!(
            default_node_timeout(Duration::from_secs(1)),
            Duration::from_millis(5)
        );
        assert_eq!(
            default_node_timeout(Duration::from_secs(2)),
            Duration::from_millis(10)
        );
        assert_eq!(
            default_node_timeout(Duration::from_secs(60)),
            Duration::from_millis(50)
        );
    }

    #[test]
    fn ttl_checks() {
        let t = timing();
        let o = LockOptions::default();
        assert!(t.check(&o, Duration::ZERO).is_err());
        assert!(t.check(&o, Duration::from_micros(1500)).is_err());
        assert!(t.check(&o, Duration::from_secs(61)).is_err());
        assert!(t.check(&o, Duration::from_millis(2)).is_err()); // below drift
        assert_eq!(t.check(&o, Duration::from_secs(10)).unwrap(), 10_000);
        assert_eq!(t.check(&o, Duration::from_secs(60)).unwrap(), 60_000);
        let zero_nt = LockOptions::default().node_timeout(Duration::ZERO);
        assert!(t.check(&zero_nt, Duration::from_secs(1)).is_err());
    }

    #[test]
    fn resources_sorted_deduplicated_and_checked() {
        let r = normalize_resources(["b", "a", "b"]).unwrap();
        assert_eq!(r, vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(
            normalize_resources(["a", "b"]).unwrap(),
            normalize_resources(["b", "a"]).unwrap()
        );
        assert!(normalize_resources([""]).is_err());
        assert!(normalize_resources(Vec::<&str>::new()).is_err());
        assert!(normalize_resources([vec![0u8; 1025]]).is_err());
        assert!(normalize_resources([vec![0xffu8, 0, 1]]).is_ok());
    }
}
