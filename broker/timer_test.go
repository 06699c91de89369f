package broker

import (
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
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
