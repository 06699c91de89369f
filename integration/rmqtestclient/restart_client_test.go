package rmqtestclient_test

import (
	"context"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rmqio/rmq/rmqtest"
)

// sendUntilOK retries a send until the client, reconnecting to a restarted
// broker, gets it through (a send on the connection the restart closed
// fails; the client dials again on the next).
func sendUntilOK(t *testing.T, p rocketmq.Producer, m *primitive.Message) {
	t.Helper()
	deadline := time.Now().Add(receiveTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		r, err := p.SendSync(ctx, m)
		cancel()
		if err == nil && r.Status == primitive.SendOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no send got through to the restarted broker: %v %v", r, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Messages sent before a crash restart are consumed by a group that starts
// after it, and the stock client's producer reconnects after a clean
// restart. (A push consumer running across the restart resumes too, but
// only once the pull it had in flight times out, 30 s in the Go client: it
// does not fail a request when its connection closes. A new group shows
// the consume side at once.)
func TestStockClientAcrossRestarts(t *testing.T) {
	t.Parallel()
	srv := rmqtest.Start(t)
	topic := name(t, "restart")
	srv.CreateTopic(topic, 1)
	p := startProducer(t, srv)
	send(t, p, primitive.NewMessage(topic, []byte("before crash 1")))
	send(t, p, primitive.NewMessage(topic, []byte("before crash 2")))

	if err := srv.RestartCrash(); err != nil {
		t.Fatal(err)
	}
	receiveAll(t, startConsumer(t, srv, topic), "before crash 1", "before crash 2")

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	sendUntilOK(t, p, primitive.NewMessage(topic, []byte("after restart")))
	receiveAll(t, startConsumer(t, srv, topic), "before crash 1", "before crash 2", "after restart")
}

// receiveAll receives len(bodies) messages and fails unless they are bodies
// (in any order: the push consumer calls back concurrently).
func receiveAll(t *testing.T, got <-chan *primitive.MessageExt, bodies ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, b := range bodies {
		want[b] = true
	}
	for range bodies {
		m := receive(t, got)
		if !want[string(m.Body)] {
			t.Fatalf("received %q, want %q", m.Body, bodies)
		}
		delete(want, string(m.Body))
	}
}
