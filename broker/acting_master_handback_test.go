package broker

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/brokertest"
	"github.com/rmqio/rmq/message"
)

// The master of an acting-master pair goes with n delay-level messages
// and n timers stored, and one of each due later. The slave acts and
// escapes the 2n to the other group's master. The master comes back: it
// takes the slave's delay offsets and timer checkpoint before its
// services deliver anything (takeBackFromActingSlave), so it delivers none
// of the 2n again (before the hand-back: all 2n twice), and the two later
// ones once each, not a millisecond early, with nothing lost.
func TestActingMasterHandBackBoundsDuplicates(t *testing.T) {
	const n = 5
	ns := startActingNamesrv(t)
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	master, slave, other := actingTrio(t, ns, "am-h", "am-i", clk, nil)
	for _, tb := range []*testBroker{master, other} {
		createTopic(t, tb, "AMH", 2)
	}
	t0 := clk.Now()
	timerAt := func(uniq string, due time.Time) sendArgs {
		return sendArgs{topic: "AMH", body: []byte(uniq), props: coreProps(message.PropTimerDeliverMs, strconv.FormatInt(due.UnixMilli(), 10), "UNIQ_KEY", uniq)}
	}
	delayed := func(uniq, level string) sendArgs {
		return sendArgs{topic: "AMH", body: []byte(uniq), props: coreProps("DELAY", level, "UNIQ_KEY", uniq)}
	}
	var acted []string
	for i := range n {
		d, tm := fmt.Sprintf("D%d", i), fmt.Sprintf("T%d", i)
		master.mustSend(delayed(d, "3"))                     // 10 s
		master.mustSend(timerAt(tm, t0.Add(20*time.Second))) // 20 s
		acted = append(acted, d, tm)
	}
	lateDelayDue, lateTimerDue := t0.Add(2*time.Minute), t0.Add(150*time.Second)
	master.mustSend(delayed("D-LATE", "6")) // 2 min
	master.mustSend(timerAt("T-LATE", lateTimerDue))
	replicated(t, master, slave)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return slave.timers.Stats().Pending == n+1 }, "the slave's wheel to hold the timers")

	master.stop()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return slave.SpecialServicesRunning() }, "the slave to act as master")
	clk.Advance(20 * time.Second)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(uniqs(other, "AMH", 2)) == 2*n }, "the slave to escape the 2n to am-i")
	// The slave's timer progress is answered from its durable checkpoint,
	// written every timerFlushIntervalMs of the clock.
	covered := func() bool { return slave.timers.StockCheckpoint().LastReadTimeMs > t0.Add(20*time.Second).UnixMilli() }
	for i := 0; i < 20 && !covered(); i++ { // at most t0+40s: the later two stay ahead
		clk.Advance(time.Second)
		deadline := time.Now().Add(250 * time.Millisecond)
		for !covered() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if !covered() {
		t.Fatalf("the slave's timer checkpoint %+v does not pass the timers it delivered", slave.timers.StockCheckpoint())
	}

	back := startBrokerWith(t, master.opts, nil)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return !slave.SpecialServicesRunning() }, "the slave to stop acting")

	// Markers sent now: once each is delivered, its level (its slot) has
	// passed everything stored before it.
	back.mustSend(delayed("D-MARK", "3"))
	back.mustSend(timerAt("T-MARK", clk.Now().Add(20*time.Second)))
	clk.Advance(10 * time.Second)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return uniqs(back, "AMH", 2)["D-MARK"] == 1 }, "the delay marker")
	clk.Advance(10 * time.Second)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return uniqs(back, "AMH", 2)["T-MARK"] == 1 }, "the timer marker")
	dups := 0
	for _, u := range acted {
		dups += uniqs(back, "AMH", 2)[u]
	}
	if dups != 0 {
		t.Fatalf("the returning master delivered %d of the %d the slave had delivered again: %v", dups, 2*n, uniqs(back, "AMH", 2))
	}

	// The later two: not early, then once.
	for _, late := range []struct {
		uniq string
		due  time.Time
	}{{"D-LATE", lateDelayDue}, {"T-LATE", lateTimerDue}} {
		clk.Set(late.due.Add(-time.Millisecond))
		time.Sleep(50 * time.Millisecond) // a delivery, were it early, has time to land
		if got := uniqs(back, "AMH", 2)[late.uniq] + uniqs(other, "AMH", 2)[late.uniq]; got != 0 {
			t.Fatalf("%s delivered early", late.uniq)
		}
		clk.Set(late.due)
		testutil.WaitFor(t, coreTestTimeout, func() bool { return uniqs(back, "AMH", 2)[late.uniq] == 1 }, late.uniq+" delivered")
	}
	all := uniqs(back, "AMH", 2)
	for u, c := range uniqs(other, "AMH", 2) {
		all[u] += c
	}
	for _, u := range append(acted, "D-LATE", "T-LATE", "D-MARK", "T-MARK") {
		if all[u] != 1 {
			t.Fatalf("%s delivered %d times (all: %v)", u, all[u], all)
		}
	}
	if len(all) != 2*n+4 {
		t.Fatalf("deliveries: %v", all)
	}
}

