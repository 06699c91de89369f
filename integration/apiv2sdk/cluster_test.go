//go:build !race

package apiv2sdk

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	rmqclient "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/grpcapi"
	"github.com/rmqio/rmq/internal/sdklog"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/topicgroup"
)

// clusterBroker is one broker of the two-broker cluster with its gRPC
// endpoint.
type clusterBroker struct {
	b    *testbroker.Broker
	srv  *grpcapi.Server
	once sync.Once
}

func (cb *clusterBroker) stop() {
	cb.once.Do(func() {
		cb.srv.Stop()
		cb.b.Stop()
	})
}

// startTwoBrokers starts a name server and two brokers of one cluster on
// 127.0.0.1 and 127.0.0.2, whose gRPC endpoints share one port (the stock
// proxy routes another broker at its host and the proxy's own port).
func startTwoBrokers(t *testing.T, topic string, queues int32) (a, b *clusterBroker, ns interface{ Addr() string }, port int) {
	t.Helper()
	nsrv := testbroker.StartNamesrv(t)
	for range 50 {
		port = testutil.FreePort(t)
		if ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.2", strconv.Itoa(port))); err == nil {
			ln.Close()
			break
		}
	}
	start := func(name, ip string) *clusterBroker {
		o := testbroker.Options(t, func(o *broker.Options) {
			o.BrokerName, o.BrokerClusterName = name, "SDKCluster"
			o.ListenHost, o.BrokerIP1, o.BrokerIP2 = ip, ip, ip
			o.NamesrvAddr = nsrv.Addr()
		})
		tb := testbroker.Start(t, o)
		g := grpcapi.DefaultOptions()
		g.Port = port
		g.Logger = o.Logger
		g.MinLongPollingMillis = 100
		srv := grpcapi.New(tb.Broker, g)
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		cb := &clusterBroker{b: tb, srv: srv}
		t.Cleanup(cb.stop)
		tb.Topics().Update(&topicgroup.TopicConfig{TopicName: topic, ReadQueueNums: queues, WriteQueueNums: queues, Perm: topicgroup.PermRead | topicgroup.PermWrite, TopicFilterType: "SINGLE_TAG"})
		return cb
	}
	a, b = start("sdk-a", "127.0.0.1"), start("sdk-b", "127.0.0.2")
	testutil.WaitFor(t, 10*time.Second, func() bool {
		rd := nsrv.Routes().TopicRoute(topic)
		return rd != nil && len(rd.QueueDatas) == 2
	}, "both brokers to register "+topic)
	return a, b, nsrv, port
}

// stored is how many messages the broker holds in topic's queues.
func stored(cb *clusterBroker, topic string, queues int32) int64 {
	var n int64
	for q := range queues {
		n += cb.b.Store().MaxOffsetInQueue(topic, q)
	}
	return n
}

// TestSDKAcrossTwoBrokers: a 5.x Go SDK producer and simple consumer given
// one broker's endpoint use both brokers of the cluster (the routes list
// both, each at its own endpoint); when one broker stops, the name server
// drops it and both clients go on with the other.
func TestSDKAcrossTwoBrokers(t *testing.T) {
	t.Cleanup(sdklog.RemoveAfter())
	t.Setenv("rocketmq.client.logRoot", t.TempDir())
	const topic, group, queues = "TwoBrokerTopic", "TwoBrokerGroup", 2
	a, b, _, port := startTwoBrokers(t, topic, queues)
	endpoint := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))

	p, err := rmqclient.NewProducer(&rmqclient.Config{Endpoint: endpoint, Credentials: &credentials.SessionCredentials{}}, rmqclient.WithTopics(topic))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("producer Start: %v", err)
	}
	t.Cleanup(func() { _ = p.GracefulStop() })
	c, err := rmqclient.NewSimpleConsumer(&rmqclient.Config{Endpoint: endpoint, ConsumerGroup: group, Credentials: &credentials.SessionCredentials{}},
		rmqclient.WithAwaitDuration(time.Second),
		rmqclient.WithSubscriptionExpressions(map[string]*rmqclient.FilterExpression{topic: rmqclient.SUB_ALL}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("simple consumer Start: %v", err)
	}
	t.Cleanup(func() { _ = c.GracefulStop() })

	// send sends n messages. A send the SDK routes to a stopped broker
	// fails (the Go SDK does not retry a connection it cannot make) until
	// its route refresh (30 s) drops that broker; the application sends
	// again, as it would.
	send := func(prefix string, n int) (map[string]bool, int) {
		t.Helper()
		want, failed := map[string]bool{}, 0
		deadline := time.Now().Add(60 * time.Second)
		for i := range n {
			body := fmt.Sprintf("%s-%d", prefix, i)
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				_, err := p.Send(ctx, &rmqclient.Message{Topic: topic, Body: []byte(body)})
				cancel()
				if err == nil {
					break
				}
				if failed++; time.Now().After(deadline) {
					t.Fatalf("Send %s: %v", body, err)
				}
			}
			want[body] = true
		}
		return want, failed
	}
	// receive takes every wanted message within the deadline; receives from
	// a stopped broker's endpoint fail until the consumer's assignments move
	// on, which the loop rides out.
	receive := func(want map[string]bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for len(want) > 0 && time.Now().Before(deadline) {
			mvs, err := c.Receive(context.Background(), 16, 20*time.Second)
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			for _, mv := range mvs {
				delete(want, string(mv.GetBody()))
				if err := c.Ack(context.Background(), mv); err != nil {
					t.Fatalf("Ack: %v", err)
				}
			}
		}
		if len(want) > 0 {
			t.Fatalf("%d messages not received: %v", len(want), want)
		}
	}

	before, failed := send("before", 20)
	if failed > 0 {
		t.Fatalf("%d sends failed with both brokers up", failed)
	}
	receive(before)
	na, nb := stored(a, topic, queues), stored(b, topic, queues)
	if na == 0 || nb == 0 || na+nb != 20 {
		t.Fatalf("stored on A %d, on B %d; want 20 spread over both", na, nb)
	}

	// B stops (it unregisters; the name server drops it at once, as it does
	// a broker whose connection closes or that it expires).
	b.stop()
	after, failed := send("after", 20)
	t.Logf("sends retried after B stopped: %d", failed)
	receive(after)
	if got := stored(a, topic, queues); got != na+20 {
		t.Fatalf("stored on A after B stopped: %d, want %d", got, na+20)
	}
}
