// Package ratelog bounds the log lines of repeated refusals.
//
// A broker on a full disk refuses every send, and a client retrying in a
// loop makes it refuse hundreds of thousands a second: one line per refusal
// (3.47 M lines, 658 MB in two minutes in issue 42) fills the last free
// space when the log file is on the same volume. So each kind of refusal (a
// reason and the response code it answers) logs its first occurrence, then
// at most one line per interval; the line after a quiet stretch, or the
// summary Flush writes when the interval ended without one, says how many
// were left out. The exact numbers are counted, not logged: Each reads the
// count of every reason for the metrics endpoint.
//
// The refusal path pays a map lookup without a lock (sync.Map on a key that
// exists after the first refusal), an atomic add and, for the rare line that
// is written, a short mutex; a suppressed refusal allocates nothing.
package ratelog

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
)

// DefaultInterval is how often one reason may log a line.
const DefaultInterval = 10 * time.Second

// Limiter rate-limits the lines of each refusal reason and counts them all.
type Limiter struct {
	log   zerolog.Logger // for Flush's summaries
	clock clock.Clock
	every time.Duration
	kinds sync.Map // key -> *kind
}

type key struct {
	reason string
	code   int32
}

// kind is one reason's state. total is read by Each without the lock.
type kind struct {
	total atomic.Uint64
	mu    sync.Mutex
	// quietUntil ends the interval opened by the last line written; until
	// then occurrences are only counted in suppressed.
	quietUntil time.Time
	suppressed uint64
}

// New returns a limiter whose summaries go to log; every <= 0 means
// DefaultInterval.
func New(log zerolog.Logger, c clock.Clock, every time.Duration) *Limiter {
	if every <= 0 {
		every = DefaultInterval
	}
	if c == nil {
		c = clock.Real{}
	}
	return &Limiter{log: log, clock: c, every: every}
}

// Interval is how often one reason may log a line (the period its owner
// calls Flush at).
func (l *Limiter) Interval() time.Duration { return l.every }

// Warn counts one refusal of reason (answered with code) and returns a
// warning of log to fill in and Msg, or nil (zerolog's no-op event) while
// the reason is within its quiet interval. A returned event carries the
// reason and, when earlier ones were left out, "suppressed": their number.
func (l *Limiter) Warn(log *zerolog.Logger, reason string, code int32) *zerolog.Event {
	return l.Event(log, zerolog.WarnLevel, reason, code)
}

// Event is Warn at any level. A level log does not write still counts, and
// still takes the reason's line for the interval.
func (l *Limiter) Event(log *zerolog.Logger, level zerolog.Level, reason string, code int32) *zerolog.Event {
	k := l.kind(reason, code)
	k.total.Add(1)
	now := l.clock.Now()
	k.mu.Lock()
	if now.Before(k.quietUntil) {
		k.suppressed++
		k.mu.Unlock()
		return nil
	}
	n := k.suppressed
	k.suppressed = 0
	k.quietUntil = now.Add(l.every)
	k.mu.Unlock()
	e := log.WithLevel(level)
	if e == nil {
		return nil
	}
	e = e.Str("reason", reason).Int32("code", code)
	if n > 0 {
		e = e.Uint64("suppressed", n)
	}
	return e
}

func (l *Limiter) kind(reason string, code int32) *kind {
	k := key{reason, code}
	if v, ok := l.kinds.Load(k); ok {
		return v.(*kind)
	}
	v, _ := l.kinds.LoadOrStore(k, &kind{})
	return v.(*kind)
}

// Flush writes, for every reason whose quiet interval has ended with
// refusals left out and no line since, one summary: "suppressed N similar
// refusals in the last interval". Its owner calls it every Interval, so a
// burst that stops is still accounted for in the log.
func (l *Limiter) Flush() {
	now := l.clock.Now()
	type summary struct {
		key
		n uint64
	}
	var out []summary
	l.kinds.Range(func(kv, v any) bool {
		k := v.(*kind)
		k.mu.Lock()
		if k.suppressed > 0 && !now.Before(k.quietUntil) {
			out = append(out, summary{kv.(key), k.suppressed})
			k.suppressed = 0
		}
		k.mu.Unlock()
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].reason < out[j].reason })
	for _, s := range out {
		l.log.Warn().Str("reason", s.reason).Int32("code", s.code).Uint64("suppressed", s.n).
			Dur("interval", l.every).Msgf("suppressed %d similar refusals in the last interval", s.n)
	}
}

// Each calls fn with every reason's exact count of refusals so far.
func (l *Limiter) Each(fn func(reason string, code int32, total uint64)) {
	l.kinds.Range(func(kv, v any) bool {
		k := kv.(key)
		fn(k.reason, k.code, v.(*kind).total.Load())
		return true
	})
}

// Total is the count of refusals of reason answered with code.
func (l *Limiter) Total(reason string, code int32) uint64 {
	if v, ok := l.kinds.Load(key{reason, code}); ok {
		return v.(*kind).total.Load()
	}
	return 0
}
