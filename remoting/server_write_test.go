package remoting

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// lateHandler answers every echo later, from goroutines of its own, so that
// many writers queue frames on one connection at once; codeClose writes one
// last answer and closes the connection right away.
type lateHandler struct {
	wg sync.WaitGroup
	// added counts the wg.Add calls. The test has every answer before it
	// waits, but the race detector sees no order through the socket between
	// an Add on a server worker and the test's Wait; loading added (an atomic
	// the Add precedes) gives it one (waitAnswered).
	added atomic.Int64
}

// waitAnswered waits for the answering goroutines of n echoes, all of whose
// answers the caller has already read.
func (h *lateHandler) waitAnswered(t *testing.T, n int) {
	t.Helper()
	if got := h.added.Load(); got != int64(n) {
		t.Fatalf("%d echoes answered from goroutines, want %d", got, n)
	}
	h.wg.Wait()
}

func (h *lateHandler) ServeRemoting(c *Conn, req *Command) *Command {
	resp := NewResponse(req, Success, "")
	resp.ExtFields = req.ExtFields
	resp.Body = req.Body
	if req.Code == codeClose {
		_ = c.WriteResponse(resp)
		c.Close()
		return nil
	}
	h.wg.Add(1)
	h.added.Add(1)
	go func() {
		defer h.wg.Done()
		_ = c.WriteResponse(resp)
	}()
	return nil
}

func TestServerCoalescedWritesArriveWhole(t *testing.T) {
	tests := []struct {
		name     string
		requests int
		bodySize int
	}{
		{name: "many small", requests: 2000, bodySize: 16},
		{name: "large bodies past the retained buffer", requests: 200, bodySize: 64 << 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &lateHandler{}
			s := startServer(t, h, ServerOptions{})
			r := dialRaw(t, s.opts.Addrs[0])
			want := map[int32]*Command{}
			var stream []byte
			for i := range tc.requests {
				req := NewRequest(codeEcho, map[string]string{"tag": strconv.Itoa(i)}, make([]byte, tc.bodySize))
				req.Body[0] = byte(i)
				req.SerializeType = byte(i % 2)
				want[req.Opaque] = req
				stream = AppendFrame(stream, req)
			}
			r.write(stream)
			for range tc.requests {
				resp := r.expect()
				req := want[resp.Opaque]
				if req == nil {
					t.Fatalf("reply %v matches no request or came twice", resp)
				}
				checkEcho(t, req, resp)
				delete(want, resp.Opaque)
			}
			h.waitAnswered(t, tc.requests)
		})
	}
}

func TestServerCloseWritesQueuedFramesFirst(t *testing.T) {
	for i := range 20 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			s := startServer(t, &lateHandler{}, ServerOptions{})
			r := dialRaw(t, s.opts.Addrs[0])
			req := NewRequest(codeClose, map[string]string{"tag": "last"}, []byte("bye"))
			r.send(req)
			checkEcho(t, req, r.expect())
			r.expectClosed()
		})
	}
}
