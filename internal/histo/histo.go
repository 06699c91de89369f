// Package histo holds lock-free histograms and a small ring of recent
// events, for figures recorded on hot paths (message sizes, request
// latencies, delivery lateness) and read at scrape time by the metrics
// endpoint and the console. It imports nothing of rmq.
package histo

import (
	"sync"
	"sync/atomic"
)

// Histogram counts int64 observations into fixed buckets with atomic adds:
// Observe takes no lock and allocates nothing.
type Histogram struct {
	bounds []int64         // upper bounds, ascending (a value v lands in the first bound >= v)
	counts []atomic.Uint64 // len(bounds)+1; the last is +Inf
	sum    atomic.Int64
}

// New returns a histogram with the given ascending upper bounds.
func New(bounds ...int64) *Histogram {
	for i := 1; i < len(bounds); i++ {
		if bounds[i] <= bounds[i-1] {
			panic("histo: bounds not ascending")
		}
	}
	return &Histogram{bounds: append([]int64(nil), bounds...), counts: make([]atomic.Uint64, len(bounds)+1)}
}

// Observe counts v.
func (h *Histogram) Observe(v int64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(v)
}

// Snapshot is a histogram read at one time, in Prometheus' form.
type Snapshot struct {
	Bounds     []int64
	Cumulative []uint64 // observations <= Bounds[i]
	Count      uint64
	Sum        int64
}

// Snapshot reads the buckets. Concurrent observations may land between
// bucket reads; Count is the sum of the buckets read, so it stays
// consistent with them.
func (h *Histogram) Snapshot() Snapshot {
	s := Snapshot{Bounds: h.bounds, Cumulative: make([]uint64, len(h.bounds))}
	var run uint64
	for i := range h.bounds {
		run += h.counts[i].Load()
		s.Cumulative[i] = run
	}
	s.Count = run + h.counts[len(h.bounds)].Load()
	s.Sum = h.sum.Load()
	return s
}

// Recent keeps the last n values added, for display.
type Recent[T any] struct {
	mu   sync.Mutex
	buf  []T
	next int
	full bool
}

// NewRecent returns a ring of n values.
func NewRecent[T any](n int) *Recent[T] { return &Recent[T]{buf: make([]T, n)} }

// Add records v, dropping the oldest value when full.
func (r *Recent[T]) Add(v T) {
	r.mu.Lock()
	r.buf[r.next] = v
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
	r.mu.Unlock()
}

// List returns the values, newest first.
func (r *Recent[T]) List() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.next
	if r.full {
		n = len(r.buf)
	}
	out := make([]T, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, r.buf[(r.next-i+len(r.buf))%len(r.buf)])
	}
	return out
}

// LatenessBoundsMs are the buckets of delivery lateness (ms past due).
var LatenessBoundsMs = []int64{1, 5, 10, 50, 100, 500, 1000, 5000, 10000, 60000}

// Delivery is one delayed or timer message stored on its real topic.
type Delivery struct {
	Kind  string // "level 3", "timer"
	Topic string
	MsgID string // UNIQ_KEY
	DueMs int64
	AtMs  int64 // when it was stored
}

// Deliveries records delivery lateness: a histogram and the last ones.
type Deliveries struct {
	Lateness *Histogram
	Recent   *Recent[Delivery]
}

// NewDeliveries keeps the lateness histogram and the last n deliveries.
func NewDeliveries(n int) *Deliveries {
	return &Deliveries{Lateness: New(LatenessBoundsMs...), Recent: NewRecent[Delivery](n)}
}

// Add records d.
func (d *Deliveries) Add(v Delivery) {
	d.Lateness.Observe(max(v.AtMs-v.DueMs, 0))
	d.Recent.Add(v)
}

// Family is a copy-on-write map of counters or histograms, one per key (a
// topic, a request code): what a labelled 5.x instrument records. The keys
// are few and long-lived, so the map is copied on the first use of a key
// and read without a lock: Get of a known key is a map lookup, no lock and
// no allocation.
type Family[K comparable, V any] struct {
	mk func() V
	mu sync.Mutex // serialises adds
	m  atomic.Pointer[map[K]V]
}

// NewFamily returns an empty family whose values mk makes.
func NewFamily[K comparable, V any](mk func() V) *Family[K, V] { return &Family[K, V]{mk: mk} }

// Get returns k's value, adding it on first use.
func (f *Family[K, V]) Get(k K) V {
	if p := f.m.Load(); p != nil {
		if v, ok := (*p)[k]; ok {
			return v
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var old map[K]V
	if p := f.m.Load(); p != nil {
		old = *p
		if v, ok := old[k]; ok {
			return v
		}
	}
	m := make(map[K]V, len(old)+1)
	for k2, v2 := range old {
		m[k2] = v2
	}
	v := f.mk()
	m[k] = v
	f.m.Store(&m)
	return v
}

// Lookup returns k's value if k was used, without adding it. A caller
// whose key may point into a buffer it does not own (a string sliced from
// a mapped file) looks up first and adds a copy.
func (f *Family[K, V]) Lookup(k K) (V, bool) {
	if p := f.m.Load(); p != nil {
		v, ok := (*p)[k]
		return v, ok
	}
	var zero V
	return zero, false
}

// Each calls fn for every key used so far, in no order.
func (f *Family[K, V]) Each(fn func(K, V)) {
	if p := f.m.Load(); p != nil {
		for k, v := range *p {
			fn(k, v)
		}
	}
}

// ByKey is a family of histograms with the same bounds.
type ByKey[K comparable] struct{ *Family[K, *Histogram] }

// NewByKey returns an empty family with the given ascending upper bounds.
func NewByKey[K comparable](bounds ...int64) *ByKey[K] {
	New(bounds...) // checks them
	b := append([]int64(nil), bounds...)
	return &ByKey[K]{NewFamily[K](func() *Histogram { return New(b...) })}
}

// Observe counts v for k.
func (b *ByKey[K]) Observe(k K, v int64) { b.Get(k).Observe(v) }
