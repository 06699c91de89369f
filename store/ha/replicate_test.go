package ha

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/store"
)

func TestSlaveRestartCatchesUp(t *testing.T) {
	p := newPair(t)
	put(t, p.mst, 0, 150)
	p.caughtUp()
	p.client.Close()
	p.sst.Close()
	put(t, p.mst, 150, 250)
	p.sst = openStore(t, p.sdir, "127.0.0.1:10921")
	p.startClient()
	p.caughtUp()
	sameCommitLog(t, p.mst, p.sst, 0)
	sameQueues(t, p.mst, p.sst, 400)
}

func TestMasterRestartSlaveReconnects(t *testing.T) {
	p := newPair(t)
	put(t, p.mst, 0, 150)
	p.caughtUp()
	p.master.Close()
	p.mst.Close()
	testutil.WaitFor(t, testWait, func() bool { return !p.client.Stats().Connected }, "the slave to see the master gone")
	p.mst = openStore(t, p.mdir, "127.0.0.1:10911")
	put(t, p.mst, 150, 250)
	p.startMaster()
	p.caughtUp() // advances the slave's clock past its reconnection delay
	sameCommitLog(t, p.mst, p.sst, 0)
	sameQueues(t, p.mst, p.sst, 400)
	if s := p.client.Stats().Sessions; s < 2 {
		t.Fatalf("%d sessions, want a reconnection", s)
	}
}

// A new slave (report 0) gets the master's newest file only, as stock:
// its commitlog starts there and its queues hold what that file holds.
func TestNewSlaveStartsAtMastersNewestFile(t *testing.T) {
	p := &pair{t: t, mdir: t.TempDir(), sdir: t.TempDir(), mclk: newClock(), sclk: newClock()}
	p.haAddr = freeAddr(t)
	p.mst = openStore(t, p.mdir, "127.0.0.1:10911")
	t.Cleanup(p.close)
	put(t, p.mst, 0, 400)
	p.startMaster()
	p.sst = openStore(t, p.sdir, "127.0.0.1:10921")
	p.startClient()
	p.requested()
	put(t, p.mst, 400, 5)
	p.caughtUp()
	max := p.mst.MaxPhyOffset()
	first := max - max%testFileSize
	if first == 0 {
		t.Fatal("test needs several master files")
	}
	if min := p.sst.MinPhyOffset(); min != first {
		t.Fatalf("slave commitlog starts at %d, want the master's newest file %d", min, first)
	}
	sameCommitLog(t, p.mst, p.sst, first)
	for q := int32(0); q < 3; q++ {
		if a, b := p.mst.MaxOffsetInQueue(testTopic, q), p.sst.MaxOffsetInQueue(testTopic, q); a != b {
			t.Fatalf("queue %d: max offset master %d, slave %d", q, a, b)
		}
		last := p.mst.MaxOffsetInQueue(testTopic, q) - 1
		ra, rb := p.mst.GetMessage(testTopic, q, last, 1, 1<<20, nil), p.sst.GetMessage(testTopic, q, last, 1, 1<<20, nil)
		if rb.Status != store.Found || string(ra.Messages[0]) != string(rb.Messages[0]) {
			t.Fatalf("queue %d offset %d on the slave: %v", q, last, rb.Status)
		}
	}
}

// fakeSlave is a raw protocol peer on the master's HA port.
type fakeSlave struct {
	t  *testing.T
	nc net.Conn
	fr frameReader
}

func dialFake(t *testing.T, addr string) *fakeSlave {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &fakeSlave{t: t, nc: nc, fr: frameReader{r: nc}}
}

func (f *fakeSlave) report(off int64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(off))
	if _, err := f.nc.Write(b[:]); err != nil {
		f.t.Fatal(err)
	}
}

// frame reads the next frame within testWait.
func (f *fakeSlave) frame() (int64, []byte, error) {
	f.nc.SetReadDeadline(time.Now().Add(testWait))
	return f.fr.next()
}

// closed waits until the master closes the connection (EOF), skipping frames.
func (f *fakeSlave) closed() {
	f.t.Helper()
	for {
		_, _, err := f.frame()
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			f.t.Fatal("the master kept the connection open")
		}
		return
	}
}

func masterOnly(t *testing.T, msgs int, mutate func(*MasterConfig)) *pair {
	p := &pair{t: t, mdir: t.TempDir(), mclk: newClock(), sclk: newClock(), masterCfgOverrides: mutate}
	p.haAddr = freeAddr(t)
	p.mst = openStore(t, p.mdir, "127.0.0.1:10911")
	t.Cleanup(p.close)
	put(t, p.mst, 0, msgs)
	p.startMaster()
	return p
}

