package timer

import (
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/message"
)

func TestDeliverAtExactTime(t *testing.T) {
	e := newEnv(t, nil)
	now := e.nowMs()
	m := e.sendAt("Orders", now+1500)
	if m.Topic != message.TopicWheelTimer {
		t.Fatalf("not rewritten: %s", m.Topic)
	}
	e.settle()
	e.advance(1499 * time.Millisecond)
	e.settle()
	if got := e.got("Orders"); len(got) != 0 {
		t.Fatalf("delivered %d messages 1 ms early", len(got))
	}
	e.advance(time.Millisecond)
	got := e.waitCount("Orders", 1)
	d := got[0]
	if d.Properties[message.PropUniqKey] != m.Properties[message.PropUniqKey] || string(d.Body) != string(m.Body) {
		t.Fatalf("wrong message %v", d.Properties)
	}
	deq, _ := strconv.ParseInt(d.Properties[message.PropTimerDequeueMs], 10, 64)
	if deq != now+1500 {
		t.Fatalf("TIMER_DEQUEUE_MS = %d, want %d", deq, now+1500)
	}
	if d.Properties[message.PropRealTopic] != "Orders" || d.Properties[message.PropTimerOutMs] != strconv.FormatInt(now+1500, 10) {
		t.Fatalf("stock keeps REAL_TOPIC and TIMER_OUT_MS: %v", d.Properties)
	}
	if enq, _ := strconv.ParseInt(d.Properties[message.PropTimerEnqueueMs], 10, 64); enq != now {
		t.Fatalf("TIMER_ENQUEUE_MS = %d, want the write slot %d", enq, now)
	}
	st := e.ts().Stats()
	if st.Delivered != 1 || st.Enqueued != 1 || st.Pending != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// The timer store's reads of its queue are not a consumer's gets: they
// leave the store's getMessageTimesTotal (GET_BROKER_RUNTIME_INFO) alone, as
// the Java TimerMessageStore, which reads its consume queue directly, leaves
// DefaultMessageStore.getMessage's counters.
func TestTimerQueueReadsAreNotCountedAsGets(t *testing.T) {
	e := newEnv(t, nil)
	e.sendAt("Orders", e.nowMs()+1000)
	e.settle()
	e.advance(time.Second)
	e.waitFor("the delivery", func() bool { return e.st.MaxOffsetInQueue("Orders", 0) == 1 })
	info := e.st.RuntimeInfo()
	if info["getMessageTimesTotal"] != "0" || info["getMessageTimesTotalFound"] != "0" {
		t.Fatalf("getMessageTimesTotal %s, getMessageTimesTotalFound %s after the timer store read its queue; want 0 and 0",
			info["getMessageTimesTotal"], info["getMessageTimesTotalFound"])
	}
}

// A record a Java 5.x master wrote (a mixed group, delivered here after a
// failover) has TIMER_OUT_MS rounded down to Java's 1 s precision; rmq
// delivers it at the TIMER_DELIVER_MS the producer asked for, never at the
// rounded time (the failover soak's mixed variants saw timers up to 808 ms
// early before recordDue).
func TestJavaWrittenRecordNotEarly(t *testing.T) {
	e := newEnv(t, nil)
	asked := e.nowMs() + 1500
	out := asked / 1000 * 1000 // HookUtils.transformTimerMessage, timerPrecisionMs 1000
	if asked%1000 == 0 {
		out = asked - 1000
	}
	e.send(message.TopicWheelTimer, map[string]string{
		message.PropTimerDeliverMs: strconv.FormatInt(asked, 10), message.PropTimerOutMs: strconv.FormatInt(out, 10),
		message.PropRealTopic: "Orders", message.PropRealQueueID: "0",
	})
	e.settle()
	e.advance(time.Duration(asked-e.nowMs()-1) * time.Millisecond)
	e.settle()
	if got := e.got("Orders"); len(got) != 0 {
		t.Fatalf("a Java-written record was delivered at %d, %d ms before the asked %d", e.nowMs(), asked-e.nowMs(), asked)
	}
	e.advance(time.Millisecond)
	e.waitCount("Orders", 1)
}
