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
