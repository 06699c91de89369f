package remoting

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
)

// echoReq builds an echo request whose ext field and body identify it.
func echoReq(st byte, tag string) *Command {
	req := NewRequest(codeEcho, map[string]string{"tag": tag}, []byte("body-"+tag))
	req.SerializeType = st
	return req
}

// checkEcho asserts resp answers req from testHandler's echo.
func checkEcho(t testing.TB, req, resp *Command) {
	t.Helper()
	if resp.Opaque != req.Opaque || resp.Code != Success || !resp.IsResponse() ||
		resp.ExtFields["tag"] != req.ExtFields["tag"] || !bytes.Equal(resp.Body, req.Body) ||
		resp.SerializeType != req.SerializeType {
		t.Fatalf("reply %v (type %d) does not answer %v (type %d)", resp, resp.SerializeType, req, req.SerializeType)
	}
}

// pingUntilServed sends echo requests until one is served (not SYSTEM_BUSY).
// Every frame read must answer one of these pings, so anything the server
// wrote earlier on this connection fails the test.
func (r *rawConn) pingUntilServed(st byte) {
	r.t.Helper()
	sent := map[int32]bool{}
	testutil.WaitFor(r.t, ioWait, func() bool {
		req := echoReq(st, "ping")
		sent[req.Opaque] = true
		r.send(req)
		resp := r.expect()
		if !sent[resp.Opaque] {
			r.t.Fatalf("unexpected frame %v while pinging", resp)
		}
		switch resp.Code {
		case Success:
			return true
		case SystemBusy:
			return false
		default:
			r.t.Fatalf("ping reply %v", resp)
			return false
		}
	}, "the server to serve a ping instead of SYSTEM_BUSY")
}

func TestServerPipelinedOutOfOrder(t *testing.T) {
	for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
		t.Run(typeName(st), func(t *testing.T) {
			h := newTestHandler()
			s := startServer(t, h, ServerOptions{})
			r := dialRaw(t, s.opts.Addrs[0])

			slow := NewRequest(codeDelay, map[string]string{"tag": "slow"}, nil)
			slow.SerializeType = st
			fast := []*Command{echoReq(st, "a"), echoReq(st, "b"), echoReq(st, "c")}
			var stream []byte
			stream = AppendFrame(stream, slow)
			for _, f := range fast {
				stream = AppendFrame(stream, f)
			}
			r.write(stream) // one write: the server must pipeline, not serialise

			byOpaque := map[int32]*Command{}
			for _, f := range fast {
				byOpaque[f.Opaque] = f
			}
			for range fast {
				resp := r.expect()
				req, ok := byOpaque[resp.Opaque]
				if !ok {
					t.Fatalf("reply %v before the slow request was released", resp)
				}
				checkEcho(t, req, resp)
				delete(byOpaque, resp.Opaque)
			}
			h.release <- struct{}{}
			resp := r.expect()
			if resp.Opaque != slow.Opaque || resp.Code != Success || resp.SerializeType != st {
				t.Fatalf("slow reply %v, want success for opaque %d", resp, slow.Opaque)
			}
		})
	}
}

// TestServerBurst writes many frames in one go: the server must decode every
// complete frame in its buffer without waiting for another read event.
func TestServerBurst(t *testing.T) {
	for _, loops := range []int{1, 2} {
		t.Run("loops="+strconv.Itoa(loops), func(t *testing.T) {
			s := startServer(t, newTestHandler(), ServerOptions{EventLoops: loops})
			r := dialRaw(t, s.opts.Addrs[0])
			const n = 300
			want := map[int32]*Command{}
			var stream []byte
			for i := 0; i < n; i++ {
				req := echoReq(byte(i%2), strconv.Itoa(i))
				want[req.Opaque] = req
				stream = AppendFrame(stream, req)
			}
			r.write(stream)
			for i := 0; i < n; i++ {
				resp := r.expect()
				req := want[resp.Opaque]
				if req == nil {
					t.Fatalf("reply %v matches no request or came twice", resp)
				}
				checkEcho(t, req, resp)
				delete(want, resp.Opaque)
			}
		})
	}
}

