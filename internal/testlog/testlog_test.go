package testlog

import (
	"fmt"
	"os"
	"testing"

	"github.com/rs/zerolog"
)

// fakeLog records what would go to t.Log.
type fakeLog struct{ lines []string }

func (f *fakeLog) Log(args ...interface{}) { f.lines = append(f.lines, fmt.Sprint(args...)) }
func (f *fakeLog) Logf(format string, args ...interface{}) {
	f.lines = append(f.lines, fmt.Sprintf(format, args...))
}
func (f *fakeLog) Helper() {}

// A component that outlives its test (a goroutine logging after the test's
// cleanups) must not reach t.Log, which panics then ("Log in goroutine after
// ... has completed").
func TestLinesAfterCloseAreDropped(t *testing.T) {
	f := &fakeLog{}
	w := newWriter(f)
	log := zerolog.New(w)
	log.Warn().Msg("during the test")
	w.close()
	log.Error().Msg("after the test")
	if len(f.lines) != 1 {
		t.Fatalf("t.Log got %q, want only the line before close", f.lines)
	}
}

func TestLevel(t *testing.T) {
	want := zerolog.WarnLevel
	if os.Getenv("RMQ_TEST_LOG") != "" {
		want = zerolog.DebugLevel
	}
	if got := New(t).GetLevel(); got != want {
		t.Errorf("level %v, want %v", got, want)
	}
}
