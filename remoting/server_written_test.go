package remoting

import (
	"bytes"
	"sync/atomic"
	"testing"

	"github.com/rmqio/rmq/internal/testutil"
)

// lendingHandler answers every request with a body in a buffer it lends:
// OnWritten scribbles over the buffer (as a reused pull buffer would be
// overwritten) and counts. Remarks starting with "inline" are answered on
// the event loop, the rest on the pool.
type lendingHandler struct{ written atomic.Int32 }

func (h *lendingHandler) answer(req *Command) *Command {
	resp := NewResponse(req, Success, "")
	buf := bytes.Repeat([]byte{'b'}, 64<<10)
	resp.Body = buf
	resp.OnWritten(func() {
		clear(buf)
		h.written.Add(1)
	})
	return resp
}

func (h *lendingHandler) ServeRemoting(_ *Conn, req *Command) *Command { return h.answer(req) }

func (h *lendingHandler) ServeInline(_ *Conn, req *Command) (*Command, bool) {
	if req.Remark != "inline" {
		return nil, false
	}
	return h.answer(req), true
}

// The function OnWritten sets runs once per response, after the frame is
// copied out: the client reads the body as it was, on the event loop's
// path and on the pool's.
func TestOnWrittenRunsAfterTheCopy(t *testing.T) {
	h := &lendingHandler{}
	s := startServer(t, h, ServerOptions{})
	r := dialRaw(t, s.opts.Addrs[0])
	want := bytes.Repeat([]byte{'b'}, 64<<10)
	for i, remark := range []string{"inline", "pool", "inline", "pool"} {
		req := NewRequest(codeEcho, nil, nil)
		req.Remark = remark
		r.send(req)
		resp := r.expect()
		if resp.Opaque != req.Opaque || !bytes.Equal(resp.Body, want) {
			t.Fatalf("%s reply: opaque %d, body of %d bytes intact %t", remark, resp.Opaque, len(resp.Body), bytes.Equal(resp.Body, want))
		}
		// On the pool's path the function runs as write returns, which may
		// be after the loop has sent the frame.
		testutil.WaitFor(t, ioWait, func() bool { return h.written.Load() == int32(i+1) }, "OnWritten once per reply")
	}
}

// A response written to a closed connection still gives its buffer back,
// and written clears the function so it runs once.
func TestOnWrittenOnClosedConnection(t *testing.T) {
	var n int
	cmd := NewResponse(NewRequest(codeEcho, nil, nil), Success, "")
	cmd.OnWritten(func() { n++ })
	c := &Conn{}
	c.closed.Store(true)
	if err := c.WriteResponse(cmd); err != ErrConnClosed {
		t.Fatalf("write to a closed connection: %v", err)
	}
	cmd.written()
	if n != 1 {
		t.Fatalf("OnWritten ran %d times, want 1", n)
	}
}
