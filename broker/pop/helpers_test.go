package pop_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/broker/pop"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

const (
	group = "PopGroup"
	cl    = "DefaultCluster"
)

// env is a broker on a manual clock.
type env struct {
	*testbroker.Broker
	t   *testing.T
	clk *clock.Manual
}

func startEnv(t *testing.T, mutate func(*broker.Options)) *env {
	t.Helper()
	clk := clock.NewManual(time.Now().Truncate(time.Millisecond))
	o := testbroker.Options(t, func(o *broker.Options) {
		o.Clock = clk
		if mutate != nil {
			mutate(o)
		}
	})
	return &env{Broker: testbroker.Start(t, o), t: t, clk: clk}
}

func (e *env) restart() {
	e.t.Helper()
	e.Broker = e.Broker.Restart()
}

func (e *env) createTopic(topic string, queues int) {
	e.t.Helper()
	resp := e.Invoke(remoting.UpdateAndCreateTopic, brokertest.CreateTopicExt(topic, queues, 6, "SINGLE_TAG"), nil)
	if resp.Code != remoting.Success {
		e.t.Fatalf("create topic: %d %s", resp.Code, resp.Remark)
	}
}

func (e *env) send(topic string, qid int32, body string) {
	e.t.Helper()
	e.MustSend(brokertest.Send{Topic: topic, QueueID: qid, Body: []byte(body), Props: brokertest.Props("TAGS", "a")})
}

func (e *env) popReq(topic string, qid int32, maxMsgs int, invisibleMs int64, extra map[string]string) map[string]string {
	ext := map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(qid)), "maxMsgNums": strconv.Itoa(maxMsgs),
		"invisibleTime": strconv.FormatInt(invisibleMs, 10), "pollTime": "0",
		"bornTime": strconv.FormatInt(e.clk.Now().UnixMilli(), 10), "initMode": "0",
	}
	for k, v := range extra {
		ext[k] = v
	}
	return ext
}

// popped is a popped message with the handle a client builds for it.
type popped struct {
	ext    *message.MessageExt
	handle string
	topic  string // the topic to ack with (the retry topic for a redelivery)
}

func (p popped) body() string { return string(p.ext.Body) }

// pop pops and builds the handles as MQClientAPIImpl.processPopResponse.
func (e *env) pop(topic string, qid int32, maxMsgs int, invisibleMs int64, extra map[string]string) ([]popped, *remoting.Command) {
	e.t.Helper()
	resp := e.Invoke(remoting.PopMessage, e.popReq(topic, qid, maxMsgs, invisibleMs, extra), nil)
	return e.decodePop(topic, resp), resp
}

func (e *env) decodePop(topic string, resp *remoting.Command) []popped {
	e.t.Helper()
	if resp.Code != remoting.Success {
		return nil
	}
	starts := map[string]string{}
	for _, part := range strings.Split(resp.ExtFields["startOffsetInfo"], ";") {
		f := strings.Split(part, " ")
		if len(f) != 3 {
			e.t.Fatalf("startOffsetInfo %q", resp.ExtFields["startOffsetInfo"])
		}
		starts[f[0]+"@"+f[1]] = f[2]
	}
	var out []popped
	for _, m := range brokertest.Records(e.t, resp.Body) {
		if m.Topic != topic {
			e.t.Fatalf("popped message has topic %q, want %q", m.Topic, topic)
		}
		p := popped{ext: m, topic: topic}
		if ck := m.Properties[pop.PropPopCK]; ck != "" {
			p.handle = ck
			h, err := pop.ParseHandle(ck)
			if err != nil {
				e.t.Fatal(err)
			}
			p.topic = h.RealTopic(topic, group)
		} else {
			start, ok := starts["0@"+strconv.Itoa(int(m.QueueID))]
			if !ok {
				e.t.Fatalf("no startOffsetInfo for queue %d: %q", m.QueueID, resp.ExtFields["startOffsetInfo"])
			}
			p.handle = strings.Join([]string{start, resp.ExtFields["popTime"], resp.ExtFields["invisibleTime"],
				resp.ExtFields["reviveQid"], "0", e.Opts.BrokerName, strconv.Itoa(int(m.QueueID)),
				strconv.FormatInt(m.QueueOffset, 10)}, " ")
		}
		out = append(out, p)
	}
	return out
}

func (e *env) ackResp(p popped) *remoting.Command {
	e.t.Helper()
	return e.Invoke(remoting.AckMessage, map[string]string{
		"consumerGroup": group, "topic": p.topic, "queueId": strconv.Itoa(int(p.ext.QueueID)),
		"extraInfo": p.handle, "offset": strconv.FormatInt(p.ext.QueueOffset, 10),
	}, nil)
}

func (e *env) ack(p popped) {
	e.t.Helper()
	if resp := e.ackResp(p); resp.Code != remoting.Success {
		e.t.Fatalf("ack %s: %d %s", p.body(), resp.Code, resp.Remark)
	}
}

// reviveMax is the number of records on the revive queue (after dispatch
// caught up).
func (e *env) reviveMax() int64 {
	e.t.Helper()
	e.WaitDispatched()
	return e.Store().MaxOffsetInQueue(pop.ReviveTopic(cl), 0)
}

// advance moves the clock and waits until the revive queue holds want
// records and the reader has acted on all of them.
func (e *env) advanceAndSettle(d time.Duration, want int64) {
	e.t.Helper()
	e.clk.Advance(d)
	testutil.WaitFor(e.t, testutil.DefaultTimeout, func() bool {
		st := e.Pop().Stats()
		n := e.Store().MaxOffsetInQueue(pop.ReviveTopic(cl), 0)
		return n >= want && st.ReadPos >= n && st.Due == 0 && e.Store().DispatchBehind() == 0
	}, "revive queue to settle")
}

func bodies(ps []popped) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.body()
	}
	return out
}

func decodeRecords(t *testing.T, body []byte) []*message.MessageExt {
	return brokertest.Records(t, body)
}
