package brokerstats

import (
	"strconv"
	"strings"
	"sync"
	"time"
)

// RateWindows are the StoreStatsService windows of the runtime-info TPS
// figures (seconds).
var RateWindows = [...]int{10, 60, 600}

// Rates keeps one sample per second of a few monotonic counters, to report
// their rates over each of RateWindows as StoreStatsService does
// ("%.2f %.2f %.2f").
type Rates struct {
	mu      sync.Mutex
	samples []rateSample // oldest first
}

type rateSample struct {
	at     time.Time
	values []int64
}

// Sample records the counters at now.
func (r *Rates) Sample(now time.Time, values ...int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples = append(r.samples, rateSample{now, append([]int64(nil), values...)})
	if n := len(r.samples) - (RateWindows[len(RateWindows)-1] + 1); n > 0 {
		r.samples = append(r.samples[:0], r.samples[n:]...)
	}
}

// Text renders the rate of counter i over each window, from the newest
// sample at least a window old (or the oldest one) to the newest sample.
func (r *Rates) Text(i int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(RateWindows))
	for wi, w := range RateWindows {
		rate := 0.0
		if n := len(r.samples); n > 1 {
			last := r.samples[n-1]
			base := r.samples[0]
			for j := n - 1; j >= 0; j-- {
				if last.at.Sub(r.samples[j].at) >= time.Duration(w)*time.Second {
					base = r.samples[j]
					break
				}
			}
			if secs := last.at.Sub(base.at).Seconds(); secs > 0 && i < len(last.values) && i < len(base.values) {
				rate = float64(last.values[i]-base.values[i]) / secs
			}
		}
		out[wi] = strconv.FormatFloat(rate, 'f', 2, 64)
	}
	return strings.Join(out, " ")
}
