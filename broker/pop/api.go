package pop

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

// refuse is a refusal with its stock response code and remark.
func refuse(code int32, format string, args ...any) *remoting.Refusal {
	return remoting.Refusef(code, format, args...)
}

// faq is the stock FAQUrl suggestion appended to some remarks.
const faqTopic = "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."

// PopRequest is one pop (PopMessageRequestHeader).
type PopRequest struct {
	Group, Topic string
	QueueID      int32 // -1: every queue of the topic
	MaxMsgs      int
	Invisible    int64 // ms
	InitMode     int   // 0: a queue with no offset starts at its min, 1: at its max
	Order        bool
	// Filter selects by consume-queue tagsCode; nil takes everything.
	Filter func(tagsCode int64) bool
	// MatchProps, when set, also selects by the message's properties (a
	// SQL92 subscription); it sees only messages Filter accepted.
	MatchProps func(props map[string]string) bool
	// RemoteAddr is quoted in remarks.
	RemoteAddr string
}

// Popped is one popped message.
type Popped struct {
	// Record is what the client gets: the stored record, or for a message
	// of the POP retry topic a copy under the original topic with POP_CK set.
	Record []byte
	Handle Handle
	Ext    *message.MessageExt
	// Topic is the topic the message was popped from (the retry topic for
	// a redelivery).
	Topic string
	// OrderCount is, for an orderly pop, how often the message was popped
	// before (the orderCountInfo a client takes as its reconsume times).
	OrderCount int32
}

// PopResult is the answer to a pop (PopMessageResponseHeader and body).
type PopResult struct {
	PopTime, Invisible int64
	ReviveQid          int32
	Messages           []Popped
	RestNum            int64
	StartOffsetInfo    string
	MsgOffsetInfo      string
	OrderCountInfo     string
}

// Body is the POP_MESSAGE response body: the records back to back.
func (r *PopResult) Body() []byte {
	n := 0
	for _, m := range r.Messages {
		n += len(m.Record)
	}
	b := make([]byte, 0, n)
	for _, m := range r.Messages {
		b = append(b, m.Record...)
	}
	return b
}

func (s *Service) brokerIP() string { return s.opts.StoreHost.Addr().String() }

// checkRead validates a read of topic/queueID by group as stock's pop,
// notification and polling-info processors do (queueId -1: every queue).
func (s *Service) checkRead(group, topic string, qid int32, remote string, verb string) (*topicgroup.TopicConfig, error) {
	tc := s.opts.Topics.Get(topic)
	if tc == nil {
		return nil, refuse(remoting.TopicNotExist, "topic[%s] not exist, apply first please! %s", topic, faqTopic)
	}
	if tc.Perm&topicgroup.PermRead == 0 {
		return nil, refuse(remoting.NoPermission, "the topic[%s] %s message is forbidden", topic, verb)
	}
	if qid >= tc.ReadQueueNums || qid < -1 {
		return nil, refuse(remoting.InvalidParameter, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			qid, topic, tc.ReadQueueNums, remote)
	}
	if err := message.ValidateGroup(group); err != nil {
		return nil, refuse(remoting.SubscriptionGroupNotExist, "subscription group [%s] does not exist, %s", group, faqTopic)
	}
	g := s.opts.Groups.FindOrCreate(group)
	if g == nil {
		return nil, refuse(remoting.SubscriptionGroupNotExist, "subscription group [%s] does not exist, %s", group, faqTopic)
	}
	if !g.ConsumeEnable {
		return nil, refuse(remoting.NoPermission, "subscription group no permission, %s", group)
	}
	return tc, nil
}

// Pop takes up to req.MaxMsgs messages of req.Topic (and of the group's POP
// retry topic) for req.Invisible ms. An empty result is not an error.
func (s *Service) Pop(req PopRequest) (*PopResult, error) {
	if req.MaxMsgs > MaxPopMsgs {
		return nil, refuse(remoting.InvalidParameter, "the broker[%s] pop message's num is greater than 32", s.brokerIP())
	}
	if !s.opts.TimerEnabled {
		return nil, refuse(remoting.SystemError, "the broker[%s] pop message is forbidden because timerWheelEnable is false", s.brokerIP())
	}
	tc, err := s.checkRead(req.Group, req.Topic, req.QueueID, req.RemoteAddr, "peeking")
	if err != nil {
		return nil, err
	}
	if err := s.checkInvisible(req.Invisible); err != nil {
		return nil, err
	}
	if req.MaxMsgs <= 0 {
		req.MaxMsgs = 1
	}
	res := &PopResult{PopTime: s.msgClock.Now().UnixMilli(), Invisible: req.Invisible}
	if req.Order {
		res.ReviveQid = OrderReviveQid
	}
	var info popInfo
	s.mu.Lock()
	defer s.mu.Unlock()
	retry := RetryTopic(req.Topic, req.Group)
	needRetry := !req.Order && rand100() < retryProbability
	if needRetry {
		if err := s.popTopic(&req, res, &info, retry, true); err != nil {
			return nil, err
		}
	}
	if req.QueueID < 0 {
		n := tc.ReadQueueNums
		first := randomStart(n)
		for i := int32(0); i < n; i++ {
			if err := s.popQueue(&req, res, &info, req.Topic, false, (first+i)%n); err != nil {
				return nil, err
			}
		}
	} else if err := s.popQueue(&req, res, &info, req.Topic, false, req.QueueID); err != nil {
		return nil, err
	}
	if !needRetry && !req.Order && len(res.Messages) < req.MaxMsgs {
		if err := s.popTopic(&req, res, &info, retry, true); err != nil {
			return nil, err
		}
	}
	res.StartOffsetInfo = strings.Join(info.start, ";")
	res.MsgOffsetInfo = strings.Join(info.msgs, ";")
	res.OrderCountInfo = strings.Join(info.counts, ";")
	return res, nil
}

