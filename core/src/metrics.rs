//! Counters and latency histograms per client and per node (issue 8 item 5), read as a
//! [`Metrics`] snapshot and optionally rendered as Prometheus text.
//!
//! Recording is a handful of relaxed atomic increments per request, so it is always on.
//! Every operation also ends in a `tracing` event (target `quorumlock`) that carries the
//! same facts: the outcome, the attempts and the elapsed time.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::error::ErrorKind;
use crate::report::NodeKind;

/// Upper bounds of the latency buckets, in microseconds; a last bucket holds the rest.
pub const LATENCY_BOUNDS_US: &[u64] = &[
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000,
];

const BUCKETS: usize = LATENCY_BOUNDS_US.len() + 1;

fn as_us(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// A live latency histogram.
#[derive(Default)]
pub(crate) struct Histo {
    counts: [AtomicU64; BUCKETS],
    sum_us: AtomicU64,
}

impl Histo {
    pub(crate) fn observe(&self, d: Duration) {
        let us = as_us(d);
        let i = LATENCY_BOUNDS_US.partition_point(|&b| b < us);
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
    }

    fn snapshot(&self) -> Histogram {
        Histogram {
            counts: self
                .counts
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .collect(),
            sum_us: self.sum_us.load(Ordering::Relaxed),
        }
    }
}

/// A latency histogram: `counts[i]` observations fell in bucket `i`, whose upper bound is
/// `LATENCY_BOUNDS_US[i]` (inclusive) and, for the last bucket, unbounded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    /// Observations per bucket (not cumulative); `LATENCY_BOUNDS_US.len() + 1` entries.
    pub counts: Vec<u64>,
    /// The sum of all observations, in microseconds.
    pub sum_us: u64,
}

impl Histogram {
    /// The number of observations.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// An upper estimate of quantile `q` (0.0–1.0): the upper bound of the bucket holding
    /// it, `None` when empty or when it falls in the unbounded bucket.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return LATENCY_BOUNDS_US
                    .get(i)
                    .map(|&us| Duration::from_micros(us));
            }
        }
        None
    }
}

/// Counters of one kind of operation (acquire, extend, release).
#[derive(Default)]
pub(crate) struct OpStats {
    ok: AtomicU64,
    failed: [AtomicU64; 16],
    latency: Histo,
}

impl OpStats {
    /// Records one finished call that took `elapsed`.
    pub(crate) fn done(&self, outcome: Result<(), ErrorKind>, elapsed: Duration) {
        match outcome {
            Ok(()) => self.ok.fetch_add(1, Ordering::Relaxed),
            Err(k) => self.failed[kind_slot(k)].fetch_add(1, Ordering::Relaxed),
        };
        self.latency.observe(elapsed);
    }

    fn snapshot(&self) -> OpMetrics {
        OpMetrics {
            ok: self.ok.load(Ordering::Relaxed),
            failed: ErrorKind::ALL
                .iter()
                .map(|&k| (k, self.failed[kind_slot(k)].load(Ordering::Relaxed)))
                .filter(|&(_, n)| n > 0)
                .collect(),
            latency: self.latency.snapshot(),
        }
    }
}

fn kind_slot(k: ErrorKind) -> usize {
    ErrorKind::ALL.iter().position(|&x| x == k).unwrap_or(0) % 16
}

/// The outcomes of one kind of operation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpMetrics {
    /// Calls that succeeded.
    pub ok: u64,
    /// Calls that failed, by error kind (only kinds seen, in [`ErrorKind::ALL`] order).
    pub failed: Vec<(ErrorKind, u64)>,
    /// The duration of every call, failed ones included.
    pub latency: Histogram,
}

impl OpMetrics {
    /// All failed calls.
    pub fn failures(&self) -> u64 {
        self.failed.iter().map(|&(_, n)| n).sum()
    }
}

/// Per-node counters, kept by the node for the client's life.
#[derive(Default)]
pub(crate) struct NodeStats {
    kinds: [AtomicU64; 32],
    latency: Histo,
}

impl NodeStats {
    /// One request ended as `kind`; `latency` is `None` when no reply came.
    pub(crate) fn observe(&self, kind: NodeKind, latency: Option<Duration>) {
        self.kinds[kind as usize % 32].fetch_add(1, Ordering::Relaxed);
        if let Some(l) = latency {
            self.latency.observe(l);
        }
    }

