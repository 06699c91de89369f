package remoting

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// ClientOptions configures a Client.
type ClientOptions struct {
	DialTimeout time.Duration // default 3 s
	// OnRequest serves requests the peer initiates (e.g. NOTIFY_CONSUMER_IDS_CHANGED).
	// A nil return sends no reply.
	OnRequest func(addr string, req *Command) *Command
	// TLS, when set, runs every connection over TLS (the Java client's
	// tls.enable / ClientConfig.setUseTLS). ClientTLS returns the stock
	// client's default: any server certificate is trusted.
	TLS *tls.Config
	// SerializeType of the requests this client sends (JSON by default).
	SerializeType byte
	Logger        zerolog.Logger
}

// Client keeps one connection per address and matches responses by opaque, so
// many requests may be in flight on one connection.
type Client struct {
	opts    ClientOptions
	mu      sync.Mutex
	conns   map[string]*clientConn
	serials atomic.Uint64 // the last connection's serial (InvokeConn)
}

// NewClient returns a client; connections are dialled on first use.
func NewClient(opts ClientOptions) *Client {
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 3 * time.Second
	}
	return &Client{opts: opts, conns: make(map[string]*clientConn)}
}

type clientConn struct {
	c       *Client
	serial  uint64 // unique among the client's connections, from 1
	addr    string
	nc      net.Conn
	wmu     sync.Mutex
	mu      sync.Mutex
	pending map[int32]chan *Command
	err     error
	done    chan struct{}
}

func (c *Client) conn(ctx context.Context, addr string) (*clientConn, error) {
	c.mu.Lock()
	cc := c.conns[addr]
	c.mu.Unlock()
	if cc != nil {
		select {
		case <-cc.done:
		default:
			return cc, nil
		}
	}
	d := net.Dialer{Timeout: c.opts.DialTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("remoting: connect to %s: %w", addr, err)
	}
	if c.opts.TLS != nil {
		tc := tls.Client(nc, c.opts.TLS)
		hctx, cancel := context.WithTimeout(ctx, c.opts.DialTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("remoting: TLS handshake with %s: %w", addr, err)
		}
		nc = tc
	}
	cc = &clientConn{c: c, serial: c.serials.Add(1), addr: addr, nc: nc, pending: make(map[int32]chan *Command), done: make(chan struct{})}
	c.mu.Lock()
	if old := c.conns[addr]; old != nil && old != cc {
		select {
		case <-old.done:
		default:
			c.mu.Unlock()
			nc.Close()
			return old, nil
		}
	}
	c.conns[addr] = cc
	c.mu.Unlock()
	go cc.readLoop()
	return cc, nil
}

func (cc *clientConn) readLoop() {
	var buf []byte
	// Buffered: under load one read takes many frames instead of two reads
	// (length, then frame) for each.
	r := bufio.NewReaderSize(cc.nc, 64<<10)
	for {
		cmd, b, err := ReadFrame(r, buf)
		buf = b
		if err != nil {
			cc.fail(err)
			return
		}
		if cmd.IsResponse() {
			cc.mu.Lock()
			ch := cc.pending[cmd.Opaque]
			delete(cc.pending, cmd.Opaque)
			cc.mu.Unlock()
			if ch != nil {
				ch <- cmd
			}
			continue
		}
		if h := cc.c.opts.OnRequest; h != nil {
			go func(req *Command) {
				if resp := h(cc.addr, req); resp != nil && !req.IsOneway() {
					resp.Opaque = req.Opaque
					resp.Flag |= FlagResponse
					_ = cc.write(resp)
				}
			}(cmd)
		}
	}
}

func (cc *clientConn) fail(err error) {
	cc.mu.Lock()
	if cc.err == nil {
		cc.err = err
		close(cc.done)
		for k, ch := range cc.pending {
			close(ch)
			delete(cc.pending, k)
		}
	}
	cc.mu.Unlock()
	cc.nc.Close()
}

func (cc *clientConn) write(cmd *Command) error {
	frame := EncodeFrame(cmd)
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	_, err := cc.nc.Write(frame)
	if err != nil {
		cc.fail(err)
	}
	return err
}

// Invoke sends req to addr and waits for its response or ctx's end.
func (c *Client) Invoke(ctx context.Context, addr string, req *Command) (*Command, error) {
	resp, _, err := c.InvokeConn(ctx, addr, req)
	return resp, err
}

// InvokeConn is Invoke that also names the connection that carried the
// exchange: a serial unique among this client's connections. A peer that
// keeps state per connection (a name server drops a broker's routes when
// its connection closes) has not seen what an earlier exchange sent over
// another serial. The serial is 0 when no connection was made.
func (c *Client) InvokeConn(ctx context.Context, addr string, req *Command) (*Command, uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, fmt.Errorf("remoting: request code %d to %s: %w", req.Code, addr, err)
	}
	cc, err := c.conn(ctx, addr)
	if err != nil {
		return nil, 0, err
	}
	c.defaultType(req)
	ch := make(chan *Command, 1)
	cc.mu.Lock()
	if err := cc.err; err != nil {
		cc.mu.Unlock()
		return nil, cc.serial, fmt.Errorf("remoting: connection to %s broke (%v): %w", addr, err, ErrConnClosed)
	}
	cc.pending[req.Opaque] = ch
	cc.mu.Unlock()
	if err := cc.write(req); err != nil {
		return nil, cc.serial, fmt.Errorf("remoting: send to %s: %w", addr, err)
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, cc.serial, fmt.Errorf("remoting: connection to %s closed before the response: %w", addr, ErrConnClosed)
		}
		return resp, cc.serial, nil
	case <-ctx.Done():
		cc.mu.Lock()
		delete(cc.pending, req.Opaque)
		cc.mu.Unlock()
		return nil, cc.serial, fmt.Errorf("remoting: request code %d to %s: %w", req.Code, addr, ctx.Err())
	}
}

// InvokeTimeout is Invoke with a timeout.
func (c *Client) InvokeTimeout(addr string, req *Command, d time.Duration) (*Command, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return c.Invoke(ctx, addr, req)
}

// Oneway sends req with the oneway bit and does not wait.
func (c *Client) Oneway(addr string, req *Command) error {
	cc, err := c.conn(context.Background(), addr)
	if err != nil {
		return err
	}
	c.defaultType(req)
	req.Flag |= FlagOneway
	return cc.write(req)
}

// defaultType applies ClientOptions.SerializeType to a request left at JSON.
func (c *Client) defaultType(req *Command) {
	if req.SerializeType == SerializeJSON {
		req.SerializeType = c.opts.SerializeType
	}
}

// ClientTLS is the TLS configuration of a client that trusts any server
// certificate, as the stock client does by default (tls.test.mode.enable
// true, or tls.client.authServer false).
func ClientTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}
}

// Close closes every connection.
func (c *Client) Close() {
	c.mu.Lock()
	conns := c.conns
	c.conns = make(map[string]*clientConn)
	c.mu.Unlock()
	for _, cc := range conns {
		cc.fail(errors.New("remoting: client closed"))
	}
}
