package invalid.example.quorumlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * TLS end to end (docs/SECURITY.md): a mutual-TLS node of its own from ql-harness, the CA and
 * client certificate given as node URL parameters, typed errors for a wrong CA and #insecure.
 */
class TlsTest {
    static String runDir, base, addr, ca, cert, key, otherCa;

    static String field(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\":\"([^\"]*)\"").matcher(json);
        if (!m.find()) throw new IllegalStateException("no " + name + " in " + json);
        return m.group(1);
    }

    @BeforeAll
    static void start() throws IOException, InterruptedException {
        String harness = Harness.tool("ql.harness", "QL_HARNESS").toString();
        Process p = new ProcessBuilder(harness, "start", "--nodes", "1", "--persist", "none", "--mtls",
                "--parent", Long.toString(ProcessHandle.current().pid()))
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String up = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0, up);
        runDir = field(up, "run_dir");
        base = field(up, "url").split("\\?")[0];
        addr = field(up, "addr");
        ca = field(up, "ca");
        cert = field(up, "cert");
        key = field(up, "key");
        otherCa = field(up, "other_ca");
    }

    @AfterAll
    static void stop() throws IOException, InterruptedException {
        String harness = Harness.tool("ql.harness", "QL_HARNESS").toString();
        new ProcessBuilder(harness, "stop", runDir).inheritIO().start().waitFor(20, TimeUnit.SECONDS);
    }

    static String url(String caFile) {
        var enc = (java.util.function.Function<String, String>) s -> URLEncoder.encode(s, StandardCharsets.UTF_8);
        return base + "?tls_ca=" + enc.apply(caFile) + "&tls_cert=" + enc.apply(cert) + "&tls_key=" + enc.apply(key);
    }

    static Client connect(String url) {
        return QuorumLock.connect(List.of(url), Harness.settings().withRequireQuorum(true).withConnectTimeout(java.time.Duration.ofSeconds(10)));
    }

    @Test
    void locksOverMutualTls() {
        try (Client client = connect(url(ca))) {
            RLock lock = client.getLock(Harness.name("tls"));
            lock.lock(5, TimeUnit.SECONDS);
            assertTrue(lock.isHeld());
            lock.unlock();
        }
    }

    @Test
    void aWrongCaIsAConnectionErrorNamingTheNode() {
        ConnectionFailedException e = assertThrows(ConnectionFailedException.class, () -> connect(url(otherCa)).close());
        assertEquals("QL_CONNECTION", e.code());
        assertEquals("Tls", e.nodes().get(0).kind());
        assertTrue(e.getMessage().contains(addr) && e.getMessage().contains("UnknownIssuer"), e.getMessage());
    }

    @Test
    void insecureIsRefused() {
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> connect(base + "#insecure").close());
        assertTrue(e.getMessage().contains("#insecure"), e.getMessage());
    }
}
