package timer

import (
	"math"
	"time"

	"github.com/rmqio/rmq/message"
)

// Stats are the runtime figures of the timer store (admin and metrics).
type Stats struct {
	// Pending is the number of wheel entries not yet processed: one per timer
	// message not yet due (its own entry, or the roll entry of a message due
	// beyond the roll window). A recalled message stays until its time or its
	// next roll, whichever comes first; DeleteMarkers counts the recalls.
	Pending int64
	// EnqueueBehind is the number of timer-queue messages not yet read into
	// the wheel (stock rocketmq_timer_enqueue_lag).
	EnqueueBehind int64
	// DeleteMarkers is the number of live delete markers (recalls).
	DeleteMarkers int
	// ReadTimeMs is the read cursor: every slot before it is done.
	ReadTimeMs int64
	// ReadLagMs is how long the oldest unprocessed due slot has been due
	// (0 when nothing is overdue).
	ReadLagMs int64
	// EnqueueLatencyMs is the age of the message the enqueue read last
	// when it read it within the last 2 s, else 0: how far behind the
	// timer queue the wheel is (TimerMessageStore.getEnqueueBehindMillis,
	// stock rocketmq_timer_enqueue_latency).
	EnqueueLatencyMs int64
	QueueOffset      int64 // next timer-queue offset to read
	TimerLogEnd      int64
	// Counters since Open.
	Enqueued   int64 // messages taken from the timer queue (incl. bypassed)
	Delivered  int64 // messages stored on their real topic
	Rolled     int64 // roll re-puts
	Evacuated  int64 // re-stored ahead of a commitlog file deleted for space (Evacuate)
	Bypassed   int64 // delivered without entering the wheel (already due when read)
	Deleted    int64 // dropped by a delete marker
	Markers    int64 // delete markers read
	Skipped    int64 // corrupt, stale or undeliverable entries skipped
	PutRetries int64 // transient store failures retried
	// MasterDelivered counts entries dropped because the master this
	// store copied had delivered them (master.go).
	MasterDelivered int64
	// AppendFailures counts TimerLog appends that failed (a full disk); the
	// message stays in the timer queue and is read again.
	AppendFailures int64
	// Deliveries the store refused for good, moved aside so that the wheel
	// goes on (store.Diverter): to the group's DLQ, or to the dead-letter log.
	ToDLQ        int64
	DeadLettered int64
	// EnqueueRate and DequeueRate are per second over the last ~10 flushes.
	EnqueueRate float64
	DequeueRate float64
}

// Stats returns the current figures.
func (t *TimerStore) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.nowMs()
	st := Stats{
		Pending: t.liveNum, DeleteMarkers: len(t.dels.m), ReadTimeMs: t.readTime, QueueOffset: t.queueOffset,
		Enqueued: t.c.enqueued.Load(), Delivered: t.c.delivered.Load(), Rolled: t.c.rolled.Load(),
		Bypassed: t.c.bypassed.Load(), Deleted: t.c.deleted.Load(), Markers: t.c.markers.Load(),
		Skipped: t.c.skipped.Load(), PutRetries: t.c.putRetries.Load(), AppendFailures: t.c.appendFailures.Load(),
		ToDLQ: t.c.toDLQ.Load(), DeadLettered: t.c.deadLettered.Load(), Evacuated: t.c.evacuated.Load(),
		MasterDelivered: t.ms.drops.Load(),
	}
	if t.tl != nil {
		st.TimerLogEnd = t.tl.end
	}
	if t.open != nil {
		st.Pending -= t.open.processed
	}
	if !t.closed {
		st.EnqueueBehind = max(0, t.opts.Store.MaxOffsetInQueue(message.TopicWheelTimer, 0)-t.queueOffset)
	}
	oldest := int64(math.MaxInt64)
	if t.open != nil {
		oldest = t.open.t
	} else if next, ok := t.nonEmpty.min(t.readTime); ok {
		oldest = next
	}
	if oldest < now {
		st.ReadLagMs = now - oldest
	}
	if at := t.lastRead.atMs.Load(); at > 0 && now-at < 2000 {
		st.EnqueueLatencyMs = max(now-t.lastRead.storeMs.Load(), 0)
	}
	st.EnqueueRate, st.DequeueRate = t.rates.rates(now, st.Enqueued, st.Delivered)
	return st
}

// NextDue tells a driver of the store's clock (package rmqtest) where
// delivery stands: busy while something due at the clock's now is not
// delivered yet (or timer-queue messages are not read into the wheel yet),
// else the earliest time an entry or a slot falls due (ok false: none). A
// slot's time may come before the exact due times of its entries; at that
// time the next call reports them.
//
// Entries linked into the open slot after the dequeue went to sleep wait in
// the slot's chain until its next wake, so the chain is read too.
func (t *TimerStore) NextDue() (next time.Time, ok, busy bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.started || t.closed {
		return time.Time{}, false, false
	}
	now := t.nowMs()
	// What falls due inside the window of the last delivery round waits for
	// the window's end (Coalesce): that is when it is due to the dequeue.
	at := t.rounds.Next
	if t.queueOffset < t.opts.Store.MaxOffsetInQueue(message.TopicWheelTimer, 0) ||
		t.deqWakeAt == math.MinInt64 || at(t.deqWakeAt) <= now {
		return time.Time{}, false, true // reading the queue, or the dequeue is at work
	}
	nextMs := t.deqWakeAt // MaxInt64: none
	floor := t.readTime
	if o := t.open; o != nil {
		if len(o.imm) > 0 || at(o.t+t.p) <= now {
			return time.Time{}, false, true
		}
		if len(o.items) > 0 {
			nextMs = min(nextMs, o.items[0].target)
		}
		s, live := t.wh.get(o.t)
		for pos := s.last; live && pos > o.scannedNext && pos >= 0; {
			u, ok := t.tl.read(pos)
			if !ok || t.slotOf(u.target()) != o.t || u.prevPos >= pos {
				break // absorb skips the rest of a broken chain too
			}
			nextMs = min(nextMs, u.target())
			pos = u.prevPos
		}
		floor = o.t + t.p
	}
	for _, st := range t.nonEmpty { // not min: that would prune the open slot
		if st >= floor {
			nextMs = min(nextMs, st)
		}
	}
	nextMs = at(nextMs)
	switch {
	case nextMs <= now:
		return time.Time{}, false, true
	case nextMs == math.MaxInt64:
		return time.Time{}, false, false
	}
	return time.UnixMilli(nextMs), true, false
}

// rateWindow keeps the last samples of the enqueue and delivery counters.
type rateWindow struct {
	samples [10]rateSample
	n, next int
}

type rateSample struct{ atMs, enq, deq int64 }

func (r *rateWindow) add(atMs, enq, deq int64) {
	r.samples[r.next] = rateSample{atMs, enq, deq}
	r.next = (r.next + 1) % len(r.samples)
	r.n = min(r.n+1, len(r.samples))
}

// rates compares the current counters with the oldest sample.
func (r *rateWindow) rates(nowMs, enq, deq int64) (float64, float64) {
	if r.n == 0 {
		return 0, 0
	}
	oldest := r.samples[(r.next-r.n+len(r.samples))%len(r.samples)]
	dt := float64(nowMs-oldest.atMs) / 1000
	if dt <= 0 {
		return 0, 0
	}
	return float64(enq-oldest.enq) / dt, float64(deq-oldest.deq) / dt
}
