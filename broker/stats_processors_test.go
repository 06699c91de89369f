package broker

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/remoting"
)

type statsWindow struct {
	Sum   int64   `json:"sum"`
	Tps   float64 `json:"tps"`
	Avgpt float64 `json:"avgpt"`
}

type brokerStatsData struct {
	StatsMinute statsWindow `json:"statsMinute"`
	StatsHour   statsWindow `json:"statsHour"`
	StatsDay    statsWindow `json:"statsDay"`
}

// TestStatsRequests sends and pulls, samples the stats on the broker clock
// and reads them back through VIEW_BROKER_STATS_DATA,
// GET_BROKER_CONSUME_STATS and GET_ALL_PRODUCER_INFO.
func TestStatsRequests(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	tb := startBroker(t, func(o *Options) { o.Clock = clk })
	for i := range 3 {
		tb.mustSend(sendArgs{topic: "StatsT", body: []byte(strings.Repeat("x", 10+i)), queueID: 0})
	}
	tb.waitDispatched()
	hb := remoting.HeartbeatData{ClientID: "127.0.0.1@stats", ProducerDataSet: []*remoting.ProducerData{{GroupName: "StatsPG"}},
		ConsumerDataSet: []*remoting.ConsumerData{{
			GroupName: "StatsCG", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET",
			SubscriptionDataSet: []*remoting.SubscriptionData{{Topic: "StatsT", SubString: "*", ExpressionType: "TAG", SubVersion: 1}},
		}}}
	if resp := tb.invoke(remoting.HeartBeat, nil, remoting.MarshalBody(&hb)); resp.Code != remoting.Success {
		t.Fatalf("heartbeat: %d %q", resp.Code, resp.Remark)
	}
	resp := tb.pull(pullArgs{group: "StatsCG", topic: "StatsT", maxMsgs: 2, subVersion: 1})
	if resp.Code != remoting.Success {
		t.Fatalf("pull: %d %q", resp.Code, resp.Remark)
	}
	pulledBytes := len(resp.Body)
	tb.Clients().Offsets.Commit("StatsCG", "StatsT", 0, 2)

	tb.bstats.Tick(clk.Now()) // seeds every window with a zero snapshot one period back

	view := func(name, key string) (brokerStatsData, *remoting.Command) {
		t.Helper()
		resp := tb.invoke(remoting.ViewBrokerStatsData, map[string]string{"statsName": name, "statsKey": key}, nil)
		var d brokerStatsData
		if resp.Code == remoting.Success {
			if err := json.Unmarshal(resp.Body, &d); err != nil {
				t.Fatalf("%s body %q: %v", name, resp.Body, err)
			}
		}
		return d, resp
	}
	d, r := view("TOPIC_PUT_NUMS", "StatsT")
	if r.Code != remoting.Success {
		t.Fatalf("TOPIC_PUT_NUMS: %d %q", r.Code, r.Remark)
	}
	// 3 messages in 3 sends over the 10 s seeded window.
	if d.StatsMinute != (statsWindow{Sum: 3, Tps: 0.3, Avgpt: 1}) {
		t.Errorf("minute %+v", d.StatsMinute)
	}
	if d.StatsHour.Sum != 3 || d.StatsDay.Sum != 3 || d.StatsDay.Tps != 3.0/3600 {
		t.Errorf("hour %+v day %+v", d.StatsHour, d.StatsDay)
	}
	if d, _ := view("GROUP_GET_NUMS", "StatsT@StatsCG"); d.StatsMinute.Sum != 2 {
		t.Errorf("GROUP_GET_NUMS minute %+v", d.StatsMinute)
	}
	if d, _ := view("GROUP_GET_SIZE", "StatsT@StatsCG"); d.StatsMinute.Sum != int64(pulledBytes) {
		t.Errorf("GROUP_GET_SIZE minute %+v, want sum %d", d.StatsMinute, pulledBytes)
	}
	if d, _ := view("BROKER_PUT_NUMS", tb.opts.BrokerClusterName); d.StatsMinute.Sum != 3 {
		t.Errorf("BROKER_PUT_NUMS minute %+v", d.StatsMinute)
	}
	if _, r := view("TOPIC_PUT_NUMS", "NoSuchTopic"); r.Code != remoting.SystemError || r.Remark != "The stats <TOPIC_PUT_NUMS> <NoSuchTopic> not exist" {
		t.Errorf("missing item: %d %q", r.Code, r.Remark)
	}

	// Two more sends, then the next 10 s sample: the minute window spans
	// the seed and two samples.
	tb.mustSend(sendArgs{topic: "StatsT", body: []byte("y")})
	tb.mustSend(sendArgs{topic: "StatsT", body: []byte("z")})
	clk.Advance(10 * time.Second)
	tb.bstats.Tick(clk.Now())
	if d, _ := view("TOPIC_PUT_NUMS", "StatsT"); d.StatsMinute.Sum != 5 || d.StatsMinute.Tps != 0.25 {
		t.Errorf("after 10 s: minute %+v", d.StatsMinute)
	}
	tb.waitDispatched()

	resp = tb.invoke(remoting.GetBrokerConsumeStats, map[string]string{"isOrder": "false"}, nil)
	if resp.Code != remoting.Success {
		t.Fatalf("GET_BROKER_CONSUME_STATS: %d %q", resp.Code, resp.Remark)
	}
	var list struct {
		BrokerAddr       string `json:"brokerAddr"`
		TotalDiff        int64  `json:"totalDiff"`
		ConsumeStatsList []map[string][]struct {
			ConsumeTps  float64        `json:"consumeTps"`
			OffsetTable map[string]any `json:"offsetTable"`
		} `json:"consumeStatsList"`
	}
	if err := fastjson.Unmarshal(resp.Body, &list); err != nil {
		t.Fatalf("ConsumeStatsList %q: %v", resp.Body, err)
	}
	if list.BrokerAddr != tb.Addr() || list.TotalDiff != 3 {
		t.Errorf("brokerAddr %q totalDiff %d, want %q 3: %s", list.BrokerAddr, list.TotalDiff, tb.Addr(), resp.Body)
	}
	found := false
	for _, m := range list.ConsumeStatsList {
		if cs, ok := m["StatsCG"]; ok {
			found = true
			if len(cs) != 1 || len(cs[0].OffsetTable) != int(tb.Topics().Get("StatsT").WriteQueueNums) || cs[0].ConsumeTps != 0.1 {
				t.Errorf("StatsCG stats %+v", cs)
			}
		}
	}
	if !found {
		t.Errorf("no StatsCG in %s", resp.Body)
	}
	if resp := tb.invoke(remoting.GetBrokerConsumeStats, map[string]string{"isOrder": "true"}, nil); !strings.Contains(string(resp.Body), `"StatsCG":[]`) {
		t.Errorf("isOrder=true lists an unordered topic: %s", resp.Body)
	}

	resp = tb.invoke(remoting.GetAllProducerInfo, nil, nil)
	var pt struct {
		Data map[string][]struct {
			ClientID string `json:"clientId"`
			RemoteIP string `json:"remoteIP"`
			Language string `json:"language"`
		} `json:"data"`
	}
	if err := json.Unmarshal(resp.Body, &pt); err != nil || resp.Code != remoting.Success {
		t.Fatalf("GET_ALL_PRODUCER_INFO: %d %q %v", resp.Code, resp.Body, err)
	}
	if ps := pt.Data["StatsPG"]; len(ps) != 1 || ps[0].ClientID != "127.0.0.1@stats" || !strings.HasPrefix(ps[0].RemoteIP, "/127.0.0.1:") {
		t.Errorf("producers %+v", pt.Data)
	}
}

