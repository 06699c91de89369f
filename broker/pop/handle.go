package pop

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rmqio/rmq/message"
)

// OrderReviveQid is the reviveQid of handles from orderly pops
// (KeyBuilder.POP_ORDER_REVIVE_QUEUE).
const OrderReviveQid = 999

// Retry flags of the extraInfo (ExtraInfoUtil): which topic a popped message
// came from.
const (
	flagNormal  = "0"
	flagRetryV1 = "1" // %RETRY%<group>_<topic>
	flagRetryV2 = "2" // %RETRY%<group>+<topic>
)

// RetryTopic is the POP retry topic of group on topic (KeyBuilder
// buildPopRetryTopicV1, the stock default: enableRetryTopicV2=false).
func RetryTopic(topic, group string) string {
	return message.RetryTopicPrefix + group + "_" + topic
}

// retryTopicV2 is KeyBuilder.buildPopRetryTopicV2.
func retryTopicV2(topic, group string) string {
	return message.RetryTopicPrefix + group + "+" + topic
}

// retryFlag is ExtraInfoUtil.getRetry(topic).
func retryFlag(topic string) string {
	switch {
	case !strings.HasPrefix(topic, message.RetryTopicPrefix):
		return flagNormal
	case strings.Contains(topic, "+"):
		return flagRetryV2
	default:
		return flagRetryV1
	}
}

// Handle is a decoded extraInfo (the POP_CK property a client echoes back
// in ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME): the checkpoint the
// message belongs to and the message's own queue offset.
//
//	ckQueueOffset popTime invisibleTime reviveQid retryFlag brokerName queueId msgQueueOffset
type Handle struct {
	CkOffset      int64 // the checkpoint's start offset in the queue
	PopTime       int64 // ms
	InvisibleTime int64 // ms
	ReviveQid     int32
	RetryFlag     string
	BrokerName    string
	QueueID       int32
	Offset        int64 // the message's queue offset
}

// ErrHandle is returned (wrapped) for an extraInfo that cannot be parsed.
var ErrHandle = errors.New("pop: malformed extraInfo")

// String is ExtraInfoUtil.buildExtraInfo with the message offset.
func (h Handle) String() string {
	return fmt.Sprintf("%d %d %d %d %s %s %d %d", h.CkOffset, h.PopTime, h.InvisibleTime, h.ReviveQid,
		h.RetryFlag, h.BrokerName, h.QueueID, h.Offset)
}

// ParseHandle reads an extraInfo. The 7-field form (no message offset) is
// accepted with Offset -1; the caller then takes the offset from elsewhere
// (the request header's offset).
func ParseHandle(s string) (Handle, error) {
	f := strings.Split(s, " ")
	if len(f) != 7 && len(f) != 8 {
		return Handle{}, fmt.Errorf("%w: %d fields in %q, want 8", ErrHandle, len(f), s)
	}
	var h Handle
	var err error
	num := func(i int) int64 {
		if err != nil {
			return 0
		}
		var n int64
		n, err = strconv.ParseInt(f[i], 10, 64)
		return n
	}
	h.CkOffset, h.PopTime, h.InvisibleTime = num(0), num(1), num(2)
	rq := num(3)
	h.RetryFlag, h.BrokerName = f[4], f[5]
	qid := num(6)
	h.Offset = -1
	if len(f) == 8 {
		h.Offset = num(7)
	}
	if err != nil {
		return Handle{}, fmt.Errorf("%w: %q: %v", ErrHandle, s, err)
	}
	if rq < 0 || rq > 1<<31-1 || qid < 0 || qid > 1<<31-1 {
		return Handle{}, fmt.Errorf("%w: %q: reviveQid or queueId out of range", ErrHandle, s)
	}
	if h.RetryFlag != flagNormal && h.RetryFlag != flagRetryV1 && h.RetryFlag != flagRetryV2 {
		return Handle{}, fmt.Errorf("%w: %q: retry flag %q", ErrHandle, s, h.RetryFlag)
	}
	h.ReviveQid, h.QueueID = int32(rq), int32(qid)
	return h, nil
}

// RealTopic is the topic the handle's message was popped from
// (ExtraInfoUtil.getRealTopic): topic itself or its POP retry topic.
func (h Handle) RealTopic(topic, group string) string {
	switch h.RetryFlag {
	case flagRetryV1:
		if strings.HasPrefix(topic, message.RetryTopicPrefix) {
			return topic
		}
		return RetryTopic(topic, group)
	case flagRetryV2:
		if strings.HasPrefix(topic, message.RetryTopicPrefix) {
			return topic
		}
		return retryTopicV2(topic, group)
	}
	return topic
}

// Properties of popped messages (MessageConst).
const (
	PropPopCK        = "POP_CK"       // PROPERTY_POP_CK: the extraInfo
	PropFirstPopTime = "1ST_POP_TIME" // PROPERTY_FIRST_POP_TIME
)
