package integration

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
)

// clientLog replaces the Go client's logger: it prints nothing and keeps the
// latest warnings and errors, which a failing test logs (a broker bug often
// shows up first as a client warning such as a pull or heartbeat error).
var clientLog = &ringLog{max: 2000}

type ringLog struct {
	mu    sync.Mutex
	max   int
	lines []string
	total int // lines ever recorded; marks are positions in this count
}

func (l *ringLog) record(level, msg string, fields map[string]interface{}) {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", level, msg)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%v", k, fields[k])
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, b.String())
	if len(l.lines) > l.max {
		l.lines = l.lines[len(l.lines)-l.max:]
	}
	l.total++
}

func (l *ringLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// since returns the retained lines recorded after mark.
func (l *ringLog) since(mark int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.total - mark
	if n > len(l.lines) {
		n = len(l.lines)
	}
	return strings.Join(l.lines[len(l.lines)-n:], "\n")
}

func (l *ringLog) Debug(string, map[string]interface{}) {}
func (l *ringLog) Info(string, map[string]interface{})  {}
func (l *ringLog) Warning(msg string, fields map[string]interface{}) {
	l.record("WARN", msg, fields)
}
func (l *ringLog) Error(msg string, fields map[string]interface{}) { l.record("ERROR", msg, fields) }
func (l *ringLog) Fatal(msg string, fields map[string]interface{}) { l.record("FATAL", msg, fields) }
func (l *ringLog) Level(string)                                    {}
func (l *ringLog) OutputPath(string) error                         { return nil }

// attachClientLog logs the client's warnings and errors of this test if it fails.
func attachClientLog(t *testing.T) {
	mark := clientLog.mark()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Go client warnings/errors during %s:\n%s", t.Name(), clientLog.since(mark))
		}
	})
}
