package clients

import (
	"strings"

	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// The 5.3.3 group admin requests (J5 AdminBrokerProcessor).

// maxGroupListBody bounds UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST's body
// below the frame limit (4 MiB holds tens of thousands of group configs);
// the JSON decoder bounds nesting (remoting.UnmarshalBody).
const maxGroupListBody = 4 << 20

// PermReadIndex is PermName.INDEX_PERM_READ, the bit of a group's forbidden
// value UPDATE_AND_GET_GROUP_FORBIDDEN sets and clears.
const PermReadIndex = 2

// decodeGroupList reads SubscriptionGroupList, each config over the stock
// field initialisers (decodeSubscriptionGroupConfig). A body without a list
// is refused, as the stock's NullPointerException is: SYSTEM_ERROR.
func decodeGroupList(body []byte) ([]*topicgroup.SubscriptionGroupConfig, string) {
	const code = "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST: "
	raw, err := remoting.DecodeListBody(body, "groupConfigList", maxGroupListBody)
	if err != nil {
		return nil, code + err.Error()
	}
	out := make([]*topicgroup.SubscriptionGroupConfig, 0, len(raw))
	for _, r := range raw {
		cfg, err := decodeSubscriptionGroupConfig(r)
		if err != nil {
			return nil, code + "bad group config: " + err.Error()
		}
		out = append(out, cfg)
	}
	return out, ""
}

// updateAndCreateSubscriptionGroupList stores every config of the list and
// persists once (SubscriptionGroupManager.updateSubscriptionGroupConfigList);
// an empty list changes nothing and succeeds. Stock checks no names; rmq
// refuses the whole list when one name is not a valid group, as it refuses
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP's.
func (s *Service) updateAndCreateSubscriptionGroupList(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	cfgs, bad := decodeGroupList(req.Body)
	if bad != "" {
		return remoting.NewResponse(req, remoting.SystemError, bad)
	}
	names := make([]string, len(cfgs))
	for i, cfg := range cfgs {
		names[i] = cfg.GroupName
	}
	s.log.Info().Str("groups", strings.Join(names, ";")).Object("client", c).Msg("update subscription group list")
	if err := s.SubGroups.UpdateList(cfgs); err != nil {
		return remoting.ErrorResponse(req, err)
	}
	return successResponse(req, nil)
}

// queryTopicsByConsumer lists the topics the group has offsets for
// (ConsumerOffsetManager.whichTopicByConsumer: its retry topic and offline
// history included) with the broker's address.
func (s *Service) queryTopicsByConsumer(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.QueryTopicsByConsumerRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	topics := s.Offsets.TopicsByGroup(hd.Group)
	if topics == nil {
		topics = []string{}
	}
	return successResponse(req, remoting.MarshalBody(&remoting.TopicList{TopicList: topics, BrokerAddr: s.brokerAddr()}))
}

// querySubscriptionByConsumer answers the group's subscription of the topic
// as its online consumers declared it; none (offline, or another topic) is
// still SUCCESS, without subscriptionData.
func (s *Service) querySubscriptionByConsumer(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.QuerySubscriptionByConsumerRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	body := remoting.QuerySubscriptionResponseBody{Group: hd.Group, Topic: hd.Topic}
	if hd.Topic != nil {
		body.SubscriptionData = s.Consumers.FindSubscription(hd.Group, *hd.Topic)
	}
	return successResponse(req, remoting.MarshalBody(&body))
}

// updateAndGetGroupForbidden sets or clears the group's read ban on the
// topic when the request says readable, then answers whether the group may
// read (remark "", as stock sets it).
func (s *Service) updateAndGetGroupForbidden(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.UpdateGroupForbiddenRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	if hd.Readable != nil {
		s.log.Info().Str("group", hd.Group).Str("topic", hd.Topic).Bool("readable", *hd.Readable).Object("client", c).
			Msg("update group forbidden")
		if err := s.SubGroups.SetForbidden(hd.Group, hd.Topic, PermReadIndex, !*hd.Readable); err != nil {
			return remoting.NewResponse(req, remoting.SystemError, err.Error())
		}
	}
	body := remoting.GroupForbidden{Group: hd.Group, Topic: hd.Topic, Readable: !s.SubGroups.Forbidden(hd.Group, hd.Topic, PermReadIndex)}
	return successResponse(req, remoting.MarshalBody(&body))
}
