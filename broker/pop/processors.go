package pop

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// maxPollTime caps a parked pop below the clients' socket timeouts.
const maxPollTime = 20 * time.Second

// timeoutTooMuch is PopMessageRequestHeader.isTimeoutTooMuch's slack.
const timeoutTooMuch = 500

// Processors maps the POP request codes to their handlers. readable
// reports whether the broker's permission allows reads.
func (s *Service) Processors(readable func() bool) map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command {
	guard := func(verb string, h func(*remoting.Conn, *remoting.Command) *remoting.Command) func(*remoting.Conn, *remoting.Command) *remoting.Command {
		return func(c *remoting.Conn, req *remoting.Command) *remoting.Command {
			if !readable() {
				return remoting.NewResponse(req, remoting.NoPermission, fmt.Sprintf("the broker[%s] %s message is forbidden", s.brokerIP(), verb))
			}
			return h(c, req)
		}
	}
	return map[int32]func(*remoting.Conn, *remoting.Command) *remoting.Command{
		remoting.PopMessage:                 guard("pop", s.processPop),
		remoting.AckMessage:                 s.processAck,
		remoting.BatchAckMessage:            s.processBatchAck,
		remoting.PeekMessage:                guard("peeking", s.processPeek),
		remoting.ChangeMessageInvisibleTime: s.processChangeInvisible,
		remoting.Notification:               guard("peeking", s.processNotification),
		remoting.PollingInfo:                guard("peeking", s.processPollingInfo),
		remoting.QueryAssignment:            s.processQueryAssignment,
		remoting.SetMessageRequestMode:      s.processSetMessageRequestMode,
		remoting.GetAllMessageRequestMode:   s.processGetAllMessageRequestMode,
	}
}

func pollKey(topic, group string, qid int32) string {
	return topic + "@" + group + "@" + strconv.Itoa(int(qid))
}

// SplitTags is the tag set of a TAG expression "a || b" (FilterAPI.build):
// nil for "" or "*", which take everything.
func SplitTags(exp string) []string {
	if strings.TrimSpace(exp) == "" || strings.TrimSpace(exp) == "*" {
		return nil
	}
	var tags []string
	for _, tag := range strings.Split(exp, "||") {
		if tag = strings.TrimSpace(tag); tag != "" {
			tags = append(tags, tag)
		}
	}
	return tags
}

// TagFilter builds a TAG filter on the consume queue's tagsCode from
// "a || b" (nil for "" or "*": everything).
func TagFilter(exp string) func(int64) bool {
	tags := SplitTags(exp)
	if tags == nil {
		return nil
	}
	codes := make(map[int32]struct{}, len(tags))
	for _, tag := range tags {
		codes[int32(message.TagsHash(tag))] = struct{}{}
	}
	return func(tc int64) bool { _, ok := codes[int32(tc)]; return ok }
}

