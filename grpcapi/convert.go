package grpcapi

import (
	"hash/crc32"
	"strconv"
	"strings"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rmqio/rmq/message"
)

// toProtoMessage is a stored message as the proxy hands it to a 5.x client
// (GrpcConverter.buildMessage): system properties out of the property map,
// the rest as user properties, a CRC32 body digest.
func toProtoMessage(m *message.MessageExt, typ v2.MessageType) *v2.Message {
	user := make(map[string]string, len(m.Properties))
	for k, v := range m.Properties {
		if !systemPropertyKeys[k] {
			user[k] = v
		}
	}
	sp := &v2.SystemProperties{
		MessageId:      m.Properties[message.PropUniqKey],
		BodyDigest:     &v2.Digest{Type: v2.DigestType_CRC32, Checksum: strconv.FormatUint(uint64(crc32.ChecksumIEEE(m.Body)), 16)},
		BodyEncoding:   v2.Encoding_IDENTITY,
		MessageType:    typ,
		BornTimestamp:  timestamppb.New(time.UnixMilli(m.BornTimestamp)),
		BornHost:       m.BornHost.Addr().String(),
		StoreTimestamp: timestamppb.New(time.UnixMilli(m.StoreTimestamp)),
		StoreHost:      m.StoreHost.String(),
		QueueId:        m.QueueID,
	}
	if m.SysFlag&message.SysFlagCompressed != 0 {
		sp.BodyEncoding = v2.Encoding_GZIP
	}
	if t, ok := m.Properties[message.PropTags]; ok {
		sp.Tag = &t
	}
	if k := m.Properties[message.PropKeys]; k != "" {
		sp.Keys = strings.Fields(k)
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
