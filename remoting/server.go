package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/panjf2000/ants/v2"
	"github.com/rmqio/rmq/third_party/gnet"
	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/ratelog"
)

// Handler serves requests. ServeRemoting runs on a worker goroutine, never on an
// event loop, so it may block. It returns the response, or nil when it keeps the
// request to answer later with Conn.WriteResponse (long polling) or when no reply
// is due. Responses to oneway requests are dropped by the server.
type Handler interface {
	ServeRemoting(c *Conn, req *Command) *Command
}

// InlineHandler is optionally implemented by a Handler that serves some
// requests on the connection's event loop instead of a worker goroutine,
// which saves the hand-off (a pool submit, a goroutine wake-up, a loop
// wake-up for the answer) on the hottest requests. ServeInline runs on the
// loop, so it must not block: no network calls, no waiting for disk or for
// other requests. It returns handled=false, having done nothing, for a
// request it leaves to ServeRemoting on the pool.
type InlineHandler interface {
	ServeInline(c *Conn, req *Command) (resp *Command, handled bool)
}

// Rejecter is optionally implemented by a Handler that refuses some
// requests before they are served or queued (stock
// NettyRequestProcessor.rejectRequest: the send processor while the page
// cache is busy). RejectRequest runs on the event loop for every request
// and must be cheap; a true result answers SYSTEM_BUSY [REJECTREQUEST].
type Rejecter interface {
	RejectRequest(req *Command) bool
}

// RejectRequestRemark is the stock answer to a request its processor
// rejects (NettyRemotingAbstract.processRequestCommand).
const RejectRequestRemark = "[REJECTREQUEST]system busy, start flow control for a while"

// ConnObserver is optionally implemented by a Handler that tracks connections.
// ConnClosed runs once per connection on a goroutine of its own, possibly while
// requests of that connection are still being served.
type ConnObserver interface {
	ConnClosed(c *Conn)
}

// ServerOptions configures a Server.
type ServerOptions struct {
	// Addrs are listen addresses such as "127.0.0.1:10911"; all share one handler.
	Addrs []string
	// Workers bounds concurrently running requests; past it a request gets SYSTEM_BUSY.
	Workers int
	// Lanes give some request codes their own bounded workers and a FIFO
	// of timed waiters (lanes.go); other pooled codes take any worker.
	Lanes []Lane
	// EventLoops is the number of gnet event loops (0 = 1).
	EventLoops int
	// RawExtCodes are request codes whose binary-header custom fields are
	// left unparsed (Command.RawExt) for a handler that reads them in one
	// pass; Ext and Header still work on them.
	RawExtCodes []int32
	// LentBodyCodes are request codes whose Body is lent to the handler
	// (lend.go): it is valid only until ServeInline (having handled the
	// request) or ServeRemoting returns, after which the server reuses its
	// memory. A handler of these codes copies what it keeps of the body,
	// and does not answer later from it.
	LentBodyCodes []int32
	// IdleTimeout closes a connection on which no complete frame has
	// arrived for this long (serverChannelMaxIdleTimeSeconds); 0 never does.
	IdleTimeout time.Duration
	// MaxConns caps the open connections; past it a new one is closed at
	// accept. 0 is unlimited.
	MaxConns int
	// MaxInflightBytes caps the bytes buffered for frames that have not
	// arrived whole, over all connections (see hygiene.go); 0 means
	// DefaultMaxInflightBytes, a negative value no limit.
	MaxInflightBytes int64
	// Budget, when set, is the budget the partial-frame buffers are charged
	// to instead of one of MaxInflightBytes: the broker shares one with its
	// gRPC endpoint (budget.go).
	Budget *Budget
	// TLSMode and TLS serve TLS connections (tls.go); TLS is required
	// unless TLSMode is TLSDisabled.
	TLSMode TLSMode
	TLS     *tls.Config
	// Clock times the idle timeout (nil: the wall clock).
	Clock clock.Clock
	// LaneClock stamps the requests that wait in a lane (nil: Clock); the
	// owner that expires them passes times of the same clock.
	LaneClock clock.Clock
	Logger    zerolog.Logger
	// Refusals rate-limits the per-connection warnings (a closed
	// connection, refused at accept, a broken frame or TLS handshake): a
	// client reconnecting in a loop would otherwise write a line per try.
	// The broker passes its own so that the metrics count them; nil makes
	// one for this server.
	Refusals *ratelog.Limiter
}

