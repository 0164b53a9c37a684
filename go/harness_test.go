package quorumlock_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	quorumlock "example.invalid/quorumlock/go"
)

// The nodes every test shares: real redis-server processes started by ql-harness (no
// durable writes, so clients turn the restart quarantine off).
var cluster struct {
	urls   []string
	addrs  []string
	runDir string
}

// repoPath resolves a path relative to the repository root (go/..).
func repoPath(rel string) string {
	abs, _ := filepath.Abs(filepath.Join("..", rel))
	return abs
}

func harnessBin() string {
	if p := os.Getenv("QL_HARNESS"); p != "" {
		return p
	}
	return repoPath("target/debug/ql-harness")
}

func TestMain(m *testing.M) {
	out, err := exec.Command(harnessBin(), "start", "--nodes", "5", "--persist", "none",
		"--parent", fmt.Sprint(os.Getpid())).Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ql-harness start: %v (build it with `make harness`)\n", err)
		os.Exit(1)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var info struct {
		RunDir string `json:"run_dir"`
		Nodes  []struct {
			URL  string `json:"url"`
			Addr string `json:"addr"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &info); err != nil {
		fmt.Fprintf(os.Stderr, "ql-harness output %q: %v\n", out, err)
		os.Exit(1)
	}
	cluster.runDir = info.RunDir
	for _, n := range info.Nodes {
		cluster.urls = append(cluster.urls, n.URL)
		cluster.addrs = append(cluster.addrs, n.Addr)
	}
	code := m.Run()
	_ = exec.Command(harnessBin(), "stop", cluster.runDir).Run()
	os.Exit(code)
}

// connect opens a client on the shared nodes with the quarantine off (they are not durable).
func connect(t testing.TB, opts ...quorumlock.ClientOption) *quorumlock.Client {
	t.Helper()
	opts = append([]quorumlock.ClientOption{
		quorumlock.WithQuarantine(quorumlock.QuarantineOff, 0),
		quorumlock.WithRequireQuorum(true),
		quorumlock.WithConnectTimeout(5 * time.Second),
	}, opts...)
	c, err := quorumlock.Connect(context.Background(), cluster.urls, opts...)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// slow gives node requests 1 s instead of the default few milliseconds, so a loaded machine
// (the race detector, parallel builds) does not turn a test's expected outcome into a timeout.
var slow = quorumlock.WithNodeTimeout(time.Second)

// uniqueName returns a lock name no other test uses.
func uniqueName(t testing.TB) string {
	return fmt.Sprintf("go:%s:%d", t.Name(), time.Now().UnixNano())
}

// command sends one raw RESP command to node i and returns the reply's first line.
func command(t testing.TB, i int, args ...string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", cluster.addrs[i], 2*time.Second)
	if err != nil {
		t.Fatalf("node %d: %v", i, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatalf("node %d: %v", i, err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatalf("node %d: %v", i, err)
	}
	return strings.TrimRight(line, "\r\n")
}

// key is the Redis key of a lock name under the default prefix.
func key(name string) string { return "quorumlock:{" + name + "}" }