func TestServerOnewayGetsNoReply(t *testing.T) {
	tests := []struct {
		name string
		code int32
	}{
		{name: "handler returns a response", code: codeEcho},
		{name: "handler panics", code: codePanic},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestHandler()
			// One worker: the next request can only run once the oneway one
			// has finished, including whatever it would have written.
			s := startServer(t, h, ServerOptions{Workers: 1})
			r := dialRaw(t, s.opts.Addrs[0])
			req := NewRequest(tc.code, map[string]string{"tag": "oneway"}, nil)
			req.Flag = FlagOneway
			r.send(req)
			if got := recv(t, h.seen, "the oneway request").req; got.Opaque != req.Opaque || !got.IsOneway() {
				t.Fatalf("handler saw %v, want the oneway request", got)
			}
			r.pingUntilServed(SerializeJSON)
		})
	}
}

func TestServerOnewayRejectedSilently(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{Workers: 1})
	r := dialRaw(t, s.opts.Addrs[0])

	r.send(NewRequest(codeDelay, nil, nil)) // occupies the only worker
	recv(t, h.seen, "the blocking request")
	oneway := NewRequest(codeEcho, nil, nil)
	oneway.Flag = FlagOneway
	normal := echoReq(SerializeJSON, "x")
	r.write(AppendFrame(EncodeFrame(oneway), normal))
	// Both are rejected on the event loop in order; only the normal one may
	// be answered, so the first frame must be its SYSTEM_BUSY.
	resp := r.expect()
	if resp.Opaque != normal.Opaque || resp.Code != SystemBusy {
		t.Fatalf("first frame %v, want SYSTEM_BUSY for opaque %d", resp, normal.Opaque)
	}
	h.release <- struct{}{}
	r.expect() // the blocking request's reply
}

func TestServerHeldRequestAnsweredLater(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{Workers: 1})
	r := dialRaw(t, s.opts.Addrs[0])

	req := NewRequest(codeHold, map[string]string{"topic": "T"}, nil)
	req.SerializeType = SerializeRocketMQ
	r.send(req)
	hd := recv(t, h.held, "the held request")
	r.pingUntilServed(SerializeJSON) // nothing for the held request in between

	late := NewResponse(hd.req, PullNotFound, "no new message")
	late.Flag = 0 // WriteResponse must set the response bit itself
	if err := hd.conn.WriteResponse(late); err != nil {
		t.Fatalf("WriteResponse: %v", err)
	}
	resp := r.expect()
	if resp.Opaque != req.Opaque || resp.Code != PullNotFound || resp.Remark != "no new message" ||
		!resp.IsResponse() || resp.SerializeType != SerializeRocketMQ {
		t.Fatalf("late reply %v (type %d), want PULL_NOT_FOUND for opaque %d in ROCKETMQ", resp, resp.SerializeType, req.Opaque)
	}
}

func TestServerHandlerPanicIsSystemError(t *testing.T) {
	s := startServer(t, newTestHandler(), ServerOptions{})
	r := dialRaw(t, s.opts.Addrs[0])
	req := NewRequest(codePanic, nil, nil)
	r.send(req)
	resp := r.expect()
	if resp.Opaque != req.Opaque || resp.Code != SystemError || !strings.Contains(resp.Remark, "handler exploded") {
		t.Fatalf("reply %v, want SYSTEM_ERROR with the panic text", resp)
	}
	r.ping(SerializeJSON)
}

func TestServerSystemBusy(t *testing.T) {
	for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
		t.Run(typeName(st), func(t *testing.T) {
			h := newTestHandler()
			s := startServer(t, h, ServerOptions{Workers: 1})
			r := dialRaw(t, s.opts.Addrs[0])

			block := NewRequest(codeDelay, nil, nil)
			r.send(block)
			recv(t, h.seen, "the blocking request")

			req := echoReq(st, "busy")
			r.send(req)
			resp := r.expect()
			if resp.Opaque != req.Opaque || resp.Code != SystemBusy || !resp.IsResponse() ||
				!strings.HasPrefix(resp.Remark, "[OVERLOAD]system busy") || resp.SerializeType != st {
				t.Fatalf("reply %v (type %d), want SYSTEM_BUSY [OVERLOAD]system busy... in type %d", resp, resp.SerializeType, st)
			}
			h.release <- struct{}{}
			if resp := r.expect(); resp.Opaque != block.Opaque || resp.Code != Success {
				t.Fatalf("blocking request reply %v", resp)
			}
			r.pingUntilServed(st)
		})
	}
}