func (s *Service) checkInvisible(ms int64) error {
	if ms <= 0 || ms > s.opts.MaxInvisible.Milliseconds() {
		return refuse(remoting.InvalidParameter, "invisibleTime %d is illegal, it must be in (0, %d] ms", ms, s.opts.MaxInvisible.Milliseconds())
	}
	return nil
}

// ErrPollingFull: MaxPolling requests are waiting already (POLLING_FULL).
var ErrPollingFull = refuse(remoting.PollingFull, "too many pops waiting")

// PopWait is Pop with long polling, for callers that hold no remoting
// connection (a gRPC ReceiveMessage): with nothing to pop it waits up to
// poll for a message on the topic or its retry topic (or for an orderly
// queue to unblock), then pops again. An empty result after poll is not an
// error; ctx ending returns ctx.Err(), unless a re-run under way at that
// moment popped messages: they are returned (with a nil error) rather than
// left to come back after their invisible time.
func (s *Service) PopWait(ctx context.Context, req PopRequest, poll time.Duration) (*PopResult, error) {
	res, err := s.Pop(req)
	if err != nil || len(res.Messages) > 0 || poll <= 0 {
		return res, err
	}
	type outcome struct {
		res *PopResult
		err error
	}
	ch := make(chan outcome, 1)
	p := s.polls.park([]string{req.Topic, RetryTopic(req.Topic, req.Group)}, pollKey(req.Topic, req.Group, req.QueueID),
		poll, ctx.Done(), func(final bool) bool {
			r, err := s.Pop(req)
			if err == nil && len(r.Messages) == 0 && !final {
				return false
			}
			ch <- outcome{r, err}
			return true
		})
	if p == nil {
		return nil, ErrPollingFull
	}
	select {
	case o := <-ch:
		return o.res, o.err
	case <-ctx.Done():
		<-p.exited
		select {
		case o := <-ch:
			if o.err == nil && len(o.res.Messages) > 0 {
				return o.res, nil
			}
		default:
		}
		return nil, ctx.Err()
	}
}

type popInfo struct{ start, msgs, counts []string }

func (s *Service) popTopic(req *PopRequest, res *PopResult, info *popInfo, topic string, retry bool) error {
	tc := s.opts.Topics.Get(topic)
	if tc == nil {
		return nil
	}
	for q := int32(0); q < tc.ReadQueueNums; q++ {
		if err := s.popQueue(req, res, info, topic, retry, q); err != nil {
			return err
		}
	}
	return nil
}

