package grpcapi

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	v2 "github.com/rmqio/rmq/grpcapi/apiv2"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/broker/pop"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/topicgroup"
)

// consumeServer is a broker on a manual clock with its gRPC endpoint; long
// polls are short so that an empty receive answers soon.
type consumeServer struct {
	*testServer
	clk *clock.Manual
}

func startConsumeServer(t *testing.T, mutate func(*broker.Options), mutateGrpc func(*Options)) *consumeServer {
	t.Helper()
	clk := clock.NewManual(time.Now().Truncate(time.Millisecond))
	ts := startServerWith(t, func(o *broker.Options) {
		o.Clock = clk
		if mutate != nil {
			mutate(o)
		}
	}, func(o *Options) {
		o.MinLongPollingMillis = 100
		o.MaxLongPollingMillis = 300
		if mutateGrpc != nil {
			mutateGrpc(o)
		}
	})
	return &consumeServer{testServer: ts, clk: clk}
}

// received is what one ReceiveMessage stream answered.
type receiveResult struct {
	status    *v2.Status
	msgs      []*v2.Message
	delivered bool // the delivery timestamp came last
	order     string
}

func receiveRaw(t *testing.T, c v2.MessagingServiceClient, ctx context.Context, req *v2.ReceiveMessageRequest) receiveResult {
	t.Helper()
	stream, err := c.ReceiveMessage(ctx, req)
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	var r receiveResult
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return r
		}
		if err != nil {
			t.Fatalf("ReceiveMessage stream: %v", err)
		}
		switch c := resp.GetContent().(type) {
		case *v2.ReceiveMessageResponse_Status:
			r.status, r.order = c.Status, r.order+"s"
		case *v2.ReceiveMessageResponse_Message:
			r.msgs, r.order = append(r.msgs, c.Message), r.order+"m"
		case *v2.ReceiveMessageResponse_DeliveryTimestamp:
			r.delivered, r.order = true, r.order+"d"
		}
	}
}

func recvReq(group, topic string, invisible time.Duration) *v2.ReceiveMessageRequest {
	return &v2.ReceiveMessageRequest{
		Group: &v2.Resource{Name: group}, MessageQueue: &v2.MessageQueue{Topic: &v2.Resource{Name: topic}, Id: 0},
		FilterExpression: &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "*"},
		BatchSize:        32, InvisibleDuration: durationpb.New(invisible),
	}
}

// withLongPolling sets long_polling_timeout (the SDKs from 5.0.3 on send it).
func withLongPolling(req *v2.ReceiveMessageRequest, d time.Duration) *v2.ReceiveMessageRequest {
	req.LongPollingTimeout = durationpb.New(d)
	return req
}

func (cs *consumeServer) sendN(t *testing.T, c v2.MessagingServiceClient, topic string, n int, tag string) {
	t.Helper()
	for i := range n {
		req := sendReq(topic, []byte("b"+strconv.Itoa(i)), "ID-"+topic+"-"+strconv.Itoa(i))
		if tag != "" {
			req.Messages[0].SystemProperties.Tag = &tag
		}
		if resp, err := c.SendMessage(callCtx(t), req); err != nil || resp.Status.Code != v2.Code_OK {
			t.Fatalf("send: %v %v", resp, err)
		}
	}
}

// seed creates topic with queues queues, sends n messages tagged tag (none
// when empty) through a new plaintext client and waits for them on the
// consume queues; it returns the client.
func (cs *consumeServer) seed(t *testing.T, topic string, queues int32, n int, tag string) v2.MessagingServiceClient {
	t.Helper()
	cs.createTopic(topic, queues)
	c := dial(t, cs.testServer, false)
	cs.sendN(t, c, topic, n, tag)
	cs.waitCount(t, topic, queues, int64(n))
	return c
}

func handles(msgs []*v2.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.GetSystemProperties().GetReceiptHandle()
	}
	return out
}

func ackEntries(msgs []*v2.Message) []*v2.AckMessageEntry {
	out := make([]*v2.AckMessageEntry, len(msgs))
	for i, m := range msgs {
		out[i] = &v2.AckMessageEntry{MessageId: m.GetSystemProperties().GetMessageId(), ReceiptHandle: m.GetSystemProperties().GetReceiptHandle()}
	}
	return out
}

