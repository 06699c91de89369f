package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/remoting"
)

// Run (about 2.5 minutes, ~1 GB of store in a temporary directory; not part of
// `go test ./...`, which runs no benchmarks):
//
//	cd integration && go test ./bench -run '^$' -bench TimerWheel -benchtime 1x -timeout 15m -v
//
// BenchmarkTimerWheel measures the 5.x timer wheel under a million pending
// timers, with the broker and the load generator in one process:
//
//	t=0         pipelined raw SEND_MESSAGE_V2 (4 conns × 64 in flight), TIMER_DELIVER_MS
//	  │           ──▶ rmq_sys_wheel_timer ──enqueue──▶ TimerLog + wheel slots
//	t=30 s  ┐   due times: 12 slices of 10 s, message seq in slice seq·12/N,
//	        │   uniform inside it (the wheel gets random order within a slice)
//	t=150 s ┘   deliveries re-stored on the topic ──long poll (one per queue)──▶ sink
//
//	late       receive − due (one clock; includes the pull leg)
//	store-late store time of the delivered copy − due (broker clock, ms)
//	enqueue    acknowledged sends / time until the wheel had read them all
//	memory     /proc/self/status (VmRSS = RssAnon + RssFile) sampled every
//	           500 ms, and the live heap after a forced GC before any send, at
//	           the peak (everything enqueued; nothing due yet if the sends beat
//	           the window) and at the end (nothing pending)
//
// Any early delivery (either clock), duplicate, loss, or TIMER_OUT_MS that
// differs from the requested time fails the run; the lateness target
// (p99 ≤ 50 ms) is reported, not enforced.
const (
	timerMessages    = 1_000_000
	timerLead        = 30 * time.Second
	timerWindow      = 2 * time.Minute
	timerBlocks      = 12
	timerConns       = 4
	timerInFlight    = 64
	timerBodySize    = 128
	timerGrace       = 45 * time.Second
	timerSampleEvery = 500 * time.Millisecond
	timerP99Target   = 50 * time.Millisecond
)

func BenchmarkTimerWheel(b *testing.B) {
	for range b.N {
		runTimerWheel(b)
	}
}

