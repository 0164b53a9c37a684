package invalid.example.quorumlock

import invalid.example.quorumlock.ffi.CancelHandle
import invalid.example.quorumlock.ffi.LockConfig
import invalid.example.quorumlock.ffi.WarningEvent
import invalid.example.quorumlock.ffi.WarningListener
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.future.await
import kotlinx.coroutines.future.future
import kotlinx.coroutines.launch
import kotlinx.coroutines.withContext
import java.time.Duration
import java.util.concurrent.CancellationException
import java.util.concurrent.CompletableFuture
import java.util.concurrent.ExecutionException

/**
 * Entry point: connect to N independent Redis masters.
 *
 * ```java
 * try (Client client = QuorumLock.connect(List.of("redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"), Settings.defaults())) {
 *     RLock lock = client.getLock("invoice:7");
 *     lock.lock(10, TimeUnit.SECONDS);
 *     try { charge(7); } finally { lock.unlock(); }
 * }
 * ```
 */
object QuorumLock {
    /** The version of the native engine inside this jar. */
    @JvmStatic
    fun version(): String = invalid.example.quorumlock.ffi.version()

    /**
     * FENCE-CHECK, a Lua script for a protected resource kept in Redis: `EVAL <script> 1
     * <fence key> <token>` returns 1 and stores the token when it is at least the highest
     * seen, 0 for a stale holder (docs/REDLOCK.md §7.9).
     */
    @JvmStatic
    fun fenceCheckScript(): String = invalid.example.quorumlock.ffi.fenceCheckScript()

    /**
     * Every error code of the native engine with its number, in order (`QL_BUSY` -> 1, ...,
     * `QL_INTERNAL` -> 99): the C ABI's result codes, read from the engine.
     */
    @JvmStatic
    fun errorCodes(): Map<String, Int> =
        invalid.example.quorumlock.ffi.errorKinds().associate { it.name to it.code.toInt() }

    /**
     * Connects to the node URLs (`redis://[user:password@]host:port[/db]`, `rediss://` for TLS,
     * `redis+cluster://h:p,h:p` for a Redis Cluster as one member). Nodes that do not answer
     * keep reconnecting in the background and count as node errors until they do.
     *
     * @throws InvalidArgumentException bad settings or URLs (nothing was sent)
     * @throws ConnectionFailedException with `requireQuorum`, fewer than a quorum usable
     */
    @JvmStatic
    @JvmOverloads
    fun connect(nodes: List<String?>?, settings: Settings? = Settings.defaults()): Client =
        Lease.join(connectAsync(nodes, settings))

    /** [connect] without blocking. */
    @JvmStatic
    @JvmOverloads
    fun connectAsync(nodes: List<String?>?, settings: Settings? = Settings.defaults()): CompletableFuture<Client> {
        val (list, config, listener) = prepare(nodes, settings)
        return Lease.typed(Native.scope.future { Client(invalid.example.quorumlock.ffi.connect(list, config, listener)) })
    }

    /** [connect] for coroutines. */
    @JvmSynthetic
    suspend fun connectAwait(nodes: List<String>, settings: Settings = Settings.defaults()): Client {
        val (list, config, listener) = prepare(nodes, settings)
        return Client(Native.call { invalid.example.quorumlock.ffi.connect(list, config, listener) })
    }

    private fun prepare(nodes: List<String?>?, settings: Settings?): Triple<List<String>, invalid.example.quorumlock.ffi.ClientConfig, WarningListener?> {
        requireNotNull(nodes) { "nodes must not be null" }
        requireNotNull(settings) { "settings must not be null" }
        val list = nodes.mapIndexed { i, n -> Native.text("node #$i", n) }
        val listener = settings.warningListener?.let { consumer ->
            object : WarningListener {
                override fun onWarning(warning: WarningEvent) {
                    runCatching {
                        consumer.accept(Warning(warning.code, warning.node?.toInt(), warning.address, warning.message))
                    }
                }
            }
        }
        return Triple(list, settings.native(), listener)
    }
}

/**
 * A Redlock client over N independent Redis masters. Thread-safe; share one per process.
 * Locks ([getLock]) are cheap handles. [close] frees the connections once no lease of this
 * client is held any more.
 */
class Client internal constructor(private val native: invalid.example.quorumlock.ffi.Client) : AutoCloseable {

    /** A lock handle for [name] with the client's default options. */
    fun getLock(name: String?): RLock = getLock(name, LockOptions.defaults())

