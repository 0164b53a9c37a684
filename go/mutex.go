package quorumlock

// #include <stdint.h>
// #include <quorumlock.h>
import "C"

import (
	"context"
	"runtime/cgo"
	"sync"
	"time"
)

// defaultExpiry is the engine's default TTL (docs/REDLOCK.md §11), used by Extend when no
// WithExpiry was given: the C ABI's extend takes the TTL explicitly.
const defaultExpiry = 10 * time.Second

// Mutex is a distributed lock on one name, shaped like redsync's Mutex: one lock at a time,
// acquired by Lock, LockContext, TryLock or Hold and given back by Unlock. Its methods are safe
// to call from several goroutines, but like redsync's it holds one lock: give each contender
// its own Mutex.
type Mutex struct {
	client *Client
	name   string
	opts   mutexOptions

	mu     sync.Mutex // guards the fields below and calls on lock
	lock   *C.quorumlock_lock
	lost   *lostState // the Hold context of lock, or nil
	handle cgo.Handle // the handle given to C for lost, 0 when none
	value  string
	token  uint64
	fenced bool
}

// NewMutex returns a mutex on name. Invalid options are reported by the first Lock.
func (c *Client) NewMutex(name string, opts ...MutexOption) *Mutex {
	m := &Mutex{client: c, name: name}
	for _, opt := range opts {
		if opt != nil {
			opt(&m.opts)
		}
	}
	return m
}

// Name returns the mutex's name.
func (m *Mutex) Name() string {
	if m == nil {
		return ""
	}
	return m.name
}

// Lock acquires the lock, retrying as WithTries and WithRetryDelay say. It fails with ErrBusy
// when other owners kept it, ErrQuorum when too few nodes answered; errors.As gives the
// per-node report.
func (m *Mutex) Lock() error { return m.LockContext(context.Background()) }

// LockContext is Lock; when ctx ends while it waits, the C acquisition is cancelled (its keys
// are removed in the background) and the error matches ErrCancelled and ctx.Err().
func (m *Mutex) LockContext(ctx context.Context) error {
	return m.acquire(ctx, false, acquireOptions{}, nil)
}

// TryLock makes one attempt: ErrBusy at once when another owner holds the lock.
func (m *Mutex) TryLock() error { return m.TryLockContext(context.Background()) }

// TryLockContext is TryLock; a single attempt is bounded by the node timeout, so ctx is only
// checked before it starts.
func (m *Mutex) TryLockContext(ctx context.Context) error {
	return m.acquire(ctx, true, acquireOptions{}, nil)
}

// acquire runs one C acquisition and, on success, makes the new lock the mutex's lock. lost,
// when not nil, is the Hold state the lost callback reaches.
func (m *Mutex) acquire(ctx context.Context, try bool, a acquireOptions, lost *lostState) error {
	op := "acquire"
	if try {
		op = "try-acquire"
	}
	if m == nil {
		return invalid(op, "", "nil *Mutex")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return &Error{Code: Code(C.QL_CANCELLED), Op: op, Resource: m.name, msg: "the context ended before the first attempt", cause: err}
	}
	var handle cgo.Handle
	if lost != nil {
		handle = cgo.NewHandle(lost)
		a.lostHandle = uintptr(handle)
	}
	opts, err := newLockOptions(&m.opts, a)
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Op, e.Resource = op, m.name
		}
		if handle != 0 {
			handle.Delete()
		}
		return err
	}
	defer C.quorumlock_lock_options_free(opts)

	var cancel *C.quorumlock_cancel
	if !try && ctx.Done() != nil {
		if r := C.quorumlock_cancel_new(&cancel); r != C.QL_OK {
			return fromC(r, nil, op, m.name)
		}
		fired := make(chan struct{})
		stop := context.AfterFunc(ctx, func() {
			C.quorumlock_cancel_trigger(cancel)
			close(fired)
		})
		defer func() {
			if !stop() {
				<-fired // the trigger started: let it finish before freeing the handle
			}
			C.quorumlock_cancel_free(cancel)
		}()
	}

	var lock *C.quorumlock_lock
	err = m.client.use(op, m.name, func(client *C.quorumlock_client) error {
		p, n := cbytes(m.name)
		var cerr *C.quorumlock_error
		var r C.quorumlock_result
		if try {
			r = C.quorumlock_client_try_acquire(client, p, n, opts, &lock, &cerr)
		} else {
			r = C.quorumlock_client_acquire(client, p, n, opts, cancel, &lock, &cerr)
		}
		if r != C.QL_OK {
			e := fromC(r, cerr, op, m.name)
			if e.Code == Code(C.QL_CANCELLED) {
				e.cause = ctx.Err()
			}
			return e
		}
		return nil
	})
	if err != nil {
		if handle != 0 {
			handle.Delete()
		}
		return err
	}
	m.set(lock, lost, handle)
	return nil
}

