// Package bufpool keeps byte buffers of power-of-two capacities for reuse,
// one sync.Pool per capacity: the store's pull bodies and the remoting
// server's partial-frame chunks.
package bufpool

import (
	"math/bits"
	"sync"
)

// Classes are the capacities 1<<minShift to 1<<maxShift bytes, each with
// its pool.
type Classes struct {
	minShift int
	pools    []sync.Pool
}

// New returns the classes from 1<<minShift to 1<<maxShift bytes.
func New(minShift, maxShift int) *Classes {
	return &Classes{minShift: minShift, pools: make([]sync.Pool, maxShift-minShift+1)}
}

// Class is the index of the smallest class holding n bytes (0 for n at or
// below the smallest), or -1 when n is above the largest.
func (c *Classes) Class(n int) int {
	k := max(bits.Len(uint(max(n, 1)-1)), c.minShift) - c.minShift
	if k >= len(c.pools) {
		return -1
	}
	return k
}

// Get returns an empty buffer with room for n bytes, of its class's
// capacity, from the class's pool or new; nil when n is above the largest
// class.
func (c *Classes) Get(n int) *[]byte {
	k := c.Class(n)
	if k < 0 {
		return nil
	}
	if p, _ := c.pools[k].Get().(*[]byte); p != nil {
		*p = (*p)[:0]
		return p
	}
	p := new([]byte)
	*p = make([]byte, 0, 1<<(k+c.minShift))
	return p
}

// Put hands *p back to the pool of its capacity for a later Get; a buffer
// whose capacity is no class's is dropped. Nothing may use it afterwards.
func (c *Classes) Put(p *[]byte) {
	n := cap(*p)
	if n&(n-1) != 0 || n < 1<<c.minShift || n > 1<<(c.minShift+len(c.pools)-1) {
		return
	}
	*p = (*p)[:0]
	c.pools[bits.TrailingZeros(uint(n))-c.minShift].Put(p)
}