    /** A lock handle for [name] with [options] on top of the client's defaults. */
    fun getLock(name: String?, options: LockOptions?): RLock =
        RLock(this, listOf(checkName(name)), requireNotNull(options) { "options must not be null" })

    /**
     * One lock over several resources, taken all or nothing on each node (Redisson's
     * `RedissonMultiLock`, but as one Redlock acquisition).
     */
    @JvmOverloads
    fun getMultiLock(names: List<String?>?, options: LockOptions? = LockOptions.defaults()): RLock {
        requireNotNull(names) { "names must not be null" }
        return RLock(this, names.map(::checkName), requireNotNull(options) { "options must not be null" })
    }

    /** A lock handle for [name] that returns a fencing token with each acquisition (`RFencedLock`). */
    fun getFencedLock(name: String?): RLock = getLock(name, LockOptions.defaults().withFencing(true))

    /**
     * Acquires [names] once, as a [Lease] (the handle-free API). [leaseTime] `null` means the
     * default lease, extended in the background until released; [waitTime] `null` means as
     * long as it takes, zero one attempt. Cancelling the future cancels the acquisition, and
     * the attempt's keys are released on every node.
     */
    fun acquireAsync(names: List<String?>?, leaseTime: Duration?, waitTime: Duration?, options: LockOptions?): CompletableFuture<Lease> {
        val config = config(requireNotNull(options) { "options must not be null" }, leaseTime, waitTime)
        return acquireFuture(requireNotNull(names) { "names must not be null" }.map(::checkName), config)
    }

    /** Kotlin: acquires [names] ([leaseTime] `null`: auto-extended; [waitTime] `null`: as long as it takes). */
    @JvmSynthetic
    suspend fun acquire(
        names: List<String>,
        leaseTime: Duration? = null,
        waitTime: Duration? = null,
        options: LockOptions = LockOptions.defaults(),
    ): Lease = awaitAcquire(names.map(::checkName), config(options, leaseTime, waitTime))

    /**
     * Kotlin: runs [block] while holding [name], then releases. Without a [leaseTime] the
     * lease is extended in the background; if the lock is lost, [block] is cancelled and
     * [LockLostException] is thrown.
     */
    @JvmSynthetic
    suspend fun <T> withLock(
        name: String,
        leaseTime: Duration? = null,
        waitTime: Duration? = null,
        options: LockOptions = LockOptions.defaults(),
        block: suspend CoroutineScope.(Lease) -> T,
    ): T {
        val lease = acquire(listOf(name), leaseTime, waitTime, options)
        try {
            return coroutineScope {
                val watcher = launch {
                    try {
                        lease.lost().await()
                    } catch (e: CancellationException) {
                        return@launch
                    }
                    throw lease.lostException() ?: QuorumLockException.invalid("the lock was lost")
                }
                try {
                    block(lease)
                } finally {
                    watcher.cancel()
                }
            }
        } finally {
            withContext(NonCancellable) { lease.awaitRelease() }
        }
    }

    /** Number of configured nodes N. */
    fun nodeCount(): Int = native.nodeCount().toInt()

    /** The quorum `N / 2 + 1`. */
    fun quorum(): Int = native.quorum().toInt()

    /** Node addresses (`host:port/db`), in configuration order. */
    fun addresses(): List<String> = native.addresses()

    /** The largest lease this client accepts. */
    fun maxTtl(): Duration = native.maxTtl()

    /** A snapshot of the counters and latency histograms (no I/O). */
    fun metrics(): Metrics = Metrics.of(native.metrics())

    /** The same snapshot as Prometheus text. */
    fun metricsPrometheus(): String = native.metricsPrometheus()

    /** Frees the client's native handle (its connections close once no lease holds them). */
    override fun close() = native.close()

    // ---- internals shared with RLock ----

    internal fun nativeClient() = native

    internal fun config(options: LockOptions, leaseTime: Duration?, waitTime: Duration?): LockConfig {
        val lease = Native.optional("leaseTime", leaseTime)
        val wait = waitTime?.let { if (it.isNegative) Duration.ZERO else it }
        return options.native(
            leaseTime = lease ?: options.leaseTime,
            autoExtend = lease == null,
            retryCount = if (wait?.isZero == true) 0u else UInt.MAX_VALUE,
            wait = wait?.takeIf { !it.isZero },
        )
    }

