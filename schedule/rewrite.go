package schedule

import (
	"errors"
	"fmt"
	"strconv"

	"rmq/store"
)

// Property keys and topics of the delay-level path (MessageConst.java, TopicValidator.java).
const (
	Topic            = "SCHEDULE_TOPIC_XXXX"
	PropDelay        = "DELAY"
	PropRealTopic    = "REAL_TOPIC"
	PropRealQueueID  = "REAL_QID"
	transHalfTopic   = "RMQ_SYS_TRANS_HALF_TOPIC"
	tranTypeMask     = 0xC
	tranTypePrepared = 0x4
	tranTypeRollback = 0xC
)

// ErrBadDelayLevel is returned when the DELAY property is not a number.
var ErrBadDelayLevel = errors.New("schedule: DELAY property is not a number")

// DelayLevel returns the DELAY property as a level (0 when absent).
func DelayLevel(props map[string]string) (int, error) {
	return parseDelayLevel(props[PropDelay])
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
func (l Levels) Rewrite(m *store.Message) (bool, error) {
	if tt := m.SysFlag & tranTypeMask; tt == tranTypePrepared || tt == tranTypeRollback {
		return false, nil
	}
	level, err := DelayLevel(m.Properties)
	if err != nil {
		return false, err
	}
	if level <= 0 {
		return false, nil
	}
	if c := l.Clamp(level); c != level {
		level = c
		m.Properties[PropDelay] = strconv.Itoa(level)
	}
	m.Properties[PropRealTopic] = m.Topic
	m.Properties[PropRealQueueID] = strconv.Itoa(int(m.QueueID))
	m.Topic = Topic
	m.QueueID = int32(level - 1)
	return true, nil
}

// TagsCode is the consume-queue tagsCode of a schedule-topic message: its
// deliver timestamp in ms. ok is false for other topics.
func (l Levels) TagsCode(topic string, props store.Props, storeMs int64) (code int64, ok bool) {
	if topic != Topic {
		return 0, false
	}
	level, err := parseDelayLevel(props.Get(PropDelay))
	if err != nil || level <= 0 {
		return storeMs, true
	}
	return l.DeliverAt(l.Clamp(level), storeMs), true
}
