package main

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/bench"
	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/internal/testutil/testbroker"
	"github.com/rmqio/rmq/message"
)

// startInProcess starts a name server and a broker in this process, for profiling
// the broker's hot paths with `go test -cpuprofile`:
//
//	cd bench/compare   # a module of its own
//	go test . -run '^$' -bench 'Broker/send/async' -benchtime 200000x -cpuprofile cpu.out
//	go tool pprof -top -focus 'rmq/(broker|store|remoting)' compare.test cpu.out
//
// The load generator runs in the same process; focus on the broker's
// packages when reading the profile.
func startInProcess(tb testing.TB, flush string, mutate func(*broker.Options)) *testbroker.Cluster {
	tb.Helper()
	return testbroker.StartCluster(tb, func(o *broker.Options) {
		// The stock file sizes and limits, not testbroker's small ones.
		d := broker.DefaultOptions()
		o.MappedFileSizeCommitLog = d.MappedFileSizeCommitLog
		o.MappedFileSizeConsumeQueue = d.MappedFileSizeConsumeQueue
		o.MaxMessageSize = d.MaxMessageSize
		o.FlushDiskType = flush
		if mutate != nil {
			mutate(o)
		}
	})
}

// BenchmarkBroker runs `rmq bench` (the bench package) against an in-process
// broker; one op is one message.
func BenchmarkBroker(b *testing.B) {
	cases := []struct {
		name  string
		mode  bench.Mode
		flush string
		delay int
	}{
		{name: "send/async", mode: bench.ModeProduce, flush: asyncFlush},
		{name: "send/sync", mode: bench.ModeProduce, flush: syncFlush},
		{name: "delay/level1", mode: bench.ModeTimer, flush: asyncFlush, delay: 1},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			p := startInProcess(b, tc.flush, nil)
			opts := bench.Options{
				Mode: tc.mode, NamesrvAddr: p.NamesrvAddr(), Topic: "ProfileTopic", MessageSize: 1024,
				Count: int64(b.N), DelayLevel: tc.delay, ReportInterval: -1, Grace: 30 * time.Second,
			}
			ctx := context.Background()
			flushes := func() float64 {
				v, _ := strconv.ParseFloat(p.Store().RuntimeInfo()["commitLogFlushTimes"], 64)
				return v
			}
			f0 := flushes()
			b.ResetTimer()
			sum, err := bench.Run(ctx, opts)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if sum.SendFailed > 0 || sum.Sent < int64(b.N) {
				b.Fatalf("sent %d of %d, %d failed: %v", sum.Sent, b.N, sum.SendFailed, sum.Errors)
			}
			b.ReportMetric(sum.SendTps, "msg/s")
			b.ReportMetric(sum.Latency.P99, "p99-ms")
			if n := flushes() - f0; n > 0 {
				b.ReportMetric(float64(sum.Sent)/n, "msg/flush")
			}
			if sum.Lateness != nil {
				b.ReportMetric(sum.Lateness.P99, "late-p99-ms")
			}
		})
	}
}

// inProcessCluster wraps the in-process broker in the driver's cluster type.
func inProcessCluster(tb testing.TB, flush string) *cluster {
	// Small segments: the test needs no 1 GiB file (nor its warm-up writes).
	p := startInProcess(tb, flush, func(o *broker.Options) { o.MappedFileSizeCommitLog = 16 << 20 })
	var nsPort, port int
	if _, err := fmt.Sscanf(p.NamesrvAddr(), "127.0.0.1:%d", &nsPort); err != nil {
		tb.Fatal(err)
	}
	if _, err := fmt.Sscanf(p.BrokerAddr(), "127.0.0.1:%d", &port); err != nil {
		tb.Fatal(err)
	}
	c := &cluster{nsPort: nsPort, port: port, adm: admin.New(admin.Options{NamesrvAddr: p.NamesrvAddr()})}
	tb.Cleanup(c.adm.Close)
	return c
}

func TestDriverAgainstInProcessBroker(t *testing.T) {
	c := inProcessCluster(t, asyncFlush)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	if err := c.waitRegistered(ctx); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		spec loadSpec
		// minLate is a lower bound every delivery must respect.
		minLate time.Duration
	}{
		{
			name: "paced end to end",
			spec: loadSpec{topic: "DrvE2E", count: 300, rate: 1000, size: 64, grace: 10 * time.Second,
				mark: func(_ int64, now time.Time) (map[string]string, time.Time) { return nil, now }},
		},
		{
			name: "saturated delay level 1",
			spec: loadSpec{topic: "DrvDelay", count: 200, inflight: 16, size: 64, grace: 15 * time.Second,
				mark: func(_ int64, now time.Time) (map[string]string, time.Time) {
					return map[string]string{message.PropDelay: "1"}, now.Truncate(time.Millisecond).Add(time.Second)
				}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.createTopic(ctx, tc.spec.topic); err != nil {
				t.Fatal(err)
			}
			res, err := runLoad(ctx, c, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if res.Sent != tc.spec.count || res.SendFailed != 0 {
				t.Fatalf("sent %d of %d, %d failed: %v", res.Sent, tc.spec.count, res.SendFailed, res.Errors)
			}
			if res.Received != res.Sent || res.Lost != 0 || res.Dups != 0 {
				t.Fatalf("received %d of %d (lost %d, dups %d)", res.Received, res.Sent, res.Lost, res.Dups)
			}
			if res.Early != 0 {
				t.Fatalf("%d messages delivered before their due time (max %v)", res.Early, res.MaxEarly)
			}
			if n := res.Late.Count(); n != res.Received {
				t.Fatalf("lateness has %d samples for %d receipts", n, res.Received)
			}
			if res.Drain() <= 0 {
				t.Fatalf("drain %v", res.Drain())
			}
		})
	}
}