    /** Starts an acquisition; cancelling the returned future cancels it (keys cleaned up). */
    internal fun acquireFuture(names: List<String>, config: LockConfig): CompletableFuture<Lease> {
        val cancel = CancelHandle()
        val started = startAcquire(names, config, cancel)
        val out = CompletableFuture<Lease>()
        started.whenComplete { lock, e ->
            if (e != null) {
                out.completeExceptionally(Native.unwrap(e))
            } else if (!out.complete(Lease(lock))) {
                // The caller cancelled after the engine succeeded: give the lock back.
                Lease(lock).releaseAsync()
            }
        }
        out.whenComplete { _, e -> if (e is CancellationException) cancel.cancel() }
        return out
    }

    /**
     * Blocking acquisition. Interruptible: on an interrupt the engine cancels, releases the
     * attempt's keys and returns (a success that won the race is released), then
     * [InterruptedException] is thrown. Uninterruptible: the interrupt is kept for later.
     */
    internal fun acquireBlocking(names: List<String>, config: LockConfig, interruptible: Boolean): Lease {
        if (interruptible && Thread.interrupted()) throw InterruptedException()
        if (Native.mayBlockNatively()) return acquireNatively(names, config, interruptible)
        val cancel = CancelHandle()
        val started = startAcquire(names, config, cancel)
        var interrupted = false
        try {
            while (true) {
                try {
                    return Lease(started.get())
                } catch (e: ExecutionException) {
                    Native.rethrow(e)
                } catch (e: InterruptedException) {
                    if (!interruptible) {
                        interrupted = true
                        continue
                    }
                    cancel.cancel()
                    finishCancelled(started)?.let { Lease(it).releaseAsync() }
                    throw e
                }
            }
        } finally {
            if (interrupted) Thread.currentThread().interrupt()
        }
    }

    /**
     * [acquireBlocking] on a platform thread: the calling thread waits in native code, in
     * slices of [Native.SLICE] between which it looks at its interrupt when [interruptible]
     * (else in [Native.LONG_SLICE]s, the interrupt left set for later). An acquisition decided
     * within the first call's brief poll costs one FFI call. Leaving by an unexpected
     * exception frees the pending acquisition, which cancels it.
     */
    private fun acquireNatively(names: List<String>, config: LockConfig, interruptible: Boolean): Lease {
        val started = Native.call { native.startAcquire(names, config) }
        started.lock?.let { return Lease(it) }
        val pending = started.pending ?: throw IllegalStateException("the native library returned neither a lock nor an acquisition")
        try {
            while (true) {
                val slice = if (interruptible) Native.SLICE else Native.LONG_SLICE
                Native.call { pending.waitOutcome(slice) }?.let { return Lease(it) }
                if (!interruptible || !Thread.interrupted()) continue
                pending.cancel()
                // The engine answers soon (its cleanup is bounded by the node timeout); a
                // success that won the race is given back.
                while (true) {
                    val won = try {
                        pending.waitOutcome(Native.SLICE) ?: continue
                    } catch (_: Exception) {
                        null // the cancellation or the acquisition's error
                    }
                    won?.let { Lease(it).releaseAsync() }
                    throw InterruptedException()
                }
            }
        } finally {
            pending.close()
        }
    }

    /** Kotlin: an acquisition that, when the caller is cancelled, waits for the cleanup. */
    internal suspend fun awaitAcquire(names: List<String>, config: LockConfig): Lease {
        val cancel = CancelHandle()
        val started = startAcquire(names, config, cancel)
        try {
            return Lease(started.copy().await())
        } catch (e: CancellationException) {
            cancel.cancel()
            withContext(NonCancellable) {
                try {
                    started.await()
                } catch (_: Throwable) {
                    null
                }?.let { Lease(it).awaitRelease() }
            }
            throw e
        } catch (e: Throwable) {
            throw Native.unwrap(e)
        }
    }

    private fun startAcquire(names: List<String>, config: LockConfig, cancel: CancelHandle) =
        Native.scope.future { native.acquire(names, config, cancel) }

    /**
     * After a cancel: waits (uninterruptibly, keeping the interrupt) until the engine has
     * answered. Returns the lock when a success won the race, else `null`.
     */
    private fun finishCancelled(started: CompletableFuture<invalid.example.quorumlock.ffi.Lock>): invalid.example.quorumlock.ffi.Lock? {
        var interrupted = false
        try {
            while (true) {
                try {
                    return started.get()
                } catch (e: InterruptedException) {
                    interrupted = true
                } catch (e: ExecutionException) {
                    return null
                }
            }
        } finally {
            if (interrupted) Thread.currentThread().interrupt()
        }
    }

    private fun checkName(name: String?): String = Native.text("a lock name", name)
}
