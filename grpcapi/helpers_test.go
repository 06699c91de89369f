package grpcapi

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/mem"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/topicgroup"
)

// testServer is a started broker with its gRPC endpoint on a free port.
type testServer struct {
	b   *broker.Broker
	srv *Server
}

func (ts *testServer) endpoint() string { return ts.srv.Addr().String() }

func startServer(t *testing.T, mutate func(*broker.Options)) *testServer {
	t.Helper()
	return startServerWith(t, mutate, nil)
}

// startServerWith also adjusts the endpoint's options.
func startServerWith(t *testing.T, mutate func(*broker.Options), mutateGrpc func(*Options)) *testServer {
	t.Helper()
	o := testbroker.Options(t, mutate)
	b, err := broker.New(o)
	if err != nil {
		t.Fatalf("broker.New: %v", err)
	}
	if err := b.Start(); err != nil {
		_ = b.Shutdown()
		t.Fatalf("broker Start: %v", err)
	}
	go_ := DefaultOptions()
	go_.Port = 0
	go_.Logger = o.Logger
	if mutateGrpc != nil {
		mutateGrpc(&go_)
	}
	srv := New(b, go_)
	if err := srv.Start(); err != nil {
		_ = b.Shutdown()
		t.Fatalf("grpc Start: %v", err)
	}
	t.Cleanup(func() {
		srv.Stop()
		if err := b.Shutdown(); err != nil {
			t.Errorf("broker Shutdown: %v", err)
		}
	})
	return &testServer{b: b, srv: srv}
}

// createTopic makes a read-write topic with n queues.
func (ts *testServer) createTopic(name string, n int32) {
	ts.b.Topics().Update(&topicgroup.TopicConfig{
		TopicName: name, ReadQueueNums: n, WriteQueueNums: n, Perm: topicgroup.PermRead | topicgroup.PermWrite, TopicFilterType: "SINGLE_TAG",
	})
}

// createTypedTopic creates a topic whose message.type is typ (the gRPC
// front end checks it by default, as the stock proxy).
func (ts *testServer) createTypedTopic(name string, n int32, typ string) {
	ts.b.Topics().Update(&topicgroup.TopicConfig{
		TopicName: name, ReadQueueNums: n, WriteQueueNums: n, Perm: topicgroup.PermRead | topicgroup.PermWrite, TopicFilterType: "SINGLE_TAG",
		Attributes: map[string]string{"message.type": typ},
	})
}

// queueCounts is the number of messages in each queue of topic.
func (ts *testServer) queueCounts(topic string, n int32) []int64 {
	out := make([]int64, n)
	for q := range n {
		out[q] = ts.b.Store().MaxOffsetInQueue(topic, q)
	}
	return out
}

func sum(xs []int64) int64 {
	var s int64
	for _, x := range xs {
		s += x
	}
	return s
}

// waitCount waits until topic's n queues hold want messages in all (the
// store dispatches to the consume queues in the background).
func (ts *testServer) waitCount(t *testing.T, topic string, n int32, want int64) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, func() bool { return sum(ts.queueCounts(topic, n)) == want },
		fmt.Sprintf("%d messages on %s", want, topic))
}

// remotingTopic describes a topic config for a test.
type remotingTopic struct {
	name              string
	read, write, perm int32
}

func (r remotingTopic) config() *topicgroup.TopicConfig {
	return &topicgroup.TopicConfig{TopicName: r.name, ReadQueueNums: r.read, WriteQueueNums: r.write, Perm: r.perm, TopicFilterType: "SINGLE_TAG"}
}

// rawBytes is a request sent as the bytes given (rawCodec).
type rawBytes struct{ b []byte }

// rawCodec marshals rawBytes as is and unmarshals nothing: it sends a
// request that is not a valid protobuf message.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(*rawBytes).b)}, nil
}
func (rawCodec) Unmarshal(mem.BufferSlice, any) error { return nil }
func (rawCodec) Name() string                         { return "proto" }