// set makes lock the mutex's lock, freeing a previous one (released in the background if it
// was somehow still held).
func (m *Mutex) set(lock *C.quorumlock_lock, lost *lostState, handle cgo.Handle) {
	var buf [64]C.char
	var n C.size_t
	value := ""
	if C.quorumlock_lock_value(lock, &buf[0], C.size_t(len(buf)), &n) == C.QL_OK && int(n) < len(buf) {
		value = C.GoStringN(&buf[0], C.int(n))
	}
	var token C.uint64_t
	fenced := C.quorumlock_lock_token(lock, &token) == C.QL_OK

	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropLocked(false)
	m.lock, m.lost, m.handle = lock, lost, handle
	m.value, m.token, m.fenced = value, uint64(token), fenced
}

// dropLocked frees the current lock (C waits for a lost callback in progress and prevents
// later ones), then deletes its handle and ends its Hold context. m.mu is held.
func (m *Mutex) dropLocked(released bool) {
	if m.lock == nil {
		return
	}
	C.quorumlock_lock_free(m.lock)
	m.lock = nil
	if m.handle != 0 {
		m.handle.Delete()
		m.handle = 0
	}
	if m.lost != nil {
		if released {
			m.lost.cancel(errReleased)
		} else {
			m.lost.cancel(nil)
		}
		m.lost = nil
	}
}

// Unlock releases the lock on every node and reports whether a quorum still held it (false,
// with a nil error, when it had already expired or been lost: nothing to undo). Without a
// lock it returns ErrInvalid.
func (m *Mutex) Unlock() (bool, error) {
	if m == nil {
		return false, invalid("release", "", "nil *Mutex")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.unlockLocked()
}

// unlockLocked releases and frees the current lock; m.mu is held.
func (m *Mutex) unlockLocked() (bool, error) {
	if m.lock == nil {
		return false, invalid("release", m.name, "the mutex is not locked")
	}
	var held C.bool
	var cerr *C.quorumlock_error
	r := C.quorumlock_lock_release(m.lock, &held, &cerr)
	m.dropLocked(true)
	if r != C.QL_OK {
		return false, fromC(r, cerr, "release", m.name)
	}
	return bool(held), nil
}

// Extend sets the lock's deadline to the expiry from now on a quorum of nodes. An expired lock
// is never revived (ErrLost); a failed extend keeps the previous deadline.
func (m *Mutex) Extend() (bool, error) {
	if m == nil {
		return false, invalid("extend", "", "nil *Mutex")
	}
	ttl := defaultExpiry
	if m.opts.expirySet {
		ttl = m.opts.expiry
	}
	ms, err := millis("expiry", ttl)
	if err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lock == nil {
		return false, invalid("extend", m.name, "the mutex is not locked")
	}
	var cerr *C.quorumlock_error
	if r := C.quorumlock_lock_extend(m.lock, ms, &cerr); r != C.QL_OK {
		return false, fromC(r, cerr, "extend", m.name)
	}
	return true, nil
}

// Until returns when the lock's validity ends (on the monotonic clock of time.Now): act on the
// protected resource only before it. It is the zero time without a lock, and a time not after
// now once the lock expired, was lost or released.
func (m *Mutex) Until() time.Time {
	if m == nil {
		return time.Time{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lock == nil {
		return time.Time{}
	}
	now := time.Now()
	return now.Add(time.Duration(C.quorumlock_lock_remaining_ms(m.lock)) * time.Millisecond)
}

// Value returns the value of the last lock acquired (40 hex characters unless WithValue gave
// one); "" before the first.
func (m *Mutex) Value() string {
	if m == nil {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.value
}

// Token returns the fencing token of the last lock acquired with WithFencing; ErrInvalid when
// it was not fenced or there was none.
func (m *Mutex) Token() (uint64, error) {
	if m == nil {
		return 0, invalid("token", "", "nil *Mutex")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.fenced {
		return 0, invalid("token", m.name, "the lock was not acquired with WithFencing")
	}
	return m.token, nil
}

// FenceCheckScript returns the Lua source of the fence check for data kept in Redis:
// EVAL <script> 1 <fence key> <token> returns 1 and stores the token when it is at least the
// highest seen, 0 for a stale holder.
func FenceCheckScript() string { return C.GoString(C.quorumlock_fence_check_script()) }
