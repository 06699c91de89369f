// Stock Go SDK consumer tests: without the race detector, as sdk_test.go.

//go:build !race

package grpcapi

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
	ts := startServerWith(t, nil, func(o *Options) { o.MinLongPollingMillis = 200 })
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
	if st := ts.b.Pop().Stats(); st.InFlight != 0 {
		t.Fatalf("%d messages in flight after every message was acked", st.InFlight)
	}
}