// TestServerClosesOnBrokenFrames: every decode error closes that connection
// only, as Java's NettyDecoder does; others keep being served.
func TestServerClosesOnBrokenFrames(t *testing.T) {
	tests := []struct {
		name  string
		bytes []byte
	}{
		// The body of these is never sent: the prefix alone must close.
		{name: "length one byte over 16 MiB", bytes: frameBytes(MaxFrameSize-3, SerializeJSON, 2, nil)[:4]},
		{name: "length 1 GiB", bytes: frameBytes(1<<30, SerializeJSON, 2, nil)[:4]},
		{name: "length max int32", bytes: frameBytes(math.MaxInt32, SerializeJSON, 2, nil)[:4]},
		{name: "negative length", bytes: frameBytes(-1, SerializeJSON, 2, nil)[:4]},
		{name: "min int32 length", bytes: frameBytes(math.MinInt32, SerializeJSON, 2, nil)[:4]},
		{name: "length zero", bytes: frameBytes(0, SerializeJSON, 0, nil)[:4]},
		{name: "length three", bytes: frameBytes(3, SerializeJSON, 0, nil)[:4]},
		// Complete frames with broken contents.
		{name: "header length beyond frame", bytes: frameBytes(6, SerializeJSON, 100, []byte("{}"))},
		{name: "broken JSON header", bytes: frameOf(SerializeJSON, []byte(`{"code":10,`), nil)},
		{name: "JSON ext value not a string", bytes: frameOf(SerializeJSON, []byte(`{"code":10,"extFields":{"a":[1]}}`), nil)},
		{name: "unknown serialize type", bytes: frameBytes(6, 2, 2, []byte("{}"))},
		{name: "short binary header", bytes: frameOf(SerializeRocketMQ, make([]byte, 20), nil)},
		{name: "binary ext length beyond header", bytes: frameOf(SerializeRocketMQ, binHeader{extLen: 1000}.bytes(), make([]byte, 1000))},
		{name: "binary negative key length", bytes: frameOf(SerializeRocketMQ, binHeader{extLen: 8, ext: extEntry(-2, "a", 1, "b")}.bytes(), nil)},
	}
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{})
	bystander := dialRaw(t, s.opts.Addrs[0])
	bystander.ping(SerializeJSON)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bad := dialRaw(t, s.opts.Addrs[0])
			bad.ping(SerializeRocketMQ)
			bad.write(tc.bytes)
			bad.expectClosed()
			bystander.in(t).ping(SerializeJSON)
			dialRaw(t, s.opts.Addrs[0]).ping(SerializeRocketMQ)
		})
	}
}

// TestServerLargestFrame sends a frame of exactly 16 MiB, prefix included:
// the limit is inclusive, and the echo comes back just as large.
func TestServerLargestFrame(t *testing.T) {
	s := startServer(t, newTestHandler(), ServerOptions{})
	r := dialRaw(t, s.opts.Addrs[0])
	req := NewRequest(codeEcho, map[string]string{"tag": "big"}, nil)
	req.SerializeType = SerializeRocketMQ
	empty := EncodeFrame(req)
	req.Body = bytes.Repeat([]byte{0xA5}, MaxFrameSize-len(empty))
	frame := EncodeFrame(req)
	if len(frame) != MaxFrameSize {
		t.Fatalf("built a %d-byte frame, want %d", len(frame), MaxFrameSize)
	}
	go func() { _, _ = r.nc.Write(frame) }() // the reply may start before the write ends
	resp := r.expect()
	checkEcho(t, req, resp)
}