// popQueue pops from one queue: the checkpoint's trigger and record are
// stored before the cursor moves (doc.go, Pop).
func (s *Service) popQueue(req *PopRequest, res *PopResult, info *popInfo, topic string, retry bool, qid int32) error {
	q := queueKey{topic, req.Group, qid}
	initMode := req.InitMode
	if retry {
		initMode = 0
	}
	qs := s.queueFor(q, initMode, 0)
	need := req.MaxMsgs - len(res.Messages)
	if need <= 0 || (req.Order && qs.live > 0) {
		if !req.Order {
			res.RestNum += max(0, s.opts.Store.MaxOffsetInQueue(topic, qid)-qs.cursor)
		}
		return nil
	}
	var filter func(int64, func() map[string]string) bool
	if (req.Filter != nil || req.MatchProps != nil) && !retry {
		filter = func(tc int64, props func() map[string]string) bool {
			if req.Filter != nil && !req.Filter(tc) {
				return false
			}
			return req.MatchProps == nil || req.MatchProps(props())
		}
	}
	get := s.opts.Store.GetMessage(topic, qid, qs.cursor, need, 1<<30, filter)
	switch get.Status {
	case store.OffsetTooSmall, store.OffsetOverflowBadly, store.OffsetFoundNull:
		s.log.Info().Str("queue", fmt.Sprint(q)).Int64("from", qs.cursor).Int64("to", get.NextBeginOffset).Msg("pop: cursor corrected")
		qs.cursor = get.NextBeginOffset
		s.commit(q, qs)
		get = s.opts.Store.GetMessage(topic, qid, qs.cursor, need, 1<<30, filter)
	}
	if get.Status != store.Found {
		if get.NextBeginOffset > qs.cursor && get.Status != store.OffsetOverflowBadly {
			qs.cursor = get.NextBeginOffset
			s.commit(q, qs)
		}
		res.RestNum += max(0, get.MaxOffset-qs.cursor)
		return nil
	}
	key := ckKey{topic, req.Group, qid, qs.cursor, res.PopTime}
	if s.cks[key] != nil { // same queue, same start, same millisecond: next pop
		return nil
	}
	rec := ckRecord{ckKey: key, Invisible: req.Invisible, Next: get.NextBeginOffset, Order: req.Order}
	exts := make([]*message.MessageExt, 0, len(get.Messages))
	for _, raw := range get.Messages {
		ext, err := message.DecodeRecord(raw)
		if err != nil {
			return refuse(remoting.SystemError, "pop: unreadable record in %s:%d: %v", topic, qid, err)
		}
		exts = append(exts, ext)
		rec.Offsets = append(rec.Offsets, ext.QueueOffset)
		if req.Order {
			rec.Counts = append(rec.Counts, qs.counts[ext.QueueOffset])
		}
	}
	// 1. trigger (timer store), 2. checkpoint record, 3. memory and cursor.
	if err := s.putTrigger(key, res.PopTime+req.Invisible); err != nil {
		return err
	}
	logOff, err := s.putRecord(tagCheckpoint, rec)
	if err != nil {
		return err
	}
	s.addCheckpoint(rec, logOff)
	qs.cursor = get.NextBeginOffset
	s.commit(q, qs)
	res.RestNum += max(0, get.MaxOffset-qs.cursor)

	if s.opts.OnPopped != nil {
		n := 0
		for _, raw := range get.Messages {
			n += len(raw)
		}
		s.opts.OnPopped.CountPop(req.Topic, req.Group, retry, len(exts), n)
	}
	flag := retryFlag(topic)
	offs := make([]string, len(exts))
	for i, ext := range exts {
		h := Handle{CkOffset: key.Start, PopTime: res.PopTime, InvisibleTime: req.Invisible, ReviveQid: res.ReviveQid,
			RetryFlag: flag, BrokerName: s.opts.BrokerName, QueueID: qid, Offset: ext.QueueOffset}
		p := Popped{Record: get.Messages[i], Handle: h, Ext: ext, Topic: topic}
		if retry {
			cp := *ext
			cp.Properties = make(map[string]string, len(ext.Properties)+1)
			for k, v := range ext.Properties {
				cp.Properties[k] = v
			}
			cp.Properties[PropPopCK] = h.String()
			cp.Topic = req.Topic
			p.Record = message.EncodeRecord(nil, &cp)
		}
		if req.Order {
			p.OrderCount = rec.Counts[i]
		}
		res.Messages = append(res.Messages, p)
		offs[i] = strconv.FormatInt(ext.QueueOffset, 10)
		if req.Order {
			info.counts = append(info.counts, fmt.Sprintf("%s qo%d%%%d %d", flag, qid, ext.QueueOffset, rec.Counts[i]))
		}
	}
	info.start = append(info.start, fmt.Sprintf("%s %d %d", flag, qid, key.Start))
	info.msgs = append(info.msgs, fmt.Sprintf("%s %d %s", flag, qid, strings.Join(offs, ",")))
	return nil
}

// Ack marks the message of h consumed. topic is the request topic (the
// original topic or its retry topic; the handle's flag decides). An ack of
// a message no longer in flight (acked, revived, unknown) succeeds and
// stores nothing.
func (s *Service) Ack(group, topic string, h Handle) error {
	k := ckKey{h.RealTopic(topic, group), group, h.QueueID, h.CkOffset, h.PopTime}
	s.mu.Lock()
	defer s.mu.Unlock()
	ck := s.cks[k]
	if ck == nil || !ck.unacked(h.Offset) {
		return nil
	}
	if _, err := s.putRecord(tagAck, ackRecord{k, []int64{h.Offset}}); err != nil {
		return err
	}
	s.ackWrites++
	s.markAcked(ck, h.Offset)
	if ck.rec.Order {
		s.polls.arrived(k.Topic)
	}
	return nil
}