    pub(crate) fn snapshot(&self, index: usize, address: &str) -> NodeMetrics {
        NodeMetrics {
            index,
            address: address.to_owned(),
            replies: NodeKind::ALL
                .iter()
                .map(|&k| (k, self.kinds[k as usize % 32].load(Ordering::Relaxed)))
                .filter(|&(_, n)| n > 0)
                .collect(),
            latency: self.latency.snapshot(),
        }
    }
}

/// What one node answered over the client's life.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeMetrics {
    /// The node's position in the client's list.
    pub index: usize,
    /// `host:port/db` (no credentials).
    pub address: String,
    /// Requests by outcome (only kinds seen, in [`NodeKind::ALL`] order). A reply that came
    /// after its round was decided is counted when it arrives.
    pub replies: Vec<(NodeKind, u64)>,
    /// The time to each reply that arrived.
    pub latency: Histogram,
}

impl NodeMetrics {
    /// All requests sent to the node.
    pub fn requests(&self) -> u64 {
        self.replies.iter().map(|&(_, n)| n).sum()
    }

    /// Requests that ended in a node error (a timeout, a connection or server error, a
    /// quarantined or misconfigured node): anything but a vote or an operation result.
    pub fn errors(&self) -> u64 {
        use crate::report::NodeCategory;
        self.replies
            .iter()
            .filter(|(k, _)| k.category() != NodeCategory::Vote && *k != NodeKind::Pending)
            .map(|&(_, n)| n)
            .sum()
    }
}

/// The client-wide counters.
#[derive(Default)]
pub(crate) struct ClientStats {
    pub(crate) attempts: AtomicU64,
    pub(crate) acquire: OpStats,
    pub(crate) extend: OpStats,
    pub(crate) release: OpStats,
    pub(crate) lost: AtomicU64,
    pub(crate) wakeups: AtomicU64,
}

impl ClientStats {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self, nodes: Vec<NodeMetrics>) -> Metrics {
        Metrics {
            acquire_attempts: self.attempts.load(Ordering::Relaxed),
            acquire: self.acquire.snapshot(),
            extend: self.extend.snapshot(),
            release: self.release.snapshot(),
            lost: self.lost.load(Ordering::Relaxed),
            wakeups: self.wakeups.load(Ordering::Relaxed),
            nodes,
        }
    }
}

/// A snapshot of a client's counters, from [`Client::metrics`](crate::Client::metrics).
/// Counters only grow; subtract two snapshots for a rate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Metrics {
    /// Acquisition rounds sent (one acquire call may take several).
    pub acquire_attempts: u64,
    /// Acquire calls: successes, failures by kind, and the duration of each call.
    pub acquire: OpMetrics,
    /// Extend calls, the automatic extensions included.
    pub extend: OpMetrics,
    /// Releases of locks, explicit or on drop (a repeated release, which sends nothing, and
    /// the cleanups of failed attempts are not counted).
    pub release: OpMetrics,
    /// Locks that were lost (expired or taken over while held).
    pub lost: u64,
    /// Waits cut short by a release notification.
    pub wakeups: u64,
    /// One entry per configured node.
    pub nodes: Vec<NodeMetrics>,
}

impl Metrics {
    /// Renders the snapshot in the Prometheus text exposition format (version 0.0.4),
    /// metric names prefixed `quorumlock_`.
    pub fn to_prometheus(&self) -> String {
        let mut out = String::new();
        let counter = |out: &mut String, name: &str, help: &str| {
            let _ = writeln!(
                out,
                "# HELP quorumlock_{name} {help}\n# TYPE quorumlock_{name} counter"
            );
        };
        counter(
            &mut out,
            "acquire_attempts_total",
            "Acquisition rounds sent.",
        );
        let _ = writeln!(
            out,
            "quorumlock_acquire_attempts_total {}",
            self.acquire_attempts
        );
        counter(&mut out, "lost_total", "Locks lost while held.");
        let _ = writeln!(out, "quorumlock_lost_total {}", self.lost);
        counter(
            &mut out,
            "wakeups_total",
            "Waits cut short by a release notification.",
        );
        let _ = writeln!(out, "quorumlock_wakeups_total {}", self.wakeups);
        for (op, m) in [
            ("acquire", &self.acquire),
            ("extend", &self.extend),
            ("release", &self.release),
        ] {
            counter(
                &mut out,
                &format!("{op}_total"),
                &format!("{op} calls by outcome."),
            );
            let _ = writeln!(out, "quorumlock_{op}_total{{outcome=\"ok\"}} {}", m.ok);
            for (k, n) in &m.failed {
                let _ = writeln!(
                    out,
                    "quorumlock_{op}_total{{outcome=\"{}\"}} {n}",
                    k.as_str()
                );
            }
            let name = format!("{op}_duration_seconds");
            histogram(
                &mut out,
                &name,
                &format!("Duration of {op} calls."),
                &[(&m.latency, "")],
            );
        }
        counter(
            &mut out,
            "node_requests_total",
            "Requests per node by outcome.",
        );
        for node in &self.nodes {
            for (k, n) in &node.replies {
                let _ = writeln!(
                    out,
                    "quorumlock_node_requests_total{{node=\"{}\",kind=\"{}\"}} {n}",
                    escape(&node.address),
                    k.as_str()
                );
            }
        }
        let labels: Vec<(&Histogram, String)> = self
            .nodes
            .iter()
            .map(|n| (&n.latency, format!("node=\"{}\"", escape(&n.address))))
            .collect();
        let labels: Vec<(&Histogram, &str)> =
            labels.iter().map(|(h, l)| (*h, l.as_str())).collect();
        histogram(
            &mut out,
            "node_latency_seconds",
            "Time to each node reply.",
            &labels,
        );
        out
    }
}

