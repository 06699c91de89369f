package broker

import "time"

// NextDue tells a driver of Options.MessageClock (package rmqtest) where
// delayed delivery stands on that clock: busy while a delay level, timer
// message or transaction check pass due at its now is not done yet, or a
// stored message is not yet in its consume queue; else the earliest time
// one of them falls due (ok false: nothing is waiting). It only reads.
func (b *Broker) NextDue() (next time.Time, ok, busy bool) {
	// First: a message stored before this call is in its consume queue, where
	// the services below look for it.
	if b.store.DispatchBehind() != 0 {
		return time.Time{}, false, true
	}
	earliest := func(at time.Time) {
		if !ok || at.Before(next) {
			next, ok = at, true
		}
	}
	if at, has, busy := b.sched.NextDue(); busy {
		return time.Time{}, false, true
	} else if has {
		earliest(at)
	}
	if b.timers != nil {
		if at, has, busy := b.timers.NextDue(); busy {
			return time.Time{}, false, true
		} else if has {
			earliest(at)
		}
	}
	if at, has := b.tx.NextCheck(); has {
		if !at.After(b.msgClock.Now()) {
			return time.Time{}, false, true
		}
		earliest(at)
	}
	// Last: a delivery finished after the checks above is dispatched too.
	if b.store.DispatchBehind() != 0 {
		return time.Time{}, false, true
	}
	return next, ok, false
}