func TestServerInvokesClient(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{})
	oneways := make(chan *Command, 1)
	cl := NewClient(ClientOptions{OnRequest: func(addr string, req *Command) *Command {
		if req.IsOneway() {
			oneways <- req
			return NewResponse(req, Success, "must not be sent")
		}
		if req.Code == GetConsumerRunningInfo && req.ExtFields["wait"] == "forever" {
			return nil
		}
		resp := NewResponse(req, Success, "from "+addr)
		resp.ExtFields = map[string]string{"clientID": req.ExtFields["clientID"]}
		resp.Body = append([]byte("echo:"), req.Body...)
		return resp
	}})
	t.Cleanup(cl.Close)
	addr := s.opts.Addrs[0]
	if _, err := cl.InvokeTimeout(addr, echoReq(SerializeJSON, "hello"), ioWait); err != nil {
		t.Fatalf("first request: %v", err)
	}
	conn := recv(t, h.seen, "the client's connection").conn

	t.Run("concurrent invokes", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				id := "client-" + strconv.Itoa(i)
				req := NewRequest(GetConsumerRunningInfo, map[string]string{"clientID": id}, []byte(id))
				req.SerializeType = byte(i % 2)
				ctx, cancel := context.WithTimeout(context.Background(), ioWait)
				defer cancel()
				resp, err := conn.Invoke(ctx, req)
				switch {
				case err != nil:
					errs <- err
				case resp.Opaque != req.Opaque || resp.ExtFields["clientID"] != id || string(resp.Body) != "echo:"+id ||
					resp.Remark != "from "+addr || !resp.IsResponse():
					errs <- errors.New("mismatched reply " + resp.String())
				}
			}(i)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	t.Run("oneway", func(t *testing.T) {
		req := NewRequest(NotifyConsumerIdsChanged, map[string]string{"consumerGroup": "g"}, nil)
		if err := conn.Oneway(req); err != nil {
			t.Fatalf("Oneway: %v", err)
		}
		got := recv(t, oneways, "the oneway request at the client")
		if got.Code != NotifyConsumerIdsChanged || !got.IsOneway() || got.IsResponse() || got.ExtFields["consumerGroup"] != "g" {
			t.Fatalf("client got %v", got)
		}
	})

	t.Run("invoke timeout", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := conn.Invoke(ctx, NewRequest(GetConsumerRunningInfo, map[string]string{"wait": "forever"}, nil))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Invoke = %v, want deadline exceeded", err)
		}
		conn.mu.Lock()
		pending := len(conn.pending)
		conn.mu.Unlock()
		if pending != 0 {
			t.Fatalf("%d pending entries left after the timeout", pending)
		}
	})
}

// TestServerInvokeRawClient answers a server request by hand, in the other
// header type, and then drops the connection under a second one.
func TestServerInvokeRawClient(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{})
	r := dialRaw(t, s.opts.Addrs[0])
	r.ping(SerializeJSON)
	conn := recv(t, h.seen, "the raw connection").conn

	type result struct {
		resp *Command
		err  error
	}
	invoke := func(req *Command) <-chan result {
		ch := make(chan result, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), ioWait)
			defer cancel()
			resp, err := conn.Invoke(ctx, req)
			ch <- result{resp, err}
		}()
		return ch
	}

	done := invoke(NewRequest(CheckTransactionState, map[string]string{"msgId": "m"}, nil))
	got := r.expect()
	if got.IsResponse() || got.Code != CheckTransactionState || got.ExtFields["msgId"] != "m" {
		t.Fatalf("client got %v, want the CHECK_TRANSACTION_STATE request", got)
	}
	answer := &Command{Code: Success, Language: "JAVA", Opaque: got.Opaque, Flag: FlagResponse, Remark: "ok", SerializeType: SerializeRocketMQ}
	r.send(answer)
	res := recv(t, done, "the Invoke result")
	if res.err != nil || res.resp.Remark != "ok" || res.resp.SerializeType != SerializeRocketMQ {
		t.Fatalf("Invoke = %v, %v", res.resp, res.err)
	}

	done = invoke(NewRequest(CheckTransactionState, nil, nil))
	r.expect()
	r.nc.Close()
	if res := recv(t, done, "the Invoke result"); !errors.Is(res.err, ErrConnClosed) {
		t.Fatalf("Invoke on a dropped connection = %v, %v; want ErrConnClosed", res.resp, res.err)
	}
	if _, err := conn.Invoke(context.Background(), NewRequest(CheckTransactionState, nil, nil)); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("Invoke after close = %v, want ErrConnClosed", err)
	}
}

