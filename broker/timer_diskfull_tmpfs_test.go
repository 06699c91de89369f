//go:build linux

package broker

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// Timer messages sent until the broker's disk (a tmpfs, the small store)
// is full: the broker refuses with the stock full-disk answer
// (SERVICE_NOT_AVAILABLE) instead of dying of a SIGBUS in the TimerLog, it
// restarts on the full disk, and once the ballast is removed it accepts
// timers again and delivers every acknowledged one, none early.
func TestTimerSendsOnFullDisk(t *testing.T) {
	root := testutil.Tmpfs(t, 64<<20)
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	o := coreTestOptions(t, func(o *Options) {
		o.Clock = clk
		o.StorePathRootDir = filepath.Join(root, "store")
	})
	tb := startBrokerWith(t, o, nil)
	ballast := filepath.Join(root, "ballast")
	base := clk.Now().Add(30 * time.Second).UnixMilli()
	due := map[string]int64{}
	n := 0
	send := func(tb *testBroker) *remoting.Command {
		n++
		uk, at := "FULL-"+strconv.Itoa(n), base+int64(n%1000)
		resp := tb.send(sendArgs{topic: "FullT", body: make([]byte, 1024), queueID: int32(n % 4),
			props: coreProps(message.PropTimerDeliverMs, strconv.FormatInt(at, 10), "UNIQ_KEY", uk)})
		if resp.Code == remoting.Success {
			due[uk] = at
		}
		return resp
	}
	for i := 0; i < 100; i++ {
		if r := send(tb); r.Code != remoting.Success {
			t.Fatalf("send %d before the disk is full: %d %s", i, r.Code, r.Remark)
		}
	}
	testutil.FillDisk(t, ballast)
	var refused *remoting.Command
	for i := 0; i < 50000 && refused == nil; i++ {
		if r := send(tb); r.Code != remoting.Success {
			refused = r
		}
	}
	if refused == nil || refused.Code != remoting.ServiceNotAvailable {
		t.Fatalf("the full disk was never refused: %+v", refused)
	}
	t.Logf("%d timers acknowledged, then %d %s", len(due), refused.Code, refused.Remark)
	for i := 0; i < 3; i++ {
		if r := send(tb); r.Code != remoting.ServiceNotAvailable {
			t.Fatalf("send on the full disk: %d %s", r.Code, r.Remark)
		}
	}
	t.Logf("timer stats on the full disk: %+v", tb.timers.Stats())

	// A restart on the full disk.
	tb.diskFull = true
	tb.stop()
	tb = startBrokerWith(t, o, nil)
	tb.diskFull = true // its Shutdown too may meet the full disk if the test fails

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		clk.Advance(10 * time.Millisecond) // the disk check and the enqueue retries run on the clock
		return send(tb).Code == remoting.Success
	}, "timer sends accepted again")
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		clk.Advance(time.Millisecond)
		st := tb.timers.Stats()
		return tb.Store().DispatchBehind() == 0 && st.EnqueueBehind == 0
	}, "every acknowledged timer linked")
	clk.Advance(time.Duration(base-1-clk.Now().UnixMilli()) * time.Millisecond)
	time.Sleep(50 * time.Millisecond) // a delivery that would be early has its chance
	got := 0
	for q := int32(0); q < 4; q++ {
		got += len(tb.messagesOn("FullT", q))
	}
	if got != 0 {
		t.Fatalf("%d timers delivered early", got)
	}
	clk.Advance(2 * time.Second)
	delivered := map[string]int64{}
	testutil.WaitFor(t, coreTestTimeout, func() bool {
		for q := int32(0); q < 4; q++ {
			for _, m := range tb.messagesOn("FullT", q) {
				delivered[m.Properties["UNIQ_KEY"]] = m.StoreTimestamp
			}
		}
		return len(delivered) >= len(due)
	}, "every acknowledged timer delivered")
	for uk, at := range due {
		if st, ok := delivered[uk]; !ok {
			t.Errorf("acknowledged timer %s lost", uk)
		} else if st < at {
			t.Errorf("timer %s due at %d stored at %d", uk, at, st)
		}
	}
}
