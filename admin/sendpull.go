package admin

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// Request builders and response parsers for sends and pulls, shared with the
// load generator (package bench).

// Stock client defaults.
const (
	// DefaultTopicQueueNums is the producer's defaultTopicQueueNums.
	DefaultTopicQueueNums = 4
	// ToolsConsumerGroup is the group of the tools' pull consumer.
	ToolsConsumerGroup = message.GroupTools
	// ToolsProducerGroup is the group sendMessage and recallMessage use.
	ToolsProducerGroup = "TOOLS_PRODUCER"
)

// Pull sysFlag bits (PullSysFlag).
const (
	PullFlagCommitOffset = 0x1
	PullFlagSuspend      = 0x2
	PullFlagSubscription = 0x4
)

// SendSpec is one message to send to one queue.
type SendSpec struct {
	ProducerGroup string
	Topic         string
	QueueID       int32
	Body          []byte
	Properties    map[string]string
	BornTimestamp int64 // ms
	Flag          int32
	SysFlag       int32
	// V1Header sends SEND_MESSAGE (10) with the long field names, as the Go
	// client does, instead of SEND_MESSAGE_V2 (310) with letters, as Java does.
	V1Header bool
}

// NewSendRequest builds the send request for s (SendMessageRequestHeaderV2,
// or the V1 header when s.V1Header is set).
func NewSendRequest(s *SendSpec) *remoting.Command {
	group := s.ProducerGroup
	if group == "" {
		group = ToolsProducerGroup
	}
	fields := [...]struct{ short, long, value string }{
		{"a", "producerGroup", group},
		{"b", "topic", s.Topic},
		{"c", "defaultTopic", message.TopicAutoCreateKey},
		{"d", "defaultTopicQueueNums", strconv.Itoa(DefaultTopicQueueNums)},
		{"e", "queueId", strconv.FormatInt(int64(s.QueueID), 10)},
		{"f", "sysFlag", strconv.FormatInt(int64(s.SysFlag), 10)},
		{"g", "bornTimestamp", strconv.FormatInt(s.BornTimestamp, 10)},
		{"h", "flag", strconv.FormatInt(int64(s.Flag), 10)},
		{"i", "properties", message.MarshalProperties(s.Properties)},
		{"j", "reconsumeTimes", "0"},
		{"k", "unitMode", "false"},
		{"m", "batch", "false"},
	}
	ext := make(map[string]string, len(fields))
	code := remoting.SendMessageV2
	for _, f := range fields {
		if s.V1Header {
			ext[f.long] = f.value
		} else {
			ext[f.short] = f.value
		}
	}
	if s.V1Header {
		code = remoting.SendMessage
	}
	return remoting.NewRequest(code, ext, s.Body)
}

// SendStatus maps a send response code to the client's SendStatus; ok is
// false for the codes a client treats as failures (remoting.SendStatus).
func SendStatus(code int32) (status string, ok bool) { return remoting.SendStatus(code) }

// SendResult is the outcome of a stored send.
type SendResult struct {
	Status      string `json:"sendStatus"`
	MsgID       string `json:"msgId"` // UNIQ_KEY
	OffsetMsgID string `json:"offsetMsgId"`
	BrokerName  string `json:"brokerName"`
	QueueID     int32  `json:"queueId"`
	QueueOffset int64  `json:"queueOffset"`
	// RecallHandle is set by 5.x brokers for timer messages.
	RecallHandle  string `json:"recallHandle,omitempty"`
	TransactionID string `json:"transactionId,omitempty"`
}

// ParseSendResponse reads a stored send's response header.
func ParseSendResponse(resp *remoting.Command) (*SendResult, error) {
	status, ok := SendStatus(resp.Code)
	if !ok {
		return nil, fmt.Errorf("%w: send answered code %d", ErrBadBody, resp.Code)
	}
	rh, err := remoting.DecodeHeader[remoting.SendMessageResponseHeader](resp)
	if err != nil {
		return nil, fmt.Errorf("%w: send response: %v", ErrBadBody, err)
	}
	return &SendResult{
		Status:        status,
		OffsetMsgID:   rh.MsgID,
		QueueID:       rh.QueueID,
		QueueOffset:   rh.QueueOffset,
		RecallHandle:  rh.RecallHandle,
		TransactionID: rh.TransactionID,
	}, nil
}

