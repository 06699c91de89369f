package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rmqio/rmq/integration/harness"
	"github.com/rmqio/rmq/remoting"
)

// Retry and dead-letter checks with the stock Go client. A concurrent
// consumer that returns ConsumeRetryLater hands the message back
// (CONSUMER_SEND_MSG_BACK, delayLevel 0); the broker stores it on
// %RETRY%<group> with DELAY = 3 + reconsumeTimes and reconsumeTimes + 1, and
// once reconsumeTimes reached the consumer's maxReconsumeTimes it stores it on
// %DLQ%<group> instead:
//
//	topic ──▶ consumer: RetryLater ──send back──▶ %RETRY%G (level 3) ──▶ consumer (reconsumeTimes 1)
//	      ... reconsumeTimes == max ──send back──▶ %DLQ%G (1 queue, perm 6), read by a raw PULL

const (
	retryTopicPrefix = "%RETRY%"
	dlqTopicPrefix   = "%DLQ%"
	// dlqPerm is PERM_READ|PERM_WRITE: 4.9.8 creates dead-letter topics readable.
	dlqPerm = 6
)

// startConsumerResult starts a push consumer whose listener answers each
// message with fn's result (the Go client hands over one message per call by
// default). The returned stop also runs at cleanup.
func startConsumerResult(t *testing.T, ns string, cc consumerConf, fn func(*primitive.MessageExt) consumer.ConsumeResult) func() {
	t.Helper()
	base := []consumer.Option{
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		consumer.WithGroupName(cc.group),
		consumer.WithInstance(uniqueName(t, "ci")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}
	c, err := rocketmq.NewPushConsumer(append(base, cc.opts...)...)
	if err != nil {
		t.Fatalf("new push consumer: %v", err)
	}
	sel := cc.selector
	if sel.Expression == "" {
		sel = consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}
	}
	err = c.Subscribe(cc.topic, sel, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		res := consumer.ConsumeSuccess
		for _, m := range msgs {
			if fn(m) == consumer.ConsumeRetryLater {
				res = consumer.ConsumeRetryLater
			}
		}
		return res, nil
	})
	if err != nil {
		t.Fatalf("subscribe %s: %v", cc.topic, err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("start push consumer of %s: %v", cc.group, err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if err := c.Shutdown(); err != nil {
				t.Errorf("consumer shutdown: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// prewarmRetryTopic brings %RETRY%<group> into the route table before the
// measured consumer of group starts. A starting client looks its routes up
// before its first heartbeat (which creates the retry topic) and then only
// every 30 s, so a brand-new group would pull its retry queue up to ~50 s
// late. A first consumer's heartbeat creates the topic; it is stopped once
// the name server routes it, as if the group had been online before.
func prewarmRetryTopic(t *testing.T, p *harness.Process, group, topic string) {
	t.Helper()
	stop := startConsumerFunc(t, p.NamesrvAddr(), consumerConf{group: group, topic: topic}, func(*primitive.MessageExt) {})
	waitRoute(t, p, retryTopicPrefix+group)
	stop()
}

// pullDLQ pulls queue 0 of %DLQ%<group> from offset 0 with a raw PULL_MESSAGE
// (subscription "*" in the header, no long polling) and decodes what it finds.
func pullDLQ(cl *remoting.Client, brokerAddr, group string) ([]*primitive.MessageExt, error) {
	req := remoting.NewRequest(remoting.PullMessage, map[string]string{
		"consumerGroup":        uniqueDLQReader(group),
		"topic":                dlqTopicPrefix + group,
		"queueId":              "0",
		"queueOffset":          "0",
		"maxMsgNums":           "32",
		"sysFlag":              "4", // subscription in the header
		"commitOffset":         "0",
		"suspendTimeoutMillis": "0",
		"subscription":         "*",
		"subVersion":           strconv.FormatInt(time.Now().UnixMilli(), 10),
		"expressionType":       "TAG",
	}, nil)
	resp, err := cl.InvokeTimeout(brokerAddr, req, 3*time.Second)
	if err != nil {
		return nil, err
	}
	if resp.Code != remoting.Success {
		return nil, fmt.Errorf("PULL %s%s: code %d %q", dlqTopicPrefix, group, resp.Code, resp.Remark)
	}
	return primitive.DecodeMessage(resp.Body), nil
}

// uniqueDLQReader names the raw reader's group after the group it inspects.
func uniqueDLQReader(group string) string { return "dlq_reader_" + group }

// retryProbe records the deliveries of one message and fails all of them
// until it has seen failUntil of them.
type retryProbe struct {
	id        string
	failUntil int
	mu        sync.Mutex
	got       []arrival
}

func (r *retryProbe) consume(m *primitive.MessageExt) consumer.ConsumeResult {
	if m.GetProperty(idProp) != r.id {
		return consumer.ConsumeSuccess
	}
	at := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, arrival{msg: m, at: at})
	if len(r.got) <= r.failUntil {
		return consumer.ConsumeRetryLater
	}
	return consumer.ConsumeSuccess
}

func (r *retryProbe) deliveries() []arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]arrival(nil), r.got...)
}

func (r *retryProbe) waitDeliveries(t *testing.T, n int, timeout time.Duration) []arrival {
	t.Helper()
	harness.WaitFor(t, timeout, func() error {
		if got := len(r.deliveries()); got < n {
			return fmt.Errorf("message %s delivered %d times, want %d", r.id, got, n)
		}
		return nil
	})
	return r.deliveries()
}

// checkRedelivery verifies that delivery n (1-based, n ≥ 2) is the original
// message handed back once more: same body, key and born time, the original
// topic restored by the client, reconsumeTimes n−1, pulled from %RETRY%<group>,
// and carrying RETRY_TOPIC and ORIGIN_MESSAGE_ID (the first stored copy's
// offsetMsgId) as stock sets them.
func checkRedelivery(t *testing.T, group, topic string, sent *primitive.SendResult, first *primitive.MessageExt, n int, got *primitive.MessageExt) {
	t.Helper()
	want := []struct {
		what      string
		got, want string
	}{
		{"topic (restored from RETRY_TOPIC)", got.Topic, topic},
		{"pulled from", got.Queue.Topic, retryTopicPrefix + group},
		{"reconsumeTimes", strconv.Itoa(int(got.ReconsumeTimes)), strconv.Itoa(n - 1)},
		{"body", string(got.Body), string(first.Body)},
		{"msgId (UNIQ_KEY)", got.MsgId, sent.MsgID},
		{"bornTimestamp", strconv.FormatInt(got.BornTimestamp, 10), strconv.FormatInt(first.BornTimestamp, 10)},
		{"RETRY_TOPIC", got.GetProperty(primitive.PropertyRetryTopic), topic},
		{"ORIGIN_MESSAGE_ID", got.GetProperty(primitive.PropertyOriginMessageId), sent.OffsetMsgID},
	}
	for _, w := range want {
		if w.got != w.want {
			t.Errorf("delivery %d: %s = %q, want %q", n, w.what, w.got, w.want)
		}
	}
}

// TestRetryLaterRedeliversAfterLevel3 fails a message once on the shared
// broker (stock delay levels) and checks that it comes back with
// reconsumeTimes 1 no earlier than 10 s (level 3) after the first delivery.
func TestRetryLaterRedeliversAfterLevel3(t *testing.T) {
	t.Parallel()
	p := sharedRMQ(t)
	topic, group := uniqueName(t, "t"), uniqueName(t, "cg")
	prod, _ := newProducer(t, p.NamesrvAddr())
	sendAll(t, prod, []*primitive.Message{testMsg(topic, "create", bodyFor("create"))})
	waitRoute(t, p, topic)
	prewarmRetryTopic(t, p, group, topic)

	probe := &retryProbe{id: "retry-once", failUntil: 1}
	startWarmConsumerResult(t, p, prod.SendSync, consumerConf{group: group, topic: topic}, probe.consume)
	sent := sendAll(t, prod, []*primitive.Message{testMsg(topic, probe.id, bodyFor(probe.id))})[0]

	got := probe.waitDeliveries(t, 2, consumeTimeout)
	first, second := got[0], got[1]
	if first.msg.ReconsumeTimes != 0 || first.msg.Topic != topic {
		t.Errorf("first delivery: reconsumeTimes %d topic %s, want 0 and %s", first.msg.ReconsumeTimes, first.msg.Topic, topic)
	}
	checkRedelivery(t, group, topic, sent, first.msg, 2, second.msg)
	level3 := stockLevelDelays[3]
	gap := second.at.Sub(first.at)
	if gap < level3-earlyTolerance {
		t.Errorf("redelivered %v after the first delivery, before the level-3 delay %v", gap, level3)
	}
	if gap > level3+lateLimit {
		t.Errorf("redelivered %v after the first delivery, limit %v", gap, level3+lateLimit)
	}
	t.Logf("redelivered with reconsumeTimes %d after %v (level 3 = %v)", second.msg.ReconsumeTimes, gap.Round(time.Millisecond), level3)
}

// shortLevels keeps the stock count of 18 levels but makes retries quick;
// levels 3 and 4 differ so the retry formula 3 + reconsumeTimes shows in the gaps.
var shortLevels = func() []time.Duration {
	l := make([]time.Duration, 18)
	for i := range l {
		l[i] = time.Second
	}
	l[2], l[3] = 2*time.Second, 5*time.Second
	return l
}()

func levelsConf(levels []time.Duration) string {
	parts := make([]string, len(levels))
	for i, d := range levels {
		parts[i] = strconv.Itoa(int(d/time.Second)) + "s"
	}
	return "messageDelayLevel=" + strings.Join(parts, " ")
}

// TestRetryBudgetEndsInDLQ fails a message every time for a consumer with
// maxReconsumeTimes 2: it is delivered three times (reconsumeTimes 0, 1, 2,
// the retries after levels 3 and 4), then lands on %DLQ%<group> with
// reconsumeTimes 3, and the dead-letter topic is routed readable.
func TestRetryBudgetEndsInDLQ(t *testing.T) {
	t.Parallel()
	p := ownRMQ(t, levelsConf(shortLevels), "mappedFileSizeCommitLog=4194304", "maxMessageSize=262144")
	topic, group := uniqueName(t, "t"), uniqueName(t, "cg")
	prod, _ := newProducer(t, p.NamesrvAddr())
	sendAll(t, prod, []*primitive.Message{testMsg(topic, "create", bodyFor("create"))})
	waitRoute(t, p, topic)
	prewarmRetryTopic(t, p, group, topic)

	const maxReconsume = 2
	probe := &retryProbe{id: "always-fails", failUntil: 1 << 30}
	startWarmConsumerResult(t, p, prod.SendSync,
		consumerConf{group: group, topic: topic, opts: []consumer.Option{consumer.WithMaxReconsumeTimes(maxReconsume)}}, probe.consume)
	m := testMsg(topic, probe.id, bodyFor(probe.id))
	m.WithTag("TagDLQ")
	m.WithKeys([]string{"dlq-key"})
	sent := sendAll(t, prod, []*primitive.Message{m})[0]

	cl := rawClient(t)
	var dead []*primitive.MessageExt
	harness.WaitFor(t, consumeTimeout, func() error {
		msgs, err := pullDLQ(cl, p.BrokerAddr(), group)
		if err != nil {
			return fmt.Errorf("after %d deliveries: %w", len(probe.deliveries()), err)
		}
		dead = msgs
		return nil
	})
	got := probe.deliveries()
	if len(got) != maxReconsume+1 {
		t.Fatalf("delivered %d times before landing in the DLQ, want %d", len(got), maxReconsume+1)
	}
	for n := 2; n <= len(got); n++ {
		checkRedelivery(t, group, topic, sent, got[0].msg, n, got[n-1].msg)
		delay := shortLevels[3+(n-2)-1] // retry n−1 uses level 3 + (n−2)
		gap := got[n-1].at.Sub(got[n-2].at)
		if gap < delay-earlyTolerance || gap > delay+lateLimit {
			t.Errorf("delivery %d came %v after delivery %d, want %v..%v (level %d)", n, gap, n-1, delay, delay+lateLimit, 3+n-2)
		}
		t.Logf("delivery %d (reconsumeTimes %d) %v after the previous one (level %d = %v)",
			n, got[n-1].msg.ReconsumeTimes, gap.Round(time.Millisecond), 3+n-2, delay)
	}

	if len(dead) != 1 {
		t.Fatalf("%s%s holds %d messages, want 1", dlqTopicPrefix, group, len(dead))
	}
	d := dead[0]
	checks := []struct {
		what      string
		got, want string
	}{
		{"topic", d.Topic, dlqTopicPrefix + group},
		{"queueId", strconv.Itoa(d.Queue.QueueId), "0"},
		{"reconsumeTimes", strconv.Itoa(int(d.ReconsumeTimes)), strconv.Itoa(maxReconsume + 1)},
		{"body", string(d.Body), string(bodyFor(probe.id))},
		{"tags", d.GetTags(), "TagDLQ"},
		{"keys", d.GetKeys(), "dlq-key"},
		{"msgId (UNIQ_KEY)", d.MsgId, sent.MsgID},
		{"bornTimestamp", strconv.FormatInt(d.BornTimestamp, 10), strconv.FormatInt(got[0].msg.BornTimestamp, 10)},
		{"RETRY_TOPIC", d.GetProperty(primitive.PropertyRetryTopic), topic},
		{"ORIGIN_MESSAGE_ID", d.GetProperty(primitive.PropertyOriginMessageId), sent.OffsetMsgID},
		{idProp, d.GetProperty(idProp), probe.id},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("dead letter: %s = %q, want %q", c.what, c.got, c.want)
		}
	}

	route := waitRoute(t, p, dlqTopicPrefix+group)
	if qd := route.QueueDatas[0]; qd.Perm != dlqPerm || qd.ReadQueueNums != 1 || qd.WriteQueueNums != 1 {
		t.Errorf("%s%s route: perm %d, queues %d/%d; want perm %d and 1/1", dlqTopicPrefix, group, qd.Perm, qd.ReadQueueNums, qd.WriteQueueNums, dlqPerm)
	}
}
