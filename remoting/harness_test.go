package remoting

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
)

// Test request codes served by testHandler. They sit above every real code so
// a test never depends on the production code table.
const (
	codeEcho  int32 = 9001 // echo ext fields, remark and body
	codeDelay int32 = 9002 // block until the test releases the handler
	codeHold  int32 = 9003 // return nil; the test answers via Conn.WriteResponse
	codeClose int32 = 9004 // close the connection from the server side
	codePanic int32 = 9005 // panic inside the handler
)

// ioWait bounds every blocking step of a test. It is generous because the
// machine is shared; a passing test never waits for it.
const ioWait = 10 * time.Second

// held is a request with the connection it came on.
type held struct {
	conn *Conn
	req  *Command
}

// testHandler is a Handler whose behaviour is chosen by request code. Every
// request is first reported on seen (dropped if the buffer is full) so tests
// can observe that a handler ran, and on which Conn, even without a reply.
type testHandler struct {
	release chan struct{} // codeDelay handlers wait for a receive from here
	held    chan held     // codeHold requests
	seen    chan held     // every request, in the order handlers start
	closed  chan *Conn    // ConnClosed notifications
}

func newTestHandler() *testHandler {
	return &testHandler{
		release: make(chan struct{}),
		held:    make(chan held, 64),
		seen:    make(chan held, 1024),
		closed:  make(chan *Conn, 64),
	}
}

func (h *testHandler) ServeRemoting(c *Conn, req *Command) *Command {
	select {
	case h.seen <- held{conn: c, req: req}:
	default:
	}
	switch req.Code {
	case codeDelay:
		<-h.release
	case codeHold:
		h.held <- held{conn: c, req: req}
		return nil
	case codeClose:
		c.Close()
		return nil
	case codePanic:
		panic("handler exploded")
	}
	resp := NewResponse(req, Success, req.Remark)
	resp.ExtFields = req.ExtFields
	resp.Body = req.Body
	return resp
}

func (h *testHandler) ConnClosed(c *Conn) { h.closed <- c }

// plainHandler hides testHandler's ConnClosed method so the server sees a
// Handler without the observer.
type plainHandler struct{ h *testHandler }

func (p plainHandler) ServeRemoting(c *Conn, req *Command) *Command { return p.h.ServeRemoting(c, req) }

// startServer runs a server on fresh 127.0.0.1 ports and stops it at cleanup.
// When opts.Addrs is empty one address is chosen.
func startServer(t testing.TB, h Handler, opts ServerOptions) *Server {
	t.Helper()
	if len(opts.Addrs) == 0 {
		opts.Addrs = []string{testutil.FreeAddr(t)}
	}
	s, err := NewServer(h, opts)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// rawConn speaks the wire protocol by hand so tests control every byte.
type rawConn struct {
	t   testing.TB
	nc  net.Conn
	buf []byte
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp4", addr, ioWait)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc}
}

// in returns r reporting failures to t, for use inside a subtest.
func (r *rawConn) in(t testing.TB) *rawConn {
	c := *r
	c.t = t
	return &c
}

func (r *rawConn) write(b []byte) {
	r.t.Helper()
	_ = r.nc.SetWriteDeadline(time.Now().Add(ioWait))
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

func (r *rawConn) send(cmd *Command) { r.t.Helper(); r.write(EncodeFrame(cmd)) }

// read returns the next frame or the read error.
func (r *rawConn) read(d time.Duration) (*Command, error) {
	_ = r.nc.SetReadDeadline(time.Now().Add(d))
	cmd, b, err := ReadFrame(r.nc, r.buf)
	r.buf = b
	return cmd, err
}

// expect reads the next frame and fails the test if none arrives.
func (r *rawConn) expect() *Command {
	r.t.Helper()
	cmd, err := r.read(ioWait)
	if err != nil {
		r.t.Fatalf("reading a reply: %v", err)
	}
	return cmd
}

// expectClosed waits for the server to close the connection: the read must end
// in EOF or a reset, not in a frame and not in the deadline.
func (r *rawConn) expectClosed() {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(ioWait))
	var one [1]byte
	n, err := r.nc.Read(one[:])
	if n > 0 {
		r.t.Fatalf("got data %x, want the connection closed", one[:n])
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		r.t.Fatalf("connection still open after %v", ioWait)
	}
	if err == nil {
		r.t.Fatal("read returned neither data nor an error")
	}
}

// ping sends an echo request and asserts its reply, proving the connection and
// the server are alive.
func (r *rawConn) ping(st byte) {
	r.t.Helper()
	req := NewRequest(codeEcho, map[string]string{"ping": "1"}, nil)
	req.SerializeType = st
	r.send(req)
	resp := r.expect()
	if resp.Opaque != req.Opaque || resp.Code != Success || !resp.IsResponse() {
		r.t.Fatalf("ping reply = %v, want success for opaque %d", resp, req.Opaque)
	}
}

// recv receives from ch or fails after ioWait.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(ioWait):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// frameBytes builds a frame from raw parts so tests can write broken ones.
func frameBytes(length int32, serializeType byte, headerLen int, rest []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(length))
	b = binary.BigEndian.AppendUint32(b, uint32(serializeType)<<24|uint32(headerLen)&0xFFFFFF)
	return append(b, rest...)
}

// binHeader builds a ROCKETMQ header field by field; lengths are written as
// given, so they may lie about the bytes that follow.
type binHeader struct {
	code      int16
	lang      byte
	version   int16
	opaque    int32
	flag      int32
	remarkLen int32
	remark    []byte
	extLen    int32
	ext       []byte
}

func (h binHeader) bytes() []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(h.code))
	b = append(b, h.lang)
	b = binary.BigEndian.AppendUint16(b, uint16(h.version))
	b = binary.BigEndian.AppendUint32(b, uint32(h.opaque))
	b = binary.BigEndian.AppendUint32(b, uint32(h.flag))
	b = binary.BigEndian.AppendUint32(b, uint32(h.remarkLen))
	b = append(b, h.remark...)
	b = binary.BigEndian.AppendUint32(b, uint32(h.extLen))
	return append(b, h.ext...)
}

// extEntry encodes one ROCKETMQ map entry with the given (possibly lying) lengths.
func extEntry(keyLen int16, key string, valLen int32, val string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(keyLen))
	b = append(b, key...)
	b = binary.BigEndian.AppendUint32(b, uint32(valLen))
	return append(b, val...)
}

// frameOf wraps a header and body into a frame with honest lengths.
func frameOf(st byte, header, body []byte) []byte {
	return frameBytes(int32(4+len(header)+len(body)), st, len(header), append(append([]byte(nil), header...), body...))
}

// sameCommand compares every wire-visible field; nil and empty bodies are equal.
func sameCommand(a, b *Command) bool {
	return a.Code == b.Code && a.Language == b.Language && a.Version == b.Version &&
		a.Opaque == b.Opaque && a.Flag == b.Flag && a.Remark == b.Remark &&
		a.SerializeType == b.SerializeType && reflect.DeepEqual(a.ExtFields, b.ExtFields) &&
		bytes.Equal(a.Body, b.Body)
}
