package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Both brokers' receipt handles are ReceiptHandle.encode's: popped at
// retrieveTime, invisible for invisibleTime.
func TestReceiptTimes(t *testing.T) {
	for _, h := range []string{
		"1712 1764600000123 10000 0 0 broker-a 3 42 98765", // proxy: extraInfo + commitlog offset
		"1712 1764600000123 10000 0 0 broker-a 3 42",       // without the commitlog offset
	} {
		pop, inv, err := receiptTimes(h)
		if err != nil || !pop.Equal(time.UnixMilli(1764600000123)) || inv != 10*time.Second {
			t.Fatalf("%q: pop %v invisible %v, %v", h, pop, inv, err)
		}
	}
	for _, h := range []string{"", "1 2 3 4 5 6 7", "1 x 10000 0 0 b 3 42", "1 2 y 0 0 b 3 42"} {
		if _, _, err := receiptTimes(h); err == nil {
			t.Fatalf("%q: no error", h)
		}
	}
}

func TestLatenessRecord(t *testing.T) {
	var l lateness
	due := time.UnixMilli(1_000_000)
	l.record(due, due, time.Time{})
	l.record(due.Add(7*time.Millisecond), due, due)
	l.record(due.Add(-3*time.Millisecond), due, time.Time{})
	l.record(due.Add(-time.Millisecond), due, time.Time{})
	if n := l.hist.Count(); n != 4 {
		t.Fatalf("recorded %d, want 4", n)
	}
	if e, m := l.early.Load(), l.maxEarly.Load(); e != 2 || m != 3000 {
		t.Fatalf("early %d by up to %d µs, want 2 by 3000", e, m)
	}
	if p := l.hist.Percentiles(); p.Max != 7 || p.P50 != 0 {
		t.Fatalf("percentiles %+v: want max 7 ms, p50 0 (early counts as 0)", p)
	}
	if s := l.slowSpan(); s != "none later than 100ms" {
		t.Fatalf("slow span %q", s)
	}
	l.record(due.Add(2*time.Second), due.Add(time.Second), due.Add(1050*time.Millisecond))
	l.record(due.Add(4*time.Second), due.Add(3500*time.Millisecond), due.Add(3900*time.Millisecond))
	if s := l.slowSpan(); s != "2 later than 100ms, 1 of them popped that late, due 1.00-3.50 s after the first due time" {
		t.Fatalf("slow span %q", s)
	}
}

func TestErrCount(t *testing.T) {
	var e errCount
	if e.String() != "0" || e.count() != 0 {
		t.Fatalf("empty: %q %d", e.String(), e.count())
	}
	e.add(errors.New("first"))
	e.add(errors.New("second"))
	if e.count() != 2 || e.String() != "2, first: first" {
		t.Fatalf("got %q %d", e.String(), e.count())
	}
}

func TestSeenSet(t *testing.T) {
	s := newSeenSet[int]()
	if v, fresh := s.add("a", 1); !fresh || v != 1 {
		t.Fatalf("first add: %d %t", v, fresh)
	}
	if v, fresh := s.add("a", 2); fresh || v != 1 {
		t.Fatalf("second add: %d %t, want the first value, not fresh", v, fresh)
	}
	if s.len() != 1 {
		t.Fatalf("len %d", s.len())
	}
}

