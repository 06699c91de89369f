package timer

import (
	"math"
	"runtime"
	"time"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// enqueueIdlePoll is how often the enqueue stage looks at the timer queue when
// Notify is not called (a safety net; Notify wakes it at once).
const enqueueIdlePoll = time.Second

// maxGetBytes bounds one read of the timer consume queue.
const maxGetBytes = 8 << 20

func (t *TimerStore) runEnqueue() {
	defer t.wg.Done()
	for !t.stopping() {
		busy := t.enqueueOnce()
		if t.dead.Load() {
			return
		}
		if busy {
			runtime.Gosched()
			continue
		}
		t.mu.Lock()
		failing := t.appendFailing
		t.mu.Unlock()
		if failing {
			// A full disk: new messages (Notify) do not make room, so wait
			// out the retry interval instead of failing once per message.
			if !t.waitUntil(t.nowMs()+t.opts.RetryInterval.Milliseconds(), nil) {
				return
			}
			continue
		}
		if !t.waitUntil(t.nowMs()+enqueueIdlePoll.Milliseconds(), t.enqWake) {
			return
		}
	}
}

// enqueueOnce reads one batch of the timer consume queue into the wheel and
// reports whether there may be more.
func (t *TimerStore) enqueueOnce() bool {
	t.mu.Lock()
	off := t.queueOffset
	now := t.nowMs()
	// The furthest slot a new entry may use must not reach the part of the
	// ring still holding unread slots: wait for the dequeue to catch up.
	if t.slotOf(now)+t.roll >= t.readTime+t.span-blankSlots*t.p {
		if !t.lagWarned {
			t.log.Warn().Int64("readTime", t.readTime).Int64("now", now).Msg("timer: dequeue lags a whole wheel window, enqueue waits")
			t.lagWarned = true
		}
		t.enqPaused = true
		signal(t.deqWake)
		t.mu.Unlock()
		return false
	}
	t.lagWarned = false
	t.mu.Unlock()
	res := t.opts.Store.ReadQueue(message.TopicWheelTimer, 0, off, t.opts.BatchSize, maxGetBytes)
	if res == nil {
		return false // store closed
	}
	switch res.Status {
	case store.Found:
		return t.enqueueRecords(off, res)
	case store.OffsetOverflowOne:
		return false
	case store.NoMessageInQueue, store.NoMatchedLogicQueue:
		if off != 0 {
			t.moveQueueOffset(off, 0, "timer queue is empty")
		}
		return false
	case store.OffsetTooSmall, store.OffsetOverflowBadly:
		t.moveQueueOffset(off, res.NextBeginOffset, "timer queue offset outside the queue ("+res.Status.String()+")")
		return true
	default:
		if res.NextBeginOffset > off {
			t.c.skipped.Add(res.NextBeginOffset - off)
			t.moveQueueOffset(off, res.NextBeginOffset, "timer queue entries unreadable ("+res.Status.String()+")")
			return true
		}
		return false
	}
}

func (t *TimerStore) moveQueueOffset(from, to int64, why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.queueOffset != from {
		return
	}
	t.log.Warn().Int64("from", from).Int64("to", to).Str("reason", why).Msg("timer: timer queue offset corrected")
	t.queueOffset = to
}

// record is one timer-queue message read by the enqueue stage.
type record struct {
	qoff   int64
	ext    *message.MessageExt // without its properties map
	props  message.Props       // its properties text
	due    int64
	marker string // TIMER_DEL_UNIQKEY of a delete marker
}

// enqueueRecords links the records of one read into the wheel. The consume
// queue offset moves in the same critical section as the links, so a
// checkpoint never covers a TimerLog unit without the queue offset past its
// message (or the reverse). A record due before the read time bypasses the
// wheel: it is delivered first, and only then is the offset moved past it.
func (t *TimerStore) enqueueRecords(off int64, res *store.GetResult) bool {
	recs := make([]record, 0, len(res.Messages))
	bypassed := false
	readAt := t.nowMs()
	for _, raw := range res.Messages {
		ext, props, err := message.DecodeRecordText(raw)
		if err != nil {
			t.c.skipped.Add(1)
			t.log.Error().Err(err).Int64("queueOffset", off).Msg("timer: undecodable timer queue record skipped")
			continue
		}
		if ext.QueueOffset < off || ext.QueueOffset >= res.NextBeginOffset || ext.Topic != message.TopicWheelTimer {
			t.c.skipped.Add(1)
			t.log.Error().Int64("recordQueueOffset", ext.QueueOffset).Str("topic", ext.Topic).Int64("from", off).
				Msg("timer: timer queue points at a foreign record, skipped")
			continue
		}
		due, _, err := recordDue(props, ext.StoreTimestamp)
		if err != nil {
			t.c.skipped.Add(1)
			t.log.Error().Int64("queueOffset", ext.QueueOffset).Str(message.PropTimerOutMs, props.Get(message.PropTimerOutMs)).
				Msg("timer: timer queue record without a valid TIMER_OUT_MS skipped")
			continue
		}
		r := record{qoff: ext.QueueOffset, ext: ext, props: props, due: due, marker: props.Get(message.PropTimerDelUniqKey)}
		if r.marker == "" && props.Get(message.PropRealTopic) == "" {
			t.c.skipped.Add(1)
			t.log.Error().Int64("queueOffset", ext.QueueOffset).Msg("timer: timer queue record without REAL_TOPIC skipped")
			continue
		}
		recs = append(recs, r)
		t.observeRead(&r, readAt)
	}
	for i := 0; i < len(recs); {
		var bypass *record
		t.mu.Lock()
		w := t.slotOf(t.nowMs())
		for ; i < len(recs); i++ {
			r := &recs[i]
			if r.marker != "" {
				if t.slotOf(markerEnd(r.due)) >= t.readTime {
					t.dels.add(r.marker, r.due, r.qoff)
				}
				t.c.markers.Add(1)
			} else {
				target, magic := r.due, int32(magicDefault)
				if r.due-w >= t.roll {
					target, magic = w+t.roll, magicDefault|magicRoll
				}
				if t.slotOf(target) < t.readTime {
					bypass = r
					break
				}
				if d := target - w; d > math.MaxInt32 || d < math.MinInt32 {
					t.c.skipped.Add(1)
					t.log.Error().Int64("due", r.due).Int64("writeTime", w).Msg("timer: delivery time not representable in the wheel, skipped")
				} else if err := t.link(target, magic, w, r); err != nil {
					// The record stays unread (the queue offset is not
					// moved past it): nothing acknowledged is lost, and it
					// is linked when the append succeeds again.
					first := !t.appendFailing
					if err != errCrashed {
						t.appendFailing = true
						t.c.appendFailures.Add(1)
					}
					t.mu.Unlock()
					if err != errCrashed && first {
						t.log.Error().Err(err).Int64("queueOffset", r.qoff).
							Msg("timer: timer log append failed; the timer queue is read again every retry interval")
					}
					return false
				}
				if t.appendFailing {
					t.appendFailing = false
					t.log.Warn().Int64("queueOffset", r.qoff).Msg("timer: timer log appends succeed again")
				}
				t.c.enqueued.Add(1)
			}
			t.queueOffset = max(t.queueOffset, r.qoff+1)
		}
		t.mu.Unlock()
		if t.fp("enqueue:after-link") {
			return false
		}
		if bypass != nil {
			if !t.bypass(bypass) {
				return false
			}
			t.mu.Lock()
			t.queueOffset = max(t.queueOffset, bypass.qoff+1)
			t.mu.Unlock()
			i++
			bypassed = true
		}
	}
	t.mu.Lock()
	if t.queueOffset < res.NextBeginOffset {
		t.queueOffset = res.NextBeginOffset
	}
	t.mu.Unlock()
	// Bypass deliveries are committed with the batch that read them.
	if bypassed && !t.commitDeliveries() {
		return false
	}
	return true
}

// link appends a unit for a message due at target and links it into its slot.
// mu must be held.
func (t *TimerStore) link(target int64, magic int32, w int64, r *record) error {
	st := t.slotOf(target)
	s, live := t.wh.get(st)
	if !live {
		s = slot{first: -1, last: -1}
	}
	u := unit{
		prevPos: s.last, magic: magic, writeMs: w, delayMs: int32(target - w),
		offsetPy: r.ext.PhysicalOffset, sizePy: r.ext.StoreSize, topicKey: int32(message.TagsHash(r.props.Get(message.PropRealTopic))),
	}
	pos, err := t.tl.append(&u)
	if err != nil {
		return err
	}
	if t.fp("enqueue:after-append") {
		return errCrashed
	}
	if !live {
		s.first = pos
		t.nonEmpty.push(st)
	}
	s.last = pos
	s.num++
	t.wh.put(st, s)
	t.liveNum++
	t.timing.add(r.props.Get(message.PropRealTopic), 1, w)
	if target < t.deqWakeAt {
		signal(t.deqWake)
	}
	return nil
}

// bypass delivers a record whose slot the read cursor has passed. The read
// time never runs ahead of the clock, so the message is due; should the clock
// have gone back since, it waits for the exact time rather than deliver early.
func (t *TimerStore) bypass(r *record) bool {
	if r.due > t.nowMs() && !t.waitUntil(r.due, nil) {
		return false
	}
	it := item{pos: -1, target: r.due, writeMs: math.MaxInt64, offsetPy: r.ext.PhysicalOffset, sizePy: r.ext.StoreSize}
	p, ok := t.check(it, r.ext, r.props)
	if !ok {
		return true
	}
	n, effects := t.deliverPrepared([]prepared{p})
	if n != 1 {
		return false
	}
	t.mu.Lock()
	t.committed += int64(effects)
	t.mu.Unlock()
	t.c.enqueued.Add(1)
	t.c.bypassed.Add(1)
	return true
}
