package quorumlock

// #include <stdint.h>
// #include <quorumlock.h>
// quorumlock_result ql_go_set_on_lost(quorumlock_lock_options *opts, uintptr_t handle);
import "C"

import (
	"fmt"
	"math"
	"time"
	"unsafe"
)

// cbytes passes a Go string to C for the duration of one call (C copies what it keeps).
func cbytes(s string) (*C.uint8_t, C.size_t) {
	if s == "" {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(unsafe.StringData(s))), C.size_t(len(s))
}

// millis converts a duration to whole milliseconds for C; negative durations are refused.
func millis(what string, d time.Duration) (C.uint64_t, error) {
	if d < 0 {
		return 0, invalid("option", "", fmt.Sprintf("%s must not be negative (got %v)", what, d))
	}
	return C.uint64_t(d / time.Millisecond), nil
}

// check turns a setter's result into an error naming the option.
func check(r C.quorumlock_result, what string) error {
	if r != C.QL_OK {
		return invalid("option", "", what+" was refused by the C library")
	}
	return nil
}

// newConfig builds a C configuration from the node URLs and client options; the caller frees
// it. Nothing is sent: URLs are checked by quorumlock_client_new.
func newConfig(nodes []string, o *clientOptions) (*C.quorumlock_config, error) {
	var cfg *C.quorumlock_config
	if r := C.quorumlock_config_new(&cfg); r != C.QL_OK || cfg == nil {
		return nil, fromC(r, nil, "connect", "")
	}
	if err := fillConfig(cfg, nodes, o); err != nil {
		C.quorumlock_config_free(cfg)
		return nil, err
	}
	return cfg, nil
}

func fillConfig(cfg *C.quorumlock_config, nodes []string, o *clientOptions) error {
	for i, url := range nodes {
		p, n := cbytes(url)
		var cerr *C.quorumlock_error
		if r := C.quorumlock_config_add_node(cfg, p, n, &cerr); r != C.QL_OK {
			e := fromC(r, cerr, "connect", "")
			e.msg = fmt.Sprintf("node %d: %s", i, e.msg)
			return e
		}
	}
	if o.quarantine != nil {
		ms, err := millis("quarantine margin", o.quarantineWait)
		if err != nil {
			return err
		}
		if err := check(C.quorumlock_config_set_quarantine(cfg, C.uint32_t(*o.quarantine), ms), fmt.Sprintf("quarantine mode %d", *o.quarantine)); err != nil {
			return err
		}
	}
	if o.maxTTL != nil {
		ms, err := millis("max TTL", *o.maxTTL)
		if err != nil {
			return err
		}
		if err := check(C.quorumlock_config_set_max_ttl_ms(cfg, ms), "max TTL"); err != nil {
			return err
		}
	}
	if o.eviction != nil {
		if err := check(C.quorumlock_config_set_eviction_check(cfg, C.uint32_t(*o.eviction)), fmt.Sprintf("eviction check mode %d", *o.eviction)); err != nil {
			return err
		}
	}
	if o.notify != nil {
		if err := check(C.quorumlock_config_set_notify(cfg, C.bool(*o.notify)), "notify"); err != nil {
			return err
		}
	}
	if o.keyPrefix != nil {
		p, n := cbytes(*o.keyPrefix)
		if err := check(C.quorumlock_config_set_key_prefix(cfg, p, n), "key prefix"); err != nil {
			return err
		}
	}
	if o.requireQuorum != nil {
		if err := check(C.quorumlock_config_set_require_quorum(cfg, C.bool(*o.requireQuorum)), "require quorum"); err != nil {
			return err
		}
	}
	if o.connectTimeout != nil {
		ms, err := millis("connect timeout", *o.connectTimeout)
		if err != nil {
			return err
		}
		if err := check(C.quorumlock_config_set_connect_timeout_ms(cfg, ms), "connect timeout"); err != nil {
			return err
		}
	}
	if o.driftFactor != nil {
		ms, err := millis("drift constant", o.driftConstant)
		if err != nil {
			return err
		}
		if err := check(C.quorumlock_config_set_drift(cfg, C.double(*o.driftFactor), ms), "drift"); err != nil {
			return err
		}
	}
	return nil
}

// acquireOptions are the per-call settings that are not MutexOptions.
type acquireOptions struct {
	autoExtend bool
	lostHandle uintptr // a cgo.Handle for the lost callback, 0 for none
}

