package invalid.example.quorumlock.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Rust engine's acquire + release p50 at concurrency 1 on the same nodes (issue 22), from
 * bench/rust's release {@code quorumlock-bench} (path in {@code QL_BENCH_RUST_BIN}), so that
 * the JVM's one-thread figures have the engine's own beside them, taken in the same run.
 */
final class RustEngine {
    /** The p50 of the quorumlock case in the program's {@code --json} output. */
    private static final Pattern P50 = Pattern.compile("\"quorumlock\":\\{[^}]*\"p50_us\":(\\d+)");

    private RustEngine() {}

    /** One 1 s run; 0 (and why, on stderr) when the binary is not given or fails. */
    static long c1P50Micros(List<String> nodes) {
        String bin = System.getenv("QL_BENCH_RUST_BIN");
        if (bin == null || bin.isEmpty()) return 0;
        try {
            Process p = new ProcessBuilder(bin, "--nodes", String.join(",", nodes), "--conc", "1",
                    "--rounds", "1", "--secs", "1", "--persist", "always", "--json")
                    .redirectError(ProcessBuilder.Redirect.DISCARD)
                    .start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (p.waitFor() != 0) {
                System.err.println("Rust engine benchmark " + bin + ": exit " + p.exitValue());
                return 0;
            }
            Matcher m = P50.matcher(out);
            if (!m.find()) {
                System.err.println("Rust engine benchmark: no p50 in its output");
                return 0;
            }
            return Long.parseLong(m.group(1));
        } catch (IOException e) {
            System.err.println("Rust engine benchmark " + bin + ": " + e.getMessage());
            return 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 0;
        }
    }

    /** The median of the non-zero values; 0 when there are none. */
    static long median(List<Long> values) {
        long[] got = values.stream().mapToLong(Long::longValue).filter(v -> v > 0).sorted().toArray();
        return got.length == 0 ? 0 : got[got.length / 2];
    }
}
