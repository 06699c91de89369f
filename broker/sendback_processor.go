package broker

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/rmqio/rmq/broker/brokerstats"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

// dlqTopics creates a group's DLQ topic as a send-back would, for the delay
// and timer services moving aside a retry message the store refuses
// (schedule.DLQTopics, timer.DLQTopics).
type dlqTopics struct{ topics *TopicConfigManager }

func (d dlqTopics) EnsureDLQ(topic string) bool {
	tc, _ := d.topics.CreateSystemTopic(topic, dlqQueueNums, dlqPerm)
	return tc != nil
}

// processConsumerSendMsgBack serves CONSUMER_SEND_MSG_BACK: a consumer that
// failed a message hands back its commitlog offset, and the stored original
// goes to %RETRY%<group> with delay level 3+reconsumeTimes (or the requested
// level), or to %DLQ%<group> once the group's retry budget is spent or the
// client asks for it with a negative level
// (SendMessageProcessor.asyncConsumerSendMsgBack).
func (b *Broker) processConsumerSendMsgBack(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := remoting.DecodeHeader[remoting.ConsumerSendMsgBackRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	offset, group, delayLevel := h.Offset, h.Group, int(h.DelayLevel)
	hasMax, headerMax := h.HasMaxReconsumeTimes, h.MaxReconsumeTimes
	resp := remoting.NewResponse(req, remoting.Success, "")
	fail := func(code int32, remark string) *remoting.Command {
		resp.Code, resp.Remark = code, remark
		return resp
	}

	// The group becomes %RETRY%<group> (and %DLQ%<group>): a name that cannot
	// be stored would poison the delay level it is parked on.
	if err := message.ValidateRetryGroup(group); err != nil {
		return remoting.ErrorResponse(req, err)
	}
	cfg := b.clients.SubGroups.FindOrCreate(group)
	if cfg == nil {
		return fail(remoting.SubscriptionGroupNotExist, fmt.Sprintf("subscription group not exist, %s %s", group, faqSuggestion))
	}
	if b.runtime().BrokerPermission&topicgroup.PermWrite == 0 {
		return fail(remoting.NoPermission, fmt.Sprintf("the broker[%s] sending message is forbidden", b.opts.BrokerIP1))
	}
	if cfg.RetryQueueNums <= 0 {
		return resp // stock: nothing is stored and the consumer is told it worked
	}

	retryTopic := message.RetryTopicPrefix + group
	tc, _ := b.topics.CreateRetryTopic(group, cfg.RetryQueueNums, permReadWrite)
	if tc == nil {
		return fail(remoting.SystemError, fmt.Sprintf("topic[%s] not exist", retryTopic))
	}
	if tc.Perm&topicgroup.PermWrite == 0 {
		return fail(remoting.NoPermission, fmt.Sprintf("the topic[%s] sending message is forbidden", retryTopic))
	}

	raw, err := b.store.LookMessageByOffset(offset)
	if err != nil {
		return fail(remoting.SystemError, fmt.Sprintf("look message by offset failed, %d", offset))
	}
	orig, err := message.DecodeRecord(raw)
	if err != nil {
		return fail(remoting.SystemError, fmt.Sprintf("look message by offset failed, %d: %v", offset, err))
	}

	props := make(map[string]string, len(orig.Properties)+4)
	for k, v := range orig.Properties {
		props[k] = v
	}
	if props[message.PropRetryTopic] == "" {
		props[message.PropRetryTopic] = orig.Topic
	}
	if props[message.PropOriginMessageID] == "" {
		props[message.PropOriginMessageID] = orig.MsgID
	}
	delete(props, message.PropWait)

	maxTimes := cfg.RetryMaxTimes
	if req.Version >= versionV3_4_9 && hasMax {
		maxTimes = headerMax
	}
	topic := retryTopic
	queueID := rand.Int32N(tc.WriteQueueNums)
	if orig.ReconsumeTimes >= maxTimes || delayLevel < 0 {
		topic = message.DLQTopicPrefix + group
		queueID = rand.Int32N(dlqQueueNums)
		if dlq, _ := b.topics.CreateSystemTopic(topic, dlqQueueNums, dlqPerm); dlq == nil {
			return fail(remoting.SystemError, fmt.Sprintf("topic[%s] not exist", topic))
		}
		delete(props, message.PropDelay)
	} else {
		if delayLevel == 0 {
			delayLevel = 3 + int(orig.ReconsumeTimes)
		}
		props[message.PropDelay] = strconv.Itoa(delayLevel)
	}

	m := &message.Message{
		Topic: topic, QueueID: queueID, Flag: orig.Flag, Body: orig.Body, Properties: props,
		SysFlag: orig.SysFlag, BornTimestamp: orig.BornTimestamp, BornHost: orig.BornHost,
		ReconsumeTimes: orig.ReconsumeTimes + 1,
		// 4.9.8 marks the message WAIT=false (setWaitStoreMsgOK(false)
		// before copying its properties): the put waits neither for a
		// SYNC_FLUSH fsync nor for a SYNC_MASTER's slave, and the answer
		// is SUCCESS once it is in the commitlog.
		SkipFlushWait: true,
	}
	if _, err := b.putMessage(m); err != nil {
		if pe := remoting.AsRefusal(err); pe != nil {
			return fail(pe.Code, pe.Remark)
		}
		// Stock answers SYSTEM_ERROR with the PutMessageStatus name
		// (SERVICE_NOT_AVAILABLE on a slave or a full disk); the cause
		// follows it.
		return fail(remoting.SystemError, store.PutStatusName(nil, err)+" ("+err.Error()+")")
	}
	b.bstats.RecordSendBack(props[message.PropRetryTopic], group)
	if d := b.bstats.Detail(); d != nil && strings.HasPrefix(topic, message.DLQTopicPrefix) {
		d.SendToDLQ.Item(brokerstats.Key{Topic: props[message.PropRetryTopic], Group: group}).Add(1)
	}
	return resp
}
