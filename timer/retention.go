package timer

import (
	"fmt"
	"strconv"

	"github.com/rmqio/rmq/message"
)

// RetainFrom returns the lowest commitlog offset the timer store may still
// need, and false when it needs none: the message of the oldest TimerLog
// unit a live slot references (from the durable checkpoint's read time,
// the span TimerStore.clean keeps), and the first timer-queue message the
// durable checkpoint has not enqueued (recovery reads the queue from
// there). The enqueue stage appends units in commitlog order (it reads the
// timer consume queue in order; a rolled message is re-stored and enqueued
// afresh), so every pending timer and roll entry points at or after the
// unit found. A message is re-stored at least every RollWindow, so the
// offset is about RollWindow old at most, and below Evacuate's pin once an
// evacuation re-stored the older ones.
func (t *TimerStore) RetainFrom(queueUnitOffset func(queueOffset int64) (int64, bool)) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tl == nil || t.closed {
		return 0, false
	}
	ck := t.lastCkpt
	limit := min(ck.flushPos, t.tl.end)
	from := ck.readTimeMs
	t.wh.forEachLive(func(st int64) {
		if st < from || st >= from+t.span {
			return
		}
		if s, live := t.wh.get(st); live && s.first >= 0 && s.first < limit {
			limit = s.first
		}
	})
	low, found := int64(0), false
	t.tl.scan(max(limit, t.tl.first()), func(pos int64, u unit) bool {
		if pos < t.tl.end {
			low, found = u.offsetPy, true
		}
		return false
	})
	if found && low < t.evacPin {
		low = t.evacPin
	}
	if phy, ok := queueUnitOffset(ck.queueOffset); ok && (!found || phy < low) {
		low, found = phy, true
	}
	return low, found
}

// Evacuation (issue 42): on a disk too small for the longest pending timer,
// the roll alone (every RollWindow) comes too late: the oldest commitlog
// file stays pinned and the broker refuses every send until the pinning
// timers fall due. Under disk pressure the broker therefore rolls the
// pending timers whose message lies in the file that must go at once
// (Evacuate): each is re-stored on the timer topic as a roll would store it
// (the same TIMER_OUT_MS; enqueued afresh, it gets a unit at its own due
// time, or a roll entry), and its old unit is remembered (evac) so that
// the dequeue drops it quietly instead of reading a deleted record.
//
// The old unit stays in its slot's chain, so RetainFrom would still pin its
// message; evacPin lifts that: it is a commitlog offset below which no
// pending timer needs its record any more, raised by each evacuation to the
// lowest of: below, the message of every walked unit not re-stored, and
// the first timer-queue message not yet enqueued (a unit linked later
// points at or after it, the enqueue reading the queue in order).
//
// Units of the slot being read (readTime) are not moved: they are due
// within the precision and their slot closes soon. A unit marked before
// its copy is stored and reached by the dequeue meanwhile is delivered
// normally, and its copy too: a duplicate, which only that race yields.
//
// Nothing of this is durable, nor needs to be: the copies are stored (and
// acknowledged) before the file can go. After a kill -9 an old unit whose
// record still exists is delivered as well as its copy (a duplicate), and
// one whose file was deleted is skipped as unreadable, its copy delivered.
// Until its slot comes, such an old unit makes RetainFrom answer an offset
// below the commitlog's minimum, which keeps the oldest file under normal
// expiry; under disk pressure the next evacuation marks it (its record is
// unreadable: nothing to copy) and the pin lifts.

