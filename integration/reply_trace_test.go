package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/integration/harness"
	"github.com/rmqio/rmq/message"
)

// replyTimeout bounds one request-reply round trip: the first one waits for
// the responder's first rebalance.
const replyTimeout = consumeTimeout

// startResponder consumes topic and answers every request (a message with
// REPLY_TO_CLIENT) with "reply to <body>", sent by a producer of its own
// (SEND_REPLY_MESSAGE). It returns once the broker knows the consumer.
func startResponder(t *testing.T, p *harness.Process, topic string) {
	t.Helper()
	replier, _ := newProducer(t, p.NamesrvAddr())
	group := uniqueName(t, "rg")
	startConsumerFunc(t, p.NamesrvAddr(), consumerConf{group: group, topic: topic}, func(m *primitive.MessageExt) {
		if consumer.GetReplyToClient(m) == "" {
			return
		}
		reply, err := consumer.CreateReplyMessage(m, nil)
		if err != nil {
			t.Errorf("create reply: %v", err)
			return
		}
		// CreateReplyMessage of the Go client puts its body argument into the
		// properties; set the body here.
		reply.Body = []byte("reply to " + string(m.Body))
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		defer cancel()
		if _, err := replier.SendSync(ctx, reply); err != nil {
			t.Errorf("send reply: %v", err)
		}
	})
	waitConsumers(t, p, group, 1)
}

// TestRequestReply sends requests with the Go client's Request (sync) and
// RequestAsync and gets the responder's replies pushed back by the broker
// (PUSH_REPLY_MESSAGE_TO_CLIENT); a request nobody answers times out.
func TestRequestReply(t *testing.T) {
	p := sharedRMQ(t)
	topic := uniqueName(t, "t")
	// The request topic exists before the responder subscribes. Another
	// producer creates it: the requester must not know the route yet, since
	// its first Request heartbeats (registering it with the broker as a
	// producer, which the broker needs to push the reply) only then.
	warm, _ := newProducer(t, p.NamesrvAddr())
	sendAll(t, warm, []*primitive.Message{testMsg(topic, "warm-up", []byte("warm-up"))})
	waitRoute(t, p, topic)
	startResponder(t, p, topic)
	requester, _ := newProducer(t, p.NamesrvAddr())

	ctx := context.Background()
	for i := range 3 {
		body := fmt.Sprintf("sync request %d", i)
		reply, err := requester.Request(ctx, replyTimeout, primitive.NewMessage(topic, []byte(body)))
		if err != nil {
			t.Fatalf("Request %d: %v", i, err)
		}
		if got := string(reply.Body); got != "reply to "+body {
			t.Fatalf("reply body %q, want %q", got, "reply to "+body)
		}
		if reply.GetProperty(primitive.PropertyCorrelationID) == "" {
			t.Errorf("reply without CORRELATION_ID: %v", reply.GetProperties())
		}
	}

	type asyncReply struct {
		body string
		err  error
	}
	done := make(chan asyncReply, 6)
	for i := range 3 {
		body := fmt.Sprintf("async request %d", i)
		err := requester.RequestAsync(ctx, replyTimeout, func(_ context.Context, m *primitive.Message, err error) {
			r := asyncReply{err: err}
			if m != nil {
				r.body = string(m.Body)
			}
			done <- r
		}, primitive.NewMessage(topic, []byte(body)))
		if err != nil {
			t.Fatalf("RequestAsync %d: %v", i, err)
		}
	}
	// The Go client runs an async callback twice per reply (once on the
	// reply, once more when it evicts the answered future), so wait for the
	// three distinct replies rather than for three calls.
	got := map[string]bool{}
	deadline := time.After(replyTimeout + 5*time.Second)
	for len(got) < 3 {
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatalf("async reply: %v", r.err)
			}
			got[r.body] = true
		case <-deadline:
			t.Fatalf("async replies not all in time: %v", got)
		}
	}
	for i := range 3 {
		if want := fmt.Sprintf("reply to async request %d", i); !got[want] {
			t.Errorf("no async reply %q: %v", want, got)
		}
	}

	// Nobody consumes this topic: the request times out on the client.
	silent := uniqueName(t, "t")
	sendAll(t, warm, []*primitive.Message{testMsg(silent, "warm-up", []byte("warm-up"))})
	start := time.Now()
	if _, err := requester.Request(ctx, 2*time.Second, primitive.NewMessage(silent, []byte("nobody answers"))); err == nil {
		t.Fatal("a request nobody answers returned a reply")
	}
	if d := time.Since(start); d < 2*time.Second {
		t.Errorf("the unanswered request failed after %v, before its timeout", d)
	}
}

// TestMessageTrace runs a Go producer and consumer with tracing on against a
// broker with traceTopicEnable: the trace topic exists from the start, and
// the Pub and SubAfter records of a message are found by its id the way
// queryMsgTraceById finds them. The broker is shared by every run of the
// test (see tracing), so -count=N works.
func TestMessageTrace(t *testing.T) {
	p := tracing.get(t)
	waitRoute(t, p, message.TopicTrace)
	ns := primitive.NewPassthroughResolver([]string{p.NamesrvAddr()})
	trace := &primitive.TraceConfig{Access: primitive.Local, Resolver: ns}
	topic := uniqueName(t, "t")
	prod, _ := newProducer(t, p.NamesrvAddr(), producer.WithTrace(trace))
	res := sendAll(t, prod, []*primitive.Message{testMsg(topic, "traced", []byte("traced body"))})[0]
	waitRoute(t, p, topic)

	group := uniqueName(t, "cg")
	col := newCollector()
	startConsumer(t, p.NamesrvAddr(), consumerConf{group: group, topic: topic, opts: []consumer.Option{consumer.WithTrace(trace)}}, col)
	waitAll(t, replyTimeout, []string{"traced"}, col)

	adm := admin.New(admin.Options{NamesrvAddr: p.NamesrvAddr()})
	defer adm.Close()
	harness.WaitFor(t, 30*time.Second, func() error {
		views, err := adm.QueryMsgTraceByID(context.Background(), "", res.MsgID)
		if err != nil {
			return err
		}
		var types []string
		var pubOK, subOK bool
		for _, v := range views {
			types = append(types, v.Type+"/"+v.Group)
			pubOK = pubOK || (v.Type == "Pub" && v.Status == "success" && strings.HasPrefix(v.Group, "it_pg_"))
			subOK = subOK || (v.Type == "SubAfter" && v.Group == group && v.Status == "success")
		}
		if !pubOK || !subOK {
			return fmt.Errorf("trace records of %s: %v", res.MsgID, types)
		}
		return nil
	})
}
