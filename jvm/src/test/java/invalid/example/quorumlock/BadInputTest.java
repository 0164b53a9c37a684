package invalid.example.quorumlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Bad input gets {@link IllegalArgumentException} (what Java cannot even pass on: null, a
 * negative duration) or a typed {@link QuorumLockException} with the engine's code (what the
 * engine refuses), never a crash. And every engine error kind has its own exception class.
 */
class BadInputTest {
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
    void everyEngineErrorKindHasItsOwnClassAndTheCNumber() {
        Map<String, Integer> codes = QuorumLock.errorCodes();
        assertTrue(codes.size() >= 13, codes.toString());
        Set<Class<?>> classes = new HashSet<>();
        for (String code : codes.keySet()) {
            Class<? extends QuorumLockException> c = QuorumLockException.classOf(code);
            assertNotEquals(QuorumLockException.class, c, code + " has no class of its own");
            assertTrue(classes.add(c), code + " shares its class");
        }
        assertEquals(QuorumLockException.class, QuorumLockException.classOf("QL_NOT_A_CODE"));
        assertEquals(LockBusyException.class, QuorumLockException.classOf("QL_BUSY"));
        // The numbers are the C ABI's (bindings/c, include/quorumlock.h).
        assertEquals(1, codes.get("QL_BUSY"));
        assertEquals(2, codes.get("QL_QUORUM"));
        assertEquals(7, codes.get("QL_INVALID"));
        assertEquals(12, codes.get("QL_TIMEOUT"));
        assertEquals(99, codes.get("QL_INTERNAL"));
    }

    @Test
    void nullsAndNegativeDurationsAreIllegalArguments() {
        RLock lock = client.getLock(Harness.name("bad"));
        assertThrows(IllegalArgumentException.class, () -> client.getLock(null));
        assertThrows(IllegalArgumentException.class, () -> client.getLock("x", null));
        assertThrows(IllegalArgumentException.class, () -> client.getMultiLock(Arrays.asList("a", null)));
        assertThrows(IllegalArgumentException.class, () -> lock.lock(-1, TimeUnit.SECONDS));
        assertThrows(IllegalArgumentException.class, () -> lock.lock(1, null));
        assertThrows(IllegalArgumentException.class, () -> lock.tryLock(1, -5, TimeUnit.SECONDS));
        assertThrows(IllegalArgumentException.class, () -> lock.lockAsync(-1, TimeUnit.MILLISECONDS));
        assertThrows(IllegalArgumentException.class, () -> LockOptions.defaults().withLeaseTime(Duration.ofSeconds(-1)));
        assertThrows(IllegalArgumentException.class, () -> LockOptions.defaults().withNodeTimeout(null));
        assertThrows(IllegalArgumentException.class, () -> LockOptions.defaults().withMaxExtensions(-1));
        assertThrows(IllegalArgumentException.class, () -> Settings.defaults().withMaxTtl(Duration.ofMillis(-1)));
        assertThrows(IllegalArgumentException.class, () -> QuorumLock.connect(null, Settings.defaults()));
        assertThrows(IllegalArgumentException.class, () -> QuorumLock.connect(Harness.urls(), null));
        assertThrows(IllegalArgumentException.class, () -> QuorumLock.connect(Arrays.asList("redis://127.0.0.1:1", null)));
        assertFalse(lock.isHeld());
    }

