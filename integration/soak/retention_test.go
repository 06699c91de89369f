//go:build linux

// Package soak holds long runs that are not part of make test:
// make soak-retention runs TestSoakRetention.
package soak

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/integration/harness"
	"github.com/rmqio/rmq/internal/testutil"
)

var (
	soakDuration = flag.Duration("soak.duration", 10*time.Minute, "how long to produce")
	soakRate     = flag.Int("soak.rate", 3000, "plain 1 KiB messages per second")
	soakPending  = flag.Int("soak.pending", 10000, "timers and delay messages each kept pending")
	soakCap      = flag.Int64("soak.cap", 256<<20, "size of the tmpfs holding the store")
	soakJava     = flag.String("soak.java", "", "directory of the stock Java broker's jars (5.3.3: delay levels and timers, e.g. ~/.cache/rmq-bench-compare/rocketmq-5.3.3/lib): soak it instead of rmq")
)

// soakConf is the broker configuration of the soak, for rmq and for the Java
// broker alike: 8 MiB commitlog files, 256 KiB timer-log files, delay
// levels of 4, 8 and 12 s, a cleanup round every second. rmq also runs its
// small store (small queue and index files, nothing fallocated) and ages
// files out after a minute; the Java broker gets the small store's geometry
// key by key and its shortest reserved time, an hour. At the soak's write
// rate the cap holds about 20 s of writes, so neither reserved time is ever
// reached: both brokers delete when the disk passes diskMaxUsedSpaceRatio
// (75 %) and diskSpaceCleanForciblyRatio (85 %), the stock defaults.
func soakConf(java bool) []string {
	conf := []string{
		"mappedFileSizeCommitLog=8388608", "mappedFileSizeTimerLog=262144",
		"messageDelayLevel=" + soakLevels, "cleanResourceInterval=1000",
	}
	if !java {
		return append(conf, "smallStore=true", "fileReservedTimeMinutes=1")
	}
	return append(conf, "fileReservedTime=1",
		fmt.Sprintf("mappedFileSizeConsumeQueue=%d", broker.SmallStoreConsumeQueueSize),
		fmt.Sprintf("maxHashSlotNum=%d", broker.SmallStoreMaxHashSlotNum),
		fmt.Sprintf("maxIndexNum=%d", broker.SmallStoreMaxIndexNum))
}

// Delays of the soak: delay levels 1..3 and timers between 4 and 12 s.
// Pending messages keep their commitlog files (broker/delivery.go), so the
// longest delay times the write rate must stay well inside the cap.
const (
	soakLevels   = "4s 8s 12s"
	soakMinDelay = 4 * time.Second
	soakMaxDelay = 12 * time.Second
)

func levelDelay(level int) time.Duration { return time.Duration(4*level) * time.Second }

