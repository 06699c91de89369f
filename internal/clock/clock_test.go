package clock

import (
	"testing"
	"time"
)

func TestManualFiresInOrderOnlyWhenDue(t *testing.T) {
	m := NewManual(time.Unix(1000, 0))
	a := m.NewTimer(2 * time.Second)
	b := m.NewTimer(time.Second)
	c := m.NewTimer(3 * time.Second)
	if !c.Stop() {
		t.Fatal("stop of a pending timer must report true")
	}
	m.Advance(999 * time.Millisecond)
	select {
	case <-b.C():
		t.Fatal("fired early")
	default:
	}
	m.Advance(time.Millisecond)
	if got := <-b.C(); !got.Equal(time.Unix(1001, 0)) {
		t.Fatalf("b fired at %v", got)
	}
	select {
	case <-a.C():
		t.Fatal("a fired early")
	default:
	}
	m.Advance(5 * time.Second)
	<-a.C()
	select {
	case <-c.C():
		t.Fatal("stopped timer fired")
	default:
	}
	if m.Pending() != 0 {
		t.Fatalf("pending = %d", m.Pending())
	}
}

func TestManualZeroDurationFiresAtOnce(t *testing.T) {
	m := NewManual(time.Unix(0, 0))
	select {
	case <-m.NewTimer(0).C():
	default:
		t.Fatal("zero timer did not fire")
	}
}

func TestManualTimerCreatedSignals(t *testing.T) {
	m := NewManual(time.Unix(0, 0))
	ch := m.TimerCreated()
	go m.NewTimer(time.Second)
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("no signal")
	}
}

// A timer made while the clock moves on (by a millisecond or by seconds)
// still fires exactly at its deadline, not that much later.
func TestTimerAtFiresAtTheDeadlineWhenTheClockSlips(t *testing.T) {
	for _, slip := range []time.Duration{time.Millisecond, 3 * time.Second} {
		c := NewSlipping(time.Unix(1000, 0))
		deadline := c.Now().Add(10 * time.Second)
		c.Slip(slip)
		tm := TimerAt(c, deadline)
		if !c.Slipped() {
			t.Fatal("the clock did not slip")
		}
		c.Set(deadline.Add(-time.Nanosecond))
		select {
		case <-tm.C():
			t.Fatalf("slip %v: fired before the deadline", slip)
		default:
		}
		c.Set(deadline)
		select {
		case <-tm.C():
		default:
			t.Fatalf("slip %v: not fired at the deadline (%d timers pending)", slip, c.Pending())
		}
	}
}

// A deadline already passed fires at once.
func TestTimerAtPastDeadline(t *testing.T) {
	c := NewManual(time.Unix(1000, 0))
	select {
	case <-TimerAt(c, c.Now().Add(-time.Second)).C():
	default:
		t.Fatal("a timer for a past deadline did not fire")
	}
}
