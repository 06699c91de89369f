package timer

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/rmqio/rmq/message"
)

// Recall errors. The broker answers ErrRecallRefused (which every refusal
// wraps, including ErrAlreadyDelivered and ErrBadRecallHandle) with
// ILLEGAL_OPERATION (604) and the error text as remark; other errors (the
// marker could not be stored) with SYSTEM_ERROR. Topic existence (17,
// TOPIC_NOT_EXIST) is the broker's check.
var (
	ErrRecallRefused    = errors.New("timer: recall refused")
	ErrAlreadyDelivered = errors.New("timer: message already delivered")
)

// Recall cancels the timer message a recall handle names: it validates the
// handle against topic and this broker, stores a delete marker (a message on
// the timer topic carrying TIMER_DEL_UNIQKEY, as stock does, so it is as
// durable as any message) and enters it in the delete set, which is consulted
// when any message with that topic and uniq key comes due (whatever slot it
// is in, rolled or not). It returns the uniq key (the response msgId).
//
// A message is known to be delivered once the read cursor has passed its slot
// or it was delivered from the slot being read; Recall then answers
// ErrAlreadyDelivered. Unlike stock, a message that is overdue but not yet
// delivered (a lagging wheel) can still be recalled.
func (t *TimerStore) Recall(topic, handle string, producerGroup string) (uniqKey string, err error) {
	hTopic, hBroker, ts, uniq, err := DecodeRecallHandle(handle)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrRecallRefused, err)
	}
	if hTopic != topic {
		return "", fmt.Errorf("%w: the handle is for topic %q, not %q", ErrRecallRefused, hTopic, topic)
	}
	if hBroker != t.opts.BrokerName {
		return "", fmt.Errorf("%w: the handle is for broker %q, this is %q", ErrRecallRefused, hBroker, t.opts.BrokerName)
	}
	now := t.nowMs()
	maxMs := satMul(t.opts.MaxDelaySec, 1000)
	if ts <= 0 || satSub(ts, now) > maxMs {
		return "", fmt.Errorf("%w: handle timestamp %d is outside (0, now + max delay %dms]", ErrRecallRefused, ts, maxMs)
	}
	due := ts - 1 // handles carry TIMER_OUT_MS + 1
	key := topic + "+" + uniq
	t.mu.Lock()
	closed := t.closed
	if !closed {
		err = t.checkRecallable(key, due)
	}
	t.mu.Unlock()
	if closed {
		return "", ErrClosed
	}
	if err != nil {
		return "", err
	}
	props := map[string]string{
		message.PropTimerDelUniqKey: key, message.PropUniqKey: uniq, message.PropTimerDeliverMs: strconv.FormatInt(ts, 10), message.PropTags: RecallTag,
	}
	if producerGroup != "" {
		props[message.PropProducerGroup] = producerGroup
	}
	m := &message.Message{Topic: topic, QueueID: 0, Body: []byte("0"), Properties: props, BornTimestamp: now}
	Rewrite(m, ts)
	res, err := t.opts.Store.PutMessage(m)
	if err != nil {
		return "", fmt.Errorf("timer: recall: store the delete marker: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	// Checked again: the message may have been delivered while the marker
	// was stored (the marker then expires unused).
	if err := t.checkRecallable(key, due); err != nil {
		return "", err
	}
	t.dels.add(key, ts, res.QueueOffset)
	return uniq, nil
}

// checkRecallable refuses a recall of a message already delivered. mu must
// be held.
func (t *TimerStore) checkRecallable(key string, due int64) error {
	if t.slotOf(due) < t.readTime {
		return fmt.Errorf("%w: %w: it was due at %d and the wheel has passed that time", ErrRecallRefused, ErrAlreadyDelivered, due)
	}
	if _, ok := t.delivered[key]; ok {
		return fmt.Errorf("%w: %w: %s was delivered at its time %d", ErrRecallRefused, ErrAlreadyDelivered, key, due)
	}
	return nil
}
