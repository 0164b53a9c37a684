package quorumlock

import (
	"errors"
	"testing"
	"time"
)

// FuzzOptions feeds arbitrary option values through the conversion to C options and
// configurations (nothing is sent to any node). Every input must give either options C
// accepted or an *Error matching ErrInvalid; never a panic or a crash in C.
func FuzzOptions(f *testing.F) {
	f.Add(int64(10*time.Second), 3, int64(100*time.Millisecond), int64(-1), "value-of-sixteen-chars", true, "redis://127.0.0.1:6379", "quorumlock:", uint32(0), 0.01)
	f.Add(int64(0), 0, int64(-1), int64(0), "", false, "", "", uint32(7), -1.0)
	f.Add(int64(-5), -1, int64(1<<62), int64(1<<40), "\xff\x00", true, "redis+cluster://h:1,h:2", "\xff", uint32(2), 0.6)
	f.Fuzz(func(t *testing.T, expiry int64, tries int, delay, jitter int64, value string, fenced bool, url, prefix string, mode uint32, drift float64) {
		o := mutexOptions{}
		for _, opt := range []MutexOption{
			WithExpiry(time.Duration(expiry)), WithTries(tries), WithRetryDelay(time.Duration(delay)),
			WithMinValidity(time.Duration(jitter)), WithNodeTimeout(time.Duration(delay)),
			WithExtendInterval(time.Duration(jitter)), WithExtendLimits(tries, time.Duration(expiry)),
		} {
			opt(&o)
		}
		if jitter >= 0 {
			WithRetryJitter(time.Duration(jitter))(&o)
		}
		if fenced {
			WithFencingCounterTTL(time.Duration(jitter))(&o)
		}
		if value != "" {
			WithValue(value)(&o)
		}
		for _, auto := range []bool{false, true} {
			opts, err := newLockOptions(&o, acquireOptions{autoExtend: auto})
			checkResult(t, err)
			if err == nil {
				freeLockOptions(opts)
			}
		}

		co := clientOptions{}
		for _, opt := range []ClientOption{
			WithQuarantine(Quarantine(mode), time.Duration(delay)), WithMaxTTL(time.Duration(expiry)),
			WithEvictionCheck(EvictionCheck(mode)), WithNotify(fenced), WithKeyPrefix(prefix),
			WithRequireQuorum(fenced), WithConnectTimeout(time.Duration(jitter)),
			WithDrift(drift, time.Duration(jitter)),
		} {
			opt(&co)
		}
		cfg, err := newConfig([]string{url, prefix}, &co)
		checkResult(t, err)
		if err == nil {
			freeConfig(cfg)
		}
	})
}

func checkResult(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var qe *Error
	if !errors.As(err, &qe) || !errors.Is(err, ErrInvalid) || qe.Error() == "" {
		t.Fatalf("error %v (%T), want an *Error matching ErrInvalid", err, err)
	}
}
