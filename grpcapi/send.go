package grpcapi

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unicode"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/topicgroup"
)

// Limits of a message's parts (ProxyConfig, same names and defaults).
const (
	maxMessageGroupLength        = 64       // maxMessageGroupSize
	maxUserPropertySize          = 16 << 10 // the user properties, tag and keys in bytes
	userPropertyMaxNum           = 128
	maxTransactionRecoverySecond = 3600
)

// systemPropertyKeys are property names a user property may not take
// (MessageConst.STRING_HASH_SET, the ones rmq knows).
var systemPropertyKeys = map[string]bool{
	message.PropKeys: true, message.PropTags: true, message.PropWait: true, message.PropDelay: true,
	message.PropUniqKey: true, message.PropRealTopic: true, message.PropRealQueueID: true,
	message.PropRetryTopic: true, message.PropOriginMessageID: true, message.PropReconsumeTime: true,
	message.PropMaxReconsumeTimes: true, message.PropCluster: true, message.PropMsgRegion: true,
	message.PropTraceOn: true, message.PropMinOffset: true, message.PropMaxOffset: true,
	message.PropTranMsg: true, message.PropProducerGroup: true, message.PropTranPreparedQueueOffset: true,
	message.PropTransactionCheckTimes: true, message.PropCheckImmunityTimeInSeconds: true,
	message.PropTimerDeliverMs: true, message.PropTimerDelaySec: true, message.PropTimerDelayMs: true,
	message.PropTimerOutMs: true, message.PropTimerEnqueueMs: true, message.PropTimerDequeueMs: true,
	message.PropTimerRollTimes: true, message.PropTimerDelUniqKey: true, message.PropCorrelationID: true,
	message.PropReplyToClient: true, message.PropPushReplyTime: true, message.PropMsgType: true,
	message.PropShardingKey: true, message.PropBornHost: true, message.PropTraceContext: true,
}

// sendItem is one validated message of a SendMessage request.
type sendItem struct {
	put broker.PutRequest
	msg *v2.Message
}

// SendMessage stores the request's messages on their topic (all on one
// topic, as the proxy requires) and answers one entry per message.
func (s *Server) SendMessage(ctx context.Context, req *v2.SendMessageRequest) (*v2.SendMessageResponse, error) {
	entries, err := s.send(ctx, req)
	if err != nil {
		return &v2.SendMessageResponse{Status: toStatus(err)}, nil
	}
	// One status for the request: the entries' common code, or
	// MULTIPLE_RESULTS (SendMessageActivity.convertToSendMessageResponse).
	st := entries[0].Status
	for _, e := range entries[1:] {
		if e.Status.Code != st.Code {
			st = &v2.Status{Code: v2.Code_MULTIPLE_RESULTS, Message: v2.Code_MULTIPLE_RESULTS.String()}
			break
		}
	}
	return &v2.SendMessageResponse{Status: &v2.Status{Code: st.Code, Message: st.Code.String()}, Entries: entries}, nil
}

