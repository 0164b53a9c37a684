package invalid.example.quorumlock.bench;

import invalid.example.quorumlock.Client;
import invalid.example.quorumlock.QuorumLock;
import invalid.example.quorumlock.Quarantine;
import invalid.example.quorumlock.Settings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Lock;
import java.util.function.IntFunction;
import org.redisson.Redisson;
import org.redisson.RedissonRedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * Acquire + release of one uncontended name per worker, on the 5 nodes of {@code QL_NODES}:
 * quorumlock (one client over 5 nodes), Redisson's {@code RedissonRedLock} over 5
 * single-server clients of the same nodes, and a Redisson {@code RLock} on node 0 alone. Each
 * implementation runs its cycles at 1, 16 and 64 threads, in rounds whose order rotates, after
 * a warm-up; leases are 10 s (no watchdog on either side). Prints one table with p50, p99 and
 * throughput, and the ratios against RedissonRedLock and the single-node RLock; with
 * {@code QL_BENCH_RUST_BIN}, also the one-thread p50 against the Rust engine's c=1 p50 on the
 * same nodes (see {@link RustEngine}).
 */
public final class Bench {
    record Impl(String name, IntFunction<Lock> lockFor) {}

    record Result(List<Long> latenciesNanos, long busyNanos, long failed) {}

    static final int[] THREADS = {1, 16, 64};
    static final int ROUNDS = Integer.getInteger("bench.rounds", 3);
    static final int CYCLES_PER_ROUND = Integer.getInteger("bench.cycles", 1200);
    static final int WARMUP = 10;

    public static void main(String[] args) throws Exception {
        List<String> nodes = List.of(System.getenv("QL_NODES").split(","));
        String loadBefore = loadAverage();
        String run = Long.toHexString(System.nanoTime());

        Client ql = QuorumLock.connect(nodes, Settings.defaults().withQuarantine(Quarantine.OFF));
        List<RedissonClient> redissons = new ArrayList<>();
        for (String url : nodes) {
            Config c = new Config();
            c.useSingleServer().setAddress(url).setConnectionPoolSize(64).setConnectionMinimumIdleSize(16);
            redissons.add(Redisson.create(c));
        }
        Map<String, Impl> impls = new LinkedHashMap<>();
        impls.put("quorumlock (JVM, uniffi)", new Impl("quorumlock", i -> wrap(ql.getLock("bench:" + run + ":ql:" + i))));
        impls.put("RedissonRedLock (5 nodes)", new Impl("redlock", i -> {
            RLock[] locks = redissons.stream().map(r -> r.getLock("bench:" + run + ":redlock:" + i)).toArray(RLock[]::new);
            @SuppressWarnings("deprecation")
            RedissonRedLock red = new RedissonRedLock(locks);
            return red;
        }));
        impls.put("Redisson RLock (1 node)", new Impl("rlock", i -> redissons.get(0).getLock("bench:" + run + ":rlock:" + i)));

        Map<String, Map<Integer, List<Result>>> results = new LinkedHashMap<>();
        List<String> order = new ArrayList<>(impls.keySet());
        List<Long> rust = new ArrayList<>();
        for (int round = 0; round < ROUNDS; round++) {
            rust.add(RustEngine.c1P50Micros(nodes));
            for (int t : THREADS) {
                for (int k = 0; k < order.size(); k++) {
                    String name = order.get((k + round) % order.size());
                    Result r = runOne(impls.get(name), t, CYCLES_PER_ROUND);
                    results.computeIfAbsent(name, x -> new LinkedHashMap<>()).computeIfAbsent(t, x -> new ArrayList<>()).add(r);
                }
            }
        }
        String loadAfter = loadAverage();

        System.out.printf("Java %s, %d cores, 5 nodes, %d rounds of %d cycles per thread count in rotating order, lease 10 s; load average %s before, %s after%n%n",
                Runtime.version(), Runtime.getRuntime().availableProcessors(), ROUNDS, CYCLES_PER_ROUND, loadBefore, loadAfter);
        Map<String, double[]> summary = new LinkedHashMap<>();
        for (String name : order) {
            for (int t : THREADS) {
                List<Result> rs = results.get(name).get(t);
                long[] all = rs.stream().flatMap(r -> r.latenciesNanos.stream()).mapToLong(Long::longValue).sorted().toArray();
                long busy = rs.stream().mapToLong(Result::busyNanos).sum();
                long failed = rs.stream().mapToLong(Result::failed).sum();
                double opsPerSec = all.length / (busy / 1e9);
                summary.put(name + "@" + t, new double[] {pct(all, 0.50) / 1000.0, pct(all, 0.99) / 1000.0, opsPerSec, failed});
            }
        }
        StringBuilder h = new StringBuilder("| impl |");
        StringBuilder sep = new StringBuilder("|---|");
        for (int t : THREADS) {
            h.append(String.format(" %d thr p50 µs | p99 µs | ops/s | ops/s vs RedLock | p50 vs RedLock | ops/s vs 1-node RLock |", t));
            sep.append("---:|---:|---:|---:|---:|---:|");
        }
        h.append(" failed |");
        sep.append("---:|");
        System.out.println(h);
        System.out.println(sep);
        for (String name : order) {
            StringBuilder row = new StringBuilder("| " + name + " |");
            long failed = 0;
            for (int t : THREADS) {
                double[] s = summary.get(name + "@" + t);
                double[] red = summary.get("RedissonRedLock (5 nodes)@" + t);
                double[] one = summary.get("Redisson RLock (1 node)@" + t);
                row.append(String.format(" %.0f | %.0f | %.0f | x%.2f | x%.2f | x%.2f |", s[0], s[1], s[2], s[2] / red[2], s[0] / red[0], s[2] / one[2]));
                failed += (long) s[3];
            }
            row.append(" ").append(failed).append(" |");
            System.out.println(row);
        }

        long rustP50 = RustEngine.median(rust);
        if (rustP50 > 0) {
            System.out.printf("%nRust engine (quorumlock-bench --conc 1, 1 s before each round): p50 %d µs, median of %s%n%n", rustP50, rust);
            System.out.println("| impl | 1 thr p50 µs | vs the Rust engine's c=1 p50 |");
            System.out.println("|---|---:|---:|");
            for (String name : order) {
                double p50 = summary.get(name + "@1")[0];
                System.out.printf("| %s | %.0f | x%.2f |%n", name, p50, p50 / rustP50);
            }
        }

        ql.close();
        redissons.forEach(RedissonClient::shutdown);
    }

