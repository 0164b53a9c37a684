//! Client settings and lock options as uniffi records. An absent field keeps the engine's
//! default; the engine checks every value (`InvalidArgument`, nothing sent).

use std::time::Duration;

use quorumlock::{ClientBuilder, LockOptions};

/// Restart quarantine mode (REDLOCK.md §8.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Enum)]
pub enum Quarantine {
    /// Nodes without durable writes count only after `max_ttl + quarantine_margin` of uptime.
    On,
    /// As `On`, and a node that refuses `INFO` never counts.
    Strict,
    /// No restart checks (test set-ups, or operators who delay restarts themselves).
    Off,
}

impl From<Quarantine> for quorumlock::Quarantine {
    fn from(q: Quarantine) -> Self {
        match q {
            Quarantine::On => Self::On,
            Quarantine::Strict => Self::Strict,
            Quarantine::Off => Self::Off,
        }
    }
}

/// What to do with a node whose eviction policy can remove lock keys (REDLOCK.md §8.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Enum)]
pub enum EvictionCheck {
    /// Exclude the node (`EvictionPolicy` in reports).
    Refuse,
    /// Count the node and warn once.
    Warn,
    /// Skip the check.
    Off,
}

impl From<EvictionCheck> for quorumlock::EvictionCheck {
    fn from(e: EvictionCheck) -> Self {
        match e {
            EvictionCheck::Refuse => Self::Refuse,
            EvictionCheck::Warn => Self::Warn,
            EvictionCheck::Off => Self::Off,
        }
    }
}

/// Options of one acquisition; absent fields keep the client's defaults.
#[derive(Clone, Debug, Default, PartialEq, uniffi::Record)]
pub struct LockConfig {
    /// Lock time-to-live (whole milliseconds, at most `max_ttl`).
    #[uniffi(default = None)]
    pub ttl: Option<Duration>,
    /// Retries after the first attempt (`0`: one attempt). `u32::MAX`: until acquired,
    /// cancelled or out of the `wait` budget.
    #[uniffi(default = None)]
    pub retry_count: Option<u32>,
    /// Fixed part of the delay between attempts.
    #[uniffi(default = None)]
    pub retry_delay: Option<Duration>,
    /// Random part of the delay between attempts (`uniform(0, jitter)`).
    #[uniffi(default = None)]
    pub retry_jitter: Option<Duration>,
    /// Total wait budget: no attempt starts after it would be exceeded.
    #[uniffi(default = None)]
    pub wait: Option<Duration>,
    /// Minimum validity a successful attempt must leave (default `ttl / 10`).
    #[uniffi(default = None)]
    pub min_validity: Option<Duration>,
    /// Deadline of one request round (default `clamp(ttl / 200, 5 ms, 50 ms)`).
    #[uniffi(default = None)]
    pub node_timeout: Option<Duration>,
    /// Keep the lock alive in the background until released.
    #[uniffi(default = None)]
    pub auto_extend: Option<bool>,
    /// Interval of the auto-extension (default `ttl / 3`).
    #[uniffi(default = None)]
    pub extend_interval: Option<Duration>,
    /// Cap on successful extensions.
    #[uniffi(default = None)]
    pub max_extensions: Option<u32>,
    /// Cap on the total holding time.
    #[uniffi(default = None)]
    pub max_hold: Option<Duration>,
    /// Return a fencing token with the lock.
    #[uniffi(default = None)]
    pub fenced: Option<bool>,
    /// Let fencing counters expire after this long without writes.
    #[uniffi(default = None)]
    pub fence_counter_ttl: Option<Duration>,
    /// A caller-given lock value (16+ printable ASCII characters) instead of a fresh one.
    #[uniffi(default = None)]
    pub value: Option<String>,
}

