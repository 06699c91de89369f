package integration

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/integration/harness"
)

// TestLmqReadBackWithStockClient: the stock Go client sends messages whose
// INNER_MULTI_DISPATCH names two %LMQ% queues to a broker with enableLmq
// and enableMultiDispatch, and pulls each back from both LMQ queues (queue
// 0 of topics nobody created and no name server routes), as an MQTT
// gateway does; after kill -9 and a restart of the broker the LMQ queues read the same.
func TestLmqReadBackWithStockClient(t *testing.T) {
	t.Parallel()
	p := ownRMQ(t, "enableLmq=true", "enableMultiDispatch=true")
	ns, addr := p.NamesrvAddr(), p.BrokerAddr()
	adm := admin.New(admin.Options{NamesrvAddr: ns})
	ctx := context.Background()
	topic := uniqueName(t, "src")
	if _, err := adm.UpdateTopic(ctx, admin.TopicSpec{TopicName: topic, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}, addr, ""); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, consumeTimeout, func() error { _, err := adm.Route(ctx, topic); return err })
	lmqA, lmqB := "%LMQ%"+uniqueName(t, "a"), "%LMQ%"+uniqueName(t, "b")

	prod, _ := newProducer(t, ns)
	const n = 10
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("lmq-%d", i)
		m := primitive.NewMessage(topic, []byte(want[i]))
		m.WithProperty("INNER_MULTI_DISPATCH", lmqA+","+lmqB)
		sctx, cancel := context.WithTimeout(ctx, sendTimeout)
		r, err := prod.SendSync(sctx, m)
		cancel()
		if err != nil || r.Status != primitive.SendOK {
			t.Fatalf("send %d: %v %v", i, r, err)
		}
	}
	stats, err := adm.TopicStatus(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	brokerName := stats[0].BrokerName

	readAll := func(label string) {
		t.Helper()
		// The source topic's route tells the client the broker's address.
		pc := startPullConsumer(t, ns, "%LMQ%"+uniqueName(t, "g"), topic)
		for _, lmq := range []string{lmqA, lmqB} {
			mq := &primitive.MessageQueue{Topic: lmq, BrokerName: brokerName, QueueId: 0}
			var got []string
			harness.WaitFor(t, consumeTimeout, func() error {
				got = got[:0]
				pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				r, err := pc.PullFrom(pctx, mq, 0, 32)
				if err != nil {
					return err
				}
				if r.Status != primitive.PullFound {
					return fmt.Errorf("pull status %v", r.Status)
				}
				for i, m := range r.GetMessageExts() {
					got = append(got, string(m.Body))
					if m.Topic != topic || m.GetProperty("INNER_MULTI_QUEUE_OFFSET") != strconv.Itoa(i)+","+strconv.Itoa(i) {
						return fmt.Errorf("message %d: topic %s, INNER_MULTI_QUEUE_OFFSET %q", i, m.Topic, m.GetProperty("INNER_MULTI_QUEUE_OFFSET"))
					}
				}
				if len(got) != n {
					return fmt.Errorf("%d messages", len(got))
				}
				return nil
			})
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s: %s[%d] = %q, want %q", label, lmq, i, got[i], want[i])
				}
			}
		}
	}
	readAll("before restart")
	// kill -9: recovery re-dispatches the commitlog, LMQ units included.
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	readAll("after kill -9 and restart")
}
