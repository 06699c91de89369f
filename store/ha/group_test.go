package ha

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
)

// One ack releases every send it covers, at once and in one pass; the
// rest wait for a later ack or time out after slaveTimeout.
func TestWaitReplicatedManyReleasedByOneAck(t *testing.T) {
	p := masterOnly(t, 50, nil)
	max := p.mst.MaxPhyOffset()
	if p.master.IsSlaveOK(max) {
		t.Fatal("IsSlaveOK with no slave")
	}
	f := dialFake(t, p.haAddr)
	f.report(0)
	testutil.WaitFor(t, testWait, func() bool { return p.master.Connections() == 1 }, "the fake slave")
	if !p.master.IsSlaveOK(max) {
		t.Fatal("IsSlaveOK false with a slave 0 bytes... within haSlaveFallbehindMax")
	}
	const n = 1000
	var mu sync.Mutex
	results := map[int]bool{}
	for i := 0; i < n; i++ {
		p.master.WaitReplicated(int64(i+1)*10, func(ok bool) {
			mu.Lock()
			results[i] = ok
			mu.Unlock()
		})
	}
	if g := p.master.group.Pending(); g != n {
		t.Fatalf("%d waiting, want %d", g, n)
	}
	f.report(5000) // covers sends 0..499
	testutil.WaitFor(t, testWait, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(results) == 500
	}, "the first 500 sends to be released")
	mu.Lock()
	for i := 0; i < 500; i++ {
		if ok, done := results[i]; !done || !ok {
			t.Fatalf("send %d: %v %v", i, ok, done)
		}
	}
	mu.Unlock()
	// A send already covered is answered on the caller's goroutine.
	var now atomic.Bool
	p.master.WaitReplicated(4000, func(ok bool) { now.Store(ok) })
	if !now.Load() {
		t.Fatal("a covered send was not answered at once")
	}
	p.mclk.Advance(3*time.Second + time.Millisecond)
	testutil.WaitFor(t, testWait, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(results) == n
	}, "the rest to time out")
	for i := 500; i < n; i++ {
		if results[i] {
			t.Fatalf("send %d released without an ack", i)
		}
	}
}

// Deadlines follow the clock: a send registered later expires later.
func TestWaitReplicatedTimesOutAtItsOwnDeadline(t *testing.T) {
	clk := newClock()
	g := NewWaiters(clk, 3*time.Second)
	defer g.Close()
	var first, second atomic.Int32
	g.Add(100, func(ok bool) { first.Store(map[bool]int32{true: 1, false: 2}[ok]) })
	clk.Advance(2 * time.Second)
	g.Add(200, func(ok bool) { second.Store(map[bool]int32{true: 1, false: 2}[ok]) })
	clk.Advance(time.Second + time.Millisecond)
	testutil.WaitFor(t, testWait, func() bool { return first.Load() == 2 }, "the first to time out")
	time.Sleep(20 * time.Millisecond)
	if second.Load() != 0 {
		t.Fatal("the second timed out early")
	}
	g.Ack(200)
	if second.Load() != 1 {
		t.Fatalf("second = %d after its ack", second.Load())
	}
	// Close fails what still waits.
	var third atomic.Int32
	g.Add(300, func(ok bool) { third.Store(map[bool]int32{true: 1, false: 2}[ok]) })
	g.Close()
	if third.Load() != 2 {
		t.Fatal("close left a waiter")
	}
}

// IsSlaveOK fails while the acked offset is haSlaveFallbehindMax or more
// behind the put.
func TestIsSlaveOKFallBehind(t *testing.T) {
	p := masterOnly(t, 10, func(c *MasterConfig) { c.FallBehindMax = 1000 })
	f := dialFake(t, p.haAddr)
	f.report(500)
	testutil.WaitFor(t, testWait, func() bool { return p.master.Push2SlaveMaxOffset() == 500 }, "the report")
	if !p.master.IsSlaveOK(1499) || p.master.IsSlaveOK(1500) {
		t.Fatal("fall-behind bound wrong")
	}
}

func FuzzFrameReader(f *testing.F) {
	var ok bytes.Buffer
	var h [headerSize]byte
	putHeader(h[:], 100, 3)
	ok.Write(h[:])
	ok.WriteString("abc")
	putHeader(h[:], 103, 0)
	ok.Write(h[:])
	f.Add(ok.Bytes())
	putHeader(h[:], 0, -1)
	f.Add(h[:])
	putHeader(h[:], 0, MaxBodySize+1)
	f.Add(h[:])
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := frameReader{r: bytes.NewReader(data)}
		pos := 0
		for {
			off, body, err := fr.next()
			if err != nil {
				if err != io.EOF && err != io.ErrUnexpectedEOF && !errors.Is(err, errFrame) {
					t.Fatalf("unexpected error %v", err)
				}
				if errors.Is(err, errFrame) {
					size := int32(binary.BigEndian.Uint32(data[pos+8:]))
					if size >= 0 && size <= MaxBodySize {
						t.Fatalf("size %d refused", size)
					}
				}
				return
			}
			if len(body) > MaxBodySize || int64(binary.BigEndian.Uint64(data[pos:])) != off ||
				!bytes.Equal(body, data[pos+headerSize:pos+headerSize+len(body)]) {
				t.Fatalf("frame at %d misparsed", pos)
			}
			pos += headerSize + len(body)
		}
	})
}

func FuzzAckParser(f *testing.F) {
	f.Add([]byte("0123456789abcdefXYZ"), uint8(3))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 7}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		step := int(chunk%17) + 1
		var a ackParser
		for pos := 0; pos < len(data); pos += step {
			end := min(pos+step, len(data))
			v, ok := a.feed(data[pos:end])
			// The value is the stream's last complete 8-byte value, if this
			// read completed one.
			k := end - end%8
			want := k > pos-pos%8 && k >= 8
			if ok != want {
				t.Fatalf("read %d..%d: completed=%v", pos, end, ok)
			}
			if ok && v != int64(binary.BigEndian.Uint64(data[k-8:k])) {
				t.Fatalf("read %d..%d: value %d", pos, end, v)
			}
		}
	})
}

// Set may lower the acked offset (a sync state set that gained a member),
// and a Set overtaken by a later one is ignored.
func TestWaitersSetLowersAndOrders(t *testing.T) {
	clk := newClock()
	g := NewWaiters(clk, 3*time.Second)
	defer g.Close()
	g.Set(100, 1)
	var early atomic.Int32
	g.Add(90, func(ok bool) { early.Store(map[bool]int32{true: 1, false: 2}[ok]) })
	if early.Load() != 1 {
		t.Fatal("a send below the acked offset waits")
	}
	g.Set(50, 2) // lowered: 90 now waits
	var w atomic.Int32
	g.Add(90, func(ok bool) { w.Store(map[bool]int32{true: 1, false: 2}[ok]) })
	g.Set(200, 2) // stale (same number): ignored
	if w.Load() != 0 {
		t.Fatal("a stale Set released a send")
	}
	g.Set(95, 3)
	if w.Load() != 1 {
		t.Fatalf("w = %d after Set(95)", w.Load())
	}
}
