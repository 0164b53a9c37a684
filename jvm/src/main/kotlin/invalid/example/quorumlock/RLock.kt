package invalid.example.quorumlock

import kotlinx.coroutines.future.await
import kotlinx.coroutines.future.future
import java.time.Duration
import java.util.concurrent.CompletableFuture
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicReference
import java.util.concurrent.locks.Condition
import java.util.concurrent.locks.Lock

/**
 * A Redlock lock handle on one name (or several, from `getMultiLock`), shaped like Redisson's
 * `RLock`: `lock(leaseTime, unit)`, `tryLock(waitTime, leaseTime, unit)`, `unlock()`, and the
 * [java.util.concurrent.locks.Lock] methods.
 *
 * How it differs from Redisson's RLock (docs/MIGRATING.md):
 * - **Not reentrant.** A thread that holds the lock through this handle and asks for it
 *   again with a wait gets [IllegalStateException] (it would wait for itself); `tryLock()`
 *   returns `false`.
 * - **Not thread-owned.** The handle holds at most one acquisition, and any thread may
 *   [unlock] it. Give each thread or task its own handle (`getLock` is cheap) when they
 *   contend with each other; sharing one works too, since the engine excludes them.
 * - Without a lease time (`lock()`, `tryLock(time, unit)`) the lease is the client's default
 *   (10 s) and is extended in the background until [unlock], like Redisson's watchdog. With
 *   a lease time it simply ends then (at most `maxTtl`, 60 s by default).
 * - [unlock] of a lock that the engine saw lost in the meantime (lease over, keys gone or taken
 *   at an extension) releases what is left and throws [LockLostException], so the caller
 *   learns that the critical section may have overlapped.
 */
