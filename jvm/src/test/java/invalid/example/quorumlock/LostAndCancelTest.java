package invalid.example.quorumlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The lost signal on a broken lock, and interrupts and cancellation cleaning up. */
class LostAndCancelTest {
    static Client client;
    /** Short leases so the watchdog acts within the test: 1.5 s, extended every 500 ms. */
    static Client fast;

    @BeforeAll
    static void connect() {
        client = Harness.connect();
        fast = QuorumLock.connect(Harness.urls(), Harness.settings().withLockDefaults(LockOptions.defaults()
                .withNodeTimeout(Duration.ofMillis(400)).withLeaseTime(Duration.ofMillis(1500))));
    }

    @AfterAll
    static void close() {
        client.close();
        fast.close();
    }

    @Test
    void deletingTheKeysFiresTheLostSignal() throws Exception {
        String name = Harness.name("lost");
        RLock lock = fast.getLock(name);
        lock.lock(); // auto-extended 1.5 s lease
        CompletableFuture<LostReason> lost = lock.lost();
        Thread.sleep(700);
        assertFalse(lost.isDone(), "extensions keep it alive");
        assertTrue(lock.lease().extensions() >= 1);
        // A plain client breaks the lock behind the holder's back.
        Harness.redisAll("DEL", Harness.key(name));
        assertEquals(LostReason.EXPIRED, lost.get(5, TimeUnit.SECONDS));
        assertFalse(lock.isHeld());
        LockLostException e = assertThrows(LockLostException.class, lock::unlock);
        assertEquals(LostReason.EXPIRED, e.reason());
        assertEquals(5, e.nodes().size());
        assertTrue(fast.metrics().lost() >= 1);
    }

    @Test
    void anotherValueOnTheNodesIsTaken() throws Exception {
        String name = Harness.name("taken");
        RLock lock = fast.getLock(name);
        lock.lock();
        CompletableFuture<LostReason> lost = lock.lost();
        Harness.redisAll("SET", Harness.key(name), "someone-else-0123456789", "PX", "10000");
        assertEquals(LostReason.TAKEN, lost.get(5, TimeUnit.SECONDS));
        assertThrows(LockLostException.class, lock::unlock);
        // The holder's release never deletes another owner's key.
        for (Object v : Harness.values(name)) assertEquals("someone-else-0123456789", v);
        Harness.redisAll("DEL", Harness.key(name));
    }

    @Test
    void theLostFutureNeverFiresAfterARelease() throws Exception {
        RLock lock = fast.getLock(Harness.name("released"));
        lock.lock();
        CompletableFuture<LostReason> lost = lock.lost();
        lock.unlock();
        CompletionException e = assertThrows(CompletionException.class, lost::join);
        assertTrue(e.getCause() instanceof CancellationException, e.toString());
    }

    @Test
    void interruptingAWaiterCancelsAndCleansUp() throws Exception {
        String name = Harness.name("interrupt");
        RLock holder = client.getLock(name);
        holder.lock(10, TimeUnit.SECONDS);
        String held = holder.lease().value();
        long cancelledBefore = client.metrics().acquire().failed().getOrDefault("QL_CANCELLED", 0L);
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        CountDownLatch started = new CountDownLatch(1);
        Thread waiter = new Thread(() -> {
            RLock lock = client.getLock(name);
            started.countDown();
            try {
                lock.lockInterruptibly();
                thrown.set(new AssertionError("acquired a held lock"));
            } catch (Throwable t) {
                thrown.set(t);
            }
        });
        waiter.start();
        started.await();
        Thread.sleep(300);
        long t0 = System.nanoTime();
        waiter.interrupt();
        waiter.join(5000);
        assertFalse(waiter.isAlive());
        assertTrue(thrown.get() instanceof InterruptedException, String.valueOf(thrown.get()));
        assertTrue(System.nanoTime() - t0 < 2_000_000_000L, "the interrupt ends the wait promptly");
        assertEquals(cancelledBefore + 1, client.metrics().acquire().failed().getOrDefault("QL_CANCELLED", 0L));
        // Only the holder's value is on the nodes; after its release, nothing is.
        for (Object v : Harness.values(name)) assertEquals(held, v);
        holder.unlock();
        Thread.sleep(300);
        Harness.awaitNoKey(name, 1000);
    }