// waitRevived waits until n messages were revived in all and are on their
// retry topic's consume queue.
func (cs *consumeServer) waitRevived(t *testing.T, n int64) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, func() bool {
		return cs.b.Pop().Stats().Revived >= n && cs.b.Store().DispatchBehind() == 0
	}, strconv.FormatInt(n, 10)+" revived messages")
}

func TestRawReceiveStreamAndAck(t *testing.T) {
	cs := startConsumeServer(t, nil, nil)
	c := cs.seed(t, "RawRecv", 2, 3, "tagA")

	r := receiveRaw(t, c, callCtx(t), recvReq("RawGroup", "RawRecv", 30*time.Second))
	if r.status.GetCode() != v2.Code_OK || len(r.msgs) != 3 || r.order != "smmmd" {
		t.Fatalf("receive: status %v, %d messages, order %q", r.status, len(r.msgs), r.order)
	}
	for _, m := range r.msgs {
		sp := m.GetSystemProperties()
		h, err := parseReceipt(sp.GetReceiptHandle())
		if err != nil || h.commitLogOffset < 0 || h.h.InvisibleTime != 30000 {
			t.Fatalf("receipt handle %q: %+v %v", sp.GetReceiptHandle(), h, err)
		}
		if m.GetTopic().GetName() != "RawRecv" || sp.GetTag() != "tagA" || sp.GetDeliveryAttempt() != 1 ||
			sp.GetMessageType() != v2.MessageType_NORMAL || sp.GetBodyDigest().GetType() != v2.DigestType_MD5 {
			t.Fatalf("message %v", m)
		}
	}
	// Nothing left: MESSAGE_NOT_FOUND after the long poll, then the
	// delivery timestamp.
	empty := receiveRaw(t, c, callCtx(t), withLongPolling(recvReq("RawGroup", "RawRecv", 30*time.Second), 200*time.Millisecond))
	if empty.status.GetCode() != v2.Code_MESSAGE_NOT_FOUND || empty.order != "sd" {
		t.Fatalf("empty receive: %v %q", empty.status, empty.order)
	}
	ack, err := c.AckMessage(callCtx(t), &v2.AckMessageRequest{Group: &v2.Resource{Name: "RawGroup"}, Topic: &v2.Resource{Name: "RawRecv"}, Entries: ackEntries(r.msgs)})
	if err != nil || ack.Status.Code != v2.Code_OK || len(ack.Entries) != 3 {
		t.Fatalf("ack: %v %v", ack, err)
	}
	if st := cs.b.Pop().Stats(); st.InFlight != 0 {
		t.Fatalf("%d in flight after the acks", st.InFlight)
	}
	// Acked messages do not come back.
	cs.clk.Advance(31 * time.Second)
	again := receiveRaw(t, c, callCtx(t), recvReq("RawGroup", "RawRecv", 30*time.Second))
	if again.status.GetCode() != v2.Code_MESSAGE_NOT_FOUND || cs.b.Pop().Stats().Revived != 0 {
		t.Fatalf("after the acks: %v, revived %d", again.status, cs.b.Pop().Stats().Revived)
	}
}

func TestRawRedeliveryAndExpiredHandle(t *testing.T) {
	cs := startConsumeServer(t, nil, nil)
	c := cs.seed(t, "RawRedeliver", 1, 1, "")

	first := receiveRaw(t, c, callCtx(t), recvReq("RedeliverGroup", "RawRedeliver", 10*time.Second))
	if len(first.msgs) != 1 {
		t.Fatalf("first receive: %v", first.status)
	}
	cs.clk.Advance(10 * time.Second)
	cs.waitRevived(t, 1)
	second := receiveRaw(t, c, callCtx(t), recvReq("RedeliverGroup", "RawRedeliver", 10*time.Second))
	if len(second.msgs) != 1 {
		t.Fatalf("redelivery: %v", second.status)
	}
	m := second.msgs[0]
	if m.GetTopic().GetName() != "RawRedeliver" || m.GetSystemProperties().GetDeliveryAttempt() != 2 ||
		m.GetSystemProperties().GetMessageId() != first.msgs[0].GetSystemProperties().GetMessageId() || string(m.GetBody()) != "b0" {
		t.Fatalf("redelivered message %v", m)
	}
	// The first handle expired: INVALID_RECEIPT_HANDLE for its entry.
	ack, err := c.AckMessage(callCtx(t), &v2.AckMessageRequest{Group: &v2.Resource{Name: "RedeliverGroup"}, Topic: &v2.Resource{Name: "RawRedeliver"},
		Entries: append(ackEntries(first.msgs), ackEntries(second.msgs)...)})
	if err != nil || ack.Status.Code != v2.Code_MULTIPLE_RESULTS || ack.Entries[0].Status.Code != v2.Code_INVALID_RECEIPT_HANDLE ||
		ack.Entries[1].Status.Code != v2.Code_OK {
		t.Fatalf("ack of an expired and a live handle: %v %v", ack, err)
	}
	if st := cs.b.Pop().Stats(); st.InFlight != 0 {
		t.Fatalf("%d in flight after the ack of the redelivery", st.InFlight)
	}
}

