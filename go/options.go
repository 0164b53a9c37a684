package quorumlock

import (
	"log/slog"
	"time"
)

// Quarantine is the restart quarantine mode (QL_QUARANTINE_* in the C header).
type Quarantine uint32

// Restart quarantine modes; see docs/SAFETY.md.
const (
	// QuarantineOn keeps a node without durable writes out until it has been up for max TTL
	// plus the margin (the default).
	QuarantineOn Quarantine = 0
	// QuarantineStrict is QuarantineOn, and a node that refuses INFO is never counted.
	QuarantineStrict Quarantine = 1
	// QuarantineOff does no checks: for nodes whose operators delay restarts, and for tests.
	QuarantineOff Quarantine = 2
)

// EvictionCheck says what to do with a node whose eviction policy can remove lock keys
// (QL_EVICTION_* in the C header).
type EvictionCheck uint32

// Eviction-policy check modes.
const (
	EvictionRefuse EvictionCheck = 0 // exclude the node (the default)
	EvictionWarn   EvictionCheck = 1 // count the node and warn
	EvictionOff    EvictionCheck = 2 // skip the check
)

// Warning is one warning of a client: a stable code (QL_W_NOT_DURABLE, ...), the node index
// (-1 when it is about no one node) and the message.
type Warning struct {
	Code    string
	Node    int
	Message string
}

// ClientOption configures Connect.
type ClientOption func(*clientOptions)

type clientOptions struct {
	quarantine     *Quarantine
	quarantineWait time.Duration
	maxTTL         *time.Duration
	eviction       *EvictionCheck
	notify         *bool
	keyPrefix      *string
	requireQuorum  *bool
	connectTimeout *time.Duration
	driftFactor    *float64
	driftConstant  time.Duration
	onWarning      func(Warning)
}

// WithQuarantine sets the restart quarantine mode and, when margin is not 0, how long beyond
// the max TTL a fresh node without durable writes stays out (default 5 s).
func WithQuarantine(mode Quarantine, margin time.Duration) ClientOption {
	return func(o *clientOptions) { o.quarantine, o.quarantineWait = &mode, margin }
}

// WithMaxTTL sets the largest accepted expiry (default 60 s); every client of the same nodes
// must use the same value.
func WithMaxTTL(d time.Duration) ClientOption {
	return func(o *clientOptions) { o.maxTTL = &d }
}

// WithEvictionCheck sets what to do with nodes whose eviction policy can remove lock keys.
func WithEvictionCheck(mode EvictionCheck) ClientOption {
	return func(o *clientOptions) { o.eviction = &mode }
}

// WithNotify turns release notification on or off (default on): a waiting Lock wakes when the
// holder releases instead of after its retry delay.
func WithNotify(on bool) ClientOption {
	return func(o *clientOptions) { o.notify = &on }
}

// WithKeyPrefix sets the key prefix (default "quorumlock:"); keys are <prefix>{<name>}.
func WithKeyPrefix(prefix string) ClientOption {
	return func(o *clientOptions) { o.keyPrefix = &prefix }
}

// WithRequireQuorum makes Connect fail unless a quorum of nodes connected (default off: nodes
// join as they come up).
func WithRequireQuorum(on bool) ClientOption {
	return func(o *clientOptions) { o.requireQuorum = &on }
}

// WithConnectTimeout sets how long Connect waits for the first connections (default 1 s).
func WithConnectTimeout(d time.Duration) ClientOption {
	return func(o *clientOptions) { o.connectTimeout = &d }
}

// WithDrift sets the clock drift allowance expiry*factor + constant (defaults 0.01 and 2 ms).
// It replaces redsync's per-mutex WithDriftFactor: here it is a client setting.
func WithDrift(factor float64, constant time.Duration) ClientOption {
	return func(o *clientOptions) { o.driftFactor, o.driftConstant = &factor, constant }
}

