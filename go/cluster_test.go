package quorumlock_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	quorumlock "example.invalid/quorumlock/go"
)

// TestRedisClusterMember locks over two plain nodes and a Redis Cluster (3 primaries) counted as
// one member: the redis+cluster:// URL passes through to the engine unchanged.
func TestRedisClusterMember(t *testing.T) {
	out, err := exec.Command(harnessBin(), "start", "--nodes", "2", "--redis-cluster", "3",
		"--persist", "none", "--parent", fmt.Sprint(os.Getpid())).Output()
	if err != nil {
		t.Fatalf("ql-harness start --redis-cluster 3: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var info struct {
		RunDir       string `json:"run_dir"`
		Nodes        []struct{ URL string }
		RedisCluster struct{ URL string } `json:"redis_cluster"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &info); err != nil {
		t.Fatalf("ql-harness output %q: %v", out, err)
	}
	t.Cleanup(func() { _ = exec.Command(harnessBin(), "stop", info.RunDir).Run() })
	if !strings.HasPrefix(info.RedisCluster.URL, "redis+cluster://") || len(info.Nodes) < 2 {
		t.Fatalf("unexpected harness output: %s", lines[len(lines)-1])
	}
	nodes := []string{info.RedisCluster.URL, info.Nodes[0].URL, info.Nodes[1].URL}
	c, err := quorumlock.Connect(t.Context(), nodes, quorumlock.WithQuarantine(quorumlock.QuarantineOff, 0),
		quorumlock.WithRequireQuorum(true), quorumlock.WithConnectTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.NodeCount() != 3 {
		t.Fatalf("NodeCount() = %d, want 3 (the cluster is one member)", c.NodeCount())
	}
	m := c.NewMutex(uniqueName(t), slow)
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := c.NewMutex(m.Name(), slow).TryLock(); !errors.Is(err, quorumlock.ErrBusy) {
		t.Fatalf("TryLock of a held lock: %v, want ErrBusy", err)
	}
	if held, err := m.Unlock(); !held || err != nil {
		t.Fatalf("Unlock() = %v, %v", held, err)
	}
}