// The master goes with an undecided half message; the slave acts and
// escapes it to the other group's master (which checks it from then on).
// The returning master takes the slave's check progress: its walk never
// checks the escaped one again (before the hand-back it did, once past its
// transactionTimeOut), and a half message sent to it after its return is
// checked at its timeout, not lost.
func TestActingMasterHandBackTransactionCheck(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	const interval, timeout = 10 * time.Second, 30 * time.Second
	master, slave, other := actingTrio(t, startActingNamesrv(t), "am-j", "am-k", clk, func(o *Options) {
		o.TransactionCheckInterval, o.TransactionTimeOut = interval.Milliseconds(), timeout.Milliseconds()
	})
	for _, tb := range []*testBroker{master, other} {
		createTopic(t, tb, "AMJ", 1)
	}
	sendHalfBorn(t, master, clk, "AMJ", "TXH-ESCAPED")
	replicated(t, master, slave)

	master.stop()
	testutil.WaitFor(t, coreTestTimeout, func() bool { return slave.SpecialServicesRunning() && slave.tx.Active() }, "the slave to act as master")
	clk.Advance(interval)
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		off, _ := slave.clients.Offsets.Query(message.GroupTransCheck, message.TopicTransHalf, 0)
		return slave.tx.Stats().Escaped == 1 && off == 1
	}, "the slave's walk to escape the half message")
	if got := uniqs(other, message.TopicTransHalf, 1); got["TXH-ESCAPED"] != 1 {
		t.Fatalf("half messages on am-k: %v", got)
	}

	back := startBrokerWith(t, master.opts, nil)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return !slave.SpecialServicesRunning() }, "the slave to stop acting")
	prod := brokertest.ConnectTxProducer(t, back.Addr(), "PGA", "handback")
	sendHalfBorn(t, back, clk, "AMJ", "TXH-AFTER")
	checked := func() map[string]int {
		got := map[string]int{}
		for _, c := range prod.Received() {
			if ext, _ := message.DecodeRecord(c.Body); ext != nil {
				got[ext.Properties[message.PropUniqKey]]++
			}
		}
		return got
	}
	// TXH-AFTER is past its timeout after four intervals; the walk reaches
	// it only past TXH-ESCAPED, stored before it.
	for i := 0; i < 4; i++ {
		passes := back.tx.Stats().Passes
		clk.Advance(interval)
		testutil.WaitFor(t, coreTestTimeout, func() bool { return back.tx.Stats().Passes > passes }, "a check pass on the returning master")
	}
	testutil.WaitFor(t, coreTestTimeout, func() bool { return checked()["TXH-AFTER"] > 0 }, "the returning master's check of TXH-AFTER")
	if got := checked(); got["TXH-ESCAPED"] != 0 {
		t.Fatalf("the returning master checked the half message the slave escaped again: %v", got)
	}
	// Only forward, and only within the half queue.
	end := back.Store().MaxOffsetInQueue(message.TopicTransHalf, 0)
	if back.tx.AdvanceProgress(0) || back.tx.AdvanceProgress(end+1) {
		t.Fatalf("progress taken backwards or past the half queue's end %d", end)
	}
}