// WithWarningFunc calls f with each warning of the client, once per kind and node. f runs on
// its own goroutine, one warning at a time.
func WithWarningFunc(f func(Warning)) ClientOption {
	return func(o *clientOptions) { o.onWarning = f }
}

// WithLogger logs each warning of the client on l at level Warn, with attributes code and
// node.
func WithLogger(l *slog.Logger) ClientOption {
	return WithWarningFunc(func(w Warning) {
		if l != nil {
			l.Warn(w.Message, "code", w.Code, "node", w.Node)
		}
	})
}

// MutexOption configures NewMutex.
type MutexOption func(*mutexOptions)

type mutexOptions struct {
	expiry         time.Duration
	expirySet      bool
	tries          *int
	delay, jitter  *time.Duration
	minValidity    *time.Duration
	nodeTimeout    *time.Duration
	fenced         bool
	counterTTL     time.Duration
	value          *string
	extendInterval time.Duration
	maxExtensions  int
	maxHold        time.Duration
}

// WithExpiry sets how long the lock lives without an extension (default 10 s), in whole
// milliseconds. It must be between 1 ms and the client's max TTL.
func WithExpiry(d time.Duration) MutexOption {
	return func(o *mutexOptions) { o.expiry, o.expirySet = d, true }
}

// WithTries sets how many attempts Lock makes, the first included (default 4: the first and 3
// retries). TryLock always makes one.
func WithTries(n int) MutexOption {
	return func(o *mutexOptions) { o.tries = &n }
}

// WithRetryDelay sets the delay between attempts (default 100 ms plus a random part below
// 200 ms). The random part is 0 unless WithRetryJitter sets it.
func WithRetryDelay(d time.Duration) MutexOption {
	return func(o *mutexOptions) {
		o.delay = &d
		if o.jitter == nil {
			var zero time.Duration
			o.jitter = &zero
		}
	}
}

// WithRetryJitter sets the upper bound of the random part added to each retry delay.
func WithRetryJitter(d time.Duration) MutexOption {
	return func(o *mutexOptions) { o.jitter = &d }
}

// WithMinValidity sets the validity an attempt must leave to succeed (default expiry / 10).
func WithMinValidity(d time.Duration) MutexOption {
	return func(o *mutexOptions) { o.minValidity = &d }
}

// WithNodeTimeout sets the deadline of each request to a node (default expiry / 200, clamped
// to 5..50 ms). It replaces redsync's WithTimeoutFactor.
func WithNodeTimeout(d time.Duration) MutexOption {
	return func(o *mutexOptions) { o.nodeTimeout = &d }
}

// WithFencing makes the lock carry a fencing token (Mutex.Token), strictly greater than every
// token before it for that name.
func WithFencing() MutexOption {
	return func(o *mutexOptions) { o.fenced = true }
}

// WithFencingCounterTTL lets the per-name token counters expire after d without writes (0:
// never, the default; otherwise at least max TTL + quarantine margin). It implies WithFencing.
func WithFencingCounterTTL(d time.Duration) MutexOption {
	return func(o *mutexOptions) { o.fenced, o.counterTTL = true, d }
}

// WithValue uses v (at least 16 printable ASCII characters) as the lock value instead of a
// fresh random one per attempt. Generated values are safer; use this only to share a lock with
// a program that knows the value.
func WithValue(v string) MutexOption {
	return func(o *mutexOptions) { o.value = &v }
}

// WithExtendInterval sets how often Hold extends the lock (default expiry / 3).
func WithExtendInterval(d time.Duration) MutexOption {
	return func(o *mutexOptions) { o.extendInterval = d }
}

// WithExtendLimits caps Hold's auto-extension: at most max extensions (0: unlimited) and no
// deadline past maxHold after acquisition (0: unlimited). At a cap, the lock is lost when its
// validity runs out and the Hold context is cancelled.
func WithExtendLimits(max int, maxHold time.Duration) MutexOption {
	return func(o *mutexOptions) { o.maxExtensions, o.maxHold = max, maxHold }
}