// processPop serves POP_MESSAGE (PopMessageProcessor).
func (s *Service) processPop(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	rh, err := remoting.DecodeHeader[remoting.PopMessageRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	pr := PopRequest{
		Group: rh.ConsumerGroup, Topic: rh.Topic, QueueID: rh.QueueID,
		MaxMsgs: int(rh.MaxMsgNums), Invisible: rh.InvisibleTime,
		InitMode: int(rh.InitMode), Order: rh.Order, RemoteAddr: c.RemoteAddr(),
	}
	pollTime, bornTime := rh.PollTime, rh.BornTime
	expType, exp := rh.ExpType, rh.Exp
	if s.clock.Now().UnixMilli()-bornTime-pollTime > timeoutTooMuch {
		return remoting.NewResponse(req, remoting.PollingTimeout, fmt.Sprintf("the broker[%s] pop message is timeout too much", s.brokerIP()))
	}
	if expType != "" && expType != "TAG" {
		return remoting.NewResponse(req, remoting.SystemError, "The broker does not support consumer to filter message by "+expType)
	}
	pr.Filter = TagFilter(exp)
	resp, parked := s.pop(c, req, pr, time.Duration(pollTime)*time.Millisecond, false)
	if parked {
		return nil
	}
	return resp
}

// pop runs one pop and, when it found nothing and may wait, parks it.
func (s *Service) pop(c *remoting.Conn, req *remoting.Command, pr PopRequest, poll time.Duration, final bool) (*remoting.Command, bool) {
	res, err := s.Pop(pr)
	if err != nil {
		return remoting.RefusalResponse(req, err), false
	}
	if len(res.Messages) == 0 && !final && poll > 0 {
		topics := []string{pr.Topic, RetryTopic(pr.Topic, pr.Group)}
		parked := nil != s.polls.park(topics, pollKey(pr.Topic, pr.Group, pr.QueueID), min(poll, maxPollTime), nil, func(final bool) bool {
			if c.Closed() {
				return true
			}
			resp, _ := s.pop(c, req, pr, 0, final)
			if resp == nil || (!final && resp.Code == remoting.PollingTimeout) {
				return false
			}
			if err := c.WriteResponse(resp); err != nil {
				s.log.Debug().Err(err).Str("remote", c.RemoteAddr()).Msg("pop: parked answer not delivered")
			}
			return true
		})
		if parked {
			return nil, true
		}
		resp := popResponse(req, res)
		resp.Code, resp.Remark = remoting.PollingFull, "NO_MESSAGE_IN_QUEUE"
		return resp, false
	}
	return popResponse(req, res), false
}

func popResponse(req *remoting.Command, res *PopResult) *remoting.Command {
	resp := remoting.NewResponse(req, remoting.Success, "FOUND")
	if len(res.Messages) == 0 {
		resp.Code, resp.Remark = remoting.PollingTimeout, "NO_MESSAGE_IN_QUEUE"
	} else {
		resp.Body = res.Body()
	}
	rh := remoting.PopMessageResponseHeader{
		PopTime: res.PopTime, InvisibleTime: res.Invisible, ReviveQid: res.ReviveQid, RestNum: res.RestNum,
		StartOffsetInfo: &res.StartOffsetInfo, MsgOffsetInfo: &res.MsgOffsetInfo,
	}
	if res.OrderCountInfo != "" {
		rh.OrderCountInfo = &res.OrderCountInfo
	}
	rh.Encode(resp)
	return resp
}

// ackTarget validates the topic, queue and offset of an ack or change of
// invisible time (AckMessageProcessor, ChangeInvisibleTimeProcessor).
func (s *Service) ackTarget(c *remoting.Conn, topic string, qid int32, offset int64, maxExclusive bool) error {
	tc := s.opts.Topics.Get(topic)
	if tc == nil {
		return refuse(remoting.TopicNotExist, "topic[%s] not exist, apply first please! %s", topic, faqTopic)
	}
	if qid < 0 || qid >= tc.ReadQueueNums {
		return refuse(remoting.MessageIllegal, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			qid, topic, tc.ReadQueueNums, c.RemoteAddr())
	}
	minOff, maxOff := s.opts.Store.MinOffsetInQueue(topic, qid), s.opts.Store.MaxOffsetInQueue(topic, qid)
	if offset < minOff || offset > maxOff || (maxExclusive && offset == maxOff) {
		return refuse(remoting.NoMessage, "offset is illegal, key:%s@%d, commit:%d, store:%d~%d", topic, qid, offset, minOff, maxOff)
	}
	return nil
}

// processAck serves ACK_MESSAGE.
func (s *Service) processAck(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	rh, err := remoting.DecodeHeader[remoting.AckMessageRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	group, topic, qid, extra, offset := rh.ConsumerGroup, rh.Topic, rh.QueueID, rh.ExtraInfo, rh.Offset
	if err := s.ackTarget(c, topic, qid, offset, false); err != nil {
		return remoting.RefusalResponse(req, err)
	}
	hd, err := ParseHandle(extra)
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	hd.Offset, hd.QueueID = offset, qid
	if retryFlag(topic) != flagNormal {
		hd.RetryFlag = retryFlag(topic)
	}
	if err := s.Ack(group, topic, hd); err != nil {
		return remoting.RefusalResponse(req, err)
	}
	return remoting.NewResponse(req, remoting.Success, "")
}

// batchAck is one BatchAck (fastjson names, with their alternates).
type batchAck struct {
	C             string `json:"c"`
	ConsumerGroup string `json:"consumerGroup"`
	T             string `json:"t"`
	Topic         string `json:"topic"`
	R             string `json:"r"`
	Retry         string `json:"retry"`
	SO            *int64 `json:"so"`
	StartOffset   *int64 `json:"startOffset"`
	Q             *int32 `json:"q"`
	QueueID       *int32 `json:"queueId"`
	PT            *int64 `json:"pt"`
	PopTime       *int64 `json:"popTime"`
	IT            *int64 `json:"it"`
	InvisibleTime *int64 `json:"invisibleTime"`
	// B is BitSet.toByteArray() in base64 (BitSetSerializerDeserializer):
	// bit i set = offset startOffset+i acked.
	B      []byte `json:"b"`
	BitSet []byte `json:"bitSet"`
}

func pick[T any](a, b *T) T {
	if a != nil {
		return *a
	}
	if b != nil {
		return *b
	}
	var zero T
	return zero
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// bits lists the set bits of a java.util.BitSet byte array (little-endian).
func bits(b []byte) []int64 {
	var out []int64
	for i, x := range b {
		for j := 0; j < 8; j++ {
			if x&(1<<j) != 0 {
				out = append(out, int64(i*8+j))
			}
		}
	}
	return out
}

// processBatchAck serves BATCH_ACK_MESSAGE (BatchAckMessageRequestBody).
func (s *Service) processBatchAck(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	var body struct {
		BrokerName string     `json:"brokerName"`
		Acks       []batchAck `json:"acks"`
	}
	if err := fastjson.Unmarshal(req.Body, &body); err != nil || len(body.Acks) == 0 {
		return remoting.NewResponse(req, remoting.NoMessage, "")
	}
	for _, a := range body.Acks {
		group, topic := first(a.C, a.ConsumerGroup), first(a.T, a.Topic)
		hd := Handle{CkOffset: pick(a.SO, a.StartOffset), PopTime: pick(a.PT, a.PopTime), InvisibleTime: pick(a.IT, a.InvisibleTime),
			RetryFlag: first(first(a.R, a.Retry), flagNormal), BrokerName: body.BrokerName, QueueID: pick(a.Q, a.QueueID)}
		rt := hd.RealTopic(topic, group)
		b := a.B
		if b == nil {
			b = a.BitSet
		}
		for _, bit := range bits(b) {
			hd.Offset = hd.CkOffset + bit
			if err := s.ackTarget(c, rt, hd.QueueID, hd.Offset, false); err != nil {
				continue
			}
			if err := s.Ack(group, topic, hd); err != nil {
				return remoting.RefusalResponse(req, err)
			}
		}
	}
	return remoting.NewResponse(req, remoting.Success, "")
}

// processChangeInvisible serves CHANGE_MESSAGE_INVISIBLETIME.
func (s *Service) processChangeInvisible(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	rh, err := remoting.DecodeHeader[remoting.ChangeInvisibleTimeRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	group, topic, qid, extra, offset := rh.ConsumerGroup, rh.Topic, rh.QueueID, rh.ExtraInfo, rh.Offset
	invisible := rh.InvisibleTime
	if err := s.ackTarget(c, topic, qid, offset, true); err != nil {
		return remoting.RefusalResponse(req, err)
	}
	hd, err := ParseHandle(extra)
	if err != nil {
		return remoting.NewResponse(req, remoting.SystemError, err.Error())
	}
	hd.Offset, hd.QueueID = offset, qid
	if retryFlag(topic) != flagNormal {
		hd.RetryFlag = retryFlag(topic)
	}
	nh, err := s.ChangeInvisible(group, topic, hd, invisible)
	if err != nil {
		return remoting.RefusalResponse(req, err)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	(&remoting.ChangeInvisibleTimeResponseHeader{PopTime: nh.PopTime, InvisibleTime: nh.InvisibleTime, ReviveQid: nh.ReviveQid}).Encode(resp)
	return resp
}

// processPeek serves PEEK_MESSAGE: messages from the group's pop cursor,
// not popped.
func (s *Service) processPeek(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	rh, err := remoting.DecodeHeader[remoting.PeekMessageRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	group, topic, qid, maxMsgs := rh.ConsumerGroup, rh.Topic, rh.QueueID, int(rh.MaxMsgNums)
	if maxMsgs > MaxPopMsgs {
		return remoting.NewResponse(req, remoting.InvalidParameter, fmt.Sprintf("the broker[%s] peek message's num is greater than 32", s.brokerIP()))
	}
	tc, err := s.checkRead(group, topic, qid, c.RemoteAddr(), "peeking")
	if err != nil {
		return remoting.RefusalResponse(req, err)
	}
	var body []byte
	var rest int64
	queues := []int32{qid}
	if qid < 0 {
		queues = queues[:0]
		for q := int32(0); q < tc.ReadQueueNums; q++ {
			queues = append(queues, q)
		}
	}
	for _, q := range queues {
		need := max(1, maxMsgs) - countRecords(body)
		if need <= 0 {
			break
		}
		msgs, r, err := s.Peek(group, topic, q, need)
		if err != nil {
			return remoting.RefusalResponse(req, err)
		}
		rest += r
		for _, m := range msgs {
			body = append(body, m...)
		}
	}
	resp := remoting.NewResponse(req, remoting.Success, "FOUND")
	if len(body) == 0 {
		resp.Code, resp.Remark = remoting.PullNotFound, "NO_MESSAGE_IN_QUEUE"
	}
	resp.Body = body
	(&remoting.PopMessageResponseHeader{RestNum: rest}).Encode(resp)
	return resp
}

func countRecords(b []byte) int {
	n := 0
	for len(b) >= 4 {
		size := int(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
		if size <= 0 || size > len(b) {
			break
		}
		b = b[size:]
		n++
	}
	return n
}

// processNotification serves NOTIFICATION: hasMsg now, or after a wait of
// up to pollTime for an arrival.
func (s *Service) processNotification(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	rh, err := remoting.DecodeHeader[remoting.NotificationRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	group, topic, qid, pollTime := rh.ConsumerGroup, rh.Topic, rh.QueueID, rh.PollTime
	tc, err := s.checkRead(group, topic, qid, c.RemoteAddr(), "peeking")
	if err != nil {
		return remoting.RefusalResponse(req, err)
	}
	answer := func(has, full bool) *remoting.Command {
		resp := remoting.NewResponse(req, remoting.Success, "")
		(&remoting.NotificationResponseHeader{HasMsg: has, PollingFull: full}).Encode(resp)
		return resp
	}
	if s.HasMessage(group, topic, qid, tc.ReadQueueNums) {
		return answer(true, false)
	}
	if pollTime <= 0 {
		return answer(false, false)
	}
	topics := []string{topic, RetryTopic(topic, group)}
	parked := nil != s.polls.park(topics, pollKey(topic, group, qid), min(time.Duration(pollTime)*time.Millisecond, maxPollTime), nil, func(final bool) bool {
		if c.Closed() {
			return true
		}
		has := s.HasMessage(group, topic, qid, tc.ReadQueueNums)
		if !has && !final {
			return false
		}
		if err := c.WriteResponse(answer(has, false)); err != nil {
			s.log.Debug().Err(err).Msg("pop: notification answer not delivered")
		}
		return true
	})
	if !parked {
		return answer(false, true)
	}
	return nil
}

// processPollingInfo serves POLLING_INFO: the pops parked on the queue.
func (s *Service) processPollingInfo(c *remoting.Conn, req *remoting.Command) *remoting.Command {
	rh, err := remoting.DecodeHeader[remoting.PollingInfoRequestHeader](req)
	if err != nil {
		return remoting.ErrorResponse(req, err)
	}
	group, topic, qid := rh.ConsumerGroup, rh.Topic, rh.QueueID
	if _, err := s.checkRead(group, topic, qid, c.RemoteAddr(), "peeking"); err != nil {
		return remoting.RefusalResponse(req, err)
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	(&remoting.PollingInfoResponseHeader{PollingNum: int32(s.polls.count(pollKey(topic, group, qid)))}).Encode(resp)
	return resp
}
