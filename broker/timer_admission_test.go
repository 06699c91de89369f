package broker

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// storeMarks are the store positions a refused put must leave as they were.
type storeMarks struct{ phy, topic, wheel int64 }

func (tb *testBroker) marks(topic string, queueID int32) storeMarks {
	tb.t.Helper()
	tb.waitDispatched()
	return storeMarks{phy: tb.Store().MaxPhyOffset(), topic: tb.Store().MaxOffsetInQueue(topic, queueID),
		wheel: tb.Store().MaxOffsetInQueue(message.TopicWheelTimer, 0)}
}

// Timer admission of SEND_BATCH_MESSAGE is the single-send rule applied to
// every member (and to the batch-level properties each member inherits): one
// illegal member refuses the whole batch with MESSAGE_ILLEGAL and nothing is
// stored.
func TestTimerBatchWithAnIllegalMemberIsRefused(t *testing.T) {
	tb, clk := startDelayBroker(t)
	tooFar := strconv.FormatInt(clk.Now().Add(time.Duration(tb.opts.TimerMaxDelaySec+1)*time.Second).UnixMilli(), 10)
	legal := map[string]string{message.PropTimerDelaySec: "30"}
	for _, tc := range []struct {
		name       string
		members    []map[string]string
		batchProps string   // properties of the batch header, inherited by every member
		wantRemark []string // substrings the remark must hold
	}{
		{name: "garbage seconds in the last member",
			members:    []map[string]string{legal, legal, {message.PropTimerDelaySec: "x"}},
			wantRemark: []string{message.PropTimerDelaySec, `"x"`, "not a 64-bit decimal integer"}},
		{name: "garbage deliver time in the first member",
			members:    []map[string]string{{message.PropTimerDeliverMs: "tomorrow"}, legal},
			wantRemark: []string{message.PropTimerDeliverMs, `"tomorrow"`}},
		{name: "delay beyond timerMaxDelaySec",
			members:    []map[string]string{legal, {message.PropTimerDelaySec: strconv.FormatInt(tb.opts.TimerMaxDelaySec+1, 10)}},
			wantRemark: []string{"max delay", strconv.FormatInt(tb.opts.TimerMaxDelaySec*1000, 10)}},
		{name: "deliver time beyond timerMaxDelaySec",
			members:    []map[string]string{legal, {message.PropTimerDeliverMs: tooFar}},
			wantRemark: []string{"max delay", message.PropTimerDeliverMs}},
		{name: "overflowing milliseconds",
			members:    []map[string]string{legal, {message.PropTimerDelayMs: "9223372036854775807"}},
			wantRemark: []string{message.PropTimerDelayMs, "overflows"}},
		{name: "garbage inherited from the batch header",
			members:    []map[string]string{{}, {}},
			batchProps: coreProps(message.PropTimerDelaySec, "soon"),
			wantRemark: []string{message.PropTimerDelaySec, `"soon"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entries := make([]message.BatchEntry, len(tc.members))
			for i, p := range tc.members {
				props := map[string]string{"UNIQ_KEY": "BI" + strconv.Itoa(i)}
				for k, v := range p {
					props[k] = v
				}
				entries[i] = message.BatchEntry{Body: []byte(strconv.Itoa(i)), Properties: props}
			}
			before := tb.marks("TBI", 1)
			r := tb.send(sendArgs{code: remoting.SendBatchMessage, topic: "TBI", queueID: 1, body: coreBatchBody(entries...),
				props: tc.batchProps, batch: true})
			if r.Code != remoting.MessageIllegal {
				t.Fatalf("code %d %q, want %d", r.Code, r.Remark, remoting.MessageIllegal)
			}
			for _, s := range tc.wantRemark {
				if !strings.Contains(r.Remark, s) {
					t.Errorf("remark %q does not say %q", r.Remark, s)
				}
			}
			if after := tb.marks("TBI", 1); after != before {
				t.Fatalf("a refused batch changed the store: %+v → %+v", before, after)
			}
		})
	}
	if n := tb.timers.Stats().Enqueued; n != 0 {
		t.Fatalf("%d refused messages reached the wheel", n)
	}
}

// A batch whose members are all timers not yet due is stored on the wheel
// topic, each member keeping its own time and its destination (the batch's
// topic and addressed queue), and delivered there member by member. As in
// stock, a batch reply carries no recallHandle.
func TestTimerBatchOfLegalTimersIsHeldOnTheWheel(t *testing.T) {
	tb, clk := startDelayBroker(t)
	now := clk.Now()
	due := []time.Time{now.Add(30 * time.Second), now.Add(45 * time.Second), now.Add(60 * time.Second)}
	body := coreBatchBody(
		message.BatchEntry{Body: []byte("sec"), Properties: map[string]string{"UNIQ_KEY": "BL0", message.PropTimerDelaySec: "30"}},
		message.BatchEntry{Body: []byte("ms"), Properties: map[string]string{"UNIQ_KEY": "BL1", message.PropTimerDelayMs: "45000"}},
		message.BatchEntry{Body: []byte("at"), Properties: map[string]string{"UNIQ_KEY": "BL2",
			message.PropTimerDeliverMs: strconv.FormatInt(due[2].UnixMilli(), 10)}},
	)
	before := tb.marks("TBL", 2)
	r := tb.send(sendArgs{code: remoting.SendBatchMessage, topic: "TBL", queueID: 2, body: body, batch: true})
	if r.Code != remoting.Success {
		t.Fatalf("batch: %d %q", r.Code, r.Remark)
	}
	if h, ok := r.ExtFields["recallHandle"]; ok {
		t.Fatalf("batch reply carries recallHandle %q", h)
	}
	if r.ExtFields["queueId"] != "2" || len(strings.Split(r.ExtFields["msgId"], ",")) != 3 {
		t.Fatalf("reply %v", r.ExtFields)
	}
	wheel := tb.messagesOn(message.TopicWheelTimer, 0)[before.wheel:]
	if len(wheel) != 3 {
		t.Fatalf("wheel topic gained %d records, want 3", len(wheel))
	}
	for i, m := range wheel {
		p := m.Properties
		if p["REAL_TOPIC"] != "TBL" || p["REAL_QID"] != "2" || p["UNIQ_KEY"] != "BL"+strconv.Itoa(i) ||
			p[message.PropTimerOutMs] != strconv.FormatInt(due[i].UnixMilli(), 10) {
			t.Fatalf("wheel record %d: %v", i, p)
		}
	}
	if got := tb.Store().MaxOffsetInQueue("TBL", 2); got != before.topic {
		t.Fatalf("the batch's own queue holds %d, want nothing before the due times", got)
	}
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.timers.Stats().Pending == 3 }, "enqueue into the wheel")
	for i, d := range due {
		clk.Advance(d.Sub(clk.Now()))
		testutil.WaitFor(t, coreTestTimeout, func() bool { return len(tb.messagesOn("TBL", 2)) == i+1 }, "delivery of member "+strconv.Itoa(i))
		m := tb.messagesOn("TBL", 2)[i]
		if m.Properties["UNIQ_KEY"] != "BL"+strconv.Itoa(i) || m.StoreTimestamp < d.UnixMilli() {
			t.Fatalf("delivery %d: %s stored at %d, due %d", i, m.Properties["UNIQ_KEY"], m.StoreTimestamp, d.UnixMilli())
		}
	}
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.timers.Stats().Pending == 0 }, "the wheel to drain")
	if n := len(tb.messagesOn("TBL", 2)); n != 3 {
		t.Fatalf("%d deliveries, want each member once", n)
	}
}

// A batch of timer members all at or before now is due at once: it is stored
// on its own queue, not on the wheel.
func TestTimerBatchDueNowIsStoredAtOnce(t *testing.T) {
	tb, clk := startDelayBroker(t)
	past := strconv.FormatInt(clk.Now().Add(-time.Minute).UnixMilli(), 10)
	body := coreBatchBody(
		message.BatchEntry{Body: []byte("a"), Properties: map[string]string{message.PropTimerDeliverMs: past}},
		message.BatchEntry{Body: []byte("b"), Properties: map[string]string{message.PropTimerDelaySec: "0"}},
	)
	before := tb.marks("TBN", 0)
	if r := tb.send(sendArgs{code: remoting.SendBatchMessage, topic: "TBN", body: body, batch: true}); r.Code != remoting.Success {
		t.Fatalf("batch: %d %q", r.Code, r.Remark)
	}
	if got := tb.messagesOn("TBN", 0); len(got) != 2 || got[0].Properties[message.PropTimerOutMs] != "" {
		t.Fatalf("own queue holds %d", len(got))
	}
	if after := tb.marks("TBN", 0); after.wheel != before.wheel {
		t.Fatal("a batch due now reached the wheel topic")
	}
}

// deliveredTimer sends a timer message to topic, lets it come due and
// returns the delivered copy with the message id a consumer would hold.
func deliveredTimer(t *testing.T, tb *testBroker, adv func(time.Duration), topic, uniq string) (*message.MessageExt, string) {
	t.Helper()
	tb.mustSend(sendArgs{topic: topic, body: []byte(uniq), props: coreProps(message.PropTimerDelaySec, "5", "UNIQ_KEY", uniq, "TAGS", "tt")})
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.timers.Stats().Pending == 1 }, "enqueue into the wheel")
	adv(5 * time.Second)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(tb.messagesOn(topic, 0)) == 1 }, "timer delivery")
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.timers.Stats().Pending == 0 }, "the wheel to drain")
	m := tb.messagesOn(topic, 0)[0]
	for _, k := range []string{message.PropTimerOutMs, message.PropTimerDelaySec, message.PropTimerEnqueueMs, message.PropTimerDequeueMs} {
		if m.Properties[k] == "" {
			t.Fatalf("delivered timer message lacks %s: %v", k, m.Properties)
		}
	}
	return m, message.CreateMessageID(tb.host, m.PhysicalOffset)
}

// CONSUMER_SEND_MSG_BACK of a delivered timer message: the copy carries the
// timer properties of its first admission (TIMER_DELAY_SEC, TIMER_OUT_MS,
// TIMER_ENQUEUE_MS, TIMER_DEQUEUE_MS). With a delay level it goes to
// SCHEDULE_TOPIC_XXXX, the level wins and the user's timer request is
// cleared; once the budget is spent (or the client asks for it) it goes to
// %DLQ%<group>, where TIMER_OUT_MS marks it as admitted before. Never is it
// admitted onto the wheel again.
func TestTimerMessageSendBack(t *testing.T) {
	for _, tc := range []struct {
		name       string
		delayLevel int
		maxTimes   string
		wantTopic  string
		wantQueue  int32 // schedule queue (level-1); DLQ has one queue
		wantLevel  string
	}{
		{name: "default level", delayLevel: 0, maxTimes: "16", wantTopic: message.TopicSchedule, wantQueue: 2, wantLevel: "3"},
		{name: "requested level", delayLevel: 2, maxTimes: "16", wantTopic: message.TopicSchedule, wantQueue: 1, wantLevel: "2"},
		{name: "budget spent", delayLevel: 0, maxTimes: "0", wantTopic: "%DLQ%GT"},
		{name: "client asks for DLQ", delayLevel: -1, maxTimes: "16", wantTopic: "%DLQ%GT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, clk := startDelayBroker(t)
			orig, msgID := deliveredTimer(t, tb, clk.Advance, "TSB", "SB1")
			wheelBefore, enqBefore := tb.Store().MaxOffsetInQueue(message.TopicWheelTimer, 0), tb.timers.Stats().Enqueued

			if r := tb.sendBack(msgID, "GT", tc.delayLevel, tc.maxTimes); r.Code != remoting.Success {
				t.Fatalf("send back: %d %q", r.Code, r.Remark)
			}
			got := tb.messagesOn(tc.wantTopic, tc.wantQueue)
			if len(got) != 1 {
				t.Fatalf("%s queue %d holds %d", tc.wantTopic, tc.wantQueue, len(got))
			}
			m := got[0]
			p := m.Properties
			if string(m.Body) != "SB1" || p["UNIQ_KEY"] != "SB1" || p["ORIGIN_MESSAGE_ID"] != msgID || m.ReconsumeTimes != 1 {
				t.Fatalf("sent-back message %q reconsume %d %v", m.Body, m.ReconsumeTimes, p)
			}
			if p[message.PropTimerOutMs] != orig.Properties[message.PropTimerOutMs] {
				t.Fatalf("TIMER_OUT_MS %q, want the first admission's %q", p[message.PropTimerOutMs], orig.Properties[message.PropTimerOutMs])
			}
			if tc.wantTopic == message.TopicSchedule {
				if p["DELAY"] != tc.wantLevel || p["REAL_TOPIC"] != "%RETRY%GT" {
					t.Fatalf("schedule record %v", p)
				}
				for _, k := range []string{message.PropTimerDelaySec, message.PropTimerDelayMs, message.PropTimerDeliverMs} {
					if _, ok := p[k]; ok {
						t.Fatalf("a delay level wins, yet %s stays: %v", k, p)
					}
				}
			} else if p["DELAY"] != "" || p[message.PropTimerDelaySec] != "5" {
				// The DLQ copy keeps the original's properties (no DELAY).
				t.Fatalf("DLQ record %v", p)
			}
			if tc.wantTopic == message.TopicSchedule {
				// The retry comes due on %RETRY%GT and still does not enter the wheel.
				clk.Advance(30 * time.Second)
				testutil.WaitFor(t, coreTestTimeout, func() bool { return len(tb.messagesOn("%RETRY%GT", 0)) == 1 }, "retry delivery")
			}
			if w := tb.Store().MaxOffsetInQueue(message.TopicWheelTimer, 0); w != wheelBefore {
				t.Fatalf("send back put %d records on %s", w-wheelBefore, message.TopicWheelTimer)
			}
			if st := tb.timers.Stats(); st.Enqueued != enqBefore || st.Pending != 0 {
				t.Fatalf("send back re-admitted the message as a timer: %+v", st)
			}
		})
	}
}

// A delivered timer message sent back keeps flowing: once on %RETRY%, a
// second failure goes to the next level, again beside the wheel.
func TestTimerMessageRetriedTwice(t *testing.T) {
	tb, clk := startDelayBroker(t)
	_, msgID := deliveredTimer(t, tb, clk.Advance, "TSB2", "SB2")
	wheelBefore := tb.Store().MaxOffsetInQueue(message.TopicWheelTimer, 0)
	if r := tb.sendBack(msgID, "GT2", 0, "16"); r.Code != remoting.Success {
		t.Fatalf("send back: %d %q", r.Code, r.Remark)
	}
	clk.Advance(10 * time.Second)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(tb.messagesOn("%RETRY%GT2", 0)) == 1 }, "retry delivery")
	retry := tb.messagesOn("%RETRY%GT2", 0)[0]
	if r := tb.sendBack(message.CreateMessageID(tb.host, retry.PhysicalOffset), "GT2", 0, "16"); r.Code != remoting.Success {
		t.Fatalf("second send back: %d %q", r.Code, r.Remark)
	}
	second := tb.messagesOn(message.TopicSchedule, 3) // level 4
	if len(second) != 1 || second[0].ReconsumeTimes != 2 || second[0].Properties["ORIGIN_MESSAGE_ID"] != msgID {
		t.Fatalf("level 4 queue holds %d", len(second))
	}
	if w := tb.Store().MaxOffsetInQueue(message.TopicWheelTimer, 0); w != wheelBefore {
		t.Fatalf("retries put %d records on %s", w-wheelBefore, message.TopicWheelTimer)
	}
}