// The master streams from exactly the reported offset, in chunks of at
// most the batch size that never cross a file, the BLANK filler included.
func TestMasterStreamsFromRequestOffsetInBatches(t *testing.T) {
	p := masterOnly(t, 200, nil)
	f := dialFake(t, p.haAddr)
	from := int64(12345) // not even a record boundary: stock does not check
	f.report(from)
	buf := make([]byte, 1<<16)
	for next := from; next < p.mst.MaxPhyOffset(); {
		off, body, err := f.frame()
		if err != nil {
			t.Fatal(err)
		}
		if off != next || len(body) == 0 || len(body) > 5000 {
			t.Fatalf("frame at %d of %d bytes, want at %d, 1..5000 bytes", off, len(body), next)
		}
		if off/testFileSize != (off+int64(len(body))-1)/testFileSize {
			t.Fatalf("frame [%d, %d) crosses a file", off, off+int64(len(body)))
		}
		n, _ := p.mst.ReadCommitLog(off, buf[:len(body)])
		if string(buf[:n]) != string(body) {
			t.Fatalf("frame at %d differs from the commitlog", off)
		}
		next += int64(len(body))
		f.report(next)
	}
	if p.master.Push2SlaveMaxOffset() != p.mst.MaxPhyOffset() && !waitPush(p, p.mst.MaxPhyOffset()) {
		t.Fatalf("push2SlaveMaxOffset %d", p.master.Push2SlaveMaxOffset())
	}
}

func waitPush(p *pair, want int64) bool {
	deadline := time.Now().Add(testWait)
	for time.Now().Before(deadline) {
		if p.master.Push2SlaveMaxOffset() >= want {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// 4.9.8 closes a connection whose ack is above the master's end (PR
// #3016); AllowAckAboveMax (5.x) keeps it. Either way push2SlaveMaxOffset
// counts only acks it took.
func TestAckAboveMasterMaxCloses(t *testing.T) {
	p := masterOnly(t, 20, nil)
	f := dialFake(t, p.haAddr)
	max := p.mst.MaxPhyOffset()
	f.report(max)
	testutil.WaitFor(t, testWait, func() bool { return p.master.Push2SlaveMaxOffset() == max }, "the first report")
	f.report(max + 1000)
	f.closed()
	testutil.WaitFor(t, testWait, func() bool { return p.master.Connections() == 0 }, "the connection to be dropped")
	if got := p.master.Push2SlaveMaxOffset(); got != max {
		t.Fatalf("push2SlaveMaxOffset %d after a refused ack, want %d", got, max)
	}

	p5 := masterOnly(t, 20, func(c *MasterConfig) { c.AllowAckAboveMax = true })
	f5 := dialFake(t, p5.haAddr)
	f5.report(0)
	f5.report(p5.mst.MaxPhyOffset() + 1000)
	testutil.WaitFor(t, testWait, func() bool { return p5.master.Push2SlaveMaxOffset() == p5.mst.MaxPhyOffset()+1000 }, "the 5.x ack")
	if p5.master.Connections() != 1 {
		t.Fatal("5.x mode closed the connection")
	}
}

// Of what one read returns, only the last complete value counts; a value
// split across writes is put together.
func TestAckSplitAcrossWrites(t *testing.T) {
	p := masterOnly(t, 20, nil)
	f := dialFake(t, p.haAddr)
	f.report(0)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], 777)
	f.nc.Write(b[:3])
	time.Sleep(20 * time.Millisecond) // let the master read the first part alone
	f.nc.Write(b[3:])
	testutil.WaitFor(t, testWait, func() bool { return p.master.Push2SlaveMaxOffset() == 777 }, "the split ack")
}

func TestMasterHeartbeatAndHousekeeping(t *testing.T) {
	p := masterOnly(t, 20, nil)
	f := dialFake(t, p.haAddr)
	max := p.mst.MaxPhyOffset()
	f.report(max)
	testutil.WaitFor(t, testWait, func() bool { return p.master.Push2SlaveMaxOffset() == max }, "the request")
	// Idle past haSendHeartbeatInterval: an empty frame at the next offset.
	p.mclk.Advance(5*time.Second + time.Millisecond)
	off, body, err := f.frame()
	if err != nil || off != max || len(body) != 0 {
		t.Fatalf("heartbeat: %d, %d bytes, %v; want %d, 0 bytes", off, len(body), err, max)
	}
	// Nothing read for haHousekeepingInterval: closed.
	p.mclk.Advance(20 * time.Second)
	f.closed()
	testutil.WaitFor(t, testWait, func() bool { return p.master.Connections() == 0 }, "the housekeeping close")
}

// fakeMaster accepts connections on a free port and hands them over.
func fakeMaster(t *testing.T) (string, <-chan net.Conn) {
	ln, err := net.Listen("tcp", freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			ch <- c
		}
	}()
	return ln.Addr().String(), ch
}

