package invalid.example.quorumlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The checked-in generated Kotlin (src/main/kotlin/invalid/example/quorumlock/ffi) is what
 * uniffi-bindgen makes from the native library built now. Regenerate with `make jvm-bindings`.
 */
class GeneratedBindingsTest {
    static final String FILE = "invalid/example/quorumlock/ffi/quorumlock_uniffi.kt";

    @Test
    void generatedBindingsAreFresh(@TempDir Path out) throws Exception {
        Path repo = Path.of(System.getProperty("ql.repo", "..")).toAbsolutePath().normalize();
        Process p = new ProcessBuilder(Harness.tool("ql.bindgen", "QL_UNIFFI_BINDGEN").toString(),
                "generate", "--library", Harness.tool("ql.native.lib", "QL_NATIVE_LIB").toString(),
                "--language", "kotlin", "--no-format",
                "--out-dir", out.toString())
                .directory(repo.toFile())
                .redirectErrorStream(true)
                .start();
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "uniffi-bindgen hung");
        assertEquals(0, p.exitValue(), log);
        List<String> fresh = Files.readAllLines(out.resolve(FILE));
        List<String> checkedIn = Files.readAllLines(repo.resolve("jvm/src/main/kotlin").resolve(FILE));
        for (int i = 0; i < Math.max(fresh.size(), checkedIn.size()); i++) {
            String want = i < fresh.size() ? fresh.get(i) : "<end of file>";
            String have = i < checkedIn.size() ? checkedIn.get(i) : "<end of file>";
            assertEquals(want, have, "the generated Kotlin is stale from line " + (i + 1)
                    + ": run `make jvm-bindings` and commit");
        }
    }
}