// TestSoakRetention is the retention soak of issue 13: a store capped at
// soak.cap (a tmpfs, 8 MiB commitlog files) takes 1 KiB messages at a fixed
// rate for soak.duration, consumed as they come, with soak.pending timers
// and soak.pending delay messages pending throughout. It reports the disk
// use, failed sends, lost and early timer/delay deliveries, and the send
// p99 while files are deleted against the steady p99.
func TestSoakRetention(t *testing.T) {
	if os.Getenv("RMQ_SOAK") == "" {
		t.Skip("soak: run with make soak-retention (RMQ_SOAK=1)")
	}
	rlog.SetLogLevel("error")
	root := testutil.Tmpfs(t, *soakCap) // the capped file system (root only; skips otherwise)
	work := filepath.Join(root, "store")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	var ns, brokerAddr string
	if *soakJava != "" {
		jb := startJavaBroker(t, *soakJava, work, soakConf(true))
		ns, brokerAddr = jb.ns, jb.broker
	} else {
		bin, err := harness.BuildRMQ(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		p := harness.Start(t, harness.Config{Bin: bin, WorkDir: work, BrokerConf: soakConf(false)})
		ns, brokerAddr = p.NamesrvAddr(), p.BrokerAddr()
	}
	adm := admin.New(admin.Options{NamesrvAddr: ns})

	for _, topic := range []string{"SoakPlain", "SoakTimer", "SoakDelay"} {
		spec := admin.TopicSpec{TopicName: topic, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}
		if _, err := adm.UpdateTopic(context.Background(), spec, brokerAddr, ""); err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}
	// The name server learns the topics at the next registration.
	if err := harness.Poll(60*time.Second, func() error {
		for _, topic := range []string{"SoakPlain", "SoakTimer", "SoakDelay"} {
			if _, err := adm.Route(context.Background(), topic); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	r := &soakRun{t: t, start: time.Now()}
	ctx, stop := context.WithTimeout(context.Background(), *soakDuration)
	defer stop()

	// Consumers: plain, timer and delay topics, each checked on arrival.
	r.consume(ns, "SoakPlain", func(m *primitive.MessageExt) { r.plainGot.Add(1) })
	r.consume(ns, "SoakTimer", func(m *primitive.MessageExt) {
		due, _ := strconv.ParseInt(m.GetProperty("due"), 10, 64)
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, ok := r.timersOut[m.GetProperty("id")]; ok {
			delete(r.timersOut, m.GetProperty("id"))
			r.timersGot++
			if m.StoreTimestamp < due {
				r.timersEarly++
			}
		}
	})
	r.consume(ns, "SoakDelay", func(m *primitive.MessageExt) {
		due, _ := strconv.ParseInt(m.GetProperty("due"), 10, 64)
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, ok := r.delaysOut[m.GetProperty("id")]; ok {
			delete(r.delaysOut, m.GetProperty("id"))
			r.delaysGot++
			if m.StoreTimestamp < due {
				r.delaysEarly++
			}
		}
	})
	r.timersOut, r.delaysOut = map[string]int64{}, map[string]int64{}

	var wg sync.WaitGroup
	r.watch(ctx, &wg, root, adm, brokerAddr)
	body := bytes.Repeat([]byte("p"), 1024)
	r.produce(ctx, &wg, ns, *soakRate, 16, func(i int64) *primitive.Message {
		return primitive.NewMessage("SoakPlain", body)
	}, true)
	// Pending ≈ rate × mean delay; half again as much keeps the minimum,
	// not only the mean, at soak.pending.
	pendingRate := int(1.5 * float64(*soakPending) / ((soakMinDelay + soakMaxDelay) / 2).Seconds())
	r.produce(ctx, &wg, ns, pendingRate, 16, func(i int64) *primitive.Message {
		d := soakMinDelay + time.Duration(i%9)*time.Second
		due := time.Now().Add(d).UnixMilli()
		id := "t" + strconv.FormatInt(i, 10)
		m := primitive.NewMessage("SoakTimer", body)
		m.WithDelayTimestamp(time.UnixMilli(due))
		m.WithProperty("due", strconv.FormatInt(due, 10))
		m.WithProperty("id", id)
		r.mu.Lock()
		r.timersOut[id] = due
		r.mu.Unlock()
		return m
	}, false)
	r.produce(ctx, &wg, ns, pendingRate, 16, func(i int64) *primitive.Message {
		level := int(i%3) + 1
		due := time.Now().Add(levelDelay(level)).UnixMilli()
		id := "d" + strconv.FormatInt(i, 10)
		m := primitive.NewMessage("SoakDelay", body)
		m.WithDelayTimeLevel(level)
		m.WithProperty("due", strconv.FormatInt(due, 10))
		m.WithProperty("id", id)
		r.mu.Lock()
		r.delaysOut[id] = due
		r.mu.Unlock()
		return m
	}, false)
	wg.Wait()

	// Every timer and delay message is due within soakMaxDelay: give them
	// that, plus consumption, to arrive.
	harness.Poll(soakMaxDelay+60*time.Second, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if n := len(r.timersOut) + len(r.delaysOut); n > 0 {
			return fmt.Errorf("%d timer/delay messages not delivered", n)
		}
		return nil
	})
	r.report(adm, brokerAddr)
}

// soakRun collects the soak's figures.
type soakRun struct {
	t     *testing.T
	start time.Time

	mu                                   sync.Mutex
	timersOut, delaysOut                 map[string]int64 // id → due, sent and not delivered
	timersGot, timersEarly               int64
	delaysGot, delaysEarly               int64
	sendFailed, pendingFailed            int64
	lat                                  []sample    // plain sends
	failAt                               []time.Time // plain sends refused or failed
	deleting                             []window
	maxUsed, firstMaxPhy, lastMaxPhy     int64
	firstMinPhy, lastMinPhy              int64
	minPending, pendingSamples, maxQueue int64
	failures                             []string

	plainGot atomic.Int64
}

type sample struct {
	at  time.Time
	lat time.Duration
}

type window struct{ from, to time.Time }

func (r *soakRun) consume(ns, topic string, fn func(*primitive.MessageExt)) {
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		consumer.WithGroupName("soak_"+topic), consumer.WithInstance("soak_"+topic),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumeMessageBatchMaxSize(32))
	if err != nil {
		r.t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, ms ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range ms {
				fn(m)
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		r.t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Shutdown() })
}

// produce sends rate messages per second from workers goroutines, each on
// a fixed schedule, until ctx ends.
func (r *soakRun) produce(ctx context.Context, wg *sync.WaitGroup, ns string, rate, workers int, build func(i int64) *primitive.Message, plain bool) {
	prod, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName(fmt.Sprintf("soak_pg_%p", build)), producer.WithInstanceName(fmt.Sprintf("soak_pi_%p", build)),
		producer.WithRetry(0), producer.WithSendMsgTimeout(10*time.Second))
	if err != nil {
		r.t.Fatal(err)
	}
	if err := prod.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { prod.Shutdown() })
	var seq atomic.Int64
	interval := time.Duration(int64(time.Second) * int64(workers) / int64(max(rate, 1)))
	// The other workers wait for worker 0's first send: the Go client's
	// first concurrent sends of a topic race in its route cache
	// (tryToFindTopicPublishInfo: a caller that finds the route unchanged
	// stores nothing and fails with "route info not found"), which failed
	// one of 1 124 977 timer sends in a 10-minute soak.
	primed := make(chan struct{})
	var primeOnce sync.Once
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if w > 0 {
				select {
				case <-ctx.Done():
					return
				case <-primed:
				}
			} else {
				defer primeOnce.Do(func() { close(primed) })
			}
			next := time.Now().Add(time.Duration(w) * interval / time.Duration(workers))
			for {
				if d := time.Until(next); d > 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(d):
					}
				} else if ctx.Err() != nil {
					return
				}
				next = next.Add(interval)
				m := build(seq.Add(1))
				begin := time.Now()
				sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				res, err := prod.SendSync(sctx, m)
				cancel()
				lat := time.Since(begin)
				if w == 0 {
					primeOnce.Do(func() { close(primed) })
				}
				r.mu.Lock()
				if err != nil || res.Status != primitive.SendOK {
					if plain {
						r.sendFailed++
						r.failAt = append(r.failAt, begin)
					} else {
						r.pendingFailed++
						delete(r.timersOut, m.GetProperty("id"))
						delete(r.delaysOut, m.GetProperty("id"))
					}
					if len(r.failures) < 5 {
						r.failures = append(r.failures, fmt.Sprint(err))
					}
				} else if plain {
					r.lat = append(r.lat, sample{begin, lat})
				}
				r.mu.Unlock()
			}
		}()
	}
}

