package broker

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

func lmqBroker(t *testing.T, mutate func(*Options)) *testBroker {
	return startBroker(t, func(o *Options) {
		o.EnableLmq, o.EnableMultiDispatch = true, true
		if mutate != nil {
			mutate(o)
		}
	})
}

func createTopic(t *testing.T, tb *testBroker, topic string, queues int) {
	t.Helper()
	if r := tb.invoke(remoting.UpdateAndCreateTopic, brokertest.CreateTopicExt(topic, queues, int(topicgroup.PermRead|topicgroup.PermWrite), "SINGLE_TAG"), nil); r.Code != remoting.Success {
		t.Fatalf("create %s: %d %s", topic, r.Code, r.Remark)
	}
}

// A message sent with INNER_MULTI_DISPATCH is pulled back from each %LMQ%
// queue (queue 0, no topic created) by a %LMQ% group and a plain group; a
// %LMQ% group's offset is one per topic whatever queue id it names.
func TestLmqSendPullAndOffsets(t *testing.T) {
	tb := lmqBroker(t, nil)
	createTopic(t, tb, "LmqSrc", 4)
	for i := range 3 {
		tb.mustSend(sendArgs{topic: "LmqSrc", queueID: 2, body: []byte("m" + strconv.Itoa(i)),
			props: coreProps(message.PropInnerMultiDispatch, "%LMQ%a,%LMQ%b", message.PropWait, "true")})
	}
	tb.waitDispatched()
	for _, q := range []string{"%LMQ%a", "%LMQ%b"} {
		for _, g := range []string{"%LMQ%g", "PlainGroup"} {
			r := tb.pull(pullArgs{group: g, topic: q, queueID: 0, maxMsgs: 32, sysFlag: pullFlagSubscription, subscription: "*"})
			if r.Code != remoting.Success {
				t.Fatalf("pull %s by %s: %d %s", q, g, r.Code, r.Remark)
			}
			msgs := coreRecords(t, r.Body)
			if len(msgs) != 3 {
				t.Fatalf("pull %s by %s: %d messages, want 3", q, g, len(msgs))
			}
			for i, m := range msgs {
				if string(m.Body) != "m"+strconv.Itoa(i) || m.Topic != "LmqSrc" || m.Properties[message.PropInnerMultiQueueOffset] != strconv.Itoa(i)+","+strconv.Itoa(i) {
					t.Fatalf("pull %s[%d]: %s %q %v", q, i, m.Topic, m.Body, m.Properties)
				}
			}
		}
	}
	// Only queue 0 of an LMQ topic exists.
	if r := tb.pull(pullArgs{group: "%LMQ%g", topic: "%LMQ%a", queueID: 1, maxMsgs: 32, sysFlag: pullFlagSubscription, subscription: "*"}); r.Code != remoting.SystemError {
		t.Fatalf("pull %%LMQ%%a/1: %d %s, want SYSTEM_ERROR (queueId illegal)", r.Code, r.Remark)
	}
	// The %LMQ% group's offset: committed on queue 3, read on queue 0.
	commit := map[string]string{"consumerGroup": "%LMQ%g", "topic": "%LMQ%a", "queueId": "3", "commitOffset": "2"}
	if r := tb.invoke(remoting.UpdateConsumerOffset, commit, nil); r.Code != remoting.Success {
		t.Fatalf("commit: %d %s", r.Code, r.Remark)
	}
	r := tb.invoke(remoting.QueryConsumerOffset, map[string]string{"consumerGroup": "%LMQ%g", "topic": "%LMQ%a", "queueId": "0"}, nil)
	if r.Code != remoting.Success || r.ExtFields["offset"] != "2" {
		t.Fatalf("query offset: %d %s %v", r.Code, r.Remark, r.ExtFields)
	}
	// mqadmin queryCq reads an LMQ queue as any other.
	r = tb.invoke(remoting.QueryConsumeQueue, map[string]string{"topic": "%LMQ%a", "queueId": "0", "index": "0", "count": "3"}, nil)
	if r.Code != remoting.Success || !strings.Contains(string(r.Body), `"maxQueueIndex":3`) {
		t.Fatalf("queryConsumeQueue: %d %s %s", r.Code, r.Remark, r.Body)
	}
	// Deleting an LMQ topic drops its queue (cleanUnusedLmqTopic).
	if r := tb.invoke(remoting.DeleteTopicInBroker, map[string]string{"topic": "%LMQ%b"}, nil); r.Code != remoting.Success {
		t.Fatalf("delete %%LMQ%%b: %d %s", r.Code, r.Remark)
	}
	if n := tb.store.LmqQueueNum(); n != 1 {
		t.Fatalf("LMQ queues after deleting one: %d, want 1", n)
	}
	// LMQ topics and groups are never stored.
	tb.topics.mu.RLock()
	_, stored := tb.topics.table["%LMQ%a"]
	tb.topics.mu.RUnlock()
	if stored || slices.Contains(tb.clients.SubGroups.Groups(), "%LMQ%g") {
		t.Fatal("an LMQ topic or group was stored")
	}
}

