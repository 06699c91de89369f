package rmqtestclient_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/rmqtest"
)

// receiveTimeout bounds, in real time, how long a test waits for a message
// the broker has already stored; it is a failure bound, not a measurement.
const receiveTimeout = 20 * time.Second

func TestMain(m *testing.M) {
	rlog.SetLogLevel("error")
	if testutil.RaceEnabled {
		// The clients left running (shutdownAtEnd) log every failed
		// request to the stopped brokers at the error level.
		rlog.SetLogLevel("fatal")
	}
	os.Exit(m.Run())
}

// shutdownAtEnd shuts a stock Go client down when the test ends, except
// under the race detector. There the client is left running until the test
// binary exits: its Shutdown writes an unsynchronised flag (rmqClient.close,
// internal/client.go:555 of the pinned version) that the client's own
// goroutines read on every InvokeSync (client.go:576), so a test ending
// while the consumer's first rebalance ran (findConsumerList) was reported
// as a data race inside the client (make test-race, TestStartWithBroker
// ConfigAndClockStart; upstream apache/rocketmq-client-go#1115, open).
func shutdownAtEnd(t *testing.T, shutdown func() error) {
	if !testutil.RaceEnabled {
		t.Cleanup(func() { _ = shutdown() })
	}
}

var seq atomic.Int64

// name is unique in the process: the Go client shares one client per
// instance name, and parallel tests each talk to their own server.
func name(t *testing.T, kind string) string {
	return fmt.Sprintf("%s_%s_%d", t.Name(), kind, seq.Add(1))
}

func startProducer(t *testing.T, srv *rmqtest.Server) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{srv.NamesrvAddr()})),
		producer.WithGroupName(name(t, "pg")), producer.WithInstanceName(name(t, "pi")),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	shutdownAtEnd(t, p.Shutdown)
	return p
}

// startConsumer subscribes to topic and hands every message to the channel.
func startConsumer(t *testing.T, srv *rmqtest.Server, topic string) <-chan *primitive.MessageExt {
	t.Helper()
	out := make(chan *primitive.MessageExt, 16)
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{srv.NamesrvAddr()})),
		consumer.WithGroupName(name(t, "cg")), consumer.WithInstance(name(t, "ci")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			out <- m
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	shutdownAtEnd(t, c.Shutdown)
	return out
}

func receive(t *testing.T, ch <-chan *primitive.MessageExt) *primitive.MessageExt {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(receiveTimeout):
		t.Fatal("no message received")
		return nil
	}
}

func send(t *testing.T, p rocketmq.Producer, m *primitive.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := p.SendSync(ctx, m); err != nil || r.Status != primitive.SendOK {
		t.Fatalf("send: %v %v", r, err)
	}
}

// msTime is a message timestamp (ms since the epoch) as a time.
func msTime(ms int64) time.Time { return time.UnixMilli(ms) }

// An order is cancelled 30 minutes after it was placed (delay level 16) and
// a reminder goes out 2 hours later (a timer message): one FastForward of a
// little over 2 hours delivers both, in due order, neither before its time
// on the broker's clock.
func TestFastForwardDelayLevelAndTimer(t *testing.T) {
	t.Parallel()
	srv := rmqtest.Start(t)
	topic := name(t, "orders")
	srv.CreateTopic(topic, 1) // one queue: queue order is delivery order
	p := startProducer(t, srv)
	got := startConsumer(t, srv, topic)

	placed := srv.Now()
	send(t, p, primitive.NewMessage(topic, []byte("cancel unpaid order")).WithDelayTimeLevel(16)) // 30 min
	remindAt := srv.Now().Add(2 * time.Hour)
	send(t, p, primitive.NewMessage(topic, []byte("reminder")).WithDelayTimestamp(remindAt))

	srv.FastForward(2*time.Hour + time.Minute)

	// The push consumer hands messages to its callbacks concurrently, so
	// the order they reach got says nothing; the store timestamps below
	// show the order of delivery.
	first, second := receive(t, got), receive(t, got)
	if string(first.Body) == "reminder" {
		first, second = second, first
	}
	if string(first.Body) != "cancel unpaid order" || string(second.Body) != "reminder" {
		t.Fatalf("received %q and %q", first.Body, second.Body)
	}
	if !msTime(first.StoreTimestamp).Before(msTime(second.StoreTimestamp)) {
		t.Errorf("delay level 16 (due in 30 min) stored at %v, not before the 2 h timer at %v",
			msTime(first.StoreTimestamp), msTime(second.StoreTimestamp))
	}
	cancelDue := placed.Add(30 * time.Minute)
	cancelAt, remindStored := msTime(first.StoreTimestamp), msTime(second.StoreTimestamp)
	// Never early, and each at its own step rather than at the end of the
	// fast-forward (the bound is virtual time: a minute of it is a minute of
	// real time the step would have to take).
	if cancelAt.Before(cancelDue.Truncate(time.Millisecond)) || cancelAt.After(cancelDue.Add(time.Minute)) {
		t.Errorf("delay level 16 delivered at %v, due %v", cancelAt, cancelDue)
	}
	if remindStored.Before(remindAt.Truncate(time.Millisecond)) || remindStored.After(remindAt.Add(time.Minute)) {
		t.Errorf("timer delivered at %v, due %v", remindStored, remindAt)
	}
	if now := srv.Now(); now.Before(placed.Add(2*time.Hour + time.Minute)) {
		t.Errorf("virtual clock at %v after the fast-forward, want at least %v", now, placed.Add(2*time.Hour+time.Minute))
	}
}

