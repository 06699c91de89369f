package broker

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqio/rmq/broker/transaction"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// storeSizedDisk is a store.DiskUsage whose use follows the store's
// commitlog: (max - min) / capacity once on, 30 % before.
type storeSizedDisk struct {
	st       atomic.Pointer[store.Store]
	capacity int64
}

func (d *storeSizedDisk) Usage(string) (float64, int64, error) {
	st := d.st.Load()
	if st == nil {
		return 0.30, 1 << 40, nil
	}
	return float64(st.MaxPhyOffset()-st.MinPhyOffset()) / float64(d.capacity), 1 << 40, nil
}

// txChecks records the checks the transaction service sends.
type txChecks struct {
	mu     sync.Mutex
	checks []transaction.Check
}

func (c *txChecks) Check(ch transaction.Check) bool {
	c.mu.Lock()
	c.checks = append(c.checks, ch)
	c.mu.Unlock()
	return true
}

func (c *txChecks) all() []transaction.Check {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]transaction.Check(nil), c.checks...)
}

// settle waits until the broker's delayed deliveries due at the message
// clock's now are done.
func settle(t *testing.T, tb *testBroker) {
	t.Helper()
	testutil.WaitFor(t, coreTestTimeout, func() bool { _, _, busy := tb.NextDue(); return !busy }, "deliveries due now")
}

// countOn counts the messages with body body on topic's four queues.
func countOn(tb *testBroker, topic, body string) (n int, last *message.MessageExt) {
	for q := int32(0); q < 4; q++ {
		for _, m := range tb.messagesOn(topic, q) {
			if string(m.Body) == body {
				n, last = n+1, m
			}
		}
	}
	return n, last
}

