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
