package ratelog

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
)

// lines decodes the JSON lines of buf.
func logLines(t *testing.T, buf *testutil.LockedBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

const (
	codeUnavailable = 14
	codeIllegal     = 13
)

// The issue-42 flood: a client retrying against a full disk. A million
// refusals in a burst (on 4 goroutines) write one line; the counter has
// them all; once the interval has passed the flush writes how many were
// left out, and the next refusal logs again.
func TestBurstIsBoundedAndCounted(t *testing.T) {
	var buf testutil.LockedBuffer
	log := zerolog.New(&buf)
	clk := clock.NewManual(time.Unix(1700000000, 0))
	l := New(log, clk, 10*time.Second)
	errFull := errors.New("disk full")

	const total, workers = 1_000_000, 4
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < total/workers; i++ {
				l.Warn(&log, "send_disk_full", codeUnavailable).Err(errFull).Msg("send refused by the store")
			}
		}()
	}
	wg.Wait()
	lines := logLines(t, &buf)
	if len(lines) != 1 {
		t.Fatalf("%d lines for a burst of %d refusals, want 1", len(lines), total)
	}
	if lines[0]["message"] != "send refused by the store" || lines[0]["reason"] != "send_disk_full" || lines[0]["suppressed"] != nil {
		t.Fatalf("first line %v", lines[0])
	}
	if got := l.Total("send_disk_full", codeUnavailable); got != total {
		t.Fatalf("counter %d, want %d", got, total)
	}

	// Within the interval a flush has nothing to say.
	clk.Advance(9 * time.Second)
	l.Flush()
	if n := len(logLines(t, &buf)); n != 1 {
		t.Fatalf("%d lines after a flush inside the interval, want 1", n)
	}
	clk.Advance(time.Second)
	l.Flush()
	lines = logLines(t, &buf)
	if len(lines) != 2 {
		t.Fatalf("%d lines after the interval's flush, want 2", len(lines))
	}
	if s := lines[1]; s["suppressed"] != float64(total-1) || s["reason"] != "send_disk_full" ||
		s["message"] != "suppressed 999999 similar refusals in the last interval" {
		t.Fatalf("summary %v", s)
	}
	// Said once: a second flush adds nothing.
	l.Flush()
	if n := len(logLines(t, &buf)); n != 2 {
		t.Fatalf("%d lines after a second flush, want 2", n)
	}
	// The next refusal opens a new interval with a line of its own.
	l.Warn(&log, "send_disk_full", codeUnavailable).Msg("send refused by the store")
	if n := len(logLines(t, &buf)); n != 3 {
		t.Fatalf("%d lines after a refusal past the interval, want 3", n)
	}
	if got := l.Total("send_disk_full", codeUnavailable); got != total+1 {
		t.Fatalf("counter %d, want %d", got, total+1)
	}
}

// A refusal after the interval, before any flush, carries the count of the
// ones left out itself; the flush then has nothing more to say.
func TestLineAfterIntervalCarriesSuppressed(t *testing.T) {
	var buf testutil.LockedBuffer
	log := zerolog.New(&buf)
	clk := clock.NewManual(time.Unix(1700000000, 0))
	l := New(log, clk, 10*time.Second)
	for i := 0; i < 5; i++ {
		l.Warn(&log, "r", codeUnavailable).Msg("refused")
	}
	clk.Advance(11 * time.Second)
	l.Warn(&log, "r", codeUnavailable).Msg("refused")
	l.Flush()
	lines := logLines(t, &buf)
	if len(lines) != 2 || lines[1]["suppressed"] != float64(4) {
		t.Fatalf("lines %v, want the second to carry suppressed=4", lines)
	}
}

// Reasons (and codes) are limited apart: one flooding reason does not hide
// another's first line. Each reports every count.
func TestReasonsAreIndependent(t *testing.T) {
	var buf testutil.LockedBuffer
	log := zerolog.New(&buf)
	l := New(log, clock.NewManual(time.Unix(0, 0)), 0)
	if l.Interval() != DefaultInterval {
		t.Fatalf("interval %v", l.Interval())
	}
	for i := 0; i < 100; i++ {
		l.Warn(&log, "a", codeUnavailable).Msg("a")
	}
	l.Warn(&log, "b", codeIllegal).Msg("b")
	l.Warn(&log, "a", codeIllegal).Msg("a other code")
	if n := len(logLines(t, &buf)); n != 3 {
		t.Fatalf("%d lines, want 3", n)
	}
	got := map[key]uint64{}
	l.Each(func(r string, c int32, n uint64) { got[key{r, c}] = n })
	want := map[key]uint64{{"a", codeUnavailable}: 100, {"b", codeIllegal}: 1, {"a", codeIllegal}: 1}
	if len(got) != len(want) {
		t.Fatalf("Each %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Fatalf("Each %v, want %v", got, want)
		}
	}
}

// A level the logger does not write is still counted and still limited.
func TestDisabledLevelCounts(t *testing.T) {
	var buf testutil.LockedBuffer
	log := zerolog.New(&buf).Level(zerolog.WarnLevel)
	l := New(log, clock.NewManual(time.Unix(0, 0)), time.Second)
	for i := 0; i < 10; i++ {
		l.Event(&log, zerolog.DebugLevel, "acl", 1).Msg("refused")
	}
	if n := len(logLines(t, &buf)); n != 0 || l.Total("acl", 1) != 10 {
		t.Fatalf("%d lines, count %d", n, l.Total("acl", 1))
	}
}

// The refusal path allocates nothing once a reason is known and quiet.
func TestSuppressedDoesNotAllocate(t *testing.T) {
	log := zerolog.Nop()
	l := New(log, clock.NewManual(time.Unix(0, 0)), time.Second)
	l.Warn(&log, "r", 1).Msg("first")
	if a := testing.AllocsPerRun(1000, func() { l.Warn(&log, "r", 1).Str("topic", "t").Msg("x") }); a != 0 {
		t.Fatalf("%v allocations per suppressed refusal", a)
	}
}
