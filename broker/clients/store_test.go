package clients

import (
	"bytes"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil/storetest"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

// withStore opens a small real store for the env's broker.
func (e *clientTestEnv) withStore() *store.Store {
	e.t.Helper()
	st := storetest.TempStore(e.t, e.dir, func(o *store.Options) { o.Clock = e.clk })
	e.s.store = st
	return st
}

// put stores n messages in topic/queue and waits until they are dispatched.
func (e *clientTestEnv) put(topic string, queueID int32, n int) []*store.PutResult {
	e.t.Helper()
	var out []*store.PutResult
	for i := range n {
		res, err := e.s.store.PutMessage(&message.Message{
			Topic: topic, QueueID: queueID, Body: []byte("m" + strconv.Itoa(i)),
			BornTimestamp: e.clk.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("127.0.0.1:50000"),
		})
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, res)
	}
	want := out[len(out)-1].QueueOffset + 1
	e.waitFor("dispatch", func() bool { return e.s.store.MaxOffsetInQueue(topic, queueID) >= want })
	return out
}

func TestGetConsumeStats(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	env.withStore()
	env.topics.create("T", 2, topicgroup.PermRead|topicgroup.PermWrite)
	env.topics.create("U", 1, topicgroup.PermRead|topicgroup.PermWrite)
	env.put("T", 0, 3)
	env.clk.Advance(time.Second)
	env.put("U", 0, 1)
	env.s.Offsets.Commit("G", "T", 0, 2)
	env.s.Offsets.Commit("G", "U", 0, 1)
	env.s.Offsets.Commit("G", "gone", 0, 1) // topic unknown to the broker: skipped
	ts := strconv.FormatInt(clientTestEpoch.UnixMilli(), 10)
	tsU := strconv.FormatInt(env.clk.Now().UnixMilli(), 10)

	const q0T = `{"brokerName":"broker-a","queueId":0,"topic":"T"}`
	const q1T = `{"brokerName":"broker-a","queueId":1,"topic":"T"}`
	const q0U = `{"brokerName":"broker-a","queueId":0,"topic":"U"}`
	entryT := q0T + `:{"brokerOffset":3,"consumerOffset":2,"lastTimestamp":` + ts + `},` +
		q1T + `:{"brokerOffset":0,"consumerOffset":0,"lastTimestamp":0}`
	entryU := q0U + `:{"brokerOffset":1,"consumerOffset":1,"lastTimestamp":` + tsU + `}`

	admin := env.client("admin")
	tests := []struct {
		name       string
		ext        map[string]string
		subscribed []string // topics an online member of G subscribes to
		want       string
	}{
		{name: "one topic", ext: map[string]string{"consumerGroup": "G", "topic": "T"},
			want: `{"consumeTps":0.0,"offsetTable":{` + entryT + `}}`},
		{name: "every topic with offsets", ext: map[string]string{"consumerGroup": "G"},
			want: `{"consumeTps":0.0,"offsetTable":{` + entryT + `,` + entryU + `}}`},
		{name: "online group skips topics it does not subscribe", ext: map[string]string{"consumerGroup": "G", "topic": ""},
			subscribed: []string{"U"}, want: `{"consumeTps":0.0,"offsetTable":{` + entryU + `}}`},
		{name: "unknown group", ext: map[string]string{"consumerGroup": "nobody"},
			want: `{"consumeTps":0.0,"offsetTable":{}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.subscribed != nil {
				member := env.client("member")
				member.heartbeat([]string{"G"}, tc.subscribed...)
				t.Cleanup(func() {
					member.cl.Close()
					env.waitFor("member gone", func() bool { return env.s.Consumers.SubscriptionCount("G") == 0 })
				})
			}
			resp := admin.invoke(remoting.GetConsumeStats, tc.ext, nil)
			clExpectCode(t, resp, remoting.Success, "")
			if string(resp.Body) != tc.want {
				t.Fatalf("body\n%s\nwant\n%s", resp.Body, tc.want)
			}
		})
	}
	clExpectCode(t, admin.invoke(remoting.GetConsumeStats, map[string]string{"topic": "T"}, nil), remoting.SystemError, "")
}

func TestEncodeConsumeStatsEscapes(t *testing.T) {
	got := encodeConsumeStats([]consumeStatsEntry{
		{mq: remoting.MessageQueue{BrokerName: `b"1`, QueueID: 1, Topic: "T"}, off: offsetWrapper{BrokerOffset: 1}},
		{mq: remoting.MessageQueue{BrokerName: `b"1`, QueueID: 0, Topic: "T"}},
	}, 12.5)
	want := `{"consumeTps":12.5,"offsetTable":{{"brokerName":"b\"1","queueId":0,"topic":"T"}:{"brokerOffset":0,"consumerOffset":0,"lastTimestamp":0},` +
		`{"brokerName":"b\"1","queueId":1,"topic":"T"}:{"brokerOffset":1,"consumerOffset":0,"lastTimestamp":0}}}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestConsumeMessageDirectlyForwardsTheStoredMessage(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	st := env.withStore()
	res := env.put("T", 0, 2)
	record, err := st.LookMessageByOffset(res[1].PhysicalOffset)
	if err != nil {
		t.Fatal(err)
	}
	consumer, admin := env.client("A"), env.client("admin")
	consumer.answer = func(req *remoting.Command) *remoting.Command {
		if req.Code != remoting.ConsumeMessageDirectly {
			return nil
		}
		code := remoting.Success
		if !bytes.Equal(req.Body, record) || req.ExtFields["brokerName"] != "broker-a" {
			code = remoting.SystemError
		}
		return remoting.NewResponse(req, code, "")
	}
	consumer.heartbeat([]string{"G"}, "T")

	ext := map[string]string{"consumerGroup": "G", "clientId": "A", "msgId": res[1].MsgID(0)}
	clExpectCode(t, admin.invoke(remoting.ConsumeMessageDirectly, ext, nil), remoting.Success, "")

	ext["msgId"] = message.CreateMessageID(netip.MustParseAddrPort("127.0.0.1:10911"), st.MaxPhyOffset()+1000)
	if resp := admin.invoke(remoting.ConsumeMessageDirectly, ext, nil); resp.Code != remoting.SystemError {
		t.Fatalf("missing message: code %d %q", resp.Code, resp.Remark)
	}
}
