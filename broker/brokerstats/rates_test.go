package brokerstats

import (
	"testing"
	"time"
)

func TestRates(t *testing.T) {
	var r Rates
	if got := r.Text(0); got != "0.00 0.00 0.00" {
		t.Errorf("empty %q", got)
	}
	for i := range 700 {
		r.Sample(epoch.Add(time.Duration(i)*time.Second), int64(i*3), int64(i*i))
	}
	if got := r.Text(0); got != "3.00 3.00 3.00" {
		t.Errorf("steady rate %q", got)
	}
	// i² grows: over the last 10 s (689..699) it is (699²-689²)/10 = 1388.
	if got := r.Text(1); got[:8] != "1388.00 " {
		t.Errorf("growing rate %q", got)
	}
	if len(r.samples) != 601 {
		t.Errorf("kept %d samples", len(r.samples))
	}
}
