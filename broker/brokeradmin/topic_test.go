package brokeradmin_test

import (
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

func TestUpdateAndCreateTopic(t *testing.T) {
	tb := testbroker.Start(t, testbroker.Options(t, nil))
	missingOrder := brokertest.CreateTopicExt("NoOrder", 2, 6, "SINGLE_TAG")
	delete(missingOrder, "order")
	cases := []struct {
		name       string
		ext        map[string]string
		wantCode   int32
		wantRemark string
	}{
		{name: "create", ext: brokertest.CreateTopicExt("AdminT", 3, 6, "MULTI_TAG"), wantCode: remoting.Success},
		{name: "update", ext: brokertest.CreateTopicExt("AdminT", 5, 4, "SINGLE_TAG"), wantCode: remoting.Success},
		{name: "system topic", ext: brokertest.CreateTopicExt("SCHEDULE_TOPIC_XXXX", 1, 6, "SINGLE_TAG"), wantCode: remoting.SystemError,
			wantRemark: "The topic[SCHEDULE_TOPIC_XXXX] is conflict with system topic."},
		{name: "cluster topic", ext: brokertest.CreateTopicExt("DefaultCluster", 1, 6, "SINGLE_TAG"), wantCode: remoting.SystemError,
			wantRemark: "is conflict with system topic."},
		{name: "rmq_sys prefix", ext: brokertest.CreateTopicExt("rmq_sys_mine", 1, 6, "SINGLE_TAG"), wantCode: remoting.SystemError,
			wantRemark: "is conflict with system topic."},
		{name: "invalid name", ext: brokertest.CreateTopicExt("a/b", 1, 6, "SINGLE_TAG"), wantCode: remoting.SystemError,
			wantRemark: "The specified topic contains illegal characters"},
		{name: "bad filter type", ext: brokertest.CreateTopicExt("BadFilter", 1, 6, "SQL"), wantCode: remoting.SystemError,
			wantRemark: "TopicFilterType.SQL"},
		{name: "missing order", ext: missingOrder, wantCode: remoting.SystemError, wantRemark: "the custom field <order> is null"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := tb.Invoke(remoting.UpdateAndCreateTopic, tc.ext, nil)
			if resp.Code != tc.wantCode || !strings.Contains(resp.Remark, tc.wantRemark) {
				t.Fatalf("got %d %q, want %d %q", resp.Code, resp.Remark, tc.wantCode, tc.wantRemark)
			}
		})
	}

	resp := tb.Invoke(remoting.GetAllTopicConfig, nil, nil)
	var w remoting.TopicConfigSerializeWrapper
	if err := remoting.UnmarshalBody(resp.Body, &w); err != nil || resp.Code != remoting.Success {
		t.Fatalf("GET_ALL_TOPIC_CONFIG: %d %v", resp.Code, err)
	}
	got := w.TopicConfigTable["AdminT"]
	want := topicgroup.TopicConfig{TopicName: "AdminT", ReadQueueNums: 5, WriteQueueNums: 5, Perm: 4, TopicFilterType: "SINGLE_TAG"}
	if got == nil || !reflect.DeepEqual(*got, want) {
		t.Fatalf("AdminT = %+v, want %+v", got, want)
	}
	for _, name := range []string{"BadFilter", "NoOrder", "a/b", "rmq_sys_mine"} {
		if w.TopicConfigTable[name] != nil {
			t.Errorf("refused topic %s exists", name)
		}
	}
	if w.DataVersion.Counter != 2 {
		t.Errorf("data version counter %d, want 2 (one per accepted change)", w.DataVersion.Counter)
	}

	t.Run("get topic config", func(t *testing.T) {
		resp := tb.Invoke(remoting.GetTopicConfig, map[string]string{"topic": "AdminT"}, nil)
		var tc topicgroup.TopicConfig
		if err := remoting.UnmarshalBody(resp.Body, &tc); err != nil || !reflect.DeepEqual(tc, want) {
			t.Fatalf("got %+v (%v), want %+v", tc, err, want)
		}
		if resp := tb.Invoke(remoting.GetTopicConfig, map[string]string{"topic": "Nope"}, nil); resp.Code != remoting.TopicNotExist {
			t.Fatalf("unknown topic: %d", resp.Code)
		}
	})
}

