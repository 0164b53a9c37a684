package invalid.example.quorumlock

import invalid.example.quorumlock.ffi.NativeException
import java.time.Duration

/**
 * What happened on one node during one operation: one entry per configured node, for
 * successes and failures alike (a Java record).
 *
 * @property index 0-based index in configuration order
 * @property address `host:port/db`, never with credentials
 * @property kind the node kind's stable name, e.g. `"HeldByOther"`, `"Timeout"`
 * @property kindCode the node kind's stable number (the C ABI's `QL_NODE_*` value)
 * @property category the kind's category: `"Vote"`, `"Timeout"`, `"Connection"`, ...
 * @property latency time from sending to the reply, or `null` when no reply came
 * @property detail the server's or the socket's text for error kinds, else `null`
 */
@JvmRecord
data class NodeReport(
    val index: Int,
    val address: String,
    val kind: String,
    val kindCode: Int,
    val category: String,
    val latency: Duration?,
    val detail: String?,
) {
    /** True for node errors (anything outside the `Vote` category). */
    fun isError(): Boolean = category != "Vote"

    internal companion object {
        fun of(n: invalid.example.quorumlock.ffi.NodeReport) = NodeReport(
            n.index.toInt(), n.address, n.kind, n.kindCode.toInt(), n.category, n.latency, n.detail,
        )

        fun of(list: List<invalid.example.quorumlock.ffi.NodeReport>) = list.map(::of)
    }
}

/** Why a held lock was lost. */
enum class LostReason {
    /** The validity ran out without a successful extension, or the keys expired or vanished. */
    EXPIRED,

    /** Another owner holds the keys now. */
    TAKEN,

    /** The auto-extension stopped at a cap (`maxExtensions`, `maxHold`) and the validity ran out. */
    EXTENSION_LIMIT;

    internal companion object {
        /** The engine's stable name (`"Expired"`, `"Taken"`, `"ExtensionLimit"`). */
        fun of(engineName: String?): LostReason = when (engineName) {
            "Taken" -> TAKEN
            "ExtensionLimit" -> EXTENSION_LIMIT
            else -> EXPIRED
        }
    }
}

/**
 * A failed quorumlock operation. [code] is the stable code shared by every language
 * (`"QL_BUSY"`, `"QL_QUORUM"`, ...; the C ABI's result code names), [number] its number in the
 * C ABI, [nodes] what happened on each node. Subclasses exist per code, so
 * `catch (LockBusyException e)` works; the message names what failed and what to do.
 */
open class QuorumLockException internal constructor(d: Detail) : RuntimeException(d.text) {
    private val code: String = d.name
    private val number: Int = d.code
    private val nodes: List<NodeReport> = d.nodes
    private val attempts: Int = d.attempts
    private val attemptReports: List<List<NodeReport>> = d.attemptReports
    private val validityMicros: Long? = d.validityUs

    /** The stable code, e.g. `"QL_BUSY"`. */
    fun code(): String = code

    /** The code's number in the C ABI (`QL_BUSY` = 1, ...; `QL_INTERNAL` = 99). */
    fun number(): Int = number

    /** One entry per configured node (empty when nothing was sent). */
    fun nodes(): List<NodeReport> = nodes

    /** Acquisition attempts made (0 when nothing was sent). */
    fun attempts(): Int = attempts

    /** For a failed acquisition, the per-node report of each attempt, oldest first (at most 64). */
    fun attemptReports(): List<List<NodeReport>> = attemptReports

    /**
     * The validity left when the failure was decided, in microseconds (negative when the
     * attempt took longer than the lease), or `null` when not known.
     */
    fun validityMicros(): Long? = validityMicros

    /** The fields every failure carries, read from the native error. */
    internal class Detail(
        val code: Int,
        val name: String,
        val text: String,
        val attempts: Int,
        val validityUs: Long?,
        val lostReason: String?,
        val nodes: List<NodeReport>,
        val attemptReports: List<List<NodeReport>>,
    )