// Server is a gnet/v2 remoting server.
type Server struct {
	gnet.BuiltinEventEngine
	opts    ServerOptions
	handler Handler
	pool    *ants.Pool
	inline  InlineHandler
	reject  Rejecter
	lanes   []*lane         // ServerOptions.Lanes
	laneOf  map[int32]*lane // by request code
	rawExt  func(code int32) bool
	lend    func(code int32) bool // LentBodyCodes
	log     zerolog.Logger
	// refusals bounds the per-connection warnings (ServerOptions.Refusals).
	refusals *ratelog.Limiter
	eng      gnet.Engine
	booted   chan struct{}
	done     chan error
	conns    sync.Map // uint64 -> *Conn
	connSeq  atomic.Uint64
	stop     sync.Once
	// listen are the gnet addresses of opts.Addrs; bound the addresses the
	// listeners really have (port 0 resolved), both in opts.Addrs order.
	listen, bound []string

	clock       clock.Clock
	maxInflight int64   // the budget's limit; <= 0: no limit
	inflight    *Budget // holds every open connection's partial-frame buffer (and what else shares it)
	// waitingBytes are the bodies of the requests waiting in lanes,
	// bounded by maxInflight (lanes.go).
	waitingBytes atomic.Int64
	open         atomic.Int64 // connections admitted and not yet closed
	// now is the server clock (unix ns) as of the last idle sweep: the
	// event loops stamp Conn.lastFrame with it instead of reading a clock.
	now      atomic.Int64
	quit     chan struct{} // closed by Stop; ends idleLoop
	idleDone chan struct{} // closed when idleLoop returns
	// trafficHook, set by tests before Start, runs on the event loop at the
	// end of every OnTraffic.
	trafficHook func(c *Conn)
}

// codeSet returns the membership test of codes (nil for none).
func codeSet(codes []int32) func(code int32) bool {
	if len(codes) == 0 {
		return nil
	}
	codes = slices.Clone(codes)
	return func(code int32) bool { return slices.Contains(codes, code) }
}

// NewServer builds a server; Start runs it.
func NewServer(h Handler, opts ServerOptions) (*Server, error) {
	if len(opts.Addrs) == 0 {
		return nil, errors.New("remoting: no listen address")
	}
	if opts.Workers <= 0 {
		opts.Workers = 4096
	}
	if opts.EventLoops <= 0 {
		opts.EventLoops = 1
	}
	pool, err := ants.NewPool(opts.Workers, ants.WithNonblocking(true), ants.WithPanicHandler(func(p any) {
		opts.Logger.Error().Interface("panic", p).Msg("remoting: handler panic")
	}))
	if err != nil {
		return nil, err
	}
	if opts.TLSMode != TLSDisabled && opts.TLS == nil {
		return nil, fmt.Errorf("remoting: TLS mode %s without a TLS configuration", opts.TLSMode)
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.LaneClock == nil {
		opts.LaneClock = opts.Clock
	}
	budget := opts.Budget
	if budget == nil {
		budget = NewBudget(opts.MaxInflightBytes)
	}
	if opts.Refusals == nil {
		opts.Refusals = ratelog.New(opts.Logger, opts.Clock, 0)
	}
	s := &Server{opts: opts, handler: h, pool: pool, log: opts.Logger, refusals: opts.Refusals, booted: make(chan struct{}), done: make(chan error, 1),
		clock: opts.Clock, maxInflight: budget.Max(), inflight: budget, quit: make(chan struct{}), idleDone: make(chan struct{})}
	s.inline, _ = h.(InlineHandler)
	s.reject, _ = h.(Rejecter)
	if s.lanes, s.laneOf, err = newLanes(opts.Lanes); err != nil {
		pool.Release()
		return nil, err
	}
	s.rawExt = codeSet(opts.RawExtCodes)
	s.lend = codeSet(opts.LentBodyCodes)
	return s, nil
}

// Start listens on every address and returns once the server accepts
// connections. A port 0 gets a port from the system; Addrs reports it.
func (s *Server) Start() error {
	s.listen = distinctListenAddrs(s.opts.Addrs)
	addrs := make([]string, len(s.listen))
	for i, a := range s.listen {
		addrs[i] = "tcp4://" + a
	}
	s.now.Store(s.clock.Now().UnixNano())
	go func() {
		s.done <- gnet.Rotate(s, addrs,
			gnet.WithNumEventLoop(s.opts.EventLoops),
			gnet.WithReuseAddr(true),
			gnet.WithTCPNoDelay(gnet.TCPNoDelay),
			gnet.WithReadBufferCap(256<<10),
			gnet.WithLogger(gnetLogger{s.log}),
		)
	}()
	select {
	case <-s.booted:
		bound, err := s.boundAddrs()
		if err != nil {
			close(s.idleDone)
			s.Stop()
			return fmt.Errorf("remoting: listen %v: %w", s.opts.Addrs, err)
		}
		s.bound = bound
		if s.opts.IdleTimeout > 0 {
			go s.idleLoop()
		} else {
			close(s.idleDone)
		}
		return nil
	case err := <-s.done:
		close(s.idleDone)
		if err == nil {
			err = errors.New("remoting: server stopped during start")
		}
		return fmt.Errorf("remoting: listen %v: %w", s.opts.Addrs, err)
	}
}

// Addrs are the addresses the server listens on, in ServerOptions.Addrs
// order, with the port the system chose for a port 0. Nil before Start.
func (s *Server) Addrs() []string { return slices.Clone(s.bound) }

// distinctListenAddrs returns addrs with every repeated port-0 address made
// distinct by leading zeros ("h:0", "h:00", ...): gnet tells its listeners
// apart by address only (Engine.DupListener), and the resolver reads all of
// them as port 0.
func distinctListenAddrs(addrs []string) []string {
	out := make([]string, len(addrs))
	seen := make(map[string]bool, len(addrs))
	for i, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if err == nil && strings.Trim(port, "0") == "" {
			for seen[a] {
				port += "0"
				a = net.JoinHostPort(host, port)
			}
		}
		seen[a] = true
		out[i] = a
	}
	return out
}

