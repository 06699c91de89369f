// Package clock lets time-driven logic (delay levels, timer wheel) run on an
// injected clock: the real one in production, a manual one in unit tests that
// advance time instead of sleeping.
package clock

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Clock is the time source of schedule and timer logic.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that fires once d has passed on this clock.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer of a Clock.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was pending.
	Stop() bool
}

// Real is the wall clock.
type Real struct{}

// Now implements Clock.
func (Real) Now() time.Time { return time.Now() }

// NewTimer implements Clock.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// Manual is a clock that moves only when told to. Timers fire (in deadline
// order) when Advance or Set passes their deadline.
type Manual struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
	// waiters are notified whenever a timer is created, so tests can wait for
	// a goroutine to block on the clock before advancing it.
	waiters []chan struct{}
}

// NewManual returns a manual clock set to start.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

// Now implements Clock.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// NewTimer implements Clock.
func (m *Manual) NewTimer(d time.Duration) Timer {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &manualTimer{m: m, at: m.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- m.now
		t.fired = true
	} else {
		m.timers = append(m.timers, t)
	}
	for _, w := range m.waiters {
		close(w)
	}
	m.waiters = nil
	return t
}

// TimerCreated returns a channel closed the next time a timer is created.
func (m *Manual) TimerCreated() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := make(chan struct{})
	m.waiters = append(m.waiters, ch)
	return ch
}

// Pending is the number of timers not yet fired or stopped.
func (m *Manual) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.timers)
}

// HasTimerAt reports whether a timer not yet fired or stopped has deadline
// at (a test sees which time a goroutine went to sleep until).
func (m *Manual) HasTimerAt(at time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.timers {
		if t.at.Equal(at) {
			return true
		}
	}
	return false
}

// NextDeadline is the earliest deadline of the timers not yet fired or
// stopped; false when there is none.
func (m *Manual) NextDeadline() (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var next time.Time
	for _, t := range m.timers {
		if next.IsZero() || t.at.Before(next) {
			next = t.at
		}
	}
	return next, !next.IsZero()
}

// Advance moves the clock forward by d.
func (m *Manual) Advance(d time.Duration) { m.Set(m.Now().Add(d)) }

// Set moves the clock to t (never backwards) and fires due timers.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	if t.After(m.now) {
		m.now = t
	}
	sort.Slice(m.timers, func(i, j int) bool { return m.timers[i].at.Before(m.timers[j].at) })
	keep := m.timers[:0]
	for _, tm := range m.timers {
		if !tm.at.After(m.now) {
			tm.fired = true
			tm.c <- m.now
		} else {
			keep = append(keep, tm)
		}
	}
	m.timers = keep
	m.mu.Unlock()
}

type manualTimer struct {
	m     *Manual
	at    time.Time
	c     chan time.Time
	fired bool
}

func (t *manualTimer) C() <-chan time.Time { return t.c }

func (t *manualTimer) Stop() bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	for i, x := range t.m.timers {
		if x == t {
			t.m.timers = append(t.m.timers[:i], t.m.timers[i+1:]...)
			return true
		}
	}
	return false
}

// TimerAt returns a timer of c that fires once c reaches deadline (at once
// when it has). The clock may move on between reading it and making the
// timer (a slow wake-up, or a test advancing a Manual clock): a timer made
// from the old reading would fire late by that much, so it is made again
// from a fresh reading until the clock stood, within less than a
// millisecond, while it was made.
func TimerAt(c Clock, deadline time.Time) Timer {
	for {
		read := c.Now()
		t := c.NewTimer(deadline.Sub(read))
		if c.Now().Sub(read) < time.Millisecond {
			return t
		}
		t.Stop()
	}
}

// Slipping is a Manual clock that, once Slip arms it, moves on just before
// it makes the next timer: the advance that can come between a reading of
// the clock and a timer made from it. Tests use it to show that a timer is
// made from a fresh reading (TimerAt).
type Slipping struct {
	*Manual
	slip atomic.Int64
}

// NewSlipping returns a slipping clock set to start.
func NewSlipping(start time.Time) *Slipping { return &Slipping{Manual: NewManual(start)} }

// Slip makes the next NewTimer move the clock on by d before it makes the
// timer.
func (c *Slipping) Slip(d time.Duration) { c.slip.Store(int64(d)) }

// Slipped reports whether the armed slip has happened.
func (c *Slipping) Slipped() bool { return c.slip.Load() == 0 }

// NewTimer implements Clock.
func (c *Slipping) NewTimer(d time.Duration) Timer {
	if s := c.slip.Swap(0); s > 0 {
		c.Manual.Advance(time.Duration(s))
	}
	return c.Manual.NewTimer(d)
}