// Issue 42 defect 6: a pending timer, a pending delay-level message and an
// undecided half message in the oldest commitlog file of a disk over the
// warning ratio (sends refused) and the forcible ratio. The forced round
// re-stores them ahead and deletes the file, sends are accepted again, the
// timer and the delay-level message are delivered at their time on the
// message clock and not before, the delay-level one with the properties a
// level's delivery has, and the half message is checked (about its copy)
// and committed. Before the fix the file was kept and every send refused
// until the last of them fell due.
func TestRetentionForcedRoundEvacuatesPending(t *testing.T) {
	disk := &storeSizedDisk{capacity: 280 << 10}
	tb, clk, _ := startRetentionBroker(t, func(o *Options) {
		o.TimerFlushIntervalMs = 100
		o.TransactionTimeOut = (30 * time.Second).Milliseconds()
		o.TransactionCheckInterval = (10 * time.Minute).Milliseconds()
		inner := o.storeOptions
		o.storeOptions = func(so *store.Options) { inner(so); so.Retention.DiskUsage = disk }
	})
	checks := &txChecks{}
	tb.Transactions().SetChecker(checks)

	timerDue := at0300.Add(5 * time.Minute)
	tm := tb.mustSend(sendArgs{topic: "EvTm", body: []byte("timer"), props: coreProps(message.PropTimerDeliverMs, strconv.FormatInt(timerDue.UnixMilli(), 10), "UNIQ_KEY", "UTIMER")})
	dl := tb.mustSend(sendArgs{topic: "EvDl", body: []byte("delay"), queueID: 2, props: coreProps("DELAY", "5", "TAGS", "tD", "UNIQ_KEY", "UDELAY")}) // 1 min
	hf := tb.mustSend(sendArgs{topic: "EvHf", body: []byte("half"), props: coreProps("TRAN_MSG", "true", "PGROUP", "pg", "UNIQ_KEY", "UHALF")})
	var origs []int64
	for _, r := range []*remoting.Command{tm, dl, hf} {
		_, phy, err := message.DecodeMessageID(r.ExtFields["msgId"])
		if err != nil {
			t.Fatal(err)
		}
		origs = append(origs, phy)
	}
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.timers.Stats().Pending == 1 }, "timer enqueued")
	fillFiles(t, tb, 4)
	clk.Advance(200 * time.Millisecond) // a timer checkpoint covers the enqueue
	settle(t, tb)

	disk.st.Store(tb.Store())
	// Over the warning ratio (sends refused) and the forcible one: the
	// cleanup goroutine may run the forced round itself.
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		tb.Store().CleanNow()
		return tb.Store().MinPhyOffset() > max(origs[0], origs[1], origs[2])
	}, "oldest files deleted under the pending messages")
	tb.mustSend(sendArgs{topic: "EvT", body: []byte("accepted")})
	if st := tb.timers.Stats(); st.Evacuated == 0 {
		t.Fatalf("timer stats %+v: nothing evacuated", st)
	}

	// The delay-level message: due one minute after it was stored.
	delayDue := at0300.Add(time.Minute)
	step := func(until time.Time) {
		for now := clk.Now(); now.Before(until); now = now.Add(5 * time.Second) {
			clk.Set(now)
			settle(t, tb)
		}
		clk.Set(until)
		settle(t, tb)
	}
	step(delayDue.Add(-time.Second))
	if n, _ := countOn(tb, "EvDl", "delay"); n != 0 {
		t.Fatalf("delay-level message delivered %d times before it was due", n)
	}
	step(delayDue.Add(time.Second))
	n, m := countOn(tb, "EvDl", "delay")
	if n != 1 {
		t.Fatalf("delay-level message delivered %d times at its time", n)
	}
	if m.QueueID != 2 || m.Properties["REAL_TOPIC"] != "EvDl" || m.Properties["REAL_QID"] != "2" || m.Properties["TAGS"] != "tD" ||
		m.Properties["UNIQ_KEY"] != "UDELAY" {
		t.Fatalf("delay-level delivery: queue %d properties %v", m.QueueID, m.Properties)
	}
	for _, k := range []string{"DELAY", message.PropTimerOutMs, message.PropTimerEnqueueMs, message.PropTimerDequeueMs, message.PropTimerRollTimes, "__RMQ_DELAY_LEVEL_COPY"} {
		if _, ok := m.Properties[k]; ok {
			t.Fatalf("delay-level delivery carries %s: %v", k, m.Properties)
		}
	}
	if m.StoreTimestamp < delayDue.UnixMilli() {
		t.Fatalf("delay-level message stored at %d, due %d", m.StoreTimestamp, delayDue.UnixMilli())
	}

	step(timerDue.Add(-time.Second))
	if n, _ := countOn(tb, "EvTm", "timer"); n != 0 {
		t.Fatalf("timer delivered %d times before it was due", n)
	}
	step(timerDue.Add(time.Second))
	if n, m := countOn(tb, "EvTm", "timer"); n != 1 || m.StoreTimestamp < timerDue.UnixMilli() || m.Properties["UNIQ_KEY"] != "UTIMER" {
		t.Fatalf("timer delivered %d times (%v)", n, m)
	}

	// The half message: checked about its copy at the first pass past its
	// timeout, then committed.
	step(at0300.Add(10*time.Minute + time.Second))
	cs := checks.all()
	if len(cs) != 1 || cs[0].TransactionID != "UHALF" || cs[0].CommitLogOffset <= origs[2] {
		t.Fatalf("checks %+v", cs)
	}
	if err := tb.Transactions().End("pg", cs[0].TranStateTableOffset, cs[0].CommitLogOffset, true, true, "UHALF"); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if n, _ := countOn(tb, "EvHf", "half"); n != 1 {
		t.Fatalf("committed half message delivered %d times", n)
	}
	if n, _ := countOn(tb, "EvDl", "delay"); n != 1 {
		t.Fatalf("delay-level message delivered %d times in all", n)
	}
	if n, _ := countOn(tb, "EvTm", "timer"); n != 1 {
		t.Fatalf("timer delivered %d times in all", n)
	}
}
