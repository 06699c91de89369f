package grpcapi

import (
	"context"
	"errors"
	"strconv"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/broker/pop"
	"github.com/rmqio/rmq/filter"
	"github.com/rmqio/rmq/message"
)

// nackInvisibleMillis is how soon a popped message the stream could not
// deliver comes back (ReceiveMessageResponseStreamWriter.NACK_INVISIBLE_TIME).
const nackInvisibleMillis = 1000

// longPollingReserveMillis is ProxyConfig longPollingReserveTimeInMillis.
const longPollingReserveMillis = 100

// mdClientVersion is the SDK version every request carries.
const mdClientVersion = "x-mq-client-version"

// received is one popped message on its way to the client.
type received struct {
	p      pop.Popped
	handle receipt
}

// ReceiveMessage pops messages of the request's topic for its group
// (ReceiveMessageActivity over ConsumerProcessor.popMessage) and streams
// them: a status first, then the messages, then the delivery timestamp
// (ReceiveMessageResponseStreamWriter).
func (s *Server) ReceiveMessage(req *v2.ReceiveMessageRequest, stream v2.MessagingService_ReceiveMessageServer) error {
	ctx := stream.Context()
	msgs, st := s.receive(ctx, req)
	if st != nil {
		_ = stream.Send(&v2.ReceiveMessageResponse{Content: &v2.ReceiveMessageResponse_Status{Status: st}})
	} else {
		_ = stream.Send(&v2.ReceiveMessageResponse{Content: &v2.ReceiveMessageResponse_Status{Status: okStatus()}})
		for i, m := range msgs {
			err := stream.Send(&v2.ReceiveMessageResponse{Content: &v2.ReceiveMessageResponse_Message{
				Message: s.receivedMessage(req.GetMessageQueue().GetTopic(), m),
			}})
			if err != nil {
				// The client is gone: what it did not get comes back soon
				// (processThrowableWhenWriteMessage).
				for _, rest := range msgs[i:] {
					_, _ = s.b.Pop().ChangeInvisible(req.GetGroup().GetName(), req.GetMessageQueue().GetTopic().GetName(), rest.handle.h, nackInvisibleMillis)
				}
				break
			}
		}
	}
	_ = stream.Send(&v2.ReceiveMessageResponse{Content: &v2.ReceiveMessageResponse_DeliveryTimestamp{DeliveryTimestamp: timestamppb.New(time.Now())}})
	return nil
}

