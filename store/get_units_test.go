package store

import (
	"slices"
	"testing"
)

// TestUnitsAhead checks the walk bodyEstimate and ReadResident share: the
// first maxMsgs non-filler units, stopped by maxBytes after the first one,
// and whether a limit (not the end of the units) stopped it.
func TestUnitsAhead(t *testing.T) {
	// Units of sizes 100, filler, 200, 300, filler, 400 at phy 1000, 2000, ...
	sizes := []int32{100, fillerSize, 200, 300, fillerSize, 400}
	units := make([]byte, len(sizes)*cqUnitSize)
	for i, sz := range sizes {
		phy := int64(1000 * (i + 1))
		if sz == fillerSize {
			phy = 0
		}
		putUnit(units[i*cqUnitSize:], phy, sz, 0)
	}
	for _, c := range []struct {
		maxMsgs, maxBytes int
		want              []int32
		full              bool
	}{
		{32, 1 << 20, []int32{100, 200, 300, 400}, false},
		{2, 1 << 20, []int32{100, 200}, true},
		{4, 1 << 20, []int32{100, 200, 300, 400}, true},
		{0, 1 << 20, []int32{100}, true},
		{32, 600, []int32{100, 200, 300}, true},
		{32, 50, []int32{100}, true},
	} {
		var got []int32
		full := unitsAhead(units, c.maxMsgs, c.maxBytes, func(_ int64, size int32) { got = append(got, size) })
		if !slices.Equal(got, c.want) || full != c.full {
			t.Errorf("unitsAhead(maxMsgs %d, maxBytes %d) = %v, full %t; want %v, %t", c.maxMsgs, c.maxBytes, got, full, c.want, c.full)
		}
		var want int
		for _, sz := range c.want {
			want += int(sz)
		}
		if est := bodyEstimate(units, c.maxMsgs, c.maxBytes); est != want {
			t.Errorf("bodyEstimate(maxMsgs %d, maxBytes %d) = %d, want %d", c.maxMsgs, c.maxBytes, est, want)
		}
	}
}

// TestBodyClasses checks the pool's size classes: the smallest power of two
// from 4 KiB holding n, none below 2 KiB or above 1 MiB, and only a buffer
// of exactly a class's size goes back.
func TestBodyClasses(t *testing.T) {
	for _, c := range []struct{ n, class int }{
		{0, -1}, {2047, -1}, {2048, 0}, {4096, 0}, {4097, 1}, {64 << 10, 4}, {64<<10 + 1, 5}, {1 << 20, 8}, {1<<20 + 1, -1},
	} {
		if got := bodyClass(c.n); got != c.class {
			t.Errorf("bodyClass(%d) = %d, want %d", c.n, got, c.class)
		}
		b, p := newBody(c.n)
		if len(b) != 0 || cap(b) < c.n || (p == nil) != (c.class < 0) {
			t.Errorf("newBody(%d): len %d cap %d, pooled %t", c.n, len(b), cap(b), p != nil)
		}
		if c.class >= 0 && cap(b) != 1<<(c.class+minBodyClass) {
			t.Errorf("newBody(%d): cap %d, want the class's %d", c.n, cap(b), 1<<(c.class+minBodyClass))
		}
	}
	odd := make([]byte, 0, 5000)
	recycleBody(&odd) // not a class size: dropped, not pooled
	for range 4 {
		if b, _ := newBody(5000); cap(b) == 5000 {
			t.Fatal("a buffer of no class's size was pooled")
		}
	}
}