func TestDeleteTopic(t *testing.T) {
	tb := testbroker.Start(t, testbroker.Options(t, nil))
	tb.MustSend(brokertest.Send{Topic: "Doomed", Body: []byte("x")})
	tb.WaitDispatched()
	tb.Clients().Offsets.Commit("G", "Doomed", 0, 1)
	cases := []struct {
		name       string
		topic      string
		wantCode   int32
		wantRemark string
	}{
		{name: "user topic", topic: "Doomed", wantCode: remoting.Success},
		{name: "again", topic: "Doomed", wantCode: remoting.Success},
		{name: "system topic", topic: "TBW102", wantCode: remoting.SystemError, wantRemark: "is conflict with system topic."},
		{name: "invalid", topic: "", wantCode: remoting.SystemError, wantRemark: "The specified topic is blank."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := tb.Invoke(remoting.DeleteTopicInBroker, map[string]string{"topic": tc.topic}, nil)
			if resp.Code != tc.wantCode || !strings.Contains(resp.Remark, tc.wantRemark) {
				t.Fatalf("got %d %q, want %d %q", resp.Code, resp.Remark, tc.wantCode, tc.wantRemark)
			}
		})
	}
	if tb.Topics().Get("Doomed") != nil {
		t.Error("topic config survived")
	}
	if n := tb.Store().MaxOffsetInQueue("Doomed", 0); n != 0 {
		t.Errorf("consume queue survived: max offset %d", n)
	}
	if off, ok := tb.Clients().Offsets.Query("G", "Doomed", 0); ok {
		t.Errorf("offset %d survived", off)
	}
	if tb.Topics().Get("TBW102") == nil {
		t.Error("TBW102 deleted")
	}
}

func TestTopicStatsInfo(t *testing.T) {
	tb := testbroker.Start(t, testbroker.Options(t, nil))
	for range 3 {
		tb.MustSend(brokertest.Send{Topic: "Stats", Body: []byte("x"), QueueID: 2})
	}
	tb.WaitDispatched()
	resp := tb.Invoke(remoting.GetTopicStatsInfo, map[string]string{"topic": "Stats"}, nil)
	if resp.Code != remoting.Success {
		t.Fatalf("code %d %q", resp.Code, resp.Remark)
	}
	body := string(resp.Body)
	entry := regexp.MustCompile(`\{"brokerName":"broker-a","queueId":(\d+),"topic":"Stats"\}:\{"lastUpdateTimestamp":(\d+),"maxOffset":(\d+),"minOffset":(\d+)\}`)
	matches := entry.FindAllStringSubmatch(body, -1)
	if len(matches) != 4 || !strings.HasPrefix(body, `{"offsetTable":{{`) || !strings.HasSuffix(body, `}}}`) {
		t.Fatalf("body %s: want 4 MessageQueue-keyed entries", body)
	}
	for _, m := range matches {
		wantMax, hasTime := "0", m[2] != "0"
		if m[1] == "2" {
			wantMax = "3"
		}
		if m[3] != wantMax || m[4] != "0" || hasTime != (m[1] == "2") {
			t.Errorf("queue %s: last %s max %s min %s", m[1], m[2], m[3], m[4])
		}
	}
	if resp := tb.Invoke(remoting.GetTopicStatsInfo, map[string]string{"topic": "Nope"}, nil); resp.Code != remoting.TopicNotExist {
		t.Fatalf("unknown topic: %d", resp.Code)
	}
}

func TestBrokerRuntimeInfo(t *testing.T) {
	tb := testbroker.Start(t, testbroker.Options(t, nil))
	tb.MustSend(brokertest.Send{Topic: "RT", Body: []byte("x")})
	tb.WaitDispatched()
	tb.Pull(brokertest.Pull{Topic: "RT", SysFlag: 0x4 /* PullSysFlag FLAG_SUBSCRIPTION */})
	resp := tb.Invoke(remoting.GetBrokerRuntimeInfo, nil, nil)
	var kv remoting.KVTable
	if err := remoting.UnmarshalBody(resp.Body, &kv); err != nil || resp.Code != remoting.Success {
		t.Fatalf("code %d: %v", resp.Code, err)
	}
	// The keys mqadmin clusterList parses, and how.
	floats := []string{"putTps", "getTransferedTps", "commitLogDiskRatio"}
	ints := []string{"sendThreadPoolQueueSize", "pullThreadPoolQueueSize", "sendThreadPoolQueueHeadWaitTimeMills",
		"pullThreadPoolQueueHeadWaitTimeMills", "pageCacheLockTimeMills", "earliestMessageTimeStamp", "msgPutTotalTodayNow", "msgGetTotalTodayNow"}
	for _, k := range floats {
		v, ok := kv.Table[k]
		if !ok {
			t.Errorf("missing %s", k)
			continue
		}
		if _, err := strconv.ParseFloat(strings.Fields(v)[0], 64); err != nil {
			t.Errorf("%s = %q: %v", k, v, err)
		}
	}
	for _, k := range ints {
		if _, err := strconv.ParseInt(kv.Table[k], 10, 64); err != nil {
			t.Errorf("%s = %q: %v", k, kv.Table[k], err)
		}
	}
	if kv.Table["brokerVersionDesc"] != "V4_9_8" || kv.Table["msgPutTotalTodayNow"] != "1" || kv.Table["msgGetTotalTodayNow"] != "1" {
		t.Errorf("table %v", kv.Table)
	}
	if ts, _ := strconv.ParseInt(kv.Table["earliestMessageTimeStamp"], 10, 64); ts <= 0 {
		t.Errorf("earliestMessageTimeStamp %d", ts)
	}
	if !strings.HasPrefix(kv.Table["runtime"], "[ 0 days, 0 hours, 0 minutes, ") {
		t.Errorf("runtime %q", kv.Table["runtime"])
	}
	if n := len(strings.Fields(kv.Table["putTps"])); n != 3 {
		t.Errorf("putTps %q: want three windows", kv.Table["putTps"])
	}
	exporterParses(t, kv.Table)
}