func runTimerWheel(b *testing.B) {
	b.StopTimer()
	env := startServers(b)
	ctx := context.Background()
	adm := admin.New(admin.Options{NamesrvAddr: env.nsAddr})
	defer adm.Close()

	// The first send creates the topic (four queues from TBW102). The
	// consumer may still see it: its start offsets can be read before the
	// record is dispatched to its consume queue.
	topic := fmt.Sprintf("bench_timer_%d", time.Now().UnixNano())
	create := admin.SendMessageSpec{Topic: topic, Body: []byte("create"), QueueID: -1, Properties: map[string]string{timerCreateProp: "1"}}
	if _, err := adm.SendMessage(ctx, create); err != nil {
		b.Fatal(err)
	}
	if err := waitRoute(env.nsAddr, topic); err != nil {
		b.Fatal(err)
	}
	route, err := adm.Route(ctx, topic)
	if err != nil {
		b.Fatal(err)
	}
	subQueues, pubQueues := admin.SubscribeQueues(topic, route), admin.PublishQueues(topic, route)
	if len(subQueues) == 0 || len(pubQueues) == 0 {
		b.Fatalf("topic %s: %d readable, %d writable queues", topic, len(subQueues), len(pubQueues))
	}
	startOffsets := make([]int64, len(subQueues))
	for i, q := range subQueues {
		if startOffsets[i], err = adm.MaxOffset(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	brokerAddr := pubQueues[0].Addr

	sink := newTimerSink(timerMessages)
	pullCl := remoting.NewClient(remoting.ClientOptions{SerializeType: remoting.SerializeRocketMQ})
	defer pullCl.Close()
	pullCtx, stopPull := context.WithCancel(ctx)
	defer stopPull()
	pullFailed := make(chan int64, 1)
	go func() { pullFailed <- pullTimerQueues(pullCtx, pullCl, subQueues, startOffsets, sink) }()

	baseHeap := liveHeap()
	baseMem, err := readProcMem()
	if err != nil {
		b.Fatal(err)
	}

	start := time.Now()
	plan := timerPlan{n: timerMessages, first: start.Add(timerLead), window: timerWindow, blocks: timerBlocks}
	sender := newTimerSender(plan, brokerAddr, topic, int32(len(pubQueues)), timerConns, timerInFlight, timerBodySize)
	defer sender.close()
	sampler := &timerSampler{adm: adm, brokerAddr: brokerAddr, start: start, acked: sender.acked.Load, received: sink.received.Load}
	sampleCtx, stopSample := context.WithCancel(ctx)
	sampleDone := make(chan struct{})
	go func() { defer close(sampleDone); sampler.run(sampleCtx, timerSampleEvery) }()
	defer func() { stopSample(); <-sampleDone }()

	b.StartTimer()
	sender.run()
	sendDur := time.Since(start)

	// Everything is in the wheel once the enqueue stage has read the whole
	// timer queue. Peak figures are taken then, if nothing is due yet.
	deadline := plan.first.Add(timerWindow + timerGrace)
	var enqDur time.Duration
	var peakPending int64
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		kv, err := adm.BrokerRuntimeInfo(rctx, brokerAddr)
		cancel()
		if err == nil && kv[admin.KeyTimerOffsetBehind] == "0" {
			enqDur = time.Since(start)
			fmt.Sscan(kv[admin.KeyTimerCongestNum], &peakPending)
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the wheel had not read every timer message by the deadline (last runtime info error: %v)", err)
		}
		time.Sleep(20 * time.Millisecond) // pacing the poll only
	}
	// The peak: every timer in the wheel, and none delivered yet when the
	// sends finish before the window opens (else the pending count says how
	// many were left). The forced collection's pauses are sub-millisecond.
	peakBeforeDue := time.Now().Before(plan.first)
	peakHeap := liveHeap()
	peakMem, err := readProcMem()
	if err != nil {
		b.Fatal(err)
	}

	acked := sender.acked.Load()
	for sink.received.Load() < acked && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // pacing the poll only; arrival times are taken by the consumer
	}
	b.StopTimer()
	total := time.Since(start)
	stopPull()
	failedPulls := <-pullFailed
	stopSample()
	<-sampleDone
	endHeap := liveHeap()
	endMem, _ := readProcMem()

	// Lateness over the messages received.
	late := make([]int32, 0, timerMessages)
	storeLate := make([]int32, 0, timerMessages)
	early, maxEarlyUs := 0, int32(0)
	for seq := range timerMessages {
		if sink.arrivals[seq].Load() == 0 {
			continue
		}
		l := sink.lateUs[seq]
		late = append(late, l)
		storeLate = append(storeLate, sink.storeLateMs[seq])
		if l < 0 {
			early++
			maxEarlyUs = max(maxEarlyUs, -l)
		}
	}
	slices.Sort(late)
	slices.Sort(storeLate)
	q := func(s []int32, p float64) int32 {
		if len(s) == 0 {
			return 0
		}
		return s[min(len(s)-1, int(p*float64(len(s))))]
	}
	usDur := func(v int32) time.Duration { return time.Duration(v) * time.Microsecond }
	lateP50, lateP99, lateMax := usDur(q(late, .5)), usDur(q(late, .99)), usDur(q(late, 1))

	samples := sampler.all()
	var maxMem procMem
	var maxEnqTps float64
	for _, s := range samples {
		maxMem.rss, maxMem.anon, maxMem.file = max(maxMem.rss, s.mem.rss), max(maxMem.anon, s.mem.anon), max(maxMem.file, s.mem.file)
		maxEnqTps = max(maxEnqTps, s.enqTps)
	}
	for i, s := range samples {
		if i%20 == 0 || i == len(samples)-1 {
			b.Log(s)
		}
	}

	sendRate := float64(acked) / sendDur.Seconds()
	enqRate := float64(acked) / enqDur.Seconds()
	mib := func(v int64) float64 { return float64(v) / (1 << 20) }
	b.Logf("sent %d timer messages (%d B bodies) in %v: %.0f msg/s acknowledged; %d retried sends, %d given up, %d acknowledged after their due time; errors: %s",
		acked, timerBodySize, sendDur.Round(time.Millisecond), sendRate, sender.retried.Load(), sender.lost.Load(), sender.sentLate.Load(), sender.errorSummary())
	b.Logf("wheel enqueue: all %d read into the wheel %v after the first send: %.0f msg/s (runtime info timerEnqueueTps peak %.0f/s); %d pending then",
		acked, enqDur.Round(time.Millisecond), enqRate, maxEnqTps, peakPending)
	b.Logf("delivery: %d of %d received in %v; late (receive − due) p50 %v p99 %v max %v; store-late p50 %d ms p99 %d ms max %d ms",
		sink.received.Load(), acked, total.Round(time.Millisecond), lateP50, lateP99, lateMax, q(storeLate, .5), q(storeLate, .99), q(storeLate, 1))
	b.Logf("never early: %d received before due (max %v early), %d stored on the topic before due; %d duplicates, %d TIMER_OUT_MS mismatches, %d foreign records, %d failed pulls",
		early, usDur(maxEarlyUs), sink.brokerEarly.Load(), sink.dups.Load(), sink.outMismatch.Load(), sink.foreign.Load(), failedPulls)
	b.Logf("memory before the first send: RSS %.0f MiB (anon %.0f, file %.0f), live heap %.0f MiB", mib(baseMem.rss), mib(baseMem.anon), mib(baseMem.file), mib(int64(baseHeap)))
	when := "everything enqueued, nothing due yet"
	if !peakBeforeDue {
		when = "everything enqueued, deliveries under way"
	}
	b.Logf("memory with %d timers pending (%s): RSS %.0f MiB (anon %.0f, file %.0f), live heap %.0f MiB; "+
		"growth: anon %+.1f MiB (%.1f B/timer), live heap %+.1f MiB (%.1f B/timer), file %+.1f MiB",
		peakPending, when, mib(peakMem.rss), mib(peakMem.anon), mib(peakMem.file), mib(int64(peakHeap)),
		mib(peakMem.anon-baseMem.anon), float64(peakMem.anon-baseMem.anon)/float64(max(peakPending, 1)),
		mib(int64(peakHeap)-int64(baseHeap)), float64(int64(peakHeap)-int64(baseHeap))/float64(max(peakPending, 1)),
		mib(peakMem.file-baseMem.file))
	b.Logf("memory over the run: max RSS %.0f MiB (anon %.0f, file %.0f); at the end (nothing pending) RSS %.0f MiB (anon %.0f, file %.0f), live heap %.0f MiB",
		mib(maxMem.rss), mib(maxMem.anon), mib(maxMem.file), mib(endMem.rss), mib(endMem.anon), mib(endMem.file), mib(int64(endHeap)))
	verdict := "met"
	if lateP99 > timerP99Target {
		verdict = "missed"
	}
	b.Logf("target p99 lateness ≤ %v: %s", timerP99Target, verdict)

	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lateP50), "late-p50-ms")
	b.ReportMetric(ms(lateP99), "late-p99-ms")
	b.ReportMetric(ms(lateMax), "late-max-ms")
	b.ReportMetric(float64(early), "early")
	b.ReportMetric(sendRate, "send-msg/s")
	b.ReportMetric(enqRate, "enqueue-msg/s")
	b.ReportMetric(mib(maxMem.rss), "rss-max-MiB")
	b.ReportMetric(float64(int64(peakHeap)-int64(baseHeap))/float64(max(peakPending, 1)), "heap-B/timer")
	b.ReportMetric(mib(peakMem.anon-baseMem.anon), "anon-growth-MiB")

	if n := sink.received.Load(); n < acked {
		b.Errorf("%d of %d acknowledged timer messages received by the deadline", n, acked)
	}
	if early > 0 || sink.brokerEarly.Load() > 0 {
		b.Errorf("%d messages received before their due time, %d stored before it", early, sink.brokerEarly.Load())
	}
	if sink.dups.Load() > 0 || sink.outMismatch.Load() > 0 || sender.lost.Load() > 0 {
		b.Errorf("%d duplicates, %d TIMER_OUT_MS mismatches, %d sends given up", sink.dups.Load(), sink.outMismatch.Load(), sender.lost.Load())
	}
}