// boundAddrs reads each listener's address from a duplicate of its socket.
func (s *Server) boundAddrs() ([]string, error) {
	out := make([]string, len(s.listen))
	for i, a := range s.listen {
		fd, err := s.eng.DupListener("tcp", a)
		if err != nil {
			return nil, fmt.Errorf("find listener %s: %w", a, err)
		}
		sa, err := listenerName(fd)
		if err != nil {
			return nil, fmt.Errorf("read listener %s: %w", a, err)
		}
		in4, ok := sa.(*syscall.SockaddrInet4)
		if !ok {
			return nil, fmt.Errorf("listener %s is not IPv4 (%T)", a, sa)
		}
		out[i] = netip.AddrPortFrom(netip.AddrFrom4(in4.Addr), uint16(in4.Port)).String()
	}
	return out, nil
}

// Stop closes every connection and the listeners. It returns once the
// listening ports are free again (or after 5 s); later calls do nothing.
func (s *Server) Stop() {
	select {
	case <-s.booted:
	default:
		return // never started, or Start failed
	}
	s.stop.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// Engine.Stop only notices the end by polling every 500 ms; the
		// engine's own goroutine returns as soon as every loop, connection
		// and listener is closed, so wait for that instead.
		close(s.quit)
		go func() { _ = s.eng.Stop(ctx) }()
		select {
		case <-s.done:
		case <-ctx.Done():
			s.log.Warn().Strs("addrs", s.opts.Addrs).Msg("remoting: server did not stop within 5s")
		}
		<-s.idleDone
		s.pool.Release()
	})
}

// OnBoot implements gnet.EventHandler.
func (s *Server) OnBoot(eng gnet.Engine) gnet.Action {
	s.eng = eng
	close(s.booted)
	return gnet.None
}

// OnOpen implements gnet.EventHandler.
func (s *Server) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	c := &Conn{gc: gc, id: s.connSeq.Add(1), srv: s}
	if ra := gc.RemoteAddr(); ra != nil {
		c.remote = ra.String()
	}
	if !s.admit(c.remote) {
		return nil, gnet.Close // no context: OnClose ignores it
	}
	c.lastFrame.Store(s.now.Load())
	if la := gc.LocalAddr(); la != nil {
		c.local = la.String()
	}
	gc.SetContext(c)
	s.conns.Store(c.id, c)
	return nil, gnet.None
}