// exporterParses checks table as rocketmq-exporter's
// model/BrokerRuntimeStats(KVTable) reads it: a missing key or one that
// does not parse fails its whole broker-runtime collection.
func exporterParses(t *testing.T, table map[string]string) {
	t.Helper()
	longs := []string{"msgPutTotalTodayNow", "sendThreadPoolQueueHeadWaitTimeMills", "queryThreadPoolQueueHeadWaitTimeMills",
		"pullThreadPoolQueueCapacity", "msgGetTotalTodayNow", "queryThreadPoolQueueSize", "bootTimestamp",
		"msgGetTotalYesterdayMorning", "msgPutTotalYesterdayMorning", "pullThreadPoolQueueHeadWaitTimeMills",
		"dispatchMaxBuffer", "pageCacheLockTimeMills", "commitLogMaxOffset", "commitLogMinOffset",
		"getMessageEntireTimeMax", "msgPutTotalTodayMorning", "putMessageTimesTotal", "msgGetTotalTodayMorning",
		"sendThreadPoolQueueSize", "startAcceptSendRequestTimeStamp", "putMessageEntireTimeMax",
		"earliestMessageTimeStamp", "remainTransientStoreBufferNumbs", "queryThreadPoolQueueCapacity",
		"dispatchBehindBytes", "putMessageSizeTotal", "sendThreadPoolQueueCapacity", "pullThreadPoolQueueSize"}
	for _, k := range longs {
		if _, err := strconv.ParseInt(table[k], 10, 64); err != nil {
			t.Errorf("exporter Long.parseLong(%s): %q", k, table[k])
		}
	}
	if _, err := strconv.ParseInt(table["brokerVersion"], 10, 32); err != nil {
		t.Errorf("brokerVersion %q", table["brokerVersion"])
	}
	for _, k := range []string{"consumeQueueDiskRatio", "commitLogDiskRatio", "putMessageAverageSize"} {
		if _, err := strconv.ParseFloat(table[k], 64); err != nil {
			t.Errorf("exporter Double.parseDouble(%s): %q", k, table[k])
		}
	}
	if f := strings.Fields(table["remainHowManyDataToFlush"]); len(f) != 2 {
		t.Errorf("remainHowManyDataToFlush %q", table["remainHowManyDataToFlush"])
	} else if _, err := strconv.ParseFloat(f[0], 64); err != nil {
		t.Errorf("remainHowManyDataToFlush %q", table["remainHowManyDataToFlush"])
	}
	// "Total : 1.0 GiB, Free : 2.0 GiB.": the exporter takes fields 2, 3, 6 and 7.
	if f := strings.Fields(table["commitLogDirCapacity"]); len(f) != 8 {
		t.Errorf("commitLogDirCapacity %q", table["commitLogDirCapacity"])
	}
	if d := table["putMessageDistributeTime"]; d != "null" && len(strings.Fields(d)) != 13 {
		t.Errorf("putMessageDistributeTime %q", d)
	}
	for _, k := range []string{"putTps", "getMissTps", "getTransferedTps", "getTotalTps", "getFoundTps"} {
		for _, f := range strings.Fields(table[k]) {
			if _, err := strconv.ParseFloat(f, 64); err != nil {
				t.Errorf("%s %q", k, table[k])
			}
		}
	}
}
