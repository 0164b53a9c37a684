package quorumlock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	quorumlock "example.invalid/quorumlock/go"
)

// TLS end to end (docs/SECURITY.md): a mutual-TLS node of its own from ql-harness, the CA and
// client certificate given as node URL parameters, typed errors for a wrong CA and #insecure.
func TestTLS(t *testing.T) {
	out, err := exec.Command(harnessBin(), "start", "--nodes", "1", "--persist", "none", "--mtls",
		"--parent", fmt.Sprint(os.Getpid())).Output()
	if err != nil {
		t.Fatalf("ql-harness start --mtls: %v", err)
	}
	var info struct {
		RunDir string `json:"run_dir"`
		Nodes  []struct {
			URL  string `json:"url"`
			Addr string `json:"addr"`
		} `json:"nodes"`
		TLS struct {
			CA      string `json:"ca"`
			Cert    string `json:"cert"`
			Key     string `json:"key"`
			OtherCA string `json:"other_ca"`
		} `json:"tls"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &info); err != nil {
		t.Fatalf("ql-harness output %q: %v", out, err)
	}
	defer func() { _ = exec.Command(harnessBin(), "stop", info.RunDir).Run() }()
	base := strings.SplitN(info.Nodes[0].URL, "?", 2)[0]
	node := func(ca string) string {
		q := url.Values{"tls_ca": {ca}, "tls_cert": {info.TLS.Cert}, "tls_key": {info.TLS.Key}}
		return base + "?" + q.Encode()
	}
	opts := []quorumlock.ClientOption{
		quorumlock.WithQuarantine(quorumlock.QuarantineOff, 0),
		quorumlock.WithRequireQuorum(true),
		quorumlock.WithConnectTimeout(10 * time.Second),
	}

	t.Run("locks over mutual TLS", func(t *testing.T) {
		c, err := quorumlock.Connect(context.Background(), []string{node(info.TLS.CA)}, opts...)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer c.Close()
		m := c.NewMutex("tls:go")
		if err := m.Lock(); err != nil {
			t.Fatalf("lock: %v", err)
		}
		if ok, err := m.Unlock(); !ok || err != nil {
			t.Fatalf("unlock: %v %v", ok, err)
		}
	})

	t.Run("a wrong CA is ErrConnection naming the node", func(t *testing.T) {
		_, err := quorumlock.Connect(context.Background(), []string{node(info.TLS.OtherCA)}, opts...)
		if !errors.Is(err, quorumlock.ErrConnection) {
			t.Fatalf("want ErrConnection, got %v", err)
		}
		var qe *quorumlock.Error
		if !errors.As(err, &qe) || len(qe.Nodes()) != 1 || qe.Nodes()[0].Kind.String() != "Tls" {
			t.Fatalf("want one Tls node, got %v", err)
		}
		if !strings.Contains(err.Error(), info.Nodes[0].Addr) || !strings.Contains(err.Error(), "UnknownIssuer") {
			t.Fatalf("the node and the cause are not named: %v", err)
		}
	})

	t.Run("#insecure is ErrInvalid", func(t *testing.T) {
		_, err := quorumlock.Connect(context.Background(), []string{base + "#insecure"}, opts...)
		if !errors.Is(err, quorumlock.ErrInvalid) || !strings.Contains(err.Error(), "#insecure") {
			t.Fatalf("want ErrInvalid about #insecure, got %v", err)
		}
	})
}
