package remoting

import (
	"strings"
	"testing"
)

// inlineHandler serves echo requests whose remark starts with "inline" on
// the event loop; "inline-panic" panics there. The rest go to testHandler.
type inlineHandler struct{ *testHandler }

func (h inlineHandler) ServeInline(c *Conn, req *Command) (*Command, bool) {
	if req.Code != codeEcho || !strings.HasPrefix(req.Remark, "inline") {
		return nil, false
	}
	if req.Remark == "inline-panic" {
		panic("inline exploded")
	}
	resp := NewResponse(req, Success, req.Remark)
	resp.ExtFields = req.Ext()
	resp.Body = req.Body
	return resp, true
}

// Requests an InlineHandler takes are answered on the event loop: with the
// one worker busy they are still served (the pool would answer SYSTEM_BUSY),
// in any number per read, in both header types; a panic there is a
// SYSTEM_ERROR reply and the connection goes on.
func TestServerInlineHandler(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, inlineHandler{h}, ServerOptions{Workers: 1, RawExtCodes: []int32{codeEcho}})
	r := dialRaw(t, s.opts.Addrs[0])

	block := NewRequest(codeDelay, nil, nil)
	r.send(block)
	recv(t, h.seen, "the blocking request")

	want := map[int32]*Command{}
	var stream []byte
	for i := range 50 {
		req := echoReq(byte(i%2), "x")
		req.Remark = "inline"
		want[req.Opaque] = req
		stream = AppendFrame(stream, req)
	}
	pooled := echoReq(SerializeRocketMQ, "pool")
	stream = AppendFrame(stream, pooled)
	r.write(stream)
	for range len(want) + 1 {
		resp := r.expect()
		if resp.Opaque == pooled.Opaque {
			if resp.Code != SystemBusy {
				t.Fatalf("request left to the pool: reply %v, want SYSTEM_BUSY (its worker is busy)", resp)
			}
			continue
		}
		req := want[resp.Opaque]
		if req == nil {
			t.Fatalf("reply %v matches no request or came twice", resp)
		}
		checkEcho(t, req, resp)
		delete(want, resp.Opaque)
	}

	boom := echoReq(SerializeJSON, "p")
	boom.Remark = "inline-panic"
	r.send(boom)
	if resp := r.expect(); resp.Opaque != boom.Opaque || resp.Code != SystemError || !strings.Contains(resp.Remark, "inline exploded") {
		t.Fatalf("reply %v, want SYSTEM_ERROR with the panic text", resp)
	}
	h.release <- struct{}{}
	if resp := r.expect(); resp.Opaque != block.Opaque || resp.Code != Success {
		t.Fatalf("blocking request reply %v", resp)
	}
	r.pingUntilServed(SerializeRocketMQ)
}

// A code listed in RawExtCodes reaches the handler with its binary fields
// unparsed; Ext and Header read them all the same.
func TestServerRawExtCodes(t *testing.T) {
	got := make(chan *Command, 1)
	s := startServer(t, handlerFunc(func(c *Conn, req *Command) *Command {
		if req.Code == codeEcho {
			_, raw := req.RawExt()
			mapped := req.ExtFields != nil
			req.Remark = map[bool]string{true: "raw", false: "map"}[raw && !mapped]
			got <- req
		}
		return NewResponse(req, Success, "")
	}), ServerOptions{RawExtCodes: []int32{codeEcho}})
	r := dialRaw(t, s.opts.Addrs[0])
	for _, st := range []byte{SerializeRocketMQ, SerializeJSON} {
		req := echoReq(st, "v")
		r.send(req)
		r.expect()
		seen := <-got
		wantMode := map[byte]string{SerializeRocketMQ: "raw", SerializeJSON: "map"}[st]
		if seen.Remark != wantMode {
			t.Fatalf("type %d: fields arrived as %s, want %s", st, seen.Remark, wantMode)
		}
		if v := seen.Header().Str("tag", true); v != "v" {
			t.Fatalf("type %d: tag %q through Header, want v", st, v)
		}
	}
}

// handlerFunc adapts a function to Handler.
type handlerFunc func(c *Conn, req *Command) *Command

func (f handlerFunc) ServeRemoting(c *Conn, req *Command) *Command { return f(c, req) }
