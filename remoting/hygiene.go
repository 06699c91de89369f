package remoting

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/rmqio/rmq/internal/bufpool"
	"github.com/rmqio/rmq/third_party/gnet"
)

// Connection hygiene: what a server does against clients that connect and
// then send nothing, or send part of a frame and stall.
//
//   - Idle timeout (ServerOptions.IdleTimeout, the stock
//     serverChannelMaxIdleTimeSeconds): a connection on which no complete
//     frame has arrived for that long is closed, as the IdleStateHandler of
//     the Java NettyRemotingServer does. Stock clients send a heartbeat or a
//     route query at least every 30 s, so they never meet it.
//   - Partial frames: the bytes of a frame that has not arrived whole are
//     copied out of gnet's read buffer into per-connection buffers that grow
//     with what has arrived (a head of up to 64 KiB, then chunks of up to
//     1 MiB, each as large as what has arrived so far), never to the length
//     the prefix declares: the memory held stays below twice the bytes
//     received. A frame read whole in one read is decoded in place, as
//     before; a large one is assembled once, into its body.
//   - Global budget (ServerOptions.MaxInflightBytes, or the Budget a
//     broker shares with its gRPC endpoint: budget.go): the partial-frame
//     buffers of all connections together, with whatever else shares the
//     budget, may not exceed it. When a buffer
//     would grow past it, the connection holding the largest buffer is
//     closed (the one growing, if it holds the most), with a log line.
//     The evicted connection's charge is returned at once, its memory
//     when its event loop closes it, a moment later.
//     Closing rather than answering SYSTEM_BUSY once the frame is complete:
//     the memory is already held while the frame arrives, and a client that
//     stalls mid-frame would never get the answer. Frames that arrive in one
//     read and decoded requests are not counted.
//   - Connection limit (ServerOptions.MaxConns): past it, a new connection
//     is closed as soon as it is accepted, with a log line.

// Defaults of the connection settings.
const (
	// DefaultIdleTimeout is the stock serverChannelMaxIdleTimeSeconds.
	DefaultIdleTimeout = 120 * time.Second
	// DefaultMaxInflightBytes is the budget of partial-frame buffers.
	DefaultMaxInflightBytes = 256 << 20
)

// Partial frames: the head starts at partialMin bytes and doubles up to
// partialKeep, and stays with its connection for the next partial frame;
// past it, chunks of at most partialChunkMax bytes.
const (
	partialMin      = 4 << 10
	partialKeep     = 64 << 10
	partialChunkMax = 1 << 20
)

// ErrInflightBudget closes a connection whose partial frame would take the
// server's partial-frame buffers past ServerOptions.MaxInflightBytes while
// it holds the largest of them.
var ErrInflightBudget = errors.New("remoting: in-flight request bytes over budget")

// errClosing stops reading from a connection the server is closing (idle,
// or evicted for the budget); that was logged already.
var errClosing = errors.New("remoting: connection closing")

// ServerConfig is the connection part of the name server's and the broker's
// configuration; `conf` tags are the config file keys.
type ServerConfig struct {
	// ServerChannelMaxIdleTimeSeconds closes a connection after this many
	// seconds without a complete inbound frame; 0 never does (stock key,
	// default 120).
	ServerChannelMaxIdleTimeSeconds int `conf:"serverChannelMaxIdleTimeSeconds"`
	// ServerMaxConnections caps the open connections; 0 is unlimited.
	ServerMaxConnections int `conf:"serverMaxConnections"`
	// ServerMaxInflightBytes caps the bytes held for frames that have not
	// arrived whole, over all connections; 0 means the default, 256 MiB. It
	// must hold one largest frame (16 MiB).
	ServerMaxInflightBytes int64 `conf:"serverMaxInflightBytes"`
	// TLSConfig holds the stock TLS keys (tls.go).
	TLSConfig
	// tlsMode and tls are what Validate built from TLSConfig.
	tlsMode  TLSMode
	tls      *tls.Config
	tlsBuilt bool
}

// DefaultServerConfig returns the defaults: 120 s idle timeout, no
// connection limit, a 256 MiB in-flight budget.
func DefaultServerConfig() ServerConfig {
	return ServerConfig{
		ServerChannelMaxIdleTimeSeconds: int(DefaultIdleTimeout / time.Second),
		ServerMaxInflightBytes:          DefaultMaxInflightBytes,
		TLSConfig:                       DefaultTLSConfig(),
	}
}

