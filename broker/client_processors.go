package broker

import (
	"rmq/remoting"
)

// retryTopicPrefix names a group's retry topic: %RETRY%<group>.
const retryTopicPrefix = "%RETRY%"

// clientProcessors serves client membership, offsets, locks and the admin
// requests about groups.
func (b *Broker) clientProcessors() map[int32]HandlerFunc {
	return map[int32]HandlerFunc{
		remoting.HeartBeat:                        b.heartbeat,
		remoting.UnregisterClient:                 b.unregisterClient,
		remoting.GetConsumerListByGroup:           b.getConsumerListByGroup,
		remoting.UpdateConsumerOffset:             b.updateConsumerOffset,
		remoting.LockBatchMQ:                      b.lockBatchMQ,
		remoting.UnlockBatchMQ:                    b.unlockBatchMQ,
		remoting.GetConsumerConnectionList:        b.getConsumerConnectionList,
		remoting.GetProducerConnectionList:        b.getProducerConnectionList,
		remoting.UpdateAndCreateSubscriptionGroup: b.updateAndCreateSubscriptionGroup,
		remoting.GetAllSubscriptionGroupConfig:    b.getAllSubscriptionGroupConfig,
		remoting.DeleteSubscriptionGroup:          b.deleteSubscriptionGroup,
		remoting.QueryTopicConsumeByWho:           b.queryTopicConsumeByWho,
		remoting.GetAllConsumerOffset:             b.getAllConsumerOffset,
		remoting.GetConsumeStats:                  b.getConsumeStats,
		remoting.GetConsumerRunningInfo:           b.getConsumerRunningInfo,
		remoting.ConsumeMessageDirectly:           b.consumeMessageDirectly,
		remoting.CheckClientConfig:                b.checkClientConfig,
		remoting.GetSubscriptionGroupConfig:       b.getSubscriptionGroupConfig,
	}
}

func successResponse(req *remoting.Command, body []byte) *remoting.Command {
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = body
	return resp
}

// heartbeat records the client in each producer and consumer group it names.
// For a consumer group it first finds (or auto-creates) the group config and
// makes sure the group's retry topic exists, so a consumer can always send
// messages back and mqadmin can route %RETRY%<group>.
func (b *Broker) heartbeat(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	var hb remoting.HeartbeatData
	if err := remoting.UnmarshalBody(req.Body, &hb); err != nil {
		return remoting.NewResponse(req, remoting.SystemError, "heartbeat: bad body: "+err.Error())
	}
	ch := ClientChannel{Conn: c, ClientID: hb.ClientID, Language: req.Language, Version: req.Version}
	for _, cd := range hb.ConsumerDataSet {
		if cd == nil || cd.GroupName == "" {
			continue
		}
		if cfg := b.subGroups.FindOrCreate(cd.GroupName); cfg != nil {
			b.ensureRetryTopic(cd.GroupName, cfg.RetryQueueNums)
		}
		changed, members := b.consumers.Register(ch, cd)
		if changed {
			b.log.Info().Str("group", cd.GroupName).Str("clientId", hb.ClientID).Str("addr", c.RemoteAddr()).Msg("consumer group changed")
			b.notifyConsumerIdsChanged(cd.GroupName, members)
		}
	}
	for _, pd := range hb.ProducerDataSet {
		if pd == nil || pd.GroupName == "" {
			continue
		}
		b.producers.Register(pd.GroupName, ch)
	}
	// The close observer runs asynchronously and may have swept the tables
	// before this heartbeat registered the connection. The closed flag is set
	// before that sweep is queued, so checking it after registering catches
	// every such late registration.
	if c.Closed() {
		b.clientConnClosed(c)
	}
	return successResponse(req, nil)
}

func (b *Broker) ensureRetryTopic(group string, queueNums int32) {
	if _, created := b.topics.CreateRetryTopic(group, queueNums, remoting.PermRead|remoting.PermWrite); created {
		b.log.Info().Str("topic", retryTopicPrefix+group).Msg("retry topic created")
		b.registerAsync()
	}
}

// unregisterClient removes the connection from the named producer and
// consumer groups (sent by Java clients on shutdown).
func (b *Broker) unregisterClient(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	h := req.Header()
	clientID := h.Str("clientID", true)
	if err := h.Err(); err != nil {
		return errorResponse(req, err)
	}
	if h.Has("producerGroup") {
		b.producers.Unregister(h.Str("producerGroup", false), c, clientID)
	}
	if h.Has("consumerGroup") {
		group := h.Str("consumerGroup", false)
		if removed, members := b.consumers.Unregister(group, c); removed {
			b.notifyConsumerIdsChanged(group, members)
		}
	}
	return successResponse(req, nil)
}

func (b *Broker) getConsumerListByGroup(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h := req.Header()
	group := h.Str("consumerGroup", true)
	if err := h.Err(); err != nil {
		return errorResponse(req, err)
	}
	ids := b.consumers.ClientIDs(group)
	if len(ids) == 0 {
		return remoting.NewResponse(req, remoting.SystemError, "no consumer for this group, "+group)
	}
	return successResponse(req, remoting.MarshalBody(&remoting.ConsumerListBody{ConsumerIDList: ids}))
}

// updateConsumerOffset commits an offset as sent, unchecked, as the stock
// broker does. Java sends it oneway (the server then drops the reply); Go as
// a normal request.
func (b *Broker) updateConsumerOffset(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h := req.Header()
	group := h.Str("consumerGroup", true)
	topic := h.Str("topic", true)
	queueID := h.Int32("queueId", true, 0)
	offset := h.Int64("commitOffset", true, 0)
	if err := h.Err(); err != nil {
		return errorResponse(req, err)
	}
	b.offsets.Commit(group, topic, queueID, offset)
	return successResponse(req, nil)
}

func (b *Broker) lockBatchMQ(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var body remoting.LockBatchRequestBody
	if err := remoting.UnmarshalBody(req.Body, &body); err != nil {
		return remoting.NewResponse(req, remoting.SystemError, "lockBatchMQ: bad body: "+err.Error())
	}
	ok := b.locks.TryLockBatch(body.ConsumerGroup, body.MqSet, body.ClientID)
	return successResponse(req, remoting.MarshalBody(&remoting.LockBatchResponseBody{LockOKMQSet: ok}))
}

func (b *Broker) unlockBatchMQ(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
	var body remoting.LockBatchRequestBody
	if err := remoting.UnmarshalBody(req.Body, &body); err != nil {
		return remoting.NewResponse(req, remoting.SystemError, "unlockBatchMQ: bad body: "+err.Error())
	}
	b.locks.UnlockBatch(body.ConsumerGroup, body.MqSet, body.ClientID)
	return successResponse(req, nil)
}

// checkClientConfig vets a subscription before a Java client uses it (sent for
// non-tag expressions only). Tag expressions pass; this broker has no
// property (SQL92) filtering, so any other type is refused as a stock broker
// with enablePropertyFilter=false refuses it.
func (b *Broker) checkClientConfig(_ *remoting.Conn, req *remoting.Command) *remoting.Command {
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
	if sd := body.SubscriptionData; sd != nil && sd.ExpressionType != "" && sd.ExpressionType != "TAG" {
		return remoting.NewResponse(req, remoting.SystemError, "The broker does not support consumer to filter message by "+sd.ExpressionType)
	}
	return successResponse(req, nil)
}
