package store

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rmqio/rmq/message"
)

// Multi-dispatch and light message queues (LMQ), as 4.9.8 writes them.
//
// A producer names extra queues in INNER_MULTI_DISPATCH ("%LMQ%a,%LMQ%b").
// With EnableMultiDispatch the put, under the put lock, gives the message
// the next queue offset of each named queue and records them, comma-joined
// in the same order, as INNER_MULTI_QUEUE_OFFSET in the stored properties
// (dropping WAIT, which the stored record does not need); the queue's next
// offset moves on after the append (MultiDispatch.wrapMultiDispatch and
// updateMultiQueueOffset). A name is a topic; its queue is the message's
// own queue id, or 0 for an LMQ name ("%LMQ%…") with EnableLmq. The
// dispatcher then writes the record's unit (the same commitlog offset, size
// and tagsCode) into each named queue at its recorded offset
// (ConsumeQueue.multiDispatchLmqQueue) and calls OnDispatch for it, which
// wakes the queue's long polls (notifyMessageArrive4MultiQueue). Recovery
// re-dispatches records the same way, so the LMQ queues are rebuilt from the
// commitlog like any other, and their offsets come back from the queues.
//
// Stock splits the lists as Java's String.split does (trailing empty parts
// dropped) and writes a unit into whatever the name says. rmq keeps the
// split and the offsets' format, and departs where a name would harm the
// store: a name that is not a legal topic ([%|a-zA-Z0-9_-], at most 127
// characters) gets offset 0 in the list and no queue (stock would create a
// directory named after it). At dispatch a unit is written only at its
// queue's next offset: an offset the queue holds already is a replay
// (recovery, a retried dispatch) and is skipped, and an offset past it can
// only come from a producer that wrote INNER_MULTI_QUEUE_OFFSET itself (a
// batch, which the put does not wrap, as in Java): skipped rather than
// padding the queue up to it.
//
// LMQ consume queues are counted. Past MaxLmqConsumeQueueNum a message
// naming queues is refused with ErrLmqQueueNumExceeded: the check Java
// meant (DefaultMessageStore.checkLmqMessage), which in 4.9.8 never fires
// because asyncPutMessage tests the wrong status, leaving the count to grow
// without bound (a file and a mapping per queue). LmqQueueNumExceeded tells
// the pull path to refuse LMQ reads then, as getMessage does.
//
// A message without the property costs the put nothing (EnableMultiDispatch
// off: not even a look) and, with it on, one substring search of its
// properties, allocation free.

// ErrLmqQueueNumExceeded refuses a multi-dispatch put while the LMQ consume
// queues number more than MaxLmqConsumeQueueNum
// (PutMessageStatus.LMQ_CONSUME_QUEUE_NUM_EXCEEDED).
var ErrLmqQueueNumExceeded = errors.New("store: lmq consume queue num exceeded")

// errMultiSkipped marks a multi-dispatch unit not written: a replay, or an
// offset past its queue's end.
var errMultiSkipped = errors.New("store: multi-dispatch unit skipped")

// DefaultMaxLmqConsumeQueueNum is MessageStoreConfig maxLmqConsumeQueueNum.
const DefaultMaxLmqConsumeQueueNum = 20000

// Markers of the two properties in a properties text: key and separator.
const (
	multiDispatchMarker = message.PropInnerMultiDispatch + "\x01"
	multiOffsetMarker   = message.PropInnerMultiQueueOffset + "\x01"
)

