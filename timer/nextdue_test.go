package timer

import (
	"testing"
	"time"
)

// NextDue walks a driver through a slot: first the slot's time, then each
// entry's exact due time, busy while a due entry is undelivered, and nothing
// once all are out.
func TestNextDueStepsThroughASlot(t *testing.T) {
	e := newEnv(t, nil) // precision 100 ms
	now := e.nowMs()
	e.sendAt("ND", now+1550)
	e.sendAt("ND", now+1510)
	e.settle()
	want := func(at int64) {
		t.Helper()
		e.settle()
		next, ok, busy := e.ts().NextDue()
		if !ok || busy || next.UnixMilli() != at {
			t.Fatalf("NextDue = %v %v %v, want %d (now+%d)", next.UnixMilli(), ok, busy, at, at-now)
		}
	}
	want(now + 1500) // the slot
	e.advance(1500 * time.Millisecond)
	want(now + 1510) // the slot is open: its first entry
	e.advance(10 * time.Millisecond)
	e.waitCount("ND", 1)
	want(now + 1550)
	e.advance(40 * time.Millisecond)
	e.waitCount("ND", 2)
	want(now + 1600) // the open slot closes at its end: the one wake left
	e.advance(50 * time.Millisecond)
	e.settle()
	if next, ok, busy := e.ts().NextDue(); ok || busy {
		t.Fatalf("after the slot closed: NextDue = %v %v %v", next.UnixMilli(), ok, busy)
	}
}

// A timer store with nothing to deliver reports nothing.
func TestNextDueEmpty(t *testing.T) {
	e := newEnv(t, nil)
	e.settle()
	if _, ok, busy := e.ts().NextDue(); ok || busy {
		t.Fatalf("empty store: ok=%v busy=%v", ok, busy)
	}
}
