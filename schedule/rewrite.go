package schedule

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/rmqio/rmq/message"
)

// ErrBadDelayLevel is returned when the DELAY property is not a number.
var ErrBadDelayLevel = errors.New("schedule: DELAY property is not a number")

// DelayLevel returns the DELAY property as a level (0 when absent).
func DelayLevel(props map[string]string) (int, error) {
	return parseDelayLevel(props[message.PropDelay])
}

// parseDelayLevel reads a DELAY property value ("" is level 0).
func parseDelayLevel(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%w: %q", ErrBadDelayLevel, v)
	}
	return n, nil
}

// Rewrite turns a message carrying DELAY > 0 into its schedule form, as the
// 4.9.8 CommitLog.asyncPutMessage does: the level is clamped to the highest,
// REAL_TOPIC/REAL_QID keep the destination, and the message goes to
// SCHEDULE_TOPIC_XXXX queue level-1. Prepared and rollback messages are left
// alone. It reports whether the message was rewritten.
func (l Levels) Rewrite(m *message.Message) (bool, error) {
	level, clamped, err := l.target(m.Properties[message.PropDelay], m.SysFlag)
	if err != nil || level == 0 {
		return false, err
	}
	if clamped {
		m.Properties[message.PropDelay] = strconv.Itoa(level)
	}
	m.Properties[message.PropRealTopic] = m.Topic
	m.Properties[message.PropRealQueueID] = strconv.Itoa(int(m.QueueID))
	m.Topic = message.TopicSchedule
	m.QueueID = int32(level - 1)
	return true, nil
}

// TextLevel is Rewrite's decision for a message whose properties text is
// props, for a send path that keeps the producer's text: the level the
// message goes to (queue level-1 of SCHEDULE_TOPIC_XXXX; 0: Rewrite leaves
// it alone), whether DELAY was clamped to it (Rewrite then sets DELAY to
// the level; otherwise the producer's DELAY is kept as it is), and
// Rewrite's refusal.
func (l Levels) TextLevel(props message.Props, sysFlag int32) (level int, clamped bool, err error) {
	return l.target(props.Get(message.PropDelay), sysFlag)
}

// target is the level a message with sysFlag and DELAY value delay goes to
// (0: it stays on its topic) and whether that clamped delay.
func (l Levels) target(delay string, sysFlag int32) (level int, clamped bool, err error) {
	if tt := message.TransactionType(sysFlag); tt == message.TransactionPreparedType || tt == message.TransactionRollbackType {
		return 0, false, nil
	}
	level, err = parseDelayLevel(delay)
	if err != nil || level <= 0 {
		return 0, false, err
	}
	c := l.Clamp(level)
	return c, c != level, nil
}

// TagsCode is the consume-queue tagsCode of a schedule-topic message: its
// deliver timestamp in ms. ok is false for other topics.
func (l Levels) TagsCode(topic string, props message.Props, storeMs int64) (code int64, ok bool) {
	if topic != message.TopicSchedule {
		return 0, false
	}
	level, err := parseDelayLevel(props.Get(message.PropDelay))
	if err != nil || level <= 0 {
		return storeMs, true
	}
	return l.DeliverAt(l.Clamp(level), storeMs), true
}