// receive validates the request and pops. A nil status means messages were
// found (at least one).
func (s *Server) receive(ctx context.Context, req *v2.ReceiveMessageRequest) ([]received, *v2.Status) {
	sess := s.clients.get(clientID(ctx))
	poll, err := s.pollingTime(ctx, req, sess)
	if err != nil {
		return nil, toStatus(err)
	}
	tc, err := s.topicConfig(req.GetMessageQueue().GetTopic())
	if err != nil {
		return nil, toStatus(err)
	}
	if err := checkGroup(req.GetGroup()); err != nil {
		return nil, toStatus(err)
	}
	group := req.GetGroup().GetName()
	invisible := req.GetInvisibleDuration().AsDuration().Milliseconds()
	autoRenew := s.opts.AutoRenew && req.GetAutoRenew()
	if autoRenew {
		invisible = s.opts.DefaultInvisibleMillis
	} else if err := s.checkInvisible(invisible, s.opts.MinInvisibleMillisForRecv); err != nil {
		return nil, toStatus(err)
	}
	sub, err := s.subscription(req.GetFilterExpression())
	if err != nil {
		return nil, toStatus(err)
	}
	cfg := s.b.Clients().SubGroups.Find(group)
	fifo := cfg != nil && cfg.ConsumeMessageOrderly
	maxAttempts := int32(defaultRetryMaxTimes + 1)
	if cfg != nil {
		maxAttempts = cfg.RetryMaxTimes + 1
	}
	batch := int(req.GetBatchSize())
	if batch > pop.MaxPopMsgs {
		batch = pop.MaxPopMsgs // ConsumerProcessor: MAX_MSG_NUMS_FOR_POP_REQUEST
	}
	preq := pop.PopRequest{
		Group: group, Topic: tc.TopicName, QueueID: -1, MaxMsgs: batch, Invisible: invisible,
		InitMode: 1, Order: fifo, Filter: sub.filter, MatchProps: sub.matchProps, RemoteAddr: peerAddr(ctx).String(),
	}
	// The client's deadline bounds the wait, and so does the poll time in
	// real time (plus the proxy's longPollingReserveTimeInMillis) when the
	// broker runs on a clock that does not move by itself.
	wctx, cancel := context.WithTimeout(ctx, time.Duration(poll+longPollingReserveMillis)*time.Millisecond)
	defer cancel()
	res, err := s.b.Pop().PopWait(wctx, preq, time.Duration(poll)*time.Millisecond)
	if err != nil {
		if err == wctx.Err() {
			return nil, &v2.Status{Code: v2.Code_MESSAGE_NOT_FOUND, Message: "no new message"}
		}
		if err == pop.ErrPollingFull {
			return nil, &v2.Status{Code: v2.Code_TOO_MANY_REQUESTS, Message: "polling full"}
		}
		return nil, toStatus(err)
	}
	if len(res.Messages) == 0 {
		return nil, &v2.Status{Code: v2.Code_MESSAGE_NOT_FOUND, Message: "no new message"}
	}
	// PopMessageResultFilterImpl: a message of another tag (a retry message
	// is not filtered by the broker) is acked, one past the retry budget
	// goes to the DLQ, the rest is delivered.
	out := make([]received, 0, len(res.Messages))
	for _, p := range res.Messages {
		r := received{p: p, handle: receipt{h: p.Handle, commitLogOffset: p.Ext.PhysicalOffset}}
		switch {
		case !sub.tagMatched(p.Ext.Properties[message.PropTags]):
			_ = s.b.Pop().Ack(group, tc.TopicName, p.Handle)
		case reconsumeTimes(p) >= maxAttempts:
			if err := s.b.Pop().ForwardToDLQ(group, tc.TopicName, p.Handle); err != nil {
				// A full disk fails every such move of every receive: rate-limited.
				s.b.WarnInternal(&s.log, "grpc_dlq_move_failed").Err(err).
					Str("group", group).Str("topic", tc.TopicName).Msg("grpc: message past its retry budget not moved to the DLQ")
			}
		default:
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, &v2.Status{Code: v2.Code_MESSAGE_NOT_FOUND, Message: "no match message"}
	}
	if autoRenew {
		s.renewals.add(clientID(ctx), group, tc.TopicName, out, s.now())
	}
	return out, nil
}

// pollingTime is how long the request may wait (ReceiveMessageActivity):
// its long_polling_timeout, or half the request timeout short of the
// deadline, clamped to [MinLongPollingMillis, MaxLongPollingMillis] and to
// the time the deadline leaves.
func (s *Server) pollingTime(ctx context.Context, req *v2.ReceiveMessageRequest, sess *session) (int64, error) {
	remaining := int64(1<<62 - 1)
	if dl, ok := ctx.Deadline(); ok {
		remaining = time.Until(dl).Milliseconds()
	}
	var poll int64
	if d := req.GetLongPollingTimeout(); d != nil {
		poll = d.AsDuration().Milliseconds()
	} else {
		poll = remaining - sess.requestTimeout().Milliseconds()/2
	}
	poll = min(max(poll, s.opts.MinLongPollingMillis), s.opts.MaxLongPollingMillis)
	if poll > remaining {
		if remaining < s.opts.MinLongPollingMillis {
			// Clients from 5.0.3 on get ILLEGAL_POLLING_TIME for a deadline
			// too short to poll (ReceiveMessageActivity).
			code := v2.Code_ILLEGAL_POLLING_TIME
			if v := clientVersion(ctx); v == "" || v < "5.0.3" {
				code = v2.Code_BAD_REQUEST
			}
			return 0, fail(code, "The deadline time remaining is not enough for polling, please check network condition")
		}
		poll = remaining
	}
	return poll, nil
}

func clientVersion(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(mdClientVersion); len(v) > 0 {
		return v[0]
	}
	return ""
}

// requestTimeout is the client's request timeout from its Settings (the
// SDKs' default, 3 s, without them).
func (sess *session) requestTimeout() time.Duration {
	if sess != nil {
		if d := sess.settings.Load().GetRequestTimeout(); d != nil {
			return d.AsDuration()
		}
	}
	return 3 * time.Second
}

// checkInvisible is GrpcValidator.validateInvisibleTime.
func (s *Server) checkInvisible(ms, minMs int64) error {
	if ms < minMs {
		return fail(v2.Code_ILLEGAL_INVISIBLE_TIME, "the invisibleTime is too small. min is "+strconv.FormatInt(minMs, 10))
	}
	if ms > s.opts.MaxInvisibleMillis {
		return fail(v2.Code_ILLEGAL_INVISIBLE_TIME, "the invisibleTime is too large. max is "+strconv.FormatInt(s.opts.MaxInvisibleMillis, 10))
	}
	return nil
}

// subscriptionFilter is a receive's filter expression: TAG on the consume
// queue's tagsCode (and on the tag itself, for retry messages and hash
// collisions), SQL92 on the properties through the broker's compiled
// filters.
type subscriptionFilter struct {
	tags       map[string]bool // nil: every tag
	filter     func(int64) bool
	matchProps func(map[string]string) bool
}

// subscription builds the filter of a FilterExpression. As the proxy's
// ReceiveMessageActivity, what FilterAPI.build refuses (an empty SQL92
// expression) is ILLEGAL_FILTER_EXPRESSION with its message; so is an
// expression over filter's length or depth limits, refused here as the
// proxy's own check would, before the broker. A SQL92 expression that does
// not compile is the broker's SUBSCRIPTION_PARSE_FAILED, which the proxy
// passes on as INTERNAL_SERVER_ERROR. As the stock PopMessageProcessor, a
// pop filters by SQL92 whatever enablePropertyFilter says.
func (s *Server) subscription(fe *v2.FilterExpression) (subscriptionFilter, error) {
	if fe.GetType() == v2.FilterType_SQL {
		if fe.GetExpression() == "" {
			return subscriptionFilter{}, fail(v2.Code_ILLEGAL_FILTER_EXPRESSION, "Expression can't be null! SQL92")
		}
		expr, err := s.b.Clients().Filters.Compile("SQL92", fe.GetExpression())
		if errors.Is(err, filter.ErrLimit) {
			return subscriptionFilter{}, fail(v2.Code_ILLEGAL_FILTER_EXPRESSION, err.Error())
		}
		if err != nil {
			return subscriptionFilter{}, fail(v2.Code_INTERNAL_SERVER_ERROR, "parse the consumer's subscription failed")
		}
		return subscriptionFilter{matchProps: func(p map[string]string) bool { return expr.Match(propsMap(p)) }}, nil
	}
	tags := pop.SplitTags(fe.GetExpression())
	if tags == nil {
		return subscriptionFilter{}, nil
	}
	set := make(map[string]bool, len(tags))
	for _, t := range tags {
		set[t] = true
	}
	return subscriptionFilter{tags: set, filter: pop.TagFilter(fe.GetExpression())}, nil
}

// tagMatched is FilterUtils.isTagMatched.
func (f subscriptionFilter) tagMatched(tag string) bool {
	return f.tags == nil || f.tags[tag]
}

// propsMap reads a message's properties for a SQL92 filter.
type propsMap map[string]string

func (m propsMap) Get(key string) (string, bool) { v, ok := m[key]; return v, ok }

// reconsumeTimes is the popped message's reconsume count as the proxy reads
// a pop response (MQClientAPIImpl.processPopResponse): for an orderly pop
// the orderCountInfo, else the stored count.
func reconsumeTimes(p pop.Popped) int32 {
	if p.Handle.ReviveQid == pop.OrderReviveQid {
		return p.OrderCount
	}
	return p.Ext.ReconsumeTimes
}

// receivedMessage is a popped message as the client gets it: under the
// topic it asked for (a redelivery is popped from the retry topic) with its
// receipt handle.
func (s *Server) receivedMessage(topic *v2.Resource, r received) *v2.Message {
	m := toProtoMessage(r.p.Ext)
	attempt := reconsumeTimes(r.p) + 1
	m.SystemProperties.DeliveryAttempt = &attempt
	m.Topic = &v2.Resource{ResourceNamespace: topic.GetResourceNamespace(), Name: topic.GetName()}
	h := r.handle.String()
	m.SystemProperties.ReceiptHandle = &h
	return m
}

// defaultRetryMaxTimes is a subscription group's default retryMaxTimes.
const defaultRetryMaxTimes = 16

// now is the broker's clock.
func (s *Server) now() time.Time { return s.b.Options().Clock.Now() }

// msgNow is the broker's message clock, which pop times (a receipt's
// popTime + invisibleTime) are read from: it runs ahead of now on a broker
// with clockControlEnable.
func (s *Server) msgNow() time.Time { return s.b.Options().MessageClock.Now() }
