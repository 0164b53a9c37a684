package invalid.example.quorumlock

import invalid.example.quorumlock.ffi.ClientConfig
import invalid.example.quorumlock.ffi.LockConfig
import java.time.Duration
import java.util.function.Consumer

/** Restart quarantine mode (docs/REDLOCK.md §8.2). */
enum class Quarantine {
    /** Nodes without durable writes count only after `maxTtl + quarantineMargin` of uptime (default). */
    ON,

    /** As [ON], and a node that refuses `INFO` never counts. */
    STRICT,

    /** No restart checks: plain local servers, tests, or operators who delay restarts themselves. */
    OFF;

    internal fun native() = when (this) {
        ON -> invalid.example.quorumlock.ffi.Quarantine.ON
        STRICT -> invalid.example.quorumlock.ffi.Quarantine.STRICT
        OFF -> invalid.example.quorumlock.ffi.Quarantine.OFF
    }
}

/** What to do with a node whose eviction policy can remove lock keys (docs/REDLOCK.md §8.3). */
enum class EvictionCheck {
    /** Exclude the node (default). */
    REFUSE,

    /** Count the node and warn once. */
    WARN,

    /** Skip the check. */
    OFF;

    internal fun native() = when (this) {
        REFUSE -> invalid.example.quorumlock.ffi.EvictionCheck.REFUSE
        WARN -> invalid.example.quorumlock.ffi.EvictionCheck.WARN
        OFF -> invalid.example.quorumlock.ffi.EvictionCheck.OFF
    }
}

/**
 * An engine warning (`QL_W_NOT_DURABLE`, `QL_W_DUPLICATE_NODE`, ...), delivered once per kind
 * and node (a Java record).
 *
 * @property code the stable code, e.g. `"QL_W_NOT_DURABLE"`
 * @property node the node's index, or `null` when not about one node
 * @property address the node's `host:port/db`, or `null`
 * @property message what is wrong and what to do
 */
@JvmRecord
data class Warning(val code: String, val node: Int?, val address: String?, val message: String)

/**
 * Options of a lock; `null` fields keep the client's defaults. Immutable: every `with...`
 * returns a copy.
 *
 * ```java
 * LockOptions opts = LockOptions.defaults().withLeaseTime(Duration.ofSeconds(30)).withFencing(true);
 * ```
 */
