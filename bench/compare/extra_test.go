package main

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/remoting"
)

func TestScaleLevels(t *testing.T) {
	tests := []struct {
		max  int64
		want []int64
	}{
		{500, []int64{500}},
		{1_000, []int64{1_000}},
		{5_000, []int64{1_000, 5_000}},
		{1_000_000, []int64{1_000, 100_000, 1_000_000}},
		{10_000_000, []int64{1_000, 100_000, 1_000_000, 10_000_000}},
		{20_000_000, []int64{1_000, 100_000, 1_000_000, 10_000_000, 20_000_000}},
	}
	for _, tc := range tests {
		if got := scaleLevels(tc.max); !slices.Equal(got, tc.want) {
			t.Errorf("scaleLevels(%d) = %v, want %v", tc.max, got, tc.want)
		}
	}
}

func TestParseSizes(t *testing.T) {
	got, err := parseSizes("65536,1048576")
	if err != nil || !slices.Equal(got, []int{65536, 1 << 20}) {
		t.Fatalf("parseSizes = %v, %v", got, err)
	}
	if got, err := parseSizes(",7,,9,"); err != nil || !slices.Equal(got, []int{7, 9}) {
		t.Fatalf("parseSizes with empty fields = %v, %v", got, err)
	}
	for _, bad := range []string{"x", "0", "-3", "1,2k"} {
		if _, err := parseSizes(bad); err == nil {
			t.Errorf("parseSizes(%q): no error", bad)
		}
	}
}

func TestSizeNames(t *testing.T) {
	tests := []struct {
		n         int
		key, name string
	}{
		{65536, "64k", "64 KiB"},
		{1 << 20, "1m", "1 MiB"},
		{3 << 20, "3m", "3 MiB"},
		{1000, "1000", "1000 B"},
	}
	for _, tc := range tests {
		if k, n := sizeKey(tc.n), sizeName(tc.n); k != tc.key || n != tc.name {
			t.Errorf("size %d: key %q name %q, want %q %q", tc.n, k, n, tc.key, tc.name)
		}
	}
}

func TestAbsoluteGoals(t *testing.T) {
	tests := []struct {
		g         goal
		rmq, java float64
		want      string
	}{
		{rmqAtLeast(0.8), 0.9, math.NaN(), "yes"},
		{rmqAtLeast(0.8), 0.7, 0.1, "NO"},
		{rmqAtMost(1), 1.0, 30, "yes"},
		{rmqAtMost(1), 1.2, 0.5, "NO"},
		{rmqWithin(0.8, 1.2), 1.19, 5, "yes"},
		{rmqWithin(0.8, 1.2), 0.79, 1, "NO"},
		{rmqWithin(0.8, 1.2), math.NaN(), 1, ""},
		{zeroRMQ, 0, 3, "yes"},
		{atLeast(2), 4, 2, "yes"},
		{atLeast(2), 4, math.NaN(), ""},
	}
	for i, tc := range tests {
		r := row{rmq: tc.rmq, java: tc.java, goal: tc.g}
		if got := r.verdict(); got != tc.want {
			t.Errorf("%d: %s with rmq %v java %v: verdict %q, want %q", i, tc.g.text, tc.rmq, tc.java, got, tc.want)
		}
	}
}

func TestSeqWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	bw, err := seqWrite(context.Background(), path, 3<<20+5)
	if err != nil || !(bw > 0) {
		t.Fatalf("seqWrite = %v, %v", bw, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("seqWrite left %s behind: %v", path, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := seqWrite(ctx, path, 1<<20); !errors.Is(err, context.Canceled) {
		t.Fatalf("seqWrite with a cancelled context: %v", err)
	}
}

// TestNoopServer drives the no-op server as `rmq bench produce` does: a
// route lookup, then V2 and V1 sends that must parse as SEND_OK.
func TestNoopServer(t *testing.T) {
	n, err := startNoop()
	if err != nil {
		t.Fatal(err)
	}
	defer n.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := admin.New(admin.Options{NamesrvAddr: n.address(), Timeout: 5 * time.Second})
	defer adm.Close()
	rd, err := adm.Route(ctx, "AnyTopic")
	if err != nil {
		t.Fatal(err)
	}
	queues := admin.PublishQueues("AnyTopic", rd)
	if len(queues) != noopQueues || queues[3].Addr != n.address() {
		t.Fatalf("route: %+v", queues)
	}
	cl := remoting.NewClient(remoting.ClientOptions{SerializeType: remoting.SerializeRocketMQ})
	defer cl.Close()
	for i, v1 := range []bool{false, true, false} {
		req := admin.NewSendRequest(&admin.SendSpec{ProducerGroup: "g", Topic: "AnyTopic", QueueID: queues[3].QueueID,
			Body: []byte("x"), BornTimestamp: 1, V1Header: v1})
		resp, err := cl.Invoke(ctx, n.address(), req)
		if err != nil {
			t.Fatal(err)
		}
		res, err := admin.ParseSendResponse(resp)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != "SEND_OK" || res.QueueID != queues[3].QueueID || res.QueueOffset != int64(i) {
			t.Fatalf("send %d (v1 %v): %+v", i, v1, res)
		}
	}
	if got := n.sends.Load(); got != 3 {
		t.Fatalf("sends answered = %d, want 3", got)
	}
	resp, err := cl.Invoke(ctx, n.address(), remoting.NewRequest(remoting.GetMaxOffset, map[string]string{"topic": "AnyTopic", "queueId": "0"}, nil))
	if err != nil || resp.Code != remoting.RequestCodeNotSupported {
		t.Fatalf("other request: %v, %v", resp, err)
	}
}

func TestParseStockOutput(t *testing.T) {
	prod := `topic: CmpSend threadCount: 128 messageSize: 1024 keyEnable: false propertySize: 0 tagCount: 0 traceEnable: false aclEnable: false messageQuantity: 0
delayEnable: false delayLevel: 1
Current Time: 2026-12-01 11:00:10,123 Send TPS: 30000 Max RT(ms): 250 Average RT(ms):   4.100 Send Failed: 0 Response Failed: 0
Current Time: 1764586820000 Send TPS: 41000 Max RT(ms): 31 Average RT(ms):   3.101 Send Failed: 2 Response Failed: 0
Current Time: 1764586830000 Send TPS: 43000 Max RT(ms): 40 Average RT(ms):   2.950 Send Failed: 3 Response Failed: 0
[Complete] Send Total: 900000 Send TPS: 42000 Max RT(ms): 250 Average RT(ms):   3.000 Send Failed: 3 Response Failed: 0
`
	s := parseStockOutput(prod, true)
	if !slices.Equal(s.tps, []float64{30000, 41000, 43000}) || s.maxRT != 250 || s.failed != 3 {
		t.Fatalf("producer: %+v", s)
	}
	// The first stockSkip (2) windows are left out.
	if s.steady() != 43000 || s.peak() != 43000 {
		t.Fatalf("producer steady %v peak %v", s.steady(), s.peak())
	}
	if got := (stockStats{tps: []float64{10, 20, 30, 50}}); got.steady() != 40 {
		t.Fatalf("four windows: steady %v, want the mean of the last two", got.steady())
	}
	if got := (stockStats{tps: []float64{10, 20}}); got.steady() != 20 {
		t.Fatalf("two windows: steady %v, want the second", got.steady())
	}
	cons := `Consumer Started.
Current Time: 1764586810000 TPS: 52011 FAIL: 0 AVG(B2C) RT(ms): 1200.000 AVG(S2C) RT(ms): 1100.000 MAX(B2C) RT(ms): 9000 MAX(S2C) RT(ms): 8000
Current Time: 1764586820000 TPS: 0 FAIL: 1 AVG(B2C) RT(ms):     NaN AVG(S2C) RT(ms):     NaN MAX(B2C) RT(ms): 0 MAX(S2C) RT(ms): 0
`
	c := parseStockOutput(cons, false)
	if !slices.Equal(c.tps, []float64{52011, 0}) || c.failed != 1 || c.peak() != 52011 || c.steady() != 0 {
		t.Fatalf("consumer: %+v", c)
	}
	if got := parseStockOutput(prod, false); len(got.tps) != 0 {
		t.Fatalf("producer lines read as consumer lines: %+v", got)
	}
	if got := (stockStats{tps: []float64{7}}); got.steady() != 7 {
		t.Fatalf("one window: steady %v", got.steady())
	}
	if got := (stockStats{}); got.steady() != 0 || got.peak() != 0 {
		t.Fatalf("no window: %v %v", got.steady(), got.peak())
	}
}

func TestBuildStockToolsNotACheckout(t *testing.T) {
	_, err := buildStockTools(t.TempDir(), t.TempDir(), []string{t.TempDir()})
	if !errors.Is(err, errStockTools) {
		t.Fatalf("err = %v, want errStockTools", err)
	}
}
