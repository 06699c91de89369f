package grpcapi

import (
	"context"
	"errors"
	"strconv"
	"strings"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/broker/pop"
)

// receipt is a receipt handle as the SDKs pass it back (common/consumer
// ReceiptHandle): the broker's extraInfo (pop.Handle) and the message's
// commitlog offset.
type receipt struct {
	h               pop.Handle
	commitLogOffset int64 // -1 when the handle has none
}

// String is ConsumerProcessor.createHandle: extraInfo, space, commitlog offset.
func (r receipt) String() string {
	return r.h.String() + " " + strconv.FormatInt(r.commitLogOffset, 10)
}

// expired is ReceiptHandle.isExpired: popTime + invisibleTime reached.
func (r receipt) expired(nowMs int64) bool { return r.h.PopTime+r.h.InvisibleTime <= nowMs }

// errExpired is AbstractProcessor.EXPIRED_HANDLE_PROXY_EXCEPTION.
var errExpired = fail(v2.Code_INVALID_RECEIPT_HANDLE, "receipt handle is expired")

// parseReceipt is ReceiptHandle.decode. A handle that does not parse fails
// as the proxy's decode does (an IllegalArgumentException the proxy answers
// with INTERNAL_SERVER_ERROR).
func parseReceipt(s string) (receipt, error) {
	f := strings.Split(s, " ")
	if len(f) < 8 {
		return receipt{}, fail(v2.Code_INTERNAL_SERVER_ERROR, "Parse failed, dataList size "+strconv.Itoa(len(f)))
	}
	h, err := pop.ParseHandle(strings.Join(f[:8], " "))
	if err != nil {
		return receipt{}, fail(v2.Code_INTERNAL_SERVER_ERROR, err.Error())
	}
	r := receipt{h: h, commitLogOffset: -1}
	if len(f) >= 9 {
		if r.commitLogOffset, err = strconv.ParseInt(f[8], 10, 64); err != nil {
			return receipt{}, fail(v2.Code_INTERNAL_SERVER_ERROR, "For input string: \""+f[8]+"\"")
		}
	}
	return r, nil
}

// foreign reports a receipt handle another broker of the cluster issued
// (its extraInfo names that broker). The SDKs send a handle to the endpoint
// of the message's broker; one that reaches this endpoint anyway must not
// act on this broker's messages. Stock's ack of it writes an ack record that
// matches no checkpoint here (the checkpoint key holds the broker name), so
// it is answered OK and changes nothing; rmq's checkpoints are keyed without
// the broker name (one broker), so the handle is stopped here: an ack is
// OK and does nothing, a change of invisible time or a move to the DLQ
// answers as for a message not in flight (the stock processors would act on
// this broker's message at the handle's offset).
func (s *Server) foreign(r receipt) bool {
	return r.h.BrokerName != s.b.Options().BrokerName
}

// currentReceipt is the handle to act on for a client's handle: the renewed
// one when the message is auto-renewed (taken out of the renewal table, as
// removeReceiptHandle does), else the client's own.
func (s *Server) currentReceipt(ctx context.Context, group, msgID, handle string) (receipt, error) {
	if cur, ok := s.renewals.remove(clientID(ctx), group, msgID, handle); ok {
		return cur, nil
	}
	return parseReceipt(handle)
}

// AckMessage acks each entry (AckMessageActivity.ackMessageOneByOne): one
// status per entry, and the entries' common code or MULTIPLE_RESULTS.
func (s *Server) AckMessage(ctx context.Context, req *v2.AckMessageRequest) (*v2.AckMessageResponse, error) {
	tc, err := s.topicConfig(req.GetTopic())
	if err == nil {
		err = checkGroup(req.GetGroup())
	}
	if err != nil {
		return &v2.AckMessageResponse{Status: toStatus(err)}, nil
	}
	group := req.GetGroup().GetName()
	resp := &v2.AckMessageResponse{}
	codes := make(map[v2.Code]bool)
	for _, e := range req.GetEntries() {
		st := toStatus(s.ack(ctx, group, tc.TopicName, e))
		if st.Code == v2.Code_OK {
			st = okStatus()
		}
		codes[st.Code] = true
		resp.Entries = append(resp.Entries, &v2.AckMessageResultEntry{MessageId: e.GetMessageId(), ReceiptHandle: e.GetReceiptHandle(), Status: st})
	}
	resp.Status = commonStatus(codes, "ack message result is empty")
	return resp, nil
}

