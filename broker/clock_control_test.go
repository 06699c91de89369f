package broker

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/broker/clockctl"
	"github.com/rmqio/rmq/broker/pop"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// fastForwardWire sends CLOCK_FAST_FORWARD with ext.
func (tb *testBroker) fastForwardWire(ext map[string]string) *remoting.Command {
	tb.t.Helper()
	resp, err := tb.json.InvokeTimeout(tb.listenAddr(), remoting.NewRequest(remoting.ClockFastForward, ext, nil), 30*time.Second)
	if err != nil {
		tb.t.Fatalf("CLOCK_FAST_FORWARD: %v", err)
	}
	return resp
}

func ffMs(d time.Duration) map[string]string {
	return map[string]string{"durationMs": strconv.FormatInt(d.Milliseconds(), 10)}
}

// With clockControlEnable off (the default) the request is refused and the
// message clock stays the wall clock: nothing on the send path changes.
func TestClockFastForwardRefusedWhenOff(t *testing.T) {
	tb := startBroker(t, nil)
	if _, ok := tb.msgClock.(clock.Real); !ok {
		t.Fatalf("message clock %T with clockControlEnable off, want the wall clock", tb.msgClock)
	}
	resp := tb.fastForwardWire(ffMs(time.Hour))
	if resp.Code != remoting.NoPermission || !strings.Contains(resp.Remark, "clockControlEnable=true") {
		t.Fatalf("answer %d %q, want NO_PERMISSION naming clockControlEnable=true", resp.Code, resp.Remark)
	}
	if _, err := tb.FastForward(context.Background(), time.Hour, time.Second); !errors.Is(err, clockctl.ErrClockFixed) {
		t.Fatalf("FastForward = %v, want clockctl.ErrClockFixed", err)
	}
	tb.mustSend(sendArgs{topic: "Off", body: []byte("m")})
	if got := tb.messagesOn("Off", 0); len(got) != 1 || time.Since(time.UnixMilli(got[0].StoreTimestamp)).Abs() > time.Minute {
		t.Fatalf("stored %d messages, want one stamped by the wall clock", len(got))
	}
}

// Bad headers get INVALID_PARAMETER or SYSTEM_ERROR with the reason, and
// leave the clock where it was.
func TestClockFastForwardBadHeader(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.ClockControlEnable = true })
	off := tb.msgClock.(*clock.Offset)
	for _, c := range []struct {
		ext  map[string]string
		code int32
		want string
	}{
		{nil, remoting.SystemError, "durationMs"},
		{map[string]string{"durationMs": "x"}, remoting.SystemError, "durationMs"},
		{map[string]string{"durationMs": "-1"}, remoting.InvalidParameter, "durationMs -1 is illegal"},
		{map[string]string{"durationMs": strconv.FormatInt(clockctl.MaxFastForward.Milliseconds()+1, 10)}, remoting.InvalidParameter, "is illegal"},
		{map[string]string{"durationMs": "1000", "timeoutMs": "0"}, remoting.InvalidParameter, "timeoutMs 0 is illegal"},
		{map[string]string{"durationMs": "1000", "timeoutMs": "600000"}, remoting.InvalidParameter, "timeoutMs 600000 is illegal"},
	} {
		resp := tb.fastForwardWire(c.ext)
		if resp.Code != c.code || !strings.Contains(resp.Remark, c.want) {
			t.Errorf("%v: answer %d %q, want %d with %q", c.ext, resp.Code, resp.Remark, c.code, c.want)
		}
	}
	if off.Offset() != 0 {
		t.Fatalf("offset %v after refused requests", off.Offset())
	}
}