func TestServerConnClosedObserver(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{Workers: 1})
	r := dialRaw(t, s.opts.Addrs[0])
	// Saturate the only worker: the observer must not depend on the pool.
	r.send(NewRequest(codeDelay, nil, nil))
	conn := recv(t, h.seen, "the blocking request").conn
	if conn.Closed() || conn.RemoteAddr() != r.nc.LocalAddr().String() || conn.LocalAddr() != s.opts.Addrs[0] {
		t.Fatalf("conn closed=%v remote=%s local=%s; want open, %s, %s",
			conn.Closed(), conn.RemoteAddr(), conn.LocalAddr(), r.nc.LocalAddr(), s.opts.Addrs[0])
	}
	r.nc.Close()
	if got := recv(t, h.closed, "ConnClosed"); got.ID() != conn.ID() {
		t.Fatalf("ConnClosed for conn %d, want %d", got.ID(), conn.ID())
	}
	if !conn.Closed() {
		t.Fatal("Closed() is false after ConnClosed")
	}
	if err := conn.WriteResponse(NewResponse(NewRequest(1, nil, nil), Success, "")); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("WriteResponse on a closed conn = %v, want ErrConnClosed", err)
	}
	h.release <- struct{}{}
	select {
	case c := <-h.closed:
		t.Fatalf("second ConnClosed for conn %d", c.ID())
	default:
	}
}

func TestServerWithoutObserver(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, plainHandler{h}, ServerOptions{})
	r := dialRaw(t, s.opts.Addrs[0])
	r.ping(SerializeJSON)
	r.nc.Close()
	dialRaw(t, s.opts.Addrs[0]).ping(SerializeJSON)
}

func TestServerCloseFromHandler(t *testing.T) {
	s := startServer(t, newTestHandler(), ServerOptions{})
	r := dialRaw(t, s.opts.Addrs[0])
	r.send(NewRequest(codeClose, nil, nil))
	r.expectClosed()
}

func TestServerStop(t *testing.T) {
	h := newTestHandler()
	addr := testutil.FreeAddr(t)
	s, err := NewServer(h, ServerOptions{Addrs: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	s.Stop() // before Start: nothing to do
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	var raws []*rawConn
	for i := 0; i < 3; i++ {
		r := dialRaw(t, addr)
		r.ping(SerializeJSON)
		raws = append(raws, r)
	}
	raws[0].send(NewRequest(codeHold, nil, nil))
	hd := recv(t, h.held, "the held request")

	stopped := make(chan struct{})
	go func() { s.Stop(); close(stopped) }()
	recv(t, stopped, "Stop to return")
	for _, r := range raws {
		r.expectClosed()
	}
	for i := 0; i < 3; i++ {
		recv(t, h.closed, "ConnClosed during Stop")
	}
	// Every Conn method is safe after Stop, when gnet's event loops are gone.
	if err := hd.conn.WriteResponse(NewResponse(hd.req, Success, "")); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("WriteResponse after Stop = %v, want ErrConnClosed", err)
	}
	if err := hd.conn.Oneway(NewRequest(NotifyConsumerIdsChanged, nil, nil)); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("Oneway after Stop = %v, want ErrConnClosed", err)
	}
	if _, err := hd.conn.Invoke(context.Background(), NewRequest(CheckTransactionState, nil, nil)); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("Invoke after Stop = %v, want ErrConnClosed", err)
	}
	hd.conn.Close()
	// The port is free once Stop has returned.
	l, err := net.Listen("tcp4", addr)
	if err != nil {
		t.Fatalf("port still taken after Stop: %v", err)
	}
	l.Close()
	s.Stop() // again: no-op
}

func TestServerTwoAddresses(t *testing.T) {
	h := newTestHandler()
	addrs := []string{testutil.FreeAddr(t), testutil.FreeAddr(t)} // like the broker port and port-2
	s := startServer(t, h, ServerOptions{Addrs: addrs})
	for _, addr := range s.opts.Addrs {
		r := dialRaw(t, addr)
		r.ping(SerializeRocketMQ)
		if c := recv(t, h.seen, "the ping").conn; c.LocalAddr() != addr {
			t.Fatalf("connection to %s reports local address %s", addr, c.LocalAddr())
		}
	}
}

func TestServerStartErrors(t *testing.T) {
	if _, err := NewServer(newTestHandler(), ServerOptions{}); err == nil {
		t.Fatal("NewServer without addresses succeeded")
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := NewServer(newTestHandler(), ServerOptions{Addrs: []string{l.Addr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil {
		s.Stop()
		t.Fatalf("Start on a taken port %s succeeded", l.Addr())
	}
	s.Stop()
}
