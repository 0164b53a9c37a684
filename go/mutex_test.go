package quorumlock_test

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	quorumlock "example.invalid/quorumlock/go"
)

func TestLockUnlock(t *testing.T) {
	c := connect(t)
	name := uniqueName(t)
	m := c.NewMutex(name, quorumlock.WithExpiry(5*time.Second), slow)
	if err := m.Lock(); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if v := m.Value(); len(v) != 40 {
		t.Errorf("Value() = %q, want 40 hex characters", v)
	}
	if left := time.Until(m.Until()); left <= 4*time.Second || left > 5*time.Second {
		t.Errorf("Until() is %v away, want within (4s, 5s]", left)
	}
	if _, err := m.Token(); !errors.Is(err, quorumlock.ErrInvalid) {
		t.Errorf("Token() of an unfenced lock: %v, want ErrInvalid", err)
	}
	if ok, err := m.Extend(); !ok || err != nil {
		t.Errorf("Extend() = %v, %v", ok, err)
	}
	// A call returns at the quorum-th reply: node 0's write may still be in flight.
	got := command(t, 0, "GET", key(name))
	for end := time.Now().Add(2 * time.Second); got != "$40" && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
		got = command(t, 0, "GET", key(name))
	}
	if got != "$40" {
		t.Errorf("node 0 GET %s: %q, want a 40-byte value", key(name), got)
	}

	other := c.NewMutex(name, slow)
	err := other.TryLock()
	if !errors.Is(err, quorumlock.ErrBusy) {
		t.Fatalf("TryLock of a held lock: %v, want ErrBusy", err)
	}
	var qe *quorumlock.Error
	if !errors.As(err, &qe) {
		t.Fatalf("errors.As(%T) failed", err)
	}
	nodes := qe.Nodes()
	if len(nodes) != 5 {
		t.Fatalf("Nodes() has %d entries, want 5", len(nodes))
	}
	held := 0
	for i, n := range nodes {
		// The engine decides at the quorum: later replies may still be pending.
		switch {
		case n.Index != i || n.Address == "":
			t.Errorf("node report %d: %+v", i, n)
		case n.Kind.String() == "HeldByOther" && n.Latency >= 0:
			held++
		case n.Kind.String() != "Pending":
			t.Errorf("node report %d: %+v (%s)", i, n, n.Kind)
		}
	}
	if held < 3 {
		t.Errorf("%d nodes report HeldByOther, want a quorum", held)
	}
	if !strings.Contains(err.Error(), "QL_BUSY") || !strings.Contains(err.Error(), nodes[0].Address) {
		t.Errorf("Error() does not name the code and the nodes: %s", err)
	}
	t.Logf("busy error: %s", err)

	if held, err := m.Unlock(); !held || err != nil {
		t.Fatalf("Unlock() = %v, %v", held, err)
	}
	if got := command(t, 0, "EXISTS", key(name)); got != ":0" {
		t.Errorf("key left after Unlock: EXISTS = %q", got)
	}
	if _, err := m.Unlock(); !errors.Is(err, quorumlock.ErrInvalid) {
		t.Errorf("second Unlock: %v, want ErrInvalid", err)
	}
	if err := other.TryLock(); err != nil {
		t.Fatalf("TryLock after Unlock: %v", err)
	}
	if _, err := other.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestFencingTokensIncrease(t *testing.T) {
	c := connect(t)
	name := uniqueName(t)
	var last uint64
	for i := 0; i < 3; i++ {
		m := c.NewMutex(name, quorumlock.WithFencing(), slow)
		if err := m.Lock(); err != nil {
			t.Fatal(err)
		}
		tok, err := m.Token()
		if err != nil || tok <= last {
			t.Fatalf("token %d: %d, %v (previous %d)", i, tok, err, last)
		}
		last = tok
		if _, err := m.Unlock(); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(quorumlock.FenceCheckScript(), "redis.call") {
		t.Error("FenceCheckScript() is not a Lua script")
	}
}

// window is the time one goroutine held the lock, on this process's monotonic clock.
type window struct {
	from, to time.Time
	who      int
}

func TestContentionNoOverlap(t *testing.T) {
	clients := []*quorumlock.Client{connect(t), connect(t)}
	name := uniqueName(t)
	const workers, rounds = 8, 6
	var mu sync.Mutex
	var windows []window
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			m := clients[w%2].NewMutex(name, quorumlock.WithExpiry(3*time.Second), slow,
				quorumlock.WithTries(1000), quorumlock.WithRetryDelay(5*time.Millisecond),
				quorumlock.WithRetryJitter(10*time.Millisecond))
			for r := 0; r < rounds; r++ {
				if err := m.Lock(); err != nil {
					t.Errorf("worker %d: Lock: %v", w, err)
					return
				}
				from, until := time.Now(), m.Until()
				time.Sleep(2 * time.Millisecond)
				to := time.Now()
				if to.After(until) {
					to = until
				}
				if _, err := m.Unlock(); err != nil {
					t.Errorf("worker %d: Unlock: %v", w, err)
					return
				}
				mu.Lock()
				windows = append(windows, window{from, to, w})
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	if len(windows) != workers*rounds {
		t.Fatalf("%d acquisitions, want %d", len(windows), workers*rounds)
	}
	if err := overlap(windows); err != "" {
		t.Fatal(err)
	}
}

// overlap returns a description of the first two windows that overlap, or "".
func overlap(ws []window) string {
	sort.Slice(ws, func(i, j int) bool { return ws[i].from.Before(ws[j].from) })
	for i := 1; i < len(ws); i++ {
		if ws[i].from.Before(ws[i-1].to) {
			return "worker " + itoa(ws[i].who) + " acquired " + ws[i-1].to.Sub(ws[i].from).String() +
				" before worker " + itoa(ws[i-1].who) + " released"
		}
	}
	return ""
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestOverlapCheckCatchesOverlap(t *testing.T) {
	now := time.Now()
	ws := []window{{now, now.Add(10 * time.Millisecond), 0}, {now.Add(5 * time.Millisecond), now.Add(20 * time.Millisecond), 1}}
	if overlap(ws) == "" {
		t.Fatal("overlapping windows passed the check")
	}
	ws = []window{{now, now.Add(5 * time.Millisecond), 0}, {now.Add(5 * time.Millisecond), now.Add(9 * time.Millisecond), 1}}
	if s := overlap(ws); s != "" {
		t.Fatalf("adjacent windows flagged: %s", s)
	}
}

func TestLockContextCancelsWaitingAcquire(t *testing.T) {
	c := connect(t)
	name := uniqueName(t)
	holder := c.NewMutex(name, quorumlock.WithExpiry(10*time.Second), slow)
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	waiter := c.NewMutex(name, slow, quorumlock.WithTries(100000), quorumlock.WithRetryDelay(50*time.Millisecond))

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	err := waiter.LockContext(ctx)
	if !errors.Is(err, quorumlock.ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("LockContext after cancel: %v, want ErrCancelled and context.Canceled", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("LockContext returned %v after the cancel, want promptly", d)
	}

	ctx, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if err := waiter.LockContext(ctx); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, quorumlock.ErrCancelled) {
		t.Fatalf("LockContext past its deadline: %v, want ErrCancelled and DeadlineExceeded", err)
	}
	if err := waiter.LockContext(ctx); !errors.Is(err, quorumlock.ErrCancelled) {
		t.Fatalf("LockContext with an ended context: %v, want ErrCancelled", err)
	}

	// The cancelled waiter left nothing behind: once the holder releases, a try succeeds.
	if _, err := holder.Unlock(); err != nil {
		t.Fatal(err)
	}
	after := c.NewMutex(name, slow)
	if err := after.TryLock(); err != nil {
		t.Fatalf("TryLock after the cancelled waiters: %v", err)
	}
	_, _ = after.Unlock()
}

func TestHoldCancelsOnLoss(t *testing.T) {
	c := connect(t)
	name := uniqueName(t)
	m := c.NewMutex(name, quorumlock.WithExpiry(2*time.Second), quorumlock.WithExtendInterval(100*time.Millisecond), slow)
	held, unlock, err := m.Hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()

	// Kept alive past its expiry.
	time.Sleep(2500 * time.Millisecond)
	if held.Err() != nil {
		t.Fatalf("Hold context ended while extended: %v", context.Cause(held))
	}
	if left := time.Until(m.Until()); left < time.Second {
		t.Fatalf("validity left after 2.5 s of auto-extension: %v", left)
	}

	// Delete the key on a majority: the next extension fails and the context is cancelled.
	for i := 0; i < 3; i++ {
		if got := command(t, i, "DEL", key(name)); got != ":1" {
			t.Fatalf("DEL on node %d: %q", i, got)
		}
	}
	select {
	case <-held.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Hold context not cancelled 5 s after the keys were deleted on 3 of 5 nodes")
	}
	cause := context.Cause(held)
	var qe *quorumlock.Error
	if !errors.Is(cause, quorumlock.ErrLost) || !errors.As(cause, &qe) {
		t.Fatalf("cause %v, want ErrLost", cause)
	}
	if r := qe.LostReason(); r != quorumlock.LostExpired && r != quorumlock.LostTaken {
		t.Errorf("lost reason %v", r)
	}
	t.Logf("lost: %v", cause)
	if ok, err := m.Extend(); ok || err == nil {
		t.Errorf("Extend of a lost lock = %v, %v; want an error", ok, err)
	}
	if err := unlock(); err != nil {
		t.Errorf("unlock after loss: %v", err)
	}
}

func TestHoldUnlockEndsContext(t *testing.T) {
	c := connect(t)
	m := c.NewMutex(uniqueName(t), quorumlock.WithExpiry(3*time.Second), slow)
	held, unlock, err := m.Hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	<-held.Done()
	if errors.Is(context.Cause(held), quorumlock.ErrLost) {
		t.Fatal("a released lock reported a loss")
	}
	if err := unlock(); err != nil {
		t.Fatalf("second unlock: %v", err)
	}
	if err := m.TryLock(); err != nil {
		t.Fatalf("TryLock after unlock: %v", err)
	}
	_, _ = m.Unlock()
}

func TestWarningsReachTheFunc(t *testing.T) {
	got := make(chan quorumlock.Warning, 16)
	c := connect(t, quorumlock.WithWarningFunc(func(w quorumlock.Warning) { got <- w }))
	if err := c.NewMutex(uniqueName(t), slow).TryLock(); err != nil {
		t.Fatal(err)
	}
	select {
	case w := <-got:
		if w.Code != "QL_W_NOT_DURABLE" || w.Node < 0 || w.Message == "" {
			t.Errorf("warning %+v", w)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no warning for nodes without durable writes and the quarantine off")
	}
}

// syncBuffer is a bytes.Buffer safe for the warning goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestWarningsReachSlog(t *testing.T) {
	var buf syncBuffer
	c := connect(t, quorumlock.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	if err := c.NewMutex(uniqueName(t), slow).TryLock(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(buf.String(), "code=QL_W_NOT_DURABLE") {
		if time.Now().After(deadline) {
			t.Fatalf("no QL_W_NOT_DURABLE in the log: %q", buf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(buf.String(), "level=WARN") {
		t.Errorf("not logged at Warn: %q", buf.String())
	}
}
