package store

import (
	"strings"
	"testing"
	"time"

	"github.com/rmqio/rmq/internal/clock"
)

// The put-time distribution is J4 StoreStatsService's: its buckets, reported
// for the last complete minute, "null" before the first one ends.
func TestPutTimeDistributionRotatesEveryMinute(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	var tm storeTimes
	tm.init(now)
	for _, d := range []time.Duration{0, 500 * time.Microsecond, 9 * time.Millisecond, 10 * time.Millisecond,
		999 * time.Millisecond, 1500 * time.Millisecond, 10 * time.Second, time.Minute} {
		tm.notePut(now, d)
	}
	if got := tm.distribution(now.Add(59 * time.Second)); got != "null" {
		t.Fatalf("before the first minute ends: %q", got)
	}
	want := "[<=0ms]:2 [0~10ms]:1 [10~50ms]:1 [50~100ms]:0 [100~200ms]:0 [200~500ms]:0 [500ms~1s]:1 " +
		"[1~2s]:1 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:2 "
	if got := tm.distribution(now.Add(time.Minute)); got != want {
		t.Fatalf("first minute:\n got %q\nwant %q", got, want)
	}
	if tm.putMax.Load() != 60_000 {
		t.Fatalf("putMax = %d", tm.putMax.Load())
	}
	// A put in the second minute shows once that minute is over too.
	tm.notePut(now.Add(61*time.Second), 20*time.Millisecond)
	if got := tm.distribution(now.Add(119 * time.Second)); got != want {
		t.Fatalf("during the second minute: %q", got)
	}
	if got := tm.distribution(now.Add(121 * time.Second)); !strings.HasPrefix(got, "[<=0ms]:0 [0~10ms]:0 [10~50ms]:1 ") {
		t.Fatalf("second minute: %q", got)
	}
	tm.noteGet(3 * time.Millisecond)
	tm.noteGet(time.Millisecond)
	if tm.getMax.Load() != 3 {
		t.Fatalf("getMax = %d", tm.getMax.Load())
	}
}

// RuntimeInfo carries every key of J4 StoreStatsService.getRuntimeInfo that
// rocketmq-exporter's BrokerRuntimeStats parses.
func TestRuntimeInfoHasTheExporterKeys(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(1_800_000_000_000))
	o := testOptions(t.TempDir())
	o.Clock = clk
	s := openStore(t, o)
	mustPut(t, s, testMessage("TopicA", 0, 0))
	mustPut(t, s, testMessage("TopicA", 0, 1))
	info := s.RuntimeInfo()
	for _, k := range []string{"putMessageEntireTimeMax", "getMessageEntireTimeMax", "putMessageDistributeTime",
		"putMessageAverageSize", "dispatchMaxBuffer", "putMessageSizeTotal", "putMessageTimesTotal"} {
		if _, ok := info[k]; !ok {
			t.Errorf("no %s in %v", k, info)
		}
	}
	if info["putMessageDistributeTime"] != "null" || info["putMessageEntireTimeMax"] != "0" {
		t.Fatalf("manual clock, first minute: %v", info)
	}
	want := javaDouble(float64(s.stats.putBytes.Load()) / 2)
	if info["putMessageAverageSize"] != want || !strings.Contains(want, ".") {
		t.Fatalf("putMessageAverageSize = %q, want %q", info["putMessageAverageSize"], want)
	}
	clk.Advance(time.Minute)
	if got := s.RuntimeInfo()["putMessageDistributeTime"]; !strings.HasPrefix(got, "[<=0ms]:2 [0~10ms]:0 ") {
		t.Fatalf("after a minute: %q", got)
	}
}