func (s *Server) ack(ctx context.Context, group, topic string, e *v2.AckMessageEntry) error {
	r, err := s.currentReceipt(ctx, group, e.GetMessageId(), e.GetReceiptHandle())
	if err != nil {
		return err
	}
	if r.expired(s.msgNow().UnixMilli()) {
		return errExpired
	}
	if s.foreign(r) {
		return nil
	}
	if err := s.b.Pop().Ack(group, topic, r.h); err != nil {
		// LocalMessageService: a refused ack is AckStatus.NO_EXIST.
		return fail(v2.Code_INTERNAL_SERVER_ERROR, "ack failed: status is abnormal")
	}
	return nil
}

// commonStatus is AckMessageActivity.setAckResponseStatus.
func commonStatus(codes map[v2.Code]bool, empty string) *v2.Status {
	switch len(codes) {
	case 0:
		return &v2.Status{Code: v2.Code_INTERNAL_SERVER_ERROR, Message: empty}
	case 1:
		for c := range codes {
			return &v2.Status{Code: c, Message: c.String()}
		}
	}
	return &v2.Status{Code: v2.Code_MULTIPLE_RESULTS, Message: v2.Code_MULTIPLE_RESULTS.String()}
}

// ChangeInvisibleDuration makes the message invisible for the requested
// duration from now and answers its new receipt handle
// (ChangeInvisibleDurationActivity).
func (s *Server) ChangeInvisibleDuration(ctx context.Context, req *v2.ChangeInvisibleDurationRequest) (*v2.ChangeInvisibleDurationResponse, error) {
	h, err := s.changeInvisible(ctx, req)
	if err != nil {
		return &v2.ChangeInvisibleDurationResponse{Status: toStatus(err)}, nil
	}
	return &v2.ChangeInvisibleDurationResponse{Status: okStatus(), ReceiptHandle: h}, nil
}

func (s *Server) changeInvisible(ctx context.Context, req *v2.ChangeInvisibleDurationRequest) (string, error) {
	tc, err := s.topicConfig(req.GetTopic())
	if err != nil {
		return "", err
	}
	if err := checkGroup(req.GetGroup()); err != nil {
		return "", err
	}
	ms := req.GetInvisibleDuration().AsDuration().Milliseconds()
	if err := s.checkInvisible(ms, 0); err != nil {
		return "", err
	}
	group := req.GetGroup().GetName()
	r, err := s.currentReceipt(ctx, group, req.GetMessageId(), req.GetReceiptHandle())
	if err != nil {
		return "", err
	}
	if r.expired(s.msgNow().UnixMilli()) {
		return "", errExpired
	}
	if s.foreign(r) {
		return "", fail(v2.Code_INTERNAL_SERVER_ERROR, "changeInvisibleDuration failed: status is abnormal")
	}
	nh, err := s.b.Pop().ChangeInvisible(group, tc.TopicName, r.h, ms)
	if err != nil {
		if _, _, refused := broker.Refused(err); refused && !errors.Is(err, pop.ErrNotInFlight) {
			return "", err
		}
		return "", fail(v2.Code_INTERNAL_SERVER_ERROR, "changeInvisibleDuration failed: status is abnormal")
	}
	return receipt{h: nh, commitLogOffset: r.commitLogOffset}.String(), nil
}

// ForwardMessageToDeadLetterQueue moves the message to the group's DLQ and
// acks it (ForwardMessageToDLQActivity, ProducerProcessor
// forwardMessageToDeadLetterQueue).
func (s *Server) ForwardMessageToDeadLetterQueue(ctx context.Context, req *v2.ForwardMessageToDeadLetterQueueRequest) (*v2.ForwardMessageToDeadLetterQueueResponse, error) {
	err := s.forwardToDLQ(ctx, req)
	return &v2.ForwardMessageToDeadLetterQueueResponse{Status: toStatus(err)}, nil
}

func (s *Server) forwardToDLQ(ctx context.Context, req *v2.ForwardMessageToDeadLetterQueueRequest) error {
	tc, err := s.topicConfig(req.GetTopic())
	if err != nil {
		return err
	}
	if err := checkGroup(req.GetGroup()); err != nil {
		return err
	}
	group := req.GetGroup().GetName()
	r, err := s.currentReceipt(ctx, group, req.GetMessageId(), req.GetReceiptHandle())
	if err != nil {
		return err
	}
	if r.commitLogOffset < 0 {
		return fail(v2.Code_INVALID_RECEIPT_HANDLE, "commit log offset is empty")
	}
	if s.foreign(r) {
		return pop.ErrNotInFlight
	}
	return s.b.Pop().ForwardToDLQ(group, tc.TopicName, r.h)
}
