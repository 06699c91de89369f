package store

import (
	"math/bits"
	"sync"
)

// Pull bodies (GetResult.body) are the store's largest per-request
// allocation: up to maxBytes (256 KiB by default) for every pull, zeroed by
// the allocator and then overwritten by the copy. A caller that is done
// with a result (the broker, once the response frame holding the body is
// copied out) hands the buffer back with GetResult.Release, and a later
// read reuses it. Buffers come in power-of-two classes from
// 1<<minBodyClass to 1<<maxBodyClass bytes, one sync.Pool each; a body
// outside them is allocated and collected as before.
const (
	minBodyClass = 12 // 4 KiB
	maxBodyClass = 20 // 1 MiB
)

var bodyPools [maxBodyClass - minBodyClass + 1]sync.Pool

// bodyClass is the index of the smallest class holding n bytes, or -1 when
// n is below the smallest class's half (not worth a pooled buffer) or
// above the largest class.
func bodyClass(n int) int {
	if n < 1<<(minBodyClass-1) || n > 1<<maxBodyClass {
		return -1
	}
	return max(bits.Len(uint(n-1)), minBodyClass) - minBodyClass
}

// newBody returns an empty buffer with room for n bytes, and the pooled
// buffer it is (nil when n has no class).
func newBody(n int) ([]byte, *[]byte) {
	c := bodyClass(n)
	if c < 0 {
		return make([]byte, 0, n), nil
	}
	if p, _ := bodyPools[c].Get().(*[]byte); p != nil {
		return (*p)[:0], p
	}
	p := new([]byte)
	*p = make([]byte, 0, 1<<(c+minBodyClass))
	return *p, p
}

// recycleBody puts a buffer newBody returned back into its class.
func recycleBody(p *[]byte) {
	c := cap(*p)
	if c&(c-1) != 0 || c < 1<<minBodyClass || c > 1<<maxBodyClass {
		return
	}
	*p = (*p)[:0]
	bodyPools[bits.TrailingZeros(uint(c))-minBodyClass].Put(p)
}
