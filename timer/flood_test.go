package timer

import (
	"net/netip"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"rmq/internal/clock"
	"rmq/store"
)

// TestFlood100kDueInOneSecond drains 100 000 messages due within one second
// while a producer keeps sending plain messages: every timer message arrives
// once and every plain send succeeds. Counts only; no timing assertion.
func TestFlood100kDueInOneSecond(t *testing.T) {
	if testing.Short() {
		t.Skip("flood test skipped in -short mode")
	}
	const n = 100_000
	e := newEnvStore(t, func(o *store.Options) {
		o.MappedFileSizeCommitLog = 64 << 20
		o.MappedFileSizeConsumeQueue = 20 * 200_000
	}, func(o *Options) { o.MappedFileSizeTimerLog = 8 << 20 })
	at := e.nowMs() + 2000
	born := netip.MustParseAddrPort("127.0.0.1:5555")
	for i := 0; i < n; i++ {
		m := &store.Message{Topic: "Flood", Body: []byte("f"), BornHost: born, Properties: map[string]string{
			PropUniqKey: "F" + strconv.Itoa(i), PropDeliverMs: strconv.FormatInt(at+int64(i%1000), 10),
		}}
		if _, rewritten, err := AdmitMessage(m, e.nowMs(), 0); err != nil || !rewritten {
			t.Fatal(rewritten, err)
		}
		if _, err := e.st.PutMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	e.settle()
	if st := e.ts().Stats(); st.Pending != n {
		t.Fatalf("pending %d", st.Pending)
	}
	var sends atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := e.st.PutMessage(&store.Message{Topic: "Plain", Body: []byte("p"), BornHost: born}); err != nil {
				t.Error(err)
				return
			}
			sends.Add(1)
			time.Sleep(time.Millisecond)
		}
	}()
	e.advance(3 * time.Second)
	e.waitFor("the flood to drain", func() bool { return e.ts().Stats().Delivered == n })
	close(stop)
	wg.Wait()
	e.settle()
	if got := e.st.MaxOffsetInQueue("Flood", 0); got != n {
		t.Fatalf("%d on the topic", got)
	}
	if got := e.st.MaxOffsetInQueue("Plain", 0); got != sends.Load() {
		t.Fatalf("plain sends: %d stored of %d", got, sends.Load())
	}
	st := e.ts().Stats()
	if st.Pending != 0 || st.Skipped != 0 {
		t.Fatalf("stats %+v", st)
	}
	t.Logf("flood drained; %d plain sends went through meanwhile", sends.Load())
}

// TestLatenessRealClock measures delivery lateness on an idle store with the
// wall clock: never early, and the 99th percentile well inside the 50 ms
// target (asserted loosely, since the test machine is shared).
func TestLatenessRealClock(t *testing.T) {
	if testing.Short() {
		t.Skip("wall-clock test skipped in -short mode")
	}
	e := newEnv(t, func(o *Options) { o.Clock = clock.Real{} })
	e.clk = nil
	const n = 60
	for i := 0; i < n; i++ {
		e.send("Late", map[string]string{PropDelayMs: strconv.Itoa(50 + i*13)})
	}
	got := e.waitCount("Late", n)
	var late []int64
	for _, m := range got {
		due, _ := strconv.ParseInt(m.Properties[PropOutMs], 10, 64)
		deq, _ := strconv.ParseInt(m.Properties[PropDequeueMs], 10, 64)
		if deq < due {
			t.Fatalf("%s delivered %d ms early", m.Properties[PropUniqKey], due-deq)
		}
		// The store timestamp is when the delivery became readable.
		late = append(late, m.StoreTimestamp-due)
	}
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	p50, p99 := late[len(late)/2], late[len(late)*99/100]
	t.Logf("lateness ms: p50 %d, p99 %d, max %d", p50, p99, late[len(late)-1])
	if p99 > 250 {
		t.Fatalf("p99 lateness %d ms", p99)
	}
}
