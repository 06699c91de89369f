package admin

import (
	"fmt"
	"net/netip"

	"github.com/rmqio/rmq/message"
)

// Message is a stored message as pull, query and view bodies carry it
// (MessageExt), in the form the commands print and write as JSON.
type Message struct {
	Topic                     string            `json:"topic"`
	Flag                      int32             `json:"flag"`
	Properties                map[string]string `json:"properties"`
	Body                      []byte            `json:"body"`
	StoreSize                 int32             `json:"storeSize"`
	QueueID                   int32             `json:"queueId"`
	QueueOffset               int64             `json:"queueOffset"`
	CommitLogOffset           int64             `json:"commitLogOffset"`
	SysFlag                   int32             `json:"sysFlag"`
	BodyCRC                   int32             `json:"bodyCRC"`
	BornTimestamp             int64             `json:"bornTimestamp"`
	BornHost                  netip.AddrPort    `json:"bornHost"`
	StoreTimestamp            int64             `json:"storeTimestamp"`
	StoreHost                 netip.AddrPort    `json:"storeHost"`
	ReconsumeTimes            int32             `json:"reconsumeTimes"`
	PreparedTransactionOffset int64             `json:"preparedTransactionOffset"`
	// MsgID is the client id (UNIQ_KEY) when the producer set one, otherwise
	// the offset id, as MessageClientExt.getMsgId returns.
	MsgID string `json:"msgId"`
	// OffsetMsgID is the server id: store host and commitlog offset.
	OffsetMsgID string `json:"offsetMsgId"`
}

// Tags returns the TAGS property.
func (m *Message) Tags() string { return m.Properties[message.PropTags] }

// Keys returns the KEYS property (space-separated keys).
func (m *Message) Keys() string { return m.Properties[message.PropKeys] }

// DecodeMessages decodes the concatenated records of a pull, query or view
// body (message.DecodeRecord). Compressed bodies are inflated when they use
// zlib; other compression types are left as stored. On a malformed record it
// returns the messages before it and an ErrBadBody error.
func DecodeMessages(b []byte) ([]*Message, error) {
	var out []*Message
	for len(b) > 0 {
		ext, err := message.DecodeRecord(b)
		if err != nil {
			return out, fmt.Errorf("%w: record %d: %v", ErrBadBody, len(out), err)
		}
		out = append(out, fromRecord(ext))
		b = b[ext.StoreSize:]
	}
	return out, nil
}

// fromRecord converts a decoded record, copying the body out of the reply
// and inflating it if it is zlib-compressed.
func fromRecord(ext *message.MessageExt) *Message {
	body, inflated := message.InflateBody(ext.SysFlag, ext.Body)
	if !inflated {
		body = append([]byte(nil), ext.Body...)
	}
	m := &Message{
		Topic:                     ext.Topic,
		Flag:                      ext.Flag,
		Properties:                ext.Properties,
		Body:                      body,
		StoreSize:                 ext.StoreSize,
		QueueID:                   ext.QueueID,
		QueueOffset:               ext.QueueOffset,
		CommitLogOffset:           ext.PhysicalOffset,
		SysFlag:                   ext.SysFlag,
		BodyCRC:                   ext.BodyCRC,
		BornTimestamp:             ext.BornTimestamp,
		BornHost:                  ext.BornHost,
		StoreTimestamp:            ext.StoreTimestamp,
		StoreHost:                 ext.StoreHost,
		ReconsumeTimes:            ext.ReconsumeTimes,
		PreparedTransactionOffset: ext.PreparedTransactionOffset,
		OffsetMsgID:               ext.MsgID,
		MsgID:                     ext.MsgID,
	}
	if u := m.Properties[message.PropUniqKey]; u != "" {
		m.MsgID = u
	}
	return m
}
