package quorumlock

// #include <quorumlock.h>
import "C"

import (
	"fmt"
	"strings"
	"time"
	"unsafe"
)

// Code is a result code of the C ABI (QL_OK, QL_BUSY, ...). Numbers and names are those of
// the C header and never change. A Code is an error, so each sentinel below is one.
type Code uint32

// The sentinel errors, one per C result code: test for them with errors.Is.
var (
	ErrBusy          error = Code(C.QL_BUSY)          // other owners hold the resource
	ErrQuorum        error = Code(C.QL_QUORUM)        // node failures blocked the quorum
	ErrValidity      error = Code(C.QL_VALIDITY)      // a quorum was reached with too little validity left
	ErrCancelled     error = Code(C.QL_CANCELLED)     // the caller cancelled (a context ended)
	ErrLost          error = Code(C.QL_LOST)          // the held lock expired or was taken over
	ErrExtLimit      error = Code(C.QL_EXT_LIMIT)     // an extension cap was reached
	ErrInvalid       error = Code(C.QL_INVALID)       // bad input, configuration or state; nothing was sent
	ErrConnection    error = Code(C.QL_CONNECTION)    // fewer than a quorum of nodes could be reached
	ErrAuth          error = Code(C.QL_AUTH)          // credentials or ACL refused
	ErrScript        error = Code(C.QL_SCRIPT)        // scripting unavailable
	ErrMisconfigured error = Code(C.QL_MISCONFIGURED) // unsafe node settings
	ErrTimeout       error = Code(C.QL_TIMEOUT)       // no reply in time
	ErrInternal      error = Code(C.QL_INTERNAL)      // a bug: a panic was caught in the engine
)

// String returns the C name of the code ("QL_BUSY"), or "QL_UNKNOWN".
func (c Code) String() string { return C.GoString(C.quorumlock_result_name(C.uint32_t(c))) }

// Error returns "quorumlock: " and the C name of the code.
func (c Code) Error() string { return "quorumlock: " + c.String() }

// NodeKind says what happened on one node (QL_NODE_* in the C header).
type NodeKind uint32

// String returns the C name of the kind ("HeldByOther"), or "Unknown".
func (k NodeKind) String() string { return C.GoString(C.quorumlock_node_kind_name(C.uint32_t(k))) }

// LostReason says why a held lock was lost (QL_LOST_* in the C header).
type LostReason uint32

// The reasons a lock is lost.
const (
	LostNone           LostReason = C.QL_LOST_NONE            // not a loss
	LostExpired        LostReason = C.QL_LOST_EXPIRED         // validity ran out, or the keys vanished
	LostTaken          LostReason = C.QL_LOST_TAKEN           // another owner holds the keys now
	LostExtensionLimit LostReason = C.QL_LOST_EXTENSION_LIMIT // auto-extension stopped at a cap
)

// String returns a short name of the reason.
func (r LostReason) String() string {
	switch r {
	case LostNone:
		return "none"
	case LostExpired:
		return "expired"
	case LostTaken:
		return "taken"
	case LostExtensionLimit:
		return "extension limit"
	}
	return fmt.Sprintf("LostReason(%d)", uint32(r))
}

// NodeReport is what happened on one node in the call that failed.
type NodeReport struct {
	Index   int           // position in the node list given to Connect
	Address string        // host:port/db, never credentials
	Kind    NodeKind      // what happened there
	Latency time.Duration // reply latency; -1 when the node gave no reply
}

// String returns e.g. "node 0 (127.0.0.1:6379/0): HeldByOther in 312µs".
func (n NodeReport) String() string {
	s := fmt.Sprintf("node %d (%s): %s", n.Index, n.Address, n.Kind)
	if n.Latency >= 0 {
		s += " in " + n.Latency.String()
	} else {
		s += ", no reply"
	}
	return s
}

// Error is a failure of the engine or of the input, with the per-node report when nodes were
// asked. errors.Is(err, ErrBusy) tests its code; errors.As(err, &qe) gives the detail.
type Error struct {
	Code     Code   // the C result code
	Op       string // "connect", "acquire", "try-acquire", "extend", "release", "lost", or an option
	Resource string // the lock name, when there is one

	msg        string
	nodes      []NodeReport
	attempts   int
	attemptsK  [][]NodeKind
	lostReason LostReason
	cause      error
}

