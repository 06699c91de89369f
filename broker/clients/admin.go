package clients

import (
	"sort"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// Admin requests about groups (J4 AdminBrokerProcessor).

func (s *Service) getConsumerConnectionList(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.ConsumerGroupRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	group := hd.ConsumerGroup
	cc, ok := s.Consumers.Connection(group)
	if !ok {
		return remoting.NewResponse(req, remoting.ConsumerNotOnline, "the consumer group["+group+"] not online")
	}
	return successResponse(req, remoting.MarshalBody(cc))
}

func (s *Service) getProducerConnectionList(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.GetProducerConnectionListRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	group := hd.ProducerGroup
	pc, ok := s.Producers.Connection(group)
	if !ok {
		return remoting.NewResponse(req, remoting.SystemError, "the producer group["+group+"] not exist")
	}
	return successResponse(req, remoting.MarshalBody(pc))
}

// updateAndCreateSubscriptionGroup stores the body's config; fields it leaves
// out keep the stock defaults. An empty body changes nothing.
func (s *Service) updateAndCreateSubscriptionGroup(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	cfg, err := decodeSubscriptionGroupConfig(req.Body)
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, "updateAndCreateSubscriptionGroup: bad body: "+err.Error())
	}
	if cfg == nil {
		return successResponse(req, nil)
	}
	if err := message.ValidateGroup(cfg.GroupName); err != nil {
		return remoting.ErrorResponse(req, err)
	}
	s.log.Info().Str("group", cfg.GroupName).Object("client", c).Msg("update subscription group")
	if err := s.SubGroups.Update(cfg); err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	return successResponse(req, nil)
}

func (s *Service) getAllSubscriptionGroupConfig(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	return successResponse(req, remoting.MarshalBody(s.SubGroups.Wrapper()))
}

// getSubscriptionGroupConfig returns one group's config (a 5.x admin
// request), auto-creating it as a heartbeat would.
func (s *Service) getSubscriptionGroupConfig(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.GetSubscriptionGroupConfigRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	group := hd.Group
	if err := message.ValidateGroup(group); err != nil {
		return remoting.ErrorResponse(req, err)
	}
	cfg := s.SubGroups.FindOrCreate(group)
	if cfg == nil {
		return remoting.NewResponse(req, remoting.SubscriptionGroupNotExist, "No group in this broker")
	}
	return successResponse(req, remoting.MarshalBody(cfg))
}

func (s *Service) deleteSubscriptionGroup(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.DeleteSubscriptionGroupRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	group, removeOffset := hd.GroupName, hd.RemoveOffset
	s.log.Info().Str("group", group).Bool("removeOffset", removeOffset).Object("client", c).Msg("delete subscription group")
	if _, err := s.SubGroups.Delete(group); err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	if removeOffset {
		s.Offsets.RemoveGroup(group)
	}
	return successResponse(req, nil)
}

// queryTopicConsumeByWho lists the groups online with a subscription of the
// topic together with the groups that have offsets for it.
func (s *Service) queryTopicConsumeByWho(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.TopicRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	topic := hd.Topic
	set := make(map[string]struct{})
	for _, g := range s.Consumers.GroupsByTopic(topic) {
		set[g] = struct{}{}
	}
	for _, g := range s.Offsets.GroupsByTopic(topic) {
		set[g] = struct{}{}
	}
	groups := make([]string, 0, len(set))
	for g := range set {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	return successResponse(req, remoting.MarshalBody(&remoting.GroupList{GroupList: groups}))
}

func (s *Service) getAllConsumerOffset(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	return successResponse(req, s.Offsets.Encode())
}