// TestDeleteTopicDropsItsStats: after DELETE_TOPIC_IN_BROKER the topic's
// stats item is gone.
func TestDeleteTopicDropsItsStats(t *testing.T) {
	tb := startBroker(t, nil)
	tb.mustSend(sendArgs{topic: "GoneT", body: []byte("x")})
	if tb.bstats.TopicPut.LookupText("GoneT") == nil {
		t.Fatal("no stats item after a send")
	}
	if resp := tb.invoke(remoting.DeleteTopicInBroker, map[string]string{"topic": "GoneT"}, nil); resp.Code != remoting.Success {
		t.Fatalf("delete: %d %q", resp.Code, resp.Remark)
	}
	if tb.bstats.TopicPut.LookupText("GoneT") != nil {
		t.Error("the deleted topic's stats item remains")
	}
}

// TestRuntimeInfoGetRates: GET_BROKER_RUNTIME_INFO's getFoundTps,
// getMissTps and getTotalTps follow the store's pulls over the windows.
func TestRuntimeInfoGetRates(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	// The timer store and the delay service run: their reads of their own
	// queues are not gets (store.ReadQueue), so the test's pulls are the
	// only ones.
	tb := startBroker(t, func(o *Options) { o.Clock = clk })
	tb.mustSend(sendArgs{topic: "RateT", body: []byte("x")})
	tb.waitDispatched()
	tb.sampleRuntimeRates(clk.Now())
	if resp := tb.pull(pullArgs{group: "RateG", topic: "RateT", subscription: "*", sysFlag: 4, maxMsgs: 1}); resp.Code != remoting.Success {
		t.Fatalf("pull: %d %q", resp.Code, resp.Remark)
	}
	if resp := tb.pull(pullArgs{group: "RateG", topic: "RateT", subscription: "*", sysFlag: 4, offset: 1, maxMsgs: 1}); resp.Code != remoting.PullNotFound {
		t.Fatalf("pull past the end: %d %q", resp.Code, resp.Remark)
	}
	clk.Advance(10 * time.Second)
	tb.sampleRuntimeRates(clk.Now())
	resp := tb.invoke(remoting.GetBrokerRuntimeInfo, nil, nil)
	var kv remoting.KVTable
	if err := remoting.UnmarshalBody(resp.Body, &kv); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"getFoundTps": "0.10 0.10 0.10", "getMissTps": "0.10 0.10 0.10", "getTotalTps": "0.20 0.20 0.20"} {
		if got := kv.Table[k]; got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}