// With the key on, the broker's message clock is a clock.Offset, and
// CLOCK_FAST_FORWARD steps it through what falls due: a delay level 16
// (30 min) message and a 2-hour timer are delivered in due order, each at
// (never before) its due time on that clock, and not before a jump reaches
// it. No test time is spent waiting for the due times.
func TestClockFastForwardDeliversInOrderNeverEarly(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.ClockControlEnable = true })
	off, ok := tb.msgClock.(*clock.Offset)
	if !ok {
		t.Fatalf("message clock %T with clockControlEnable on, want *clock.Offset", tb.msgClock)
	}
	timerAt := off.Now().Add(2 * time.Hour).UnixMilli()
	tb.mustSend(sendArgs{topic: "FF", body: []byte("timer-2h"), props: coreProps(message.PropTimerDeliverMs, strconv.FormatInt(timerAt, 10))})
	tb.mustSend(sendArgs{topic: "FF", body: []byte("level-16"), props: coreProps("DELAY", "16")})
	sched := tb.messagesOn(message.TopicSchedule, 15)
	if len(sched) != 1 {
		t.Fatalf("schedule queue of level 16 holds %d messages", len(sched))
	}
	levelAt := sched[0].StoreTimestamp + (30 * time.Minute).Milliseconds()

	// 29 minutes: short of both (by a minute of real time to spare).
	before := off.Now()
	resp := tb.fastForwardWire(ffMs(29 * time.Minute))
	if resp.Code != remoting.Success {
		t.Fatalf("fast-forward 29m: %d %q", resp.Code, resp.Remark)
	}
	bt, off1 := coreExtInt(t, resp, "brokerTime"), coreExtInt(t, resp, "clockOffsetMs")
	if bt < before.Add(29*time.Minute).UnixMilli() || bt > off.Now().UnixMilli() {
		t.Fatalf("brokerTime %d, want at least %d and at most the clock's now", bt, before.Add(29*time.Minute).UnixMilli())
	}
	// The jump ends at the start's now + 29 min: the offset grew by 29 min
	// less the real time the jump took.
	if off1 <= (28*time.Minute).Milliseconds() || off1 > (29*time.Minute).Milliseconds() {
		t.Fatalf("clockOffsetMs %d, want 29 min less the jump's real time", off1)
	}
	if got := tb.messagesOn("FF", 0); len(got) != 0 {
		t.Fatalf("%d messages delivered 29 min after the send, want none", len(got))
	}
	// 2 more minutes: the level-16 message, not the timer.
	if resp := tb.fastForwardWire(ffMs(2 * time.Minute)); resp.Code != remoting.Success {
		t.Fatalf("fast-forward 2m: %d %q", resp.Code, resp.Remark)
	}
	got := tb.messagesOn("FF", 0)
	if len(got) != 1 || string(got[0].Body) != "level-16" {
		t.Fatalf("after 31 min: %d messages, want level-16 alone", len(got))
	}
	// Stepped: stored at its due time on the message clock, not at the
	// jump's end (real time between the steps aside).
	if ts := got[0].StoreTimestamp; ts < levelAt || ts > levelAt+(20*time.Second).Milliseconds() {
		t.Fatalf("level-16 stored at %d, due at %d", ts, levelAt)
	}
	// 3 hours: the timer, at its time.
	if resp := tb.fastForwardWire(ffMs(3 * time.Hour)); resp.Code != remoting.Success {
		t.Fatalf("fast-forward 3h: %d %q", resp.Code, resp.Remark)
	}
	got = tb.messagesOn("FF", 0)
	if len(got) != 2 || string(got[1].Body) != "timer-2h" {
		t.Fatalf("after 3h31m: %d messages, want level-16 then timer-2h", len(got))
	}
	if ts := got[1].StoreTimestamp; ts < timerAt || ts > timerAt+(20*time.Second).Milliseconds() {
		t.Fatalf("timer stored at %d, due at %d", ts, timerAt)
	}
	if off.Offset() < 3*time.Hour+30*time.Minute {
		t.Fatalf("offset %v after the jumps", off.Offset())
	}
}

// One jump over both: still in due order and each at its own time, the
// delay level first although the timer was sent first.
func TestClockFastForwardOneJumpSteps(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.ClockControlEnable = true })
	off := tb.msgClock.(*clock.Offset)
	timerAt := off.Now().Add(2 * time.Hour).UnixMilli()
	tb.mustSend(sendArgs{topic: "FF1", body: []byte("timer-2h"), props: coreProps(message.PropTimerDeliverMs, strconv.FormatInt(timerAt, 10))})
	tb.mustSend(sendArgs{topic: "FF1", body: []byte("level-16"), props: coreProps("DELAY", "16")})
	levelAt := tb.messagesOn(message.TopicSchedule, 15)[0].StoreTimestamp + (30 * time.Minute).Milliseconds()
	if resp := tb.fastForwardWire(ffMs(2*time.Hour + time.Minute)); resp.Code != remoting.Success {
		t.Fatalf("fast-forward: %d %q", resp.Code, resp.Remark)
	}
	got := tb.messagesOn("FF1", 0)
	if len(got) != 2 || string(got[0].Body) != "level-16" || string(got[1].Body) != "timer-2h" {
		t.Fatalf("%d messages, want level-16 then timer-2h", len(got))
	}
	for i, due := range []int64{levelAt, timerAt} {
		if ts := got[i].StoreTimestamp; ts < due || ts > due+(20*time.Second).Milliseconds() {
			t.Errorf("%s stored at %d, due at %d", got[i].Body, ts, due)
		}
	}
}