    @Test
    void whatTheEngineRefusesIsTypedWithItsCode() {
        InvalidArgumentException empty = assertThrows(InvalidArgumentException.class, () -> client.getLock("").lock());
        assertEquals("QL_INVALID", empty.code());
        assertEquals(7, empty.number());
        assertTrue(empty.nodes().isEmpty(), "nothing was sent");
        assertEquals(0, empty.attempts());

        String longName = "x".repeat(1025);
        assertEquals("QL_INVALID", assertThrows(QuorumLockException.class, () -> client.getLock(longName).tryLock()).code());

        // Above max_ttl (60 s): refused with a hint, nothing sent.
        InvalidArgumentException tooLong = assertThrows(InvalidArgumentException.class,
                () -> client.getLock(Harness.name("long")).lock(10, TimeUnit.MINUTES));
        assertTrue(tooLong.getMessage().contains("max_ttl"), tooLong.getMessage());
        // Zero lease, and a lease with no room for validity.
        assertThrows(InvalidArgumentException.class, () -> client.getLock(Harness.name("zero")).lock(0, TimeUnit.SECONDS));
        assertThrows(InvalidArgumentException.class, () -> client.getLock(Harness.name("tiny")).lock(2, TimeUnit.MILLISECONDS));
        // A lease that is not whole milliseconds.
        assertThrows(InvalidArgumentException.class, () -> client.getLock(Harness.name("us")).lock(1500, TimeUnit.MICROSECONDS));

        assertThrows(InvalidArgumentException.class, () -> QuorumLock.connect(List.of()));
        assertThrows(InvalidArgumentException.class, () -> QuorumLock.connect(List.of("http://127.0.0.1:1")));
        assertThrows(InvalidArgumentException.class, () -> QuorumLock.connect(List.of("redis://[::1")));
        assertThrows(InvalidArgumentException.class, () -> QuorumLock.connect(Harness.urls(), Settings.defaults().withDriftFactor(0.9)));
        assertThrows(InvalidArgumentException.class, () -> QuorumLock.connect(Harness.urls(), Settings.defaults().withMaxTtl(Duration.ZERO)));
    }

    @Test
    void namesAreUnicodeAndAnyBytesOfIt() {
        // A lone surrogate has no UTF-8 form: refused before anything is sent.
        assertThrows(IllegalArgumentException.class, () -> client.getLock("odd\uD800name"));
        assertThrows(IllegalArgumentException.class, () -> client.getLock("\uDC00"));
        assertThrows(IllegalArgumentException.class, () -> Settings.defaults().withKeyPrefix("p\uD800"));
        assertThrows(IllegalArgumentException.class, () -> QuorumLock.connect(List.of("redis://127.0.0.1:1\uD800")));
        // NUL, a pair of surrogates, any script: locked like any name.
        RLock lock = client.getLock("odd\u0000name\uD83D\uDD12 ключ:" + Harness.name("x"));
        assertTrue(lock.tryLock());
        assertEquals(1, lock.lease().resources().size());
        lock.unlock();
        RLock max = client.getLock("y".repeat(1024));
        assertTrue(max.tryLock());
        max.unlock();
    }

    @Test
    void aClosedClientFailsCleanly() {
        Client c = Harness.connect();
        RLock lock = c.getLock(Harness.name("closed"));
        c.close();
        assertThrows(IllegalStateException.class, lock::tryLock);
        assertThrows(IllegalStateException.class, c::metrics);
    }

    @Test
    void stateErrorsAreJavaLockErrors() {
        RLock lock = client.getLock(Harness.name("state"));
        assertThrows(IllegalMonitorStateException.class, lock::unlock);
        assertThrows(IllegalMonitorStateException.class, lock::lost);
        assertThrows(UnsupportedOperationException.class, lock::newCondition);
        lock.close(); // not held: nothing happens
        lock.lock(2, TimeUnit.SECONDS);
        assertThrows(IllegalStateException.class, () -> lock.lock(1, TimeUnit.SECONDS));
        assertThrows(IllegalStateException.class, () -> lock.tryLock(1, TimeUnit.SECONDS));
        lock.close();
        assertFalse(lock.isHeld());
    }

    @Test
    void deadNodesGiveQuorumNotReachedWithTheNodeReport() throws Exception {
        List<String> dead = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            try (ServerSocket s = new ServerSocket(0)) {
                dead.add("redis://127.0.0.1:" + s.getLocalPort());
            }
        }
        Settings s = Harness.settings().withConnectTimeout(Duration.ofMillis(200));
        try (Client c = QuorumLock.connect(dead, s)) {
            RLock lock = c.getLock(Harness.name("dead"));
            QuorumNotReachedException e = assertThrows(QuorumNotReachedException.class, lock::tryLock);
            assertEquals("QL_QUORUM", e.code());
            assertEquals(3, e.nodes().size());
            for (NodeReport n : e.nodes()) {
                assertTrue(n.isError(), n.toString());
                assertTrue(Set.of("ConnectionRefused", "NotConnected").contains(n.kind()), n.toString());
            }
            assertEquals(1, e.attempts());
        }
        ConnectionFailedException cf = assertThrows(ConnectionFailedException.class,
                () -> QuorumLock.connect(dead, s.withRequireQuorum(true)));
        assertEquals("QL_CONNECTION", cf.code());
        assertEquals(3, cf.nodes().size());
    }
}
