package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rmqio/rmq/integration/harness"
	"github.com/rmqio/rmq/remoting"
)

// Deadlines. A new Go push consumer may need a rebalance round (up to ~20 s)
// before it pulls, so consumption deadlines are generous; every wait returns
// as soon as its condition holds.
const (
	consumeTimeout = 60 * time.Second
	routeTimeout   = 35 * time.Second
	sendTimeout    = 10 * time.Second
)

// idProp is the user property carrying each test message's identity.
const idProp = "itid"

var nameSeq atomic.Int64

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// uniqueName builds a topic, group or instance name unique to this test run:
// only characters topics allow, well under the 127-character limit.
func uniqueName(t *testing.T, kind string) string {
	base := unsafeName.ReplaceAllString(strings.TrimPrefix(t.Name(), "Test"), "_")
	if len(base) > 40 {
		base = base[:40]
	}
	return fmt.Sprintf("it_%s_%s_%s_%d", kind, base, strconv.FormatInt(time.Now().UnixNano(), 36), nameSeq.Add(1))
}

// newProducer starts a producer with a unique group and instance name (the Go
// client shares one internal client per instance name, and refuses a second
// name server list under the same name).
func newProducer(t *testing.T, ns string, opts ...producer.Option) (rocketmq.Producer, func()) {
	t.Helper()
	base := []producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName(uniqueName(t, "pg")),
		producer.WithInstanceName(uniqueName(t, "pi")),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(5 * time.Second),
	}
	p, err := rocketmq.NewProducer(append(base, opts...)...)
	if err != nil {
		t.Fatalf("new producer: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("start producer: %v", err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if err := p.Shutdown(); err != nil {
				t.Errorf("producer shutdown: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return p, stop
}

// testMsg builds a message carrying its identity in idProp.
func testMsg(topic, id string, body []byte) *primitive.Message {
	m := primitive.NewMessage(topic, body)
	m.WithProperty(idProp, id)
	return m
}

// sendAll sends msgs one by one with SendSync and returns their results.
func sendAll(t *testing.T, p rocketmq.Producer, msgs []*primitive.Message) []*primitive.SendResult {
	t.Helper()
	res := make([]*primitive.SendResult, len(msgs))
	for i, m := range msgs {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		r, err := p.SendSync(ctx, m)
		cancel()
		if err != nil {
			t.Fatalf("send %s: %v", m.GetProperty(idProp), err)
		}
		if r.Status != primitive.SendOK {
			t.Fatalf("send %s: status %d, want SEND_OK", m.GetProperty(idProp), r.Status)
		}
		res[i] = r
	}
	return res
}

// makeMsgs builds n messages id prefix-0..n-1 with bodies "<id> payload".
func makeMsgs(topic, prefix string, n int) ([]*primitive.Message, []string) {
	msgs := make([]*primitive.Message, n)
	ids := make([]string, n)
	for i := range msgs {
		ids[i] = fmt.Sprintf("%s-%d", prefix, i)
		msgs[i] = testMsg(topic, ids[i], bodyFor(ids[i]))
	}
	return msgs, ids
}

func bodyFor(id string) []byte { return []byte(id + " payload") }

// collector records every message a consumer hands to the application.
type collector struct {
	mu    sync.Mutex
	byID  map[string][]*primitive.MessageExt
	order []*primitive.MessageExt
}

func newCollector() *collector { return &collector{byID: make(map[string][]*primitive.MessageExt)} }

func (c *collector) add(m *primitive.MessageExt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := m.GetProperty(idProp)
	c.byID[id] = append(c.byID[id], m)
	c.order = append(c.order, m)
}

func (c *collector) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byID[id])
}

func (c *collector) first(id string) *primitive.MessageExt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.byID[id]; len(l) > 0 {
		return l[0]
	}
	return nil
}

func (c *collector) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.order)
}

// all returns the received messages in arrival order.
func (c *collector) all() []*primitive.MessageExt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*primitive.MessageExt(nil), c.order...)
}

// dups returns id → times received, for ids received more than once.
func (c *collector) dups() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int)
	for id, l := range c.byID {
		if len(l) > 1 {
			out[id] = len(l)
		}
	}
	return out
}

// missingFromAll lists the ids that none of cs received.
func missingFromAll(ids []string, cs ...*collector) []string {
	var miss []string
	for _, id := range ids {
		got := false
		for _, c := range cs {
			if c.count(id) > 0 {
				got = true
				break
			}
		}
		if !got {
			miss = append(miss, id)
		}
	}
	return miss
}