// newLockOptions builds C lock options; the caller frees them. Values C cannot represent
// (negative durations, tries below 1) are refused here; everything else (zero or too long an
// expiry, a short value) is checked by the engine when acquiring.
func newLockOptions(o *mutexOptions, a acquireOptions) (*C.quorumlock_lock_options, error) {
	var opts *C.quorumlock_lock_options
	if r := C.quorumlock_lock_options_new(&opts); r != C.QL_OK || opts == nil {
		return nil, fromC(r, nil, "option", "")
	}
	if err := fillLockOptions(opts, o, a); err != nil {
		C.quorumlock_lock_options_free(opts)
		return nil, err
	}
	return opts, nil
}

func fillLockOptions(opts *C.quorumlock_lock_options, o *mutexOptions, a acquireOptions) error {
	if o.expirySet {
		if o.expiry < 0 {
			return invalid("option", "", fmt.Sprintf("expiry must be positive (got %v)", o.expiry))
		}
		// Whole milliseconds, as redsync; 0 (an expiry below 1 ms) is refused by the engine.
		if err := check(C.quorumlock_lock_options_set_ttl_ms(opts, C.uint64_t(o.expiry/time.Millisecond)), "expiry"); err != nil {
			return err
		}
	}
	if o.tries != nil {
		if *o.tries < 1 || uint64(*o.tries-1) > math.MaxUint32 {
			return invalid("option", "", fmt.Sprintf("tries must be between 1 and 2^32 (got %d)", *o.tries))
		}
		if err := check(C.quorumlock_lock_options_set_retry_count(opts, C.uint32_t(*o.tries-1)), "tries"); err != nil {
			return err
		}
	}
	if o.delay != nil || o.jitter != nil {
		delay, jitter := 100*time.Millisecond, 200*time.Millisecond
		if o.delay != nil {
			delay = *o.delay
		}
		if o.jitter != nil {
			jitter = *o.jitter
		}
		d, err := millis("retry delay", delay)
		if err != nil {
			return err
		}
		j, err := millis("retry jitter", jitter)
		if err != nil {
			return err
		}
		if err := check(C.quorumlock_lock_options_set_retry_delay_ms(opts, d, j), "retry delay"); err != nil {
			return err
		}
	}
	if o.minValidity != nil {
		ms, err := millis("min validity", *o.minValidity)
		if err != nil {
			return err
		}
		if err := check(C.quorumlock_lock_options_set_min_validity_ms(opts, ms), "min validity"); err != nil {
			return err
		}
	}
	if o.nodeTimeout != nil {
		ms, err := millis("node timeout", *o.nodeTimeout)
		if err != nil {
			return err
		}
		if err := check(C.quorumlock_lock_options_set_node_timeout_ms(opts, ms), "node timeout"); err != nil {
			return err
		}
	}
	if o.fenced {
		ms, err := millis("fencing counter TTL", o.counterTTL)
		if err != nil {
			return err
		}
		if err := check(C.quorumlock_lock_options_set_fenced(opts, true, ms), "fencing"); err != nil {
			return err
		}
	}
	if o.value != nil {
		p, n := cbytes(*o.value)
		var cerr *C.quorumlock_error
		if r := C.quorumlock_lock_options_set_value(opts, p, n, &cerr); r != C.QL_OK {
			return fromC(r, cerr, "option", "")
		}
	}
	if a.autoExtend {
		ms, err := millis("extend interval", o.extendInterval)
		if err != nil {
			return err
		}
		if err := check(C.quorumlock_lock_options_set_auto_extend(opts, true, ms), "auto-extension"); err != nil {
			return err
		}
		if o.maxExtensions < 0 || uint64(o.maxExtensions) > math.MaxUint32 {
			return invalid("option", "", fmt.Sprintf("max extensions must be between 0 and 2^32-1 (got %d)", o.maxExtensions))
		}
		hold, err := millis("max hold", o.maxHold)
		if err != nil {
			return err
		}
		if err := check(C.quorumlock_lock_options_set_limits(opts, C.uint32_t(o.maxExtensions), hold), "extension limits"); err != nil {
			return err
		}
	}
	if a.lostHandle != 0 {
		if err := check(C.ql_go_set_on_lost(opts, C.uintptr_t(a.lostHandle)), "lost callback"); err != nil {
			return err
		}
	}
	return nil
}

// freeLockOptions and freeConfig free what newLockOptions and newConfig built (for tests,
// which cannot use cgo).
func freeLockOptions(o *C.quorumlock_lock_options) { C.quorumlock_lock_options_free(o) }
func freeConfig(c *C.quorumlock_config)            { C.quorumlock_config_free(c) }