func (s *Server) send(ctx context.Context, req *v2.SendMessageRequest) ([]*v2.SendResultEntry, error) {
	msgs := req.GetMessages()
	if len(msgs) == 0 {
		return nil, fail(v2.Code_MESSAGE_CORRUPTED, "no message to send")
	}
	topic := msgs[0].GetTopic()
	tc, err := s.topicConfig(topic)
	if err != nil {
		return nil, err
	}
	if tc.Perm&topicgroup.PermWrite == 0 || tc.WriteQueueNums <= 0 {
		return nil, fail(v2.Code_FORBIDDEN, "the topic["+tc.TopicName+"] sending message is forbidden")
	}
	// The queue: a FIFO message's group hashed over the write queues, else
	// one at random (SendMessageQueueSelector); a batch goes to one queue.
	queueID := rand.Int32N(tc.WriteQueueNums)
	if len(msgs) == 1 {
		if g := msgs[0].GetSystemProperties().GetMessageGroup(); g != "" {
			queueID = int32(MessageGroupQueue(g, int(tc.WriteQueueNums)))
		}
	}
	from := peerAddr(ctx)
	now := time.Now()
	items := make([]sendItem, len(msgs))
	for i, m := range msgs {
		if m.GetTopic().GetName() != topic.GetName() {
			return nil, fail(v2.Code_MESSAGE_CORRUPTED, "topic in message is not same")
		}
		props, sysFlag, err := s.messageProperties(m, tc.TopicName, now)
		if err != nil {
			return nil, err
		}
		born := now.UnixMilli()
		if ts := m.GetSystemProperties().GetBornTimestamp(); ts != nil {
			born = ts.AsTime().UnixMilli()
		}
		items[i] = sendItem{msg: m, put: broker.PutRequest{
			Topic: tc.TopicName, QueueID: queueID, Body: m.GetBody(), Properties: props, SysFlag: sysFlag,
			BornTimestamp: born, BornHost: from, From: from.String(), CheckMessageType: s.opts.EnableTopicMessageTypeCheck,
		}}
	}
	entries := make([]*v2.SendResultEntry, len(items))
	for i, it := range items {
		reply, err := s.b.Put(it.put)
		if err != nil {
			if i == 0 {
				return nil, err
			}
			entries[i] = &v2.SendResultEntry{Status: toStatus(err)}
			continue
		}
		e := &v2.SendResultEntry{
			Status:    okStatus(),
			MessageId: it.msg.GetSystemProperties().GetMessageId(), TransactionId: reply.TransactionID, Offset: reply.QueueOffset,
			RecallHandle: reply.RecallHandle, // a timer message's (SendMessageActivity)
		}
		if status, ok := reply.SendStatus(); !ok {
			// Stored, but not as the producer asked: the proxy answers the
			// client's SendStatus (SendMessageActivity) with its code.
			e = &v2.SendResultEntry{Status: &v2.Status{Code: sendStatusCodes[status], Message: "send message failed, sendStatus=" + status}}
		}
		if reply.TransactionID != "" {
			s.txs.add(tc.TopicName, reply.TransactionID, txData{
				tranStateTableOffset: reply.QueueOffset, commitLogOffset: reply.PhysicalOffset,
				msgID: it.msg.GetSystemProperties().GetMessageId(), at: s.now(),
			})
		}
		entries[i] = e
	}
	return entries, nil
}

