package schedule

import (
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// Run (about 4 s; `go test ./...` runs no benchmarks):
//
//	go test ./schedule -run '^$' -bench DeliveryLateness -benchtime 1x -v
//
// The end-to-end figure, with the network and the stock Go client, is
// BenchmarkDelayLateness in integration/bench.
const (
	benchMessages = 10_000
	benchLevels   = "1s 2s 3s"
)

// timingStore passes everything to the store and, for each delivery the
// service makes, records how long after its due time the service handed it
// over (before the put itself).
type timingStore struct {
	*store.Store
	mu   sync.Mutex
	due  map[string]int64 // UNIQ_KEY → due time, ms
	late []time.Duration
	want int
	done chan struct{}
}

func (ts *timingStore) PutMessage(m *message.Message) (*store.PutResult, error) {
	if m.Topic != message.TopicSchedule {
		now := time.Now()
		ts.mu.Lock()
		due, ok := ts.due[m.Properties["UNIQ_KEY"]]
		if ok {
			ts.late = append(ts.late, now.Sub(time.UnixMilli(due)))
			if len(ts.late) == ts.want {
				close(ts.done)
			}
		}
		ts.mu.Unlock()
	}
	return ts.Store.PutMessage(m)
}

// BenchmarkDeliveryLateness runs the service on the wall clock over a real
// store: 10 000 messages spread over three levels (1 s, 2 s, 3 s) are stored
// through Rewrite, and each delivery's lateness is the time between its due
// time (store time + delay) and the service's put to the real topic. It
// reports p50, p99 and max in milliseconds; an early delivery fails the run.
func BenchmarkDeliveryLateness(b *testing.B) {
	levels, err := ParseLevels(benchLevels)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		benchDeliveryRound(b, levels)
	}
}

func benchDeliveryRound(b *testing.B, levels Levels) {
	b.Helper()
	b.StopTimer()
	var svcRef atomic.Pointer[Service]
	st, err := store.Open(store.Options{
		Dir: b.TempDir(), MappedFileSizeCommitLog: 32 << 20,
		TagsCode: func(topic string, props message.Props, storeMs int64) int64 {
			if c, ok := levels.TagsCode(topic, props, storeMs); ok {
				return c
			}
			return message.TagsHash(props.Get("TAGS"))
		},
		OnDispatch: func(d store.DispatchRequest) {
			if s := svcRef.Load(); s != nil && d.Topic == message.TopicSchedule {
				s.Notify(d.QueueID)
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ts := &timingStore{Store: st, due: make(map[string]int64, benchMessages), want: benchMessages, done: make(chan struct{})}
	svc, err := New(Options{Levels: levels, Store: ts})
	if err != nil {
		b.Fatal(err)
	}
	svcRef.Store(svc)
	svc.Start()
	defer svc.Stop()

	b.StartTimer()
	start := time.Now()
	for i := 0; i < benchMessages; i++ {
		level := 1 + i%levels.Max()
		key := "U" + strconv.Itoa(i)
		m := &message.Message{Topic: "bench", QueueID: int32(i % 4), Body: []byte("delayed " + key),
			BornTimestamp: time.Now().UnixMilli(),
			Properties:    map[string]string{message.PropDelay: strconv.Itoa(level), "UNIQ_KEY": key}}
		if _, err := levels.Rewrite(m); err != nil {
			b.Fatal(err)
		}
		res, err := st.PutMessage(m)
		if err != nil {
			b.Fatal(err)
		}
		// The earliest due time is a full level-1 delay away, long after this.
		ts.mu.Lock()
		ts.due[key] = levels.DeliverAt(level, res.StoreTimestamp)
		ts.mu.Unlock()
	}
	putTime := time.Since(start)
	select {
	case <-ts.done:
	case <-time.After(time.Minute):
		delivered := svc.Stats().Delivered
		b.Fatalf("%d of %d messages delivered within a minute", delivered, benchMessages)
	}
	b.StopTimer()

	ts.mu.Lock()
	late := append([]time.Duration(nil), ts.late...)
	ts.mu.Unlock()
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	early := sort.Search(len(late), func(i int) bool { return late[i] >= 0 })
	at := func(q float64) time.Duration { return late[min(len(late)-1, int(q*float64(len(late))))] }
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(at(0.50)), "late-p50-ms")
	b.ReportMetric(ms(at(0.99)), "late-p99-ms")
	b.ReportMetric(ms(late[len(late)-1]), "late-max-ms")
	b.Logf("%d messages over levels %q stored in %v; handed to the real topic after due: p50 %v p99 %v max %v; early %d",
		len(late), benchLevels, putTime.Round(time.Millisecond), at(0.50), at(0.99), late[len(late)-1], early)
	if early > 0 {
		b.Errorf("%d deliveries before their due time, the earliest %v early", early, -late[0])
	}
}
