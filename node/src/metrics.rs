//! `client.metrics()`: the engine's counters and latency histograms as plain objects. Counts,
//! totals and quantiles come from the engine; `index.js` turns the `[name, count]` lists into
//! records and freezes the snapshot. Counters are `u64` in the engine and JS numbers here,
//! exact below 2^53.

use napi_derive::napi;

use crate::error::code;

/// One `name: count` pair: an error code (`"QL_BUSY"`) or a node kind (`"HeldByOther"`).
#[napi(object, object_from_js = false)]
pub struct CountEntry {
    /// The code or node kind.
    pub name: String,
    /// How many times it was seen.
    pub count: f64,
}

/// A latency histogram: `counts[i]` observations fell in bucket `i`, whose upper bound is
/// `latencyBoundsUs()[i]` microseconds (inclusive); the last bucket is unbounded.
#[napi(object, object_from_js = false)]
pub struct NativeHistogram {
    /// Observations per bucket (not cumulative), one more than there are bounds.
    pub counts: Vec<f64>,
    /// The sum of all observations, in microseconds.
    pub sum_us: f64,
    /// The number of observations.
    pub count: f64,
    /// Upper estimate of the median in milliseconds (the bound of its bucket); absent when
    /// empty or above the last bound.
    pub p50_ms: Option<f64>,
    /// Upper estimate of the 90th percentile in milliseconds, as `p50Ms`.
    pub p90_ms: Option<f64>,
    /// Upper estimate of the 99th percentile in milliseconds, as `p50Ms`.
    pub p99_ms: Option<f64>,
}

/// The outcomes of one kind of operation.
#[napi(object, object_from_js = false)]
pub struct NativeOpMetrics {
    /// Calls that succeeded.
    pub ok: f64,
    /// All failed calls.
    pub failures: f64,
    /// Failed calls by error code (only codes seen, in code order).
    pub failed: Vec<CountEntry>,
    /// The duration of every call, failed ones included.
    pub latency: NativeHistogram,
}

/// What one node answered over the client's life.
#[napi(object, object_from_js = false)]
pub struct NativeNodeMetrics {
    /// 0-based index in configuration order.
    pub index: u32,
    /// `host:port/db`, never with credentials (as in reports).
    pub address: String,
    /// Requests by node kind (only kinds seen, in kind order).
    pub replies: Vec<CountEntry>,
    /// All requests sent to the node.
    pub requests: f64,
    /// Requests that ended in a node error (anything but a vote or an operation result).
    pub errors: f64,
    /// The time to each reply that arrived.
    pub latency: NativeHistogram,
}

/// A snapshot of a client's counters.
#[napi(object, object_from_js = false)]
pub struct NativeMetrics {
    /// Acquisition rounds sent (one acquire call may take several).
    pub acquire_attempts: f64,
    /// Acquire calls.
    pub acquire: NativeOpMetrics,
    /// Extend calls, the automatic extensions included.
    pub extend: NativeOpMetrics,
    /// Releases of locks, explicit or on drop (failed attempts' cleanups and repeated releases are not counted).
    pub release: NativeOpMetrics,
    /// Locks lost while held.
    pub lost: f64,
    /// Waits cut short by a release notification.
    pub wakeups: f64,
    /// One entry per configured node.
    pub nodes: Vec<NativeNodeMetrics>,
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_micros() as f64 / 1000.0
}

fn histogram(h: &quorumlock::Histogram) -> NativeHistogram {
    NativeHistogram {
        counts: h.counts.iter().map(|&c| c as f64).collect(),
        sum_us: h.sum_us as f64,
        count: h.count() as f64,
        p50_ms: h.quantile(0.5).map(ms),
        p90_ms: h.quantile(0.9).map(ms),
        p99_ms: h.quantile(0.99).map(ms),
    }
}

fn op(m: &quorumlock::OpMetrics) -> NativeOpMetrics {
    NativeOpMetrics {
        ok: m.ok as f64,
        failures: m.failures() as f64,
        failed: m
            .failed
            .iter()
            .map(|&(kind, n)| CountEntry {
                name: code(kind).to_owned(),
                count: n as f64,
            })
            .collect(),
        latency: histogram(&m.latency),
    }
}

fn node(n: &quorumlock::NodeMetrics) -> NativeNodeMetrics {
    NativeNodeMetrics {
        index: u32::try_from(n.index).unwrap_or(u32::MAX),
        address: n.address.clone(),
        replies: n
            .replies
            .iter()
            .map(|&(kind, count)| CountEntry {
                name: kind.as_str().to_owned(),
                count: count as f64,
            })
            .collect(),
        requests: n.requests() as f64,
        errors: n.errors() as f64,
        latency: histogram(&n.latency),
    }
}

impl From<&quorumlock::Metrics> for NativeMetrics {
    fn from(m: &quorumlock::Metrics) -> Self {
        NativeMetrics {
            acquire_attempts: m.acquire_attempts as f64,
            acquire: op(&m.acquire),
            extend: op(&m.extend),
            release: op(&m.release),
            lost: m.lost as f64,
            wakeups: m.wakeups as f64,
            nodes: m.nodes.iter().map(node).collect(),
        }
    }
}

/// The upper bounds of the latency buckets in microseconds; every histogram has one more
/// bucket, unbounded, for the rest.
#[napi(catch_unwind)]
pub fn latency_bounds_us() -> Vec<f64> {
    quorumlock::LATENCY_BOUNDS_US
        .iter()
        .map(|&us| us as f64)
        .collect()
}
