package ha

import (
	"container/heap"
	"sync"
	"time"

	"github.com/rmqio/rmq/internal/clock"
)

// Waiters is the SYNC_MASTER wait (4.9.8 GroupTransferService; also
// store/ha/autoswitch's, in controller mode): sends waiting until the
// slaves acked their end. Waiters sit in a heap by end,
// so an ack pops exactly the ones it covers, and in a FIFO by deadline
// (every deadline is registration time + slaveTimeout, so registration
// order is deadline order), which one goroutine expires. A waiter done by
// either side is marked done and skipped by the other.
type Waiters struct {
	clk     clock.Clock
	timeout time.Duration

	mu     sync.Mutex
	acked  int64  // push2SlaveMaxOffset as last seen under mu
	seq    uint64 // the last Set's number
	byEnd  waiterHeap
	fifo   []*waiter // deadline order; head at fifoAt
	fifoAt int
	wake   chan struct{} // the expiry goroutine: a first waiter arrived
	stop   chan struct{}
	closed bool
	done   sync.WaitGroup
}

type waiter struct {
	end      int64
	deadline time.Time
	fn       func(ok bool)
	done     bool
}

type waiterHeap []*waiter

func (h waiterHeap) Len() int           { return len(h) }
func (h waiterHeap) Less(i, j int) bool { return h[i].end < h[j].end }
func (h waiterHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *waiterHeap) Push(x any)        { *h = append(*h, x.(*waiter)) }
func (h *waiterHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return w
}

func NewWaiters(clk clock.Clock, timeout time.Duration) *Waiters {
	g := &Waiters{clk: clk, timeout: timeout, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	g.done.Add(1)
	go g.expireLoop()
	return g
}

// Add registers fn for end, or runs fn(true) at once when acked covers it
// already (fn(false) when closed).
func (g *Waiters) Add(end int64, fn func(ok bool)) {
	g.mu.Lock()
	if g.closed || g.acked >= end {
		ok := !g.closed
		g.mu.Unlock()
		fn(ok)
		return
	}
	w := &waiter{end: end, deadline: g.clk.Now().Add(g.timeout), fn: fn}
	heap.Push(&g.byEnd, w)
	first := g.fifoAt == len(g.fifo)
	g.fifo = append(g.fifo, w)
	g.mu.Unlock()
	if first {
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}
}

// Ack runs fn(true) for every waiter whose end is at most acked; the
// acked offset only rises (the classic master's push2SlaveMaxOffset).
func (g *Waiters) Ack(acked int64) {
	g.mu.Lock()
	if acked > g.acked {
		g.acked = acked
	}
	g.release()
}

// Set makes the acked offset exactly acked, which may lower it, and runs
// fn(true) for every waiter it covers. Controller mode needs it: the
// offset there is the minimum ack over the sync state set, which goes down
// when the set gains a member. Callers compute acked under their own lock
// and number the calls there (seq, increasing); a call overtaken by a later
// one on its way here is ignored, so an old value never replaces a newer.
func (g *Waiters) Set(acked int64, seq uint64) {
	g.mu.Lock()
	if seq <= g.seq {
		g.mu.Unlock()
		return
	}
	g.seq, g.acked = seq, acked
	g.release()
}

// release pops the waiters acked covers and runs them once g.mu, which the
// caller holds, is released.
func (g *Waiters) release() {
	var ready []*waiter
	for len(g.byEnd) > 0 && g.byEnd[0].end <= g.acked {
		w := heap.Pop(&g.byEnd).(*waiter)
		if !w.done {
			w.done = true
			ready = append(ready, w)
		}
	}
	g.mu.Unlock()
	for _, w := range ready {
		w.fn(true)
	}
}

// expire runs fn(false) for every waiter past its deadline at now and
// returns the next deadline (zero: none).
func (g *Waiters) expire(now time.Time) time.Time {
	var late []*waiter
	g.mu.Lock()
	for g.fifoAt < len(g.fifo) {
		w := g.fifo[g.fifoAt]
		if !w.done && w.deadline.After(now) {
			break
		}
		g.fifo[g.fifoAt] = nil
		g.fifoAt++
		if !w.done {
			w.done = true
			late = append(late, w)
		}
	}
	if g.fifoAt == len(g.fifo) {
		g.fifo, g.fifoAt = g.fifo[:0], 0
	} else if g.fifoAt > 1024 && g.fifoAt*2 > len(g.fifo) {
		n := copy(g.fifo, g.fifo[g.fifoAt:])
		clear(g.fifo[n:])
		g.fifo, g.fifoAt = g.fifo[:n], 0
	}
	// Done waiters stay in the heap until an ack pops them; without acks
	// (no slave) the heap holds at most what the FIFO held.
	if len(g.fifo) == 0 && len(g.byEnd) > 0 {
		clear(g.byEnd)
		g.byEnd = g.byEnd[:0]
	}
	var next time.Time
	if g.fifoAt < len(g.fifo) {
		next = g.fifo[g.fifoAt].deadline
	}
	g.mu.Unlock()
	for _, w := range late {
		w.fn(false)
	}
	return next
}

func (g *Waiters) expireLoop() {
	defer g.done.Done()
	for {
		next := g.expire(g.clk.Now())
		var t clock.Timer
		var fire <-chan time.Time
		if !next.IsZero() {
			t = clock.TimerAt(g.clk, next)
			fire = t.C()
		}
		select {
		case <-fire:
		case <-g.wake:
		case <-g.stop:
			if t != nil {
				t.Stop()
			}
			return
		}
		if t != nil {
			t.Stop()
		}
	}
}

// Pending is the number of waiters not yet done.
func (g *Waiters) Pending() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, w := range g.fifo[g.fifoAt:] {
		if !w.done {
			n++
		}
	}
	return n
}

// Close stops the expiry goroutine and runs every waiting fn with false.
func (g *Waiters) Close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	var rest []*waiter
	for _, w := range g.fifo[g.fifoAt:] {
		if !w.done {
			w.done = true
			rest = append(rest, w)
		}
	}
	g.fifo, g.fifoAt, g.byEnd = nil, 0, nil
	g.mu.Unlock()
	close(g.stop)
	g.done.Wait()
	for _, w := range rest {
		w.fn(false)
	}
}
