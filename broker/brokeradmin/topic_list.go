package brokeradmin

import (
	"maps"
	"strconv"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// maxTopicListBody bounds UPDATE_AND_CREATE_TOPIC_LIST's body below the
// frame limit: a list of 4 MiB holds tens of thousands of configs, more
// than any topic file mqadmin updateTopicList reads. The JSON decoder bounds
// nesting (10 000 levels, remoting.UnmarshalBody).
const maxTopicListBody = 4 << 20

// decodeTopicList reads CreateTopicListRequestBody, each config over the
// Java field initialisers. A body without a list (Java's null) is refused
// as the stock's NullPointerException is: SYSTEM_ERROR.
func decodeTopicList(body []byte) ([]*topicgroup.TopicConfig, string) {
	const code = "UPDATE_AND_CREATE_TOPIC_LIST: "
	raw, err := remoting.DecodeListBody(body, "topicConfigList", maxTopicListBody)
	if err != nil {
		return nil, code + err.Error()
	}
	out := make([]*topicgroup.TopicConfig, 0, len(raw))
	for _, r := range raw {
		tc := topicgroup.NewTopicConfig("")
		if err := remoting.UnmarshalBody(r, tc); err != nil {
			return nil, code + "bad topic config: " + err.Error()
		}
		if tc.TopicFilterType != filterTypeSingleTag && tc.TopicFilterType != filterTypeMultiTag {
			return nil, code + "no TopicFilterType " + strconv.Quote(tc.TopicFilterType)
		}
		out = append(out, tc)
	}
	return out, ""
}

// processUpdateAndCreateTopicList serves UPDATE_AND_CREATE_TOPIC_LIST (J5
// AdminBrokerProcessor.updateAndCreateTopicList). Every config is checked,
// in order, as UPDATE_AND_CREATE_TOPIC checks its header in 5.3.3 (topic
// name, system topic and MIXED type: INVALID_PARAMETER), and stock's
// shortcut is kept: a config equal to the topic's current one answers
// SUCCESS at once, leaving the configs after it unapplied. Attribute
// modifications (the map in "+key"/"-key" form) are all worked out before
// any topic changes, so a refused one (SYSTEM_ERROR with AttributeUtil's
// message, as stock) leaves every topic as it was, where stock would have
// applied the configs before it in memory.
func (s *Service) processUpdateAndCreateTopicList(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	list, bad := decodeTopicList(req.Body)
	if bad != "" {
		return remoting.NewResponse(req, remoting.SystemError, bad)
	}
	for _, tc := range list {
		topic := tc.TopicName
		if err := message.ValidateTopic(topic); err != nil {
			return remoting.NewResponse(req, remoting.InvalidParameter, err.Error())
		}
		if s.topics.IsSystemTopic(topic) {
			return remoting.NewResponse(req, remoting.InvalidParameter, "The topic["+topic+"] is conflict with system topic.")
		}
		if !s.allowMixed && tc.Attributes["+"+message.AttrMessageType] == string(message.TopicTypeMixed) {
			return remoting.NewResponse(req, remoting.InvalidParameter, "MIXED message type is not supported.")
		}
		if sameTopicConfig(tc, s.topics.Get(topic)) {
			return remoting.NewResponse(req, remoting.Success, "")
		}
	}
	// A topic named twice is altered twice, the second time over the first.
	pending := make(map[string]map[string]string, len(list))
	for _, tc := range list {
		current, seen := pending[tc.TopicName]
		old := s.topics.Get(tc.TopicName)
		if !seen && old != nil {
			current = old.Attributes
		}
		attrs, err := topicgroup.AlterAttributes(!seen && old == nil, current, tc.Attributes)
		if err != nil {
			return remoting.NewResponse(req, remoting.SystemError, err.Error())
		}
		pending[tc.TopicName] = attrs
		tc.Attributes = attrs
	}
	for _, tc := range list {
		s.log.Info().Str("topic", tc.TopicName).Object("client", c).Int32("read", tc.ReadQueueNums).
			Int32("write", tc.WriteQueueNums).Int32("perm", tc.Perm).Msg("update and create topic (list)")
		s.topics.Update(tc)
	}
	return remoting.NewResponse(req, remoting.Success, "")
}

// sameTopicConfig is TopicConfig.equals between a requested config (its
// attributes still a modification map) and the current one: only a request
// without attributes can equal a topic without any.
func sameTopicConfig(req, cur *topicgroup.TopicConfig) bool {
	if cur == nil {
		return false
	}
	return req.TopicName == cur.TopicName && req.ReadQueueNums == cur.ReadQueueNums &&
		req.WriteQueueNums == cur.WriteQueueNums && req.Perm == cur.Perm &&
		req.TopicSysFlag == cur.TopicSysFlag && req.Order == cur.Order &&
		req.TopicFilterType == cur.TopicFilterType && maps.Equal(req.Attributes, cur.Attributes)
}
