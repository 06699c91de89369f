package integration

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rmqio/rmq/integration/harness"
)

// TestClusteringSharesQueues runs two push consumers of one group. While the
// group forms, rebalancing may deliver a message twice; once both instances
// consume disjoint queues, every message must arrive exactly once overall.
func TestClusteringSharesQueues(t *testing.T) {
	p := sharedRMQ(t)
	topic, group := uniqueName(t, "t"), uniqueName(t, "cg")
	prod, _ := newProducer(t, p.NamesrvAddr())
	seed, seedIDs := makeMsgs(topic, "seed", 1)
	sendAll(t, prod, seed)
	waitRoute(t, p, topic)

	c1, c2 := newCollector(), newCollector()
	startConsumer(t, p.NamesrvAddr(), consumerConf{group: group, topic: topic}, c1)
	startConsumer(t, p.NamesrvAddr(), consumerConf{group: group, topic: topic}, c2)
	waitConsumers(t, p, group, 2)

	// Phase 1: send rounds until one round was consumed exactly once with
	// both instances taking part, i.e. the queues are split.
	all := append([]string(nil), seedIDs...)
	round := 0
	harness.WaitFor(t, consumeTimeout, func() error {
		msgs, ids := makeMsgs(topic, fmt.Sprintf("r%d", round), 8)
		round++
		sendAll(t, prod, msgs)
		all = append(all, ids...)
		if err := harness.Poll(10*time.Second, func() error {
			if miss := missingFromAll(ids, c1, c2); len(miss) > 0 {
				return fmt.Errorf("round %d: %v not consumed", round-1, miss)
			}
			return nil
		}); err != nil {
			return err
		}
		one, two := 0, 0
		for _, id := range ids {
			n1, n2 := c1.count(id), c2.count(id)
			if n1+n2 != 1 {
				return fmt.Errorf("round %d: %s consumed %d+%d times", round-1, id, n1, n2)
			}
			one += n1
			two += n2
		}
		if one == 0 || two == 0 {
			return fmt.Errorf("round %d consumed by one instance only (%d/%d)", round-1, one, two)
		}
		return nil
	})
	waitAll(t, consumeTimeout, all, c1, c2)
	dups := 0
	for _, id := range all {
		if n := c1.count(id) + c2.count(id); n > 1 {
			dups += n - 1
		}
	}
	t.Logf("group formed after %d rounds; %d duplicate deliveries while rebalancing", round, dups)

	// Phase 2: the group is stable.
	msgs, ids := makeMsgs(topic, "stable", 40)
	sendAll(t, prod, msgs)
	waitAll(t, consumeTimeout, ids, c1, c2)
	var twice []string
	one, two := 0, 0
	for _, id := range ids {
		n1, n2 := c1.count(id), c2.count(id)
		if n1+n2 != 1 {
			twice = append(twice, fmt.Sprintf("%s×%d+%d", id, n1, n2))
		}
		one += n1
		two += n2
	}
	if len(twice) > 0 {
		t.Errorf("stable group delivered messages more than once: %v", twice)
	}
	if one == 0 || two == 0 {
		t.Errorf("stable group: instance 1 consumed %d, instance 2 consumed %d; want both > 0", one, two)
	}
	queues := func(c *collector) map[int]bool {
		qs := make(map[int]bool)
		for _, m := range c.all() {
			if strings.HasPrefix(m.GetProperty(idProp), "stable-") {
				qs[m.Queue.QueueId] = true
			}
		}
		return qs
	}
	for q := range queues(c1) {
		if queues(c2)[q] {
			t.Errorf("queue %d consumed by both instances after the group was stable", q)
		}
	}
}

// TestBroadcastingEachGetsAll runs two broadcasting consumers of one group:
// each must receive every message exactly once.
func TestBroadcastingEachGetsAll(t *testing.T) {
	p := sharedRMQ(t)
	topic, group := uniqueName(t, "t"), uniqueName(t, "cg")
	removeLocalOffsets(t, group)
	prod, _ := newProducer(t, p.NamesrvAddr())
	seed, ids := makeMsgs(topic, "seed", 1)
	sendAll(t, prod, seed)
	waitRoute(t, p, topic)

	cols := []*collector{newCollector(), newCollector()}
	for _, c := range cols {
		startConsumer(t, p.NamesrvAddr(), consumerConf{group: group, topic: topic,
			opts: []consumer.Option{consumer.WithConsumerModel(consumer.BroadCasting)}}, c)
	}
	msgs, more := makeMsgs(topic, "m", 20)
	sendAll(t, prod, msgs)
	ids = append(ids, more...)
	for i, c := range cols {
		waitAll(t, consumeTimeout, ids, c)
		if d := c.dups(); len(d) > 0 {
			t.Errorf("instance %d received duplicates: %v", i+1, d)
		}
	}
}

