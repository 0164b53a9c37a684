//! Client and lock options: plain JS objects (checked by `index.js` first) to core builders.
//! Durations are integer milliseconds.

use std::time::Duration;

use napi_derive::napi;
use quorumlock::{ClientBuilder, EvictionCheck, KeyFormat, LockOptions, Quarantine};

use crate::error::NativeError;

/// Options of one acquisition; absent fields keep the client's defaults.
#[napi(object)]
#[derive(Default)]
pub struct NativeLockOptions {
    /// Lock time-to-live.
    pub ttl_ms: Option<f64>,
    /// Retries after the first attempt (4294967295 retries until `waitMs` or cancelled).
    pub retry_count: Option<f64>,
    /// Fixed part of the delay between attempts.
    pub retry_delay_ms: Option<f64>,
    /// Random part of the delay between attempts.
    pub retry_jitter_ms: Option<f64>,
    /// Total wait budget.
    pub wait_ms: Option<f64>,
    /// Minimum validity a successful attempt must leave.
    pub min_validity_ms: Option<f64>,
    /// Deadline of one request round on one node.
    pub node_timeout_ms: Option<f64>,
    /// Keep the lock alive in the background until released.
    pub auto_extend: Option<bool>,
    /// Interval of the auto-extension.
    pub extend_interval_ms: Option<f64>,
    /// Cap on the number of extensions.
    pub max_extensions: Option<f64>,
    /// Cap on the total holding time.
    pub max_hold_ms: Option<f64>,
    /// Return fencing tokens with the lock.
    pub fenced: Option<bool>,
    /// Let the fencing counters expire after this long without writes.
    pub fence_counter_ttl_ms: Option<f64>,
}

/// Options of a client.
#[napi(object)]
pub struct NativeClientOptions {
    /// Node URLs: `redis://[user:password@]host:port[/db]`, `rediss://...`.
    pub nodes: Vec<String>,
    /// Drift factor (default 0.01).
    pub drift_factor: Option<f64>,
    /// Drift constant (default 2 ms).
    pub drift_constant_ms: Option<f64>,
    /// Upper bound of any TTL (default 60000 ms).
    pub max_ttl_ms: Option<f64>,
    /// How long connecting waits for the first connections (default 1000 ms).
    pub connect_timeout_ms: Option<f64>,
    /// Key prefix (default `quorumlock:`).
    pub key_prefix: Option<String>,
    /// Key format: `braced` (`<prefix>{<resource>}`, default) or `bare` (`<prefix><resource>`).
    pub key_format: Option<String>,
    /// Fail unless a quorum of nodes connected.
    pub require_quorum: Option<bool>,
    /// Restart quarantine: `on` (default), `strict` or `off`.
    pub quarantine: Option<String>,
    /// Extra time a fresh non-durable node stays out beyond the max TTL (default 5000 ms).
    pub quarantine_margin_ms: Option<f64>,
    /// Nodes whose eviction policy can remove lock keys: `refuse` (default), `warn`, `off`.
    pub eviction_check: Option<String>,
    /// Release notification (default true): a release wakes waiters at once instead of
    /// after their retry delay.
    pub notify: Option<bool>,
    /// Default options of every acquisition.
    pub lock: Option<NativeLockOptions>,
}

/// A whole, non-negative number below 2^53, or a `QL_INVALID` error naming the field.
pub(crate) fn whole(name: &str, v: f64) -> Result<u64, NativeError> {
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= 9_007_199_254_740_991.0 {
        Ok(v as u64)
    } else {
        Err(NativeError::invalid(format!(
            "{name} must be a whole number >= 0 (got {v})"
        )))
    }
}

fn choice_error(name: &str, allowed: &str, got: &str) -> NativeError {
    NativeError::invalid(format!("{name} must be one of {allowed} (got {got:?})"))
}

pub(crate) fn millis(name: &str, v: f64) -> Result<Duration, NativeError> {
    whole(name, v).map(Duration::from_millis)
}

fn count(name: &str, v: f64) -> Result<u32, NativeError> {
    u32::try_from(whole(name, v)?)
        .map_err(|_| NativeError::invalid(format!("{name} must be at most 4294967295")))
}

