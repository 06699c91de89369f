package ha

import (
	"sync"
	"time"
)

// ByteRate is the bytes moved in the last whole second (5.x FlowMonitor's
// transferredByteInSecond). Stock resets a counter from a thread once a
// second; here the count is kept per clock second and read lazily: the
// previous second's count while the current one runs, 0 once a second
// passed with nothing moved. It is touched once per transferred chunk
// (up to haTransferBatchSize bytes), not per message.
type ByteRate struct {
	mu   sync.Mutex
	sec  int64 // the clock second cur counts
	cur  int64
	prev int64 // the count of second sec-1
}

// Add counts n bytes moved at now.
func (r *ByteRate) Add(now time.Time, n int) {
	s := now.Unix()
	r.mu.Lock()
	r.roll(s)
	r.cur += int64(n)
	r.mu.Unlock()
}

// PerSecond is the count of the last whole second before now.
func (r *ByteRate) PerSecond(now time.Time) int64 {
	s := now.Unix()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.roll(s)
	return r.prev
}

func (r *ByteRate) roll(s int64) {
	switch {
	case s == r.sec:
	case s == r.sec+1:
		r.prev, r.cur, r.sec = r.cur, 0, s
	case s > r.sec:
		r.prev, r.cur, r.sec = 0, 0, s
	}
	// s < r.sec: the clock stepped back; count into the current second.
}