class LockOptions private constructor(
    /** The lease (time-to-live) of `lock()` without a lease time; also the auto-extension's ttl. */
    val leaseTime: Duration?,
    /** Fixed part of the delay between attempts (default 100 ms). */
    val retryDelay: Duration?,
    /** Random part of the delay between attempts (default 200 ms). */
    val retryJitter: Duration?,
    /** Deadline of one request round on the nodes (default `clamp(lease / 200, 5 ms, 50 ms)`). */
    val nodeTimeout: Duration?,
    /** Minimum validity a successful attempt must leave (default `lease / 10`). */
    val minValidity: Duration?,
    /** Interval of the auto-extension (default `lease / 3`). */
    val extendInterval: Duration?,
    /** Cap on automatic extensions (default unlimited). */
    val maxExtensions: Int?,
    /** Cap on the total holding time (default unlimited). */
    val maxHold: Duration?,
    /** Return a fencing token with each acquisition (default off). */
    val fencing: Boolean?,
    /** Let fencing counters expire after this long without writes (default never). */
    val fenceCounterTtl: Duration?,
) {
    private fun copy(
        leaseTime: Duration? = this.leaseTime,
        retryDelay: Duration? = this.retryDelay,
        retryJitter: Duration? = this.retryJitter,
        nodeTimeout: Duration? = this.nodeTimeout,
        minValidity: Duration? = this.minValidity,
        extendInterval: Duration? = this.extendInterval,
        maxExtensions: Int? = this.maxExtensions,
        maxHold: Duration? = this.maxHold,
        fencing: Boolean? = this.fencing,
        fenceCounterTtl: Duration? = this.fenceCounterTtl,
    ) = LockOptions(
        leaseTime, retryDelay, retryJitter, nodeTimeout, minValidity, extendInterval,
        maxExtensions, maxHold, fencing, fenceCounterTtl,
    )

    /** The lease of `lock()` without a lease time, and of every automatic extension. */
    fun withLeaseTime(d: Duration?): LockOptions = copy(leaseTime = Native.duration("leaseTime", d))

    /** The fixed part of the delay between attempts. */
    fun withRetryDelay(d: Duration?): LockOptions = copy(retryDelay = Native.duration("retryDelay", d))

    /** The random part of the delay between attempts. */
    fun withRetryJitter(d: Duration?): LockOptions = copy(retryJitter = Native.duration("retryJitter", d))

    /** The deadline of one request round (raise it on loaded machines). */
    fun withNodeTimeout(d: Duration?): LockOptions = copy(nodeTimeout = Native.duration("nodeTimeout", d))

    /** The minimum validity a successful attempt must leave. */
    fun withMinValidity(d: Duration?): LockOptions = copy(minValidity = Native.duration("minValidity", d))

    /** The interval of the auto-extension. */
    fun withExtendInterval(d: Duration?): LockOptions = copy(extendInterval = Native.duration("extendInterval", d))

    /** A cap on automatic extensions; the lock is then lost (`EXTENSION_LIMIT`) when its lease ends. */
    fun withMaxExtensions(n: Int): LockOptions {
        require(n >= 0) { "maxExtensions must not be negative (got $n)" }
        return copy(maxExtensions = n)
    }

    /** A cap on the total holding time. */
    fun withMaxHold(d: Duration?): LockOptions = copy(maxHold = Native.duration("maxHold", d))

    /** Return a fencing token with each acquisition ([Lease.token], [RLock.getToken]). */
    fun withFencing(on: Boolean): LockOptions = copy(fencing = on)

    /** Let fencing counters expire after this long without writes (at least `maxTtl + 5 s`). */
    fun withFenceCounterTtl(d: Duration?): LockOptions = copy(fenceCounterTtl = Native.duration("fenceCounterTtl", d))

    /** The native options for one call: these, then the call's own lease, wait and retries. */
    internal fun native(
        leaseTime: Duration? = this.leaseTime,
        autoExtend: Boolean? = null,
        retryCount: UInt? = null,
        wait: Duration? = null,
    ) = LockConfig(
        ttl = leaseTime,
        retryCount = retryCount,
        retryDelay = retryDelay,
        retryJitter = retryJitter,
        wait = wait,
        minValidity = minValidity,
        nodeTimeout = nodeTimeout,
        autoExtend = autoExtend,
        extendInterval = extendInterval,
        maxExtensions = maxExtensions?.toUInt(),
        maxHold = maxHold,
        fenced = fencing,
        fenceCounterTtl = fenceCounterTtl,
        value = null,
    )

    companion object {
        private val DEFAULTS = LockOptions(null, null, null, null, null, null, null, null, null, null)

        /** No option set: the client's defaults apply. */
        @JvmStatic
        fun defaults(): LockOptions = DEFAULTS
    }
}

/**
 * Client settings; `null` fields keep the engine's defaults (docs/REDLOCK.md §11). Immutable:
 * every `with...` returns a copy.
 *
 * ```java
 * Settings s = Settings.defaults().withQuarantine(Quarantine.OFF).withMaxTtl(Duration.ofMinutes(5));
 * ```
 */