// A jump whose deliveries do not settle in time is answered with the
// reason (what it waited for) instead of holding the worker: here the
// dispatch of one message is held up.
func TestClockFastForwardSettleTimeout(t *testing.T) {
	release, blocked := make(chan struct{}), make(chan struct{}, 1)
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	tb := startBroker(t, func(o *Options) {
		o.ClockControlEnable = true
		o.storeOptions = func(so *store.Options) {
			next := so.OnDispatch
			so.OnDispatch = func(d store.DispatchRequest) {
				if d.Topic == "Stuck" {
					blocked <- struct{}{}
					<-release
				}
				next(d)
			}
		}
	})
	t.Cleanup(free) // before the broker's shutdown (cleanups run last first)
	// Stored from a goroutine of the test: the dispatch it may run inline
	// blocks here, not on an event loop.
	put := make(chan error, 1)
	go func() {
		_, err := tb.Store().PutMessage(&message.Message{Topic: "Stuck", Body: []byte("m"), BornTimestamp: time.Now().UnixMilli(), BornHost: tb.host})
		put <- err
	}()
	<-blocked
	resp := tb.fastForwardWire(map[string]string{"durationMs": "60000", "timeoutMs": "300"})
	if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "not done after") ||
		!strings.Contains(resp.Remark, "(timeout)") || !strings.Contains(resp.Remark, "busy: dispatch") {
		t.Fatalf("answer %d %q, want SYSTEM_ERROR naming the timeout and the dispatch", resp.Code, resp.Remark)
	}
	// The Go entry point gives the same as an error.
	_, err := tb.FastForward(context.Background(), time.Minute, 100*time.Millisecond)
	var se *clockctl.SettleError
	if !errors.As(err, &se) || se.Cause != "timeout" || !strings.Contains(se.Report, "dispatch") {
		t.Fatalf("FastForward = %v, want a SettleError for the dispatch", err)
	}
	free()
	if err := <-put; err != nil {
		t.Fatal(err)
	}
	if resp := tb.fastForwardWire(ffMs(time.Minute)); resp.Code != remoting.Success {
		t.Fatalf("fast-forward after the release: %d %q", resp.Code, resp.Remark)
	}
}

// POP invisible time runs on the message clock too: a message popped after
// the clock was moved an hour ahead stays invisible for its 60 s on that
// clock (its revive trigger is not already due by the hour the clock runs
// ahead), and a jump over the 60 s brings it back, not before its time.
func TestClockFastForwardPopInvisible(t *testing.T) {
	tb := startBroker(t, func(o *Options) { o.ClockControlEnable = true })
	tb.mustSend(sendArgs{topic: "PopFF", body: []byte("p")})
	tb.waitDispatched()
	if resp := tb.fastForwardWire(ffMs(time.Hour)); resp.Code != remoting.Success {
		t.Fatalf("fast-forward 1h: %d %q", resp.Code, resp.Remark)
	}
	popOne := func() *pop.PopResult {
		t.Helper()
		res, err := tb.Pop().Pop(pop.PopRequest{Group: "GFF", Topic: "PopFF", QueueID: -1, MaxMsgs: 1, Invisible: 60000})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := popOne()
	if len(first.Messages) != 1 {
		t.Fatalf("first pop took %d messages", len(first.Messages))
	}
	if d := time.Until(time.UnixMilli(first.PopTime)); d < 59*time.Minute {
		t.Fatalf("pop time %v ahead of the wall clock, want the message clock's hour", d)
	}
	if _, _, err := tb.WaitSettled(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if again := popOne(); len(again.Messages) != 0 {
		t.Fatalf("the message came back %v after its pop, within its invisible time", time.Duration(again.PopTime-first.PopTime)*time.Millisecond)
	}
	if resp := tb.fastForwardWire(ffMs(61 * time.Second)); resp.Code != remoting.Success {
		t.Fatalf("fast-forward 61s: %d %q", resp.Code, resp.Remark)
	}
	var back *pop.PopResult
	for range 10 { // the retry topic is read first only part of the time
		if back = popOne(); len(back.Messages) != 0 {
			break
		}
	}
	if len(back.Messages) != 1 || string(back.Messages[0].Ext.Body) != "p" {
		t.Fatalf("after the invisible time: %d messages", len(back.Messages))
	}
	if revived := back.Messages[0].Ext.StoreTimestamp; revived < first.PopTime+60000 {
		t.Fatalf("revived at %d, before the invisible time's end %d", revived, first.PopTime+60000)
	}
}
