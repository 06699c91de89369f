package grpcapi

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"
	"github.com/rmqio/rmq/internal/testutil"
)

// h2Client speaks HTTP/2 to the endpoint frame by frame, to send what a
// gRPC client would not: metadata past the advertised limit, half a message.
type h2Client struct {
	t   *testing.T
	c   net.Conn
	fr  *http2.Framer
	hb  bytes.Buffer
	enc *hpack.Encoder
}

func dialH2(t *testing.T, ts *testServer) *h2Client {
	t.Helper()
	c, err := net.Dial("tcp", ts.endpoint())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// A safety net for a broken server, not a timing assertion: every read
	// below waits for a frame the server sends at once.
	c.SetDeadline(time.Now().Add(20 * time.Second))
	h := &h2Client{t: t, c: c, fr: http2.NewFramer(c, c)}
	h.enc = hpack.NewEncoder(&h.hb)
	h.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := h.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return h
}

// call opens stream id on method with extra metadata; endStream sends no
// message.
func (h *h2Client) call(id uint32, method string, extra []hpack.HeaderField, endStream bool) {
	h.t.Helper()
	if err := h.tryCall(id, method, extra, endStream); err != nil {
		h.t.Fatal(err)
	}
}

// tryCall is call, failing when the server closed the connection.
func (h *h2Client) tryCall(id uint32, method string, extra []hpack.HeaderField, endStream bool) error {
	h.hb.Reset()
	for _, f := range append([]hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"},
		{Name: ":path", Value: "/apache.rocketmq.v2.MessagingService/" + method}, {Name: ":authority", Value: "rmq"},
		{Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"},
		{Name: mdClientID, Value: "h2-client"},
	}, extra...) {
		h.enc.WriteField(f)
	}
	block := h.hb.Bytes()
	first := block[:min(len(block), 16384)]
	rest := block[len(first):]
	if err := h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndHeaders: len(rest) == 0, EndStream: endStream}); err != nil {
		return err
	}
	for len(rest) > 0 {
		n := min(len(rest), 16384)
		if err := h.fr.WriteContinuation(id, n == len(rest), rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

// data sends b on stream id in frames of at most 16 KiB.
func (h *h2Client) data(id uint32, b []byte) {
	h.t.Helper()
	for len(b) > 0 {
		n := min(len(b), 16384)
		if err := h.fr.WriteData(id, false, b[:n]); err != nil {
			h.t.Fatal(err)
		}
		b = b[n:]
	}
}

// grpcPrefix is the 5 bytes before a gRPC message of n bytes.
func grpcPrefix(n int) []byte {
	p := make([]byte, 5)
	binary.BigEndian.PutUint32(p[1:], uint32(n))
	return p
}

// streamEnd reads until stream id ends: its grpc-status, or the code of
// the RST_STREAM that ended it; goAway when the server closed the
// connection instead.
func (h *h2Client) streamEnd(id uint32) (grpcStatus string, rst http2.ErrCode, goAway bool) {
	h.t.Helper()
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "reset") {
				return "", 0, true
			}
			h.t.Fatalf("reading stream %d: %v", id, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = h.fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = h.fr.WritePing(true, f.Data)
			}
		case *http2.GoAwayFrame:
			return "", 0, true
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				return "", f.ErrCode, false
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID == id && f.StreamEnded() {
				gs := ""
				for _, hf := range f.RegularFields() {
					if hf.Name == "grpc-status" {
						gs = hf.Value
					}
				}
				return f.PseudoValue("status") + "/" + gs, 0, false
			}
		}
	}
}

// Metadata past maxHeaderListSize is refused without being kept: many
// fields reset the stream, one field longer than the limit closes the
// connection (hpack refuses the string). A call within it is served.
func TestLimitHeaderList(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic("HdrTopic", 1)
	h := dialH2(t, ts)
	var many []hpack.HeaderField
	for i := range 16 {
		many = append(many, hpack.HeaderField{Name: "x-pad-" + string(rune('a'+i)), Value: strings.Repeat("v", 1<<10)})
	}
	h.call(1, "QueryRoute", many, true)
	if st, rst, away := h.streamEnd(1); rst != http2.ErrCodeFrameSize {
		t.Fatalf("16 KiB of metadata: status %q rst %v goaway %v, want RST_STREAM FRAME_SIZE_ERROR", st, rst, away)
	}
	// The connection is still good for a call within the limit.
	h.call(3, "QueryRoute", []hpack.HeaderField{{Name: "x-pad", Value: "small"}}, true)
	if st, rst, away := h.streamEnd(3); st == "" || rst != 0 || away {
		t.Fatalf("small metadata: status %q rst %v goaway %v", st, rst, away)
	}
	big := dialH2(t, ts)
	// The server may close the connection while the block is still being
	// written: a failed write is the refusal too.
	if err := big.tryCall(1, "QueryRoute", []hpack.HeaderField{{Name: "x-big", Value: strings.Repeat("v", 1<<20)}}, true); err != nil {
		return
	}
	if st, _, away := big.streamEnd(1); !away {
		t.Fatalf("a 1 MiB metadata value was answered: %q", st)
	}
}

