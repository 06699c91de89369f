package clock

import (
	"testing"
	"time"
)

// waitTick waits (in real time, bounded) for a timer of o and checks that it
// fired at or after its deadline on o.
func waitTick(t *testing.T, o *Offset, tm Timer, deadline time.Time) time.Time {
	t.Helper()
	select {
	case at := <-tm.C():
		if at.Before(deadline) {
			t.Fatalf("fired at %v, before its deadline %v", at, deadline)
		}
		if now := o.Now(); now.Before(deadline) {
			t.Fatalf("clock reads %v after a fire due at %v", now, deadline)
		}
		return at
	case <-time.After(5 * time.Second):
		t.Fatal("timer did not fire")
		return time.Time{}
	}
}

func TestOffsetAdvanceFiresDueTimersInOrder(t *testing.T) {
	o := NewOffset(0)
	start := o.Now()
	late := o.NewTimer(2 * time.Hour)
	early := o.NewTimer(30 * time.Minute)
	stopped := o.NewTimer(time.Hour)
	kept := o.NewTimer(10 * time.Hour)
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop must report true once for a pending timer")
	}
	if next, ok := o.Next(); !ok || next.Sub(start) < 30*time.Minute || next.Sub(start) > 30*time.Minute+time.Second {
		t.Fatalf("Next = %v %v, want start+30m", next, ok)
	}
	o.Advance(2*time.Hour + time.Second)
	// Both fired during Advance: their ticks are buffered already.
	a := waitTick(t, o, early, start.Add(30*time.Minute))
	b := waitTick(t, o, late, start.Add(2*time.Hour))
	if b.Before(a) {
		t.Fatalf("ticks out of order: %v then %v", a, b)
	}
	select {
	case <-stopped.C():
		t.Fatal("a stopped timer fired")
	case <-kept.C():
		t.Fatal("a timer not yet due fired")
	default:
	}
	if got := o.Offset(); got != 2*time.Hour+time.Second {
		t.Fatalf("offset %v", got)
	}
	if !kept.Stop() {
		t.Fatal("the 10 h timer should still be pending")
	}
	if _, ok := o.Next(); ok {
		t.Fatal("no timer should be armed")
	}
}

// A timer not reached by Advance is re-armed for its remaining wait, which
// real time then covers.
func TestOffsetAdvanceShortensRemainingWait(t *testing.T) {
	o := NewOffset(0)
	start := o.Now()
	tm := o.NewTimer(time.Hour)
	o.Advance(time.Hour - 20*time.Millisecond)
	select {
	case <-tm.C():
		t.Fatal("fired before its deadline")
	default:
	}
	waitTick(t, o, tm, start.Add(time.Hour))
}

func TestOffsetRealTimeFiresAndZeroFiresAtOnce(t *testing.T) {
	o := NewOffset(0)
	o.Advance(time.Hour)
	start := o.Now()
	waitTick(t, o, o.NewTimer(10*time.Millisecond), start.Add(10*time.Millisecond))
	select {
	case <-o.NewTimer(0).C():
	default:
		t.Fatal("a zero timer must fire at once")
	}
	o.Advance(-time.Hour)
	if o.Offset() != time.Hour {
		t.Fatal("a negative Advance moved the clock")
	}
	if d := o.Now().Sub(time.Now()); d < time.Hour-time.Second || d > time.Hour+time.Second {
		t.Fatalf("clock is %v ahead of the wall clock, want about 1 h", d)
	}
}

func TestOffsetInitial(t *testing.T) {
	o := NewOffset(-time.Hour)
	if d := time.Now().Sub(o.Now()); d < time.Hour-time.Second || d > time.Hour+time.Second {
		t.Fatalf("clock is %v behind the wall clock, want about 1 h", d)
	}
	o.Advance(2 * time.Hour)
	if o.Offset() != time.Hour {
		t.Fatalf("offset %v after advancing 2 h from -1 h", o.Offset())
	}
}
