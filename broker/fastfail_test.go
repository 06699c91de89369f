package broker

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// stallMarker in a message body makes its commitlog write stall (under
// SYNC_FLUSH the write is a pwrite under the put lock).
const stallMarker = "STALL-THIS-PUT"

// stallBroker is a SYNC_FLUSH broker on a manual clock with one send-lane
// worker, whose commitlog write of a message carrying stallMarker stalls
// until release is called (at the latest when the test ends).
func stallBroker(t *testing.T) (tb *testBroker, clk *clock.Manual, inj *store.Injector, release func()) {
	t.Helper()
	clk = clock.NewManual(time.Unix(1_700_000_000, 0))
	inj = &store.Injector{}
	stall := make(chan struct{})
	inj.Add(store.Rule{Op: store.OpWrite, Path: "commitlog", Stall: stall, Data: func(b []byte) bool { return bytes.Contains(b, []byte(stallMarker)) }})
	tb = startBroker(t, func(o *Options) {
		o.FlushDiskType = "SYNC_FLUSH"
		o.Clock = clk
		o.SendMessageThreadPoolNums = 1
		o.FS = store.NewErrorFS(inj)
	})
	var once sync.Once
	release = func() { once.Do(func() { close(stall) }) }
	t.Cleanup(release)
	return tb, clk, inj, release
}

// batchSend sends a one-message batch (always served on the pool, so on
// the send lane) on its own goroutine and returns where its answer arrives.
func (tb *testBroker) batchSend(topic, body string) <-chan *remoting.Command {
	a := sendArgs{code: remoting.SendBatchMessage, topic: topic, batch: true}
	out := make(chan *remoting.Command, 1)
	go func() {
		resp, err := tb.json.InvokeTimeout(tb.listenAddr(), remoting.NewRequest(a.code, a.ext(), coreBatchBody(message.BatchEntry{Body: []byte(body)})), 30*time.Second)
		if err != nil {
			resp = remoting.NewResponse(remoting.NewRequest(0, nil, nil), -1, err.Error())
		}
		out <- resp
	}()
	return out
}

// waiting is how many requests wait in lane name.
func (tb *testBroker) waiting(name string) int {
	for _, w := range tb.ProcessorWatermarks() {
		if w.Processor == name {
			return w.Waiting
		}
	}
	return -1
}

// sweepThen advances clk by d once the fast-failure sweep sleeps on it for
// a full period, so that the sweep runs at most once, at the new time, and
// only if d reaches its deadline.
func sweepThen(t *testing.T, clk *clock.Manual, d time.Duration) {
	t.Helper()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return clk.HasTimerAt(clk.Now().Add(fastFailPeriod)) }, "the sweep to sleep")
	clk.Advance(d)
}

func answer(t *testing.T, ch <-chan *remoting.Command, what string) *remoting.Command {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(coreTestTimeout):
		t.Fatalf("no answer to %s", what)
		return nil
	}
}

// With the send lane's only worker held by a put stalled under the lock:
// a send that waits 200 ms (waitTimeMillsInSendQueue) in the lane is
// answered SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE]; once the lock has been held
// past osPageCacheBusyTimeOutMills a waiting send is answered
// [PCBUSY_CLEAN_QUEUE] and a new send is refused [REJECTREQUEST] before it
// is served or queued, inline or not. After the stall, sends succeed again.
func TestFastFailureAnswersTheStockRemarks(t *testing.T) {
	tb, clk, inj, release := stallBroker(t)
	for _, topic := range []string{"FFStall", "FFWait"} {
		tb.mustSend(sendArgs{topic: topic, body: []byte("create"), props: coreProps("WAIT", "false")})
	}

	held := tb.batchSend("FFStall", stallMarker)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(inj.Hits()) > 0 }, "the put to stall")
	first := tb.batchSend("FFWait", "first")
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.waiting(laneSend) == 1 }, "a send to wait in the lane")

	var kv remoting.KVTable
	if err := remoting.UnmarshalBody(tb.invoke(remoting.GetBrokerRuntimeInfo, nil, nil).Body, &kv); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"sendThreadPoolQueueSize": "1", "sendThreadPoolQueueCapacity": "10000",
		"sendThreadPoolQueueHeadWaitTimeMills": "0", "pageCacheLockTimeMills": "0", "pullThreadPoolQueueSize": "0"} {
		if kv.Table[k] != want {
			t.Errorf("runtime info %s = %q, want %q", k, kv.Table[k], want)
		}
	}
	sweepThen(t, clk, 190*time.Millisecond)
	sweepThen(t, clk, 5*time.Millisecond) // the next sweep is not due
	if tb.waiting(laneSend) != 1 {
		t.Fatal("the send expired after 190 ms")
	}
	clk.Advance(5 * time.Millisecond) // the sweep is due: 200 ms waited
	r := answer(t, first, "the waiting send")
	if want := fmt.Sprintf(timeoutCleanQueueRemark, 200, 0); r.Code != remoting.SystemBusy || r.Remark != want {
		t.Fatalf("waiting send: %d %q, want 2 %q", r.Code, r.Remark, want)
	}

	second := tb.batchSend("FFWait", "second")
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.waiting(laneSend) == 1 }, "a second send to wait")
	if tb.Store().IsOSPageCacheBusy() {
		t.Fatal("page cache busy after 200 ms")
	}
	if err := remoting.UnmarshalBody(tb.invoke(remoting.GetBrokerRuntimeInfo, nil, nil).Body, &kv); err != nil {
		t.Fatal(err)
	}
	if kv.Table["pageCacheLockTimeMills"] != "200" {
		t.Errorf("pageCacheLockTimeMills %q after the lock was held 200 ms", kv.Table["pageCacheLockTimeMills"])
	}
	sweepThen(t, clk, 801*time.Millisecond) // the lock is held 1001 ms
	r = answer(t, second, "the second waiting send")
	if want := fmt.Sprintf(pcBusyCleanQueueRemark, 801, 0); r.Code != remoting.SystemBusy || r.Remark != want {
		t.Fatalf("send waiting while busy: %d %q, want 2 %q", r.Code, r.Remark, want)
	}
	for _, code := range []int32{remoting.SendMessageV2, remoting.SendMessage} {
		r = tb.send(sendArgs{code: code, topic: "FFWait", body: []byte("inline")})
		if r.Code != remoting.SystemBusy || r.Remark != remoting.RejectRequestRemark {
			t.Fatalf("send %d while busy: %d %q, want 2 %q", code, r.Code, r.Remark, remoting.RejectRequestRemark)
		}
	}
	if tb.waiting(laneSend) != 0 {
		t.Fatal("a rejected send was queued")
	}
	for reason, want := range map[string]uint64{"queue_timeout_send": 1, "queue_page_cache_busy": 1, "send_rejected_page_cache_busy": 2} {
		if n := tb.Refusals().Total(reason, remoting.SystemBusy); n != want {
			t.Errorf("refusals %s: %d, want %d", reason, n, want)
		}
	}

	release()
	if r := answer(t, held, "the stalled send"); r.Code != remoting.Success {
		t.Fatalf("stalled send: %d %q", r.Code, r.Remark)
	}
	tb.mustSend(sendArgs{topic: "FFWait", body: []byte("after"), props: coreProps("WAIT", "false")})
}