// Validate checks the settings and fills a zero ServerMaxInflightBytes with
// the default.
func (c *ServerConfig) Validate() error {
	var errs []error
	if c.ServerChannelMaxIdleTimeSeconds < 0 {
		errs = append(errs, fmt.Errorf("serverChannelMaxIdleTimeSeconds %d is negative", c.ServerChannelMaxIdleTimeSeconds))
	}
	if c.ServerMaxConnections < 0 {
		errs = append(errs, fmt.Errorf("serverMaxConnections %d is negative", c.ServerMaxConnections))
	}
	switch {
	case c.ServerMaxInflightBytes == 0:
		c.ServerMaxInflightBytes = DefaultMaxInflightBytes
	case c.ServerMaxInflightBytes < MaxFrameSize:
		errs = append(errs, fmt.Errorf("serverMaxInflightBytes %d is below one largest frame (%d)", c.ServerMaxInflightBytes, MaxFrameSize))
	}
	if !c.tlsBuilt {
		mode, cfg, err := c.TLSConfig.Build()
		if err != nil {
			errs = append(errs, err)
		} else {
			c.tlsMode, c.tls, c.tlsBuilt = mode, cfg, true
		}
	}
	return errors.Join(errs...)
}

// RebuildTLS makes the next Validate build the TLS settings again from the
// tls.* keys (a config update may have changed them).
func (c *ServerConfig) RebuildTLS() { c.tlsBuilt = false }

// Apply copies the settings into o.
func (c ServerConfig) Apply(o *ServerOptions) {
	o.IdleTimeout = time.Duration(c.ServerChannelMaxIdleTimeSeconds) * time.Second
	o.MaxConns = c.ServerMaxConnections
	o.MaxInflightBytes = c.ServerMaxInflightBytes
	o.TLSMode, o.TLS = c.tlsMode, c.tls
}

// inbound is what the frame reader needs of a gnet.Conn.
type inbound interface {
	InboundBuffered() int
	Peek(n int) ([]byte, error)
	Discard(n int) (int, error)
}

// nextFrame returns the next complete frame of c: from its partial frame
// once that is whole, else straight from in's bytes, decoded in place. It
// returns (nil, nil) when no frame is complete; the bytes of an incomplete
// one are then in c's partial frame and in is empty. An error means the
// connection must close. It runs on c's event loop.
func (s *Server) nextFrame(c *Conn, in inbound) (*Command, error) {
	if c.plen > 0 {
		return s.fillPartial(c, in)
	}
	avail := in.InboundBuffered()
	if avail < 4 {
		if avail == 0 {
			return nil, nil
		}
		return nil, s.stash(c, in, avail, 4)
	}
	prefix, err := in.Peek(4)
	if err != nil {
		return nil, nil
	}
	n, err := FrameLength(prefix)
	if err != nil {
		return nil, err
	}
	if avail < 4+n {
		return nil, s.stash(c, in, avail, 4+n)
	}
	frame, err := in.Peek(4 + n)
	if err != nil {
		return nil, nil
	}
	cmd, at, err := decodeHeader(frame[4:], s.rawExt)
	if err == nil {
		s.copyBody(cmd, frame[4+at:])
	}
	_, _ = in.Discard(4 + n)
	return cmd, err
}

// stash moves the first k bytes of in to c's partial frame, a frame of size
// bytes (prefix included; 4 while the prefix is incomplete).
func (s *Server) stash(c *Conn, in inbound, k, size int) error {
	b, err := in.Peek(k)
	if err != nil {
		return nil
	}
	if err := s.appendPartial(c, b, size); err != nil {
		return err
	}
	_, _ = in.Discard(k)
	return nil
}

// fillPartial moves bytes of in to c's partial frame up to its end and
// decodes the frame once it is whole.
func (s *Server) fillPartial(c *Conn, in inbound) (*Command, error) {
	for {
		have, size := c.plen, 4
		if have >= 4 {
			n, err := FrameLength(c.partial[:4])
			if err != nil {
				return nil, err
			}
			size = 4 + n
		}
		avail := in.InboundBuffered()
		if avail == 0 {
			return nil, nil
		}
		if err := s.stash(c, in, min(size-have, avail), size); err != nil {
			return nil, err
		}
		if c.plen < size || have < 4 {
			// in ran dry (the next round returns), or the prefix has just
			// become whole (the next round reads the frame's size).
			continue
		}
		return s.decodePartial(c)
	}
}

