package bufpool

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/rmqio/rmq/internal/testutil"
)

func TestClasses(t *testing.T) {
	c := New(12, 20) // 4 KiB to 1 MiB
	for _, tc := range []struct{ n, class int }{
		{0, 0}, {1, 0}, {4096, 0}, {4097, 1}, {64 << 10, 4}, {64<<10 + 1, 5}, {1 << 20, 8}, {1<<20 + 1, -1},
	} {
		if got := c.Class(tc.n); got != tc.class {
			t.Errorf("Class(%d) = %d, want %d", tc.n, got, tc.class)
		}
		p := c.Get(tc.n)
		if (p == nil) != (tc.class < 0) {
			t.Fatalf("Get(%d) = %v, want pooled %t", tc.n, p, tc.class >= 0)
		}
		if p != nil && (len(*p) != 0 || cap(*p) != 1<<(tc.class+12)) {
			t.Errorf("Get(%d): len %d cap %d, want 0 and %d", tc.n, len(*p), cap(*p), 1<<(tc.class+12))
		}
	}
}

// A buffer handed back is the next Get's of its class; one of no class's
// capacity is dropped.
func TestPutThenGet(t *testing.T) {
	if testutil.RaceEnabled {
		t.Skip("sync.Pool drops items at random under -race")
	}
	// One P and no collection: an item in another P's private slot, or a
	// GC, would hide it.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	c := New(16, 20)
	p := c.Get(100 << 10)
	*p = append(*p, 1, 2, 3)
	c.Put(p)
	if q := c.Get(128 << 10); q != p || len(*q) != 0 {
		t.Fatalf("Get after Put returned %p (len %d), want the buffer put back %p emptied", q, len(*q), p)
	}
	odd := make([]byte, 0, 5000)
	c.Put(&odd)
	big := make([]byte, 0, 2<<20)
	c.Put(&big)
	for range 4 {
		if q := c.Get(64 << 10); cap(*q) != 64<<10 {
			t.Fatalf("Get(64 KiB) returned a buffer of capacity %d", cap(*q))
		}
	}
}