    static Lock wrap(invalid.example.quorumlock.RLock l) {
        return l;
    }

    /** {@code threads} workers, each with its own name, sharing {@code cycles} cycles. */
    static Result runOne(Impl impl, int threads, int cycles) throws Exception {
        int per = Math.max(1, cycles / threads);
        List<Long> lat = java.util.Collections.synchronizedList(new ArrayList<>());
        AtomicLong failed = new AtomicLong();
        AtomicLong busy = new AtomicLong();
        CountDownLatch ready = new CountDownLatch(threads);
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> ts = new ArrayList<>();
        for (int w = 0; w < threads; w++) {
            Lock lock = impl.lockFor().apply(w);
            Thread t = new Thread(() -> {
                long[] mine = new long[per];
                int n = 0;
                try {
                    for (int i = 0; i < WARMUP; i++) cycle(lock, failed, false);
                    ready.countDown();
                    go.await();
                    long start = System.nanoTime();
                    for (int i = 0; i < per; i++) {
                        long t0 = System.nanoTime();
                        if (cycle(lock, failed, true)) mine[n++] = System.nanoTime() - t0;
                    }
                    busy.addAndGet(System.nanoTime() - start);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                for (int i = 0; i < n; i++) lat.add(mine[i]);
            });
            t.start();
            ts.add(t);
        }
        ready.await();
        go.countDown();
        for (Thread t : ts) t.join();
        // Throughput: cycles over the mean busy time of a worker.
        return new Result(new ArrayList<>(lat), busy.get() / threads, failed.get());
    }

    static boolean cycle(Lock lock, AtomicLong failed, boolean count) {
        try {
            if (lock instanceof invalid.example.quorumlock.RLock q) {
                q.lock(10, TimeUnit.SECONDS);
                q.unlock();
            } else {
                ((RLock) lock).lock(10, TimeUnit.SECONDS);
                lock.unlock();
            }
            return true;
        } catch (RuntimeException e) {
            if (count) failed.incrementAndGet();
            return false;
        }
    }

    static long pct(long[] sorted, double q) {
        if (sorted.length == 0) return 0;
        int i = (int) Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1);
        return sorted[Math.max(0, i)];
    }

    static String loadAverage() {
        try {
            return String.join(" ", Arrays.asList(Files.readString(Path.of("/proc/loadavg")).split(" ")).subList(0, 3));
        } catch (Exception e) {
            return "?";
        }
    }
}
