package invalid.example.quorumlock

import invalid.example.quorumlock.ffi.LostEvent
import invalid.example.quorumlock.ffi.LostListener
import invalid.example.quorumlock.ffi.ReleaseOutcome
import kotlinx.coroutines.future.await
import kotlinx.coroutines.future.future
import java.time.Duration
import java.util.concurrent.CancellationException
import java.util.concurrent.CompletableFuture
import java.util.concurrent.ForkJoinPool
import java.util.concurrent.atomic.AtomicBoolean

/**
 * What a release found (a Java record).
 *
 * @property heldByQuorum true when at least a quorum of nodes still held the lock and deleted it
 * @property nodes one entry per node: `Released`, `NotHeld`, `HeldByOther`, or a node error
 */
@JvmRecord
data class ReleaseReport(val heldByQuorum: Boolean, val nodes: List<NodeReport>)

/**
 * One held acquisition of one or more resources: what `RLock.lock()` took, or what
 * `client.acquireAsync(...)` / Kotlin's `client.acquire(...)` returned. Act on the protected
 * resource only while [remaining] is positive. Thread-safe; [release] is idempotent.
 */
class Lease internal constructor(private val native: invalid.example.quorumlock.ffi.Lock) : AutoCloseable {
    private val released = AtomicBoolean(false)
    private val lostFuture = CompletableFuture<LostReason>()
    private val watching = AtomicBoolean(false)

    /** The resources, sorted and deduplicated. */
    fun resources(): List<String> = native.resources()

    /** The lock value stored on the nodes (unguessable; the same on every node). */
    fun value(): String = native.value()

    /**
     * The fencing token of a fenced lock ([LockOptions.withFencing]): strictly greater than
     * every token before it for this resource. `null` when not fenced.
     */
    fun token(): Long? = native.token()?.toLong()

    /** The fencing tokens, one per resource in [resources] order; `null` when not fenced. */
    fun tokens(): List<Long>? = native.tokens()?.map { it.toLong() }

    /** The lease it was acquired or last extended with. */
    fun leaseTime(): Duration = native.ttl()

    /** Validity left now; zero once expired, lost or released. */
    fun remaining(): Duration = native.remaining()

    /** True while held and within validity. */
    fun isHeld(): Boolean = native.isHeld()

    /** True while the lease is extended in the background (`lock()` without a lease time). */
    fun isAutoExtending(): Boolean = native.isAutoExtending()

    /** Attempts the acquisition took. */
    fun attempts(): Int = native.attempts().toInt()

    /** Successful extensions so far. */
    fun extensions(): Int = native.extensions().toInt()

    /** The per-node report of the acquisition. */
    fun report(): List<NodeReport> = NodeReport.of(native.report())

    /**
     * Completes with the reason when the lock is lost (keys gone or taken, lease over without
     * an extension, an extension cap); completes exceptionally with a [CancellationException]
     * once the lease is released, so nothing waits forever. Each call returns a new future:
     * cancelling it changes nothing else. Dependent actions run on the common pool.
     */
    fun lost(): CompletableFuture<LostReason> {
        if (watching.compareAndSet(false, true) && !released.get()) {
            Native.call {
                native.onLost(object : LostListener {
                    override fun onLost(event: LostEvent) {
                        val reason = LostReason.of(event.reason)
                        ForkJoinPool.commonPool().execute { lostFuture.complete(reason) }
                    }
                })
            }
        }
        return lostFuture.copy()
    }

    /** The loss if the lock is lost now (a lease past its end included), else `null`. */
    fun lostException(): LockLostException? = native.lost()?.let(::lostOf)

    private fun lostOf(event: LostEvent): LockLostException =
        QuorumLockException.of(event.error as invalid.example.quorumlock.ffi.NativeException.Failed) as LockLostException

