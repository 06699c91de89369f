package remoting

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
)

func newTestClient(t testing.TB, opts ClientOptions) *Client {
	t.Helper()
	cl := NewClient(opts)
	t.Cleanup(cl.Close)
	return cl
}

// pendingCount is the number of requests the client waits on for addr.
func (c *Client) pendingCount(addr string) int {
	c.mu.Lock()
	cc := c.conns[addr]
	c.mu.Unlock()
	if cc == nil {
		return 0
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return len(cc.pending)
}

func TestClientEchoBothTypes(t *testing.T) {
	tests := []struct {
		name     string
		optType  byte // ClientOptions.SerializeType
		reqType  byte // the request's own type
		wantType byte
	}{
		{name: "JSON default", optType: SerializeJSON, reqType: SerializeJSON, wantType: SerializeJSON},
		{name: "ROCKETMQ per request", optType: SerializeJSON, reqType: SerializeRocketMQ, wantType: SerializeRocketMQ},
		{name: "ROCKETMQ by option", optType: SerializeRocketMQ, reqType: SerializeJSON, wantType: SerializeRocketMQ},
	}
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{})
	addr := s.opts.Addrs[0]
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl := newTestClient(t, ClientOptions{SerializeType: tc.optType})
			req := NewRequest(codeEcho, map[string]string{"topic": "T\x01\x02", "u": "主题"}, []byte("body"))
			req.SerializeType = tc.reqType
			resp, err := cl.InvokeTimeout(addr, req, ioWait)
			if err != nil {
				t.Fatal(err)
			}
			if got := recv(t, h.seen, "the request").req; got.SerializeType != tc.wantType {
				t.Fatalf("server got type %d, want %d", got.SerializeType, tc.wantType)
			}
			if resp.ExtFields["topic"] != "T\x01\x02" || resp.ExtFields["u"] != "主题" || string(resp.Body) != "body" ||
				resp.SerializeType != tc.wantType || resp.Opaque != req.Opaque {
				t.Fatalf("bad echo %v (type %d)", resp, resp.SerializeType)
			}
		})
	}
}

func TestClientOneway(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{})
	cl := newTestClient(t, ClientOptions{SerializeType: SerializeRocketMQ})
	req := NewRequest(UpdateConsumerOffset, map[string]string{"commitOffset": "7"}, nil)
	if err := cl.Oneway(s.opts.Addrs[0], req); err != nil {
		t.Fatalf("Oneway: %v", err)
	}
	got := recv(t, h.seen, "the oneway request").req
	if !got.IsOneway() || got.ExtFields["commitOffset"] != "7" || got.SerializeType != SerializeRocketMQ {
		t.Fatalf("server got %v (type %d), want a ROCKETMQ oneway", got, got.SerializeType)
	}
}

func TestClientInvokeTimeout(t *testing.T) {
	h := newTestHandler()
	s := startServer(t, h, ServerOptions{})
	addr := s.opts.Addrs[0]
	cl := newTestClient(t, ClientOptions{})

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	req := NewRequest(codeHold, nil, nil)
	_, err := cl.Invoke(ctx, addr, req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Invoke = %v, want deadline exceeded", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("Invoke returned after %v for a 100ms deadline", waited)
	}
	if n := cl.pendingCount(addr); n != 0 {
		t.Fatalf("%d pending requests after the timeout", n)
	}
	// The late reply finds nobody waiting and is dropped; the connection
	// keeps serving.
	hd := recv(t, h.held, "the held request")
	if err := hd.conn.WriteResponse(NewResponse(hd.req, Success, "late")); err != nil {
		t.Fatal(err)
	}
	resp, err := cl.InvokeTimeout(addr, echoReq(SerializeJSON, "after"), ioWait)
	if err != nil || resp.ExtFields["tag"] != "after" {
		t.Fatalf("Invoke after a timeout = %v, %v", resp, err)
	}

	t.Run("InvokeTimeout", func(t *testing.T) {
		_, err := cl.InvokeTimeout(addr, NewRequest(codeHold, nil, nil), 50*time.Millisecond)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("InvokeTimeout = %v, want deadline exceeded", err)
		}
	})
	t.Run("context already done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := cl.Invoke(ctx, addr, echoReq(SerializeJSON, "never"))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Invoke = %v, want canceled", err)
		}
	})
}