func TestRawChangeInvisibleDuration(t *testing.T) {
	cs := startConsumeServer(t, nil, nil)
	c := cs.seed(t, "RawChange", 1, 1, "")
	r := receiveRaw(t, c, callCtx(t), recvReq("ChangeGroup", "RawChange", time.Hour))
	if len(r.msgs) != 1 {
		t.Fatalf("receive: %v", r.status)
	}
	req := &v2.ChangeInvisibleDurationRequest{
		Group: &v2.Resource{Name: "ChangeGroup"}, Topic: &v2.Resource{Name: "RawChange"},
		ReceiptHandle: handles(r.msgs)[0], MessageId: r.msgs[0].GetSystemProperties().GetMessageId(), InvisibleDuration: durationpb.New(2 * time.Second),
	}
	resp, err := c.ChangeInvisibleDuration(callCtx(t), req)
	if err != nil || resp.Status.Code != v2.Code_OK || resp.ReceiptHandle == "" || resp.ReceiptHandle == req.ReceiptHandle {
		t.Fatalf("change: %v %v", resp, err)
	}
	nh, err := parseReceipt(resp.ReceiptHandle)
	if err != nil || nh.h.InvisibleTime != 2000 {
		t.Fatalf("new handle %q: %+v %v", resp.ReceiptHandle, nh, err)
	}
	// The old handle is no longer in flight.
	if again, err := c.ChangeInvisibleDuration(callCtx(t), req); err != nil || again.Status.Code != v2.Code_INTERNAL_SERVER_ERROR {
		t.Fatalf("change through the replaced handle: %v %v", again, err)
	}
	// Out of range: ILLEGAL_INVISIBLE_TIME.
	bad := proto.Clone(req).(*v2.ChangeInvisibleDurationRequest)
	bad.ReceiptHandle, bad.InvisibleDuration = resp.ReceiptHandle, durationpb.New(13*time.Hour)
	if out, err := c.ChangeInvisibleDuration(callCtx(t), bad); err != nil || out.Status.Code != v2.Code_ILLEGAL_INVISIBLE_TIME {
		t.Fatalf("13 h: %v %v", out, err)
	}
	bad.InvisibleDuration = durationpb.New(-time.Second)
	if out, err := c.ChangeInvisibleDuration(callCtx(t), bad); err != nil || out.Status.Code != v2.Code_ILLEGAL_INVISIBLE_TIME {
		t.Fatalf("-1 s: %v %v", out, err)
	}
	// The message comes back after the new 2 s (from a pop time 1 ms on:
	// the manual clock did not move since the receive), not the hour.
	cs.clk.Advance(2*time.Second + time.Millisecond)
	cs.waitRevived(t, 1)
	back := receiveRaw(t, c, callCtx(t), recvReq("ChangeGroup", "RawChange", time.Hour))
	if len(back.msgs) != 1 || back.msgs[0].GetSystemProperties().GetDeliveryAttempt() != 2 {
		t.Fatalf("after the change: %v %v", back.status, back.msgs)
	}
}