// watch samples the file system every 100 ms and the broker's commitlog
// offsets every 200 ms until ctx ends. A deletion window is the span
// between two samples across which the commitlog minimum moved (the
// runtime info of rmq and of the Java broker both carry it).
func (r *soakRun) watch(ctx context.Context, wg *sync.WaitGroup, root string, adm *admin.Admin, broker string) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		var lastMin int64 = -1
		lastPoll := time.Now()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			var st syscall.Statfs_t
			if syscall.Statfs(root, &st) == nil {
				used := int64(st.Blocks-st.Bfree) * int64(st.Bsize)
				r.mu.Lock()
				r.maxUsed = max(r.maxUsed, used)
				if time.Since(r.start) > 2*soakMaxDelay {
					pending := int64(len(r.timersOut))
					if p2 := int64(len(r.delaysOut)); p2 < pending {
						pending = p2
					}
					if r.pendingSamples == 0 || pending < r.minPending {
						r.minPending = pending
					}
					r.pendingSamples++
				}
				r.mu.Unlock()
			}
			if i%2 != 0 {
				continue
			}
			info, err := runtimeInfo(ctx, adm, broker)
			if err != nil {
				continue
			}
			minPhy, _ := strconv.ParseInt(info["commitLogMinOffset"], 10, 64)
			maxPhy, _ := strconv.ParseInt(info["commitLogMaxOffset"], 10, 64)
			now := time.Now()
			r.mu.Lock()
			if r.firstMaxPhy == 0 {
				r.firstMaxPhy, r.firstMinPhy = maxPhy, minPhy
			}
			r.lastMaxPhy, r.lastMinPhy = maxPhy, minPhy
			if lastMin >= 0 && minPhy != lastMin {
				r.deleting = append(r.deleting, window{lastPoll, now})
			}
			r.mu.Unlock()
			lastMin, lastPoll = minPhy, now
		}
	}()
}

