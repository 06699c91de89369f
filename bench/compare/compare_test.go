package main

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    time.Duration
		wantErr bool
	}{
		{
			name: "plain name",
			stat: "4242 (rmq) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 12 0 100 5111984 25000 18446744073709551615",
			want: 3250 * time.Millisecond,
		},
		{
			name: "name with spaces and parentheses",
			stat: "7 (java (main) x) R 1 7 7 0 -1 0 0 0 0 0 1000 1 0 0 20 0 40 0 1 1 1 1",
			want: 10010 * time.Millisecond,
		},
		{name: "no name", stat: "7 R 1 2 3", wantErr: true},
		{name: "truncated", stat: "7 (x) R 1 2 3", wantErr: true},
		{name: "not a number", stat: "7 (x) R 1 7 7 0 -1 0 0 0 0 0 abc 1 0", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatCPU(tc.stat)
			if tc.wantErr {
				if !errors.Is(err, errProcStat) {
					t.Fatalf("err = %v, want errProcStat", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseStatCPU = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestParseStatusMem(t *testing.T) {
	tests := []struct {
		name     string
		status   string
		rss      int64
		anon     int64
		wantFail bool
	}{
		{name: "both", status: "Name:\trmq\nVmRSS:\t  104536 kB\nRssAnon:\t    7800 kB\nRssFile:\t   96736 kB\n", rss: 104536 << 10, anon: 7800 << 10},
		{name: "anon missing", status: "VmRSS:\t 1 kB\n", wantFail: true},
		{name: "garbage", status: "VmRSS:\t x kB\nRssAnon:\t 1 kB\n", wantFail: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rss, anon, err := parseStatusMem(tc.status)
			if tc.wantFail {
				if err == nil {
					t.Fatalf("no error for %q", tc.status)
				}
				return
			}
			if err != nil || rss != tc.rss || anon != tc.anon {
				t.Fatalf("got %d %d %v; want %d %d", rss, anon, err, tc.rss, tc.anon)
			}
		})
	}
}

func TestReadProcSelf(t *testing.T) {
	p, err := readProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if p.rss <= 0 || p.rssAnon <= 0 || p.rssAnon > p.rss {
		t.Fatalf("implausible reading %+v", p)
	}
}

func TestRowVerdict(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name  string
		row   row
		ratio string
		met   string
	}{
		{name: "throughput met", row: row{rmq: 30, java: 10, goal: atLeast(2)}, ratio: "3.00×", met: "yes"},
		{name: "throughput missed", row: row{rmq: 15, java: 10, goal: atLeast(2)}, ratio: "1.50×", met: "NO"},
		{name: "latency met", row: row{rmq: 1, java: 20, goal: atMost(0.1)}, ratio: "0.05×", met: "yes"},
		{name: "latency missed", row: row{rmq: 5, java: 20, goal: atMost(0.1)}, ratio: "0.25×", met: "NO"},
		{name: "rmq missing", row: row{rmq: nan, java: 20, goal: atMost(0.1)}, ratio: "—", met: ""},
		{name: "java zero", row: row{rmq: 3, java: 0, goal: atMost(0.1)}, ratio: "—", met: ""},
		{name: "zero goal met", row: row{rmq: 0, java: 12, goal: zeroRMQ}, ratio: "0", met: "yes"},
		{name: "zero goal missed", row: row{rmq: 2, java: 0, goal: zeroRMQ}, ratio: "—", met: "NO"},
		{name: "no goal", row: row{rmq: 2, java: 4, goal: noGoal}, ratio: "0.50×", met: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := tc.row.cells()
			if tc.ratio != "0" && cs[5] != tc.ratio {
				t.Errorf("ratio cell %q, want %q", cs[5], tc.ratio)
			}
			if cs[7] != tc.met {
				t.Errorf("met cell %q, want %q", cs[7], tc.met)
			}
		})
	}
}

func TestWriteTables(t *testing.T) {
	rows := []row{
		{workload: "1 send", metric: "throughput", unit: "msg/s", rmq: 45000, java: 20000, peer: "Java 4.9.7", goal: atLeast(1.5)},
		{workload: "7 startup", metric: "a|b", unit: "ms", rmq: 10.5, java: 3500, peer: "Java 4.9.7", goal: atMost(0.05)},
	}
	var txt, md strings.Builder
	writeText(&txt, rows)
	writeMarkdown(&md, rows)
	for _, want := range []string{"45000", "2.25×", "yes", "0.003×"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text table lacks %q:\n%s", want, txt.String())
		}
	}
	lines := strings.Split(strings.TrimSpace(md.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "|---|---|---:|") {
		t.Fatalf("markdown table:\n%s", md.String())
	}
	if !strings.Contains(lines[3], `a\|b`) {
		t.Errorf("pipe not escaped: %s", lines[3])
	}
}

func TestSpliceSection(t *testing.T) {
	tests := []struct {
		name    string
		old     string
		want    string
		wantErr bool
	}{
		{name: "empty file", old: "", want: sectionBegin + "\n\nB\n\n" + sectionEnd + "\n"},
		{name: "no markers", old: "# T\ntext", want: "# T\ntext\n\n" + sectionBegin + "\n\nB\n\n" + sectionEnd + "\n"},
		{
			name: "replace between markers",
			old:  "head\n" + sectionBegin + "\nold\n" + sectionEnd + "\ntail\n",
			want: "head\n" + sectionBegin + "\n\nB\n\n" + sectionEnd + "\ntail\n",
		},
		{name: "begin without end", old: sectionBegin + "\nold\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := spliceSection(tc.old, "", "B\n")
			if tc.wantErr {
				if !errors.Is(err, errMarkers) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v\nwant %q", got, err, tc.want)
			}
		})
	}
}

func TestSpreadCoversWindow(t *testing.T) {
	const count = 1000
	start := time.UnixMilli(1_700_000_000_000)
	seen := map[time.Duration]bool{}
	for seq := int64(0); seq < count; seq++ {
		d := spread(start, time.Second, seq, count).Sub(start)
		if d < 0 || d >= time.Second {
			t.Fatalf("seq %d due %v outside the window", seq, d)
		}
		seen[d] = true
	}
	if len(seen) != count {
		t.Fatalf("%d distinct due times of %d: not a permutation", len(seen), count)
	}
}

func TestBrokerPortsFree(t *testing.T) {
	p, err := brokerPorts()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []int{p - 2, p, p + 1} {
		if !portFree(q) {
			t.Errorf("port %d is taken", q)
		}
	}
}

func TestParseOnly(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "1, 3,7", want: []string{"1", "3", "7"}},
		{in: "a,B, g,e", want: []string{"a", "b", "g", "e"}},
		{in: "l,1", want: []string{"l", "1"}},
		{in: "8", wantErr: true},
		{in: "f", wantErr: true},
		{in: "x", wantErr: true},
	}
	for _, tc := range tests {
		got, err := parseOnly(tc.in)
		if tc.wantErr {
			if err == nil {
				t.Errorf("parseOnly(%q): no error", tc.in)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("parseOnly(%q) = %v, %v", tc.in, got, err)
		}
		for _, w := range tc.want {
			if !got[w] {
				t.Errorf("parseOnly(%q) lacks %s", tc.in, w)
			}
		}
	}
}
