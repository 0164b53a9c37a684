package quorumlock

import (
	"context"
	"errors"
	"sync"
)

// errReleased is the cause of a Hold context ended by its unlock function.
var errReleased = errors.New("quorumlock: lock released")

// Hold acquires the lock as LockContext does and keeps it alive in the background (every
// expiry / 3 unless WithExtendInterval says otherwise, within WithExtendLimits). The returned
// context is cancelled when the lock is lost (its keys expired, vanished or were taken over,
// or an extension cap was reached), when ctx ends, or when unlock is called;
// context.Cause(held) is then an *Error matching ErrLost for a loss. unlock stops the
// extension and releases the lock; calling it again does nothing.
//
//	held, unlock, err := m.Hold(ctx)
//	if err != nil {
//		return err
//	}
//	defer unlock()
//	return work(held) // work stops when held is done
//
// When ctx ends the lock stays held until unlock: the context is the signal, unlock the act.
// On error, held is already cancelled and unlock does nothing.
func (m *Mutex) Hold(ctx context.Context) (held context.Context, unlock func() error, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	held, cancel := context.WithCancelCause(ctx)
	if m == nil {
		err := invalid("acquire", "", "nil *Mutex")
		cancel(err)
		return held, func() error { return nil }, err
	}
	st := &lostState{resource: m.name, cancel: cancel}
	if err := m.acquire(ctx, false, acquireOptions{autoExtend: true}, st); err != nil {
		cancel(err)
		return held, func() error { return nil }, err
	}
	var once sync.Once
	var unlockErr error
	unlock = func() error {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.lost == st { // still this Hold's lock
				_, unlockErr = m.unlockLocked()
			}
			cancel(errReleased)
		})
		return unlockErr
	}
	return held, unlock, nil
}