// A message over maxMessageSize + envelopeHeadroom is refused by gRPC
// (RESOURCE_EXHAUSTED, as grpc-java refuses one over the stock proxy's
// limit); a body within the headroom gets the stock MESSAGE_BODY_TOO_LARGE.
func TestLimitReceiveSize(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic("BigTopic", 1)
	c := dial(t, ts, false)
	max := ts.b.Options().MaxMessageSize
	resp, err := c.SendMessage(callCtx(t), sendReq("BigTopic", make([]byte, max+1), "ID-big1"))
	if err != nil || resp.Status.Code != v2.Code_MESSAGE_BODY_TOO_LARGE {
		t.Fatalf("body of maxMessageSize+1: %v %v", resp, err)
	}
	_, err = c.SendMessage(callCtx(t), sendReq("BigTopic", make([]byte, recvLimit(max)+1), "ID-big2"))
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("body over the receive limit: %v", err)
	}
	resp, err = c.SendMessage(callCtx(t), sendReq("BigTopic", []byte("x"), "ID-small"))
	if err != nil || resp.Status.Code != v2.Code_OK {
		t.Fatalf("a send after the refusal: %v %v", resp, err)
	}
}

// The bytes of a request still arriving are charged to the broker's
// in-flight budget, the one its remoting server charges; a spent budget
// refuses new calls, and a charge past it cancels the calls still
// arriving, which gives their bytes back.
func TestLimitBudgetShared(t *testing.T) {
	ts := startServer(t, nil)
	ts.createTopic("BudgetTopic", 1)
	budget := ts.b.InflightBudget()
	if budget.Max() != ts.b.Options().ServerMaxInflightBytes {
		t.Fatalf("budget %d, serverMaxInflightBytes %d", budget.Max(), ts.b.Options().ServerMaxInflightBytes)
	}
	h := dialH2(t, ts)
	h.call(1, "SendMessage", nil, false)
	const sent = 20 << 10
	h.data(1, append(grpcPrefix(60<<10), make([]byte, sent)...)) // a 60 KiB message, a third of it sent
	testutil.WaitFor(t, 10*time.Second, func() bool { return budget.Load() >= sent && ts.srv.arriving.len() == 1 },
		"the stalled request's bytes charged")

	// Spent (as if the remoting port held the rest): a new call is refused
	// before its message is read.
	budget.Add(budget.Max())
	c := dial(t, ts, false)
	if _, err := c.SendMessage(callCtx(t), sendReq("BudgetTopic", []byte("x"), "ID-refused")); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("call with the budget spent: %v", err)
	}
	// More of the stalled request: the charge finds the budget spent and
	// cancels the call.
	h.data(1, make([]byte, 4<<10))
	if st, rst, away := h.streamEnd(1); away || (st != "200/1" && rst != http2.ErrCodeCancel) {
		t.Fatalf("stalled call over budget: status %q rst %v goaway %v, want cancelled", st, rst, away)
	}
	budget.Add(-budget.Max())
	// What gRPC had queued for the cancelled call and dropped comes back
	// when it is collected; the connection's framer refers to its last
	// DATA frame until the next one, so the connection goes first.
	h.c.Close()
	testutil.WaitFor(t, 10*time.Second, func() bool {
		runtime.GC()
		return budget.Load() == 0 && ts.srv.arriving.len() == 0
	}, "the cancelled call's bytes given back")
	resp, err := c.SendMessage(callCtx(t), sendReq("BudgetTopic", []byte("x"), "ID-after"))
	if err != nil || resp.Status.Code != v2.Code_OK {
		t.Fatalf("call after the budget is back: %v %v", resp, err)
	}
}