    @Test
    void aThreadInterruptedBeforehandSendsNothing() {
        RLock lock = client.getLock(Harness.name("pre-interrupted"));
        long attempts = client.metrics().acquireAttempts();
        Thread.currentThread().interrupt();
        assertThrows(InterruptedException.class, lock::lockInterruptibly);
        assertFalse(Thread.interrupted(), "the interrupt was consumed by the exception");
        assertEquals(attempts, client.metrics().acquireAttempts());
    }

    @Test
    void lockIsNotInterruptibleButKeepsTheInterrupt() throws Exception {
        String name = Harness.name("uninterruptible");
        RLock holder = client.getLock(name);
        holder.lock(600, TimeUnit.MILLISECONDS);
        AtomicReference<Boolean> flag = new AtomicReference<>();
        AtomicReference<Boolean> got = new AtomicReference<>();
        Thread waiter = new Thread(() -> {
            RLock lock = client.getLock(name);
            lock.lock(2, TimeUnit.SECONDS); // waits until the holder's lease ends
            got.set(lock.isHeld());
            flag.set(Thread.currentThread().isInterrupted());
            lock.unlock();
        });
        waiter.start();
        Thread.sleep(100);
        waiter.interrupt();
        waiter.join(10_000);
        assertEquals(Boolean.TRUE, got.get());
        assertEquals(Boolean.TRUE, flag.get(), "the interrupt is kept for the caller");
        assertThrows(LockLostException.class, holder::unlock, "the holder's lease ran out meanwhile");
    }

    @Test
    void cancellingTheFutureCancelsTheAcquisition() throws Exception {
        String name = Harness.name("cancel-future");
        RLock holder = client.getLock(name);
        holder.lock(10, TimeUnit.SECONDS);
        RLock waiter = client.getLock(name);
        CompletableFuture<Void> f = waiter.lockAsync();
        Thread.sleep(200);
        assertTrue(f.cancel(true));
        holder.unlock();
        // The cancelled acquisition must not take the lock once it is free.
        Thread.sleep(500);
        assertNull(waiter.lease());
        Harness.awaitNoKey(name, 1000);
    }

    @Test
    void tryLockTimesOutWithFalseAndLeavesNothing() throws Exception {
        String name = Harness.name("timeout");
        RLock holder = client.getLock(name);
        holder.lock(10, TimeUnit.SECONDS);
        long t0 = System.nanoTime();
        assertFalse(client.getLock(name).tryLock(300, 5_000, TimeUnit.MILLISECONDS));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms >= 250 && ms < 3000, ms + " ms");
        holder.unlock();
        Harness.awaitNoKey(name, 1000);
    }

    @Test
    void aLeaseAlsoClosesWithTryWithResources() throws Exception {
        String name = Harness.name("lease-api");
        Lease kept;
        try (Lease lease = client.acquireAsync(java.util.List.of(name), Duration.ofSeconds(2), null, LockOptions.defaults())
                .get(10, TimeUnit.SECONDS)) {
            kept = lease;
            assertTrue(lease.isHeld());
            assertEquals(java.util.List.of(name), lease.resources());
            assertTrue(Objects.requireNonNull(Harness.values(name).get(0)).equals(lease.value())
                    || Harness.values(name).contains(lease.value()));
        }
        assertFalse(kept.isHeld());
        assertTrue(kept.release().heldByQuorum(), "a second release returns the first report");
        Harness.awaitNoKey(name, 1000);
    }
}
