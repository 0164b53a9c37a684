package invalid.example.quorumlock

import invalid.example.quorumlock.ffi.ErrorKindInfo
import invalid.example.quorumlock.ffi.InternalException
import invalid.example.quorumlock.ffi.NativeException
import invalid.example.quorumlock.ffi.errorKinds
import kotlinx.coroutines.CoroutineName
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import java.lang.invoke.MethodHandle
import java.lang.invoke.MethodHandles
import java.lang.invoke.MethodType
import java.time.Duration
import java.util.concurrent.CompletionException
import java.util.concurrent.ExecutionException
import java.util.concurrent.ForkJoinWorkerThread
import java.util.concurrent.TimeUnit

/** Plumbing between the public API and the generated bindings; type conversion only. */
internal object Native {
    /**
     * Where engine calls made for Java callers run: the native futures resume on the
     * Default dispatcher, never on the engine's own threads, so user callbacks chained on
     * the returned futures cannot stall the engine.
     */
    val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default + CoroutineName("quorumlock"))

    private val kinds: Map<String, ErrorKindInfo> by lazy { errorKinds().associateBy { it.name } }

    /**
     * How long an interruptible blocking call waits in native code before it looks at the
     * thread's interrupt again (an uninterruptible one waits in [LONG_SLICE]s).
     */
    val SLICE: Duration = Duration.ofMillis(50)

    /** How long an uninterruptible blocking call waits in native code per call. */
    val LONG_SLICE: Duration = Duration.ofSeconds(1)

    /** `Thread.isVirtual` on JDK 21+, absent on 17. */
    private val isVirtual: MethodHandle? = try {
        MethodHandles.publicLookup().findVirtual(Thread::class.java, "isVirtual", MethodType.methodType(Boolean::class.javaPrimitiveType))
    } catch (_: ReflectiveOperationException) {
        null
    }

    /**
     * Whether a blocking call may wait in native code on this thread: a platform thread may
     * (two thread hand-offs per call). A virtual thread would pin its carrier while it
     * waits, and a fork-join pool's worker would keep the pool from adding a spare
     * (`ForkJoinPool.managedBlock`, which a future's `get` uses): both wait on a future.
     */
    fun mayBlockNatively(): Boolean {
        val t = Thread.currentThread()
        return t !is ForkJoinWorkerThread && (isVirtual == null || !(isVirtual.invoke(t) as Boolean))
    }

    /** The engine's code and number for [name] (`QL_INVALID`, ...). */
    fun kind(name: String): ErrorKindInfo =
        kinds[name] ?: throw IllegalStateException("the native library does not know $name")

    /** Runs a native call, turning native failures into typed exceptions. */
    inline fun <T> call(block: () -> T): T = try {
        block()
    } catch (e: NativeException.Failed) {
        throw QuorumLockException.of(e)
    } catch (e: InternalException) {
        throw QuorumLockException.internal(e)
    }

    /** The typed exception behind a failed future's wrapper. */
    fun unwrap(t: Throwable): Throwable {
        var e = t
        while ((e is CompletionException || e is ExecutionException) && e.cause != null) e = e.cause!!
        return when (e) {
            is NativeException.Failed -> QuorumLockException.of(e)
            is InternalException -> QuorumLockException.internal(e)
            else -> e
        }
    }

    /** Throws [t] as is when unchecked, wrapped otherwise. */
    fun rethrow(t: Throwable): Nothing = when (val e = unwrap(t)) {
        is RuntimeException -> throw e
        is Error -> throw e
        else -> throw CompletionException(e)
    }

    /**
     * [s] checked: present and well-formed UTF-16, so it has a UTF-8 form to send (a lone
     * surrogate has none).
     */
    fun text(what: String, s: String?): String {
        requireNotNull(s) { "$what must not be null" }
        var i = 0
        while (i < s.length) {
            val c = s[i]
            if (Character.isHighSurrogate(c) && i + 1 < s.length && Character.isLowSurrogate(s[i + 1])) {
                i += 2
                continue
            }
            require(!Character.isSurrogate(c)) { "$what is not valid Unicode: a lone surrogate at index $i" }
            i++
        }
        return s
    }

    /** `amount unit` as a Duration; negative amounts are refused. */
    fun duration(what: String, amount: Long, unit: TimeUnit?): Duration {
        requireNotNull(unit) { "$what: the TimeUnit must not be null" }
        require(amount >= 0) { "$what must not be negative (got $amount $unit)" }
        return Duration.of(amount, unit.toChronoUnit())
    }

    /** [d] checked: present and not negative. */
    fun duration(what: String, d: Duration?): Duration {
        requireNotNull(d) { "$what must not be null" }
        require(!d.isNegative) { "$what must not be negative (got $d)" }
        return d
    }

    /** [d] checked when present. */
    fun optional(what: String, d: Duration?): Duration? = d?.let { duration(what, it) }
}