// OnClose implements gnet.EventHandler.
func (s *Server) OnClose(gc gnet.Conn, err error) gnet.Action {
	c, _ := gc.Context().(*Conn)
	if c == nil {
		return gnet.None
	}
	c.life.Lock()
	c.closed.Store(true)
	c.life.Unlock()
	s.conns.Delete(c.id)
	s.open.Add(-1)
	s.dropPartial(c)
	if c.pipe != nil {
		c.pipe.close()
	}
	c.failPending()
	if obs, ok := s.handler.(ConnObserver); ok {
		// Not through the worker pool: a saturated pool would drop the
		// notification, and the event loop must not block on the observer.
		go obs.ConnClosed(c)
	}
	return gnet.None
}

// OnTraffic writes the frames queued for the connection, then decodes every
// complete frame in the inbound buffer. It also runs when a writer wakes the
// connection (Conn.write).
func (s *Server) OnTraffic(gc gnet.Conn) gnet.Action {
	c, _ := gc.Context().(*Conn)
	if c == nil {
		return gnet.None
	}
	c.flushOut(gc)
	act := gnet.None
	if !c.sniffed && s.opts.TLSMode != TLSDisabled {
		act = s.sniff(c, gc)
	}
	if act == gnet.None {
		if c.pipe != nil {
			act = s.feedTLS(c, gc)
		} else {
			act = s.readFrames(c, gc)
		}
	}
	if c.inlineOut {
		// Answers of requests served inline go out with one write per
		// read, not one wake-up each.
		c.inlineOut = false
		c.flushOut(gc)
	}
	if s.trafficHook != nil {
		s.trafficHook(c)
	}
	return act
}

// readFrames decodes and dispatches every complete frame in the inbound
// buffer and moves the start of an incomplete one to the connection's
// partial-frame buffer (nextFrame), so gnet keeps no bytes between reads.
// The first frame stamps the connection's idle clock, before any answer can
// leave.
func (s *Server) readFrames(c *Conn, gc gnet.Conn) gnet.Action {
	var in inbound = gc
	stamped := false
	for {
		cmd, err := s.nextFrame(c, in)
		if err != nil {
			switch {
			case errors.Is(err, errClosing), errors.Is(err, ErrInflightBudget):
				// logged where decided
			case errors.Is(err, ErrFrameTooLarge), errors.Is(err, ErrFrameTooShort):
				s.refusals.Warn(&s.log, "bad_frame_length", 0).Err(err).Object("client", c).Msg("closing connection: bad frame length")
			default:
				s.refusals.Warn(&s.log, "broken_frame", 0).Err(err).Object("client", c).Msg("closing connection: broken frame")
			}
			return gnet.Close
		}
		if cmd == nil {
			return gnet.None
		}
		if !stamped {
			c.lastFrame.Store(s.now.Load())
			stamped = true
		}
		s.dispatch(c, cmd)
	}
}

func (s *Server) dispatch(c *Conn, cmd *Command) {
	if cmd.IsResponse() {
		c.deliver(cmd)
		return
	}
	if s.reject != nil && s.reject.RejectRequest(cmd) {
		if !cmd.IsOneway() {
			c.WriteResponse(NewResponse(cmd, SystemBusy, RejectRequestRemark))
		}
		cmd.release()
		return
	}
	l := s.laneOf[cmd.Code]
	if s.inline != nil && (l == nil || !l.full.Load()) && s.serveInline(c, cmd) {
		return
	}
	if l != nil {
		s.enqueue(l, c, cmd)
		return
	}
	if s.pool.Submit(func() { s.serve(c, cmd) }) != nil {
		refuseOverload(c, cmd)
	}
}

// serveInline offers cmd to the InlineHandler on the event loop; an answer
// is queued for the write at the end of OnTraffic.
func (s *Server) serveInline(c *Conn, cmd *Command) (handled bool) {
	defer func() {
		if p := recover(); p != nil {
			if resp := s.panicReply(cmd, p); resp != nil {
				if c.pipe != nil {
					c.WriteResponse(resp)
				} else {
					c.queueOnLoop(resp)
				}
			}
			handled = true
		}
		if handled {
			cmd.release() // left to the pool otherwise, which releases it
		}
	}()
	resp, handled := s.inline.ServeInline(c, cmd)
	if handled && resp != nil && !cmd.IsOneway() {
		if c.pipe != nil {
			// Served on the connection's TLS goroutine, not the loop.
			c.WriteResponse(resp)
		} else {
			c.queueOnLoop(resp)
		}
	}
	return handled
}