// Evacuate re-stores the pending timers whose message is stored below the
// commitlog offset below, as described above, and returns how many it
// stored. queueUnitOffset is RetainFrom's. It stops at the first put that
// fails (the disk is past its reserve): the rest keep their file.
func (t *TimerStore) Evacuate(below int64, queueUnitOffset func(queueOffset int64) (int64, bool)) (int, error) {
	t.mu.Lock()
	if t.tl == nil || t.closed || t.dead.Load() {
		t.mu.Unlock()
		return 0, ErrClosed
	}
	pin := below
	if phy, ok := queueUnitOffset(t.queueOffset); ok {
		pin = min(pin, phy)
	}
	var moving []item
	t.evMu.Lock()
	t.wh.forEachLive(func(st int64) {
		if st < t.readTime || st >= t.readTime+t.span {
			return
		}
		s, live := t.wh.get(st)
		if !live {
			return
		}
		for pos := s.last; pos >= 0 && pos >= s.first && pos < t.tl.end; {
			u, ok := t.tl.read(pos)
			if !ok || u.prevPos >= pos {
				break
			}
			if copied, marked := t.evac[pos]; marked && copied {
				pos = u.prevPos
				continue
			}
			if st == t.readTime || u.offsetPy >= below {
				pin = min(pin, u.offsetPy)
			} else {
				t.evac[pos] = false
				moving = append(moving, item{pos: pos, target: u.target(), roll: u.roll(), writeMs: u.writeMs, offsetPy: u.offsetPy, sizePy: u.sizePy})
			}
			pos = u.prevPos
		}
	})
	t.evMu.Unlock()
	t.mu.Unlock()

	n := 0
	var failed error
	for i, it := range moving {
		if failed == nil {
			failed = t.evacuateOne(it)
		}
		t.evMu.Lock()
		if copied, marked := t.evac[it.pos]; marked && !copied {
			if failed == nil {
				t.evac[it.pos] = true
				n++
			} else {
				delete(t.evac, it.pos)
				pin = min(pin, it.offsetPy)
			}
		}
		t.evMu.Unlock()
		if failed == nil && t.fp("evacuate:after-put") {
			for _, rest := range moving[i+1:] {
				t.evMu.Lock()
				delete(t.evac, rest.pos)
				t.evMu.Unlock()
			}
			return n, errCrashed
		}
	}
	t.mu.Lock()
	t.evacPin = max(t.evacPin, pin)
	t.mu.Unlock()
	t.c.evacuated.Add(int64(n))
	return n, failed
}

// evacuateOne stores the roll copy of it's message on the timer topic.
func (t *TimerStore) evacuateOne(it item) error {
	p, ok := t.loadRecord(it)
	if !ok {
		return nil // skipped and counted: nothing to keep
	}
	p.it.roll = true
	m, _ := t.outMessage(&p)
	m.Delivery = true // frees the disk: taken past the warning ratio (store.writeRefused)
	if _, err := t.opts.Store.PutMessage(m); err != nil {
		return fmt.Errorf("timer: re-store pending timer of %s at %d: %w", p.realTopic, it.offsetPy, err)
	}
	return nil
}

// evacuated reports whether it's unit was re-stored by Evacuate (drop it),
// forgetting it: a slot is read once.
func (t *TimerStore) evacuated(it item) bool {
	if it.pos < 0 {
		return false
	}
	t.evMu.Lock()
	defer t.evMu.Unlock()
	copied, marked := t.evac[it.pos]
	if marked {
		delete(t.evac, it.pos)
	}
	return marked && copied
}

// PropDelayLevelCopy marks a timer message that is the re-stored copy of a
// delay-level message (FromDelayLevel). Its delivery then looks like the
// level's: the timer's bookkeeping properties and the mark are dropped.
const PropDelayLevelCopy = "__RMQ_DELAY_LEVEL_COPY"

// FromDelayLevel is the timer message that re-stores a pending delay-level
// message ext (properties text props, due at dueMs) when its commitlog file
// must go (schedule.Service.Evacuate): on the timer topic with TIMER_OUT_MS
// = dueMs and the mark. REAL_TOPIC and REAL_QID are the level's already;
// flag, sysFlag, born fields, reconsumeTimes, the prepared-transaction
// offset and every property (UNIQ_KEY: the same msgId) are kept, as the
// level's delivery keeps them. DELAY stays until the delivery drops it, as
// the level's does.
func FromDelayLevel(ext *message.MessageExt, props message.Props, dueMs int64) *message.Message {
	return &message.Message{
		Topic: message.TopicWheelTimer, QueueID: 0, Flag: ext.Flag, Body: ext.Body,
		RawProperties: message.EditProperties(string(props), nil,
			[2]string{message.PropTimerOutMs, strconv.FormatInt(dueMs, 10)}, [2]string{PropDelayLevelCopy, "1"}),
		SysFlag: ext.SysFlag, BornTimestamp: ext.BornTimestamp, BornHost: ext.BornHost,
		ReconsumeTimes: ext.ReconsumeTimes, PreparedTransactionOffset: ext.PreparedTransactionOffset,
		Delivery: true,
	}
}

// delayLevelCopyDrop are the properties a delay-level copy's delivery drops:
// what the timer added and DELAY (schedule.Service.deliver drops it).
var delayLevelCopyDrop = []string{
	PropDelayLevelCopy, message.PropDelay, message.PropTimerOutMs, message.PropTimerRollTimes,
	message.PropTimerEnqueueMs, message.PropTimerDequeueMs,
}