// Nothing is delivered before its time: a fast-forward that stops short of
// the due time leaves the message where it is, the next one delivers it.
func TestFastForwardNeverEarly(t *testing.T) {
	t.Parallel()
	srv := rmqtest.Start(t)
	topic := name(t, "late")
	srv.CreateTopic(topic, 1)
	p := startProducer(t, srv)
	got := startConsumer(t, srv, topic)

	sent := srv.Now()
	send(t, p, primitive.NewMessage(topic, []byte("short")).WithDelayTimeLevel(3)) // 10 s
	send(t, p, primitive.NewMessage(topic, []byte("timer")).WithDelayTimestamp(sent.Add(time.Hour)))
	srv.FastForward(11 * time.Second)
	if m := receive(t, got); string(m.Body) != "short" {
		t.Fatalf("received %q first", m.Body)
	}
	srv.FastForward(30 * time.Minute)
	select {
	case m := <-got:
		if msTime(m.StoreTimestamp).Before(sent.Add(time.Hour)) {
			t.Fatalf("%q delivered at %v, due %v", m.Body, msTime(m.StoreTimestamp), sent.Add(time.Hour))
		}
		t.Fatalf("%q delivered after a fast-forward short of its time", m.Body)
	default:
	}
	srv.FastForward(30 * time.Minute)
	if m := receive(t, got); string(m.Body) != "timer" || msTime(m.StoreTimestamp).Before(sent.Add(time.Hour).Truncate(time.Millisecond)) {
		t.Fatalf("received %q stored at %v, due %v", m.Body, msTime(m.StoreTimestamp), sent.Add(time.Hour))
	}
}

// txListener leaves every transaction open and commits when the broker
// checks back, recording the broker's virtual time of the check.
type txListener struct {
	srv     *rmqtest.Server
	mu      sync.Mutex
	checked []time.Time
}

func (l *txListener) ExecuteLocalTransaction(*primitive.Message) primitive.LocalTransactionState {
	return primitive.UnkonwnState
}

func (l *txListener) CheckLocalTransaction(*primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	l.checked = append(l.checked, l.srv.Now())
	l.mu.Unlock()
	return primitive.CommitMessageState
}

// A transaction left open is checked back by the pass a FastForward runs,
// not before transactionTimeOut (6 s), and the commit is delivered.
func TestFastForwardTransactionCheckBack(t *testing.T) {
	t.Parallel()
	srv := rmqtest.Start(t)
	topic := name(t, "tx")
	srv.CreateTopic(topic, 1)
	got := startConsumer(t, srv, topic)
	l := &txListener{srv: srv}
	group := name(t, "tpg")
	tp, err := rocketmq.NewTransactionProducer(l,
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{srv.NamesrvAddr()})),
		producer.WithGroupName(group), producer.WithInstanceName(name(t, "tpi")),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Start(); err != nil {
		t.Fatal(err)
	}
	shutdownAtEnd(t, tp.Shutdown)

	sent := srv.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	res, err := tp.SendMessageInTransaction(ctx, primitive.NewMessage(topic, []byte("paid")))
	cancel()
	if err != nil || res.State != primitive.UnkonwnState {
		t.Fatalf("half send: %v %v", res, err)
	}
	srv.WaitProducer(group) // the check-back needs the producer's heartbeat
	// Check passes run every transactionCheckInterval (60 s) of virtual time.
	srv.FastForward(time.Minute + time.Second)
	m := receive(t, got)
	if string(m.Body) != "paid" {
		t.Fatalf("received %q", m.Body)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.checked) != 1 || l.checked[0].Before(sent.Add(6*time.Second)) {
		t.Fatalf("checked at %v, sent at %v (timeout 6 s)", l.checked, sent)
	}
}

// Broker config keys reach the running broker (read back with
// GET_BROKER_CONFIG), and WithClockStart sets the virtual clock that store
// timestamps come from.
func TestStartWithBrokerConfigAndClockStart(t *testing.T) {
	t.Parallel()
	start := time.Date(2030, 1, 31, 23, 59, 0, 0, time.UTC)
	srv := rmqtest.Start(t,
		rmqtest.WithBrokerConfig(map[string]string{"brokerName": "broker-x", "messageDelayLevel": "1s 1h"}),
		rmqtest.WithClockStart(start),
	)
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	resp, err := cl.InvokeTimeout(srv.BrokerAddr(), remoting.NewRequest(remoting.GetBrokerConfig, nil, nil), 10*time.Second)
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("GET_BROKER_CONFIG: %v %v", resp, err)
	}
	for _, want := range []string{"brokerName=broker-x", "messageDelayLevel=1s 1h"} {
		if !strings.Contains(string(resp.Body), want+"\n") {
			t.Errorf("broker config lacks %q", want)
		}
	}
	if now := srv.Now(); now.Before(start) || now.After(start.Add(time.Minute)) {
		t.Fatalf("virtual clock at %v, started at %v", now, start)
	}

	topic := name(t, "clk")
	srv.CreateTopic(topic, 1)
	p := startProducer(t, srv)
	got := startConsumer(t, srv, topic)
	send(t, p, primitive.NewMessage(topic, []byte("level 2")).WithDelayTimeLevel(2)) // 1 h here
	srv.FastForward(time.Hour)
	m := receive(t, got)
	if at := msTime(m.StoreTimestamp); at.Before(start.Add(time.Hour)) || at.After(start.Add(time.Hour+2*time.Minute)) {
		t.Fatalf("delivered at %v, want about %v", at, start.Add(time.Hour))
	}
}