// PullSpec is one pull request.
type PullSpec struct {
	Group        string
	Topic        string
	QueueID      int32
	Offset       int64
	MaxNums      int32
	SysFlag      int32
	Suspend      time.Duration // long-poll hold time when SysFlag has PullFlagSuspend
	Subscription string        // tag expression, "*" for all
	CommitOffset int64
}

// NewPullRequest builds a PULL_MESSAGE request (PullMessageRequestHeader).
func NewPullRequest(p *PullSpec) *remoting.Command {
	sub := p.Subscription
	if sub == "" {
		sub = "*"
	}
	return remoting.NewRequest(remoting.PullMessage, (&remoting.PullMessageRequestHeader{
		ConsumerGroup:        p.Group,
		Topic:                p.Topic,
		QueueID:              p.QueueID,
		QueueOffset:          p.Offset,
		MaxMsgNums:           p.MaxNums,
		SysFlag:              p.SysFlag,
		CommitOffset:         p.CommitOffset,
		SuspendTimeoutMillis: p.Suspend.Milliseconds(),
		Subscription:         sub,
		ExpressionType:       "TAG",
	}).Fields(), nil)
}

// PullStatus is the client's reading of a pull response code.
type PullStatus string

// Pull statuses (PullStatus).
const (
	PullFound         PullStatus = "FOUND"
	PullNoNewMsg      PullStatus = "NO_NEW_MSG"
	PullNoMatchedMsg  PullStatus = "NO_MATCHED_MSG"
	PullOffsetIllegal PullStatus = "OFFSET_ILLEGAL"
)

var pullStatuses = map[int32]PullStatus{
	remoting.Success:              PullFound,
	remoting.PullNotFound:         PullNoNewMsg,
	remoting.PullRetryImmediately: PullNoMatchedMsg,
	remoting.PullOffsetMoved:      PullOffsetIllegal,
}

// PullResult is a decoded pull response.
type PullResult struct {
	Status          PullStatus
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
	Messages        []*Message
}

// ParsePullResponse decodes a pull response whose code is one of the four
// pull outcomes; any other code is a *ResponseError-worthy failure the
// caller reports (ok false).
func ParsePullResponse(resp *remoting.Command) (r *PullResult, ok bool, err error) {
	r, ok, err = ParsePullHeader(resp)
	if !ok || err != nil {
		return r, ok, err
	}
	if r.Status == PullFound {
		if r.Messages, err = DecodeMessages(resp.Body); err != nil {
			return nil, true, err
		}
	}
	return r, true, nil
}

// ParsePullHeader is ParsePullResponse without decoding the messages: the
// result's Messages is nil, and a PullFound response's records are in
// resp.Body, for a caller that only walks them.
func ParsePullHeader(resp *remoting.Command) (r *PullResult, ok bool, err error) {
	status, ok := pullStatuses[resp.Code]
	if !ok {
		return nil, false, nil
	}
	rh, err := remoting.DecodeHeader[remoting.PullMessageResponseHeader](resp)
	if err != nil {
		return nil, true, fmt.Errorf("%w: pull response: %v", ErrBadBody, err)
	}
	return &PullResult{
		Status:          status,
		NextBeginOffset: rh.NextBeginOffset,
		MinOffset:       rh.MinOffset,
		MaxOffset:       rh.MaxOffset,
	}, true, nil
}

// TagMatches reports whether a message with tag passes a tag expression
// ("*", "" or "a || b"), as the client's re-filter after a pull does.
func TagMatches(expr, tag string) bool {
	expr = strings.TrimSpace(expr)
	if expr == "" || expr == "*" {
		return true
	}
	for _, t := range strings.Split(expr, "||") {
		if strings.TrimSpace(t) == tag {
			return true
		}
	}
	return false
}

// QueueAddr is a message queue with the address of the broker serving it.
type QueueAddr struct {
	remoting.MessageQueue
	Addr string
}