class RLock internal constructor(
    private val client: Client,
    private val names: List<String>,
    private val options: LockOptions,
) : Lock, AutoCloseable {
    private val held = AtomicReference<Lease?>()

    @Volatile
    private var holderThread: Thread? = null

    /** The lock's name (names joined by `,` for a multi-lock). */
    fun getName(): String = names.joinToString(",")

    /** The resource names. */
    fun getNames(): List<String> = names

    // ---- blocking, java.util.concurrent.locks.Lock ----

    /**
     * Acquires the lock, waiting as long as it takes; the lease is extended in the background
     * until [unlock]. Not interruptible: an interrupt is kept for later.
     */
    override fun lock() {
        guardReentry()
        install(client.acquireBlocking(names, forever(null), interruptible = false))
    }

    /** Acquires the lock for [leaseTime]; it ends then unless unlocked before. Waits as long as it takes. */
    fun lock(leaseTime: Long, unit: TimeUnit?) {
        val lease = Native.duration("leaseTime", leaseTime, unit)
        guardReentry()
        install(client.acquireBlocking(names, forever(lease), interruptible = false))
    }

    /**
     * As [lock], but an interrupt cancels the wait: the attempt's keys are released on every
     * node before [InterruptedException] is thrown.
     */
    @Throws(InterruptedException::class)
    override fun lockInterruptibly() {
        guardReentry()
        install(client.acquireBlocking(names, forever(null), interruptible = true))
    }

    /** As [lock] with a lease time, interruptible. */
    @Throws(InterruptedException::class)
    fun lockInterruptibly(leaseTime: Long, unit: TimeUnit?) {
        val lease = Native.duration("leaseTime", leaseTime, unit)
        guardReentry()
        install(client.acquireBlocking(names, forever(lease), interruptible = true))
    }

    /**
     * One attempt: `true` if the lock was free and is now held (extended in the background
     * until [unlock]), `false` if others hold it.
     *
     * @throws QuorumNotReachedException node failures, not contention, stopped it
     */
    override fun tryLock(): Boolean {
        if (holdsHere()) return false
        return busyAsFalse { install(client.acquireBlocking(names, client.config(options, null, Duration.ZERO), interruptible = false)) }
    }

    /** Waits up to [time] for the lock (extended in the background until [unlock]). */
    @Throws(InterruptedException::class)
    override fun tryLock(time: Long, unit: TimeUnit?): Boolean {
        return tryLockFor(Native.duration("time", maxOf(time, 0), unit), null)
    }

    /** Waits up to [waitTime] for the lock and holds it for [leaseTime]. */
    @Throws(InterruptedException::class)
    fun tryLock(waitTime: Long, leaseTime: Long, unit: TimeUnit?): Boolean {
        val lease = Native.duration("leaseTime", leaseTime, unit)
        return tryLockFor(Native.duration("waitTime", maxOf(waitTime, 0), unit), lease)
    }

    private fun tryLockFor(wait: Duration, lease: Duration?): Boolean {
        if (wait.isZero) {
            if (Thread.interrupted()) throw InterruptedException()
            if (holdsHere()) return false
            return busyAsFalse { install(client.acquireBlocking(names, client.config(options, lease, Duration.ZERO), interruptible = true)) }
        }
        guardReentry()
        return busyAsFalse { install(client.acquireBlocking(names, client.config(options, lease, wait), interruptible = true)) }
    }

    /**
     * Releases the lock on every node. Any thread may call it (not thread-owned). Node
     * failures during the release do not throw: the keys then expire with the lease
     * (`lease().release()` before unlocking returns the per-node report).
     *
     * @throws IllegalMonitorStateException this handle holds no acquisition
     * @throws LockLostException the engine had seen the lock lost (expired, taken, or stopped
     *   at an extension cap); what was left is released
     */
    override fun unlock() {
        take().releaseNotingLoss()?.let { throw it }
    }

    /** Not supported: a distributed lock has no condition variables. */
    override fun newCondition(): Condition =
        throw UnsupportedOperationException("quorumlock locks have no conditions")

    /** Unlocks if this handle holds the lock; does nothing otherwise. */
    override fun close() {
        if (held.get() != null) {
            val lease = held.getAndSet(null) ?: return // another thread unlocked in between
            holderThread = null
            lease.releaseNotingLoss()?.let { throw it }
        }
    }

    // ---- CompletableFuture variants ----

    /** [lock] without blocking; cancelling the future cancels the wait (keys cleaned up). */
    fun lockAsync(): CompletableFuture<Void?> = installing(client.acquireFuture(names, forever(null)))

    /** [lock] with a lease time, without blocking. */
    fun lockAsync(leaseTime: Long, unit: TimeUnit?): CompletableFuture<Void?> =
        installing(client.acquireFuture(names, forever(Native.duration("leaseTime", leaseTime, unit))))

    /** [tryLock] (one attempt) without blocking. */
    fun tryLockAsync(): CompletableFuture<Boolean> =
        trying(client.acquireFuture(names, client.config(options, null, Duration.ZERO)))

    /** [tryLock] with a wait and a lease time, without blocking. */
    fun tryLockAsync(waitTime: Long, leaseTime: Long, unit: TimeUnit?): CompletableFuture<Boolean> {
        val lease = Native.duration("leaseTime", leaseTime, unit)
        val wait = Native.duration("waitTime", maxOf(waitTime, 0), unit)
        return trying(client.acquireFuture(names, client.config(options, lease, wait)))
    }

    /** [unlock] without blocking; fails with [IllegalMonitorStateException] or [LockLostException] as [unlock] throws. */
    fun unlockAsync(): CompletableFuture<Void?> {
        val lease = try {
            take()
        } catch (e: IllegalMonitorStateException) {
            return CompletableFuture.failedFuture(e)
        }
        val lost = lease.lostException()
        return lease.releaseAsync().thenApply { if (lost != null) throw lost else null }
    }

    // ---- Kotlin coroutines ----

    /** Kotlin: [lock] ([leaseTime] `null`: extended in the background). Cancellation cleans up before it returns. */
    @JvmSynthetic
    suspend fun awaitLock(leaseTime: Duration? = null) {
        install(client.awaitAcquire(names, forever(Native.optional("leaseTime", leaseTime))))
    }

    /** Kotlin: [tryLock] waiting up to [waitTime]. */
    @JvmSynthetic
    suspend fun awaitTryLock(waitTime: Duration = Duration.ZERO, leaseTime: Duration? = null): Boolean =
        try {
            install(client.awaitAcquire(names, client.config(options, Native.optional("leaseTime", leaseTime), waitTime)))
            true
        } catch (e: LockBusyException) {
            false
        }

    /** Kotlin: [unlock]. */
    @JvmSynthetic
    suspend fun awaitUnlock() {
        unlockAsync().await()
    }

    // ---- state ----

    /** True while this handle holds a lease within its validity. */
    fun isHeld(): Boolean = held.get()?.isHeld() == true

    /** True when the current thread took the lease this handle holds (and it is valid). */
    fun isHeldByCurrentThread(): Boolean = isHeld() && holderThread === Thread.currentThread()

    /** Whether anyone holds the (first) name on a quorum of nodes, read from the nodes. */
    fun isLocked(): Boolean = Lease.join(Native.scope.future { client.nativeClient().inspect(names.first()).holder != null }.let(Lease::typed))

    /** The validity left of this handle's lease; zero when it holds none. */
    fun remaining(): Duration = held.get()?.remaining() ?: Duration.ZERO

    /** This handle's current acquisition, or `null`. */
    fun lease(): Lease? = held.get()

    /** The fencing token of the current acquisition (fenced locks: `getFencedLock`), else `null`. */
    fun getToken(): Long? = held.get()?.token()

    /** [lock], then the fencing token (`RFencedLock.lockAndGetToken`). */
    fun lockAndGetToken(): Long {
        lock()
        return getToken() ?: throw IllegalStateException("not a fenced lock: use client.getFencedLock(name)")
    }

    /**
     * Completes with the reason when the current acquisition is lost; exceptionally with a
     * `CancellationException` once it is released.
     *
     * @throws IllegalMonitorStateException this handle holds no acquisition
     */
    fun lost(): CompletableFuture<LostReason> =
        (held.get() ?: throw IllegalMonitorStateException("this handle holds no lock on ${getName()}")).lost()

    /**
     * Deletes the name's keys on every node whoever holds them (operators only: the holder is
     * not told). `true` if a key was deleted somewhere.
     */
    fun forceUnlock(): Boolean = names.map { name ->
        Lease.join(Lease.typed(Native.scope.future { client.nativeClient().forceBreak(name) }))
    }.any { r -> r.any { it.kind == "Released" } }

    override fun toString(): String = "RLock(${getName()}, held=${isHeld()})"

    // ---- internals ----

    private fun forever(lease: Duration?) = client.config(options, lease, null)

    private fun holdsHere() = isHeldByCurrentThread()

    private fun guardReentry() {
        check(!holdsHere()) {
            "RLock is not reentrant: this thread already holds ${getName()} through this handle; unlock it first"
        }
    }

    private fun install(lease: Lease) {
        held.getAndSet(lease)?.releaseAsync()
        holderThread = Thread.currentThread()
    }

    private fun installAsync(lease: Lease) {
        held.getAndSet(lease)?.releaseAsync()
        holderThread = null
    }

    private fun take(): Lease {
        val lease = held.getAndSet(null)
            ?: throw IllegalMonitorStateException("this handle holds no lock on ${getName()}")
        holderThread = null
        return lease
    }

    private inline fun busyAsFalse(block: () -> Unit): Boolean = try {
        block()
        true
    } catch (e: LockBusyException) {
        false
    }

    private fun installing(f: CompletableFuture<Lease>): CompletableFuture<Void?> {
        val out = f.thenApply<Void?> { installAsync(it); null }
        out.whenComplete { _, e -> if (e is java.util.concurrent.CancellationException) f.cancel(false) }
        return out
    }

    private fun trying(f: CompletableFuture<Lease>): CompletableFuture<Boolean> {
        val out = f.handle { lease, e ->
            when {
                e == null -> {
                    installAsync(lease)
                    true
                }
                Native.unwrap(e) is LockBusyException -> false
                else -> throw Native.unwrap(e).let { it as? RuntimeException ?: java.util.concurrent.CompletionException(it) }
            }
        }
        out.whenComplete { _, e -> if (e is java.util.concurrent.CancellationException) f.cancel(false) }
        return out
    }
}