// Error says what failed and, for engine failures, what happened on each node.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("quorumlock: ")
	b.WriteString(e.Op)
	if r := e.Resource; r != "" {
		if len(r) > 80 {
			r = r[:80] + "..."
		}
		fmt.Fprintf(&b, " %q", r)
	}
	b.WriteString(": ")
	name := e.Code.String()
	b.WriteString(name)
	if msg := strings.TrimPrefix(e.msg, name+": "); msg != "" {
		b.WriteString(": ")
		b.WriteString(msg)
	}
	if len(e.nodes) > 0 && !strings.Contains(e.msg, e.nodes[0].Address) {
		for _, n := range e.nodes {
			b.WriteString("; ")
			b.WriteString(n.String())
		}
	}
	return b.String()
}

// Unwrap returns the code's sentinel and, when a context ended the call, the context's error,
// so errors.Is(err, context.Canceled) holds for a cancelled acquire.
func (e *Error) Unwrap() []error {
	if e.cause != nil {
		return []error{e.Code, e.cause}
	}
	return []error{e.Code}
}

// Nodes returns the per-node report (nil when no node was asked).
func (e *Error) Nodes() []NodeReport { return append([]NodeReport(nil), e.nodes...) }

// Attempts returns how many acquisition attempts were made (0 when nothing was sent).
func (e *Error) Attempts() int { return e.attempts }

// AttemptKinds returns, for each kept attempt of a failed acquisition (oldest first, at most
// 64), what happened on each node. The last one matches Nodes.
func (e *Error) AttemptKinds() [][]NodeKind { return e.attemptsK }

// LostReason says why the lock was lost, for ErrLost.
func (e *Error) LostReason() LostReason { return e.lostReason }

// invalid makes an ErrInvalid error for bad input caught before calling C (a nil or closed
// handle, a value C cannot represent).
func invalid(op, resource, msg string) *Error {
	return &Error{Code: Code(C.QL_INVALID), Op: op, Resource: resource, msg: msg}
}

// fromC converts and frees a C error; code is the returned result (used when err is NULL).
func fromC(code C.quorumlock_result, err *C.quorumlock_error, op, resource string) *Error {
	e := &Error{Code: Code(code), Op: op, Resource: resource}
	if err == nil {
		return e
	}
	defer C.quorumlock_error_free(err)
	readError(e, err)
	return e
}

// readError copies everything a C error holds into e; err stays owned by the caller.
func readError(e *Error, err *C.quorumlock_error) {
	e.Code = Code(C.quorumlock_error_code(err))
	e.msg = copyString(func(buf *C.char, n C.size_t, out *C.size_t) C.quorumlock_result {
		return C.quorumlock_error_message(err, buf, n, out)
	})
	e.attempts = int(C.quorumlock_error_attempts(err))
	e.lostReason = LostReason(C.quorumlock_error_lost_reason(err))
	count := int(C.quorumlock_error_node_count(err))
	for i := 0; i < count; i++ {
		n := NodeReport{Index: i, Latency: -1}
		var kind C.uint32_t
		if C.quorumlock_error_node_kind(err, C.size_t(i), &kind) == C.QL_OK {
			n.Kind = NodeKind(kind)
		}
		var us C.uint64_t
		if C.quorumlock_error_node_latency_us(err, C.size_t(i), &us) == C.QL_OK && us != C.QL_NO_LATENCY {
			n.Latency = time.Duration(us) * time.Microsecond
		}
		n.Address = copyString(func(buf *C.char, l C.size_t, out *C.size_t) C.quorumlock_result {
			return C.quorumlock_error_node_address(err, C.size_t(i), buf, l, out)
		})
		e.nodes = append(e.nodes, n)
	}
	attempts := int(C.quorumlock_error_attempt_count(err))
	for a := 0; a < attempts; a++ {
		kinds := make([]NodeKind, count)
		for i := range kinds {
			var kind C.uint32_t
			if C.quorumlock_error_attempt_node_kind(err, C.size_t(a), C.size_t(i), &kind) == C.QL_OK {
				kinds[i] = NodeKind(kind)
			}
		}
		e.attemptsK = append(e.attemptsK, kinds)
	}
}

// copyString reads a snprintf-style C string: once for the length, then into a buffer of
// that length plus one.
func copyString(get func(buf *C.char, n C.size_t, out *C.size_t) C.quorumlock_result) string {
	var n C.size_t
	if get(nil, 0, &n) != C.QL_OK {
		return ""
	}
	buf := make([]byte, int(n)+1)
	if get((*C.char)(unsafe.Pointer(&buf[0])), n+1, nil) != C.QL_OK {
		return ""
	}
	return string(buf[:n])
}
