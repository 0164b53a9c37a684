package quorumlock

// #include <stdint.h>
// #include <quorumlock.h>
import "C"

import (
	"runtime/cgo"
)

// lostState is what a lost callback reaches through its handle: the Hold context to cancel.
type lostState struct {
	resource string
	cancel   func(error)
}

// qlGoLost runs on an engine thread when a held lock is lost. It copies the detail (valid only
// during the call) and cancels the Hold context; it calls no blocking function.
//
//export qlGoLost
func qlGoLost(handle C.uintptr_t, reason C.uint32_t, detail *C.quorumlock_error) {
	st, ok := cgo.Handle(handle).Value().(*lostState)
	if !ok {
		return
	}
	e := &Error{Code: Code(C.QL_LOST), Op: "lost", Resource: st.resource, lostReason: LostReason(reason)}
	if detail != nil {
		readError(e, detail)
	}
	e.lostReason = LostReason(reason)
	st.cancel(e)
}

// warningSink delivers a client's warnings to the user's function on one goroutine, so the
// engine thread never waits for it.
type warningSink struct {
	ch chan Warning
}

// qlGoWarning runs on an engine thread with each warning of a client; the strings are valid
// only during the call and are copied. A warning is dropped when 64 are already queued.
//
//export qlGoWarning
func qlGoWarning(handle C.uintptr_t, code *C.char, node C.int64_t, message *C.char) {
	sink, ok := cgo.Handle(handle).Value().(*warningSink)
	if !ok {
		return
	}
	w := Warning{Code: C.GoString(code), Node: int(node), Message: C.GoString(message)}
	select {
	case sink.ch <- w:
	default:
	}
}
