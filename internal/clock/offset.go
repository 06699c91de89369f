package clock

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Offset is the wall clock shifted forward by an offset that only grows: it
// runs at the speed of real time, and Advance jumps it ahead. Timers fire when
// the shifted time reaches their deadline, whichever comes first: the real
// time passing or an Advance over it. They never fire early on this clock.
//
// It lets a test server skip hours of delays in milliseconds while everything
// else (network timeouts, heartbeats) keeps real time.
type Offset struct {
	off atomic.Int64 // ns added to time.Now

	mu     sync.Mutex
	timers map[*offsetTimer]struct{} // armed, not fired nor stopped
}

// NewOffset returns a clock that reads the wall clock plus initial (which
// may be negative) until advanced.
func NewOffset(initial time.Duration) *Offset {
	o := &Offset{timers: map[*offsetTimer]struct{}{}}
	o.off.Store(int64(initial))
	return o
}

// Now implements Clock: the wall clock plus the offset.
func (o *Offset) Now() time.Time { return time.Now().Add(time.Duration(o.off.Load())) }

// Offset is how far the clock is ahead of the wall clock (negative: behind).
func (o *Offset) Offset() time.Duration { return time.Duration(o.off.Load()) }

// NewTimer implements Clock.
func (o *Offset) NewTimer(d time.Duration) Timer {
	t := &offsetTimer{o: o, c: make(chan time.Time, 1)}
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.Now()
	t.at = now.Add(d)
	if d <= 0 {
		t.c <- now
		return t
	}
	o.timers[t] = struct{}{}
	t.real = time.AfterFunc(d, t.due)
	return t
}

// Advance moves the clock forward by d (a negative d is ignored) and fires,
// in deadline order, every timer whose deadline the clock has now reached;
// the others are re-armed for their shorter remaining wait.
func (o *Offset) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.off.Add(int64(d))
	now := o.Now()
	var due []*offsetTimer
	for t := range o.timers {
		if rest := t.at.Sub(now); rest > 0 {
			t.real.Reset(rest)
		} else {
			due = append(due, t)
		}
	}
	sort.Slice(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		o.fire(t, now)
	}
}

// Next is the earliest deadline of the armed timers; false when none is.
func (o *Offset) Next() (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var next time.Time
	found := false
	for t := range o.timers {
		if !found || t.at.Before(next) {
			next, found = t.at, true
		}
	}
	return next, found
}

// fire delivers t's tick. mu must be held.
func (o *Offset) fire(t *offsetTimer, now time.Time) {
	delete(o.timers, t)
	t.real.Stop()
	t.c <- now
}

type offsetTimer struct {
	o    *Offset
	at   time.Time // deadline on the offset clock
	c    chan time.Time
	real *time.Timer // wakes due at the remaining real wait
}

func (t *offsetTimer) C() <-chan time.Time { return t.c }

// due runs when the real wait ends. An Advance may have re-armed the timer
// meanwhile (this run is then stale) or fired it already.
func (t *offsetTimer) due() {
	o := t.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, armed := o.timers[t]; !armed {
		return
	}
	if now := o.Now(); !now.Before(t.at) {
		o.fire(t, now)
	} else {
		t.real.Reset(t.at.Sub(now))
	}
}

func (t *offsetTimer) Stop() bool {
	o := t.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, armed := o.timers[t]; !armed {
		return false
	}
	delete(o.timers, t)
	t.real.Stop()
	return true
}
