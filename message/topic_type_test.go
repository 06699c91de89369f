package message

import "testing"

func TestTopicMessageTypeOf(t *testing.T) {
	if got := TopicMessageTypeOf(nil); got != TopicTypeNormal {
		t.Errorf("no attributes: %s, want NORMAL", got)
	}
	if got := TopicMessageTypeOf(map[string]string{AttrMessageType: "FIFO"}); got != TopicTypeFIFO {
		t.Errorf("message.type=FIFO: %s", got)
	}
}

// TestMessageTypeOf: a transactional half message is TRANSACTION even with a delay or group, a delay wins
// over a group (TopicMessageType.parseFromMessageProperty's order).
func TestMessageTypeOf(t *testing.T) {
	cases := []struct {
		props map[string]string
		want  TopicMessageType
	}{
		{nil, TopicTypeNormal},
		{map[string]string{PropTranMsg: "false"}, TopicTypeNormal},
		{map[string]string{PropTranMsg: "true", PropDelay: "3", PropShardingKey: "g"}, TopicTypeTransaction},
		{map[string]string{PropTimerDeliverMs: "1", PropShardingKey: "g"}, TopicTypeDelay},
		{map[string]string{PropTimerDelayMs: "1"}, TopicTypeDelay},
		{map[string]string{PropShardingKey: "g"}, TopicTypeFIFO},
	}
	for _, c := range cases {
		if got := MessageTypeOf(c.props); got != c.want {
			t.Errorf("%v: %s, want %s", c.props, got, c.want)
		}
	}
}

func TestCheckTopicMessageType(t *testing.T) {
	for _, c := range []struct {
		topic, msg TopicMessageType
		ok         bool
	}{
		{TopicTypeFIFO, TopicTypeFIFO, true},
		{TopicTypeMixed, TopicTypeDelay, true},
		{TopicTypeNormal, TopicTypeFIFO, false},
		{TopicTypeMixed, TopicTypeUnspecified, false},
		{TopicTypeUnspecified, TopicTypeNormal, false},
	} {
		if err := CheckTopicMessageType(c.topic, c.msg); (err == nil) != c.ok {
			t.Errorf("%s topic, %s message: %v, want ok=%t", c.topic, c.msg, err, c.ok)
		}
	}
}
