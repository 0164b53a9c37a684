package invalid.example.quorumlock;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Real redis-server nodes for the tests: {@code QL_NODES} when run under
 * {@code ql-harness exec}, else five nodes started once per test JVM with {@code ql-harness
 * start} (stopped when the JVM exits; the harness's supervisor also watches our PID).
 */
final class Harness {
    private Harness() {}

    /** Paths written by build-native.sh: the unstripped library, uniffi-bindgen, ql-harness, the CLI. */
    static final Properties NATIVE = loadNative();

    private static List<String> urls;

    private static Properties loadNative() {
        Properties p = new Properties();
        Path file = Path.of("target", "ql-native.properties");
        if (Files.exists(file)) {
            try (InputStream in = Files.newInputStream(file)) {
                p.load(in);
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }
        return p;
    }

    static Path tool(String key, String env) {
        String v = System.getenv(env);
        if (v == null || v.isEmpty()) v = NATIVE.getProperty(key);
        if (v == null) throw new IllegalStateException("no " + key + ": run through Maven (build-native.sh) or set " + env);
        return Path.of(v);
    }

    /** The node URLs (five nodes). */
    static synchronized List<String> urls() {
        if (urls != null) return urls;
        String env = System.getenv("QL_NODES");
        if (env != null && !env.isEmpty()) {
            urls = List.of(env.split(","));
            return urls;
        }
        try {
            Path harness = tool("ql.harness", "QL_HARNESS");
            Process p = new ProcessBuilder(harness.toString(), "start", "--nodes", "5",
                    "--parent", Long.toString(ProcessHandle.current().pid()))
                    .redirectError(ProcessBuilder.Redirect.INHERIT).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException("ql-harness start failed: " + out);
            }
            Matcher dir = Pattern.compile("\"run_dir\":\"([^\"]+)\"").matcher(out);
            if (!dir.find()) throw new IllegalStateException("no run_dir in " + out);
            String runDir = dir.group(1);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try {
                    new ProcessBuilder(harness.toString(), "stop", runDir).inheritIO().start().waitFor(20, TimeUnit.SECONDS);
                } catch (IOException | InterruptedException e) {
                    // the supervisor stops by itself once this process is gone
                }
            }));
            List<String> found = new ArrayList<>();
            Matcher m = Pattern.compile("\"url\":\"(redis://[^\"]+)\"").matcher(out);
            while (m.find()) found.add(m.group(1));
            if (found.size() != 5) throw new IllegalStateException("expected 5 node URLs in " + out);
            urls = List.copyOf(found);
            return urls;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * Settings for tests: plain local nodes without the quarantine wait, and a node timeout
     * that survives a loaded two-core machine, where an fsync of the nodes' append-only
     * files can stall every node for a few hundred milliseconds (docs/TESTING.md §2.2).
     */
    static Settings settings() {
        return Settings.defaults()
                .withQuarantine(Quarantine.OFF)
                .withLockDefaults(LockOptions.defaults()
                        .withNodeTimeout(Duration.ofMillis(1000))
                        .withLeaseTime(Duration.ofSeconds(3))
                        .withRetryDelay(Duration.ofMillis(20))
                        .withRetryJitter(Duration.ofMillis(20)));
    }

    static Client connect() {
        return QuorumLock.connect(urls(), settings());
    }

    static String name(String base) {
        return base + ":" + UUID.randomUUID();
    }

    /** The Redis key of a lock name with the default prefix. */
    static String key(String name) {
        return "quorumlock:{" + name + "}";
    }

    /** One command on the node at {@code url}; the reply as String, Long, List or null. */
    static Object redis(String url, String... args) {
        URI u = URI.create(url);
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(u.getHost(), u.getPort()), 2000);
            s.setSoTimeout(5000);
            OutputStream out = s.getOutputStream();
            StringBuilder req = new StringBuilder("*").append(args.length).append("\r\n");
            for (String a : args) {
                byte[] b = a.getBytes(StandardCharsets.UTF_8);
                req.append('$').append(b.length).append("\r\n").append(a).append("\r\n");
            }
            out.write(req.toString().getBytes(StandardCharsets.UTF_8));
            out.flush();
            return read(s.getInputStream());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The command on every node. */
    static List<Object> redisAll(String... args) {
        List<Object> replies = new ArrayList<>();
        for (String url : urls()) replies.add(redis(url, args));
        return replies;
    }

    /** The values of a lock name's key on every node (null where absent). */
    static List<Object> values(String name) {
        return redisAll("GET", key(name));
    }

    /**
     * Polls until every node holds {@code value} under the lock name's key, or fails after
     * {@code timeoutMs}: a call returns at the quorum-th reply, so the other nodes' writes may
     * still be in flight.
     */
    static void awaitValueEverywhere(String name, String value, long timeoutMs) throws InterruptedException {
        long end = System.nanoTime() + timeoutMs * 1_000_000;
        while (true) {
            List<Object> v = values(name);
            if (v.stream().allMatch(value::equals)) return;
            if (System.nanoTime() > end) throw new AssertionError("not " + value + " on every node: " + v);
            Thread.sleep(10);
        }
    }

    /** Polls until every node lacks the key, or fails after {@code timeoutMs}. */
    static void awaitNoKey(String name, long timeoutMs) throws InterruptedException {
        long end = System.nanoTime() + timeoutMs * 1_000_000;
        while (true) {
            List<Object> v = values(name);
            if (v.stream().allMatch(java.util.Objects::isNull)) return;
            if (System.nanoTime() > end) throw new AssertionError("keys left on the nodes: " + v);
            Thread.sleep(10);
        }
    }

    private static String line(InputStream in) throws IOException {
        StringBuilder sb = new StringBuilder();
        int c;
        while ((c = in.read()) != -1) {
            if (c == '\r') {
                in.read();
                break;
            }
            sb.append((char) c);
        }
        return sb.toString();
    }

    private static Object read(InputStream in) throws IOException {
        int type = in.read();
        String line = line(in);
        switch (type) {
            case '+':
                return line;
            case '-':
                throw new IllegalStateException("redis error: " + line);
            case ':':
                return Long.parseLong(line);
            case '$': {
                int n = Integer.parseInt(line);
                if (n < 0) return null;
                byte[] b = in.readNBytes(n + 2);
                return new String(b, 0, n, StandardCharsets.UTF_8);
            }
            case '*': {
                int n = Integer.parseInt(line);
                if (n < 0) return null;
                List<Object> items = new ArrayList<>();
                for (int i = 0; i < n; i++) items.add(read(in));
                return items;
            }
            default:
                throw new IllegalStateException("bad reply type " + type + " " + line + " " + Arrays.toString(new int[] {type}));
        }
    }
}