// panicReply logs a handler's panic p and returns the SYSTEM_ERROR answer
// to cmd (nil for a oneway request).
func (s *Server) panicReply(cmd *Command, p any) *Command {
	s.log.Error().Interface("panic", p).Int32("code", cmd.Code).Msg("remoting: handler panic")
	if cmd.IsOneway() {
		return nil
	}
	return NewResponse(cmd, SystemError, fmt.Sprintf("%v", p))
}

func (s *Server) serve(c *Conn, cmd *Command) {
	defer cmd.release()
	defer func() {
		if p := recover(); p != nil {
			if resp := s.panicReply(cmd, p); resp != nil {
				c.WriteResponse(resp)
			}
		}
	}()
	resp := s.handler.ServeRemoting(c, cmd)
	if resp != nil && !cmd.IsOneway() {
		c.WriteResponse(resp)
	}
}

// Conn is one client connection. Its methods are safe for concurrent use.
type Conn struct {
	gc     gnet.Conn
	srv    *Server
	id     uint64
	remote string
	local  string
	closed atomic.Bool
	// clientID is the client id of the peer's last heartbeat (connlog.go).
	clientID atomic.Pointer[string]
	// life is held shared around every call that queues work on gnet's
	// event loop (AsyncWrite, Close) and exclusively by OnClose to set
	// closed. No such call can then start after OnClose: once the engine
	// stops, the loop's wake-up fd is closed and may be reused by another
	// file, which a late AsyncWrite would write 8 bytes into.
	life sync.RWMutex

	mu      sync.Mutex
	pending map[int32]chan *Command

	// Outbound frames wait in out until the event loop writes them all with
	// one write (flushOut); woken records that a wake-up of the loop is on
	// its way, so writers between two flushes queue no further wake-up.
	// spare is the buffer of the previous flush, reused; only the event
	// loop touches it.
	outMu sync.Mutex
	out   []byte
	woken bool
	spare []byte
	// inlineOut records that the loop queued an answer itself
	// (queueOnLoop); only the loop touches it.
	inlineOut bool

	// A frame that has not arrived whole: its first bytes in partial, the
	// rest in chunks, plen in all; charged is the capacity of both as
	// charged to the server's budget. Only the loop touches them. held is
	// the charge as the budget sees it: another loop that evicts the
	// connection takes it back (hygiene.go).
	partial []byte
	chunks  [][]byte
	plen    int
	charged int
	held    atomic.Int64
	// closing records that the server decided to close the connection
	// (idle, or evicted for the budget), so that happens once.
	closing atomic.Bool
	// lastFrame is Server.now when the last complete frame arrived (or the
	// connection opened).
	lastFrame atomic.Int64
	// sniffed records that the first byte was looked at (TLS on); pipe,
	// set then on the loop for a TLS connection, carries its ciphertext to
	// tc's goroutine (tls.go). Answers are encrypted through tc.
	sniffed bool
	pipe    *tlsPipe
	tc      atomic.Pointer[tls.Conn]
}

// outRetain bounds the buffers kept between flushes.
const outRetain = 256 << 10

// ID is unique per connection for the life of the server.
func (c *Conn) ID() uint64 { return c.id }

// RemoteAddr is the peer's "ip:port".
func (c *Conn) RemoteAddr() string { return c.remote }

// LocalAddr is our "ip:port" of this connection.
func (c *Conn) LocalAddr() string { return c.local }

// Closed reports whether the connection has closed.
func (c *Conn) Closed() bool { return c.closed.Load() }

// Close closes the connection after queued writes.
func (c *Conn) Close() {
	c.life.RLock()
	defer c.life.RUnlock()
	if !c.closed.Load() {
		// Through a wake-up of the loop, which first writes the frames
		// queued before (flushOut), then closes.
		_ = c.gc.Wake(func(gc gnet.Conn, _ error) error { return gc.Close() })
	}
}

// ErrConnClosed is returned when writing to a closed connection.
var ErrConnClosed = errors.New("remoting: connection closed")

// WriteResponse queues cmd for writing. The response flag is forced on.
func (c *Conn) WriteResponse(cmd *Command) error {
	cmd.Flag |= FlagResponse
	return c.write(cmd)
}