// With brokerFastFailureEnable off (live, by UPDATE_BROKER_CONFIG) nothing
// expires: the waiting send is served once the worker is free.
func TestFastFailureDisabledKeepsWaiters(t *testing.T) {
	tb, clk, inj, release := stallBroker(t)
	if r := tb.invoke(remoting.UpdateBrokerConfig, nil, []byte("brokerFastFailureEnable=false\n")); r.Code != remoting.Success {
		t.Fatalf("update: %d %q", r.Code, r.Remark)
	}
	tb.mustSend(sendArgs{topic: "FFOff", body: []byte("create"), props: coreProps("WAIT", "false")})
	held := tb.batchSend("FFOff", stallMarker)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(inj.Hits()) > 0 }, "the put to stall")
	waiter := tb.batchSend("FFOff", "waiter")
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.waiting(laneSend) == 1 }, "a send to wait")
	sweepThen(t, clk, 500*time.Millisecond)
	sweepThen(t, clk, 10*time.Millisecond)
	if tb.waiting(laneSend) != 1 {
		t.Fatal("a waiter expired with brokerFastFailureEnable=false")
	}
	release()
	for _, ch := range []<-chan *remoting.Command{held, waiter} {
		if r := answer(t, ch, "a send"); r.Code != remoting.Success {
			t.Fatalf("send: %d %q", r.Code, r.Remark)
		}
	}
}

// A put refused because the page cache is busy is answered as stock
// SendMessageProcessor answers OS_PAGECACHE_BUSY: 1 [PC_SYNCHRONIZED].
func TestPageCacheBusyPutIsPCSynchronized(t *testing.T) {
	tb := startBroker(t, nil)
	code, remark, _ := tb.putFailureReason(fmt.Errorf("put: %w", store.ErrOSPageCacheBusy))
	if code != remoting.SystemError || remark != "[PC_SYNCHRONIZED]broker busy, start flow control for a while" {
		t.Fatalf("%d %q", code, remark)
	}
}

// The lane sizes are the stock executor keys; a size below 1 stops a start
// as stock's executors throw.
func TestLaneKeysValidateAndDefault(t *testing.T) {
	o := DefaultOptions()
	lanes := o.remotingLanes()
	if len(lanes) != 4 || lanes[0].Name != "send" || lanes[0].Workers != o.SendMessageThreadPoolNums || lanes[0].Capacity != 10000 ||
		lanes[1].Capacity != 100000 || lanes[2].Capacity != 50000 || lanes[3].Capacity != 100000 {
		t.Fatalf("lanes %+v", lanes)
	}
	o.PullThreadPoolQueueCapacity = 0
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "pullThreadPoolQueueCapacity 0 must be at least 1") {
		t.Fatalf("Validate: %v", err)
	}
}

