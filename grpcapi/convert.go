package grpcapi

import (
	"crypto/md5"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/message"
)

// toProtoMessage is a stored message as the proxy hands it to a 5.x client
// (GrpcConverter.buildMessage): system properties out of the property map,
// the rest as user properties, an MD5 body digest (upper-case hex).
func toProtoMessage(m *message.MessageExt) *v2.Message {
	user := make(map[string]string, len(m.Properties))
	for k, v := range m.Properties {
		if !systemPropertyKeys[k] {
			user[k] = v
		}
	}
	sum := md5.Sum(m.Body)
	sp := &v2.SystemProperties{
		MessageId:      m.Properties[message.PropUniqKey],
		BodyDigest:     &v2.Digest{Type: v2.DigestType_MD5, Checksum: strings.ToUpper(hex.EncodeToString(sum[:]))},
		BodyEncoding:   v2.Encoding_IDENTITY,
		MessageType:    messageType(m.Properties),
		BornTimestamp:  timestamppb.New(time.UnixMilli(m.BornTimestamp)),
		BornHost:       m.BornHost.Addr().String(),
		StoreTimestamp: timestamppb.New(time.UnixMilli(m.StoreTimestamp)),
		StoreHost:      m.StoreHost.String(),
		QueueId:        m.QueueID,
	}
	attempt := m.ReconsumeTimes + 1
	sp.DeliveryAttempt = &attempt
	if sp.MessageId == "" {
		sp.MessageId = m.MsgID
	}
	if h := m.Properties[message.PropBornHost]; h != "" {
		sp.BornHost = h
	}
	if m.SysFlag&message.SysFlagCompressed != 0 {
		sp.BodyEncoding = v2.Encoding_GZIP
	}
	if t, ok := m.Properties[message.PropTags]; ok {
		sp.Tag = &t
	}
	if k, ok := m.Properties[message.PropKeys]; ok {
		sp.Keys = strings.Split(k, " ")
	}
	if g, ok := m.Properties[message.PropShardingKey]; ok {
		sp.MessageGroup = &g
	}
	if tc, ok := m.Properties[message.PropTraceContext]; ok {
		sp.TraceContext = &tc
	}
	if v, err := strconv.ParseInt(m.Properties[message.PropTimerDeliverMs], 10, 64); err == nil {
		sp.DeliveryTimestamp = timestamppb.New(time.UnixMilli(v))
	}
	off := m.QueueOffset
	sp.QueueOffset = &off
	return &v2.Message{Topic: &v2.Resource{Name: m.Topic}, UserProperties: user, SystemProperties: sp, Body: m.Body}
}

// messageType is the type the proxy reports for a stored message
// (GrpcConverter.buildSystemProperties).
func messageType(p map[string]string) v2.MessageType {
	_, delay := p[message.PropDelay]
	_, deliverMs := p[message.PropTimerDeliverMs]
	_, delaySec := p[message.PropTimerDelaySec]
	_, group := p[message.PropShardingKey]
	switch {
	case p[message.PropTranMsg] == "true":
		return v2.MessageType_TRANSACTION
	case delay || deliverMs || delaySec:
		return v2.MessageType_DELAY
	case group:
		return v2.MessageType_FIFO
	}
	return v2.MessageType_NORMAL
}
