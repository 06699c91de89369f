package integration

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// stallMarker in a message body stalls its commitlog write: under
// SYNC_FLUSH the write is a pwrite under the put lock, so the put holds the
// lock (and its send-lane worker) until the test lets it go.
const stallMarker = "STALL-THIS-PUT"

// TestGoProducerSeesSystemBusyAsStock: the stock Go producer
// (rocketmq-client-go) against a broker whose only send-lane worker is held
// by a stalled put. A batch send (always served on the send lane) that
// waits waitTimeMillsInSendQueue is answered SYSTEM_BUSY
// [TIMEOUT_CLEAN_QUEUE]; once the page cache is busy
// (osPageCacheBusyTimeOutMills, lowered live) a send is answered SYSTEM_BUSY
// [REJECTREQUEST]. The Go producer, as with a Java broker, does not retry
// code 2 (producer.needRetryCode): each send is tried once and fails with
// the broker's remark, whatever WithRetry says. Once the put completes, the
// same producer sends again.
func TestGoProducerSeesSystemBusyAsStock(t *testing.T) {
	inj := &store.Injector{}
	stall := make(chan struct{})
	inj.Add(store.Rule{Op: store.OpWrite, Path: "commitlog", Stall: stall,
		Data: func(b []byte) bool { return bytes.Contains(b, []byte(stallMarker)) }})
	c := testbroker.StartCluster(t, func(o *broker.Options) {
		o.FlushDiskType = "SYNC_FLUSH"
		o.SendMessageThreadPoolNums = 1
		o.BrokerFastFailureEnable = true        // testbroker turns it off
		o.OsPageCacheBusyTimeOutMills = 600_000 // not busy until the test lowers it
		o.FS = store.NewErrorFS(inj)
	})
	stalled := true
	t.Cleanup(func() {
		if stalled {
			close(stall)
		}
	})
	topic := uniqueName(t, "t")
	cl := rawClient(t)
	ext := map[string]string{"topic": topic, "defaultTopic": "TBW102", "readQueueNums": "1", "writeQueueNums": "1",
		"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}
	if r, err := cl.InvokeTimeout(c.BrokerAddr(), remoting.NewRequest(remoting.UpdateAndCreateTopic, ext, nil), sendTimeout); err != nil || r.Code != remoting.Success {
		t.Fatalf("create topic: %v %v", r, err)
	}
	testutil.WaitFor(t, routeTimeout, func() bool { return c.Namesrv.Routes().TopicRoute(topic) != nil }, "the route")

	ns := c.NamesrvAddr()
	p, _ := newProducer(t, ns, producer.WithRetry(2), producer.WithSendMsgTimeout(20*time.Second))
	if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("before"))); err != nil {
		t.Fatalf("send before the stall: %v", err)
	}
	batch := func(body string) []*primitive.Message {
		return []*primitive.Message{primitive.NewMessage(topic, []byte(body+"-1")), primitive.NewMessage(topic, []byte(body+"-2"))}
	}

	held := make(chan error, 1)
	go func() {
		_, err := p.SendSync(context.Background(), batch(stallMarker)...)
		held <- err
	}()
	testutil.WaitFor(t, sendTimeout, func() bool { return len(inj.Hits()) > 0 }, "the batch's put to stall")

	refusals := c.Broker.Refusals()
	begin := time.Now()
	_, err := p.SendSync(context.Background(), batch("waits")...)
	if err == nil || !strings.Contains(err.Error(), "CODE: 2") || !strings.Contains(err.Error(), "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: ") {
		t.Fatalf("batch send behind the stalled one: %v, want CODE: 2 [TIMEOUT_CLEAN_QUEUE]", err)
	}
	if waited := time.Since(begin); waited < 200*time.Millisecond {
		t.Fatalf("answered after %v, before waitTimeMillsInSendQueue", waited)
	}
	if n := refusals.Total("queue_timeout_send", remoting.SystemBusy); n != 1 {
		t.Fatalf("the broker expired %d sends, want 1: the Go producer does not retry SYSTEM_BUSY", n)
	}

	if r, err := cl.InvokeTimeout(c.BrokerAddr(), remoting.NewRequest(remoting.UpdateBrokerConfig, nil, []byte("osPageCacheBusyTimeOutMills=100\n")), sendTimeout); err != nil || r.Code != remoting.Success {
		t.Fatalf("lower osPageCacheBusyTimeOutMills: %v %v", r, err)
	}
	testutil.WaitFor(t, sendTimeout, c.Broker.Store().IsOSPageCacheBusy, "the page cache to be busy")
	_, err = p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("rejected")))
	if err == nil || !strings.Contains(err.Error(), "CODE: 2") || !strings.Contains(err.Error(), remoting.RejectRequestRemark) {
		t.Fatalf("send while the page cache is busy: %v, want CODE: 2 %s", err, remoting.RejectRequestRemark)
	}
	if n := refusals.Total("send_rejected_page_cache_busy", remoting.SystemBusy); n != 1 {
		t.Fatalf("the broker rejected %d sends, want 1: no retry of SYSTEM_BUSY", n)
	}

	close(stall)
	stalled = false
	if err := <-held; err != nil {
		t.Fatalf("the stalled batch: %v", err)
	}
	if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("after"))); err != nil {
		t.Fatalf("send after the stall: %v", err)
	}
}