// Without enableLmq a %LMQ% topic is an unknown topic, and the property
// does nothing.
func TestLmqOff(t *testing.T) {
	tb := startBroker(t, nil)
	createTopic(t, tb, "LmqSrc", 4)
	tb.mustSend(sendArgs{topic: "LmqSrc", queueID: 0, body: []byte("x"), props: coreProps(message.PropInnerMultiDispatch, "%LMQ%a")})
	tb.waitDispatched()
	if r := tb.pull(pullArgs{group: "PlainGroup", topic: "%LMQ%a", queueID: 0, maxMsgs: 32, sysFlag: pullFlagSubscription, subscription: "*"}); r.Code != remoting.TopicNotExist {
		t.Fatalf("pull %%LMQ%%a with LMQ off: %d %s, want TOPIC_NOT_EXIST", r.Code, r.Remark)
	}
}

// Past maxLmqConsumeQueueNum: LMQ pulls get getMessage's null answer and
// multi-dispatch sends the stock LMQ_CONSUME_QUEUE_NUM_EXCEEDED answer;
// other sends go on.
func TestLmqQueueNumExceeded(t *testing.T) {
	tb := lmqBroker(t, func(o *Options) { o.MaxLmqConsumeQueueNum = 1 })
	createTopic(t, tb, "LmqSrc", 1)
	tb.mustSend(sendArgs{topic: "LmqSrc", body: []byte("x"), props: coreProps(message.PropInnerMultiDispatch, "%LMQ%a,%LMQ%b")})
	tb.waitDispatched()
	if r := tb.pull(pullArgs{group: "%LMQ%g", topic: "%LMQ%a", maxMsgs: 32, sysFlag: pullFlagSubscription, subscription: "*"}); r.Code != remoting.SystemError || r.Remark != "store getMessage return null" {
		t.Fatalf("pull past the limit: %d %q", r.Code, r.Remark)
	}
	r := tb.send(sendArgs{topic: "LmqSrc", body: []byte("y"), props: coreProps(message.PropInnerMultiDispatch, "%LMQ%a")})
	if r.Code != remoting.SystemError || r.Remark != lmqExceededRemark {
		t.Fatalf("send past the limit: %d %q", r.Code, r.Remark)
	}
	tb.mustSend(sendArgs{topic: "LmqSrc", body: []byte("z")})
}

// A pull held on an empty LMQ queue is answered as soon as a message is
// multi-dispatched to it (notifyMessageArrive4MultiQueue).
func TestLmqLongPollWokenByMultiDispatch(t *testing.T) {
	tb := lmqBroker(t, nil)
	createTopic(t, tb, "LmqSrc", 2)
	start := time.Now()
	ch := tb.pullAsync(pullArgs{group: "%LMQ%g", topic: "%LMQ%w", sysFlag: pullFlagSubscription | pullFlagSuspend,
		suspendMillis: 15000, subscription: "*", maxMsgs: 32})
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.pullHold.held() == 1 }, "the pull to be held")
	tb.mustSend(sendArgs{topic: "LmqSrc", queueID: 1, body: []byte("woke"), props: coreProps(message.PropInnerMultiDispatch, "%LMQ%w")})
	resp := coreAwait(t, ch, 10*time.Second)
	if resp.Code != remoting.Success {
		t.Fatalf("held LMQ pull: %d %q", resp.Code, resp.Remark)
	}
	if msgs := coreRecords(t, resp.Body); len(msgs) != 1 || string(msgs[0].Body) != "woke" {
		t.Fatalf("got %d messages", len(msgs))
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("answered after %v: not woken by the dispatch", elapsed)
	}
}