// testPutStallMillis holds a marked message's put for that long on the
// broker clock (so that another process's clients can be tested against a
// saturated broker); it needs SYNC_FLUSH.
func TestPutStallHookHoldsTheMarkedPut(t *testing.T) {
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	tb := startBroker(t, func(o *Options) {
		o.FlushDiskType = "SYNC_FLUSH"
		o.Clock = clk
		o.TestPutStallMillis = 3000
		o.OsPageCacheBusyTimeOutMills = 1000
	})
	tb.mustSend(sendArgs{topic: "FFHook", body: []byte("create"), props: coreProps("WAIT", "false")})
	held := tb.batchSend("FFHook", PutStallMarker)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return clk.HasTimerAt(clk.Now().Add(3 * time.Second)) }, "the put to stall")
	clk.Advance(1001 * time.Millisecond)
	if !tb.Store().IsOSPageCacheBusy() {
		t.Fatal("the stalled put does not hold the put lock")
	}
	if r := tb.send(sendArgs{topic: "FFHook", body: []byte("x")}); r.Code != remoting.SystemBusy || r.Remark != remoting.RejectRequestRemark {
		t.Fatalf("send during the stall: %d %q", r.Code, r.Remark)
	}
	clk.Advance(2 * time.Second)
	if r := answer(t, held, "the stalled send"); r.Code != remoting.Success {
		t.Fatalf("stalled send: %d %q", r.Code, r.Remark)
	}
	o := DefaultOptions()
	o.TestPutStallMillis = 10
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "testPutStallMillis 10 needs") {
		t.Fatalf("Validate under ASYNC_FLUSH: %v", err)
	}
}

// A single-message send, which the event loop serves inline while the send
// lane has a free worker, waits in the lane while its only worker is held,
// and expires as stock's send executor's queue does: SYSTEM_BUSY
// [TIMEOUT_CLEAN_QUEUE] after waitTimeMillsInSendQueue.
func TestSingleSendWaitsBehindTheBusySendLane(t *testing.T) {
	tb, clk, inj, release := stallBroker(t)
	tb.mustSend(sendArgs{topic: "FFSingle", body: []byte("create"), props: coreProps("WAIT", "false")})
	held := tb.batchSend("FFSingle", stallMarker)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(inj.Hits()) > 0 }, "the put to stall")

	single := make(chan *remoting.Command, 1)
	go func() {
		single <- tb.send(sendArgs{code: remoting.SendMessageV2, topic: "FFSingle", body: []byte("single")})
	}()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.waiting(laneSend) == 1 }, "the single send to wait in the lane")
	sweepThen(t, clk, 200*time.Millisecond)
	r := answer(t, single, "the waiting single send")
	if want := fmt.Sprintf(timeoutCleanQueueRemark, 200, 0); r.Code != remoting.SystemBusy || r.Remark != want {
		t.Fatalf("single send behind the busy lane: %d %q, want 2 %q", r.Code, r.Remark, want)
	}
	release()
	if r := answer(t, held, "the stalled send"); r.Code != remoting.Success {
		t.Fatalf("stalled send: %d %q", r.Code, r.Remark)
	}
	tb.mustSend(sendArgs{topic: "FFSingle", body: []byte("after"), props: coreProps("WAIT", "false")})
}

// osPageCacheBusyTimeOutMills=0 is, as in stock (diff > 0), busy as soon as
// a put holds the lock, at start and when set live; it is not "off".
func TestPageCacheBusyTimeoutZeroIsBusyWhileHeld(t *testing.T) {
	tb, clk, inj, release := stallBroker(t)
	if r := tb.invoke(remoting.UpdateBrokerConfig, nil, []byte("osPageCacheBusyTimeOutMills=0\n")); r.Code != remoting.Success {
		t.Fatalf("update: %d %q", r.Code, r.Remark)
	}
	tb.mustSend(sendArgs{topic: "FFZero", body: []byte("create"), props: coreProps("WAIT", "false")})
	if tb.Store().IsOSPageCacheBusy() {
		t.Fatal("busy with no put holding the lock")
	}
	held := tb.batchSend("FFZero", stallMarker)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(inj.Hits()) > 0 }, "the put to stall")
	clk.Advance(time.Millisecond)
	if !tb.Store().IsOSPageCacheBusy() {
		t.Fatal("osPageCacheBusyTimeOutMills=0: not busy while a put holds the lock")
	}
	if r := tb.send(sendArgs{topic: "FFZero", body: []byte("x")}); r.Code != remoting.SystemBusy || r.Remark != remoting.RejectRequestRemark {
		t.Fatalf("send while busy: %d %q", r.Code, r.Remark)
	}
	release()
	if r := answer(t, held, "the stalled send"); r.Code != remoting.Success {
		t.Fatalf("stalled send: %d %q", r.Code, r.Remark)
	}
	if tb.Store().IsOSPageCacheBusy() {
		t.Fatal("busy after the put released the lock")
	}
	if pageCacheBusyTimeout(0) <= 0 || pageCacheBusyTimeout(-5) <= 0 || pageCacheBusyTimeout(1000) != time.Second {
		t.Fatalf("pageCacheBusyTimeout: %v %v %v", pageCacheBusyTimeout(0), pageCacheBusyTimeout(-5), pageCacheBusyTimeout(1000))
	}
}
