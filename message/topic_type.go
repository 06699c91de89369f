package message

import "fmt"

// TopicMessageType is the 5.x topic attribute message.type, the kind of
// message a topic takes (common/attribute/TopicMessageType.java).
type TopicMessageType string

const (
	TopicTypeUnspecified TopicMessageType = "UNSPECIFIED"
	TopicTypeNormal      TopicMessageType = "NORMAL"
	TopicTypeFIFO        TopicMessageType = "FIFO"
	TopicTypeDelay       TopicMessageType = "DELAY"
	TopicTypeTransaction TopicMessageType = "TRANSACTION"
	// TopicTypeMixed takes every kind.
	TopicTypeMixed TopicMessageType = "MIXED"
)

// AttrMessageType is the topic attribute's key (TopicAttributes
// TOPIC_MESSAGE_TYPE_ATTRIBUTE).
const AttrMessageType = "message.type"

// TopicMessageTypes is every value message.type may take, in declaration
// order.
var TopicMessageTypes = []TopicMessageType{
	TopicTypeUnspecified, TopicTypeNormal, TopicTypeFIFO, TopicTypeDelay, TopicTypeTransaction, TopicTypeMixed,
}

// ValidTopicMessageType reports whether v is one of TopicMessageTypes.
func ValidTopicMessageType(v string) bool {
	for _, t := range TopicMessageTypes {
		if string(t) == v {
			return true
		}
	}
	return false
}

// TopicMessageTypeOf is a topic's type from its attributes: NORMAL when
// message.type is absent (TopicConfig.getTopicMessageType).
func TopicMessageTypeOf(attributes map[string]string) TopicMessageType {
	if v, ok := attributes[AttrMessageType]; ok {
		return TopicMessageType(v)
	}
	return TopicTypeNormal
}

// MessageTypeOf classifies a message by its properties as 5.x does
// (TopicMessageType.parseFromMessageProperty): a transactional half message,
// then any delay (a 4.x level or a 5.x timer property), then a FIFO message
// (one with a message group, the sharding key); anything else is NORMAL.
func MessageTypeOf(props map[string]string) TopicMessageType {
	if props[PropTranMsg] == "true" {
		return TopicTypeTransaction
	}
	for _, k := range [...]string{PropDelay, PropTimerDeliverMs, PropTimerDelaySec, PropTimerDelayMs} {
		if _, ok := props[k]; ok {
			return TopicTypeDelay
		}
	}
	if _, ok := props[PropShardingKey]; ok {
		return TopicTypeFIFO
	}
	return TopicTypeNormal
}

// CheckTopicMessageType is the proxy's DefaultTopicMessageTypeValidator: a
// message of type actual may go to a topic of type expected when both are
// the same or the topic is MIXED; an UNSPECIFIED message never may. The
// error text is the stock one.
func CheckTopicMessageType(expected, actual TopicMessageType) error {
	if actual == TopicTypeUnspecified || (actual != expected && expected != TopicTypeMixed) {
		return fmt.Errorf("TopicMessageType validate failed, the expected type is %s, but actual type is %s", expected, actual)
	}
	return nil
}
