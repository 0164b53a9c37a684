package invalid.example.quorumlock

import java.time.Duration

/**
 * A latency histogram: `counts[i]` observations fell in bucket `i`, whose upper bound is
 * [Metrics.latencyBoundsMicros]`[i]` microseconds; the last bucket is unbounded. Quantiles
 * are the upper bound of their bucket, `null` when empty or above 10 s.
 */
@JvmRecord
data class Histogram(
    val counts: List<Long>,
    val sumMicros: Long,
    val count: Long,
    val p50: Duration?,
    val p90: Duration?,
    val p99: Duration?,
) {
    internal companion object {
        fun of(h: invalid.example.quorumlock.ffi.Histogram) = Histogram(
            h.counts.map { it.toLong() }, h.sumUs.toLong(), h.count.toLong(), h.p50, h.p90, h.p99,
        )
    }
}

/**
 * The outcomes of one kind of operation: successes, failures by code (`"QL_BUSY"` -> n, only
 * codes seen) and the duration of every call.
 */
@JvmRecord
data class OpMetrics(val ok: Long, val failures: Long, val failed: Map<String, Long>, val latency: Histogram) {
    internal companion object {
        fun of(m: invalid.example.quorumlock.ffi.OpMetrics) = OpMetrics(
            m.ok.toLong(), m.failures.toLong(),
            m.failed.associate { it.name to it.count.toLong() }, Histogram.of(m.latency),
        )
    }
}

/**
 * What one node answered over the client's life: requests by node kind (`"Ok"`,
 * `"HeldByOther"`, `"Timeout"`, ...; only kinds seen), node errors, reply latency.
 */
@JvmRecord
data class NodeMetrics(
    val index: Int,
    val address: String,
    val replies: Map<String, Long>,
    val requests: Long,
    val errors: Long,
    val latency: Histogram,
)

/**
 * A snapshot of a client's counters (`client.metrics()`, no I/O); counters only grow.
 * `client.metricsPrometheus()` renders the same as Prometheus text.
 */
@JvmRecord
data class Metrics(
    val acquireAttempts: Long,
    val acquire: OpMetrics,
    val extend: OpMetrics,
    val release: OpMetrics,
    val lost: Long,
    val wakeups: Long,
    val nodes: List<NodeMetrics>,
) {
    companion object {
        /** The upper bounds of the histogram buckets, in microseconds. */
        @JvmStatic
        fun latencyBoundsMicros(): List<Long> = invalid.example.quorumlock.ffi.latencyBoundsUs().map { it.toLong() }

        internal fun of(m: invalid.example.quorumlock.ffi.Metrics) = Metrics(
            m.acquireAttempts.toLong(), OpMetrics.of(m.acquire), OpMetrics.of(m.extend),
            OpMetrics.of(m.release), m.lost.toLong(), m.wakeups.toLong(),
            m.nodes.map { n ->
                NodeMetrics(
                    n.index.toInt(), n.address, n.replies.associate { it.name to it.count.toLong() },
                    n.requests.toLong(), n.errors.toLong(), Histogram.of(n.latency),
                )
            },
        )
    }
}
