package store

import "github.com/rmqio/rmq/internal/bufpool"

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

var bodyPool = bufpool.New(minBodyClass, maxBodyClass)

// bodyClass is the index of the smallest class holding n bytes, or -1 when
// n is below the smallest class's half (not worth a pooled buffer) or
// above the largest class.
func bodyClass(n int) int {
	if n < 1<<(minBodyClass-1) {
		return -1
	}
	return bodyPool.Class(n)
}

// newBody returns an empty buffer with room for n bytes, and the pooled
// buffer it is (nil when n has no class).
func newBody(n int) ([]byte, *[]byte) {
	if bodyClass(n) < 0 {
		return make([]byte, 0, n), nil
	}
	p := bodyPool.Get(n)
	return *p, p
}

// recycleBody puts a buffer newBody returned back into its class.
func recycleBody(p *[]byte) { bodyPool.Put(p) }
