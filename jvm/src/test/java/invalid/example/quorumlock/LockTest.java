package invalid.example.quorumlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The Java API against real nodes: lock, tryLock, leases, fencing, reports, metrics. */
class LockTest {
    static Client client;

    @BeforeAll
    static void connect() {
        client = Harness.connect();
    }

    @AfterAll
    static void close() {
        client.close();
    }

    @Test
    void lockWritesTheKeyOnEveryNodeAndUnlockRemovesIt() throws Exception {
        String name = Harness.name("basic");
        try (RLock lock = client.getLock(name)) {
            lock.lock(5, TimeUnit.SECONDS);
            assertTrue(lock.isHeld());
            assertTrue(lock.isHeldByCurrentThread());
            Lease lease = Objects.requireNonNull(lock.lease());
            assertEquals(5, client.nodeCount());
            assertEquals(3, client.quorum());
            assertFalse(lease.isAutoExtending(), "a lease time means no watchdog");
            assertTrue(lease.remaining().compareTo(Duration.ofSeconds(4)) > 0);
            List<NodeReport> report = lease.report();
            assertEquals(5, report.size());
            // Decided at the quorum: at least 3 wrote, the rest may still be pending.
            assertTrue(report.stream().filter(n -> n.kind().equals("Ok")).count() >= 3, report.toString());
            assertTrue(lock.isLocked());
            // The other nodes' writes land too.
            Harness.awaitValueEverywhere(name, lease.value(), 2000);
        }
        Harness.awaitNoKey(name, 1000);
        assertFalse(client.getLock(name).isLocked());
    }

    @Test
    void tryLockSaysFalseWhileAnotherHandleHolds() throws Exception {
        String name = Harness.name("busy");
        RLock a = client.getLock(name);
        RLock b = client.getLock(name);
        a.lock(5, TimeUnit.SECONDS);
        try {
            assertTrue(a.isHeld());
            assertFalse(b.tryLock());
            assertFalse(b.tryLock(150, TimeUnit.MILLISECONDS));
            assertFalse(b.tryLockAsync().get(10, TimeUnit.SECONDS));
            assertFalse(a.tryLock(), "not reentrant: the holder's tryLock is false");
            assertThrows(IllegalStateException.class, a::lock, "not reentrant: lock() would wait for itself");
            LockBusyException busy = assertThrows(LockBusyException.class,
                    () -> join(client.acquireAsync(List.of(name), null, Duration.ZERO, LockOptions.defaults())));
            assertEquals("QL_BUSY", busy.code());
            assertEquals(1, busy.number());
            assertEquals(5, busy.nodes().size());
            assertTrue(busy.nodes().stream().anyMatch(n -> n.kind().equals("HeldByOther")), busy.nodes().toString());
            assertTrue(busy.getMessage().startsWith("QL_BUSY"), busy.getMessage());
        } finally {
            a.unlock();
        }
        assertTrue(b.tryLock(5, TimeUnit.SECONDS));
        b.unlock();
    }

    @Test
    void anotherThreadMayUnlock() throws Exception {
        String name = Harness.name("handoff");
        RLock lock = client.getLock(name);
        lock.lock();
        assertTrue(lock.lease().isAutoExtending(), "lock() without a lease time is auto-extended");
        Thread t = new Thread(lock::unlock);
        t.start();
        t.join();
        assertFalse(lock.isHeld());
        assertThrows(IllegalMonitorStateException.class, lock::unlock);
        Harness.awaitNoKey(name, 1000);
    }

    @Test
    void aFixedLeaseEndsAndUnlockThenSaysLost() throws Exception {
        String name = Harness.name("lease");
        RLock a = client.getLock(name);
        a.lock(400, TimeUnit.MILLISECONDS);
        CompletableFuture<LostReason> lost = a.lost();
        RLock b = client.getLock(name);
        assertTrue(b.tryLock(5, 2, TimeUnit.SECONDS), "the lease ran out, so b gets it");
        assertEquals(LostReason.EXPIRED, lost.get(5, TimeUnit.SECONDS));
        LockLostException e = assertThrows(LockLostException.class, a::unlock);
        assertEquals("QL_LOST", e.code());
        assertEquals(LostReason.EXPIRED, e.reason());
        // a's release did not touch b's keys.
        assertTrue(b.isLocked());
        b.unlock();
    }

    @Test
    void aForkJoinWorkerWaitsOnFuturesWithTheSameResults() throws Exception {
        // Platform threads wait in native code; a fork-join worker takes the future path
        // (so that its pool can add a spare). Both must behave alike.
        String name = Harness.name("forkjoin");
        ForkJoinPool pool = new ForkJoinPool(1);
        try {
            LostReason reason = pool.submit(() -> {
                RLock lock = client.getLock(name);
                lock.lock(300, TimeUnit.MILLISECONDS);
                assertTrue(lock.isHeld());
                Thread.sleep(700); // the lease runs out
                return assertThrows(LockLostException.class, lock::unlock).reason();
            }).get(10, TimeUnit.SECONDS);
            assertEquals(LostReason.EXPIRED, reason);
            Lease lease = pool.submit(() -> {
                RLock lock = client.getLock(name);
                assertTrue(lock.tryLock(2, 10, TimeUnit.SECONDS));
                return lock.lease();
            }).get(10, TimeUnit.SECONDS);
            assertTrue(pool.submit(lease::release).get(10, TimeUnit.SECONDS).heldByQuorum());
        } finally {
            pool.shutdown();
        }
        Harness.awaitNoKey(name, 1000);
    }

