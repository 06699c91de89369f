package bench

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// Run (about 15 s; not part of `go test ./...`, which runs no benchmarks):
//
//	cd integration && go test ./bench -run '^$' -bench DelayLateness -benchtime 1x -v
const (
	latenessMessages = 10_000
	latenessSenders  = 16
	// latenessLevels are the stock levels 1–3 (1 s, 5 s, 10 s); message i uses level 1 + i%3.
	latenessLevels = 3
	latenessWait   = 2 * time.Minute
	idProp         = "benchid"
)

var stockDelays = [latenessLevels + 1]time.Duration{0, time.Second, 5 * time.Second, 10 * time.Second}

// sample is what is known about one message once it has arrived.
type sample struct {
	level     int
	born      int64 // producer clock, ms
	scheduled int64 // broker: store time of the SCHEDULE_TOPIC_XXXX record, ms
	delivered int64 // broker: store time of the record on the real topic, ms
	received  time.Time
	offsetID  string // offsetMsgId of the schedule record
	arrivals  int32
}

// BenchmarkDelayLateness starts an in-process name server and broker (stock
// delay levels), sends 10 000 delayed messages spread over levels 1–3 from
// 16 goroutines with the stock Go producer, and consumes them with a stock Go
// push consumer that is already pulling. It reports, in milliseconds:
//
//	late-*   received − (born + delay): what an application sees
//	sched-*  delivered − (scheduled + delay): the broker's own lateness, where
//	         scheduled and delivered are the store times of the schedule record
//	         and of the re-stored record (both on the broker clock)
//
// Messages received before born + delay − 1 ms, or more than once, fail the run.
func BenchmarkDelayLateness(b *testing.B) {
	rlog.SetLogger(quietLog{})
	env := startServers(b)
	for i := 0; i < b.N; i++ {
		runLatenessRound(b, env, i)
	}
}

type servers struct {
	nsAddr string
	broker *broker.Broker
}

func startServers(b *testing.B) *servers {
	b.Helper()
	c := testbroker.StartCluster(b, func(o *broker.Options) {
		// 64 MiB commitlog files and the stock queue files and limits.
		d := broker.DefaultOptions()
		o.MappedFileSizeCommitLog = 64 << 20
		o.MappedFileSizeConsumeQueue = d.MappedFileSizeConsumeQueue
		o.MaxMessageSize = d.MaxMessageSize
	})
	return &servers{nsAddr: c.NamesrvAddr(), broker: c.Broker.Broker}
}