// write queues cmd's frame. Frames queued while the event loop is busy go out
// together in one write: under load that is one syscall and one loop
// wake-up for many responses instead of one each.
func (c *Conn) write(cmd *Command) error {
	defer cmd.written()
	if tc := c.tc.Load(); tc != nil {
		_, err := tc.Write(AppendFrame(nil, cmd))
		return err
	}
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed.Load() {
		return ErrConnClosed
	}
	c.outMu.Lock()
	c.out = AppendFrame(c.out, cmd)
	wake := !c.woken
	c.woken = true
	c.outMu.Unlock()
	if !wake {
		return nil
	}
	return c.gc.Wake(nil)
}

// writeBytes queues b (a TLS connection's ciphertext) like write's frames.
func (c *Conn) writeBytes(b []byte) error {
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed.Load() {
		return ErrConnClosed
	}
	c.outMu.Lock()
	c.out = append(c.out, b...)
	wake := !c.woken
	c.woken = true
	c.outMu.Unlock()
	if !wake {
		return nil
	}
	return c.gc.Wake(nil)
}

// queueOnLoop queues a response from the connection's event loop, which
// writes it when it is done with the bytes read (OnTraffic): no wake-up.
func (c *Conn) queueOnLoop(cmd *Command) {
	cmd.Flag |= FlagResponse
	c.outMu.Lock()
	c.out = AppendFrame(c.out, cmd)
	c.outMu.Unlock()
	c.inlineOut = true
	cmd.written()
}

// flushOut writes every queued frame; it runs on the connection's event loop.
// gnet keeps what the socket does not take in its own outbound buffer, so the
// buffer is free again when Write returns.
// Only the loop touches spare.
func (c *Conn) flushOut(gc gnet.Conn) {
	c.outMu.Lock()
	buf := c.out
	c.out = c.spare[:0]
	c.woken = false
	c.outMu.Unlock()
	c.spare = nil
	if len(buf) > 0 {
		_, _ = gc.Write(buf)
	}
	if cap(buf) <= outRetain {
		c.spare = buf[:0]
	}
}

// Oneway sends a server-initiated oneway request (flag bit 1 set).
func (c *Conn) Oneway(cmd *Command) error {
	cmd.Flag |= FlagOneway
	return c.write(cmd)
}

// Invoke sends a server-initiated request and waits for the client's response.
func (c *Conn) Invoke(ctx context.Context, cmd *Command) (*Command, error) {
	ch := make(chan *Command, 1)
	c.mu.Lock()
	if c.pending == nil {
		c.pending = make(map[int32]chan *Command)
	}
	c.pending[cmd.Opaque] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, cmd.Opaque)
		c.mu.Unlock()
	}()
	if err := c.write(cmd); err != nil {
		return nil, err
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			return nil, ErrConnClosed
		}
		return resp, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *Conn) deliver(resp *Command) {
	c.mu.Lock()
	ch := c.pending[resp.Opaque]
	delete(c.pending, resp.Opaque)
	c.mu.Unlock()
	if ch != nil {
		ch <- resp
	}
}

func (c *Conn) failPending() {
	c.mu.Lock()
	for k, ch := range c.pending {
		close(ch)
		delete(c.pending, k)
	}
	c.mu.Unlock()
}

// ReadFrame reads one whole frame from r (used by the client and tests).
func ReadFrame(r io.Reader, buf []byte) (*Command, []byte, error) {
	var prefix [4]byte
	if _, err := readFull(r, prefix[:]); err != nil {
		return nil, buf, err
	}
	n, err := FrameLength(prefix[:])
	if err != nil {
		return nil, buf, err
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := readFull(r, buf); err != nil {
		return nil, buf, err
	}
	cmd, err := DecodeFrame(buf)
	return cmd, buf, err
}

func readFull(r io.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

type gnetLogger struct{ l zerolog.Logger }

func (g gnetLogger) Debugf(f string, a ...any) { g.l.Debug().Msgf(f, a...) }
func (g gnetLogger) Infof(f string, a ...any)  { g.l.Debug().Msgf(f, a...) }
func (g gnetLogger) Warnf(f string, a ...any)  { g.l.Warn().Msgf(f, a...) }
func (g gnetLogger) Errorf(f string, a ...any) { g.l.Error().Msgf(f, a...) }
func (g gnetLogger) Fatalf(f string, a ...any) { g.l.Error().Msgf(f, a...) }