// MasterAddr returns the master address of brokerName in a route ("" if none).
func MasterAddr(route *remoting.TopicRouteData, brokerName string) string {
	for _, bd := range route.BrokerDatas {
		if bd.BrokerName == brokerName {
			return bd.BrokerAddrs[0]
		}
	}
	return ""
}

// SelectBrokerAddr is BrokerData.selectBrokerAddr: the master, or else the
// member with the lowest id.
func SelectBrokerAddr(bd *remoting.BrokerData) string {
	if a, ok := bd.BrokerAddrs[0]; ok && a != "" {
		return a
	}
	ids := make([]int64, 0, len(bd.BrokerAddrs))
	for id := range bd.BrokerAddrs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		if a := bd.BrokerAddrs[id]; a != "" {
			return a
		}
	}
	return ""
}

// PublishQueues lists the queues a producer may write, as
// topicRouteData2TopicPublishInfo builds them: brokers sorted by name, only
// writable queue data whose broker has a master, writeQueueNums queues each.
func PublishQueues(topic string, route *remoting.TopicRouteData) []QueueAddr {
	qds := append([]*remoting.QueueData(nil), route.QueueDatas...)
	sort.Slice(qds, func(i, j int) bool { return qds[i].BrokerName < qds[j].BrokerName })
	var out []QueueAddr
	for _, qd := range qds {
		if qd.Perm&topicgroup.PermWrite == 0 {
			continue
		}
		addr := MasterAddr(route, qd.BrokerName)
		if addr == "" {
			continue
		}
		for q := int32(0); q < qd.WriteQueueNums; q++ {
			out = append(out, QueueAddr{remoting.MessageQueue{BrokerName: qd.BrokerName, QueueID: q, Topic: topic}, addr})
		}
	}
	return out
}

// SubscribeQueues lists the readable queues of a route, each with the
// broker address to pull from (the master, else any member).
func SubscribeQueues(topic string, route *remoting.TopicRouteData) []QueueAddr {
	addrs := make(map[string]string, len(route.BrokerDatas))
	for _, bd := range route.BrokerDatas {
		addrs[bd.BrokerName] = SelectBrokerAddr(bd)
	}
	var out []QueueAddr
	for _, qd := range route.QueueDatas {
		if qd.Perm&topicgroup.PermRead == 0 || addrs[qd.BrokerName] == "" {
			continue
		}
		for q := int32(0); q < qd.ReadQueueNums; q++ {
			out = append(out, QueueAddr{remoting.MessageQueue{BrokerName: qd.BrokerName, QueueID: q, Topic: topic}, addrs[qd.BrokerName]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return CompareQueues(out[i].MessageQueue, out[j].MessageQueue) < 0 })
	return out
}

// uniqPrefix is the fixed part of this process's message ids: IPv4 address,
// pid and a random word standing in for Java's class loader hash.
var (
	uniqPrefix  = newUniqPrefix()
	uniqCounter atomic.Uint32
)

func newUniqPrefix() []byte {
	p := make([]byte, 10)
	copy(p, localIPv4())
	binary.BigEndian.PutUint16(p[4:], uint16(os.Getpid()))
	_, _ = rand.Read(p[6:10])
	return p
}

func localIPv4() []byte {
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() {
				if v4 := ipn.IP.To4(); v4 != nil {
					return v4
				}
			}
		}
	}
	return []byte{127, 0, 0, 1}
}

// NewUniqID returns a client message id in MessageClientIDSetter's layout:
// IP, pid, a per-process word, milliseconds since the start of the month
// and a counter, in uppercase hex (32 characters).
func NewUniqID(now time.Time) string {
	y, mo, _ := now.Date()
	start := time.Date(y, mo, 1, 0, 0, 0, 0, now.Location())
	buf := make([]byte, 16)
	copy(buf, uniqPrefix)
	binary.BigEndian.PutUint32(buf[10:], uint32(now.Sub(start).Milliseconds()))
	binary.BigEndian.PutUint16(buf[14:], uint16(uniqCounter.Add(1)))
	return strings.ToUpper(hex.EncodeToString(buf))
}
