package remoting

import (
	"bytes"
	"fmt"
	"net"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/ratelog"
	"github.com/rmqio/rmq/internal/testutil"
)

// trafficSnap is what the server holds for one connection after a read.
type trafficSnap struct {
	have, capacity int   // len and cap of the partial-frame buffer
	inflight       int64 // the server's charged total
}

// trafficWatch records the last snapshot per connection (keyed by the
// client's address) through Server.trafficHook.
type trafficWatch struct {
	mu   sync.Mutex
	last map[string]trafficSnap
	note chan struct{}
}

func watchTraffic(s *Server) *trafficWatch {
	w := &trafficWatch{last: map[string]trafficSnap{}, note: make(chan struct{}, 1)}
	s.trafficHook = func(c *Conn) {
		w.mu.Lock()
		w.last[c.remote] = trafficSnap{have: len(c.partialBytes()), capacity: c.partialCap(), inflight: s.inflight.Load()}
		w.mu.Unlock()
		select {
		case w.note <- struct{}{}:
		default:
		}
	}
	return w
}

// until waits until the server has buffered have bytes of r's partial
// frame, and returns that snapshot.
func (w *trafficWatch) until(t *testing.T, r *rawConn, have int) trafficSnap {
	t.Helper()
	key := r.nc.LocalAddr().String()
	// A failure bound, not a measurement: under the race detector on a
	// loaded 2-core machine, 16 MiB through the event loop once took more
	// than ioWait.
	deadline := time.NewTimer(3 * ioWait)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		snap, ok := w.last[key]
		w.mu.Unlock()
		if ok && snap.have == have {
			return snap
		}
		select {
		case <-w.note:
		case <-deadline.C:
			t.Fatalf("the server never buffered %d bytes of %s's frame (last %+v)", have, key, snap)
		}
	}
}