// appendPartial appends b to c's partial frame of size bytes, charging what
// it allocates to the server's budget. The first partialKeep bytes go to
// the contiguous head c.partial, which grows as they arrive; the rest to
// chunks, each as large as what is buffered so far, at most
// partialChunkMax: the capacity held stays below twice the bytes held (or
// partialKeep), and no byte is copied twice while the frame arrives.
func (s *Server) appendPartial(c *Conn, b []byte, size int) error {
	if c.closing.Load() {
		return errClosing // evicted or idle: buffer nothing more
	}
	if room := min(size, partialKeep) - len(c.partial); room > 0 && len(b) > 0 {
		k := min(room, len(b))
		newCap := cap(c.partial)
		if need := len(c.partial) + k; need > newCap {
			newCap = partialCap(newCap, need, max(min(size, partialKeep), partialMin))
		}
		charged := 0 // the head kept from a previous frame is not charged
		if c.plen > 0 {
			charged = cap(c.partial)
		}
		if newCap > charged {
			if err := s.charge(c, int64(newCap-charged)); err != nil {
				return err
			}
		}
		if newCap > cap(c.partial) {
			c.partial = append(make([]byte, 0, newCap), c.partial...)
		}
		c.partial = append(c.partial, b[:k]...)
		c.plen += k
		b = b[k:]
	}
	for len(b) > 0 {
		last := len(c.chunks) - 1
		if last < 0 || len(c.chunks[last]) == cap(c.chunks[last]) {
			n := min(max(c.plen, partialKeep), partialChunkMax, size-c.plen)
			if err := s.charge(c, int64(n)); err != nil {
				return err
			}
			c.chunks = append(c.chunks, getChunk(n))
			last++
		}
		ch := c.chunks[last]
		k := min(cap(ch)-len(ch), len(b))
		c.chunks[last] = append(ch, b[:k]...)
		c.plen += k
		b = b[k:]
	}
	return nil
}

// decodePartial decodes c's whole partial frame and empties it. The body
// of a frame that needed chunks is assembled once, into the command's body
// (lent, when the server lends it: lend.go), so its bytes are not copied a
// third time.
func (s *Server) decodePartial(c *Conn) (*Command, error) {
	var cmd *Command
	var err error
	head := c.partial[4:]
	if at, ok := headerEnd(head); ok && at <= len(head) {
		// The header is in the head (always, but for a header over 64 KiB).
		if cmd, at, err = decodeHeader(head, s.rawExt); err == nil && c.plen-4 > at {
			body := append(s.newBody(cmd, c.plen-4-at), head[at:]...)
			for _, ch := range c.chunks {
				body = append(body, ch...)
			}
			cmd.Body = clip(body)
		}
	} else {
		frame := make([]byte, c.plen-4)
		n := copy(frame, head)
		for _, ch := range c.chunks {
			n += copy(frame[n:], ch)
		}
		cmd, err = decodeFrame(frame, s.rawExt, true)
	}
	for _, ch := range c.chunks {
		putChunk(ch) // copied out: nothing else refers to it
	}
	c.partial, c.plen = c.partial[:0], 0
	clear(c.chunks)
	c.chunks = c.chunks[:0]
	if c.charged != 0 {
		c.held.Add(int64(-c.charged))
		s.inflight.Add(int64(-c.charged))
		c.charged = 0
	}
	return cmd, err
}

// Chunks of partial frames come from a pool per power-of-two size from
// partialKeep to partialChunkMax (the sizes a frame's chunks double
// through; the last, the frame's remainder, is allocated as it comes): a new
// chunk of a large frame was a fresh allocation, zeroed and, in a VM that
// hands free memory back to its host, faulted in page by page, a fifth of
// the broker's CPU at 1 MiB messages (workload c of bench/compare).
var chunkPool = bufpool.New(bits.Len(partialKeep)-1, bits.Len(partialChunkMax)-1)

// pooledChunk reports whether chunks of capacity n come from chunkPool:
// exactly a class's size, so the capacity charged is the one asked for.
func pooledChunk(n int) bool {
	return n >= partialKeep && n <= partialChunkMax && n&(n-1) == 0
}

// getChunk returns an empty chunk of capacity n.
func getChunk(n int) []byte {
	if pooledChunk(n) {
		return *chunkPool.Get(n)
	}
	return make([]byte, 0, n)
}

