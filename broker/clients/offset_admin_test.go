package clients

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// decodeOffsetTable reads a Map<MessageQueue, Long> body field.
func decodeOffsetTable(t *testing.T, body []byte) map[int32]int64 {
	t.Helper()
	var b struct {
		OffsetTable fastjson.Entries[remoting.MessageQueue, int64] `json:"offsetTable"`
	}
	if err := fastjson.Unmarshal(body, &b); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	out := map[int32]int64{}
	for _, e := range b.OffsetTable {
		if e.Key.BrokerName != "broker-a" || e.Key.Topic != "T" {
			t.Fatalf("queue %+v", e.Key)
		}
		out[e.Key.QueueID] = e.Value
	}
	return out
}

func TestResetOffsetByTime(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true, store: true})
	env.topics.create("T", 2, topicgroup.PermRead|topicgroup.PermWrite)
	env.put("T", 0, 3) // stored at epoch
	env.clk.Advance(10 * time.Second)
	env.put("T", 0, 2) // stored at epoch+10s
	env.put("T", 1, 1)
	env.s.Offsets.Commit("G", "T", 0, 4)
	env.s.Offsets.Commit("G", "T", 1, 1)
	admin := env.client("admin")
	reset := func(ts int64, force bool) *remoting.Command {
		return admin.invoke(remoting.InvokeBrokerToResetOffset, map[string]string{
			"topic": "T", "group": "G", "timestamp": strconv.FormatInt(ts, 10), "isForce": strconv.FormatBool(force)}, nil)
	}
	at10 := clientTestEpoch.Add(10 * time.Second).UnixMilli()

	// Nobody online: CONSUMER_NOT_ONLINE, on which mqadmin falls back.
	resp := reset(at10, true)
	clExpectCode(t, resp, remoting.ConsumerNotOnline, "Consumer not online, so can not reset offset, Group: G Topic: T Timestamp: "+strconv.FormatInt(at10, 10))

	c := env.client("c1")
	c.heartbeat([]string{"G"}, "T")
	// Not forced: only queues whose target is behind the group move.
	resp = reset(at10, false)
	clExpectCode(t, resp, remoting.Success, "")
	if got := decodeOffsetTable(t, resp.Body); got[0] != 3 || got[1] != 0 {
		t.Fatalf("unforced table %v, want q0→3, q1→0", got)
	}
	env.waitFor("the reset pushed to the client", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, r := range c.got {
			if r.Code == remoting.ResetConsumerClientOffset {
				return r.IsOneway() && r.ExtFields["group"] == "G" && decodeOffsetTable(t, r.Body)[0] == 3
			}
		}
		return false
	})
	if off, _ := env.s.Offsets.Query("G", "T", 0); off != 3 {
		t.Errorf("broker offset q0 %d, want 3", off)
	}
	// Forced to the end (-1): past every message.
	resp = reset(-1, true)
	clExpectCode(t, resp, remoting.Success, "")
	if got := decodeOffsetTable(t, resp.Body); got[0] != 5 || got[1] != 1 {
		t.Fatalf("forced table at -1: %v, want q0→5, q1→1", got)
	}
	// After the last message: the last message (getOffsetInQueueByTime).
	resp = reset(at10+60_000, true)
	if got := decodeOffsetTable(t, resp.Body); got[0] != 4 || got[1] != 0 {
		t.Fatalf("forced table after the last message: %v, want q0→4, q1→0", got)
	}
	// Before the first message: the queue's start.
	resp = reset(clientTestEpoch.UnixMilli()-60_000, true)
	if got := decodeOffsetTable(t, resp.Body); got[0] != 0 || got[1] != 0 {
		t.Fatalf("forced table before the first message: %v", got)
	}
	// Unknown group and topic.
	clExpectCode(t, admin.invoke(remoting.InvokeBrokerToResetOffset, map[string]string{"topic": "T", "group": "other", "timestamp": "-1", "isForce": "true"}, nil),
		remoting.SystemError, "THe consumer group <other> not exist")
	clExpectCode(t, admin.invoke(remoting.InvokeBrokerToResetOffset, map[string]string{"topic": "none", "group": "G", "timestamp": "-1", "isForce": "true"}, nil),
		remoting.SystemError, "[reset-offset] reset offset failed, no topic in this broker. topic=none")
}

