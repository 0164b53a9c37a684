// A Java program with only the quorumlock -all jar on its class path:
//   java -cp jvm/target/quorumlock-0.2.0-all.jar jvm/examples/Hello.java
// QL_NODES: comma-separated node URLs (ql-harness exec sets it).
import invalid.example.quorumlock.Client;
import invalid.example.quorumlock.QuorumLock;
import invalid.example.quorumlock.RLock;
import invalid.example.quorumlock.Settings;
import java.util.List;
import java.util.concurrent.TimeUnit;

public class Hello {
    public static void main(String[] args) {
        List<String> nodes = List.of(System.getenv("QL_NODES").split(","));
        try (Client client = QuorumLock.connect(nodes, Settings.defaults())) {
            RLock lock = client.getLock("hello:jvm");
            lock.lock(10, TimeUnit.SECONDS);
            try {
                System.out.printf("Java %s: held %s on %d of %d nodes, %d ms left (quorumlock %s)%n",
                        Runtime.version().feature(), lock.getName(),
                        lock.lease().report().stream().filter(n -> n.kind().equals("Ok")).count(),
                        client.nodeCount(), lock.remaining().toMillis(), QuorumLock.version());
            } finally {
                lock.unlock();
            }
        }
    }
}
