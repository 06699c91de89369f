package timer

import (
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/message"
)

// TestRoll_Issue11156_OncePerWindowAcrossRestarts sends messages due several
// roll windows ahead and restarts (cleanly and by crash) while they roll. Each
// must be delivered once, at its time, and rolled exactly once per window: the
// number of copies on the timer topic is 1 + TIMER_ROLL_TIMES (upstream
// #11156: an in-memory roll cursor re-rolled the same timers after restarts).
func TestRoll_Issue11156_OncePerWindowAcrossRestarts(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.WheelSlots = 300 // 30 s ring
		o.RollWindow = 10 * time.Second
	})
	start := e.nowMs()
	due := map[string]int64{}
	for _, d := range []int64{25_000, 34_567, 47_300, 60_000, 10_000, 9_999} {
		m := e.sendAt("Far", start+d)
		due[m.Properties[message.PropUniqKey]] = start + d
	}
	for step := 1; step <= 45; step++ {
		e.settle()
		e.advance(1500 * time.Millisecond)
		switch {
		case step%10 == 0:
			e.restart()
		case step%7 == 0:
			e.settle()
			if err := e.ts().Flush(); err != nil {
				t.Fatal(err)
			}
			e.crashRestart() // nothing happened since the flush: no duplicates either
		}
		e.settle()
		now := e.nowMs()
		for _, m := range e.got("Far") {
			if at := due[m.Properties[message.PropUniqKey]]; at > now {
				t.Fatalf("delivered %d ms early", at-now)
			}
		}
	}
	got := e.got("Far")
	if len(got) != len(due) {
		t.Fatalf("delivered %d of %d: %v", len(got), len(due), uniqCounts(got))
	}
	copies := uniqCounts(e.got(message.TopicWheelTimer))
	t.Logf("timer-topic copies per message: %v", copies)
	for _, m := range got {
		uk := m.Properties[message.PropUniqKey]
		rolls, _ := strconv.Atoi(m.Properties[message.PropTimerRollTimes])
		windows := int((due[uk] - start) / 10_000)
		if copies[uk] != 1+rolls {
			t.Errorf("%s: %d copies on the timer topic, rolled %d times", uk, copies[uk], rolls)
		}
		if rolls > windows {
			t.Errorf("%s due %d ms ahead rolled %d times (> %d windows)", uk, due[uk]-start, rolls, windows)
		}
		if due[uk]-start >= 11_000 && rolls == 0 {
			t.Errorf("%s due %d ms ahead was not rolled", uk, due[uk]-start)
		}
	}
	if st := e.ts().Stats(); st.Pending != 0 || st.Skipped != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestTimer_Issue5376_MaxDelay90Days: a 90-day delay is admitted with timerMaxDelaySec =
// 90 days and arrives after many rolls (upstream #5376 overflowed int32 above
// 24.8 days).
func TestTimer_Issue5376_MaxDelay90Days(t *testing.T) {
	const days90 = 90 * 86400
	e := newEnv(t, func(o *Options) {
		o.MaxDelaySec = days90
		o.PrecisionMs = 1000
		o.WheelSlots = 3 * 86400 // 3-day ring
		o.RollWindow = 36 * time.Hour
	})
	// Off the 100 ms grid: a rolled relative record on it could be a Java
	// broker's rounded one and waits out+1s (recordDue;
	// TestRolledRelativeRecordOnJavaGrid).
	e.advance(time.Millisecond)
	m := e.send("Far", map[string]string{message.PropTimerDelaySec: strconv.Itoa(days90)})
	at := e.nowMs() + days90*1000
	if _, err := e.trySend("Far", map[string]string{message.PropTimerDelaySec: strconv.Itoa(days90 + 1)}); err == nil {
		t.Fatal("a delay beyond 90 days admitted")
	}
	for e.nowMs()+(12*time.Hour).Milliseconds() < at {
		e.settle()
		e.advance(12 * time.Hour)
	}
	e.settle()
	if got := e.got("Far"); len(got) != 0 {
		t.Fatalf("delivered early: now %d due %d props %v", e.nowMs(), at, got[0].Properties)
	}
	e.clk.Set(time.UnixMilli(at - 1))
	e.settle()
	if n := len(e.got("Far")); n != 0 {
		t.Fatal("delivered 1 ms early")
	}
	e.advance(time.Millisecond)
	got := e.waitCount("Far", 1)
	if got[0].Properties[message.PropUniqKey] != m.Properties[message.PropUniqKey] {
		t.Fatal("wrong message")
	}
	rolls, _ := strconv.Atoi(got[0].Properties[message.PropTimerRollTimes])
	// At most once per 36 h window; at least once per window plus the 12 h
	// clock step by which a roll can be late here.
	if rolls < 45 || rolls > 60 {
		t.Fatalf("rolled %d times over 90 days with a 36 h window", rolls)
	}
}