func TestGetConsumerStatus(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true, store: true})
	env.topics.create("T", 1, topicgroup.PermRead|topicgroup.PermWrite)
	admin := env.client("admin")
	ask := func(clientAddr string) *remoting.Command {
		return admin.invoke(remoting.InvokeBrokerToGetConsumerStatus, map[string]string{"topic": "T", "group": "G", "clientAddr": clientAddr}, nil)
	}
	clExpectCode(t, ask(""), remoting.SystemError, "No Any Consumer online in the consumer group: [G]")
	for i, id := range []string{"c1", "c2"} {
		c := env.client(id)
		off := int64(10 * (i + 1))
		c.answer = func(req *remoting.Command) *remoting.Command {
			resp := remoting.NewResponse(req, remoting.Success, "")
			resp.Body = append(appendOffsetTable([]byte(`{"messageQueueTable":`),
				[]queueOffset{{remoting.MessageQueue{BrokerName: "broker-a", QueueID: 0, Topic: req.ExtFields["topic"]}, off}}), '}')
			return resp
		}
		c.heartbeat([]string{"G"}, "T")
	}
	const mq = `{"brokerName":"broker-a","queueId":0,"topic":"T"}`
	resp := ask("")
	clExpectCode(t, resp, remoting.Success, "")
	if want := `{"consumerTable":{"c1":{` + mq + `:10},"c2":{` + mq + `:20}},"messageQueueTable":{}}`; string(resp.Body) != want {
		t.Fatalf("body %s\nwant %s", resp.Body, want)
	}
	resp = ask("c2")
	if want := `{"consumerTable":{"c2":{` + mq + `:20}},"messageQueueTable":{}}`; string(resp.Body) != want {
		t.Fatalf("body for c2 %s", resp.Body)
	}
}

func TestQueryConsumeTimeSpan(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{store: true})
	env.topics.create("T", 2, topicgroup.PermRead|topicgroup.PermWrite)
	env.put("T", 0, 2) // epoch
	env.clk.Advance(5 * time.Second)
	env.put("T", 0, 1) // epoch+5s
	env.s.Offsets.Commit("G", "T", 0, 1)
	env.clk.Advance(5 * time.Second)
	resp := env.client("admin").invoke(remoting.QueryConsumeTimeSpan, map[string]string{"topic": "T", "group": "G"}, nil)
	clExpectCode(t, resp, remoting.Success, "")
	var body struct {
		ConsumeTimeSpanSet []queueTimeSpan `json:"consumeTimeSpanSet"`
	}
	if err := remoting.UnmarshalBody(resp.Body, &body); err != nil || len(body.ConsumeTimeSpanSet) != 2 {
		t.Fatalf("body %s: %v", resp.Body, err)
	}
	e := clientTestEpoch.UnixMilli()
	q0 := body.ConsumeTimeSpanSet[0]
	if q0.MinTimeStamp != e || q0.MaxTimeStamp != e+5000 || q0.ConsumeTimeStamp != e || q0.DelayTime != 10000 || q0.MessageQueue.QueueID != 0 {
		t.Errorf("queue 0 span %+v", q0)
	}
	// An empty queue without an offset: stock reads the store time of offset
	// -1 (-1) and reports now+1 as the delay.
	if q1 := body.ConsumeTimeSpanSet[1]; q1.MinTimeStamp != -1 || q1.MaxTimeStamp != -1 || q1.DelayTime != env.clk.Now().UnixMilli()+1 {
		t.Errorf("empty queue 1 span %+v", q1)
	}
	clExpectCode(t, env.client("admin2").invoke(remoting.QueryConsumeTimeSpan, map[string]string{"topic": "none", "group": "G"}, nil),
		remoting.TopicNotExist, "topic[none] not exist")
}

func TestQueryCorrectionOffset(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{store: true})
	env.s.Offsets.Commit("A", "T", 0, 5)
	env.s.Offsets.Commit("A", "T", 1, 7)
	env.s.Offsets.Commit("B", "T", 0, 3)
	env.s.Offsets.Commit("F", "T", 0, 1)
	env.s.Offsets.Commit("C", "T", 0, 2)
	env.s.Offsets.Commit("C", "T", 1, 9)
	resp := env.client("admin").invoke(remoting.QueryCorrectionOffset, map[string]string{"topic": "T", "compareGroup": "C", "filterGroups": "F,C"}, nil)
	clExpectCode(t, resp, remoting.Success, "")
	// Minimum over A and B (F and C filtered): q0 3, q1 7. C is behind on
	// q0 (2 < 3): Long.MAX_VALUE; ahead on q1: 7 stays.
	if want := `{"correctionOffsets":{0:` + strconv.FormatInt(math.MaxInt64, 10) + `,1:7}}`; string(resp.Body) != want {
		t.Fatalf("body %s, want %s", resp.Body, want)
	}
	if off, ok := env.s.Offsets.Query("F", "T", 0); !ok || off != 1 {
		t.Errorf("filtered group's offset changed: %d %v", off, ok)
	}
}

