package clients

import (
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// message.RetryTopicPrefix names a group's retry topic: %RETRY%<group>.

// Processors maps the request codes the service serves: client membership,
// offsets, locks and the admin requests about groups.
func (s *Service) Processors() map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command {
	m := map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command{
		remoting.HeartBeat:                            s.heartbeat,
		remoting.UnregisterClient:                     s.unregisterClient,
		remoting.GetConsumerListByGroup:               s.getConsumerListByGroup,
		remoting.UpdateConsumerOffset:                 s.updateConsumerOffset,
		remoting.LockBatchMQ:                          s.lockBatchMQ,
		remoting.UnlockBatchMQ:                        s.unlockBatchMQ,
		remoting.GetConsumerConnectionList:            s.getConsumerConnectionList,
		remoting.GetProducerConnectionList:            s.getProducerConnectionList,
		remoting.UpdateAndCreateSubscriptionGroup:     s.updateAndCreateSubscriptionGroup,
		remoting.GetAllSubscriptionGroupConfig:        s.getAllSubscriptionGroupConfig,
		remoting.DeleteSubscriptionGroup:              s.deleteSubscriptionGroup,
		remoting.QueryTopicConsumeByWho:               s.queryTopicConsumeByWho,
		remoting.GetAllConsumerOffset:                 s.getAllConsumerOffset,
		remoting.GetConsumeStats:                      s.getConsumeStats,
		remoting.GetConsumerRunningInfo:               s.getConsumerRunningInfo,
		remoting.ConsumeMessageDirectly:               s.consumeMessageDirectly,
		remoting.CheckClientConfig:                    s.checkClientConfig,
		remoting.GetSubscriptionGroupConfig:           s.getSubscriptionGroupConfig,
		remoting.UpdateAndCreateSubscriptionGroupList: s.updateAndCreateSubscriptionGroupList,
		remoting.QueryTopicsByConsumer:                s.queryTopicsByConsumer,
		remoting.QuerySubscriptionByConsumer:          s.querySubscriptionByConsumer,
		remoting.UpdateAndGetGroupForbidden:           s.updateAndGetGroupForbidden,
	}
	for code, h := range s.OffsetAdminProcessors() {
		m[code] = h
	}
	return m
}

// heartbeat records the client in each producer and consumer group it names.
// For a consumer group it first finds (or auto-creates) the group config and
// makes sure the group's retry topic exists, so a consumer can always send
// messages back and mqadmin can route %RETRY%<group>.
func (s *Service) heartbeat(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	var hb remoting.HeartbeatData
	if err := remoting.UnmarshalBody(req.Body, &hb); err != nil {
		return remoting.NewResponse(req, remoting.SystemError, "heartbeat: bad body: "+err.Error())
	}
	// Every group is checked before any is registered: a heartbeat either
	// counts in full or not at all.
	for _, cd := range hb.ConsumerDataSet {
		if cd != nil && cd.GroupName != "" {
			if err := message.ValidateGroup(cd.GroupName); err != nil {
				return remoting.ErrorResponse(req, err)
			}
		}
	}
	for _, pd := range hb.ProducerDataSet {
		if pd != nil && pd.GroupName != "" {
			if err := message.ValidateGroup(pd.GroupName); err != nil {
				return remoting.ErrorResponse(req, err)
			}
		}
	}
	c.SetClientID(hb.ClientID)
	ch := ClientChannel{Conn: c, ClientID: hb.ClientID, Language: req.Language, Version: req.Version}
	for _, cd := range hb.ConsumerDataSet {
		if cd == nil || cd.GroupName == "" {
			continue
		}
		if cfg := s.SubGroups.FindOrCreate(cd.GroupName); cfg != nil {
			s.ensureRetryTopic(cd.GroupName, cfg.RetryQueueNums)
		}
		changed, members := s.Consumers.Register(ch, cd)
		s.Filters.Register(cd.GroupName, cd.SubscriptionDataSet)
		if changed {
			s.log.Info().Str("group", cd.GroupName).Object("client", c).Msg("consumer group changed")
			s.notifyConsumerIdsChanged(cd.GroupName, members)
		}
	}
	for _, pd := range hb.ProducerDataSet {
		if pd == nil || pd.GroupName == "" {
			continue
		}
		s.Producers.Register(pd.GroupName, ch)
	}
	// The close observer runs asynchronously and may have swept the tables
	// before this heartbeat registered the connection. The closed flag is set
	// before that sweep is queued, so checking it after registering catches
	// every such late registration.
	if c.Closed() {
		s.ConnClosed(c)
	}
	return successResponse(req, nil)
}

func (s *Service) ensureRetryTopic(group string, queueNums int32) {
	if err := message.ValidateRetryGroup(group); err != nil {
		// A group of 121..255 characters may consume, but its retry topic
		// would not fit a record: send-backs are refused instead.
		s.refusals.Warn(&s.log, "retry_topic_not_created", 0).Str("group", group).Err(err).Msg("retry topic not created")
		return
	}
	if _, created := s.topics.CreateRetryTopic(group, queueNums, topicgroup.PermRead|topicgroup.PermWrite); created {
		s.log.Info().Str("topic", message.RetryTopicPrefix+group).Msg("retry topic created")
	}
}

// unregisterClient removes the connection from the named producer and
// consumer groups (sent by Java clients on shutdown).
func (s *Service) unregisterClient(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.UnregisterClientRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	clientID := hd.ClientID
	if hd.ProducerGroup != nil {
		s.Producers.Unregister(*hd.ProducerGroup, c, clientID)
	}
	if hd.ConsumerGroup != nil {
		group := *hd.ConsumerGroup
		if removed, members := s.Consumers.Unregister(group, c); removed {
			s.notifyConsumerIdsChanged(group, members)
		}
	}
	return successResponse(req, nil)
}

func (s *Service) getConsumerListByGroup(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.ConsumerGroupRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	group := hd.ConsumerGroup
	ids := s.Consumers.ClientIDs(group)
	if len(ids) == 0 {
		return remoting.NewResponse(req, remoting.SystemError, "no consumer for this group, "+group)
	}
	return successResponse(req, remoting.MarshalBody(&remoting.ConsumerListBody{ConsumerIDList: ids}))
}

// updateConsumerOffset commits an offset as sent, unchecked, as the stock
// broker does. Java sends it oneway (the server then drops the reply); Go as
// a normal request.
func (s *Service) updateConsumerOffset(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	hd, err := remoting.DecodeHeader[remoting.UpdateConsumerOffsetRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	group, topic, queueID, offset := hd.ConsumerGroup, hd.Topic, hd.QueueID, hd.CommitOffset
	if err := message.ValidateGroup(group); err != nil {
		return remoting.ErrorResponse(req, err)
	}
	if err := message.ValidateTopic(topic); err != nil {
		return remoting.ErrorResponse(req, err)
	}
	s.Offsets.Commit(group, topic, queueID, offset)
	return successResponse(req, nil)
}

func (s *Service) lockBatchMQ(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var body remoting.LockBatchRequestBody
	if err := remoting.UnmarshalBody(req.Body, &body); err != nil {
		return remoting.NewResponse(req, remoting.SystemError, "lockBatchMQ: bad body: "+err.Error())
	}
	ok := s.Locks.TryLockBatch(body.ConsumerGroup, body.MqSet, body.ClientID)
	return successResponse(req, remoting.MarshalBody(&remoting.LockBatchResponseBody{LockOKMQSet: ok}))
}

func (s *Service) unlockBatchMQ(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var body remoting.LockBatchRequestBody
	if err := remoting.UnmarshalBody(req.Body, &body); err != nil {
		return remoting.NewResponse(req, remoting.SystemError, "unlockBatchMQ: bad body: "+err.Error())
	}
	s.Locks.UnlockBatch(body.ConsumerGroup, body.MqSet, body.ClientID)
	return successResponse(req, nil)
}

// checkClientConfig vets a subscription before a Java client uses it (sent for
// non-tag expressions only; ClientManageProcessor.checkClientConfig): tag
// expressions pass; with enablePropertyFilter off any other type is refused;
// an expression that does not compile gets SUBSCRIPTION_PARSE_FAILED with the
// compiler's message as remark.
func (s *Service) checkClientConfig(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var body struct {
		ClientID         string                     `json:"clientId"`
		Group            string                     `json:"group"`
		SubscriptionData *remoting.SubscriptionData `json:"subscriptionData"`
	}
	if len(req.Body) > 0 {
		if err := remoting.UnmarshalBody(req.Body, &body); err != nil {
			return remoting.NewResponse(req, remoting.SystemError, "checkClientConfig: bad body: "+err.Error())
		}
	}
	sd := body.SubscriptionData
	if sd == nil || IsTagType(sd.ExpressionType) {
		return successResponse(req, nil)
	}
	if !s.propertyFilter() {
		return remoting.NewResponse(req, remoting.SystemError, "The broker does not support consumer to filter message by "+sd.ExpressionType)
	}
	if _, err := s.Filters.Compile(sd.ExpressionType, sd.SubString); err != nil {
		s.refusals.Warn(&s.log, "subscription_parse_failed", remoting.SubscriptionParseFailed).Str("clientId", body.ClientID).Str("group", body.Group).Str("expression", LogExpression(sd.SubString)).Str("error", err.Error()).
			Msg("client filters by an expression that does not compile")
		return remoting.NewResponse(req, remoting.SubscriptionParseFailed, err.Error())
	}
	return successResponse(req, nil)
}
