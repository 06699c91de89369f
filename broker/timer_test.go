package broker

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/timer"
)

func TestTimerMessageDeliveredAtItsTimeNeverEarly(t *testing.T) {
	tb, clk := startDelayBroker(t)
	due := clk.Now().Add(5 * time.Second).UnixMilli()
	resp := tb.mustSend(sendArgs{topic: "TimerT", body: []byte("t"), queueID: 1,
		props: coreProps(message.PropTimerDeliverMs, strconv.FormatInt(due, 10), "UNIQ_KEY", "TU1", "TAGS", "x")})
	if resp.ExtFields["recallHandle"] == "" {
		t.Fatalf("send reply has no recallHandle: %v", resp.ExtFields)
	}
	if resp.ExtFields["queueId"] != "1" {
		t.Fatalf("reply queueId %q, want the addressed queue", resp.ExtFields["queueId"])
	}
	wheel := tb.messagesOn(message.TopicWheelTimer, 0)
	if len(wheel) != 1 || wheel[0].Properties["REAL_TOPIC"] != "TimerT" || wheel[0].Properties["REAL_QID"] != "1" {
		t.Fatalf("wheel topic holds %d", len(wheel))
	}
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.timers.Stats().Pending == 1 }, "enqueue into the wheel")
	clk.Advance(5*time.Second - time.Millisecond)
	if n := len(tb.messagesOn("TimerT", 1)); n != 0 {
		t.Fatal("timer message delivered before its time")
	}
	clk.Advance(time.Millisecond)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(tb.messagesOn("TimerT", 1)) == 1 }, "timer delivery")
	m := tb.messagesOn("TimerT", 1)[0]
	if string(m.Body) != "t" || m.Properties["UNIQ_KEY"] != "TU1" || m.Properties["TAGS"] != "x" || m.Properties[message.PropTimerDequeueMs] == "" {
		t.Fatalf("delivered %q %v", m.Body, m.Properties)
	}
	if m.StoreTimestamp < due {
		t.Fatalf("stored at %d, before its time %d", m.StoreTimestamp, due)
	}
}

func TestTimerAdmissionAtTheBroker(t *testing.T) {
	tb, _ := startDelayBroker(t)
	for _, tc := range []struct {
		name     string
		props    string
		wantCode int32
		wantOn   string // topic the message is stored on when accepted
	}{
		{name: "garbage", props: coreProps(message.PropTimerDelaySec, "soon"), wantCode: remoting.MessageIllegal},
		{name: "beyond max delay", props: coreProps(message.PropTimerDelaySec, strconv.Itoa(4*24*3600)), wantCode: remoting.MessageIllegal},
		{name: "overflowing delay", props: coreProps(message.PropTimerDelaySec, "9223372036854775807"), wantCode: remoting.MessageIllegal},
		{name: "in the past is due now", props: coreProps(message.PropTimerDeliverMs, "1000"), wantOn: "Adm"},
		{name: "delay level wins", props: coreProps("DELAY", "1", message.PropTimerDelaySec, "60"), wantOn: message.TopicSchedule},
		{name: "relative seconds", props: coreProps(message.PropTimerDelaySec, "30"), wantOn: message.TopicWheelTimer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := tb.send(sendArgs{topic: "Adm", body: []byte(tc.name), props: tc.props})
			if resp.Code != tc.wantCode {
				t.Fatalf("code %d %q, want %d", resp.Code, resp.Remark, tc.wantCode)
			}
			if tc.wantCode != remoting.Success {
				return
			}
			_, phy, _ := message.DecodeMessageID(resp.ExtFields["msgId"])
			raw, err := tb.Store().LookMessageByOffset(phy)
			if err != nil {
				t.Fatal(err)
			}
			m, _ := message.DecodeRecord(raw)
			if m.Topic != tc.wantOn {
				t.Fatalf("stored on %s, want %s", m.Topic, tc.wantOn)
			}
			if tc.wantOn == message.TopicSchedule && m.Properties[message.PropTimerDelaySec] != "" {
				t.Fatal("a delay-level message keeps no timer property")
			}
		})
	}
}

