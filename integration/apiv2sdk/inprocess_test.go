//go:build !race

// The SDK races with itself (see integration/grpcsdk's package doc), so
// this file runs without the race detector only.

package apiv2sdk

import (
	"context"
	"sort"
	"testing"
	"time"

	rmqclient "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
	sdkv2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/rmqio/rmq/internal/sdklog"
	"github.com/rmqio/rmq/rmqtest"
)

// TestSDKAgainstInProcessServer is what a Go team with the 5.x SDK writes:
// one test binary links rmqtest (and with it grpcapi/apiv2) and the SDK, and
// a 5.x producer and simple consumer talk to a server in the test's own
// process. Before grpcapi/apiv2 had a proto package of its own, such a
// binary panicked at init.
func TestSDKAgainstInProcessServer(t *testing.T) {
	t.Cleanup(sdklog.RemoveAfter())
	t.Setenv("rocketmq.client.logRoot", t.TempDir()) // the SDK's own log files
	// The stock minimum long polling (5 s) is more than the SDK's request
	// deadline for a short await leaves; the SDK tests lower it as well.
	srv := rmqtest.Start(t, rmqtest.WithGRPC(),
		rmqtest.WithBrokerConfig(map[string]string{"grpcClientConsumerMinLongPollingTimeoutMillis": "100"}))
	const topic, group = "InProcessTopic", "InProcessGroup"
	srv.CreateTopic(topic, 2)

	p, err := rmqclient.NewProducer(&rmqclient.Config{Endpoint: srv.GRPCAddr(), Credentials: &credentials.SessionCredentials{}},
		rmqclient.WithTopics(topic))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("producer Start: %v", err)
	}
	t.Cleanup(func() { _ = p.GracefulStop() })
	want := []string{"a", "b", "c"}
	for _, b := range want {
		m := &rmqclient.Message{Topic: topic, Body: []byte(b)}
		m.SetTag("T")
		if _, err := p.Send(context.Background(), m); err != nil {
			t.Fatalf("Send %q: %v", b, err)
		}
	}

	c, err := rmqclient.NewSimpleConsumer(&rmqclient.Config{Endpoint: srv.GRPCAddr(), ConsumerGroup: group, Credentials: &credentials.SessionCredentials{}},
		rmqclient.WithAwaitDuration(time.Second),
		rmqclient.WithSubscriptionExpressions(map[string]*rmqclient.FilterExpression{topic: rmqclient.SUB_ALL}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("simple consumer Start: %v", err)
	}
	t.Cleanup(func() { _ = c.GracefulStop() })
	var got []string
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		mvs, err := c.Receive(context.Background(), 16, 20*time.Second)
		if e, ok := rmqclient.AsErrRpcStatus(err); err != nil && !(ok && e.Code == int32(sdkv2.Code_MESSAGE_NOT_FOUND)) {
			t.Fatalf("Receive: %v", err)
		}
		for _, mv := range mvs {
			got = append(got, string(mv.GetBody()))
			if err := c.Ack(context.Background(), mv); err != nil {
				t.Fatalf("Ack: %v", err)
			}
		}
	}
	sort.Strings(got)
	if len(got) != len(want) || got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Fatalf("received %q, want %q", got, want)
	}
	if lag := srv.Lag(group, topic); lag != 0 {
		t.Errorf("lag of %s after the acks: %d", group, lag)
	}
}