    companion object {
        /**
         * The exception class thrown for [code] (`"QL_BUSY"` -> [LockBusyException]); the base
         * class for a code this version does not know.
         */
        @JvmStatic
        fun classOf(code: String): Class<out QuorumLockException> =
            byName(Detail(0, code, code, 0, null, null, emptyList(), emptyList())).javaClass

        /** The typed exception of a native failure. */
        internal fun of(e: NativeException.Failed): QuorumLockException {
            val d = Detail(
                e.code.toInt(), e.name, e.text, e.attempts.toInt(), e.validityUs, e.lostReason,
                NodeReport.of(e.nodes), e.attemptReports.map(NodeReport::of),
            )
            return byName(d)
        }

        /** A `QL_INVALID` failure found before anything was sent to the engine. */
        internal fun invalid(message: String): QuorumLockException {
            val kind = Native.kind("QL_INVALID")
            return byName(Detail(kind.code.toInt(), kind.name, "QL_INVALID: $message", 0, null, null, emptyList(), emptyList()))
        }

        /** A `QL_INTERNAL` failure: a bug caught at the native boundary. */
        internal fun internal(cause: Throwable): QuorumLockException {
            val kind = Native.kind("QL_INTERNAL")
            val text = "QL_INTERNAL: a bug in quorumlock was caught at the native boundary (${cause.message}); please report it"
            return byName(Detail(kind.code.toInt(), kind.name, text, 0, null, null, emptyList(), emptyList()))
                .also { it.initCause(cause) }
        }

        /**
         * The class of each code. A code without its own class gets the base class; a test
         * walks the engine's list of kinds so a new kind fails the tests instead.
         */
        internal fun byName(d: Detail): QuorumLockException = when (d.name) {
            "QL_BUSY" -> LockBusyException(d)
            "QL_QUORUM" -> QuorumNotReachedException(d)
            "QL_VALIDITY" -> ValidityTooShortException(d)
            "QL_CANCELLED" -> LockCancelledException(d)
            "QL_LOST" -> LockLostException(d)
            "QL_EXT_LIMIT" -> ExtensionLimitException(d)
            "QL_INVALID" -> InvalidArgumentException(d)
            "QL_CONNECTION" -> ConnectionFailedException(d)
            "QL_AUTH" -> AuthFailedException(d)
            "QL_SCRIPT" -> ScriptFailedException(d)
            "QL_MISCONFIGURED" -> MisconfiguredException(d)
            "QL_TIMEOUT" -> TimedOutException(d)
            "QL_INTERNAL" -> InternalErrorException(d)
            else -> QuorumLockException(d)
        }
    }
}

/** `QL_BUSY`: other owners hold the resource on enough nodes that a quorum was impossible. */
class LockBusyException internal constructor(d: Detail) : QuorumLockException(d)

/** `QL_QUORUM`: node failures (timeouts, refused connections, error replies) blocked the quorum. */
class QuorumNotReachedException internal constructor(d: Detail) : QuorumLockException(d)

/** `QL_VALIDITY`: a quorum was reached with too little validity left (slow nodes or a short lease). */
class ValidityTooShortException internal constructor(d: Detail) : QuorumLockException(d)

/** `QL_CANCELLED`: the caller cancelled; the attempt's keys were released on every node. */
class LockCancelledException internal constructor(d: Detail) : QuorumLockException(d)

/** `QL_LOST`: a held lock expired or was taken over; [reason] says which. */
class LockLostException internal constructor(d: Detail) : QuorumLockException(d) {
    private val reason: LostReason = LostReason.of(d.lostReason)

    /** Why the lock was lost. */
    fun reason(): LostReason = reason
}

/** `QL_EXT_LIMIT`: an extension cap (`maxExtensions`, `maxHold`) was reached. */
class ExtensionLimitException internal constructor(d: Detail) : QuorumLockException(d)

/**
 * `QL_INVALID`: bad input, settings or state (a lease above `maxTtl`, an empty or too long
 * name, a released lock). Nothing was sent.
 */
class InvalidArgumentException internal constructor(d: Detail) : QuorumLockException(d)

/** `QL_CONNECTION`: fewer than a quorum of nodes could be reached (connect with `requireQuorum`). */
class ConnectionFailedException internal constructor(d: Detail) : QuorumLockException(d)

/** `QL_AUTH`: credentials or ACL refused on too many nodes. */
class AuthFailedException internal constructor(d: Detail) : QuorumLockException(d)

/** `QL_SCRIPT`: scripting unavailable on too many nodes. */
class ScriptFailedException internal constructor(d: Detail) : QuorumLockException(d)

/** `QL_MISCONFIGURED`: unsafe node settings on too many nodes. */
class MisconfiguredException internal constructor(d: Detail) : QuorumLockException(d)

/** `QL_TIMEOUT`: no reply in time from too many nodes. */
class TimedOutException internal constructor(d: Detail) : QuorumLockException(d)

/** `QL_INTERNAL`: a bug in quorumlock, caught at the native boundary. Please report it. */
class InternalErrorException internal constructor(d: Detail) : QuorumLockException(d)
