package bench

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Histogram records durations in microseconds in log-linear buckets: values
// below 128 µs are exact, larger ones fall in one of 64 buckets per power of
// two (at most 1.6 % wide). It is safe for concurrent use; recording is a
// few atomic adds.
//
//	index:   0 .. 127 | 128 .. 191 | 192 .. 255 | ...
//	values:  0 .. 127 | 128 .. 255 | 256 .. 511 | ...   (step 1, 2, 4, ...)
type Histogram struct {
	counts [histBuckets]atomic.Int64
	total  atomic.Int64
	max    atomic.Int64
}

const (
	histSubBits = 6
	histSub     = 1 << histSubBits // buckets per power of two
	histBuckets = (64 - histSubBits) * histSub
)

func histIndex(v int64) int {
	if v < 2*histSub {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - histSubBits - 1
	return (e+1)*histSub + int(v>>e) - histSub
}

// histUpper is the largest value of bucket i.
func histUpper(i int) int64 {
	if i < 2*histSub {
		return int64(i)
	}
	e := i/histSub - 1
	mant := int64(i%histSub + histSub)
	return (mant+1)<<e - 1
}

// Record adds one duration; negative durations count as 0.
func (h *Histogram) Record(d time.Duration) {
	v := max(d.Microseconds(), 0)
	h.counts[histIndex(v)].Add(1)
	h.total.Add(1)
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			return
		}
	}
}

// Count is the number of recorded values.
func (h *Histogram) Count() int64 { return h.total.Load() }

// Max is the largest recorded value.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max.Load()) * time.Microsecond }

// Quantile returns the q-quantile (0 < q ≤ 1): the upper bound of the bucket
// holding it, capped at the maximum. Zero when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	rank := int64(q*float64(n) + 0.5)
	rank = min(max(rank, 1), n)
	var seen int64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return time.Duration(min(histUpper(i), h.max.Load())) * time.Microsecond
		}
	}
	return h.Max()
}

// Percentiles summarizes a histogram in milliseconds.
type Percentiles struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50Ms"`
	P99   float64 `json:"p99Ms"`
	P999  float64 `json:"p999Ms"`
	Max   float64 `json:"maxMs"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Percentiles returns p50, p99, p99.9 and max in milliseconds.
func (h *Histogram) Percentiles() Percentiles {
	return Percentiles{Count: h.Count(), P50: ms(h.Quantile(0.5)), P99: ms(h.Quantile(0.99)), P999: ms(h.Quantile(0.999)), Max: ms(h.Max())}
}
