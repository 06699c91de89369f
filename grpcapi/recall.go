package grpcapi

import (
	"context"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"
)

// RecallMessage cancels a timer message by the recall handle its send
// answered (SendResultEntry.recall_handle), through the broker's Recall, the
// code RECALL_MESSAGE runs. As the proxy in local mode does
// (RecallMessageActivity, ProducerProcessor.recallMessage,
// LocalMessageService.recallMessage):
//   - the topic name is validated as for any request (ILLEGAL_TOPIC);
//   - the topic's message type must take DELAY messages
//     (enableTopicMessageTypeCheck, on by default). rmq topics take every
//     type, as a 5.x MIXED topic; a topic that does not exist has type
//     UNSPECIFIED and fails with MESSAGE_PROPERTY_CONFLICT_WITH_TYPE;
//   - every refusal of the broker (a handle that does not decode or names
//     another topic or broker, a message already delivered, recall
//     disabled) is INTERNAL_SERVER_ERROR with the broker's remark, as the
//     proxy turns any answer but SUCCESS into it.
//
// The proxy sends no producer group with the recall; neither does this.
func (s *Server) RecallMessage(_ context.Context, req *v2.RecallMessageRequest) (*v2.RecallMessageResponse, error) {
	topic, err := s.topicName(req.GetTopic())
	if err != nil {
		return &v2.RecallMessageResponse{Status: toStatus(err)}, nil
	}
	if s.b.Topics().Get(topic) == nil {
		// DefaultTopicMessageTypeValidator.validate(UNSPECIFIED, DELAY).
		return &v2.RecallMessageResponse{Status: &v2.Status{Code: v2.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
			Message: "TopicMessageType validate failed, the expected type is UNSPECIFIED, but actual type is DELAY"}}, nil
	}
	id, err := s.b.Recall(topic, req.GetRecallHandle(), "")
	if err != nil {
		msg := err.Error() // a refusal's text is its remark
		return &v2.RecallMessageResponse{Status: &v2.Status{Code: v2.Code_INTERNAL_SERVER_ERROR, Message: msg}}, nil
	}
	return &v2.RecallMessageResponse{Status: okStatus(), MessageId: id}, nil
}