func TestRawForwardToDLQAndRetryBudget(t *testing.T) {
	cs := startConsumeServer(t, nil, nil)
	g := topicgroup.NewSubscriptionGroupConfig("DLQGroup")
	g.RetryMaxTimes = 1
	if err := cs.b.Clients().SubGroups.Update(g); err != nil {
		t.Fatal(err)
	}
	c := cs.seed(t, "RawDLQ", 1, 2, "")
	r := receiveRaw(t, c, callCtx(t), recvReq("DLQGroup", "RawDLQ", 10*time.Second))
	if len(r.msgs) != 2 {
		t.Fatalf("receive: %v", r.status)
	}
	// The client forwards the first one.
	fwd, err := c.ForwardMessageToDeadLetterQueue(callCtx(t), &v2.ForwardMessageToDeadLetterQueueRequest{
		Group: &v2.Resource{Name: "DLQGroup"}, Topic: &v2.Resource{Name: "RawDLQ"},
		ReceiptHandle: handles(r.msgs)[0], MessageId: r.msgs[0].GetSystemProperties().GetMessageId(),
	})
	if err != nil || fwd.Status.Code != v2.Code_OK {
		t.Fatalf("forward: %v %v", fwd, err)
	}
	dlq := message.DLQTopic("DLQGroup")
	testutil.WaitFor(t, 10*time.Second, func() bool { return cs.b.Store().MaxOffsetInQueue(dlq, 0) == 1 }, "the forwarded message in the DLQ")
	// The second is not acked: it comes back once (retryMaxTimes 1), then
	// goes to the DLQ.
	cs.clk.Advance(10 * time.Second)
	cs.waitRevived(t, 1)
	again := receiveRaw(t, c, callCtx(t), recvReq("DLQGroup", "RawDLQ", 10*time.Second))
	if len(again.msgs) != 1 || again.msgs[0].GetSystemProperties().GetDeliveryAttempt() != 2 || string(again.msgs[0].GetBody()) != "b1" {
		t.Fatalf("redelivery: %v %v", again.status, again.msgs)
	}
	cs.clk.Advance(10 * time.Second)
	testutil.WaitFor(t, 10*time.Second, func() bool { return cs.b.Store().MaxOffsetInQueue(dlq, 0) == 2 }, "the second message in the DLQ")
	if st := cs.b.Pop().Stats(); st.InFlight != 0 {
		t.Fatalf("%d in flight", st.InFlight)
	}
	// A handle without commitlog offset cannot be forwarded.
	h := handles(again.msgs)[0]
	short := h[:strings.LastIndex(h, " ")]
	fwd, err = c.ForwardMessageToDeadLetterQueue(callCtx(t), &v2.ForwardMessageToDeadLetterQueueRequest{
		Group: &v2.Resource{Name: "DLQGroup"}, Topic: &v2.Resource{Name: "RawDLQ"}, ReceiptHandle: short, MessageId: "x",
	})
	if err != nil || fwd.Status.Code != v2.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("forward without commitlog offset: %v %v", fwd, err)
	}
}

// TestRawFIFOGroup: a group made consumeMessageOrderly over the wire (as
// mqadmin updateSubGroup -o true sends it) is FIFO for its 5.x consumers:
// fifo in their Settings, one batch of a queue in flight at a time.
func TestRawFIFOGroup(t *testing.T) {
	cs := startConsumeServer(t, nil, nil)
	g := topicgroup.NewSubscriptionGroupConfig("FifoGroup")
	g.ConsumeMessageOrderly = true
	adm := admin.New(admin.Options{})
	defer adm.Close()
	if _, err := adm.UpdateSubGroup(callCtx(t), g, cs.b.Addr(), ""); err != nil {
		t.Fatal(err)
	}
	c := cs.seed(t, "RawFifo", 1, 3, "")
	if settings, _ := pushSession(t, c, "fifo-client", "FifoGroup"); !settings.GetSubscription().GetFifo() {
		t.Fatalf("settings answer %v, want fifo", settings)
	}
	req := func() *v2.ReceiveMessageRequest {
		r := recvReq("FifoGroup", "RawFifo", 10*time.Second)
		r.BatchSize = 2
		return r
	}
	first := receiveRaw(t, c, callCtx(t), req())
	if len(first.msgs) != 2 || string(first.msgs[0].GetBody()) != "b0" || string(first.msgs[1].GetBody()) != "b1" {
		t.Fatalf("first batch: %v %v", first.status, first.msgs)
	}
	// The queue's batch is in flight: nothing more from it.
	if busy := receiveRaw(t, c, callCtx(t), req()); busy.status.GetCode() != v2.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("while a batch is in flight: %v %v", busy.status, busy.msgs)
	}
	// Not acked: the same batch again, in order, attempt 2.
	cs.clk.Advance(10 * time.Second)
	testutil.WaitFor(t, 10*time.Second, func() bool { return cs.b.Pop().Stats().Rewound == 1 }, "the orderly queue to rewind")
	again := receiveRaw(t, c, callCtx(t), req())
	if len(again.msgs) != 2 || string(again.msgs[0].GetBody()) != "b0" || again.msgs[0].GetSystemProperties().GetDeliveryAttempt() != 2 {
		t.Fatalf("redelivered batch: %v %v", again.status, again.msgs)
	}
	ack, err := c.AckMessage(callCtx(t), &v2.AckMessageRequest{Group: &v2.Resource{Name: "FifoGroup"}, Topic: &v2.Resource{Name: "RawFifo"}, Entries: ackEntries(again.msgs)})
	if err != nil || ack.Status.Code != v2.Code_OK {
		t.Fatalf("ack: %v %v", ack, err)
	}
	last := receiveRaw(t, c, callCtx(t), req())
	if len(last.msgs) != 1 || string(last.msgs[0].GetBody()) != "b2" {
		t.Fatalf("after the ack: %v %v", last.status, last.msgs)
	}
}