func runtimeInfo(ctx context.Context, adm *admin.Admin, broker string) (map[string]string, error) {
	c, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return adm.BrokerRuntimeInfo(c, broker)
}

func p99(lats []time.Duration) time.Duration {
	if len(lats) == 0 {
		return 0
	}
	slices.Sort(lats)
	return lats[len(lats)*99/100]
}

func (r *soakRun) report(adm *admin.Admin, broker string) {
	t := r.t
	r.mu.Lock()
	defer r.mu.Unlock()
	var during, steady []time.Duration
	for _, s := range r.lat {
		in := false
		for _, w := range r.deleting {
			if !s.at.Before(w.from.Add(-200*time.Millisecond)) && !s.at.After(w.to.Add(200*time.Millisecond)) {
				in = true
				break
			}
		}
		if in {
			during = append(during, s.lat)
		} else {
			steady = append(steady, s.lat)
		}
	}
	written := r.lastMaxPhy - r.firstMaxPhy
	pDuring, pSteady := p99(during), p99(steady)
	info, _ := runtimeInfo(context.Background(), adm, broker)
	target := "rmq"
	if *soakJava != "" {
		target = "Java broker " + *soakJava
	}
	t.Logf("soak of %s: %v at %d plain msg/s (+ timers and delays, %d pending each)", target, *soakDuration, *soakRate, *soakPending)
	t.Logf("  commitlog written   %d MiB = %.1f x the %d MiB cap", written>>20, float64(written)/float64(*soakCap), *soakCap>>20)
	t.Logf("  disk use peak       %d MiB of %d MiB", r.maxUsed>>20, *soakCap>>20)
	t.Logf("  commitlog deleted   %d MiB (minimum offset moved %d times)", (r.lastMinPhy-r.firstMinPhy)>>20, len(r.deleting))
	if info["cleanDeletedCommitLogFiles"] != "" { // rmq's counters
		t.Logf("  files deleted       %s commitlog, %s consume queue, %s index", info["cleanDeletedCommitLogFiles"], info["cleanDeletedConsumeQueueFiles"], info["cleanDeletedIndexFiles"])
	}
	t.Logf("  plain sends         %d ok, %d failed, %d consumed", len(r.lat), r.sendFailed, r.plainGot.Load())
	t.Logf("  timers              %d delivered, %d early, %d lost", r.timersGot, r.timersEarly, len(r.timersOut))
	t.Logf("  delay messages      %d delivered, %d early, %d lost", r.delaysGot, r.delaysEarly, len(r.delaysOut))
	t.Logf("  pending (min)       %d of each kind after warm-up; %d timer/delay sends failed", r.minPending, r.pendingFailed)
	t.Logf("  send p99            %v steady (%d sends), %v during deletions (%d sends, %d windows)", pSteady, len(steady), pDuring, len(during), len(r.deleting))
	if len(r.failures) > 0 {
		t.Logf("  first failures      %v", r.failures)
	}
	if r.sendFailed+r.pendingFailed > 0 {
		t.Errorf("%d sends failed", r.sendFailed+r.pendingFailed)
	}
	if r.timersEarly+r.delaysEarly > 0 || len(r.timersOut)+len(r.delaysOut) > 0 {
		t.Errorf("timers/delays: %d early, %d lost", r.timersEarly+r.delaysEarly, len(r.timersOut)+len(r.delaysOut))
	}
	if r.pendingSamples > 0 && r.minPending < int64(*soakPending) {
		t.Errorf("only %d timers or delay messages pending at one point, want %d throughout", r.minPending, *soakPending)
	}
	if r.maxUsed > *soakCap {
		t.Errorf("disk use %d above the cap %d", r.maxUsed, *soakCap)
	}
	if len(during) >= 100 && pDuring > 2*pSteady {
		t.Errorf("send p99 during deletions %v > 2 x steady %v", pDuring, pSteady)
	}
}
