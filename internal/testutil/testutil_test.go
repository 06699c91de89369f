package testutil

import (
	"net"
	"strconv"
	"sync"
	"testing"
	"time"
)

func TestFreePortPairIsListenable(t *testing.T) {
	p := FreePortPair(t)
	for _, port := range []int{p, p - 2} {
		l, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatalf("port %d: %v", port, err)
		}
		l.Close()
	}
}

func TestFreePortPairAvoids(t *testing.T) {
	first := FreePortPair(t)
	for range 20 {
		p := FreePortPair(t, first)
		if p == first || p-2 == first {
			t.Fatalf("FreePortPair(%d) = %d: overlaps the avoided port", first, p)
		}
	}
}

func TestWaitForReturnsOnceTrue(t *testing.T) {
	n := 0
	WaitFor(t, DefaultTimeout, func() bool { n++; return n == 3 }, "the third poll")
	if n != 3 {
		t.Fatalf("polled %d times, want 3", n)
	}
}

// fatalRecorder stops at Fatalf like testing.T, without failing the test.
type fatalRecorder struct {
	testing.TB
	failed bool
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(string, ...any) {
	f.failed = true
	panic(f)
}

func TestWaitForFailsAtTheDeadline(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != rec {
				panic(r)
			}
		}()
		WaitFor(rec, -time.Second, func() bool { return false }, "never")
	}()
	if !rec.failed {
		t.Fatal("WaitFor with a false condition and no time left did not fail")
	}
}

func TestLockedBufferKeepsConcurrentWrites(t *testing.T) {
	var b LockedBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := len(b.String()); got != 800 {
		t.Fatalf("len = %d, want 800", got)
	}
}

// FreePort stays below the ephemeral range, where no outgoing connection
// can take a port a test frees to restart a server on it.
func TestFreePortBelowEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	for range 50 {
		if p := FreePort(t); p < freePortBase || p >= low {
			t.Fatalf("FreePort %d outside %d..%d", p, freePortBase, low-1)
		}
	}
}
