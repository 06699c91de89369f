package bench

import (
	"testing"
	"time"
)

func TestHistogramIndexIsMonotonicAndBounded(t *testing.T) {
	prev := -1
	for _, v := range []int64{0, 1, 127, 128, 129, 255, 256, 511, 512, 1000, 1 << 20, 1<<40 + 12345, 1<<62 + 1} {
		i := histIndex(v)
		if i < prev || i >= histBuckets {
			t.Fatalf("histIndex(%d) = %d after %d", v, i, prev)
		}
		if up := histUpper(i); up < v || (v >= 128 && float64(up-v) > 0.016*float64(v)) {
			t.Errorf("histUpper(histIndex(%d)) = %d: outside the 1.6%% bucket width", v, up)
		}
		if i > 0 && histUpper(i-1) >= v {
			t.Errorf("bucket %d below %d already reaches it (%d)", i-1, v, histUpper(i-1))
		}
		prev = i
	}
}

func TestHistogramQuantiles(t *testing.T) {
	tests := []struct {
		name     string
		values   []time.Duration
		p50, p99 time.Duration
		max      time.Duration
		tol      float64
	}{
		{name: "empty"},
		{name: "single", values: []time.Duration{3 * time.Millisecond}, p50: 3 * time.Millisecond, p99: 3 * time.Millisecond, max: 3 * time.Millisecond, tol: 0},
		{name: "uniform 1..1000 us", values: seq(1000, time.Microsecond), p50: 500 * time.Microsecond, p99: 990 * time.Microsecond, max: 1000 * time.Microsecond, tol: 0.016},
		{name: "negative counts as zero", values: []time.Duration{-time.Second, 0}, p50: 0, p99: 0, max: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Histogram
			for _, v := range tt.values {
				h.Record(v)
			}
			check := func(what string, got, want time.Duration) {
				if d := float64(got - want); d < 0 || d > tt.tol*float64(want)+1000 {
					t.Errorf("%s = %v, want %v (+%.1f%%)", what, got, want, tt.tol*100)
				}
			}
			check("p50", h.Quantile(0.5), tt.p50)
			check("p99", h.Quantile(0.99), tt.p99)
			if h.Max() != tt.max || h.Count() != int64(len(tt.values)) {
				t.Errorf("max %v count %d", h.Max(), h.Count())
			}
		})
	}
}

func seq(n int, unit time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i+1) * unit
	}
	return out
}
