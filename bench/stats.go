package bench

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqio/rmq/admin"
)

// meter counts messages and bytes and records a latency per event, both
// cumulatively and for the current report interval.
type meter struct {
	count    atomic.Int64
	bytes    atomic.Int64
	lat      Histogram
	interval atomic.Pointer[Histogram]
}

func newMeter() *meter {
	m := &meter{}
	m.interval.Store(&Histogram{})
	return m
}

func (m *meter) add(n, bytes int64, lat time.Duration, withLatency bool) {
	m.count.Add(n)
	m.bytes.Add(bytes)
	if withLatency {
		m.lat.Record(lat)
		m.interval.Load().Record(lat)
	}
}

// rollInterval starts a new interval histogram and returns the finished one.
func (m *meter) rollInterval() *Histogram { return m.interval.Swap(&Histogram{}) }

// stats is everything a run measures.
type stats struct {
	sent, recv *meter
	sendFailed atomic.Int64

	// Timer mode: lateness of this run's messages (receive time minus due
	// time; early ones count as 0 and in early), and which sequence numbers
	// arrived, to find duplicates and losses.
	lateness     Histogram
	lateInterval atomic.Pointer[Histogram]
	early        atomic.Int64
	maxEarlyUs   atomic.Int64
	runRecv      atomic.Int64
	dups         atomic.Int64
	seenMu       sync.Mutex
	seen         []uint64 // bitset by sequence number

	errMu  sync.Mutex
	errors map[string]int64
}

func newStats() *stats {
	s := &stats{sent: newMeter(), recv: newMeter(), errors: map[string]int64{}}
	s.lateInterval.Store(&Histogram{})
	return s
}

// errorKey names an error class: "code 14 SERVICE_NOT_AVAILABLE", or the
// transport failure kind.
func errorKey(code int32, err error) string {
	if err != nil {
		if isTimeout(err) {
			return "timeout"
		}
		return "transport"
	}
	return fmt.Sprintf("code %d %s", code, admin.ResponseName(code))
}

func (s *stats) failure(key string) {
	s.errMu.Lock()
	s.errors[key]++
	s.errMu.Unlock()
}

func (s *stats) errorTable() map[string]int64 {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	out := make(map[string]int64, len(s.errors))
	for k, v := range s.errors {
		out[k] = v
	}
	return out
}

func (s *stats) errorCount() int64 {
	var n int64
	for _, v := range s.errorTable() {
		n += v
	}
	return n
}

// delivered records one of this run's timer messages: its sequence number
// and how late it arrived.
func (s *stats) delivered(seq int64, late time.Duration) {
	if seq >= 0 {
		word, bit := seq/64, uint64(1)<<(seq%64)
		s.seenMu.Lock()
		for int64(len(s.seen)) <= word {
			s.seen = append(s.seen, 0)
		}
		dup := s.seen[word]&bit != 0
		s.seen[word] |= bit
		s.seenMu.Unlock()
		if dup {
			s.dups.Add(1)
			return
		}
	}
	s.runRecv.Add(1)
	if late < 0 {
		s.early.Add(1)
		us := (-late).Microseconds()
		for {
			m := s.maxEarlyUs.Load()
			if us <= m || s.maxEarlyUs.CompareAndSwap(m, us) {
				break
			}
		}
		late = 0
	}
	s.lateness.Record(late)
	s.lateInterval.Load().Record(late)
}

// Summary is the outcome of a run.
type Summary struct {
	Mode       Mode    `json:"mode"`
	Topic      string  `json:"topic"`
	ElapsedSec float64 `json:"elapsedSec"`
	// Sends (produce, timer).
	Sent       int64   `json:"sent"`
	SendFailed int64   `json:"sendFailed"`
	SendTps    float64 `json:"sendTps"`
	SendMiBps  float64 `json:"sendMiBps"`
	// Receipts (consume, timer).
	Received  int64   `json:"received"`
	RecvTps   float64 `json:"recvTps"`
	RecvMiBps float64 `json:"recvMiBps"`
	// Latency is the send round trip (produce, timer) or the round trip of
	// pulls that returned messages (consume).
	Latency Percentiles `json:"latency"`
	// Timer mode: lateness of delivery after the due time; early counts
	// messages delivered before it.
	Lateness   *Percentiles `json:"lateness,omitempty"`
	Early      int64        `json:"early,omitempty"`
	MaxEarlyMs float64      `json:"maxEarlyMs,omitempty"`
	Lost       int64        `json:"lost,omitempty"`
	Duplicates int64        `json:"duplicates,omitempty"`
	// Errors counts failed requests by class.
	Errors map[string]int64 `json:"errors"`
}

func (s *stats) summary(o *Options, elapsed time.Duration) *Summary {
	secs := elapsed.Seconds()
	rate := func(n int64) float64 {
		if secs <= 0 {
			return 0
		}
		return float64(n) / secs
	}
	sum := &Summary{
		Mode: o.Mode, Topic: o.Topic, ElapsedSec: secs,
		Sent: s.sent.count.Load(), SendFailed: s.sendFailed.Load(),
		Received: s.recv.count.Load(),
		Errors:   s.errorTable(),
	}
	sum.SendTps, sum.SendMiBps = rate(sum.Sent), rate(s.sent.bytes.Load())/(1<<20)
	sum.RecvTps, sum.RecvMiBps = rate(sum.Received), rate(s.recv.bytes.Load())/(1<<20)
	if o.Mode == ModeConsume {
		sum.Latency = s.recv.lat.Percentiles()
	} else {
		sum.Latency = s.sent.lat.Percentiles()
	}
	if o.Mode == ModeTimer {
		p := s.lateness.Percentiles()
		sum.Lateness = &p
		sum.Received = s.runRecv.Load()
		sum.RecvTps = rate(sum.Received)
		sum.Early = s.early.Load()
		sum.MaxEarlyMs = float64(s.maxEarlyUs.Load()) / 1000
		sum.Duplicates = s.dups.Load()
		sum.Lost = max(sum.Sent-sum.Received, 0)
	}
	return sum
}

// sortedErrors lists error classes by count, then name.
func sortedErrors(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