// TestRawFilters: TAG and SQL92 (with enablePropertyFilter off, which, as
// on the stock broker, does not concern pops).
func TestRawFilters(t *testing.T) {
	cs := startConsumeServer(t, nil, nil)
	cs.createTopic("RawFilter", 1)
	c := dial(t, cs.testServer, false)
	for i, tag := range []string{"a", "b", "c"} {
		req := sendReq("RawFilter", []byte(tag), "ID-f"+strconv.Itoa(i))
		req.Messages[0].SystemProperties.Tag = &tag
		req.Messages[0].UserProperties = map[string]string{"n": strconv.Itoa(i)}
		if resp, err := c.SendMessage(callCtx(t), req); err != nil || resp.Status.Code != v2.Code_OK {
			t.Fatalf("send: %v %v", resp, err)
		}
	}
	cs.waitCount(t, "RawFilter", 1, 3)
	tags := recvReq("TagGroup", "RawFilter", 10*time.Second)
	tags.FilterExpression = &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "a || c"}
	r := receiveRaw(t, c, callCtx(t), tags)
	if len(r.msgs) != 2 || string(r.msgs[0].GetBody()) != "a" || string(r.msgs[1].GetBody()) != "c" {
		t.Fatalf("tag filter: %v %v", r.status, r.msgs)
	}
	if r.msgs[0].GetUserProperties()["n"] != "0" {
		t.Fatalf("user properties %v", r.msgs[0].GetUserProperties())
	}
	sql := recvReq("SQLGroup", "RawFilter", 10*time.Second)
	sql.FilterExpression = &v2.FilterExpression{Type: v2.FilterType_SQL, Expression: "n > 0 AND TAGS <> 'c'"}
	r = receiveRaw(t, c, callCtx(t), sql)
	if len(r.msgs) != 1 || string(r.msgs[0].GetBody()) != "b" {
		t.Fatalf("SQL92 filter: %v %v", r.status, r.msgs)
	}
	bad := recvReq("SQLGroup", "RawFilter", 10*time.Second)
	bad.FilterExpression = &v2.FilterExpression{Type: v2.FilterType_SQL, Expression: "n >"}
	if r := receiveRaw(t, c, callCtx(t), bad); r.status.GetCode() != v2.Code_INTERNAL_SERVER_ERROR || r.order != "sd" {
		t.Fatalf("SQL92 that does not compile: %v %q", r.status, r.order)
	}
	// a and c of TagGroup were not acked: they come back on the retry topic,
	// which the broker does not filter. The subscription is now c only: a is
	// acked by the endpoint (PopMessageResultFilterImpl NO_MATCH), c delivered.
	cs.clk.Advance(10 * time.Second)
	cs.waitRevived(t, 3) // and b of SQLGroup
	tags.FilterExpression.Expression = "c"
	r = receiveRaw(t, c, callCtx(t), tags)
	if len(r.msgs) != 1 || string(r.msgs[0].GetBody()) != "c" || r.msgs[0].GetSystemProperties().GetDeliveryAttempt() != 2 {
		t.Fatalf("retry messages under a narrower tag filter: %v %v", r.status, r.msgs)
	}
	if n := cs.b.Pop().Stats().InFlight; n != 1 {
		t.Fatalf("%d in flight, want 1: c (the other tag's retry message acked)", n)
	}
}

