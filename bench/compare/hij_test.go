package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/bench"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// A named section sits next to the full run's and each run rewrites only
// its own.
func TestSpliceNamedSection(t *testing.T) {
	full, err := spliceSection("# T\n", "", "full\n")
	if err != nil {
		t.Fatal(err)
	}
	both, err := spliceSection(full, "h-j", "one\n")
	if err != nil {
		t.Fatal(err)
	}
	again, err := spliceSection(both, "h-j", "two\n")
	if err != nil {
		t.Fatal(err)
	}
	b, e := sectionMarkers("h-j")
	want := full + "\n" + b + "\n\ntwo\n\n" + e + "\n"
	if again != want {
		t.Fatalf("got %q\nwant %q", again, want)
	}
	if refull, err := spliceSection(again, "", "full2\n"); err != nil || !strings.Contains(refull, "two") || strings.Contains(refull, "\nfull\n") {
		t.Fatalf("rewriting the full run's section: %q, %v", refull, err)
	}
}

// The backlog's properties make sqlExpr match about 10 % of the messages.
func TestSQLPropsSelectivity(t *testing.T) {
	const n = 200_000
	var match int
	regions := map[string]int{}
	for seq := range int64(n) {
		a, region := sqlProps(seq)
		if a < 0 || a >= 50 {
			t.Fatalf("seq %d: a = %d", seq, a)
		}
		regions[region]++
		if sqlMatches(seq) {
			match++
		}
	}
	if f := float64(match) / n; f < 0.095 || f > 0.105 {
		t.Fatalf("match fraction %.4f, want about 0.10", f)
	}
	if len(regions) != len(sqlRegions) {
		t.Fatalf("regions %v", regions)
	}
}

func TestSeqSet(t *testing.T) {
	a, b := newSeqSet(200), newSeqSet(200)
	for _, s := range []int64{0, 63, 64, 199} {
		if !a.add(s) {
			t.Fatalf("add %d: not new", s)
		}
		b.add(s)
	}
	if a.add(63) {
		t.Fatal("add 63 twice: new")
	}
	if a.count() != 4 || a.diff(b) != 0 || a.digest() != b.digest() {
		t.Fatalf("count %d diff %d digests %s %s", a.count(), a.diff(b), a.digest(), b.digest())
	}
	b.add(100)
	if a.diff(b) != 1 || a.digest() == b.digest() {
		t.Fatalf("after adding 100 to b: diff %d, digests %s %s", a.diff(b), a.digest(), b.digest())
	}
}

// The SQL92 pull carries the expression, its type and a version.
func TestSQLPull(t *testing.T) {
	req := newSQLPull(admin.QueueAddr{MessageQueue: remoting.MessageQueue{Topic: topicSQL, QueueID: 3}, Addr: "127.0.0.1:1"}, 42, 1234)
	h := req.Header()
	if got := h.Str("subscription", true); got != sqlExpr {
		t.Fatalf("subscription %q", got)
	}
	if h.Str("expressionType", true) != "SQL92" || h.Int64("subVersion", true, 0) != 1234 || h.Int64("queueOffset", true, 0) != 42 {
		t.Fatalf("header %v", req.Ext())
	}
}

// A pushed reply is matched by its correlation id; warm-up replies and
// unknown ids are answered but not measured.
func TestRequesterOnPush(t *testing.T) {
	q := &requester{rtt: &bench.Histogram{}, slow: map[int64]int{}}
	q.pending.Store("c1", pendingRequest{began: time.Now().Add(-time.Millisecond)})
	q.pending.Store("w1", pendingRequest{began: time.Now(), warm: true})
	push := func(corr string) *remoting.Command {
		return remoting.NewRequest(remoting.PushReplyMessageToClient, map[string]string{
			"properties": message.MarshalProperties(map[string]string{message.PropCorrelationID: corr}),
		}, nil)
	}
	for _, corr := range []string{"c1", "w1", "unknown", "c1"} {
		if resp := q.onPush("", push(corr)); resp.Code != remoting.Success {
			t.Fatalf("push %s answered %d", corr, resp.Code)
		}
	}
	if q.replied.Load() != 1 || q.rtt.Count() != 1 || q.pushes.Load() != 4 {
		t.Fatalf("replied %d, recorded %d, pushes %d", q.replied.Load(), q.rtt.Count(), q.pushes.Load())
	}
	if resp := q.onPush("", remoting.NewRequest(remoting.HeartBeat, nil, nil)); resp.Code != remoting.RequestCodeNotSupported {
		t.Fatalf("other request answered %d", resp.Code)
	}
}

func TestScraper(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 2 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("rocketmq_messages_in_total 1\n"))
	}))
	defer srv.Close()
	s := startScraper(context.Background(), srv.URL, time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for s.ok.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	s.close()
	if s.ok.Load() < 3 || s.failed.Load() != 1 || s.bytes.Load() != 29*s.ok.Load() {
		t.Fatalf("ok %d failed %d bytes %d", s.ok.Load(), s.failed.Load(), s.bytes.Load())
	}
}

func TestBrokerConfExtra(t *testing.T) {
	conf := brokerConf("/d", 1, 2, asyncFlush, "", []string{sqlConf})
	if !strings.HasSuffix(conf, "\n"+sqlConf+"\n") || !strings.Contains(conf, "brokerClusterName="+benchCluster+"\n") {
		t.Fatalf("conf %q", conf)
	}
}