impl NativeLockOptions {
    /// These options over `base`.
    pub(crate) fn apply(&self, mut o: LockOptions) -> Result<LockOptions, NativeError> {
        let ms = |name, v: Option<f64>| v.map(|v| millis(name, v)).transpose();
        if let Some(d) = ms("ttlMs", self.ttl_ms)? {
            o = o.ttl(d);
        }
        if let Some(n) = self
            .retry_count
            .map(|v| count("retryCount", v))
            .transpose()?
        {
            o = o.retry_count(n);
        }
        if let Some(d) = ms("retryDelayMs", self.retry_delay_ms)? {
            o = o.retry_delay(d);
        }
        if let Some(d) = ms("retryJitterMs", self.retry_jitter_ms)? {
            o = o.retry_jitter(d);
        }
        if let Some(d) = ms("waitMs", self.wait_ms)? {
            o = o.wait(d);
        }
        if let Some(d) = ms("minValidityMs", self.min_validity_ms)? {
            o = o.min_validity(d);
        }
        if let Some(d) = ms("nodeTimeoutMs", self.node_timeout_ms)? {
            o = o.node_timeout(d);
        }
        if let Some(on) = self.auto_extend {
            o = o.auto_extend(on);
        }
        if let Some(d) = ms("extendIntervalMs", self.extend_interval_ms)? {
            o = o.extend_interval(d);
        }
        if let Some(n) = self
            .max_extensions
            .map(|v| count("maxExtensions", v))
            .transpose()?
        {
            o = o.max_extensions(n);
        }
        if let Some(d) = ms("maxHoldMs", self.max_hold_ms)? {
            o = o.max_hold(d);
        }
        if let Some(on) = self.fenced {
            o = o.fenced(on);
        }
        if let Some(d) = ms("fenceCounterTtlMs", self.fence_counter_ttl_ms)? {
            o = o.fence_counter_ttl(d);
        }
        Ok(o)
    }
}

impl NativeClientOptions {
    /// The core builder for these options.
    pub(crate) fn builder(&self) -> Result<ClientBuilder, NativeError> {
        let mut b = quorumlock::Client::builder().nodes(self.nodes.iter().cloned());
        if let Some(d) = self.drift_factor {
            b = b.drift_factor(d);
        }
        if let Some(v) = self.drift_constant_ms {
            b = b.drift_constant(millis("driftConstantMs", v)?);
        }
        if let Some(v) = self.max_ttl_ms {
            b = b.max_ttl(millis("maxTtlMs", v)?);
        }
        if let Some(v) = self.connect_timeout_ms {
            b = b.connect_timeout(millis("connectTimeoutMs", v)?);
        }
        if let Some(p) = &self.key_prefix {
            b = b.key_prefix(p);
        }
        if let Some(f) = &self.key_format {
            b = b.key_format(match f.as_str() {
                "braced" => KeyFormat::Braced,
                "bare" => KeyFormat::Bare,
                _ => return Err(choice_error("keyFormat", "'braced', 'bare'", f)),
            });
        }
        if let Some(on) = self.require_quorum {
            b = b.require_quorum(on);
        }
        if let Some(q) = &self.quarantine {
            b = b.quarantine(match q.as_str() {
                "on" => Quarantine::On,
                "strict" => Quarantine::Strict,
                "off" => Quarantine::Off,
                _ => return Err(choice_error("quarantine", "'on', 'strict', 'off'", q)),
            });
        }
        if let Some(v) = self.quarantine_margin_ms {
            b = b.quarantine_margin(millis("quarantineMarginMs", v)?);
        }
        if let Some(e) = &self.eviction_check {
            b = b.eviction_check(match e.as_str() {
                "refuse" => EvictionCheck::Refuse,
                "warn" => EvictionCheck::Warn,
                "off" => EvictionCheck::Off,
                _ => return Err(choice_error("evictionCheck", "'refuse', 'warn', 'off'", e)),
            });
        }
        if let Some(on) = self.notify {
            b = b.notify(on);
        }
        if let Some(lock) = &self.lock {
            b = b.lock_options(lock.apply(LockOptions::default())?);
        }
        Ok(b)
    }
}
