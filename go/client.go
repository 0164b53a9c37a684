package quorumlock

// #include <stdint.h>
// #include <quorumlock.h>
// quorumlock_result ql_go_set_warning(quorumlock_config *cfg, uintptr_t handle);
import "C"

import (
	"context"
	"runtime/cgo"
	"sync"
	"time"
)

// Client is a connection to N independent Redis masters (or Redis Cluster members). It is safe
// for concurrent use; Close it when done.
type Client struct {
	mu     sync.RWMutex // held for reading during C calls, for writing by Close
	ptr    *C.quorumlock_client
	sink   *warningSink
	handle cgo.Handle
}

// Version returns the version of the linked libquorumlock ("0.2.0").
func Version() string { return C.GoString(C.quorumlock_version()) }

// Connect validates the configuration and connects to every node in parallel. Node URLs are
// redis://[user:password@]host:port[/db], rediss:// for TLS, or
// redis+cluster://host:port,host:port for a Redis Cluster counted as one member.
//
// Unless WithRequireQuorum is set, Connect returns once the nodes answered or the connect
// timeout passed, and missing nodes join as they come up. If ctx ends first, Connect returns
// ctx's error and the client being built is closed when it arrives.
func Connect(ctx context.Context, nodes []string, opts ...ClientOption) (*Client, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	var o clientOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, &Error{Code: Code(C.QL_CANCELLED), Op: "connect", msg: "the context ended before connecting", cause: err}
	}
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if o.connectTimeout == nil || *o.connectTimeout > left {
			o.connectTimeout = &left
		}
	}
	cfg, err := newConfig(nodes, &o)
	if err != nil {
		return nil, err
	}

	c := &Client{}
	if o.onWarning != nil {
		c.sink = &warningSink{ch: make(chan Warning, 64)}
		c.handle = cgo.NewHandle(c.sink)
		if r := C.ql_go_set_warning(cfg, C.uintptr_t(c.handle)); r != C.QL_OK {
			c.handle.Delete()
			C.quorumlock_config_free(cfg)
			return nil, invalid("connect", "", "the warning callback was refused by the C library")
		}
		go func(ch <-chan Warning, f func(Warning)) {
			for w := range ch {
				f(w)
			}
		}(c.sink.ch, o.onWarning)
	}

	type result struct {
		ptr *C.quorumlock_client
		err error
	}
	done := make(chan result, 1)
	go func() {
		var ptr *C.quorumlock_client
		var cerr *C.quorumlock_error
		r := C.quorumlock_client_new(cfg, &ptr, &cerr)
		C.quorumlock_config_free(cfg)
		if r != C.QL_OK {
			done <- result{nil, fromC(r, cerr, "connect", "")}
			return
		}
		done <- result{ptr, nil}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			c.closeSink()
			return nil, res.err
		}
		c.ptr = res.ptr
		return c, nil
	case <-ctx.Done():
		// quorumlock_client_new takes no cancel handle: let it finish, then close its client.
		go func() {
			res := <-done
			c.ptr = res.ptr
			c.Close()
		}()
		return nil, &Error{Code: Code(C.QL_CANCELLED), Op: "connect", msg: "the context ended while connecting", cause: ctx.Err()}
	}
}

// NodeCount returns the number of configured nodes N (0 for a nil or closed client).
func (c *Client) NodeCount() int {
	if c == nil {
		return 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return int(C.quorumlock_client_node_count(c.ptr))
}

// Close frees the client. It waits for calls in progress on it; mutexes made from it then
// return ErrInvalid, but locks they hold stay valid and can still be extended and unlocked.
// Closing twice does nothing.
func (c *Client) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ptr != nil {
		C.quorumlock_client_free(c.ptr)
		c.ptr = nil
	}
	c.closeSink()
	return nil
}

// closeSink stops the warning goroutine once no callback can come (the client is freed).
func (c *Client) closeSink() {
	if c.sink != nil {
		close(c.sink.ch)
		c.handle.Delete()
		c.sink = nil
	}
}

// use runs f with the live C client, or returns ErrInvalid for a nil or closed client.
func (c *Client) use(op, resource string, f func(*C.quorumlock_client) error) error {
	if c == nil {
		return invalid(op, resource, "nil *Client")
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.ptr == nil {
		return invalid(op, resource, "the client is closed")
	}
	return f(c.ptr)
}