func TestRecallBeforeAndAfterDelivery(t *testing.T) {
	tb, clk := startDelayBroker(t)
	send := func(body string, delay time.Duration) string {
		resp := tb.mustSend(sendArgs{topic: "RecallT", body: []byte(body),
			props: coreProps(message.PropTimerDelayMs, strconv.FormatInt(delay.Milliseconds(), 10), "UNIQ_KEY", "U-"+body)})
		return resp.ExtFields["recallHandle"]
	}
	recall := func(handle string) *remoting.Command {
		return tb.invoke(remoting.RecallMessage, map[string]string{"topic": "RecallT", "recallHandle": handle, "producerGroup": "PG"}, nil)
	}
	h1 := send("cancelled", 2*time.Second)
	h2 := send("kept", time.Second)
	if r := recall(h1); r.Code != remoting.Success || r.ExtFields["msgId"] != "U-cancelled" {
		t.Fatalf("recall: %d %q %v", r.Code, r.Remark, r.ExtFields)
	}
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.timers.Stats().EnqueueBehind == 0 }, "enqueue")
	clk.Advance(3 * time.Second)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(tb.messagesOn("RecallT", 0)) >= 1 }, "delivery of the kept message")
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.timers.Stats().Pending == 0 }, "the wheel to drain")
	got := tb.messagesOn("RecallT", 0)
	if len(got) != 1 || string(got[0].Body) != "kept" {
		t.Fatalf("delivered %d messages; the recalled one must never arrive", len(got))
	}
	if r := recall(h2); r.Code != remoting.IllegalOperation {
		t.Fatalf("recall after delivery: %d %q", r.Code, r.Remark)
	}
	for _, bad := range []string{"", "not-base64!", "djEgUmVjYWxsVA=="} {
		if r := recall(bad); r.Code == remoting.Success {
			t.Fatalf("bad handle %q accepted", bad)
		}
	}
	if r := tb.invoke(remoting.RecallMessage, map[string]string{"topic": "NoSuchTopic", "recallHandle": h1}, nil); r.Code != remoting.TopicNotExist {
		t.Fatalf("unknown topic: %d", r.Code)
	}
}

func TestTimerFiguresInRuntimeInfo(t *testing.T) {
	tb, _ := startDelayBroker(t)
	tb.mustSend(sendArgs{topic: "Fig", body: []byte("f"), props: coreProps(message.PropTimerDelaySec, "60")})
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.timers.Stats().Pending == 1 }, "enqueue")
	resp := tb.invoke(remoting.GetBrokerRuntimeInfo, nil, nil)
	var kv remoting.KVTable
	if err := remoting.UnmarshalBody(resp.Body, &kv); err != nil {
		t.Fatal(err)
	}
	if kv.Table["timerCongestNum"] != "1" || kv.Table["timerOffsetBehind"] != "0" || kv.Table["timerReadBehind"] == "" {
		t.Fatalf("timer keys %v", kv.Table)
	}
}

func TestTimerBatchRules(t *testing.T) {
	tb, _ := startDelayBroker(t)
	mixed := coreBatchBody(
		message.BatchEntry{Body: []byte("a"), Properties: map[string]string{message.PropTimerDelaySec: "30"}},
		message.BatchEntry{Body: []byte("b")},
	)
	if r := tb.send(sendArgs{code: remoting.SendBatchMessage, topic: "TB", body: mixed, batch: true}); r.Code != remoting.MessageIllegal {
		t.Fatalf("mixed batch: %d %q", r.Code, r.Remark)
	}
	all := coreBatchBody(
		message.BatchEntry{Body: []byte("a"), Properties: map[string]string{message.PropTimerDelaySec: "30"}},
		message.BatchEntry{Body: []byte("b"), Properties: map[string]string{message.PropTimerDelaySec: "40"}},
	)
	if r := tb.send(sendArgs{code: remoting.SendBatchMessage, topic: "TB", body: all, batch: true}); r.Code != remoting.Success {
		t.Fatalf("timer batch: %d %q", r.Code, r.Remark)
	}
	if n := len(tb.messagesOn(message.TopicWheelTimer, 0)); n != 2 {
		t.Fatalf("wheel topic holds %d", n)
	}
	if r := tb.send(sendArgs{topic: message.TopicWheelTimer, body: []byte("x")}); r.Code != remoting.NoPermission {
		t.Fatalf("direct send to the wheel topic: %d", r.Code)
	}
}

func TestTimerMessagesSurviveRestart(t *testing.T) {
	tb, clk := startDelayBroker(t)
	for i := 0; i < 5; i++ {
		tb.mustSend(sendArgs{topic: "TR", body: []byte(strconv.Itoa(i)), props: coreProps(message.PropTimerDelaySec, "20")})
	}
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.timers.Stats().Pending == 5 }, "enqueue")
	tb = tb.restart()
	clk.Advance(20 * time.Second)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(tb.messagesOn("TR", 0)) == 5 }, "delivery after restart")
}