// putChunk gives ch back to its pool once its bytes are copied out.
func putChunk(ch []byte) { chunkPool.Put(&ch) }

// partialCap is the capacity the head of a partial frame, of capacity cur,
// grows to for need bytes when it may hold limit bytes at most.
func partialCap(cur, need, limit int) int {
	c := max(cur, partialMin)
	for c < need {
		c *= 2
	}
	return max(min(c, limit), need)
}

// charge adds delta bytes of c's buffer to the budget. Past the budget it
// closes the connections holding the largest buffers until the rest fits,
// or fails when c holds the largest itself. c.held and s.inflight move
// together, so s.inflight is always the sum of every open connection's
// held, whichever loop evicts whom.
func (s *Server) charge(c *Conn, delta int64) error {
	c.charged += int(delta)
	c.held.Add(delta)
	if s.inflight.Add(delta) <= s.maxInflight || s.maxInflight <= 0 {
		return nil
	}
	for s.inflight.Load() > s.maxInflight {
		v := s.largestHolder(c)
		if v == nil || v == c {
			c.closing.Store(true)
			s.refusals.Warn(&s.log, "inflight_budget", 0).Object("client", c).Int64("held", c.held.Load()).Int64("budget", s.maxInflight).
				Msg("closing connection: in-flight request bytes over budget, and it holds the largest partial frame")
			return ErrInflightBudget
		}
		if !v.closing.CompareAndSwap(false, true) {
			continue
		}
		r := v.held.Swap(0)
		s.inflight.Add(-r)
		s.refusals.Warn(&s.log, "inflight_budget", 0).Object("client", v).Int64("held", r).Int64("budget", s.maxInflight).Str("for", c.remote).
			Msg("closing connection: in-flight request bytes over budget, and it holds the largest partial frame")
		v.Close()
	}
	return nil
}

// largestHolder returns the open connection, not already closing, that
// holds the most partial-frame bytes; on a tie it prefers one other than c.
func (s *Server) largestHolder(c *Conn) *Conn {
	var best *Conn
	var most int64
	s.conns.Range(func(_, v any) bool {
		x := v.(*Conn)
		h := x.held.Load()
		if h <= 0 || x.closing.Load() {
			return true
		}
		if best == nil || h > most || (h == most && best == c) {
			best, most = x, h
		}
		return true
	})
	return best
}

// dropPartial returns a closed connection's buffers and their charge.
func (s *Server) dropPartial(c *Conn) {
	c.partial, c.chunks, c.plen, c.charged = nil, nil, 0, 0
	s.inflight.Add(-c.held.Swap(0))
}

// sweepIdle closes every connection idle for at least IdleTimeout at now
// (unix nanoseconds of the server clock).
func (s *Server) sweepIdle(now int64) {
	limit := int64(s.opts.IdleTimeout)
	s.conns.Range(func(_, v any) bool {
		c := v.(*Conn)
		idle := now - c.lastFrame.Load()
		if idle < limit || c.Closed() || !c.closing.CompareAndSwap(false, true) {
			return true
		}
		// Not rate-limited: a line costs the client a connection held for
		// the whole idle timeout.
		s.log.Info().Object("client", c).Dur("idle", time.Duration(idle)).
			Msg("closing idle connection: no complete request within serverChannelMaxIdleTimeSeconds")
		c.Close()
		return true
	})
}

// idleLoop keeps s.now current and sweeps idle connections, once a second
// (or once per IdleTimeout when that is shorter), on the server clock. It
// runs only when IdleTimeout is set.
func (s *Server) idleLoop() {
	defer close(s.idleDone)
	every := min(time.Second, s.opts.IdleTimeout)
	for {
		t := s.clock.NewTimer(every)
		select {
		case <-s.quit:
			t.Stop()
			return
		case <-t.C():
		}
		now := s.clock.Now().UnixNano()
		s.now.Store(now)
		s.sweepIdle(now)
	}
}

// admit counts a new connection against MaxConns; false means close it.
func (s *Server) admit(remote string) bool {
	n := s.open.Add(1)
	if s.opts.MaxConns <= 0 || n <= int64(s.opts.MaxConns) {
		return true
	}
	s.open.Add(-1)
	s.refusals.Warn(&s.log, "conn_limit", 0).Str("remote", remote).Int("limit", s.opts.MaxConns).
		Msg("closing new connection: serverMaxConnections reached")
	return false
}

var _ inbound = gnet.Conn(nil)
