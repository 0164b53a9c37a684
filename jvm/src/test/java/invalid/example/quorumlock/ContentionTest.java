package invalid.example.quorumlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Threads (and virtual threads on Java 21+) contending for one name: holders never overlap.
 * The checker is shown to fire on a broken set-up (two clients under different key prefixes,
 * which do not exclude each other).
 */
class ContentionTest {
    static Client client;

    @BeforeAll
    static void connect() {
        client = Harness.connect();
    }

    @AfterAll
    static void close() {
        client.close();
    }

    /** Counts holders inside the critical section; any second one is an overlap. */
    static final class Overlap {
        final AtomicInteger inside = new AtomicInteger();
        final AtomicInteger overlaps = new AtomicInteger();
        final AtomicInteger entries = new AtomicInteger();

        void critical() throws InterruptedException {
            if (inside.incrementAndGet() != 1) overlaps.incrementAndGet();
            entries.incrementAndGet();
            Thread.sleep(2);
            inside.decrementAndGet();
        }
    }

    /** {@code workers} tasks, each taking {@code rounds} turns through {@code body}. */
    static void run(ExecutorService pool, int workers, Callable<Void> body) throws Exception {
        List<Future<Void>> fs = new ArrayList<>();
        for (int i = 0; i < workers; i++) fs.add(pool.submit(body));
        for (Future<Void> f : fs) f.get(60, TimeUnit.SECONDS);
    }

    @Test
    void platformThreadsWithTheirOwnHandlesNeverOverlap() throws Exception {
        String name = Harness.name("contend");
        Overlap o = new Overlap();
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            run(pool, 8, () -> {
                RLock lock = client.getLock(name);
                for (int i = 0; i < 5; i++) {
                    lock.lock(5, TimeUnit.SECONDS);
                    try {
                        o.critical();
                    } finally {
                        lock.unlock();
                    }
                }
                return null;
            });
        } finally {
            pool.shutdownNow();
        }
        assertEquals(0, o.overlaps.get(), "holders overlapped");
        assertEquals(40, o.entries.get());
        Harness.awaitNoKey(name, 2000);
    }

    @Test
    void oneSharedHandleExcludesThreadsToo() throws Exception {
        String name = Harness.name("shared");
        RLock lock = client.getLock(name);
        Overlap o = new Overlap();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            run(pool, 4, () -> {
                for (int i = 0; i < 5; i++) {
                    lock.lock(); // auto-extended
                    try {
                        o.critical();
                    } finally {
                        lock.unlock();
                    }
                }
                return null;
            });
        } finally {
            pool.shutdownNow();
        }
        assertEquals(0, o.overlaps.get());
        assertEquals(20, o.entries.get());
        Harness.awaitNoKey(name, 2000);
    }

    @Test
    void tryLockWithWaitContends() throws Exception {
        String name = Harness.name("trywait");
        Overlap o = new Overlap();
        AtomicInteger got = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(6);
        try {
            run(pool, 6, () -> {
                RLock lock = client.getLock(name);
                for (int i = 0; i < 3; i++) {
                    if (lock.tryLock(10, 3, TimeUnit.SECONDS)) {
                        try {
                            got.incrementAndGet();
                            o.critical();
                        } finally {
                            lock.unlock();
                        }
                    }
                }
                return null;
            });
        } finally {
            pool.shutdownNow();
        }
        assertEquals(0, o.overlaps.get());
        assertEquals(18, got.get(), "every waiter got its turn within 10 s");
    }

    @Test
    void virtualThreadsNeverOverlap() throws Exception {
        assumeTrue(Runtime.version().feature() >= 21, "virtual threads need Java 21+");
        Method m = Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        String name = Harness.name("virtual");
        Overlap o = new Overlap();
        ExecutorService pool = (ExecutorService) m.invoke(null);
        try {
            run(pool, 32, () -> {
                RLock lock = client.getLock(name);
                for (int i = 0; i < 2; i++) {
                    lock.lockInterruptibly(5, TimeUnit.SECONDS);
                    try {
                        o.critical();
                    } finally {
                        lock.unlock();
                    }
                }
                return null;
            });
        } finally {
            pool.shutdownNow();
        }
        assertEquals(0, o.overlaps.get());
        assertEquals(64, o.entries.get());
    }

    /** The checker can fail: clients under different key prefixes do not exclude each other. */
    @Test
    void theOverlapCheckFiresWhenLocksDoNotExclude() throws Exception {
        String name = Harness.name("broken");
        Overlap o = new Overlap();
        List<Client> clients = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            clients.add(QuorumLock.connect(Harness.urls(), Harness.settings().withKeyPrefix("broken" + i + ":")));
        }
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            AtomicInteger next = new AtomicInteger();
            run(pool, 4, () -> {
                RLock lock = clients.get(next.getAndIncrement()).getLock(name);
                for (int i = 0; i < 10; i++) {
                    lock.lock(5, TimeUnit.SECONDS);
                    try {
                        if (o.inside.incrementAndGet() != 1) o.overlaps.incrementAndGet();
                        Thread.sleep(20);
                        o.inside.decrementAndGet();
                    } finally {
                        lock.unlock();
                    }
                }
                return null;
            });
        } finally {
            pool.shutdownNow();
            clients.forEach(Client::close);
        }
        assertTrue(o.overlaps.get() > 0, "the checker saw no overlap among non-excluding locks");
    }

    @Test
    void asyncAcquisitionsContendWithoutBlockingThreads() throws Exception {
        String name = Harness.name("async");
        Overlap o = new Overlap();
        List<java.util.concurrent.CompletableFuture<Void>> all = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            RLock lock = client.getLock(name);
            all.add(lock.lockAsync(5, TimeUnit.SECONDS).thenCompose(v -> {
                try {
                    o.critical();
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
                return lock.unlockAsync();
            }));
        }
        java.util.concurrent.CompletableFuture.allOf(all.toArray(new java.util.concurrent.CompletableFuture<?>[0]))
                .get(60, TimeUnit.SECONDS);
        assertEquals(0, o.overlaps.get());
        assertEquals(8, o.entries.get());
        assertTrue(client.metrics().acquire().ok() >= 8);
        assertEquals(Duration.ZERO, client.getLock(name).remaining());
    }
}
