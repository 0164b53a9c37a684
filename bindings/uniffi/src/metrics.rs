//! `client.metrics()`: the engine's counters and latency histograms as records. Counts,
//! quantiles and names come from the engine.

use std::time::Duration;

/// A name and a count: an error code (`"QL_BUSY"`) or a node kind (`"HeldByOther"`).
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct CountEntry {
    /// The error code or node kind.
    pub name: String,
    /// How many times it was seen.
    pub count: u64,
}

/// A latency histogram: `counts[i]` observations fell in bucket `i`, whose upper bound is
/// `latency_bounds_us()[i]` microseconds; the last bucket is unbounded.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct Histogram {
    /// Observations per bucket (not cumulative).
    pub counts: Vec<u64>,
    /// The sum of all observations, in microseconds.
    pub sum_us: u64,
    /// The number of observations.
    pub count: u64,
    /// Upper estimate of the median (its bucket's bound); absent when empty or above 10 s.
    pub p50: Option<Duration>,
    /// Upper estimate of the 90th percentile, as `p50`.
    pub p90: Option<Duration>,
    /// Upper estimate of the 99th percentile, as `p50`.
    pub p99: Option<Duration>,
}

impl Histogram {
    fn of(h: &quorumlock::Histogram) -> Self {
        Self {
            counts: h.counts.clone(),
            sum_us: h.sum_us,
            count: h.count(),
            p50: h.quantile(0.5),
            p90: h.quantile(0.9),
            p99: h.quantile(0.99),
        }
    }
}

/// The outcomes of one kind of operation.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct OpMetrics {
    /// Calls that succeeded.
    pub ok: u64,
    /// All failed calls.
    pub failures: u64,
    /// Failed calls by error code (only codes seen, in code order).
    pub failed: Vec<CountEntry>,
    /// The duration of every call, failed ones included.
    pub latency: Histogram,
}

impl OpMetrics {
    fn of(m: &quorumlock::OpMetrics) -> Self {
        Self {
            ok: m.ok,
            failures: m.failures(),
            failed: m
                .failed
                .iter()
                .map(|(k, n)| CountEntry {
                    name: k.as_str().to_owned(),
                    count: *n,
                })
                .collect(),
            latency: Histogram::of(&m.latency),
        }
    }
}

/// What one node answered over the client's life.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct NodeMetrics {
    /// 0-based index in configuration order.
    pub index: u32,
    /// `host:port/db`, never with credentials.
    pub address: String,
    /// Requests by node kind (only kinds seen, in kind order).
    pub replies: Vec<CountEntry>,
    /// All requests sent to the node.
    pub requests: u64,
    /// Requests that ended in a node error.
    pub errors: u64,
    /// The time to each reply that arrived.
    pub latency: Histogram,
}

/// A snapshot of a client's counters; counters only grow.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct Metrics {
    /// Acquisition rounds sent (one acquire call may take several).
    pub acquire_attempts: u64,
    /// Acquire calls.
    pub acquire: OpMetrics,
    /// Extend calls, the automatic extensions included.
    pub extend: OpMetrics,
    /// Releases of locks, explicit or on drop.
    pub release: OpMetrics,
    /// Locks lost while held.
    pub lost: u64,
    /// Waits cut short by a release notification.
    pub wakeups: u64,
    /// One entry per configured node.
    pub nodes: Vec<NodeMetrics>,
}

impl Metrics {
    pub(crate) fn of(m: &quorumlock::Metrics) -> Self {
        Self {
            acquire_attempts: m.acquire_attempts,
            acquire: OpMetrics::of(&m.acquire),
            extend: OpMetrics::of(&m.extend),
            release: OpMetrics::of(&m.release),
            lost: m.lost,
            wakeups: m.wakeups,
            nodes: m
                .nodes
                .iter()
                .map(|n| NodeMetrics {
                    index: u32::try_from(n.index).unwrap_or(u32::MAX),
                    address: n.address.clone(),
                    replies: n
                        .replies
                        .iter()
                        .map(|(k, c)| CountEntry {
                            name: k.as_str().to_owned(),
                            count: *c,
                        })
                        .collect(),
                    requests: n.requests(),
                    errors: n.errors(),
                    latency: Histogram::of(&n.latency),
                })
                .collect(),
        }
    }
}

/// The upper bounds of the latency buckets, in microseconds.
#[uniffi::export]
pub fn latency_bounds_us() -> Vec<u64> {
    quorumlock::LATENCY_BOUNDS_US.to_vec()
}