// waitAll waits until every id was received by the union of cs.
func waitAll(t *testing.T, timeout time.Duration, ids []string, cs ...*collector) {
	t.Helper()
	harness.WaitFor(t, timeout, func() error {
		if miss := missingFromAll(ids, cs...); len(miss) > 0 {
			return fmt.Errorf("%d of %d messages not consumed, e.g. %v", len(miss), len(ids), miss[:min(len(miss), 5)])
		}
		return nil
	})
}

// consumerConf describes one push consumer.
type consumerConf struct {
	group    string
	topic    string
	selector consumer.MessageSelector // zero value: all tags
	opts     []consumer.Option
}

// startConsumer starts a push consumer that records into col and acknowledges
// every message. The returned stop shuts it down (persisting offsets); it also
// runs at cleanup.
func startConsumer(t *testing.T, ns string, cc consumerConf, col *collector) func() {
	t.Helper()
	return startConsumerFunc(t, ns, cc, func(m *primitive.MessageExt) { col.add(m) })
}

// startConsumerFunc is startConsumer calling fn for each message instead.
func startConsumerFunc(t *testing.T, ns string, cc consumerConf, fn func(*primitive.MessageExt)) func() {
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
		for _, m := range msgs {
			fn(m)
		}
		return consumer.ConsumeSuccess, nil
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

// rawClient is a remoting client closed at cleanup.
func rawClient(t *testing.T) *remoting.Client {
	c := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(c.Close)
	return c
}

// waitRoute waits until the name server serves a route for topic that names
// the broker at brokerAddr with readable and writable queues. Consumers fail
// to start without one.
func waitRoute(t *testing.T, p *harness.Process, topic string) *remoting.TopicRouteData {
	t.Helper()
	cl := rawClient(t)
	var route remoting.TopicRouteData
	harness.WaitFor(t, routeTimeout, func() error {
		req := remoting.NewRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": topic}, nil)
		resp, err := cl.InvokeTimeout(p.NamesrvAddr(), req, 3*time.Second)
		if err != nil {
			return err
		}
		if resp.Code != remoting.Success {
			return fmt.Errorf("GET_ROUTEINFO_BY_TOPIC %s: code %d %q", topic, resp.Code, resp.Remark)
		}
		route = remoting.TopicRouteData{}
		if err := remoting.UnmarshalBody(resp.Body, &route); err != nil {
			return fmt.Errorf("route body %q: %w", resp.Body, err)
		}
		if len(route.QueueDatas) == 0 || route.QueueDatas[0].ReadQueueNums == 0 || route.QueueDatas[0].WriteQueueNums == 0 {
			return fmt.Errorf("route of %s has no queues: %s", topic, resp.Body)
		}
		for _, bd := range route.BrokerDatas {
			if bd.BrokerAddrs[0] == p.BrokerAddr() {
				return nil
			}
		}
		return fmt.Errorf("route of %s does not name master %s: %s", topic, p.BrokerAddr(), resp.Body)
	})
	return &route
}

// consumerIDs asks the broker for the client ids of a consumer group.
func consumerIDs(cl *remoting.Client, brokerAddr, group string) ([]string, error) {
	req := remoting.NewRequest(remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": group}, nil)
	resp, err := cl.InvokeTimeout(brokerAddr, req, 3*time.Second)
	if err != nil {
		return nil, err
	}
	if resp.Code != remoting.Success {
		return nil, fmt.Errorf("GET_CONSUMER_LIST_BY_GROUP %s: code %d %q", group, resp.Code, resp.Remark)
	}
	var body remoting.ConsumerListBody
	if err := remoting.UnmarshalBody(resp.Body, &body); err != nil {
		return nil, fmt.Errorf("consumer list body %q: %w", resp.Body, err)
	}
	sort.Strings(body.ConsumerIDList)
	return body.ConsumerIDList, nil
}

// waitConsumers waits until the broker knows n clients of group.
func waitConsumers(t *testing.T, p *harness.Process, group string, n int) {
	t.Helper()
	cl := rawClient(t)
	harness.WaitFor(t, routeTimeout, func() error {
		ids, err := consumerIDs(cl, p.BrokerAddr(), group)
		if err != nil {
			return err
		}
		if len(ids) != n {
			return fmt.Errorf("group %s has %d consumers %v, want %d", group, len(ids), ids, n)
		}
		return nil
	})
}

// checkOffsetMsgID verifies a server message id: 32 uppercase hex characters
// encoding the store host 127.0.0.1, the broker port and a commitlog offset.
func checkOffsetMsgID(id string, brokerPort int) error {
	if len(id) != 32 {
		return fmt.Errorf("offset msg id %q: length %d, want 32", id, len(id))
	}
	for _, r := range id {
		if !(r >= '0' && r <= '9' || r >= 'A' && r <= 'F') {
			return fmt.Errorf("offset msg id %q: not uppercase hex", id)
		}
	}
	if id[:8] != "7F000001" {
		return fmt.Errorf("offset msg id %q: store ip %s, want 7F000001 (127.0.0.1)", id, id[:8])
	}
	port, _ := strconv.ParseUint(id[8:16], 16, 32)
	if int(port) != brokerPort {
		return fmt.Errorf("offset msg id %q: store port %d, want %d", id, port, brokerPort)
	}
	return nil
}

// checkContiguousQueues verifies that the queue offsets received per queue
// form the gapless range 0..n-1: after a restart or a crash the consume
// queues must be rebuilt without holes. Call it once the last message sent to
// every queue has arrived, so every earlier offset has been delivered.
func checkContiguousQueues(t *testing.T, msgs []*primitive.MessageExt) {
	t.Helper()
	seen := make(map[int]map[int64]bool)
	for _, m := range msgs {
		q := m.Queue.QueueId
		if seen[q] == nil {
			seen[q] = make(map[int64]bool)
		}
		seen[q][m.QueueOffset] = true
	}
	for q, offs := range seen {
		for o := int64(0); o < int64(len(offs)); o++ {
			if !offs[o] {
				t.Errorf("queue %d: offset %d never delivered, though %d distinct offsets were", q, o, len(offs))
				break
			}
		}
	}
}

// removeLocalOffsets deletes the Go client's broadcasting offset files of
// group at cleanup. The client writes them under
// $HOME/.rocketmq_client_go/<group>/<clientID>/offset.json (its source names
// the path the other way round; both layouts are removed).
func removeLocalOffsets(t *testing.T, group string) {
	t.Cleanup(func() {
		root := filepath.Join(os.Getenv("HOME"), ".rocketmq_client_go")
		os.RemoveAll(filepath.Join(root, group))
		dirs, _ := filepath.Glob(filepath.Join(root, "*", group))
		for _, d := range dirs {
			os.RemoveAll(d)
			os.Remove(filepath.Dir(d)) // the client-id directory, when now empty
		}
		os.Remove(root) // only when nothing else is kept there
	})
}

// waitCommitted waits until the broker holds, for every queue of topic, a
// committed offset of group equal to the queue's max offset. The Go client
// updates its offset table only after a consume callback returns and sends it
// every 5 s and at shutdown, so a test that stops a consumer right after its
// callbacks saw the last message can lose the final offsets in the client —
// not in the broker. Waiting here makes "committed before" a fact on the
// broker side.
func waitCommitted(t *testing.T, p *harness.Process, group, topic string, queues int) {
	t.Helper()
	cl := rawClient(t)
	harness.WaitFor(t, consumeTimeout, func() error {
		maxes, err := queueMaxOffsets(cl, p.BrokerAddr(), topic, queues)
		if err != nil {
			return err
		}
		for q := 0; q < queues; q++ {
			req := remoting.NewRequest(remoting.QueryConsumerOffset, map[string]string{
				"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(q)}, nil)
			resp, err := cl.InvokeTimeout(p.BrokerAddr(), req, 3*time.Second)
			if err != nil {
				return err
			}
			if resp.Code != remoting.Success {
				return fmt.Errorf("QUERY_CONSUMER_OFFSET %s/%d: code %d %q", topic, q, resp.Code, resp.Remark)
			}
			if off := resp.ExtFields["offset"]; off != strconv.FormatInt(maxes[q], 10) {
				return fmt.Errorf("group %s queue %d: committed offset %s, max offset %d", group, q, off, maxes[q])
			}
		}
		return nil
	})
}

// startPullConsumer starts a stock pull consumer of group subscribed to
// topic (all tags); it shuts down with the test.
func startPullConsumer(t *testing.T, ns, group, topic string) rocketmq.PullConsumer {
	t.Helper()
	pc, err := rocketmq.NewPullConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		consumer.WithGroupName(group), consumer.WithInstance(uniqueName(t, "pi")))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Shutdown() })
	return pc
}