func accept(t *testing.T, ch <-chan net.Conn, advance func()) net.Conn {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for time.Now().Before(deadline) {
		select {
		case c := <-ch:
			return c
		case <-time.After(10 * time.Millisecond):
			if advance != nil {
				advance()
			}
		}
	}
	t.Fatal("the slave did not connect")
	return nil
}

func readReport(t *testing.T, c net.Conn) int64 {
	t.Helper()
	var b [8]byte
	c.SetReadDeadline(time.Now().Add(testWait))
	if _, err := io.ReadFull(c, b[:]); err != nil {
		t.Fatal(err)
	}
	return int64(binary.BigEndian.Uint64(b[:]))
}

func sendFrame(c net.Conn, off int64, size int32, body []byte) {
	var h [headerSize]byte
	putHeader(h[:], off, size)
	c.Write(append(h[:], body...))
}

func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(testWait))
	var b [64]byte
	for {
		if _, err := c.Read(b[:]); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("the slave kept the connection open")
			}
			return
		}
	}
}

// A slave with data that is pushed another offset closes and connects
// again after its reconnection delay (stock "master pushed offset not
// equal"); a header with a negative or oversized body closes it too.
func TestClientClosesOnBadFrames(t *testing.T) {
	sdir := t.TempDir()
	sst := openStore(t, sdir, "127.0.0.1:10921")
	t.Cleanup(func() { sst.Close() })
	m := openStore(t, t.TempDir(), "127.0.0.1:10911")
	t.Cleanup(func() { m.Close() })
	put(t, m, 0, 5)
	buf := make([]byte, m.MaxPhyOffset())
	n, _ := m.ReadCommitLog(0, buf)
	if _, err := sst.AppendReplicated(0, buf[:n]); err != nil {
		t.Fatal(err)
	}
	end := sst.ReplicaEnd()
	addr, conns := fakeMaster(t)
	clk := newClock()
	c := NewClient(sst, ClientConfig{Clock: clk})
	c.Start()
	t.Cleanup(c.Close)
	c.SetMasterAddr(addr)
	advance := func() { clk.Advance(5 * time.Second) }
	for _, bad := range []struct {
		name string
		off  int64
		size int32
	}{
		{"offset not equal", end + 100, 10},
		{"negative size", end, -1},
		{"oversized body", end, MaxBodySize + 1},
	} {
		conn := accept(t, conns, advance)
		if got := readReport(t, conn); got != end {
			t.Fatalf("%s: first report %d, want %d", bad.name, got, end)
		}
		sendFrame(conn, bad.off, bad.size, nil)
		expectClosed(t, conn)
	}
	if sst.ReplicaEnd() != end {
		t.Fatalf("bad frames changed the slave: end %d, want %d", sst.ReplicaEnd(), end)
	}
	// A heartbeat keeps the session; a good frame is appended and acked.
	conn := accept(t, conns, advance)
	readReport(t, conn)
	sendFrame(conn, end, 0, nil)
	put(t, m, 5, 1)
	k, _ := m.ReadCommitLog(end, buf)
	sendFrame(conn, end, int32(k), buf[:k])
	// accept advances the clock while it waits, which can fire a
	// heartbeat: it repeats the last report, end, ahead of the ack.
	got := readReport(t, conn)
	for got == end {
		got = readReport(t, conn)
	}
	if got != end+int64(k) {
		t.Fatalf("ack %d, want %d", got, end+int64(k))
	}
}

// The slave reports its offset every haSendHeartbeatInterval and closes a
// connection on which nothing arrived for haHousekeepingInterval.
func TestClientHeartbeatAndHousekeeping(t *testing.T) {
	sst := openStore(t, t.TempDir(), "127.0.0.1:10921")
	t.Cleanup(func() { sst.Close() })
	addr, conns := fakeMaster(t)
	clk := newClock()
	c := NewClient(sst, ClientConfig{Clock: clk})
	c.Start()
	t.Cleanup(c.Close)
	c.SetMasterAddr(addr)
	conn := accept(t, conns, nil)
	if got := readReport(t, conn); got != 0 {
		t.Fatalf("first report %d", got)
	}
	testutil.WaitFor(t, testWait, func() bool {
		clk.Advance(5*time.Second + time.Millisecond)
		conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		var b [8]byte
		_, err := io.ReadFull(conn, b[:])
		return err == nil
	}, "a heartbeat report")
	clk.Advance(25 * time.Second)
	testutil.WaitFor(t, testWait, func() bool {
		clk.Advance(5 * time.Second)
		return !c.Stats().Connected
	}, "the housekeeping close")
}
