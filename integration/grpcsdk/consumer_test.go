// Stock Go SDK consumer tests.

//go:build !race

package grpcsdk

import (
	"context"
	"sort"
	"testing"
	"time"

	rmqclient "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
)

// newSimpleConsumer starts a stock Go 5.x SDK simple consumer of topic
// (TLS on) that waits up to await for messages.
func newSimpleConsumer(t *testing.T, ts *testServer, group, topic string, expr *rmqclient.FilterExpression, await time.Duration) rmqclient.SimpleConsumer {
	t.Helper()
	c, err := rmqclient.NewSimpleConsumer(&rmqclient.Config{Endpoint: ts.endpoint(), ConsumerGroup: group, Credentials: &credentials.SessionCredentials{}},
		rmqclient.WithAwaitDuration(await),
		rmqclient.WithSubscriptionExpressions(map[string]*rmqclient.FilterExpression{topic: expr}))
	if err != nil {
		t.Fatalf("NewSimpleConsumer: %v", err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("simple consumer Start: %v", err)
	}
	t.Cleanup(func() { _ = c.GracefulStop() })
	return c
}

// sendBodies sends one message per body with tag.
func sendBodies(t *testing.T, p rmqclient.Producer, topic, tag string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		m := &rmqclient.Message{Topic: topic, Body: []byte(b)}
		if tag != "" {
			m.SetTag(tag)
		}
		if _, err := p.Send(context.Background(), m); err != nil {
			t.Fatalf("Send %q: %v", b, err)
		}
	}
}

// receiveN receives until n messages arrived (or the deadline), acking
// none of them.
func receiveN(t *testing.T, c rmqclient.SimpleConsumer, n int, invisible time.Duration) []*rmqclient.MessageView {
	t.Helper()
	var got []*rmqclient.MessageView
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		mvs, err := c.Receive(context.Background(), 16, invisible)
		if err != nil && !isNoMessage(err) {
			t.Fatalf("Receive: %v", err)
		}
		got = append(got, mvs...)
	}
	if len(got) != n {
		t.Fatalf("received %d messages, want %d", len(got), n)
	}
	return got
}

func isNoMessage(err error) bool {
	e, ok := rmqclient.AsErrRpcStatus(err)
	return ok && e.Code == int32(v2.Code_MESSAGE_NOT_FOUND)
}

func bodiesOf(mvs []*rmqclient.MessageView) []string {
	out := make([]string, len(mvs))
	for i, mv := range mvs {
		out[i] = string(mv.GetBody())
	}
	sort.Strings(out)
	return out
}

