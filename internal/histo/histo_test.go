package histo

import (
	"reflect"
	"testing"
)

func TestHistogram(t *testing.T) {
	h := New(10, 100, 1000)
	for _, v := range []int64{0, 10, 11, 100, 5000, -3} {
		h.Observe(v)
	}
	s := h.Snapshot()
	if !reflect.DeepEqual(s.Cumulative, []uint64{3, 5, 5}) || s.Count != 6 || s.Sum != 5118 {
		t.Errorf("snapshot %+v", s)
	}
	if n := testing.AllocsPerRun(100, func() { h.Observe(50) }); n != 0 {
		t.Errorf("Observe allocates %.1f", n)
	}
}

func TestRecent(t *testing.T) {
	r := NewRecent[int](3)
	if got := r.List(); len(got) != 0 {
		t.Errorf("empty ring %v", got)
	}
	r.Add(1)
	r.Add(2)
	if got := r.List(); !reflect.DeepEqual(got, []int{2, 1}) {
		t.Errorf("%v", got)
	}
	r.Add(3)
	r.Add(4)
	if got := r.List(); !reflect.DeepEqual(got, []int{4, 3, 2}) {
		t.Errorf("%v", got)
	}
}

// TestByKey: one histogram per key with the family's bounds, kept across
// adds of other keys; observing a known key allocates nothing.
func TestByKey(t *testing.T) {
	b := NewByKey[string](10, 100)
	b.Observe("a", 5)
	h := b.Get("a")
	b.Observe("b", 50)
	b.Observe("a", 500)
	if b.Get("a") != h {
		t.Fatal("adding b replaced a's histogram")
	}
	got := map[string]Snapshot{}
	b.Each(func(k string, h *Histogram) { got[k] = h.Snapshot() })
	if len(got) != 2 || got["a"].Count != 2 || got["a"].Sum != 505 || got["a"].Cumulative[0] != 1 ||
		got["b"].Count != 1 || got["b"].Cumulative[1] != 1 || !reflect.DeepEqual(got["b"].Bounds, []int64{10, 100}) {
		t.Errorf("%+v", got)
	}
	key := string([]byte("a")) // not the literal: a lookup by a fresh string
	if n := testing.AllocsPerRun(100, func() { b.Observe(key, 7) }); n != 0 {
		t.Errorf("Observe of a known key allocates %.1f", n)
	}
}
