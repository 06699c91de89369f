package broker

import (
	"testing"
	"time"

	"github.com/rmqio/rmq/broker/brokerstats"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/histo"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/remoting"
)

// TestCreateExecutionTimes: with metrics on, UPDATE_AND_CREATE_TOPIC and
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP are timed by outcome (and is_system
// for topics), as 5.x AdminBrokerProcessor records them; other requests
// are not.
func TestCreateExecutionTimes(t *testing.T) {
	clk := clock.NewManual(time.Now())
	tb := startBroker(t, func(o *Options) { o.Clock = clk })
	tb.EnableMetrics()
	d := tb.bstats.Detail()
	ok := func(r *remoting.Command) bool { return r.Code == remoting.Success }
	want := map[brokerstats.CreateKey]uint64{}
	want[brokerstats.CreateKey{Success: ok(tb.invoke(remoting.UpdateAndCreateTopic, brokertest.CreateTopicExt("Made", 2, 2, "SINGLE_TAG"), nil))}]++
	want[brokerstats.CreateKey{Success: ok(tb.invoke(remoting.UpdateAndCreateTopic, brokertest.CreateTopicExt("Made2", 2, 2, "SINGLE_TAG"), nil))}]++
	want[brokerstats.CreateKey{Success: ok(tb.invoke(remoting.UpdateAndCreateTopic, brokertest.CreateTopicExt("bad topic!", 2, 2, "SINGLE_TAG"), nil))}]++
	want[brokerstats.CreateKey{System: true, Success: ok(tb.invoke(remoting.UpdateAndCreateTopic, brokertest.CreateTopicExt("SCHEDULE_TOPIC_XXXX", 2, 2, "SINGLE_TAG"), nil))}]++
	// The list forms: a good list, a refused one, and one whose first topic has the system prefix (the
	// joined names count as a system topic, as in stock); a body that does not decode is not timed.
	want[brokerstats.CreateKey{Success: ok(tb.invoke(remoting.UpdateAndCreateTopicList, nil, []byte(`{"topicConfigList":[{"topicName":"L1"},{"topicName":"L2"}]}`)))}]++
	want[brokerstats.CreateKey{Success: ok(tb.invoke(remoting.UpdateAndCreateTopicList, nil, []byte(`{"topicConfigList":[{"topicName":"bad topic!"}]}`)))}]++
	want[brokerstats.CreateKey{System: true, Success: ok(tb.invoke(remoting.UpdateAndCreateTopicList, nil, []byte(`{"topicConfigList":[{"topicName":"rmq_sys_x"}]}`)))}]++
	if r := tb.invoke(remoting.UpdateAndCreateTopicList, nil, []byte(`{`)); r.Code == remoting.Success {
		t.Fatal("a broken topic list was accepted")
	}
	if want[brokerstats.CreateKey{Success: true}] != 3 || want[brokerstats.CreateKey{}] != 2 || want[brokerstats.CreateKey{System: true}] != 2 {
		t.Fatalf("creates answered %v", want)
	}
	got := map[brokerstats.CreateKey]uint64{}
	d.TopicCreate.Each(func(k brokerstats.CreateKey, h *histo.Histogram) {
		s := h.Snapshot()
		if s.Sum != 0 || s.Cumulative[0] != s.Count { // the manual clock did not move: 0 ms, first bucket
			t.Errorf("%+v: %+v", k, s)
		}
		got[k] = s.Count
	})
	if len(got) != len(want) {
		t.Errorf("topic creates %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("topic creates %v, want %v", got, want)
		}
	}
	if r := tb.invoke(remoting.UpdateAndCreateSubscriptionGroup, nil, []byte(`{"groupName":"G1"}`)); r.Code != remoting.Success {
		t.Fatalf("group create: %d %s", r.Code, r.Remark)
	}
	fail := tb.invoke(remoting.UpdateAndCreateSubscriptionGroup, nil, []byte(`{`))
	if fail.Code == remoting.Success {
		t.Fatal("a broken group body was accepted")
	}
	if r := tb.invoke(remoting.UpdateAndCreateSubscriptionGroupList, nil, []byte(`{"groupConfigList":[{"groupName":"G2"}]}`)); r.Code != remoting.Success {
		t.Fatalf("group list create: %d %s", r.Code, r.Remark)
	}
	if r := tb.invoke(remoting.UpdateAndCreateSubscriptionGroupList, nil, []byte(`{"groupConfigList":[{"groupName":"bad group!"}]}`)); r.Code == remoting.Success {
		t.Fatal("a bad group name was accepted")
	}
	tb.invoke(remoting.UpdateAndCreateSubscriptionGroupList, nil, []byte(`[`)) // not timed
	groups := map[brokerstats.CreateKey]uint64{}
	d.GroupCreate.Each(func(k brokerstats.CreateKey, h *histo.Histogram) { groups[k] = h.Snapshot().Count })
	if len(groups) != 2 || groups[brokerstats.CreateKey{Success: true}] != 2 || groups[brokerstats.CreateKey{}] != 2 {
		t.Errorf("group creates %v", groups)
	}
}

// BenchmarkServeInlineMetrics is BenchmarkServeInline's plain send with
// metrics on (EnableMetrics): the message size by topic, the request
// latency and the stats counters are recorded on the event loop, with no
// allocation of their own.
//
//	go test ./broker -run '^$' -bench ServeInlineMetrics -benchmem
func BenchmarkServeInlineMetrics(b *testing.B) {
	tb := startBroker(b, func(o *Options) { o.MappedFileSizeCommitLog = 64 << 20 })
	tb.EnableMetrics()
	tb.mustSend(sendArgs{topic: "BInl", body: []byte("create")})
	conn := &remoting.Conn{}
	body := make([]byte, 1024)
	ext := sendArgs{code: remoting.SendMessageV2, topic: "BInl", props: coreProps("TAGS", "a")}.ext()
	b.ReportAllocs()
	for b.Loop() {
		resp, ok := tb.ServeInline(conn, remoting.NewRequest(remoting.SendMessageV2, ext, body))
		if !ok && resp == nil {
			resp = tb.invoke(remoting.SendMessageV2, ext, body)
		}
		if resp == nil || resp.Code != remoting.Success {
			b.Fatalf("handled %v, reply %v", ok, resp)
		}
	}
}