func TestSDKSimpleConsumerReceiveAck(t *testing.T) {
	ts := startServer(t, hostConf{minLongPolling: 200})
	ts.createTopic("RecvTopic", 4)
	p := newProducer(t, ts, "RecvTopic")
	sendBodies(t, p, "RecvTopic", "tagA", "m1", "m2", "m3")
	c := newSimpleConsumer(t, ts, "RecvGroup", "RecvTopic", rmqclient.SUB_ALL, time.Second)
	mvs := receiveN(t, c, 3, 20*time.Second)
	if got := bodiesOf(mvs); got[0] != "m1" || got[1] != "m2" || got[2] != "m3" {
		t.Fatalf("bodies %v", got)
	}
	for _, mv := range mvs {
		if mv.GetTopic() != "RecvTopic" || mv.GetTag() == nil || *mv.GetTag() != "tagA" || mv.GetDeliveryAttempt() != 1 || mv.GetMessageId() == "" {
			t.Fatalf("message view topic %q tag %v attempt %d id %q", mv.GetTopic(), mv.GetTag(), mv.GetDeliveryAttempt(), mv.GetMessageId())
		}
		if err := c.Ack(context.Background(), mv); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
	if n := ts.inFlight(); n != 0 {
		t.Fatalf("%d messages in flight after every message was acked", n)
	}
}

// TestSDKSimpleConsumerRedelivery: a message not acked comes back after its
// invisible time (the broker on a manual clock) with its delivery attempt
// raised; the first handle has expired by then.
func TestSDKSimpleConsumerRedelivery(t *testing.T) {
	cs := startConsumeServer(t)
	cs.createTopic("SDKRedeliver", 2)
	p := newProducer(t, cs, "SDKRedeliver")
	sendBodies(t, p, "SDKRedeliver", "", "again")
	c := newSimpleConsumer(t, cs, "SDKRedeliverGroup", "SDKRedeliver", rmqclient.SUB_ALL, time.Second)
	first := receiveN(t, c, 1, 10*time.Second)[0]
	cs.advance(10 * time.Second)
	cs.waitRevived(t, 1)
	second := receiveN(t, c, 1, 10*time.Second)[0]
	if string(second.GetBody()) != "again" || second.GetDeliveryAttempt() != 2 || second.GetMessageId() != first.GetMessageId() || second.GetTopic() != "SDKRedeliver" {
		t.Fatalf("redelivery %q attempt %d id %q/%q topic %q", second.GetBody(), second.GetDeliveryAttempt(), second.GetMessageId(), first.GetMessageId(), second.GetTopic())
	}
	// The Go SDK does not report an ack's status (the raw tests check
	// INVALID_RECEIPT_HANDLE): the expired handle acks nothing.
	if err := c.Ack(context.Background(), first); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	if n := cs.inFlight(); n != 1 {
		t.Fatalf("%d in flight after the ack of the expired handle, want the redelivery still in flight", n)
	}
	if err := c.Ack(context.Background(), second); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	if n := cs.inFlight(); n != 0 {
		t.Fatalf("%d in flight", n)
	}
}

// TestSDKSimpleConsumerChangeInvisibleDuration: the SDK takes the new
// handle; an ack through it acks the message, and a shortened invisible
// time brings a message back sooner.
func TestSDKSimpleConsumerChangeInvisibleDuration(t *testing.T) {
	cs := startConsumeServer(t)
	cs.createTopic("SDKChange", 1)
	p := newProducer(t, cs, "SDKChange")
	sendBodies(t, p, "SDKChange", "", "x", "y")
	c := newSimpleConsumer(t, cs, "SDKChangeGroup", "SDKChange", rmqclient.SUB_ALL, time.Second)
	mvs := receiveN(t, c, 2, time.Hour)
	sort.Slice(mvs, func(i, j int) bool { return string(mvs[i].GetBody()) < string(mvs[j].GetBody()) })
	old := mvs[0].GetReceiptHandle()
	if err := c.ChangeInvisibleDuration(mvs[0], 30*time.Second); err != nil {
		t.Fatalf("ChangeInvisibleDuration: %v", err)
	}
	if mvs[0].GetReceiptHandle() == old {
		t.Fatal("the SDK kept the old receipt handle")
	}
	if err := c.Ack(context.Background(), mvs[0]); err != nil {
		t.Fatalf("Ack through the new handle: %v", err)
	}
	if err := c.ChangeInvisibleDuration(mvs[1], 5*time.Second); err != nil {
		t.Fatalf("ChangeInvisibleDuration: %v", err)
	}
	cs.advance(5*time.Second + time.Millisecond)
	cs.waitRevived(t, 1)
	back := receiveN(t, c, 1, time.Hour)[0]
	if string(back.GetBody()) != "y" || back.GetDeliveryAttempt() != 2 {
		t.Fatalf("back %q attempt %d", back.GetBody(), back.GetDeliveryAttempt())
	}
	// Out of range for a receive: ILLEGAL_INVISIBLE_TIME.
	_, err := c.Receive(context.Background(), 1, time.Second)
	if e, ok := rmqclient.AsErrRpcStatus(err); !ok || e.Code != int32(v2.Code_ILLEGAL_INVISIBLE_TIME) {
		t.Fatalf("receive with 1 s invisible time: %v", err)
	}
}

// TestSDKSimpleConsumerFIFO: a group with consumeMessageOrderly gets a
// message group's messages in order, one batch of a queue at a time.
func TestSDKSimpleConsumerFIFO(t *testing.T) {
	cs := startConsumeServer(t)
	cs.createTopic("SDKFifo", 4)
	cs.setOrderly("SDKFifoGroup")
	p := newProducer(t, cs, "SDKFifo")
	for i := range 5 {
		m := &rmqclient.Message{Topic: "SDKFifo", Body: []byte{byte('0' + i)}}
		m.SetMessageGroup("order-1")
		if _, err := p.Send(context.Background(), m); err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	cs.waitCount(t, "SDKFifo", 4, 5)
	c := newSimpleConsumer(t, cs, "SDKFifoGroup", "SDKFifo", rmqclient.SUB_ALL, time.Second)
	mvs := receiveN(t, c, 5, 10*time.Second)
	for i, mv := range mvs {
		if string(mv.GetBody()) != string(rune('0'+i)) || mv.GetMessageGroup() == nil || *mv.GetMessageGroup() != "order-1" {
			t.Fatalf("message %d: %q group %v", i, mv.GetBody(), mv.GetMessageGroup())
		}
	}
	for _, mv := range mvs {
		if err := c.Ack(context.Background(), mv); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
}
