package timer

import (
	"fmt"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// BenchmarkTimerPipeline is the broker-side cost of one timer message, from
// its put on the timer topic to its delivered copy dispatched on the target
// topic, with no network: the send's admission and put, the enqueue
// (dispatch of the timer topic, TimerLog append, wheel link), the dequeue
// (wheel and TimerLog reads, the original read back from the commitlog) and
// the delivery's put and dispatch. The b.N timers are due over 1 000
// milliseconds, in a scattered order, at the broker's default precision;
// the manual clock then moves past them all, so the dequeue runs flat out.
// ns/op and allocs/op are per timer message (allocations of every
// goroutine, the store's dispatcher and flushes included).
//
//	go test ./timer -run '^$' -bench TimerPipeline -benchtime 100000x
func BenchmarkTimerPipeline(b *testing.B) {
	e := newEnvStore(b, func(o *store.Options) {
		o.MappedFileSizeCommitLog = 256 << 20
		o.MappedFileSizeConsumeQueue = 300_000 * 20
	}, func(o *Options) {
		o.PrecisionMs = DefaultPrecisionMs
		o.WheelSlots = 0
		o.MappedFileSizeTimerLog = 64 << 20
	})
	const topic, spreadMs = "bench_timer", 1000
	body := make([]byte, 1024)
	born := netip.MustParseAddrPort("127.0.0.1:5555")
	first := e.nowMs() + 2000
	var keys [][2]string
	for i := range b.N {
		keys = append(keys, [2]string{fmt.Sprintf("UK%012d", i), strconv.FormatInt(first+int64(i*7919%spreadMs), 10)})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		m := &message.Message{Topic: topic, Body: body, BornTimestamp: e.nowMs(), BornHost: born,
			Properties: map[string]string{message.PropUniqKey: keys[i][0], message.PropTimerDeliverMs: keys[i][1]}}
		if _, _, err := AdmitMessage(m, e.nowMs(), e.opts.MaxDelaySec); err != nil {
			b.Fatal(err)
		}
		if _, err := e.st.PutMessage(m); err != nil {
			b.Fatal(err)
		}
	}
	testutil.WaitFor(b, time.Minute, func() bool { return e.ts().Stats().Enqueued >= int64(b.N) }, "every timer enqueued")
	e.advance(time.Duration(2000+spreadMs) * time.Millisecond)
	testutil.WaitFor(b, time.Minute, func() bool { return e.st.MaxOffsetInQueue(topic, 0) >= int64(b.N) }, "every timer delivered")
	b.StopTimer()
}
