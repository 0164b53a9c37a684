package invalid.example.quorumlock

import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.BeforeAll
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.time.Duration
import java.util.concurrent.atomic.AtomicInteger

/** The Kotlin surface: suspend functions, `withLock { }`, coroutine cancellation. */
class CoroutinesTest {
    companion object {
        lateinit var client: Client

        @JvmStatic
        @BeforeAll
        fun connect() {
            client = runBlocking { QuorumLock.connectAwait(Harness.urls(), Harness.settings()) }
        }

        @JvmStatic
        @AfterAll
        fun close() = client.close()
    }

    @Test
    fun withLockExcludesCoroutines() = runBlocking {
        val name = Harness.name("kt")
        val inside = AtomicInteger()
        val overlaps = AtomicInteger()
        (1..8).map {
            async {
                repeat(3) {
                    client.withLock(name) { lease ->
                        assertTrue(lease.isHeld())
                        if (inside.incrementAndGet() != 1) overlaps.incrementAndGet()
                        delay(2)
                        inside.decrementAndGet()
                    }
                }
            }
        }.awaitAll()
        assertEquals(0, overlaps.get())
        Harness.awaitNoKey(name, 1000)
    }

    @Test
    fun withLockReturnsTheBlocksValueAndReleases() = runBlocking {
        val name = Harness.name("kt-value")
        val v = client.withLock(name, leaseTime = Duration.ofSeconds(2)) { lease -> lease.resources().single() }
        assertEquals(name, v)
        Harness.awaitNoKey(name, 1000)
    }

    @Test
    fun aLostLockCancelsTheBlock() = runBlocking {
        val name = Harness.name("kt-lost")
        val options = LockOptions.defaults().withLeaseTime(Duration.ofMillis(1500)).withNodeTimeout(Duration.ofMillis(400))
        var reachedEnd = false
        val e = assertThrows<LockLostException> {
            client.withLock(name, options = options) {
                Harness.redisAll("DEL", Harness.key(name))
                delay(10_000)
                reachedEnd = true
            }
        }
        assertFalse(reachedEnd)
        assertEquals(LostReason.EXPIRED, e.reason())
    }

    @Test
    fun cancellingAWaitCleansUpBeforeItReturns() = runBlocking {
        val name = Harness.name("kt-cancel")
        val holder = client.getLock(name)
        holder.awaitLock(Duration.ofSeconds(10))
        val waiter = client.getLock(name)
        assertThrows<TimeoutCancellationException> {
            withTimeout(300) { waiter.awaitLock() }
        }
        assertNull(waiter.lease())
        assertEquals(listOf(holder.lease()!!.value()), Harness.values(name).distinct())
        assertFalse(waiter.awaitTryLock(Duration.ofMillis(100)))
        holder.awaitUnlock()
        assertTrue(waiter.awaitTryLock(Duration.ofSeconds(2), Duration.ofSeconds(2)))
        waiter.awaitUnlock()
    }

    @Test
    fun typedErrorsReachCoroutines() = runBlocking {
        val e = assertThrows<InvalidArgumentException> { client.acquire(listOf("")) }
        assertEquals("QL_INVALID", e.code())
        assertThrows<IllegalArgumentException> { client.acquire(listOf("x"), leaseTime = Duration.ofSeconds(-1)) }
        Unit
    }
}