// javaSplit is String.split(sep) for a one-character, non-regex sep: the
// parts between separators, trailing empty parts dropped.
func javaSplit(s, sep string) []string {
	parts := strings.Split(s, sep)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// isBlank is StringUtils.isBlank.
func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

// multiPlan is a put's multi-dispatch: the named queues, those a unit may
// be written to having ok set.
type multiPlan struct {
	keys []queueKey
	ok   []bool
	offs []int64
}

// planMulti reads the record's INNER_MULTI_DISPATCH, or returns nil when
// the message is not multi-dispatched (isMultiDispatchMsg).
func (s *Store) planMulti(props string, queueID int32) *multiPlan {
	if !s.opts.EnableMultiDispatch || !strings.Contains(props, multiDispatchMarker) {
		return nil
	}
	v := message.Props(props).Get(message.PropInnerMultiDispatch)
	if isBlank(v) {
		return nil
	}
	names := javaSplit(v, message.MultiDispatchSeparator)
	p := &multiPlan{keys: make([]queueKey, len(names)), ok: make([]bool, len(names)), offs: make([]int64, len(names))}
	for i, name := range names {
		p.keys[i] = s.multiKey(name, queueID)
		p.ok[i] = validMultiName(name)
	}
	return p
}

// multiKey is MultiDispatch.queueKey: the queue a name dispatches to.
func (s *Store) multiKey(name string, queueID int32) queueKey {
	if s.opts.EnableLmq && message.IsLmq(name) {
		queueID = 0
	}
	return queueKey{name, queueID}
}

// validMultiName: name may name a consume queue (a legal topic).
func validMultiName(name string) bool {
	return message.ValidateTopic(name) == nil && checkTopic(name) == nil
}

// lmqRefused is checkLmqMessage: with LMQ on, a multi-dispatch message is
// refused while the LMQ queues number more than the limit.
func (s *Store) lmqRefused() bool {
	return s.opts.EnableLmq && s.LmqQueueNumExceeded()
}

// LmqQueueNumExceeded reports whether there are more LMQ consume queues
// than MaxLmqConsumeQueueNum with LMQ and multi-dispatch on
// (isLmqConsumeQueueNumExceeded): the pull path then refuses LMQ reads.
func (s *Store) LmqQueueNumExceeded() bool {
	return s.opts.EnableLmq && s.opts.EnableMultiDispatch && s.lmqQueues.Load() > int64(s.opts.MaxLmqConsumeQueueNum)
}

// LmqQueueNum is the number of LMQ consume queues.
func (s *Store) LmqQueueNum() int64 { return s.lmqQueues.Load() }

// countLmqQueue counts a consume queue of topic created (+1) or dropped (-1).
func (s *Store) countLmqQueue(topic string, d int64) {
	if message.IsLmq(topic) {
		s.lmqQueues.Add(d)
	}
}

// wrapLocked takes the plan's offsets from the queue table and returns the
// properties to store: props without WAIT and any INNER_MULTI_QUEUE_OFFSET,
// then INNER_MULTI_QUEUE_OFFSET. The put lock must be held.
func (s *Store) wrapLocked(p *multiPlan, props string) string {
	var b strings.Builder
	for i, k := range p.keys {
		p.offs[i] = 0
		if p.ok[i] {
			p.offs[i] = s.queueOffsets[k]
		}
		if i > 0 {
			b.WriteString(message.MultiDispatchSeparator)
		}
		b.WriteString(strconv.FormatInt(p.offs[i], 10))
	}
	return message.EditProperties(props, []string{message.PropWait, message.PropInnerMultiQueueOffset},
		[2]string{message.PropInnerMultiQueueOffset, b.String()})
}

// advanceLocked moves each named queue's next offset past the message
// (updateMultiQueueOffset). The put lock must be held.
func (s *Store) advanceLocked(p *multiPlan) {
	for i, k := range p.keys {
		if p.ok[i] {
			s.queueOffsets[k] = p.offs[i] + 1
		}
	}
}

// dispatchMulti writes d's units into the queues its properties name
// (checkMultiDispatchQueue, multiDispatchLmqQueue). A unit whose queue
// waits for a file waits with it. It returns an error when a unit could not
// be written; the caller retries the whole record, whose units written
// already are then skipped as replays.
func (s *Store) dispatchMulti(d *pendingDispatch) error {
	names, offs, mismatch := multiTargets(d.Props)
	if mismatch {
		s.stats.dispatchErrors.Add(1)
		s.log.Warn().Str("topic", d.Topic).Int64("phyOffset", d.PhysicalOffset).Msg("dispatch: INNER_MULTI_DISPATCH and INNER_MULTI_QUEUE_OFFSET differ in length; not multi-dispatched")
		return nil
	}
	for i, name := range names {
		off, ok := multiOffset(name, offs[i])
		if !ok {
			continue
		}
		x := *d
		k := s.multiKey(name, d.QueueID)
		x.Topic, x.QueueID, x.QueueOffset, x.multi = k.topic, k.queueID, off, true
		if len(s.deferred) > 0 {
			if df := s.deferred[k]; df != nil {
				df.recs = append(df.recs, x)
				s.deferredRecs++
				continue
			}
		}
		q, err := s.putUnit(&x.DispatchRequest, s.creator == nil)
		switch {
		case err == errMultiSkipped:
			continue
		case err == errNoFile:
			df := s.askFile(k, q, off)
			df.recs = append(df.recs, x)
			s.deferredRecs++
			continue
		case err != nil:
			return err
		}
		if s.opts.OnDispatch != nil {
			s.opts.OnDispatch(x.DispatchRequest)
		}
	}
	return nil
}

// multiTargets reads a record's INNER_MULTI_DISPATCH names and their
// INNER_MULTI_QUEUE_OFFSET offsets, none when either is absent or blank;
// mismatch when the two lists differ in length (then none either).
func multiTargets(props message.Props) (names, offs []string, mismatch bool) {
	text := string(props)
	if !strings.Contains(text, multiOffsetMarker) || !strings.Contains(text, multiDispatchMarker) {
		return nil, nil, false
	}
	dv, ov := props.Get(message.PropInnerMultiDispatch), props.Get(message.PropInnerMultiQueueOffset)
	if isBlank(dv) || isBlank(ov) {
		return nil, nil, false
	}
	names, offs = javaSplit(dv, message.MultiDispatchSeparator), javaSplit(ov, message.MultiDispatchSeparator)
	if len(names) != len(offs) {
		return nil, nil, true
	}
	return names, offs, false
}

// multiOffset is the queue offset off (text) of the unit for name, ok when
// such a unit may be written.
func multiOffset(name, off string) (int64, bool) {
	v, err := strconv.ParseInt(off, 10, 64)
	return v, err == nil && v >= 0 && validMultiName(name)
}

// checkMultiUnit lets a multi-dispatch unit be written only at q's next
// offset (see above).
func (s *Store) checkMultiUnit(q *consumeQueue, d *DispatchRequest) error {
	next := q.maxOffset()
	switch {
	case d.QueueOffset == next:
		return nil
	case d.QueueOffset > next:
		// Only a producer's own INNER_MULTI_QUEUE_OFFSET gets here: logged
		// at 1, 2, 4, 8, ... such units, so that it cannot flood the log.
		if n := s.multiSkips.Add(1); n&(n-1) == 0 {
			s.log.Warn().Int64("count", n).Str("queue", d.Topic).Int64("offset", d.QueueOffset).Int64("next", next).Int64("phyOffset", d.PhysicalOffset).
				Msg("dispatch: multi-dispatch offset past the queue's end; unit skipped")
		}
	}
	return errMultiSkipped
}

// multiFits checks a wrapped record: its properties and its size within the
// limits prepare applies to every record.
func (s *Store) multiFits(propsLen, total int) error {
	if propsLen > message.MaxPropertiesLength {
		return fmt.Errorf("%w: %d bytes with %s", ErrPropertiesTooLarge, propsLen, message.PropInnerMultiQueueOffset)
	}
	if int64(total)+blankRecordLength > s.cl.fileSize {
		return fmt.Errorf("%w: %d record bytes do not fit in a %d-byte commitlog file", ErrMessageTooLarge, total, s.cl.fileSize)
	}
	return nil
}