func (ck *checkpoint) unacked(off int64) bool {
	for i, o := range ck.rec.Offsets {
		if o == off {
			return !ck.acked[i]
		}
	}
	return false
}

// ErrNotInFlight: the handle's message was acked, revived or never popped.
var ErrNotInFlight = refuse(remoting.NoMessage, "the message is not in flight: acked, revived or unknown")

// ChangeInvisible makes the message of h invisible for invisibleMs from now
// and returns its new handle: a new checkpoint (trigger first) holds it,
// then the old one is acked (ChangeInvisibleTimeProcessor
// appendCheckPointThenAckOrigin).
func (s *Service) ChangeInvisible(group, topic string, h Handle, invisibleMs int64) (Handle, error) {
	if err := s.checkInvisible(invisibleMs); err != nil {
		return Handle{}, err
	}
	k := ckKey{h.RealTopic(topic, group), group, h.QueueID, h.CkOffset, h.PopTime}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.cks[k]
	if old == nil || !old.unacked(h.Offset) {
		return Handle{}, ErrNotInFlight
	}
	nk := k
	nk.PopTime = s.msgClock.Now().UnixMilli()
	for s.cks[nk] != nil || nk.PopTime <= k.PopTime {
		nk.PopTime++
	}
	rec := ckRecord{ckKey: nk, Invisible: invisibleMs, Offsets: []int64{h.Offset}, Next: old.rec.Next, Order: old.rec.Order}
	if old.rec.Order {
		rec.Counts = []int32{s.queues[k.queue()].counts[h.Offset]}
	}
	if err := s.putTrigger(nk, nk.PopTime+invisibleMs); err != nil {
		return Handle{}, err
	}
	logOff, err := s.putRecord(tagCheckpoint, rec)
	if err != nil {
		return Handle{}, err
	}
	s.addCheckpoint(rec, logOff)
	if _, err := s.putRecord(tagAck, ackRecord{k, []int64{h.Offset}}); err != nil {
		return Handle{}, err
	}
	s.markAcked(old, h.Offset)
	nh := h
	nh.PopTime, nh.InvisibleTime = nk.PopTime, invisibleMs
	return nh, nil
}

// ForwardToDLQ stores the message of h on %DLQ%<group> with its reconsume
// count raised and then acks it (the proxy's forwardMessageToDeadLetterQueue:
// CONSUMER_SEND_MSG_BACK with delay level -1, then ACK_MESSAGE). A message
// no longer in the store is refused with NO_MESSAGE.
func (s *Service) ForwardToDLQ(group, topic string, h Handle) error {
	k := ckKey{h.RealTopic(topic, group), group, h.QueueID, h.CkOffset, h.PopTime}
	s.mu.Lock()
	err := s.reput(k, h.Offset, true)
	s.mu.Unlock()
	var gone *goneError
	if errors.As(err, &gone) {
		return refuse(remoting.NoMessage, "%s", gone.msg)
	}
	if err != nil {
		return err
	}
	return s.Ack(group, topic, h)
}

// Peek reads up to maxMsgs messages of topic/queueID from the group's pop
// cursor without popping them.
func (s *Service) Peek(group, topic string, qid int32, maxMsgs int) ([][]byte, int64, error) {
	s.mu.Lock()
	from := s.cursorOf(queueKey{topic, group, qid})
	s.mu.Unlock()
	get := s.opts.Store.GetMessage(topic, qid, from, max(1, maxMsgs), 1<<30, nil)
	rest := max(0, get.MaxOffset-get.NextBeginOffset)
	if get.Status != store.Found {
		return nil, rest, nil
	}
	return get.Messages, rest, nil
}

// cursorOf is where a pop of q would read, without creating its state.
func (s *Service) cursorOf(q queueKey) int64 {
	if qs := s.queues[q]; qs != nil {
		return qs.cursor
	}
	if off, ok := s.opts.Offsets.Query(q.group, q.topic, q.qid); ok {
		return off
	}
	return s.opts.Store.MinOffsetInQueue(q.topic, q.qid)
}

// HasMessage reports whether group has something to pop on topic (queueId
// -1: any queue) or its retry topic (NOTIFICATION).
func (s *Service) HasMessage(group, topic string, qid int32, readQueues int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	has := func(t string, q int32) bool {
		return s.opts.Store.MaxOffsetInQueue(t, q) > s.cursorOf(queueKey{t, group, q})
	}
	if qid >= 0 {
		if has(topic, qid) {
			return true
		}
	} else {
		for q := int32(0); q < readQueues; q++ {
			if has(topic, q) {
				return true
			}
		}
	}
	if tc := s.opts.Topics.Get(RetryTopic(topic, group)); tc != nil {
		for q := int32(0); q < tc.ReadQueueNums; q++ {
			if has(tc.TopicName, q) {
				return true
			}
		}
	}
	return false
}
