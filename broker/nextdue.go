package broker

import (
	"fmt"
	"time"
)

// NextDue tells a driver of Options.MessageClock (package rmqtest) where
// delayed delivery stands on that clock: busy while a delay level, timer
// message or transaction check pass due at its now is not done yet, or a
// stored message is not yet in its consume queue; else the earliest time
// one of them falls due (ok false: nothing is waiting). It only reads.
func (b *Broker) NextDue() (next time.Time, ok, busy bool) {
	next, ok, by := b.nextDue()
	return next, ok, by != ""
}

// DueReport says what NextDue waits for, with the figures of the delayed
// delivery services: for a driver that gave up waiting to explain why.
func (b *Broker) DueReport() string {
	next, ok, by := b.nextDue()
	s := fmt.Sprintf("message clock %s; ", b.msgClock.Now().Format(time.RFC3339Nano))
	switch {
	case by != "":
		s += "busy: " + by
	case ok:
		s += "next due " + next.Format(time.RFC3339Nano)
	default:
		s += "nothing waiting"
	}
	s += fmt.Sprintf("; dispatch behind %d", b.store.DispatchBehind())
	s += fmt.Sprintf("; schedule %+v, pending %d", b.sched.Stats(), b.sched.Pending())
	if b.timers != nil {
		s += fmt.Sprintf("; timers %+v", b.timers.Stats())
	}
	return s
}

// nextDue is NextDue with the name of what it is busy with ("": not busy).
func (b *Broker) nextDue() (next time.Time, ok bool, busyBy string) {
	// First: a message stored before this call is in its consume queue, where
	// the services below look for it.
	if b.store.DispatchBehind() != 0 {
		return time.Time{}, false, "dispatch (before)"
	}
	earliest := func(at time.Time) {
		if !ok || at.Before(next) {
			next, ok = at, true
		}
	}
	if at, has, busy := b.sched.NextDue(); busy {
		return time.Time{}, false, "delay levels"
	} else if has {
		earliest(at)
	}
	if b.timers != nil {
		if at, has, busy := b.timers.NextDue(); busy {
			return time.Time{}, false, "timer messages"
		} else if has {
			earliest(at)
		}
	}
	if at, has := b.tx.NextCheck(); has {
		if !at.After(b.msgClock.Now()) {
			return time.Time{}, false, "transaction check"
		}
		earliest(at)
	}
	// Then: a delivery finished after the checks above is dispatched too.
	if b.store.DispatchBehind() != 0 {
		return time.Time{}, false, "dispatch (after)"
	}
	// A POP message whose invisible time ended goes back to its retry topic
	// through the revive reader, which reads the trigger the timer store
	// delivered: stored before the timer check, so in the revive queue
	// once the dispatch check above passed. Last, the message it re-put is
	// dispatched too.
	if b.pop != nil && b.pop.ReviveBusy() {
		return time.Time{}, false, "pop revive"
	}
	if b.store.DispatchBehind() != 0 {
		return time.Time{}, false, "dispatch (after pop)"
	}
	return next, ok, ""
}