    /**
     * Extends the lease to [leaseTime] from now on a quorum of nodes. An expired lease is
     * never revived; a failed extension changes nothing.
     *
     * @throws LockLostException the lock is gone (terminal)
     * @throws QuorumNotReachedException transient: the lease stays until its old end
     * @throws InvalidArgumentException released, or a bad lease time
     */
    fun extend(leaseTime: Duration?) {
        val d = Native.duration("leaseTime", leaseTime)
        if (Native.mayBlockNatively()) Native.call { native.extendBlocking(d) } else join(Native.scope.future { native.extend(d) })
    }

    /** [extend] without blocking. */
    fun extendAsync(leaseTime: Duration?): CompletableFuture<Void?> {
        val d = Native.duration("leaseTime", leaseTime)
        return typed(Native.scope.future { native.extend(d); null })
    }

    /** [extend] for coroutines. */
    @JvmSynthetic
    suspend fun awaitExtend(leaseTime: Duration) {
        val d = Native.duration("leaseTime", leaseTime)
        Native.call { native.extend(d) }
    }

    /**
     * Releases the lock on every node (compare-and-delete) and returns what each node did.
     * Idempotent: a second call sends nothing and returns the first report. Releasing a lease
     * that ran out is not an error here: [ReleaseReport.heldByQuorum] is then `false` (see
     * [RLock.unlock], which throws then). Never interrupted: an interrupt during the release
     * is kept for the caller.
     */
    fun release(): ReleaseReport = releaseOutcome().let { ReleaseReport(it.heldByQuorum, NodeReport.of(it.nodes)) }

    /**
     * [release], and the loss the engine had seen when it began (what [lostException] would
     * have returned just before), for [RLock.unlock].
     */
    internal fun releaseNotingLoss(): LockLostException? {
        if (!Native.mayBlockNatively()) {
            val lost = lostException()
            release()
            return lost
        }
        markReleased()
        return try {
            Native.call { native.unlockBlocking() }
            null
        } catch (e: LockLostException) {
            e
        }
    }

    private fun releaseOutcome(): ReleaseOutcome {
        markReleased()
        return if (Native.mayBlockNatively()) Native.call { native.releaseBlocking() } else join(Native.scope.future { native.release() })
    }

    /** [release] without blocking. */
    fun releaseAsync(): CompletableFuture<ReleaseReport> {
        markReleased()
        return typed(Native.scope.future { native.release().let { ReleaseReport(it.heldByQuorum, NodeReport.of(it.nodes)) } })
    }

    /**
     * [release] for coroutines. A cancelled caller stops waiting at once; the release itself
     * still completes in the background.
     */
    @JvmSynthetic
    suspend fun awaitRelease(): ReleaseReport = releaseAsync().await()

    /** [release], discarding the report. */
    override fun close() {
        release()
    }

    private fun markReleased() {
        if (!released.compareAndSet(false, true)) return
        val done = CancellationException("the lease was released")
        // Nobody asked for lost() (and from now on, nobody gets a listener): no dependent
        // action can run here, so no hop to the pool.
        if (watching.compareAndSet(false, true)) lostFuture.completeExceptionally(done) else ForkJoinPool.commonPool().execute { lostFuture.completeExceptionally(done) }
    }

    override fun toString(): String = "Lease(resources=${resources()}, remaining=${remaining()})"

    internal companion object {
        /** A future whose failures are the typed exceptions. */
        fun <T> typed(f: CompletableFuture<T>): CompletableFuture<T> {
            val out = CompletableFuture<T>()
            f.whenComplete { v, e -> if (e != null) out.completeExceptionally(Native.unwrap(e)) else out.complete(v) }
            return out
        }

        /** Waits for [f] without being interrupted (the interrupt is kept) and rethrows typed. */
        fun <T> join(f: CompletableFuture<T>): T {
            var interrupted = false
            try {
                while (true) {
                    try {
                        return f.get()
                    } catch (e: InterruptedException) {
                        interrupted = true
                    } catch (e: java.util.concurrent.ExecutionException) {
                        Native.rethrow(e)
                    }
                }
            } finally {
                if (interrupted) Thread.currentThread().interrupt()
            }
        }
    }
}
