package broker

import (
	"strings"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/topicgroup"
)

// messageTypeConflict is the topic message type check of the 5.x proxy
// (ProducerProcessor.sendMessage with DefaultTopicMessageTypeValidator),
// run on every send when enableTopicMessageTypeCheck is on: the refusal's
// remark when tc's message.type does not take a message with props, "" when
// it does; force checks whatever the key says (a gRPC send). Retry and DLQ topics are not checked: what is sent there is a
// consumer's re-send of another topic's message, with a delay level.
func (b *Broker) messageTypeConflict(tc *topicgroup.TopicConfig, props map[string]string, force bool) string {
	if !b.opts.EnableTopicMessageTypeCheck && !force {
		return ""
	}
	if strings.HasPrefix(tc.TopicName, message.RetryTopicPrefix) || strings.HasPrefix(tc.TopicName, message.DLQTopicPrefix) ||
		b.topics.IsSystemTopic(tc.TopicName) {
		return ""
	}
	if err := message.CheckTopicMessageType(message.TopicMessageTypeOf(tc.Attributes), message.MessageTypeOf(props)); err != nil {
		return err.Error()
	}
	return ""
}