// TestTagFilter subscribes to "TagA || TagC" and checks that exactly those
// messages arrive.
func TestTagFilter(t *testing.T) {
	p := sharedRMQ(t)
	topic := uniqueName(t, "t")
	prod, _ := newProducer(t, p.NamesrvAddr())
	seed, _ := makeMsgs(topic, "seed", 1)
	seed[0].WithTag("TagB")
	sendAll(t, prod, seed)
	waitRoute(t, p, topic)

	tags := []string{"TagA", "TagB", "TagC", "TagD", ""}
	var msgs []*primitive.Message
	var want []string
	for i := 0; i < 40; i++ {
		tag := tags[i%len(tags)]
		id := fmt.Sprintf("m%d-%s", i, tag)
		m := testMsg(topic, id, bodyFor(id))
		if tag != "" {
			m.WithTag(tag)
		}
		msgs = append(msgs, m)
		if tag == "TagA" || tag == "TagC" {
			want = append(want, id)
		}
	}
	// Four more TagC messages: the round-robin selector puts one in each of
	// the four queues, so once they arrive every earlier message of every
	// queue has been passed over.
	for i := 0; i < 4; i++ {
		id := fmt.Sprintf("fence%d-TagC", i)
		m := testMsg(topic, id, bodyFor(id))
		m.WithTag("TagC")
		msgs = append(msgs, m)
		want = append(want, id)
	}
	sendAll(t, prod, msgs)

	col := newCollector()
	startConsumer(t, p.NamesrvAddr(), consumerConf{group: uniqueName(t, "cg"), topic: topic,
		selector: consumer.MessageSelector{Type: consumer.TAG, Expression: "TagA || TagC"}}, col)
	waitAll(t, consumeTimeout, want, col)
	for _, m := range col.all() {
		if tag := m.GetTags(); tag != "TagA" && tag != "TagC" {
			t.Errorf("received %s with tag %q", m.GetProperty(idProp), tag)
		}
	}
	if d := col.dups(); len(d) > 0 {
		t.Errorf("duplicates: %v", d)
	}
}

// TestOrderlyPerKey sends interleaved sequences for several keys through a
// hash queue selector and consumes them with an orderly consumer: each key's
// messages share one queue and arrive in send order.
func TestOrderlyPerKey(t *testing.T) {
	p := sharedRMQ(t)
	topic := uniqueName(t, "t")
	seedProd, stopSeed := newProducer(t, p.NamesrvAddr())
	seed, _ := makeMsgs(topic, "seed", 1)
	sendAll(t, seedProd, seed)
	stopSeed()
	waitRoute(t, p, topic)
	// A producer created after the route exists selects among the topic's own
	// queues from its first send, so a key never moves between queues.
	prod, _ := newProducer(t, p.NamesrvAddr(), producer.WithQueueSelector(producer.NewHashQueueSelector()))

	const keys, perKey = 6, 20
	var msgs []*primitive.Message
	var ids []string
	for seq := 0; seq < perKey; seq++ {
		for k := 0; k < keys; k++ {
			id := fmt.Sprintf("k%d-%d", k, seq)
			m := testMsg(topic, id, bodyFor(id))
			m.WithShardingKey(fmt.Sprintf("key-%d", k))
			m.WithProperty("seq", strconv.Itoa(seq))
			msgs = append(msgs, m)
			ids = append(ids, id)
		}
	}
	sendAll(t, prod, msgs)

	var mu sync.Mutex
	got := make(map[string][]int)
	queueOf := make(map[string]map[int]bool)
	col := newCollector()
	startConsumerFunc(t, p.NamesrvAddr(), consumerConf{group: uniqueName(t, "cg"), topic: topic,
		opts: []consumer.Option{consumer.WithConsumerOrder(true)}}, func(m *primitive.MessageExt) {
		if m.GetProperty(idProp) != "seed-0" {
			key := m.GetShardingKey()
			seq, _ := strconv.Atoi(m.GetProperty("seq"))
			mu.Lock()
			got[key] = append(got[key], seq)
			if queueOf[key] == nil {
				queueOf[key] = make(map[int]bool)
			}
			queueOf[key][m.Queue.QueueId] = true
			mu.Unlock()
		}
		col.add(m)
	})
	waitAll(t, consumeTimeout, ids, col)
	mu.Lock()
	defer mu.Unlock()
	for k := 0; k < keys; k++ {
		key := fmt.Sprintf("key-%d", k)
		seqs := got[key]
		ok := len(seqs) == perKey
		for i := 0; ok && i < perKey; i++ {
			ok = seqs[i] == i
		}
		if !ok {
			t.Errorf("%s consumed in order %v, want 0..%d once each", key, seqs, perKey-1)
		}
		if len(queueOf[key]) != 1 {
			t.Errorf("%s stored in queues %v, want one", key, queueOf[key])
		}
	}
}

// TestResumeFromCommittedOffset consumes a first batch, waits until the
// broker holds the group's offsets for all of it, shuts the consumer down,
// sends a second batch and starts a new instance of the same group: it must
// get the second batch and none of the first.
func TestResumeFromCommittedOffset(t *testing.T) {
	p := sharedRMQ(t)
	topic, group := uniqueName(t, "t"), uniqueName(t, "cg")
	prod, _ := newProducer(t, p.NamesrvAddr())
	first, firstIDs := makeMsgs(topic, "first", 20)
	sendAll(t, prod, first)
	route := waitRoute(t, p, topic)

	c1 := newCollector()
	stop1 := startConsumer(t, p.NamesrvAddr(), consumerConf{group: group, topic: topic}, c1)
	waitAll(t, consumeTimeout, firstIDs, c1)
	queues := int(route.QueueDatas[0].ReadQueueNums)
	waitCommitted(t, p, group, topic, queues)
	stop1()

	second, secondIDs := makeMsgs(topic, "second", 20)
	sendAll(t, prod, second)
	c2 := newCollector()
	startConsumer(t, p.NamesrvAddr(), consumerConf{group: group, topic: topic}, c2)
	waitAll(t, consumeTimeout, secondIDs, c2)

	// Per queue, redelivered first-batch messages precede the second batch, so
	// they have all arrived by now.
	var again []string
	for _, id := range firstIDs {
		if c2.count(id) > 0 {
			again = append(again, id)
		}
	}
	if len(again) > 0 {
		t.Errorf("redelivered %d first-batch messages %v committed before the restart of the group", len(again), again)
	}
}
