package invalid.example.quorumlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Java threads and `quorumlock run` processes (the CLI, another surface of the same engine)
 * contend for one name; the critical section creates a marker file that must not exist yet
 * (an atomic create on both sides), so any overlap is recorded.
 */
class CrossLanguageTest {
    @Test
    void javaAndTheCliExcludeEachOther(@TempDir Path dir) throws Exception {
        String name = Harness.name("cross");
        Path busy = dir.resolve("busy");
        Path overlaps = dir.resolve("overlaps");
        Path log = dir.resolve("log");
        Files.createFile(log);
        String script = "set -C; if ! : > \"$D/busy\" 2>/dev/null; then echo cli >> \"$D/overlaps\"; fi; "
                + "sleep 0.02; rm -f \"$D/busy\"; echo cli >> \"$D/log\"";
        String cli = Harness.tool("ql.cli", "QL_CLI").toString();
        String loop = "for i in 1 2 3 4; do \"$CLI\" --quarantine off run \"$NAME\" --ttl 5s --wait 30s -- sh -c '"
                + script + "' || exit 1; done";
        List<Process> procs = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            ProcessBuilder pb = new ProcessBuilder("sh", "-c", loop).redirectErrorStream(true)
                    .redirectOutput(dir.resolve("cli" + i + ".out").toFile());
            pb.environment().put("QUORUMLOCK_NODES", String.join(",", Harness.urls()));
            pb.environment().put("CLI", cli);
            pb.environment().put("NAME", name);
            pb.environment().put("D", dir.toString());
            procs.add(pb.start());
        }
        AtomicInteger javaOverlaps = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try (Client client = Harness.connect()) {
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < 3; t++) {
                fs.add(pool.submit(() -> {
                    RLock lock = client.getLock(name);
                    for (int i = 0; i < 4; i++) {
                        lock.lock(5, TimeUnit.SECONDS);
                        try {
                            try {
                                Files.createFile(busy);
                            } catch (FileAlreadyExistsException e) {
                                javaOverlaps.incrementAndGet();
                            }
                            Thread.sleep(20);
                            Files.deleteIfExists(busy);
                            Files.writeString(log, "java\n", java.nio.file.StandardOpenOption.APPEND);
                        } finally {
                            lock.unlock();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) f.get(60, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
        for (int i = 0; i < procs.size(); i++) {
            Process p = procs.get(i);
            assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the CLI loop hung");
            assertEquals(0, p.exitValue(), Files.readString(dir.resolve("cli" + i + ".out")));
        }
        List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
        assertEquals(12, lines.stream().filter("java"::equals).count());
        assertEquals(8, lines.stream().filter("cli"::equals).count());
        assertEquals(0, javaOverlaps.get(), "a Java holder found the CLI's marker");
        assertTrue(!Files.exists(overlaps), "a CLI holder found a marker");
    }
}