// GET_TIMER_CHECK_POINT and GET_TIMER_METRICS answer the timer store's
// state in the 5.3.3 forms; a slave copies both from its master
// (SlaveSynchronize), answers the master's progress, and started as master
// does not deliver again the timer its master delivered.
func TestSlaveCopiesMasterTimerState(t *testing.T) {
	m, s := haPair(t, RoleAsyncMaster, nil)
	// Due far enough ahead that a loaded machine still stores it on the
	// wheel topic (a time already past is delivered at once).
	due := time.Now().Add(2 * time.Second).UnixMilli()
	m.mustSend(sendArgs{topic: "TA", body: []byte("a"), props: coreProps(message.PropTimerDeliverMs, strconv.FormatInt(due, 10))})
	m.mustSend(sendArgs{topic: "TB", body: []byte("b"), props: coreProps(message.PropTimerDelaySec, "3600")})
	if n := len(m.messagesOn(message.TopicWheelTimer, 0)); n != 2 {
		t.Fatalf("the wheel topic holds %d", n)
	}
	testutil.WaitFor(t, 2*coreTestTimeout, func() bool { return len(m.messagesOn("TA", 0)) == 1 }, "the master's delivery")
	checkpointOf := func(tb *testBroker) timer.StockCheckpoint {
		t.Helper()
		r := tb.invoke(remoting.GetTimerCheckPoint, nil, nil)
		if r.Code != remoting.Success {
			t.Fatalf("GET_TIMER_CHECK_POINT: %d %q", r.Code, r.Remark)
		}
		c, err := timer.DecodeStockCheckpoint(r.Body)
		if err != nil || len(r.Body) != timer.StockCheckpointSize {
			t.Fatalf("body %x: %v", r.Body, err)
		}
		return c
	}
	// Its read time passes A's slot and it has read both, and a flush makes
	// that the checkpoint.
	var mc timer.StockCheckpoint
	for deadline := time.Now().Add(4 * coreTestTimeout); ; time.Sleep(20 * time.Millisecond) {
		if err := m.timers.Flush(); err != nil {
			t.Fatal(err)
		}
		if mc = checkpointOf(m); mc.LastReadTimeMs > due && mc.MasterTimerQueueOffset == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the master's checkpoint %+v is not past A (due %d) and B; stats %+v", mc, due, m.timers.Stats())
		}
	}
	if mc.MasterTimerQueueOffset != 2 || mc.LastTimerQueueOffset != 2 || mc.LastReadTimeMs <= due {
		t.Fatalf("master answers %+v", mc)
	}
	metrics := func(tb *testBroker) string {
		t.Helper()
		r := tb.invoke(remoting.GetTimerMetrics, nil, nil)
		if r.Code != remoting.Success {
			t.Fatalf("GET_TIMER_METRICS: %d %q", r.Code, r.Remark)
		}
		return string(r.Body)
	}
	if got := metrics(m); !strings.Contains(got, `"TB":{"count":1,`) || !strings.Contains(got, `"TA":{"count":0,`) {
		t.Fatalf("master metrics %s", got)
	}

	maxPhy := m.Store().MaxPhyOffset()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return s.Store().MaxPhyOffset() >= maxPhy }, "replication")
	addr := m.Addr()
	s.masterAddr.Store(&addr)
	s.syncTimerCheckpoint()
	s.syncAll()
	if sc := checkpointOf(s); sc.LastReadTimeMs != mc.LastReadTimeMs || sc.MasterTimerQueueOffset != mc.MasterTimerQueueOffset || sc.DataVersion != mc.DataVersion {
		t.Fatalf("slave answers %+v, master %+v", sc, mc)
	}
	if got, want := metrics(s), metrics(m); got != want {
		t.Fatalf("slave metrics %s, master %s", got, want)
	}

	// The slave's store started as master: TA is not delivered again, TB waits.
	s.stop()
	o := s.opts
	o.BrokerRole, o.BrokerID = RoleAsyncMaster, 0
	nm := startBrokerWith(t, o, nil)
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		st := nm.timers.Stats()
		return st.EnqueueBehind == 0 && st.Pending == 1 && st.ReadTimeMs > due
	}, "the new master's timer store to pass A")
	if n := len(nm.messagesOn("TA", 0)); n != 1 {
		t.Fatalf("TA stored %d times on the new master", n)
	}
	if st := nm.timers.Stats(); st.MasterDelivered != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// Without a timer store (timerWheelEnable=false) both codes answer as 5.3.3.
func TestTimerStateCodesDisabled(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.TimerWheelEnable = false })
	if r := tb.invoke(remoting.GetTimerCheckPoint, nil, nil); r.Code != remoting.SystemError || r.Remark != "The checkpoint is null" {
		t.Fatalf("60: %d %q", r.Code, r.Remark)
	}
	if r := tb.invoke(remoting.GetTimerMetrics, nil, nil); r.Code != remoting.SystemError || r.Remark != "The timer message store is null" {
		t.Fatalf("61: %d %q", r.Code, r.Remark)
	}
}
