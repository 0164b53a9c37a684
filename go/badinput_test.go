package quorumlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	quorumlock "example.invalid/quorumlock/go"
)

// wantInvalid fails unless err is an *Error with ErrInvalid.
func wantInvalid(t *testing.T, what string, err error) {
	t.Helper()
	var qe *quorumlock.Error
	if !errors.Is(err, quorumlock.ErrInvalid) || !errors.As(err, &qe) {
		t.Errorf("%s: %v, want an *Error matching ErrInvalid", what, err)
		return
	}
	t.Logf("%s: %v", what, err)
}

func TestBadMutexInput(t *testing.T) {
	c := connect(t)
	name := uniqueName(t)
	cases := map[string]*quorumlock.Mutex{
		"empty name":      c.NewMutex(""),
		"zero expiry":     c.NewMutex(name, quorumlock.WithExpiry(0)),
		"sub-ms expiry":   c.NewMutex(name, quorumlock.WithExpiry(time.Microsecond)),
		"negative expiry": c.NewMutex(name, quorumlock.WithExpiry(-time.Second)),
		"expiry > max":    c.NewMutex(name, quorumlock.WithExpiry(time.Hour)),
		"zero tries":      c.NewMutex(name, quorumlock.WithTries(0)),
		"negative delay":  c.NewMutex(name, quorumlock.WithRetryDelay(-time.Millisecond)),
		"short value":     c.NewMutex(name, quorumlock.WithValue("short")),
		"long name":       c.NewMutex(strings.Repeat("n", 2000)),
	}
	for what, m := range cases {
		wantInvalid(t, what+": Lock", m.Lock())
		wantInvalid(t, what+": TryLock", m.TryLock())
		_, _, err := m.Hold(context.Background())
		wantInvalid(t, what+": Hold", err)
	}
	// A name need not be UTF-8: any bytes are a resource.
	m := c.NewMutex("go:\xff\xfe", slow)
	if err := m.TryLock(); err != nil {
		t.Fatalf("non-UTF-8 name: %v", err)
	}
	_, _ = m.Unlock()

	idle := c.NewMutex(name)
	_, err := idle.Unlock()
	wantInvalid(t, "Unlock without a lock", err)
	_, err = idle.Extend()
	wantInvalid(t, "Extend without a lock", err)
	if !idle.Until().IsZero() || idle.Value() != "" {
		t.Error("Until/Value without a lock are not zero")
	}
}

func TestNilAndClosedHandles(t *testing.T) {
	var nilClient *quorumlock.Client
	wantInvalid(t, "nil client Lock", nilClient.NewMutex("x").Lock())
	if nilClient.NodeCount() != 0 || nilClient.Close() != nil {
		t.Error("nil client NodeCount/Close")
	}

	var nilMutex *quorumlock.Mutex
	wantInvalid(t, "nil mutex Lock", nilMutex.Lock())
	wantInvalid(t, "nil mutex TryLock", nilMutex.TryLock())
	_, err := nilMutex.Unlock()
	wantInvalid(t, "nil mutex Unlock", err)
	_, err = nilMutex.Extend()
	wantInvalid(t, "nil mutex Extend", err)
	_, err = nilMutex.Token()
	wantInvalid(t, "nil mutex Token", err)
	_, unlock, err := nilMutex.Hold(context.Background())
	wantInvalid(t, "nil mutex Hold", err)
	if unlock() != nil || nilMutex.Value() != "" || !nilMutex.Until().IsZero() || nilMutex.Name() != "" {
		t.Error("nil mutex accessors")
	}

	var zero quorumlock.Mutex
	wantInvalid(t, "zero Mutex Lock", zero.Lock())

	c := connect(t)
	held := c.NewMutex(uniqueName(t), slow)
	if err := held.Lock(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	wantInvalid(t, "closed client Lock", c.NewMutex("x").Lock())
	if c.NodeCount() != 0 {
		t.Error("closed client NodeCount")
	}
	// Locks outlive their client.
	if ok, err := held.Extend(); !ok || err != nil {
		t.Errorf("Extend after Close: %v, %v", ok, err)
	}
	if ok, err := held.Unlock(); !ok || err != nil {
		t.Errorf("Unlock after Close: %v, %v", ok, err)
	}
}

func TestBadConnectInput(t *testing.T) {
	ctx := context.Background()
	cases := map[string][]string{
		"no nodes":      nil,
		"invalid URL":   {"not a url"},
		"wrong scheme":  {"http://127.0.0.1:1"},
		"invalid UTF-8": {"redis://127.0.0.1:\xff"},
	}
	for what, nodes := range cases {
		c, err := quorumlock.Connect(ctx, nodes)
		wantInvalid(t, what, err)
		if c != nil {
			t.Errorf("%s: non-nil client", what)
		}
	}
	_, err := quorumlock.Connect(ctx, cluster.urls, quorumlock.WithConnectTimeout(-time.Second))
	wantInvalid(t, "negative connect timeout", err)
	_, err = quorumlock.Connect(ctx, cluster.urls, quorumlock.WithQuarantine(quorumlock.Quarantine(9), 0))
	wantInvalid(t, "unknown quarantine mode", err)
	_, err = quorumlock.Connect(ctx, cluster.urls, quorumlock.WithEvictionCheck(quorumlock.EvictionCheck(9)))
	wantInvalid(t, "unknown eviction mode", err)
	_, err = quorumlock.Connect(ctx, cluster.urls, quorumlock.WithDrift(0.9, 0))
	wantInvalid(t, "drift factor 0.9", err)

	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err = quorumlock.Connect(done, cluster.urls)
	if !errors.Is(err, quorumlock.ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Errorf("Connect with an ended context: %v", err)
	}
}

func TestErrorCodesMatchC(t *testing.T) {
	want := map[error]string{
		quorumlock.ErrBusy: "QL_BUSY", quorumlock.ErrQuorum: "QL_QUORUM", quorumlock.ErrValidity: "QL_VALIDITY",
		quorumlock.ErrCancelled: "QL_CANCELLED", quorumlock.ErrLost: "QL_LOST", quorumlock.ErrExtLimit: "QL_EXT_LIMIT",
		quorumlock.ErrInvalid: "QL_INVALID", quorumlock.ErrConnection: "QL_CONNECTION", quorumlock.ErrAuth: "QL_AUTH",
		quorumlock.ErrScript: "QL_SCRIPT", quorumlock.ErrMisconfigured: "QL_MISCONFIGURED",
		quorumlock.ErrTimeout: "QL_TIMEOUT", quorumlock.ErrInternal: "QL_INTERNAL",
	}
	for err, name := range want {
		if err.(quorumlock.Code).String() != name {
			t.Errorf("%v is %s, want %s", err, err.(quorumlock.Code).String(), name)
		}
	}
	if quorumlock.Version() == "" {
		t.Error("empty Version()")
	}
}