func TestRawConsumeBadInput(t *testing.T) {
	cs := startConsumeServer(t, func(o *broker.Options) { o.AutoCreateSubscriptionGroup = false }, nil)
	cs.createTopic("RawBad", 1)
	if err := cs.b.Clients().SubGroups.Update(topicgroup.NewSubscriptionGroupConfig("KnownGroup")); err != nil {
		t.Fatal(err)
	}
	c := dial(t, cs.testServer, false)
	cases := []struct {
		name string
		req  *v2.ReceiveMessageRequest
		want v2.Code
	}{
		{"unknown topic", recvReq("KnownGroup", "NoSuchTopic", 10*time.Second), v2.Code_TOPIC_NOT_FOUND},
		{"system topic", recvReq("KnownGroup", pop.ReviveTopic("DefaultCluster"), 10*time.Second), v2.Code_ILLEGAL_TOPIC},
		{"unknown group", recvReq("NoSuchGroup", "RawBad", 10*time.Second), v2.Code_CONSUMER_GROUP_NOT_FOUND},
		{"illegal group", recvReq("bad group!", "RawBad", 10*time.Second), v2.Code_ILLEGAL_CONSUMER_GROUP},
		{"system group", recvReq("CID_RMQ_SYS_X", "RawBad", 10*time.Second), v2.Code_ILLEGAL_CONSUMER_GROUP},
		{"invisible too short", recvReq("KnownGroup", "RawBad", 9*time.Second), v2.Code_ILLEGAL_INVISIBLE_TIME},
		{"invisible too long", recvReq("KnownGroup", "RawBad", 13*time.Hour), v2.Code_ILLEGAL_INVISIBLE_TIME},
	}
	for _, tc := range cases {
		r := receiveRaw(t, c, callCtx(t), tc.req)
		if r.status.GetCode() != tc.want || r.order != "sd" {
			t.Fatalf("%s: %v %q, want %v", tc.name, r.status, r.order, tc.want)
		}
	}
	// A deadline shorter than the minimum long poll: BAD_REQUEST for a
	// client before 5.0.3, ILLEGAL_POLLING_TIME from it on.
	for v, want := range map[string]v2.Code{"5.0.1": v2.Code_BAD_REQUEST, "5.0.8": v2.Code_ILLEGAL_POLLING_TIME} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		ctx = metadata.AppendToOutgoingContext(ctx, mdClientID, "bad-client", mdClientVersion, v)
		stream, err := c.ReceiveMessage(ctx, recvReq("KnownGroup", "RawBad", 10*time.Second))
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		cancel()
		if err != nil || resp.GetStatus().GetCode() != want {
			t.Fatalf("version %s short deadline: %v %v, want %v", v, resp, err, want)
		}
	}
	// Receipt handles: one that does not parse, one of another message.
	ack, err := c.AckMessage(callCtx(t), &v2.AckMessageRequest{Group: &v2.Resource{Name: "KnownGroup"}, Topic: &v2.Resource{Name: "RawBad"},
		Entries: []*v2.AckMessageEntry{{MessageId: "m", ReceiptHandle: "not a handle"}}})
	if err != nil || ack.Status.Code != v2.Code_INTERNAL_SERVER_ERROR || ack.Entries[0].Status.Code != v2.Code_INTERNAL_SERVER_ERROR {
		t.Fatalf("ack of a malformed handle: %v %v", ack, err)
	}
	future := receipt{h: pop.Handle{PopTime: cs.clk.Now().UnixMilli(), InvisibleTime: 60000, RetryFlag: "0", BrokerName: "broker-a"}, commitLogOffset: 0}
	ack, err = c.AckMessage(callCtx(t), &v2.AckMessageRequest{Group: &v2.Resource{Name: "KnownGroup"}, Topic: &v2.Resource{Name: "RawBad"},
		Entries: []*v2.AckMessageEntry{{MessageId: "m", ReceiptHandle: future.String()}}})
	if err != nil || ack.Status.Code != v2.Code_OK {
		t.Fatalf("ack of a message not in flight (stock: OK, nothing stored): %v %v", ack, err)
	}
	ch, err := c.ChangeInvisibleDuration(callCtx(t), &v2.ChangeInvisibleDurationRequest{Group: &v2.Resource{Name: "KnownGroup"}, Topic: &v2.Resource{Name: "RawBad"},
		ReceiptHandle: "1 2 3", MessageId: "m", InvisibleDuration: durationpb.New(time.Second)})
	if err != nil || ch.Status.Code != v2.Code_INTERNAL_SERVER_ERROR {
		t.Fatalf("change of a malformed handle: %v %v", ch, err)
	}
	ch, err = c.ChangeInvisibleDuration(callCtx(t), &v2.ChangeInvisibleDurationRequest{Group: &v2.Resource{Name: "KnownGroup"}, Topic: &v2.Resource{Name: "NoSuchTopic"},
		ReceiptHandle: future.String(), MessageId: "m", InvisibleDuration: durationpb.New(time.Second)})
	if err != nil || ch.Status.Code != v2.Code_TOPIC_NOT_FOUND {
		t.Fatalf("change on an unknown topic: %v %v", ch, err)
	}
}