// messageProperties validates one message as the proxy does and builds the
// properties and sysFlag it is stored with (SendMessageActivity
// buildMessageProperty and buildSysFlag).
func (s *Server) messageProperties(m *v2.Message, producerGroup string, now time.Time) (map[string]string, int32, error) {
	sp := m.GetSystemProperties()
	if len(m.GetBody()) == 0 { // enableMessageBodyEmptyCheck
		return nil, 0, fail(v2.Code_MESSAGE_BODY_EMPTY, "message body cannot be empty")
	}
	if max := s.b.Options().MaxMessageSize; len(m.GetBody()) > max {
		return nil, 0, fail(v2.Code_MESSAGE_BODY_TOO_LARGE, "message body cannot exceed the max "+strconv.Itoa(max))
	}
	if len(m.GetUserProperties()) > userPropertyMaxNum {
		return nil, 0, fail(v2.Code_MESSAGE_PROPERTIES_TOO_LARGE, "too many user properties, max is "+strconv.Itoa(userPropertyMaxNum))
	}
	props := make(map[string]string, len(m.GetUserProperties())+8)
	userSize := 0
	for k, v := range m.GetUserProperties() {
		if systemPropertyKeys[k] {
			return nil, 0, fail(v2.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "property is used by system: "+k)
		}
		if k == "" || hasControl(k) {
			return nil, 0, fail(v2.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "the key of property cannot contain control character")
		}
		if hasControl(v) {
			return nil, 0, fail(v2.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "the value of property cannot contain control character")
		}
		props[k] = v
		userSize += len(k) + len(v)
	}
	userSize += len(sp.GetTag())
	for _, k := range sp.GetKeys() {
		userSize += len(k)
	}
	if tag := sp.GetTag(); tag != "" {
		switch {
		case strings.TrimSpace(tag) == "":
			return nil, 0, fail(v2.Code_ILLEGAL_MESSAGE_TAG, "tag cannot be the char sequence of whitespace")
		case strings.Contains(tag, "|"):
			return nil, 0, fail(v2.Code_ILLEGAL_MESSAGE_TAG, "tag cannot contain '|'")
		case hasControl(tag):
			return nil, 0, fail(v2.Code_ILLEGAL_MESSAGE_TAG, "tag cannot contain control character")
		}
		props[message.PropTags] = tag
	}
	if keys := sp.GetKeys(); len(keys) > 0 {
		for _, k := range keys {
			if strings.TrimSpace(k) == "" {
				return nil, 0, fail(v2.Code_ILLEGAL_MESSAGE_KEY, "key cannot be the char sequence of whitespace")
			}
			if hasControl(k) {
				return nil, 0, fail(v2.Code_ILLEGAL_MESSAGE_KEY, "key cannot contain control character")
			}
		}
		props[message.PropKeys] = strings.Join(keys, " ")
	}
	if userSize > maxUserPropertySize {
		return nil, 0, fail(v2.Code_MESSAGE_PROPERTIES_TOO_LARGE, "the total size of user property is too large, max is "+strconv.Itoa(maxUserPropertySize))
	}
	id := sp.GetMessageId()
	if strings.TrimSpace(id) == "" {
		return nil, 0, fail(v2.Code_ILLEGAL_MESSAGE_ID, "message id cannot be empty")
	}
	props[message.PropUniqKey] = id
	var sysFlag int32
	if sp.GetBodyEncoding() == v2.Encoding_GZIP {
		sysFlag |= message.SysFlagCompressed
	}
	if sp.GetMessageType() == v2.MessageType_TRANSACTION {
		sysFlag |= message.TransactionPreparedType
		props[message.PropTranMsg] = "true"
		// Only when the client set one: without it the broker waits
		// transactionTimeOut before the first check.
		if d := sp.GetOrphanedTransactionRecoveryDuration(); d != nil {
			sec := int64(d.AsDuration() / time.Second)
			if sec > maxTransactionRecoverySecond {
				return nil, 0, fail(v2.Code_BAD_REQUEST, "the max transaction recovery time of message is too large, max is "+strconv.Itoa(maxTransactionRecoverySecond))
			}
			props[message.PropCheckImmunityTimeInSeconds] = strconv.FormatInt(sec, 10)
		}
	}
	if ts := sp.GetDeliveryTimestamp(); ts != nil {
		at := ts.AsTime().UnixMilli()
		if at-now.UnixMilli() > s.opts.MaxDelayTimeMills {
			return nil, 0, fail(v2.Code_ILLEGAL_DELIVERY_TIME, "the max delay time of message is too large, max is "+strconv.FormatInt(s.opts.MaxDelayTimeMills, 10))
		}
		props[message.PropTimerDeliverMs] = strconv.FormatInt(at, 10)
	}
	props[message.PropReconsumeTime] = strconv.Itoa(int(sp.GetDeliveryAttempt()))
	props[message.PropProducerGroup] = producerGroup
	if g := sp.GetMessageGroup(); g != "" {
		if strings.TrimSpace(g) == "" {
			return nil, 0, fail(v2.Code_ILLEGAL_MESSAGE_GROUP, "message group cannot be the char sequence of whitespace")
		}
		if len(g) >= maxMessageGroupLength {
			return nil, 0, fail(v2.Code_ILLEGAL_MESSAGE_GROUP, "message group exceed the max length "+strconv.Itoa(maxMessageGroupLength))
		}
		if hasControl(g) {
			return nil, 0, fail(v2.Code_ILLEGAL_MESSAGE_GROUP, "message group cannot contain control character")
		}
		props[message.PropShardingKey] = g
	}
	if tc := sp.GetTraceContext(); tc != "" {
		props[message.PropTraceContext] = tc
	}
	return props, sysFlag, nil
}

// hasControl reports a control character (GrpcValidator.containControlCharacter).
func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}