// startWith is startServer for a server a test prepares before Start.
func startWith(t *testing.T, h Handler, opts ServerOptions, prepare func(*Server)) *Server {
	t.Helper()
	if len(opts.Addrs) == 0 {
		opts.Addrs = []string{testutil.FreeAddr(t)}
	}
	s, err := NewServer(h, opts)
	if err != nil {
		t.Fatal(err)
	}
	prepare(s)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// echoFrame is a whole echo request frame of exactly size bytes.
func echoFrame(t *testing.T, size int) []byte {
	t.Helper()
	req := NewRequest(codeEcho, map[string]string{"tag": "big"}, nil)
	req.Body = bytes.Repeat([]byte{'x'}, size-len(EncodeFrame(req)))
	f := EncodeFrame(req)
	if len(f) != size {
		t.Fatalf("frame of %d bytes, want %d", len(f), size)
	}
	return f
}

// checkProportional asserts that a partial-frame buffer is proportional to
// the bytes in it: never above twice them (or the small kept buffer), never
// above the frame.
func checkProportional(t *testing.T, snap trafficSnap, frame int) {
	t.Helper()
	if snap.capacity > max(partialKeep, 2*snap.have) || snap.capacity > frame {
		t.Fatalf("server holds %d bytes for %d received of a %d-byte frame", snap.capacity, snap.have, frame)
	}
	if snap.inflight < int64(snap.capacity) {
		t.Fatalf("%d bytes charged for a %d-byte buffer", snap.inflight, snap.capacity)
	}
}

func TestServerStalledFrameHoldsWhatArrived(t *testing.T) {
	h := newTestHandler()
	var w *trafficWatch
	s := startWith(t, h, ServerOptions{}, func(s *Server) { w = watchTraffic(s) })
	frame := echoFrame(t, MaxFrameSize)
	r := dialRaw(t, s.opts.Addrs[0])

	sent := 0
	for _, upTo := range []int{4 + 100, 64 << 10, 1 << 20, 5 << 20, MaxFrameSize - 1} {
		r.write(frame[sent:upTo])
		sent = upTo
		checkProportional(t, w.until(t, r, sent), len(frame))
	}
	// A second connection stalls after 1 MiB: its buffer is its own.
	r2 := dialRaw(t, s.opts.Addrs[0])
	r2.write(frame[:1<<20])
	snap := w.until(t, r2, 1<<20)
	checkProportional(t, snap, len(frame))

	// The last byte completes the frame: it is served, and the buffer goes.
	r.write(frame[sent:])
	resp := r.expect()
	if resp.Code != Success || len(resp.Body) < MaxFrameSize-1024 || len(bytes.Trim(resp.Body, "x")) != 0 {
		t.Fatalf("echo of the 16 MiB frame: code %d, %d body bytes", resp.Code, len(resp.Body))
	}
	if got := s.inflight.Load(); got != int64(snap.capacity) {
		t.Fatalf("after the frame, %d bytes charged, want only the other connection's %d", got, snap.capacity)
	}
	r2.nc.Close()
	recv(t, h.closed, "the stalled connection's close")
	if got := s.inflight.Load(); got != 0 {
		t.Fatalf("after the close, %d bytes charged", got)
	}
}

func TestServerInflightBudget(t *testing.T) {
	h := newTestHandler()
	var logs testutil.LockedBuffer
	var w *trafficWatch
	const budget = 4 << 20
	s := startWith(t, h, ServerOptions{MaxInflightBytes: budget, Logger: zerolog.New(&logs)}, func(s *Server) { w = watchTraffic(s) })
	addr := s.opts.Addrs[0]

	// A stalls 3 MiB into an 8 MiB frame, within the budget.
	a := dialRaw(t, addr)
	a.write(echoFrame(t, 8<<20)[:3<<20])
	held := w.until(t, a, 3<<20).inflight
	if held > budget {
		t.Fatalf("A alone is charged %d", held)
	}
	// B's 2 MiB frame goes past it: A, the largest holder, is closed and B
	// is served.
	b := dialRaw(t, addr)
	big := echoFrame(t, 2<<20)
	b.write(big[:3<<19])
	a.expectClosed()
	b.write(big[3<<19:])
	if resp := b.expect(); resp.Code != Success || len(resp.Body) == 0 {
		t.Fatalf("B's frame: %v", resp)
	}
	if !strings.Contains(logs.String(), "over budget") || !strings.Contains(logs.String(), a.nc.LocalAddr().String()) {
		t.Fatalf("no budget log line naming A:\n%s", logs.String())
	}
	c := dialRaw(t, addr)
	c.ping(SerializeJSON)

	// D alone would take more than the budget: it holds the most, so D is
	// the one closed; the others are still served.
	d := dialRaw(t, addr)
	_ = d.nc.SetWriteDeadline(time.Now().Add(ioWait))
	_, _ = d.nc.Write(echoFrame(t, 8<<20)[:6<<20]) // fails once the server closes
	d.expectClosed()
	b.ping(SerializeRocketMQ)
	c.ping(SerializeJSON)
	recv(t, h.closed, "a close")
	recv(t, h.closed, "a close")
	if got := s.inflight.Load(); got != 0 {
		t.Fatalf("%d bytes charged once A and D are gone", got)
	}
}

func TestServerIdleTimeout(t *testing.T) {
	h := newTestHandler()
	var logs testutil.LockedBuffer
	m := clock.NewManual(time.Unix(1000, 0))
	armed := m.TimerCreated()
	var w *trafficWatch
	s := startWith(t, h, ServerOptions{IdleTimeout: 120 * time.Second, Clock: m, Logger: zerolog.New(&logs)},
		func(s *Server) { w = watchTraffic(s) })
	recv(t, armed, "the idle sweeper")
	// step advances the clock and returns once the sweep at the new time is
	// done (the sweeper arms its next timer after it).
	step := func(d time.Duration) {
		t.Helper()
		next := m.TimerCreated()
		m.Advance(d)
		recv(t, next, "an idle sweep")
	}
	addr := s.opts.Addrs[0]
	quiet := dialRaw(t, addr)
	quiet.ping(SerializeJSON)
	busy := dialRaw(t, addr)
	busy.ping(SerializeJSON)
	recv(t, h.seen, "quiet's request")
	busyConn := recv(t, h.seen, "busy's request").conn
	// A slow loris: part of a frame, then nothing. Bytes are not requests.
	loris := dialRaw(t, addr)
	loris.write(echoFrame(t, 1000)[:500])
	w.until(t, loris, 500) // open on the server before the clock moves

	step(60 * time.Second)
	busy.ping(SerializeRocketMQ)
	loris.write([]byte{0})
	w.until(t, loris, 501)
	step(60 * time.Second) // quiet and loris: 120 s without a request
	quiet.expectClosed()
	loris.expectClosed()
	if busyConn.closing.Load() {
		t.Fatal("busy closed 60 s after its last request")
	}
	step(59 * time.Second)
	if busyConn.closing.Load() {
		t.Fatal("busy closed 119 s after its last request")
	}
	step(time.Second)
	busy.expectClosed()
	out := logs.String()
	for _, r := range []*rawConn{quiet, loris, busy} {
		if !strings.Contains(out, "closing idle connection") || !strings.Contains(out, r.nc.LocalAddr().String()) {
			t.Fatalf("no idle log line for %s:\n%s", r.nc.LocalAddr(), out)
		}
	}
	// New connections are served as before.
	dialRaw(t, addr).ping(SerializeJSON)
}

func TestServerIdleTimeoutOff(t *testing.T) {
	m := clock.NewManual(time.Unix(1000, 0))
	s := startServer(t, newTestHandler(), ServerOptions{Clock: m})
	r := dialRaw(t, s.opts.Addrs[0])
	r.ping(SerializeJSON)
	if m.Pending() != 0 {
		t.Fatalf("%d timers armed with the idle timeout off", m.Pending())
	}
	m.Advance(24 * time.Hour)
	r.ping(SerializeJSON)
}

func TestServerMaxConns(t *testing.T) {
	h := newTestHandler()
	var logs testutil.LockedBuffer
	s := startServer(t, h, ServerOptions{MaxConns: 2, Logger: zerolog.New(&logs)})
	addr := s.opts.Addrs[0]
	a := dialRaw(t, addr)
	a.ping(SerializeJSON)
	b := dialRaw(t, addr)
	b.ping(SerializeJSON)
	c := dialRaw(t, addr)
	c.expectClosed()
	if !strings.Contains(logs.String(), "serverMaxConnections") || !strings.Contains(logs.String(), c.nc.LocalAddr().String()) {
		t.Fatalf("no log line for the refused connection:\n%s", logs.String())
	}
	b.ping(SerializeJSON)
	a.nc.Close()
	recv(t, h.closed, "a's close")
	dialRaw(t, addr).ping(SerializeJSON)
	b.ping(SerializeJSON)
}

func TestServerBindLoopbackOnly(t *testing.T) {
	// Linux routes all of 127/8 to the loopback interface: a socket bound
	// to 0.0.0.0 answers on 127.0.0.2, one bound to 127.0.0.1 does not.
	wild, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	port := wild.Addr().(*net.TCPAddr).Port
	probe, err := net.DialTimeout("tcp4", net.JoinHostPort("127.0.0.2", strconv.Itoa(port)), ioWait)
	wild.Close()
	if err != nil {
		t.Skipf("127.0.0.2 does not reach a wildcard listener here: %v", err)
	}
	probe.Close()

	s := startServer(t, newTestHandler(), ServerOptions{})
	addr := s.opts.Addrs[0]
	dialRaw(t, addr).ping(SerializeJSON)
	_, port2, _ := net.SplitHostPort(addr)
	if nc, err := net.DialTimeout("tcp4", net.JoinHostPort("127.0.0.2", port2), ioWait); err == nil {
		nc.Close()
		t.Fatalf("a server bound to %s accepted a connection on 127.0.0.2", addr)
	}
}

func TestServerConfig(t *testing.T) {
	c := DefaultServerConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	var o ServerOptions
	c.Apply(&o)
	if o.IdleTimeout != 120*time.Second || o.MaxConns != 0 || o.MaxInflightBytes != 256<<20 {
		t.Fatalf("defaults applied as %+v", o)
	}
	zero := ServerConfig{}
	if err := zero.Validate(); err != nil || zero.ServerMaxInflightBytes != DefaultMaxInflightBytes {
		t.Fatalf("zero config: %v, budget %d", err, zero.ServerMaxInflightBytes)
	}
	for _, bad := range []ServerConfig{
		{ServerChannelMaxIdleTimeSeconds: -1},
		{ServerMaxConnections: -1},
		{ServerMaxInflightBytes: MaxFrameSize - 1},
		{ServerMaxInflightBytes: -1},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestFrameReaderAllocs pins the hot path: a frame read whole costs what
// decoding it costs, nothing more; so does one split across two reads once
// the connection has its small buffer.
func TestFrameReaderAllocs(t *testing.T) {
	frame := EncodeFrame(echoReq(SerializeRocketMQ, "allocs"))
	decodeOnly := testing.AllocsPerRun(100, func() {
		if _, err := decodeFrame(frame[4:], nil, false); err != nil {
			t.Fatal(err)
		}
	})
	d := newStreamDecoder()
	whole := testing.AllocsPerRun(100, func() {
		d.in.b = frame
		if cmd, err := d.srv.nextFrame(d.conn, &d.in); cmd == nil || err != nil {
			t.Fatalf("whole frame: %v, %v", cmd, err)
		}
	})
	split := testing.AllocsPerRun(100, func() {
		d.in.b = frame[:10]
		if cmd, err := d.srv.nextFrame(d.conn, &d.in); cmd != nil || err != nil {
			t.Fatalf("first half: %v, %v", cmd, err)
		}
		d.in.b = frame[10:]
		if cmd, err := d.srv.nextFrame(d.conn, &d.in); cmd == nil || err != nil {
			t.Fatalf("second half: %v, %v", cmd, err)
		}
	})
	if whole != decodeOnly || split != decodeOnly {
		t.Fatalf("allocations per frame: decode %v, read whole %v, read in two %v", decodeOnly, whole, split)
	}
}

// The chunks a large frame doubles through (64 KiB to 1 MiB) come from a
// pool: a second frame read in pieces allocates them no more, only the
// buffer its pieces are assembled into (the command's body), and the
// pooled sizes are exactly those.
func TestPartialChunksArePooled(t *testing.T) {
	if testutil.RaceEnabled {
		t.Skip("sync.Pool drops items at random under -race")
	}
	for n, want := range map[int]bool{
		partialKeep: true, 128 << 10: true, partialChunkMax: true,
		partialKeep - 1: false, 3 << 16: false, 2 * partialChunkMax: false,
	} {
		if got := pooledChunk(n); got != want {
			t.Errorf("pooledChunk(%d) = %v, want %v", n, got, want)
		}
	}
	frame := echoFrame(t, 1<<20)
	d := newStreamDecoder()
	read := func() {
		for off := 0; off < len(frame); off += 16 << 10 {
			d.in.b = frame[off:min(off+16<<10, len(frame))]
			cmd, err := d.srv.nextFrame(d.conn, &d.in)
			if err != nil || (cmd != nil) != (off+16<<10 >= len(frame)) {
				t.Fatalf("at %d: %v, %v", off, cmd, err)
			}
		}
	}
	// A collection empties sync.Pools, and an item put on one P is not
	// found from another while it sits in that P's private slot: one P and
	// no collection between the two reads.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	read() // fills the pools
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	read()
	runtime.ReadMemStats(&after)
	// The assembled frame is about 1 MiB; the chunks would be as much again.
	if got := after.TotalAlloc - before.TotalAlloc; got > uint64(len(frame))+(256<<10) {
		t.Fatalf("a second 1 MiB frame in pieces allocated %d bytes, want about the frame's %d", got, len(frame))
	}
}

// TestServerRefusalLinesRateLimited: a client reconnecting in a loop past
// serverMaxConnections, or sending broken frames, writes one line per kind
// and interval, not one per connection; every refusal is counted.
func TestServerRefusalLinesRateLimited(t *testing.T) {
	h := newTestHandler()
	var logs testutil.LockedBuffer
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	log := zerolog.New(&logs)
	refusals := ratelog.New(log, clk, time.Minute)
	s := startServer(t, h, ServerOptions{MaxConns: 1, Logger: log, Refusals: refusals})
	addr := s.opts.Addrs[0]
	dialRaw(t, addr).ping(SerializeJSON)
	const n = 30
	for range 2 * n {
		dialRaw(t, addr).expectClosed() // the first connection holds the only place
	}
	if got := refusals.Total("conn_limit", 0); got != 2*n {
		t.Fatalf("counted %d refused connections, want %d", got, 2*n)
	}
	if lines := strings.Count(logs.String(), "serverMaxConnections reached"); lines != 1 {
		t.Fatalf("%d log lines for %d refused connections, want 1:\n%s", lines, 2*n, logs.String())
	}
	clk.Advance(time.Minute)
	refusals.Flush()
	if !strings.Contains(logs.String(), fmt.Sprintf(`"suppressed":%d`, 2*n-1)) {
		t.Fatalf("no summary of the %d suppressed lines:\n%s", 2*n-1, logs.String())
	}
}
