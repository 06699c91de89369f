package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rmqio/rmq/admin"
)

// Process memory and broker timer figures sampled during BenchmarkTimerWheel.

// procMem is the resident memory of this process (/proc/self/status), in
// bytes: VmRSS = RssAnon (heap, stacks, anonymous maps) + RssFile (touched
// pages of mapped files: commitlog, consume queues, TimerLog) + RssShmem.
type procMem struct {
	rss, anon, file int64
}

func readProcMem() (procMem, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return procMem{}, err
	}
	defer f.Close()
	var m procMem
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &m.rss
		case "RssAnon":
			dst = &m.anon
		case "RssFile":
			dst = &m.file
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return procMem{}, fmt.Errorf("/proc/self/status %s: %q", k, v)
		}
		*dst = kb << 10
	}
	return m, sc.Err()
}

// liveHeap forces a collection and returns the bytes of live heap objects.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// timerSample is one observation.
type timerSample struct {
	at               time.Duration // since the first send
	mem              procMem
	heapInuse        uint64
	pending, behind  int64 // timerCongestNum, timerOffsetBehind
	enqTps, deqTps   float64
	acked, delivered int64 // sender acks, distinct messages the consumer got
}

func (s timerSample) String() string {
	return fmt.Sprintf("[%6.1fs] acked %7d received %7d | wheel pending %7d behind %6d enq %8.0f/s deq %6.0f/s | "+
		"RSS %4d MiB (anon %4d, file %4d) heap in use %4d MiB",
		s.at.Seconds(), s.acked, s.delivered, s.pending, s.behind, s.enqTps, s.deqTps,
		s.mem.rss>>20, s.mem.anon>>20, s.mem.file>>20, s.heapInuse>>20)
}

// timerSampler polls the process and the broker every interval.
type timerSampler struct {
	adm        *admin.Admin
	brokerAddr string
	start      time.Time
	acked      func() int64
	received   func() int64

	mu      sync.Mutex
	samples []timerSample
	errs    int
}

func (s *timerSampler) sampleOnce(ctx context.Context) {
	smp := timerSample{at: time.Since(s.start), acked: s.acked(), delivered: s.received()}
	mem, err := readProcMem()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	smp.mem, smp.heapInuse = mem, ms.HeapInuse
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	kv, rerr := s.adm.BrokerRuntimeInfo(rctx, s.brokerAddr)
	cancel()
	if rerr == nil {
		smp.pending, _ = strconv.ParseInt(kv[admin.KeyTimerCongestNum], 10, 64)
		smp.behind, _ = strconv.ParseInt(kv[admin.KeyTimerOffsetBehind], 10, 64)
		smp.enqTps, _ = strconv.ParseFloat(kv[admin.KeyTimerEnqueueTps], 64)
		smp.deqTps, _ = strconv.ParseFloat(kv[admin.KeyTimerDequeueTps], 64)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || rerr != nil {
		s.errs++
		return
	}
	s.samples = append(s.samples, smp)
}

// run samples until ctx ends.
func (s *timerSampler) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.sampleOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *timerSampler) all() []timerSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]timerSample(nil), s.samples...)
}