fn histogram(out: &mut String, name: &str, help: &str, series: &[(&Histogram, &str)]) {
    let _ = writeln!(
        out,
        "# HELP quorumlock_{name} {help}\n# TYPE quorumlock_{name} histogram"
    );
    for (h, labels) in series {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (i, c) in h.counts.iter().enumerate() {
            cumulative += c;
            let le = LATENCY_BOUNDS_US
                .get(i)
                .map_or_else(|| "+Inf".to_owned(), |&us| format!("{}", us as f64 / 1e6));
            let _ = writeln!(
                out,
                "quorumlock_{name}_bucket{{{labels}{sep}le=\"{le}\"}} {cumulative}"
            );
        }
        let braces = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(
            out,
            "quorumlock_{name}_sum{braces} {}",
            h.sum_us as f64 / 1e6
        );
        let _ = writeln!(out, "quorumlock_{name}_count{braces} {cumulative}");
    }
}

/// Escapes a Prometheus label value.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_and_quantiles() {
        let h = Histo::default();
        for us in [50, 100, 101, 3_000, 20_000_000] {
            h.observe(Duration::from_micros(us));
        }
        let s = h.snapshot();
        assert_eq!(s.count(), 5);
        assert_eq!(
            s.counts[0], 2,
            "50 and 100 (inclusive bound) share the first bucket"
        );
        assert_eq!(s.counts[1], 1);
        assert_eq!(s.counts[BUCKETS - 1], 1);
        assert_eq!(s.quantile(0.5), Some(Duration::from_micros(250)));
        assert_eq!(s.quantile(1.0), None, "the top observation is unbounded");
        assert_eq!(Histogram::default().quantile(0.5), None);
    }

    #[test]
    fn prometheus_text_is_cumulative_and_labelled() {
        let stats = ClientStats::default();
        stats.acquire.done(Ok(()), Duration::from_micros(300));
        stats
            .acquire
            .done(Err(ErrorKind::Busy), Duration::from_millis(3));
        let node = NodeStats::default();
        node.observe(NodeKind::Ok, Some(Duration::from_micros(90)));
        node.observe(NodeKind::Timeout, None);
        let m = stats.snapshot(vec![node.snapshot(0, "127.0.0.1:7001")]);
        assert_eq!(m.acquire.failures(), 1);
        assert_eq!(m.nodes[0].requests(), 2);
        assert_eq!(m.nodes[0].errors(), 1);
        let text = m.to_prometheus();
        assert!(text.contains("quorumlock_acquire_total{outcome=\"ok\"} 1\n"));
        assert!(text.contains("quorumlock_acquire_total{outcome=\"QL_BUSY\"} 1\n"));
        assert!(text.contains("quorumlock_acquire_duration_seconds_bucket{le=\"0.0005\"} 1\n"));
        assert!(text.contains("quorumlock_acquire_duration_seconds_bucket{le=\"+Inf\"} 2\n"));
        assert!(text.contains("quorumlock_acquire_duration_seconds_count 2\n"));
        assert!(text.contains(
            "quorumlock_node_requests_total{node=\"127.0.0.1:7001\",kind=\"Timeout\"} 1\n"
        ));
        assert!(text.contains(
            "quorumlock_node_latency_seconds_bucket{node=\"127.0.0.1:7001\",le=\"0.0001\"} 1\n"
        ));
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let value = line.rsplit(' ').next().unwrap_or("");
            assert!(value.parse::<f64>().is_ok(), "bad sample line {line:?}");
        }
    }
}
