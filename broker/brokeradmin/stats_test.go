package brokeradmin

import (
	"testing"
	"time"
)

var rateEpoch = time.Unix(1_700_000_000, 0)

func TestRateSampler(t *testing.T) {
	var r rateSampler
	for i := range 700 {
		r.sample(rateEpoch.Add(time.Duration(i)*time.Second), int64(i*10), int64(i))
	}
	now := rateEpoch.Add(699 * time.Second)
	if got := r.tps(now, 6990, true); got != "10.00 10.00 10.00" {
		t.Errorf("put tps %q", got)
	}
	if got := r.tps(now, 699, false); got != "1.00 1.00 1.00" {
		t.Errorf("get tps %q", got)
	}
	if len(r.samples) != 601 {
		t.Errorf("kept %d samples, want 601", len(r.samples))
	}
	var empty rateSampler
	if got := empty.tps(now, 5, true); got != "0.00 0.00 0.00" {
		t.Errorf("empty sampler %q", got)
	}
}
