// Package testlog is the logger of components a test runs in process (the
// test helpers of internal/testutil and the public rmqtest).
package testlog

import (
	"os"
	"sync"
	"testing"

	"github.com/rs/zerolog"
)

// New returns a logger that writes warnings and errors through t.Log (go test
// shows them for a failed test only: what the components saw when it
// failed), and with RMQ_TEST_LOG set every level from debug up. Lines logged
// once t's cleanups have run (by a goroutine that outlived the test) are
// dropped: t.Log would panic then.
func New(t testing.TB) zerolog.Logger {
	level := zerolog.WarnLevel
	if os.Getenv("RMQ_TEST_LOG") != "" {
		level = zerolog.DebugLevel
	}
	w := newWriter(t)
	t.Cleanup(w.close)
	return zerolog.New(w).Level(level).With().Timestamp().Logger()
}

// writer passes lines to t.Log until close.
func newWriter(t zerolog.TestingLog) *writer { return &writer{w: zerolog.NewTestWriter(t)} }

type writer struct {
	mu     sync.Mutex
	w      zerolog.TestWriter
	closed bool
}

func (l *writer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return len(p), nil
	}
	return l.w.Write(p)
}

func (l *writer) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}
