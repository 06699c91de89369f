package main

import (
	"errors"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// f's rows compare the stock Producer's rmq/Java ratio with `rmq bench`'s:
// within ±15 % is met, further is not, and without the stock tool's figures
// there is no row.
func TestStockProducerRatioRows(t *testing.T) {
	rmq, j4 := &target{name: "rmq"}, &target{name: "Java 4.9.7"}
	rowsOf := func(m map[string]measures) map[string]row { return stockRows(rmq, j4, m, "over rmq bench's") }
	got := rowsOf(map[string]measures{
		"rmq":        {"w1.tps": 70000, "w1.tpcpu": 84000, "w1.stock.tps": 48000, "w1.stock.tpcpu": 99000},
		"Java 4.9.7": {"w1.tps": 35000, "w1.tpcpu": 31000, "w1.stock.tps": 32000, "w1.stock.tpcpu": 41000},
	})
	tps := got["workload 1, throughput: stock Producer's rmq/Java over rmq bench's"]
	cpu := got["workload 1, msg per broker CPU-second: stock Producer's rmq/Java over rmq bench's"]
	// throughput: (48/32) / (70/35) = 0.75; per CPU: (99/41) / (84/31) = 0.891.
	if math.Abs(tps.rmq-0.75) > 1e-9 || tps.verdict() != "NO" {
		t.Errorf("throughput row %v, verdict %q; want 0.75 and NO", tps.rmq, tps.verdict())
	}
	if math.Abs(cpu.rmq-(99.0/41)/(84.0/31)) > 1e-9 || cpu.verdict() != "yes" {
		t.Errorf("per-CPU row %v, verdict %q; want 0.891 and yes", cpu.rmq, cpu.verdict())
	}
	if got := rowsOf(map[string]measures{"rmq": {"w1.tps": 1}, "Java 4.9.7": {"w1.tps": 1}}); len(got) != 0 {
		t.Errorf("rows without the stock tool's figures: %v", got)
	}
}

// stockRows builds the table from m and keeps f's rows whose metric holds
// part.
func stockRows(rmq, j4 *target, m map[string]measures, part string) map[string]row {
	r := &runner{cfg: &config{}, log: io.Discard, m: m}
	out := map[string]row{}
	for _, rw := range r.rows(rmq, j4, &target{name: "Java 5.3.3"}, &target{name: "Java 5.3.3 proxy"}) {
		if strings.HasPrefix(rw.workload, "f ") && strings.Contains(rw.metric, part) {
			out[rw.metric] = rw
		}
	}
	return out
}

// The stock Producer's own CPU per message is reported for each broker, as
// measured, without a goal.
func TestStockProducerToolCPURow(t *testing.T) {
	rmq, j4 := &target{name: "rmq"}, &target{name: "Java 4.9.7"}
	got := stockRows(rmq, j4, map[string]measures{
		"rmq":        {"w1.stock.tps": 48000, "w1.stock.toolus": 31.5},
		"Java 4.9.7": {"w1.stock.tps": 32000, "w1.stock.toolus": 36.25},
	}, "the tool's CPU")
	rw, ok := got["workload 1 by the stock Producer: the tool's CPU per stored message"]
	if len(got) != 1 || !ok {
		t.Fatalf("rows %v", got)
	}
	if rw.rmq != 31.5 || rw.java != 36.25 || rw.unit != "µs/msg" || rw.verdict() != "" {
		t.Errorf("row %+v, verdict %q", rw, rw.verdict())
	}
}

// With the stock Producer run against the no-op server too, workload g
// shows the tool's own ceiling, each broker's share of it, and how far the
// ceiling lets any broker lead Java compared with rmq bench's ratio.
func TestStockProducerCeilingRows(t *testing.T) {
	rmq, j4 := &target{name: "rmq"}, &target{name: "Java 4.9.7"}
	m := map[string]measures{
		"rmq":        {"w1.tps": 40000, "w1.stock.tps": 12000},
		"Java 4.9.7": {"w1.tps": 16000, "w1.stock.tps": 7000},
		"noop":       {"g.tps": 50000, "g.stock.tps": 25000, "g.stock.toolus": 53.5},
	}
	r := &runner{cfg: &config{}, log: io.Discard, m: m}
	got := map[string]row{}
	for _, rw := range r.rows(rmq, j4, &target{name: "Java 5.3.3"}, &target{name: "Java 5.3.3 proxy"}) {
		if strings.HasPrefix(rw.workload, "g ") {
			got[rw.metric] = rw
		}
	}
	want := map[string][2]float64{
		"throughput, workload 1 by the stock Producer":                            {25000, math.NaN()},
		"the stock Producer's CPU per answered send":                              {53.5, math.NaN()},
		"workload 1 by the stock Producer: throughput / its ceiling":              {0.48, 0.28},
		"stock Producer's ceiling / Java's throughput, over rmq bench's rmq/Java": {25000.0 / 7000 / 2.5, math.NaN()},
	}
	for metric, w := range want {
		rw, ok := got[metric]
		if !ok {
			t.Errorf("no row %q (rows %v)", metric, got)
			continue
		}
		same := func(a, b float64) bool { return math.IsNaN(a) && math.IsNaN(b) || math.Abs(a-b) < 1e-9 }
		if !same(rw.rmq, w[0]) || !same(rw.java, w[1]) {
			t.Errorf("%s: %v, %v; want %v, %v", metric, rw.rmq, rw.java, w[0], w[1])
		}
	}
	delete(m["noop"], "g.stock.tps")
	for _, rw := range r.rows(rmq, j4, &target{name: "Java 5.3.3"}, &target{name: "Java 5.3.3 proxy"}) {
		if strings.Contains(rw.metric, "stock Producer") && strings.HasPrefix(rw.workload, "g ") {
			t.Errorf("row %q without the stock run against the no-op server", rw.metric)
		}
	}
}

// The steady span's figures are the differences between two readings of
// the running totals; an empty span has none.
func TestStockSpan(t *testing.T) {
	m0 := stockSpan{count: 1000, brokerCPU: 2 * time.Second, toolCPU: 5 * time.Second}
	m1 := stockSpan{count: 201000, brokerCPU: 6 * time.Second, toolCPU: 15 * time.Second}
	sp := m1.since(m0)
	if sp.count != 200000 || sp.perBrokerCPU() != 50000 || sp.toolUs() != 50 {
		t.Fatalf("span %+v: %v msg per broker CPU-s, %v µs/msg", sp, sp.perBrokerCPU(), sp.toolUs())
	}
	if (stockSpan{}).perBrokerCPU() != 0 || (stockSpan{count: 5}).toolUs() != 0 {
		t.Error("an empty span has figures")
	}
	// A reading that failed says so: the run then reports no span.
	counted := func() (int64, error) { return 7, nil }
	// /proc counts CPU in clock ticks (10 ms): a test binary just started
	// may not have used one yet (7 runs in 40 failed here on that).
	spinUntilCPU(t)
	if sp, err := readSpan(stockPeer{count: counted}, []int{os.Getpid()}); err != nil || sp.count != 7 || sp.toolCPU <= 0 {
		t.Fatalf("reading this process: %+v, %v", sp, err)
	}
	// The tool's CPU is that of all its processes (here this one twice).
	one, _ := readSpan(stockPeer{count: counted}, []int{os.Getpid()})
	if two, err := readSpan(stockPeer{count: counted}, []int{os.Getpid(), os.Getpid()}); err != nil || two.toolCPU < 2*one.toolCPU {
		t.Fatalf("two processes: tool CPU %v after one's %v (%v)", two.toolCPU, one.toolCPU, err)
	}
	if _, err := readSpan(stockPeer{count: counted}, []int{os.Getpid(), -1}); err == nil {
		t.Error("an unreadable tool process gave no error")
	}
	failing := func() (int64, error) { return 0, errors.New("no route") }
	if _, err := readSpan(stockPeer{count: failing}, []int{os.Getpid()}); err == nil {
		t.Error("a failed count gave no error")
	}
	if _, err := readSpan(stockPeer{count: counted, pid: -1}, []int{os.Getpid()}); err == nil {
		t.Error("an unreadable broker gave no error")
	}
}

// -stock-async runs the Producer in its async mode with its client's window
// at workload 1's sends in flight (the default window lets sends pile up
// until they time out), names the mode in its rows, and leaves the
// Consumer's options alone.
func TestStockAsyncMode(t *testing.T) {
	r := &runner{cfg: &config{conns: 2, inflight: 64, stockProcs: 1}, log: io.Discard}
	if got := strings.Join(r.stockProducerArgs(), " "); got != "-t "+topicSend+" -s 1024 -w 128" {
		t.Errorf("sync args %q", got)
	}
	if got := strings.Join(r.stockJVM("Producer"), " "); got != "-Xms1g -Xmx1g" {
		t.Errorf("sync JVM options %q", got)
	}
	r.cfg.stockAsync = true
	if got := strings.Join(r.stockProducerArgs(), " "); got != "-t "+topicSend+" -s 1024 -y true" {
		t.Errorf("async args %q", got)
	}
	if got := strings.Join(r.stockJVM("Producer"), " "); got != "-Xms1g -Xmx1g -Dcom.rocketmq.remoting.clientAsyncSemaphoreValue=128" {
		t.Errorf("async JVM options %q", got)
	}
	if got := strings.Join(r.stockJVM("Consumer"), " "); got != "-Xms1g -Xmx1g" {
		t.Errorf("async mode's Consumer JVM options %q", got)
	}
	rmq, j4 := &target{name: "rmq"}, &target{name: "Java 4.9.7"}
	r.m = map[string]measures{
		"rmq":        {"w1.tps": 40000, "w1.tpcpu": 50000, "w1.stock.tps": 40000, "w1.stock.tpcpu": 60000},
		"Java 4.9.7": {"w1.tps": 16000, "w1.tpcpu": 15000, "w1.stock.tps": 20000, "w1.stock.tpcpu": 25000},
		"noop":       {"g.tps": 50000, "g.stock.tps": 42000, "g.stock.toolus": 23.8},
	}
	metrics := map[string]bool{}
	for _, rw := range r.rows(rmq, j4, &target{name: "Java 5.3.3"}, &target{name: "Java 5.3.3 proxy"}) {
		metrics[rw.metric] = true
		if strings.Contains(rw.metric, "stock Producer") && !strings.Contains(rw.metric, "stock Producer (async, 128 in flight)") {
			t.Errorf("row %q does not name the async mode", rw.metric)
		}
	}
	for _, m := range []string{
		"workload 1 by the stock Producer (async, 128 in flight): throughput",
		"workload 1, throughput: stock Producer (async, 128 in flight)'s rmq/Java over rmq bench's",
		"throughput, workload 1 by the stock Producer (async, 128 in flight)",
	} {
		if !metrics[m] {
			t.Errorf("no row %q", m)
		}
	}
}

// By default the stock Producer runs as workload 1's connections: -conns
// processes (one connection each), each with its share of the sends in
// flight, in either mode; -stock-procs overrides the count.
func TestStockProcsShareWorkload1(t *testing.T) {
	r := &runner{cfg: &config{conns: 2, inflight: 64}, log: io.Discard}
	if n, share := r.stockProcs(), r.stockShare(); n != 2 || share != 64 {
		t.Fatalf("%d processes with %d in flight each, want 2 × 64", n, share)
	}
	if got := strings.Join(r.stockProducerArgs(), " "); got != "-t "+topicSend+" -s 1024 -w 64" {
		t.Errorf("sync args %q", got)
	}
	if got := r.stockProducer(); got != "stock Producer (2 × 64 threads)" {
		t.Errorf("sync label %q", got)
	}
	r.cfg.stockAsync = true
	if got := strings.Join(r.stockJVM("Producer"), " "); got != "-Xms1g -Xmx1g -Dcom.rocketmq.remoting.clientAsyncSemaphoreValue=64" {
		t.Errorf("async JVM options %q", got)
	}
	if got := r.stockProducer(); got != "stock Producer (async, 2 × 64 in flight)" {
		t.Errorf("async label %q", got)
	}
	r.cfg.stockProcs = 4
	if got := r.stockProducer(); got != "stock Producer (async, 4 × 32 in flight)" {
		t.Errorf("-stock-procs 4: label %q", got)
	}
	r.cfg.stockProcs, r.cfg.conns = 0, 0
	if n := r.stockProcs(); n != 1 {
		t.Errorf("no connections: %d processes, want 1", n)
	}
}

// Processes run side by side add up window by window, over the windows
// all of them printed; the worst max RT and every failure count.
func TestCombineStock(t *testing.T) {
	a := stockStats{tps: []float64{100, 200, 300, 400}, maxRT: 12, failed: 3}
	b := stockStats{tps: []float64{10, 20, 30}, maxRT: 40, failed: 1}
	got := combineStock([]stockStats{a, b})
	if !slices.Equal(got.tps, []float64{110, 220, 330}) || got.maxRT != 40 || got.failed != 4 {
		t.Fatalf("combined %+v", got)
	}
	if !slices.Equal(a.tps, []float64{100, 200, 300, 400}) {
		t.Errorf("the first process's windows changed: %v", a.tps)
	}
	if one := combineStock([]stockStats{b}); !slices.Equal(one.tps, b.tps) || one.failed != 1 {
		t.Errorf("one process: %+v", one)
	}
}

// spinUntilCPU keeps this process busy until /proc shows it has used CPU.
func spinUntilCPU(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	x := 0
	for {
		p, err := readProc(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if p.cpu > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no CPU time after 10 s of spinning")
		}
		for i := 0; i < 1_000_000; i++ {
			x += i
		}
		_ = x
	}
}