func TestClientConnectionRefused(t *testing.T) {
	addr := testutil.FreeAddr(t) // closed again: nothing listens there
	cl := newTestClient(t, ClientOptions{})
	if _, err := cl.InvokeTimeout(addr, echoReq(SerializeJSON, "x"), ioWait); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("Invoke = %v, want connection refused", err)
	}
	if err := cl.Oneway(addr, echoReq(SerializeJSON, "x")); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("Oneway = %v, want connection refused", err)
	}
}

func TestClientReconnect(t *testing.T) {
	h := newTestHandler()
	addr := testutil.FreeAddr(t)
	s := startServer(t, h, ServerOptions{Addrs: []string{addr}})
	cl := newTestClient(t, ClientOptions{})

	t.Run("server closes the connection", func(t *testing.T) {
		if _, err := cl.InvokeTimeout(addr, echoReq(SerializeJSON, "1"), ioWait); err != nil {
			t.Fatal(err)
		}
		first := recv(t, h.seen, "the first request").conn
		_, err := cl.InvokeTimeout(addr, NewRequest(codeClose, nil, nil), ioWait)
		if !errors.Is(err, ErrConnClosed) {
			t.Fatalf("Invoke on a closing connection = %v, want ErrConnClosed", err)
		}
		recv(t, h.seen, "the close request")
		resp, err := cl.InvokeTimeout(addr, echoReq(SerializeRocketMQ, "2"), ioWait)
		if err != nil || resp.ExtFields["tag"] != "2" {
			t.Fatalf("Invoke after the close = %v, %v", resp, err)
		}
		if again := recv(t, h.seen, "the request after the close").conn; again.ID() == first.ID() {
			t.Fatalf("request after the close came on the old connection %d", first.ID())
		}
	})

	t.Run("server restarts", func(t *testing.T) {
		s.Stop()
		startServer(t, h, ServerOptions{Addrs: []string{addr}})
		// The client learns of the old connection's end asynchronously; a
		// call racing that may fail, a later one must succeed.
		var resp *Command
		testutil.WaitFor(t, ioWait, func() bool {
			var err error
			resp, err = cl.InvokeTimeout(addr, echoReq(SerializeJSON, "3"), ioWait)
			return err == nil
		}, "a call to the restarted server")
		if resp.ExtFields["tag"] != "3" {
			t.Fatalf("reply %v", resp)
		}
	})
}

func TestClientPendingFailOnClose(t *testing.T) {
	tests := []struct {
		name  string
		close func(cl *Client, hd held)
	}{
		{name: "server drops the connection", close: func(_ *Client, hd held) { hd.conn.Close() }},
		{name: "client closes", close: func(cl *Client, _ held) { cl.Close() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestHandler()
			s := startServer(t, h, ServerOptions{})
			cl := newTestClient(t, ClientOptions{})
			errc := make(chan error, 1)
			go func() {
				_, err := cl.InvokeTimeout(s.opts.Addrs[0], NewRequest(codeHold, nil, nil), time.Minute)
				errc <- err
			}()
			tc.close(cl, recv(t, h.held, "the held request"))
			if err := recv(t, errc, "Invoke to fail"); !errors.Is(err, ErrConnClosed) {
				t.Fatalf("Invoke = %v, want ErrConnClosed", err)
			}
		})
	}
}

func TestClientConcurrentInvoke(t *testing.T) {
	s := startServer(t, newTestHandler(), ServerOptions{EventLoops: 2})
	addr := s.opts.Addrs[0]
	cl := newTestClient(t, ClientOptions{})
	const goroutines, calls = 16, 40
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				tag := strconv.Itoa(g) + "/" + strconv.Itoa(i)
				req := echoReq(byte((g+i)%2), tag)
				resp, err := cl.InvokeTimeout(addr, req, ioWait)
				if err != nil {
					errs <- err
					return
				}
				if resp.ExtFields["tag"] != tag || string(resp.Body) != "body-"+tag || resp.Opaque != req.Opaque {
					errs <- fmt.Errorf("call %s got %v", tag, resp)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	cl.mu.Lock()
	conns := len(cl.conns)
	cl.mu.Unlock()
	if conns != 1 {
		t.Fatalf("client holds %d connections to one address, want 1", conns)
	}
}