class Settings private constructor(
    /** Restart quarantine mode (default [Quarantine.ON]). */
    val quarantine: Quarantine?,
    /** The largest lease any lock may take (default 60 s; the same on every client of these nodes). */
    val maxTtl: Duration?,
    /** Drift factor `d` of `drift = lease * d + c` (default 0.01). */
    val driftFactor: Double?,
    /** Drift constant `c` (default 2 ms). */
    val driftConstant: Duration?,
    /** Connect timeout per node (default 1 s). */
    val connectTimeout: Duration?,
    /** Key prefix (default `quorumlock:`). */
    val keyPrefix: String?,
    /** Release notification, so waiters wake on a release (default on). */
    val notify: Boolean?,
    /** How often node settings are read again (default 60 s). */
    val reprobeEvery: Duration?,
    /** Fail `connect` unless a quorum of nodes is usable (default off: nodes reconnect in the background). */
    val requireQuorum: Boolean?,
    /** Extra quarantine beyond `maxTtl` (default 5 s). */
    val quarantineMargin: Duration?,
    /** Eviction policy check (default [EvictionCheck.REFUSE]). */
    val evictionCheck: EvictionCheck?,
    /** Default options of the client's locks. */
    val lockDefaults: LockOptions,
    /** Receives engine warnings, once per kind and node (default none). */
    val warningListener: Consumer<Warning>?,
) {
    private fun copy(
        quarantine: Quarantine? = this.quarantine,
        maxTtl: Duration? = this.maxTtl,
        driftFactor: Double? = this.driftFactor,
        driftConstant: Duration? = this.driftConstant,
        connectTimeout: Duration? = this.connectTimeout,
        keyPrefix: String? = this.keyPrefix,
        notify: Boolean? = this.notify,
        reprobeEvery: Duration? = this.reprobeEvery,
        requireQuorum: Boolean? = this.requireQuorum,
        quarantineMargin: Duration? = this.quarantineMargin,
        evictionCheck: EvictionCheck? = this.evictionCheck,
        lockDefaults: LockOptions = this.lockDefaults,
        warningListener: Consumer<Warning>? = this.warningListener,
    ) = Settings(
        quarantine, maxTtl, driftFactor, driftConstant, connectTimeout, keyPrefix, notify,
        reprobeEvery, requireQuorum, quarantineMargin, evictionCheck, lockDefaults, warningListener,
    )

    /** The restart quarantine mode. */
    fun withQuarantine(q: Quarantine?): Settings = copy(quarantine = requireNotNull(q) { "quarantine must not be null" })

    /** The largest lease (up to 2^53 - 1 ms); the same on every client of these nodes. */
    fun withMaxTtl(d: Duration?): Settings = copy(maxTtl = Native.duration("maxTtl", d))

    /** The drift factor, in `0.0..0.5`. */
    fun withDriftFactor(d: Double): Settings = copy(driftFactor = d)

    /** The drift constant. */
    fun withDriftConstant(d: Duration?): Settings = copy(driftConstant = Native.duration("driftConstant", d))

    /** The connect timeout per node. */
    fun withConnectTimeout(d: Duration?): Settings = copy(connectTimeout = Native.duration("connectTimeout", d))

    /** The key prefix (keys are `<prefix>{<name>}`). */
    fun withKeyPrefix(p: String?): Settings = copy(keyPrefix = Native.text("keyPrefix", p))

    /** Release notification on or off. */
    fun withNotify(on: Boolean): Settings = copy(notify = on)

    /** How often node settings are read again. */
    fun withReprobeEvery(d: Duration?): Settings = copy(reprobeEvery = Native.duration("reprobeEvery", d))

    /** Fail `connect` unless a quorum of nodes is usable. */
    fun withRequireQuorum(on: Boolean): Settings = copy(requireQuorum = on)

    /** Extra quarantine beyond `maxTtl`. */
    fun withQuarantineMargin(d: Duration?): Settings = copy(quarantineMargin = Native.duration("quarantineMargin", d))

    /** The eviction policy check. */
    fun withEvictionCheck(e: EvictionCheck?): Settings = copy(evictionCheck = requireNotNull(e) { "evictionCheck must not be null" })

    /** Default options of the client's locks. */
    fun withLockDefaults(o: LockOptions?): Settings = copy(lockDefaults = requireNotNull(o) { "lockDefaults must not be null" })

    /** Receives engine warnings; called on an engine helper thread, must not block. */
    fun withWarningListener(l: Consumer<Warning>?): Settings =
        copy(warningListener = requireNotNull(l) { "warningListener must not be null" })

    internal fun native() = ClientConfig(
        driftFactor = driftFactor,
        driftConstant = driftConstant,
        maxTtl = maxTtl,
        connectTimeout = connectTimeout,
        keyPrefix = keyPrefix,
        notify = notify,
        reprobeEvery = reprobeEvery,
        requireQuorum = requireQuorum,
        quarantine = quarantine?.native(),
        quarantineMargin = quarantineMargin,
        evictionCheck = evictionCheck?.native(),
        lockDefaults = lockDefaults.native(),
    )

    companion object {
        private val DEFAULTS = Settings(
            null, null, null, null, null, null, null, null, null, null, null,
            LockOptions.defaults(), null,
        )

        /** The engine's defaults. */
        @JvmStatic
        fun defaults(): Settings = DEFAULTS
    }
}