    @Test
    void fencedLocksHandOutIncreasingTokens() {
        String name = Harness.name("fenced");
        RLock lock = client.getFencedLock(name);
        long first = lock.lockAndGetToken();
        lock.unlock();
        long second = lock.lockAndGetToken();
        lock.unlock();
        assertTrue(second > first, first + " then " + second);
        RLock plain = client.getLock(name);
        plain.lock();
        assertNull(plain.getToken());
        assertThrows(IllegalStateException.class, () -> {
            plain.unlock();
            plain.lockAndGetToken();
        });
        plain.unlock();
    }

    @Test
    void aMultiLockTakesEveryNameOrNone() throws Exception {
        String x = Harness.name("multi-x");
        String y = Harness.name("multi-y");
        RLock both = client.getMultiLock(List.of(x, y));
        RLock onlyY = client.getLock(y);
        assertTrue(onlyY.tryLock());
        assertFalse(both.tryLock(), "y is taken, so neither is locked");
        Thread.sleep(50);
        assertTrue(Harness.values(x).stream().allMatch(Objects::isNull), "no x key left behind");
        onlyY.unlock();
        assertTrue(both.tryLock());
        assertEquals(List.of(x, y).stream().sorted().toList(), both.lease().resources());
        both.unlock();
    }

    @Test
    void forceUnlockBreaksAnyHolder() throws Exception {
        String name = Harness.name("force");
        RLock a = client.getLock(name);
        a.lock(5, TimeUnit.SECONDS);
        assertTrue(client.getLock(name).forceUnlock());
        Harness.awaitNoKey(name, 1000);
        assertFalse(client.getLock(name).forceUnlock());
        Lease lease = a.lease();
        a.unlock(); // the engine never saw the loss (no extension ran): nothing to throw
        ReleaseReport r = lease.release(); // the first release's report
        assertFalse(r.heldByQuorum());
        assertTrue(r.nodes().stream().allMatch(n -> n.kind().equals("NotHeld")), r.toString());
    }

    @Test
    void extendLengthensAHeldLease() {
        String name = Harness.name("extend");
        RLock lock = client.getLock(name);
        lock.lock(1, TimeUnit.SECONDS);
        Lease lease = lock.lease();
        lease.extend(Duration.ofSeconds(5));
        assertTrue(lease.remaining().compareTo(Duration.ofSeconds(3)) > 0);
        assertEquals(1, lease.extensions());
        lock.unlock();
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> lease.extend(Duration.ofSeconds(1)));
        assertEquals("QL_INVALID", e.code());
    }

    @Test
    void metricsCountTheCalls() {
        String name = Harness.name("metrics");
        try (Client own = Harness.connect()) {
            RLock lock = own.getLock(name);
            lock.lock(2, TimeUnit.SECONDS);
            assertFalse(own.getLock(name).tryLock());
            lock.unlock();
            Metrics m = own.metrics();
            assertEquals(1, m.acquire().ok());
            assertEquals(1L, m.acquire().failed().get("QL_BUSY"));
            assertEquals(1, m.release().ok());
            assertEquals(5, m.nodes().size());
            assertTrue(m.nodes().get(0).requests() >= 2);
            assertEquals(2, m.acquire().latency().count());
            assertNotNull(m.acquire().latency().p50());
            assertEquals(Metrics.latencyBoundsMicros().size() + 1, m.acquire().latency().counts().size());
            String text = own.metricsPrometheus();
            assertTrue(text.contains("quorumlock_acquire_total{outcome=\"QL_BUSY\"} 1"), text);
        }
    }

    @Test
    void warningsReachTheListener() throws Exception {
        CompletableFuture<Warning> first = new CompletableFuture<>();
        Settings s = Harness.settings().withWarningListener(first::complete);
        // The same server twice: QL_W_DUPLICATE_NODE.
        List<String> twice = List.of(Harness.urls().get(0), Harness.urls().get(0));
        try (Client c = QuorumLock.connect(twice, s)) {
            Warning w = first.get(10, TimeUnit.SECONDS);
            assertEquals("QL_W_DUPLICATE_NODE", w.code());
            assertEquals(1, c.nodeCount());
        }
    }

    @Test
    void connectAsyncAndVersion() throws Exception {
        try (Client c = QuorumLock.connectAsync(Harness.urls(), Harness.settings()).get(10, TimeUnit.SECONDS)) {
            assertEquals(5, c.addresses().size());
        }
        assertTrue(QuorumLock.version().matches("\\d+\\.\\d+\\.\\d+.*"));
    }

    static <T> T join(CompletableFuture<T> f) throws Exception {
        try {
            return f.get(10, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException) throw (RuntimeException) e.getCause();
            throw e;
        }
    }
}