impl LockConfig {
    /// `base` with the fields that are set here.
    pub(crate) fn apply(&self, base: &LockOptions) -> LockOptions {
        let mut o = base.clone();
        if let Some(v) = self.ttl {
            o = o.ttl(v);
        }
        if let Some(v) = self.retry_count {
            o = o.retry_count(v);
        }
        if let Some(v) = self.retry_delay {
            o = o.retry_delay(v);
        }
        if let Some(v) = self.retry_jitter {
            o = o.retry_jitter(v);
        }
        if let Some(v) = self.wait {
            o = o.wait(v);
        }
        if let Some(v) = self.min_validity {
            o = o.min_validity(v);
        }
        if let Some(v) = self.node_timeout {
            o = o.node_timeout(v);
        }
        if let Some(v) = self.auto_extend {
            o = o.auto_extend(v);
        }
        if let Some(v) = self.extend_interval {
            o = o.extend_interval(v);
        }
        if let Some(v) = self.max_extensions {
            o = o.max_extensions(v);
        }
        if let Some(v) = self.max_hold {
            o = o.max_hold(v);
        }
        if let Some(v) = self.fenced {
            o = o.fenced(v);
        }
        if let Some(v) = self.fence_counter_ttl {
            o = o.fence_counter_ttl(v);
        }
        if let Some(v) = &self.value {
            o = o.value(v.clone());
        }
        o
    }
}

/// Client-wide settings; absent fields keep the engine's defaults (REDLOCK.md §11).
#[derive(Clone, Debug, Default, PartialEq, uniffi::Record)]
pub struct ClientConfig {
    /// Drift factor `d` in `0.0..0.5`.
    #[uniffi(default = None)]
    pub drift_factor: Option<f64>,
    /// Drift constant `c`.
    #[uniffi(default = None)]
    pub drift_constant: Option<Duration>,
    /// The largest ttl (the same on every client of these nodes).
    #[uniffi(default = None)]
    pub max_ttl: Option<Duration>,
    /// Connect timeout per node.
    #[uniffi(default = None)]
    pub connect_timeout: Option<Duration>,
    /// Key prefix (default `quorumlock:`).
    #[uniffi(default = None)]
    pub key_prefix: Option<String>,
    /// Release notification on `<key>:released` (default on).
    #[uniffi(default = None)]
    pub notify: Option<bool>,
    /// How often node settings are read again.
    #[uniffi(default = None)]
    pub reprobe_every: Option<Duration>,
    /// Fail `connect` unless a quorum of nodes is usable.
    #[uniffi(default = None)]
    pub require_quorum: Option<bool>,
    /// Restart quarantine mode.
    #[uniffi(default = None)]
    pub quarantine: Option<Quarantine>,
    /// Extra quarantine beyond `max_ttl`.
    #[uniffi(default = None)]
    pub quarantine_margin: Option<Duration>,
    /// Eviction policy check.
    #[uniffi(default = None)]
    pub eviction_check: Option<EvictionCheck>,
    /// Default lock options of the client.
    #[uniffi(default = None)]
    pub lock_defaults: Option<LockConfig>,
}

impl ClientConfig {
    /// A builder for `nodes` with these settings.
    pub(crate) fn builder(&self, nodes: Vec<String>) -> ClientBuilder {
        let mut b = quorumlock::Client::builder().nodes(nodes);
        if let Some(v) = self.drift_factor {
            b = b.drift_factor(v);
        }
        if let Some(v) = self.drift_constant {
            b = b.drift_constant(v);
        }
        if let Some(v) = self.max_ttl {
            b = b.max_ttl(v);
        }
        if let Some(v) = self.connect_timeout {
            b = b.connect_timeout(v);
        }
        if let Some(v) = &self.key_prefix {
            b = b.key_prefix(v.as_bytes());
        }
        if let Some(v) = self.notify {
            b = b.notify(v);
        }
        if let Some(v) = self.reprobe_every {
            b = b.reprobe_every(v);
        }
        if let Some(v) = self.require_quorum {
            b = b.require_quorum(v);
        }
        if let Some(v) = self.quarantine {
            b = b.quarantine(v.into());
        }
        if let Some(v) = self.quarantine_margin {
            b = b.quarantine_margin(v);
        }
        if let Some(v) = self.eviction_check {
            b = b.eviction_check(v.into());
        }
        if let Some(l) = &self.lock_defaults {
            b = b.lock_options(l.apply(&LockOptions::default()));
        }
        b
    }
}