// pushSession opens a Telemetry stream as client id and sends push
// consumer Settings for group; it returns the server's Settings answer and
// the cancel that drops the stream.
func pushSession(t *testing.T, c v2.MessagingServiceClient, id, group string) (*v2.Settings, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(context.Background(), mdClientID, id))
	t.Cleanup(cancel)
	tel, err := c.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ct := v2.ClientType_PUSH_CONSUMER
	if err := tel.Send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: &v2.Settings{
		ClientType: &ct, PubSub: &v2.Settings_Subscription{Subscription: &v2.Subscription{Group: &v2.Resource{Name: group}}},
	}}}); err != nil {
		t.Fatal(err)
	}
	got, err := tel.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return got.GetSettings(), cancel
}

// TestRawAutoRenew: a message received with auto_renew is popped for the
// default invisible time and renewed while its client is connected; once
// the client is gone it comes back after InvisibleMillisWhenClear.
func TestRawAutoRenew(t *testing.T) {
	cs := startConsumeServer(t, nil, func(o *Options) { o.RenewPeriodMillis = time.Hour.Milliseconds() })
	c := cs.seed(t, "RawRenew", 1, 1, "")

	_, tcancel := pushSession(t, c, "raw-test-client", "RenewGroup")
	req := recvReq("RenewGroup", "RawRenew", 0)
	req.InvisibleDuration, req.AutoRenew = nil, true
	r := receiveRaw(t, c, callCtx(t), req)
	if len(r.msgs) != 1 {
		t.Fatalf("receive: %v", r.status)
	}
	h, _ := parseReceipt(handles(r.msgs)[0])
	if h.h.InvisibleTime != 60000 {
		t.Fatalf("auto-renewed message popped for %d ms, want the default 60000", h.h.InvisibleTime)
	}
	// 55 s on, within renewAheadTimeMillis of the end: renewed for 1 min
	// (the scan is run here; the loop's period is an hour).
	cs.clk.Advance(55 * time.Second)
	cs.srv.renewDue()
	for _, es := range cs.srv.renewals.snapshot() {
		for _, e := range es {
			if e.renewTimes != 1 || e.cur.h.InvisibleTime != 60000 || e.cur.h.PopTime != cs.clk.Now().UnixMilli() {
				t.Fatalf("after the scan: %d renewals, handle %+v", e.renewTimes, e.cur.h)
			}
		}
	}
	cs.clk.Advance(10 * time.Second) // past the first 60 s: the old trigger finds nothing to revive
	// The ack with the handle the client got acks the renewed one.
	ack, err := c.AckMessage(callCtx(t), &v2.AckMessageRequest{Group: &v2.Resource{Name: "RenewGroup"}, Topic: &v2.Resource{Name: "RawRenew"}, Entries: ackEntries(r.msgs)})
	if err != nil || ack.Status.Code != v2.Code_OK {
		t.Fatalf("ack: %v %v", ack, err)
	}
	testutil.WaitFor(t, 10*time.Second, func() bool { return cs.b.Pop().Stats().InFlight == 0 }, "the renewed message acked")

	// A second message, then the client leaves: it comes back after 1 s.
	cs.sendN(t, c, "RawRenew", 1, "")
	cs.waitCount(t, "RawRenew", 1, 2)
	r = receiveRaw(t, c, callCtx(t), req)
	if len(r.msgs) != 1 {
		t.Fatalf("second receive: %v", r.status)
	}
	tcancel()
	testutil.WaitFor(t, 10*time.Second, func() bool { return cs.srv.clients.get("raw-test-client") == nil }, "the session to end")
	cs.srv.renewDue() // clears the messages of a client gone
	if n := len(cs.srv.renewals.snapshot()); n != 0 {
		t.Fatalf("%d clients with renewals after the clear", n)
	}
	cs.clk.Advance(time.Second + time.Millisecond) // InvisibleMillisWhenClear from a pop time 1 ms on
	cs.waitRevived(t, 1)
}