func TestCloneGroupOffset(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true})
	env.topics.create("T", 2, topicgroup.PermRead|topicgroup.PermWrite)
	env.topics.create("U", 1, topicgroup.PermRead|topicgroup.PermWrite)
	env.s.Offsets.Commit("src", "T", 0, 5)
	env.s.Offsets.Commit("src", "T", 1, 6)
	env.s.Offsets.Commit("src", "U", 0, 7)
	env.s.Offsets.Commit("src", "gone", 0, 8)
	admin := env.client("admin")
	clone := func(dest, topic, offline string) {
		clExpectCode(t, admin.invoke(remoting.CloneGroupOffset, map[string]string{"srcGroup": "src", "destGroup": dest, "topic": topic, "offline": offline}, nil), remoting.Success, "")
	}
	clone("d1", "T", "true")
	if got := env.s.Offsets.QueryAll("d1", "T"); got[0] != 5 || got[1] != 6 || env.s.Offsets.QueryAll("d1", "U") != nil {
		t.Fatalf("d1 offsets %v", got)
	}
	// A blank topic clones each topic the broker knows.
	clone("d2", "", "true")
	if env.s.Offsets.QueryAll("d2", "T")[1] != 6 || env.s.Offsets.QueryAll("d2", "U")[0] != 7 || env.s.Offsets.QueryAll("d2", "gone") != nil {
		t.Fatalf("d2 topics %v", env.s.Offsets.TopicsByGroup("d2"))
	}
	// Online src subscribing only to U: not offline skips T.
	env.client("c1").heartbeat([]string{"src"}, "U")
	clone("d3", "", "false")
	if env.s.Offsets.QueryAll("d3", "T") != nil || env.s.Offsets.QueryAll("d3", "U")[0] != 7 {
		t.Fatalf("d3 topics %v", env.s.Offsets.TopicsByGroup("d3"))
	}
}

func TestQueryConsumeQueue(t *testing.T) {
	env := newClientTestEnv(t, clientTestOptions{autoCreateGroups: true, store: true})
	env.topics.create("T", 1, topicgroup.PermRead|topicgroup.PermWrite)
	res := env.put("T", 0, 3)
	admin := env.client("admin")
	q := func(ext map[string]string) *remoting.Command {
		return admin.invoke(remoting.QueryConsumeQueue, ext, nil)
	}
	resp := q(map[string]string{"topic": "T", "queueId": "0", "index": "1", "count": "5"})
	clExpectCode(t, resp, remoting.Success, "")
	var body struct {
		MaxQueueIndex, MinQueueIndex int64
		QueueData                    []consumeQueueData
		SubscriptionData             *remoting.SubscriptionData
		FilterData                   string
	}
	if err := remoting.UnmarshalBody(resp.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.MaxQueueIndex != 3 || body.MinQueueIndex != 0 || len(body.QueueData) != 2 ||
		body.QueueData[0].PhysicOffset != res[1].PhysicalOffset || body.QueueData[1].PhysicOffset != res[2].PhysicalOffset ||
		body.QueueData[0].PhysicSize != int32(res[1].WroteBytes) {
		t.Fatalf("body %s", resp.Body)
	}
	resp = q(map[string]string{"topic": "T", "queueId": "0", "index": "0", "count": "1", "consumerGroup": "G"})
	if err := remoting.UnmarshalBody(resp.Body, &body); err != nil || len(body.QueueData) != 1 || body.FilterData != "G@T is not online!" {
		t.Fatalf("body %s: %v", resp.Body, err)
	}
	env.client("c").heartbeat([]string{"G"}, "T")
	resp = q(map[string]string{"topic": "T", "queueId": "0", "index": "0", "count": "1", "consumerGroup": "G"})
	body.SubscriptionData = nil
	if err := remoting.UnmarshalBody(resp.Body, &body); err != nil || body.SubscriptionData == nil || body.SubscriptionData.Topic != "T" {
		t.Fatalf("body %s: %v", resp.Body, err)
	}
	resp = q(map[string]string{"topic": "T", "queueId": "0", "index": "9", "count": "1"})
	clExpectCode(t, resp, remoting.Success, "Index 9 of 0@T is not exist!")
	clExpectCode(t, q(map[string]string{"topic": "T", "queueId": "3", "index": "0", "count": "1"}), remoting.SystemError, "3@T is not exist!")
}