func TestParseOnlyK(t *testing.T) {
	only, err := parseOnly("k")
	if err != nil || !only["k"] || len(only) != 1 {
		t.Fatalf("%v %v", only, err)
	}
	cfg, err := parseFlags([]string{"-only", "k", "-grpc-rate", "100", "-grpc-timers", "7", "-grpc-revive", "9"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.grpcRate != 100 || cfg.grpcTimers != 7 || cfg.grpcRevive != 9 || !cfg.has("k") || cfg.has("1") {
		t.Fatalf("%+v", cfg)
	}
	if _, err := parseFlags([]string{"-grpc-rate", "0"}); err == nil {
		t.Fatal("-grpc-rate 0 accepted")
	}
}

// rmq's broker.conf names the gRPC port workload k gives it, once; other
// workloads get an OS-assigned one.
func TestBrokerConfGRPCPort(t *testing.T) {
	dir := t.TempDir()
	count := func(conf, line string) int { return strings.Count(conf, "\n"+line+"\n") }
	plain := "\n" + brokerConf(dir, 1, 2, asyncFlush, "", nil)
	if count(plain, "grpcServerPort=0") != 1 {
		t.Fatalf("no grpcServerPort=0:\n%s", plain)
	}
	k := "\n" + brokerConf(dir, 1, 2, asyncFlush, "", []string{"grpcServerPort=4321"})
	if strings.Count(k, "grpcServerPort=") != 1 || count(k, "grpcServerPort=4321") != 1 {
		t.Fatalf("workload k's port:\n%s", k)
	}
	java := brokerConf(dir, 1, 2, asyncFlush, "/home", nil)
	if strings.Contains(java, "grpcServerPort") {
		t.Fatalf("Java broker.conf names a gRPC port:\n%s", java)
	}
}

// The Java peer of workload k is one JVM: the stock proxy in Local mode
// with the broker.conf every Java broker gets and a proxy config with the
// ports.
func TestProxyArgv(t *testing.T) {
	dir := t.TempDir()
	jp := &target{name: "Java 5.3.3 proxy", version: "5.3.3", lib: "/jars", proxy: true}
	argv, env, err := jp.proxyArgv(dir, 9876, 10911, 8081, asyncFlush, []string{"x=y"})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(argv, "org.apache.rocketmq.proxy.ProxyStartup")
	if i < 0 || !slices.Equal(argv[i+1:], []string{"-pm", "local", "-bc", filepath.Join(dir, "broker.conf"),
		"-pc", filepath.Join(dir, "rmq-proxy.json"), "-n", "127.0.0.1:9876"}) {
		t.Fatalf("argv %q", argv)
	}
	if argv[0] != "java" || !slices.Contains(argv, "/jars/*") {
		t.Fatalf("argv %q", argv)
	}
	if len(env) != 2 || !strings.HasPrefix(env[0], "ROCKETMQ_HOME=") {
		t.Fatalf("env %q", env)
	}
	bc, err := os.ReadFile(filepath.Join(dir, "broker.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(bc), "listenPort=10911\n") || !strings.HasSuffix(string(bc), "x=y\n") {
		t.Fatalf("broker.conf:\n%s", bc)
	}
	pc, err := os.ReadFile(filepath.Join(dir, "rmq-proxy.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(pc, &m); err != nil {
		t.Fatal(err)
	}
	if m["grpcServerPort"] != 8081.0 || m["namesrvAddr"] != "127.0.0.1:9876" || m["rocketMQClusterName"] != benchCluster ||
		m["enableTopicMessageTypeCheck"] != false {
		t.Fatalf("rmq-proxy.json: %s", pc)
	}
	if p, ok := m["remotingListenPort"].(float64); !ok || p <= 0 || p == 8081 {
		t.Fatalf("remotingListenPort %v", m["remotingListenPort"])
	}
}

// Workload k's rows judge rmq against the proxy with the targets.
func TestGRPCRows(t *testing.T) {
	cfg, err := parseFlags([]string{"-only", "k"})
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{cfg: cfg, m: map[string]measures{}}
	rmq := &target{name: "rmq"}
	jp := &target{name: "Java 5.3.3 proxy", version: "5.3.3", proxy: true}
	vals := map[string][2]float64{
		"wk.send.tps":   {20000, 5000},  // 4×: met
		"wk.send.tpcpu": {30000, 20000}, // 1.5×: missed
		"wk.e2e.p99":    {3, 10},        // 0.3×: met
		"wk.dt.p99":     {50, 1000},     // 0.05×: met
		"wk.dt.early":   {1, 0},         // rmq not 0: missed
		"wk.rv.p99":     {60, 3000},     // above 50 ms: missed
		"wk.rss":        {100, 1100},    // 0.09×: met
	}
	for k, v := range vals {
		r.set(rmq, k, v[0])
		r.set(jp, k, v[1])
	}
	rows := r.rows(rmq, &target{name: "Java 4.9.7"}, &target{name: "Java 5.3.3"}, jp)
	if len(rows) != len(vals) {
		t.Fatalf("%d rows, want %d (only the measured ones): %+v", len(rows), len(vals), rows)
	}
	want := map[string]string{
		"throughput": "yes", "msg per broker CPU-second": "NO", "sent to acked p99": "yes", "lateness p99": "yes",
		"delivered early": "NO", "redelivery lateness p99": "NO", "peak RSS (rmq broker; Java broker + proxy, one JVM)": "yes",
	}
	for _, row := range rows {
		if !strings.HasPrefix(row.workload, "k ") || row.peer != jp.name {
			t.Fatalf("row %+v", row)
		}
		if v, ok := want[row.metric]; !ok || row.verdict() != v {
			t.Fatalf("%s / %s: verdict %q, want %q", row.workload, row.metric, row.verdict(), v)
		}
	}
}
