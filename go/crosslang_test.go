package quorumlock_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	quorumlock "example.invalid/quorumlock/go"
)

// cli returns the quorumlock command (QL_CLI, else target/debug/quorumlock).
func cli(t *testing.T) string {
	p := os.Getenv("QL_CLI")
	if p == "" {
		p = repoPath("target/debug/quorumlock")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the quorumlock CLI is missing (%v): build it with `cargo build -p quorumlock-cli`", err)
	}
	return p
}

// TestCrossLanguageWithCLI contends for one lock with the Rust CLI: while `quorumlock run`
// holds it Go gets ErrBusy, and while Go holds it the CLI exits 110 (QL_BUSY).
func TestCrossLanguageWithCLI(t *testing.T) {
	bin := cli(t)
	c := connect(t)
	name := uniqueName(t)
	nodes := strings.Join(cluster.urls, ",")
	marker := filepath.Join(t.TempDir(), "held")

	// The CLI holds the lock while its command runs; the command marks the file once started.
	run := exec.Command(bin, "--nodes", nodes, "--quarantine", "off", "run", name, "--ttl", "5s",
		"--", "sh", "-c", "touch "+marker+"; sleep 2")
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = run.Process.Kill()
			t.Fatal("the CLI did not start its command within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	m := c.NewMutex(name, slow)
	if err := m.TryLock(); !errors.Is(err, quorumlock.ErrBusy) {
		t.Fatalf("TryLock while the CLI holds the lock: %v, want ErrBusy", err)
	}
	if err := run.Wait(); err != nil {
		t.Fatalf("quorumlock run: %v", err)
	}

	// Now Go holds it and the CLI is refused.
	if err := m.Lock(); err != nil {
		t.Fatalf("Lock after the CLI released: %v", err)
	}
	out, err := exec.Command(bin, "--nodes", nodes, "--quarantine", "off", "run", name, "--no-wait",
		"--", "true").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 110 {
		t.Fatalf("quorumlock run while Go holds the lock: %v, want exit 110; output:\n%s", err, out)
	}
	if _, err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
}