func runLatenessRound(b *testing.B, env *servers, round int) {
	b.Helper()
	b.StopTimer()
	topic := fmt.Sprintf("bench_delay_%d_%d", time.Now().UnixNano(), round)
	ns := primitive.NewPassthroughResolver([]string{env.nsAddr})
	prod, err := rocketmq.NewProducer(producer.WithNsResolver(ns), producer.WithGroupName(topic+"_pg"),
		producer.WithInstanceName(topic+"_pi"), producer.WithRetry(2), producer.WithSendMsgTimeout(10*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	if err := prod.Start(); err != nil {
		b.Fatal(err)
	}
	defer prod.Shutdown()
	send := func(m *primitive.Message) *primitive.SendResult {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := prod.SendSync(ctx, m)
		if err != nil || r.Status != primitive.SendOK {
			b.Fatalf("send: %v %v", r, err)
		}
		return r
	}
	// The first send creates the topic; the consumer starts once it is routed
	// and is ready when it has consumed this message.
	warmMsg := primitive.NewMessage(topic, []byte("warm"))
	warmMsg.WithProperty(idProp, "warm")
	send(warmMsg)
	if err := waitRoute(env.nsAddr, topic); err != nil {
		b.Fatal(err)
	}

	samples := make([]sample, latenessMessages)
	var received, dups, unknown atomic.Int64
	warm := make(chan struct{})
	var warmOnce sync.Once
	cons, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(ns), consumer.WithGroupName(topic+"_cg"),
		consumer.WithInstance(topic+"_ci"), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		b.Fatal(err)
	}
	err = cons.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			now := time.Now()
			for _, m := range msgs {
				v := m.GetProperty(idProp)
				if v == "warm" {
					warmOnce.Do(func() { close(warm) })
					continue
				}
				i, err := strconv.Atoi(v)
				if err != nil || i < 0 || i >= len(samples) {
					unknown.Add(1)
					continue
				}
				s := &samples[i]
				if atomic.AddInt32(&s.arrivals, 1) > 1 {
					dups.Add(1)
					continue
				}
				s.received, s.delivered, s.born = now, m.StoreTimestamp, m.BornTimestamp
				received.Add(1)
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		b.Fatal(err)
	}
	if err := cons.Start(); err != nil {
		b.Fatal(err)
	}
	defer cons.Shutdown()
	select {
	case <-warm:
	case <-time.After(latenessWait):
		b.Fatal("warm-up message not consumed")
	}

	b.StartTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < latenessSenders; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < latenessMessages; i += latenessSenders {
				level := 1 + i%latenessLevels
				m := primitive.NewMessage(topic, []byte("delayed "+strconv.Itoa(i)))
				m.WithProperty(idProp, strconv.Itoa(i))
				m.WithDelayTimeLevel(level)
				r := send(m)
				samples[i].level, samples[i].offsetID = level, r.OffsetMsgID
			}
		}(w)
	}
	wg.Wait()
	sendTime := time.Since(start)
	deadline := time.Now().Add(latenessWait)
	for received.Load() < latenessMessages {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d delayed messages received within %v", received.Load(), latenessMessages, latenessWait)
		}
		time.Sleep(10 * time.Millisecond) // pacing the poll only; arrival times are taken in the listener
	}
	b.StopTimer()

	var late, sched []time.Duration
	early := 0
	for i := range samples {
		s := &samples[i]
		d := stockDelays[s.level]
		l := s.received.Sub(time.UnixMilli(s.born).Add(d))
		if l < -time.Millisecond {
			early++
		}
		late = append(late, l)
		scheduled, err := scheduleStoreTime(env.broker.Store(), s.offsetID)
		if err != nil {
			b.Fatalf("message %d: %v", i, err)
		}
		s.scheduled = scheduled
		sched = append(sched, time.Duration(s.delivered-s.scheduled)*time.Millisecond-d)
	}
	p50, p99, maxL := summary(late)
	s50, s99, smax := summary(sched)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(p50), "late-p50-ms")
	b.ReportMetric(ms(p99), "late-p99-ms")
	b.ReportMetric(ms(maxL), "late-max-ms")
	b.ReportMetric(ms(s50), "sched-p50-ms")
	b.ReportMetric(ms(s99), "sched-p99-ms")
	b.ReportMetric(ms(smax), "sched-max-ms")
	b.Logf("%d delayed messages (levels 1-%d) sent in %v by %d senders; received − (born + delay): p50 %v p99 %v max %v; "+
		"delivered − (scheduled + delay): p50 %v p99 %v max %v; early %d, duplicates %d, unknown %d",
		latenessMessages, latenessLevels, sendTime.Round(time.Millisecond), latenessSenders,
		p50, p99, maxL, s50, s99, smax, early, dups.Load(), unknown.Load())
	if early > 0 || dups.Load() > 0 {
		b.Errorf("%d messages received early, %d received more than once", early, dups.Load())
	}
}

// waitRoute waits until the name server routes topic with readable queues.
func waitRoute(nsAddr, topic string) error {
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	deadline := time.Now().Add(latenessWait)
	for {
		req := remoting.NewRequest(remoting.GetRouteinfoByTopic, map[string]string{"topic": topic}, nil)
		resp, err := cl.InvokeTimeout(nsAddr, req, 3*time.Second)
		if err == nil && resp.Code == remoting.Success {
			var route remoting.TopicRouteData
			if err = remoting.UnmarshalBody(resp.Body, &route); err == nil && len(route.QueueDatas) > 0 && route.QueueDatas[0].ReadQueueNums > 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no route for %s within %v (last error %v)", topic, latenessWait, err)
		}
		time.Sleep(50 * time.Millisecond) // pacing the poll only
	}
}

// scheduleStoreTime reads the store time of the record an offsetMsgId points at.
func scheduleStoreTime(st *store.Store, offsetMsgID string) (int64, error) {
	id, err := primitive.UnmarshalMsgID([]byte(offsetMsgID))
	if err != nil {
		return 0, err
	}
	raw, err := st.LookMessageByOffset(id.Offset)
	if err != nil {
		return 0, err
	}
	rec, err := message.DecodeRecord(raw)
	if err != nil {
		return 0, err
	}
	return rec.StoreTimestamp, nil
}

func summary(ds []time.Duration) (p50, p99, maxD time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.50), at(0.99), s[len(s)-1]
}

// quietLog silences the Go client.
type quietLog struct{}

func (quietLog) Debug(string, map[string]interface{})   {}
func (quietLog) Info(string, map[string]interface{})    {}
func (quietLog) Warning(string, map[string]interface{}) {}
func (quietLog) Error(string, map[string]interface{})   {}
func (quietLog) Fatal(string, map[string]interface{})   {}
func (quietLog) Level(string)                           {}
func (quietLog) OutputPath(string) error                { return nil }
