package timer

import (
	"errors"
	"math"
	"strconv"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// prepared is an item whose message was read and checked.
type prepared struct {
	it        item
	ext       *message.MessageExt
	due       int64 // when the record is due (recordDue)
	out       int64 // its TIMER_OUT_MS, the time its recall handle names
	realTopic string
	realQID   int32
	key       string // "<realTopic>+<uniqKey>", empty without a uniq key
	// props is the record's properties text (ext.Properties is nil): the
	// checks look keys up in it and delivery edits it, so no map is built
	// for a delivery (only for a roll).
	props message.Props
}

// load reads and checks the message of a wheel entry. A record that cannot be
// what the entry was written for (gone, resized, another topic, another time)
// is skipped and counted: a corrupt or stale entry never blocks the wheel.
func (t *TimerStore) load(it item) (prepared, bool) {
	if t.evacuated(it) {
		return prepared{}, false // re-stored ahead of its file's deletion (retention.go)
	}
	return t.loadRecord(it)
}

// loadRecord is load without the evacuation check.
func (t *TimerStore) loadRecord(it item) (prepared, bool) {
	if it.pos >= 0 && it.pos < t.tlOpenEnd && it.offsetPy+int64(it.sizePy) > t.clMaxAtOpen {
		return t.skip(it, "refers to commitlog bytes lost before this start")
	}
	raw, err := t.opts.Store.LookMessageByOffset(it.offsetPy)
	if err != nil {
		return t.skip(it, "commitlog record unreadable: "+err.Error())
	}
	ext, props, err := message.DecodeRecordText(raw)
	if err != nil {
		return t.skip(it, "commitlog record undecodable: "+err.Error())
	}
	if ext.StoreSize != it.sizePy || ext.PhysicalOffset != it.offsetPy {
		return t.skip(it, "commitlog record does not match the entry")
	}
	return t.check(it, ext, props)
}

// check validates a decoded timer-topic record for item it: ext without its
// properties map, props its properties text (message.DecodeRecordText).
func (t *TimerStore) check(it item, ext *message.MessageExt, props message.Props) (prepared, bool) {
	if ext.Topic != message.TopicWheelTimer {
		return t.skip(it, "record is not on the timer topic")
	}
	due, out, err := recordDue(props, ext.StoreTimestamp)
	if err != nil {
		return t.skip(it, "record has no valid "+message.PropTimerOutMs)
	}
	// An entry at TIMER_OUT_MS is one linked before recordDue looked past
	// it (a Java-written record): delivered at that time, not lost.
	if it.pos >= 0 && !it.roll && due != it.target && out != it.target {
		return t.skip(it, "record's delivery time does not match the entry")
	}
	if t.deliveredByMaster(ext.PhysicalOffset, due) {
		if it.pos >= 0 {
			t.timing.add(props.Get(message.PropRealTopic), -1, t.nowMs())
		}
		return prepared{}, false // master.go
	}
	p := prepared{it: it, ext: ext, due: due, out: out, realTopic: props.Get(message.PropRealTopic), props: props}
	qid, err := strconv.ParseInt(props.Get(message.PropRealQueueID), 10, 32)
	if p.realTopic == "" || err != nil || qid < 0 {
		return t.skip(it, "record has no valid "+message.PropRealTopic+"/"+message.PropRealQueueID)
	}
	p.realQID = int32(qid)
	if uk := props.Get(message.PropUniqKey); uk != "" {
		p.key = p.realTopic + "+" + uk
	}
	return p, true
}

func (t *TimerStore) skip(it item, why string) (prepared, bool) {
	t.c.skipped.Add(1)
	t.log.Error().Int64("pos", it.pos).Int64("offsetPy", it.offsetPy).Int32("sizePy", it.sizePy).Int64("target", it.target).
		Str("reason", why).Msg("timer: entry skipped")
	return prepared{}, false
}

// deliverItems loads and delivers items in order and returns how many were
// handled (delivered, rolled, dropped or skipped) and how many of those were
// stored or dropped by a marker (effects). Fewer than len(items) means the
// store is stopping or dead and the rest was left untouched.
func (t *TimerStore) deliverItems(items []item) (handled, effects int) {
	ps := make([]prepared, 0, len(items))
	idx := make([]int, 0, len(items)) // items index of each prepared
	for i, it := range items {
		if p, ok := t.load(it); ok {
			ps = append(ps, p)
			idx = append(idx, i)
		}
	}
	n, effects := t.deliverPrepared(ps)
	if n == len(ps) {
		return len(items), effects
	}
	return idx[n], effects
}

// deliverPrepared stores each message on its real topic (or back on the timer
// topic for a roll) and returns how many were handled. Delete markers are
// consulted under mu, in the same critical section that records the delivery
// for Recall, so a recall either drops the message or learns it was
// delivered. A roll is checked too: a copy put after the marker would follow
// it in the consume queue, where the marker's pruning rule assumes none. Only a failed put is retried (never the batch); a put the store
// refuses for good is retried without the timer bookkeeping properties once,
// then dropped with an error log. effects counts deliveries, rolls and
// drops by a delete marker.
func (t *TimerStore) deliverPrepared(ps []prepared) (handled, effects int) {
	drop := make([]bool, len(ps))
	t.mu.Lock()
	for i := range ps {
		p := &ps[i]
		if p.key == "" {
			continue
		}
		// A recall names the message by its TIMER_OUT_MS (the handle
		// carries it + 1), which is below due on a Java-written record.
		dueSlot := t.slotOf(p.due)
		if t.dels.matches(p.key, t.slotOf(p.out), t.slotOf) {
			drop[i] = true
			continue
		}
		if !p.it.roll && dueSlot >= t.readTime {
			t.delivered[p.key] = p.due
		}
	}
	t.mu.Unlock()
	last := -1
	for i := range ps {
		if !drop[i] {
			last = i
		}
	}
	out := uncounter{t: t, now: t.nowMs()}
	defer out.flush()

	for i := range ps {
		p := &ps[i]
		if drop[i] {
			out.add(p)
			effects++
			t.c.deleted.Add(1)
			t.log.Debug().Str("key", p.key).Int64("due", p.due).Msg("timer: recalled message dropped")
			continue
		}
		m, plain := t.outMessage(p)
		// One fsync for the batch: under SYNC_FLUSH only the last put waits,
		// and its flush covers every earlier byte.
		m.SkipFlushWait = i != last
		ok, abort := t.put(m, plain, p.ext.PhysicalOffset)
		if abort {
			return i, effects
		}
		out.add(p)
		if ok {
			effects++
			if p.it.roll {
				t.c.rolled.Add(1)
			} else {
				t.c.delivered.Add(1)
				t.observe(p, t.nowMs())
			}
		}
	}
	return len(ps), effects
}

// uncounter takes the handled wheel entries of a batch out of the timing
// counts (a bypass delivery never entered them), one change per run of
// entries of one topic (a flood is mostly one).
type uncounter struct {
	t      *TimerStore
	topic  string
	n, now int64
}

func (u *uncounter) add(p *prepared) {
	if p.it.pos < 0 {
		return
	}
	if p.realTopic != u.topic {
		u.flush()
		u.topic = p.realTopic
	}
	u.n++
}

func (u *uncounter) flush() {
	if u.n > 0 {
		u.t.timing.add(u.topic, -u.n, u.now)
		u.n = 0
	}
}

// outMessage builds the message to store for p, and the properties to fall
// back to when the store refuses the bookkeeping additions ("" for none).
func (t *TimerStore) outMessage(p *prepared) (*message.Message, message.Props) {
	ext := p.ext
	enq := p.it.writeMs
	if p.it.pos < 0 {
		enq = math.MaxInt64
	}
	m := &message.Message{
		Topic: p.realTopic, QueueID: p.realQID, Flag: ext.Flag, Body: ext.Body,
		SysFlag: ext.SysFlag, BornTimestamp: ext.BornTimestamp, BornHost: ext.BornHost,
		ReconsumeTimes: ext.ReconsumeTimes, PreparedTransactionOffset: ext.PreparedTransactionOffset,
	}
	enqS, deqS := strconv.FormatInt(enq, 10), strconv.FormatInt(t.nowMs(), 10)
	if !p.it.roll && p.props.Get(PropDelayLevelCopy) != "" {
		// A delay-level message re-stored as a timer (FromDelayLevel):
		// delivered as its level would have delivered it.
		m.RawProperties = message.EditProperties(string(p.props), delayLevelCopyDrop)
		return m, p.props
	}
	if !p.it.roll {
		m.RawProperties = message.EditProperties(string(p.props), []string{message.PropTimerEnqueueMs, message.PropTimerDequeueMs},
			[2]string{message.PropTimerEnqueueMs, enqS}, [2]string{message.PropTimerDequeueMs, deqS})
		return m, p.props
	}
	props := message.ParseProperties(string(p.props))
	if props == nil {
		props = make(map[string]string, 3)
	}
	n, _ := strconv.ParseInt(props[message.PropTimerRollTimes], 10, 64)
	props[message.PropTimerEnqueueMs], props[message.PropTimerDequeueMs] = enqS, deqS
	props[message.PropTimerRollTimes] = strconv.FormatInt(n+1, 10)
	m.Properties = props
	m.Topic, m.QueueID = message.TopicWheelTimer, 0
	// A roll must keep its bookkeeping (TIMER_OUT_MS is in the original).
	return m, ""
}

// messageProp reads key from m's properties, map or text.
func messageProp(m *message.Message, key string) string {
	if m.Properties != nil {
		return m.Properties[key]
	}
	return message.Props(m.RawProperties).Get(key)
}

// put stores m, retrying transient failures every RetryInterval until it
// succeeds or the store stops (abort: the message is left for after the
// restart). ok is false when m was moved aside: a message the store refuses
// for good (store.IsPermanent) is retried once without the timer bookkeeping
// properties, then diverted to its group's DLQ or the dead-letter log
// (store.Diverter), so that it never holds up the wheel. from is the
// commitlog offset m was read from.
func (t *TimerStore) put(m *message.Message, fallback message.Props, from int64) (ok, abort bool) {
	m.Delivery = true // a due timer or a roll: taken past the disk warning ratio (store.writeRefused)
	for attempt := 0; ; attempt++ {
		if t.dead.Load() {
			return false, true
		}
		res, err := t.opts.Store.PutMessage(m)
		switch {
		case err == nil:
			if res != nil && res.Status != store.PutOK {
				t.log.Warn().Str("topic", m.Topic).Str("status", res.Status.String()).Msg("timer: delivery stored but not flushed in time")
			}
			return true, false
		case errors.Is(err, store.ErrClosed):
			return false, true
		case store.IsPermanent(err):
			if fallback != "" {
				t.log.Warn().Err(err).Str("topic", m.Topic).Msg("timer: delivery refused, retrying without timer bookkeeping properties")
				m.Properties, m.RawProperties, fallback = nil, string(fallback), ""
				continue
			}
			where, derr := t.diverter.Divert(m, from, err)
			if derr == nil {
				if where == store.ToDLQ {
					t.c.toDLQ.Add(1)
				} else {
					t.c.deadLettered.Add(1)
				}
				return false, false
			}
			err = derr
			fallthrough
		default:
			t.c.putRetries.Add(1)
			ev := t.log.Debug()
			if attempt == 0 {
				ev = t.log.Warn()
			}
			ev.Err(err).Str("topic", m.Topic).Int("attempt", attempt+1).Msg("timer: delivery failed, retrying")
			if !t.waitUntil(t.nowMs()+t.opts.RetryInterval.Milliseconds(), nil) {
				return false, true
			}
		}
	}
}
