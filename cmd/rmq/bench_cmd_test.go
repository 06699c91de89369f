package main

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rmqio/rmq/bench"
)

// TestBenchCommands runs each bench mode for about a second against an
// in-process broker and checks the summary.
func TestBenchCommands(t *testing.T) {
	c := startAdminCluster(t)
	code, out, errOut := runCLI(t, "bench", "produce", "-n", c.ns, "-t", "BenchCLI", "-d", "1s", "-c", "1", "-w", "8", "-s", "100", "--report-interval", "300ms")
	if code != 0 {
		t.Fatalf("produce: exit %d: %s", code, errOut)
	}
	for _, re := range []string{
		`(?m)^\[\s+\d+s\] sent \d+ \(\d+/s\) errors 0 \| latency p50 [\d.]+ p99 [\d.]+ p99.9 [\d.]+ max [\d.]+ ms$`,
		`(?m)^=== bench produce: topic BenchCLI, [\d.]+ s ===$`,
		`(?m)^sent:\s+\d+ ok, 0 failed, [\d.]+ msg/s, [\d.]+ MiB/s$`,
		`(?m)^latency:\s+p50 [\d.]+ ms, p99 [\d.]+ ms, p99.9 [\d.]+ ms, max [\d.]+ ms \(send round trip, \d+ samples\)$`,
		`(?m)^errors:\s+none$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("produce output lacks %s:\n%s", re, out)
		}
	}
	sent, _ := strconv.ParseInt(regexp.MustCompile(`sent:\s+(\d+) ok`).FindStringSubmatch(out)[1], 10, 64)

	// Everything sent, plus the message that auto-created the topic.
	code, out, errOut = runCLI(t, "bench", "consume", "-n", c.ns, "-t", "BenchCLI", "--from", "min", "--count", strconv.FormatInt(sent+1, 10), "-d", "20s", "--report-interval", "0", "--json")
	if code != 0 {
		t.Fatalf("consume: exit %d: %s", code, errOut)
	}
	var sum bench.Summary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("consume --json: %v\n%s", err, out)
	}
	if sum.Mode != bench.ModeConsume || sum.Received != sent+1 || sum.Latency.Count == 0 || len(sum.Errors) != 0 {
		t.Errorf("consume summary %+v, want %d received", sum, sent+1)
	}

	code, out, errOut = runCLI(t, "bench", "timer", "-n", c.ns, "-t", "BenchTimerCLI", "-d", "1s", "-c", "1", "-w", "2",
		"--delay", "100ms", "--spread", "300ms", "--grace", "20s", "--report-interval", "0")
	if code != 0 {
		t.Fatalf("timer: exit %d: %s\n%s", code, errOut, out)
	}
	for _, re := range []string{
		`(?m)^received:\s+\d+, [\d.]+ msg/s`,
		`(?m)^lateness:\s+p50 [\d.]+ ms, p99 [\d.]+ ms, p99.9 [\d.]+ ms, max [\d.]+ ms \(\d+ samples\)$`,
		`(?m)^delivery:\s+\d+ early \(at most [\d.]+ ms\), 0 lost, 0 duplicates$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("timer output lacks %s:\n%s", re, out)
		}
	}
}

func TestBenchCommandErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "no name server", args: []string{"bench", "produce", "-n", ""}, wantErr: "no name server address"},
		{name: "bad header", args: []string{"bench", "produce", "-n", "127.0.0.1:1", "--header", "xml"}, wantErr: `--header "xml" is neither rocketmq nor json`},
		{name: "bad delay level", args: []string{"bench", "timer", "-n", "127.0.0.1:1", "--delay-level", "40"}, wantErr: "delay level 40 outside 1..18"},
		{name: "stray argument", args: []string{"bench", "consume", "-n", "127.0.0.1:1", "extra"}, wantErr: `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tt.args...)
			if code != 1 || !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("exit %d stderr %q, want 1 and %q", code, errOut, tt.wantErr)
			}
		})
	}
}
