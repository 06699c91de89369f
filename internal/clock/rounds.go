package clock

// Rounds paces a delayed-delivery loop (a delay level of package schedule,
// the timer dequeue of package timer): after a round that delivered
// something, the next round starts no earlier than Window ms later, so that
// under a stream of due messages each round delivers everything that became
// due meanwhile together, and the consumers' held pulls are woken once per
// round with several messages instead of once per message. Each round costs
// a wake-up of the delivery loop, of the store's dispatcher, of every woken
// pull and of the connections' event loops; at 8 000 timers due per second
// over 8 queues that is about one pull per message with rounds a millisecond
// apart (workload 5 of bench/compare: 91-99 s of broker CPU, 66-74 s with
// rounds 5 ms apart).
//
// A message due after a quiet Window is delivered at its due millisecond;
// one due while the loop is still within Window of its last round waits
// for the end of it. Nothing is ever delivered before it is due; a message
// is late by at most Window ms more than it would otherwise be. Window 0
// turns pacing off: every due millisecond is a round.
//
// Rounds has no lock: the loop writes it, and its user guards it where
// another goroutine reads it (NextDue, under the service's mutex).
type Rounds struct {
	Window int64 // ms between rounds that delivered; 0: none
	last   int64 // ms of the last round that delivered; 0: none yet
}

// Delivered records that the round at nowMs delivered something.
func (r *Rounds) Delivered(nowMs int64) { r.last = nowMs }

// Next is when to run the round that delivers a message due at dueMs: dueMs,
// or the end of the window after the last round when that is later.
func (r *Rounds) Next(dueMs int64) int64 {
	if r.Window > 0 && r.last != 0 && dueMs < r.last+r.Window {
		return r.last + r.Window
	}
	return dueMs
}
