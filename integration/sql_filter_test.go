package integration

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rmqio/rmq/filter"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/remoting"
)

// SQL92 filters with the stock Go client: a push consumer subscribing with
// consumer.SQL92 registers its expression by heartbeat and pulls without it;
// the broker (enablePropertyFilter=true) hands over only the matching
// messages and, with filterSupportRetry=true, filters the group's retry topic
// by the same expression.

// sqlFilterConf is the broker config of these tests.
func sqlFilterConf() []string {
	return []string{"enablePropertyFilter=true", "filterSupportRetry=true", levelsConf(shortLevels)}
}

// sqlMsg is a test message with the properties the expression reads.
func sqlMsg(topic, id, region string, price int) *primitive.Message {
	m := testMsg(topic, id, bodyFor(id))
	if region != "" {
		m.WithProperty("region", region)
	}
	if price >= 0 {
		m.WithProperty("price", strconv.Itoa(price))
	}
	return m
}

func TestSQL92PushConsumerMatchingSubset(t *testing.T) {
	t.Parallel()
	p := ownRMQ(t, sqlFilterConf()...)
	topic, group := uniqueName(t, "t"), uniqueName(t, "cg")
	retryTopic := retryTopicPrefix + group
	prod, _ := newProducer(t, p.NamesrvAddr())
	sendAll(t, prod, []*primitive.Message{testMsg(topic, "create", bodyFor("create"))})
	waitRoute(t, p, topic)
	prewarmRetryTopic(t, p, group, topic)

	// TAGS is a property too (and, as any property, NULL when absent, which
	// <> does not match); the warm-up messages must pass the filter.
	expr := fmt.Sprintf("(region IN ('eu', 'us') AND price > 10 AND (TAGS IS NULL OR TAGS <> 'skip')) OR %s = 'warm-%s'", idProp, group)
	probe := &retryProbe{id: "retry-me", failUntil: 1}
	col := newCollector()
	startWarmConsumerResult(t, p, prod.SendSync, consumerConf{group: group, topic: topic,
		selector: consumer.MessageSelector{Type: consumer.SQL92, Expression: expr}},
		func(m *primitive.MessageExt) consumer.ConsumeResult {
			col.add(m)
			return probe.consume(m)
		})

	var msgs []*primitive.Message
	var want []string
	for i := range 24 {
		id := "m-" + strconv.Itoa(i)
		region := []string{"eu", "us", "ap", ""}[i%4]
		price := i * 3 // 0..69
		if i%5 == 4 {
			price = -1 // no price property: never matches
		}
		m := sqlMsg(topic, id, region, price)
		if i%7 == 6 {
			m.WithTag("skip")
		}
		msgs = append(msgs, m)
		if (region == "eu" || region == "us") && price > 10 && i%7 != 6 {
			want = append(want, id)
		}
	}
	msgs = append(msgs, sqlMsg(topic, probe.id, "eu", 99))
	want = append(want, probe.id)
	sendAll(t, prod, msgs)

	// Straight into the retry topic (a raw send: the Go producer sends
	// maxReconsumeTimes 0, which turns a retry-topic send into a dead
	// letter): filtered by the expression of the original topic named in
	// RETRY_TOPIC.
	raw := brokertest.NewClient(t, p.BrokerAddr())
	for _, d := range []struct{ id, region string }{{"retry-direct-match", "us"}, {"retry-direct-nomatch", "ap"}} {
		raw.MustSend(brokertest.Send{Topic: retryTopic, Body: bodyFor(d.id), ReconsumeTimes: "0", MaxReconsumeTimes: "16",
			Props: brokertest.Props(idProp, d.id, "region", d.region, "price", "40", primitive.PropertyRetryTopic, topic)})
	}
	want = append(want, "retry-direct-match")

	waitAll(t, consumeTimeout, want, col)
	probe.waitDeliveries(t, 2, consumeTimeout)
	queues := int(waitRoute(t, p, topic).QueueDatas[0].ReadQueueNums)
	waitCommitted(t, p, group, topic, queues)
	waitCommitted(t, p, group, retryTopic, 1)

	var got []string
	for _, m := range col.all() {
		if id := m.GetProperty(idProp); id != "warm-"+group && !slices.Contains(got, id) {
			got = append(got, id)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Fatalf("consumed %v\nwant %v", got, want)
	}
	if n := col.count(probe.id); n != 2 {
		t.Errorf("%s delivered %d times, want 2 (once more from %s)", probe.id, n, retryTopic)
	}
	if d := probe.deliveries(); d[1].msg.Queue.Topic != retryTopic || d[1].msg.ReconsumeTimes != 1 {
		t.Errorf("second delivery of %s from %s with reconsumeTimes %d", probe.id, d[1].msg.Queue.Topic, d[1].msg.ReconsumeTimes)
	}
}

// TestSQL92BadExpression: a Go push consumer starts with an expression that
// does not compile (the Go client checks nothing), the broker keeps no filter
// for it and answers its pulls with FILTER_DATA_NOT_EXIST; the Java client's
// start-up check (CHECK_CLIENT_CONFIG) gets SUBSCRIPTION_PARSE_FAILED with the
// compiler's message.
func TestSQL92BadExpression(t *testing.T) {
	t.Parallel()
	p := ownRMQ(t, sqlFilterConf()...)
	topic, group := uniqueName(t, "t"), uniqueName(t, "cg")
	prod, _ := newProducer(t, p.NamesrvAddr())
	sendAll(t, prod, []*primitive.Message{sqlMsg(topic, "m", "eu", 50)})
	waitRoute(t, p, topic)

	const bad = "price > 10 AND region IN (1)"
	_, compileErr := filter.Compile(bad)
	if compileErr == nil {
		t.Fatalf("%q compiles", bad)
	}
	col := newCollector()
	startConsumer(t, p.NamesrvAddr(), consumerConf{group: group, topic: topic,
		selector: consumer.MessageSelector{Type: consumer.SQL92, Expression: bad}}, col)
	waitConsumers(t, p, group, 1)

	cl := rawClient(t)
	pull := remoting.NewRequest(remoting.PullMessage, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
		"sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subVersion": "0", "expressionType": "TAG",
	}, nil)
	resp, err := cl.InvokeTimeout(p.BrokerAddr(), pull, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != remoting.FilterDataNotExist || resp.Remark != "The broker's consumer filter data is not exist!Your expression may be wrong!" {
		t.Errorf("pull of the bad subscription: code %d %q, want 27", resp.Code, resp.Remark)
	}

	body, err := json.Marshal(map[string]any{"clientId": "it", "group": group, "subscriptionData": map[string]any{
		"topic": topic, "subString": bad, "expressionType": "SQL92", "subVersion": time.Now().UnixMilli(),
		"classFilterMode": false, "tagsSet": []string{}, "codeSet": []int{},
	}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err = cl.InvokeTimeout(p.BrokerAddr(), remoting.NewRequest(remoting.CheckClientConfig, nil, body), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != remoting.SubscriptionParseFailed || resp.Remark != compileErr.Error() {
		t.Errorf("CHECK_CLIENT_CONFIG: code %d %q, want 23 %q", resp.Code, resp.Remark, compileErr.Error())
	}
	if n := col.total(); n != 0 {
		t.Errorf("the consumer of a bad expression got %d messages", n)
	}
}
