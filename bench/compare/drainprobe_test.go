package main

import (
	"math"
	"testing"
	"time"
)

// drainRate measures between the first samples past each mark, and refuses
// samples that do not reach both.
func TestDrainRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// 1 000 stored; a slow start, 100 per 100 ms in the middle, a slow tail.
	samples := []offsetSample{
		{at(0), 0, 1000}, {at(100), 20, 1000}, {at(200), 120, 1000}, {at(300), 220, 1000},
		{at(400), 320, 1000}, {at(500), 420, 1000}, {at(600), 520, 1000}, {at(700), 620, 1000},
		{at(800), 720, 1000}, {at(900), 820, 1000}, {at(1000), 920, 1000}, {at(2000), 1000, 1000},
	}
	rate, ok := drainRate(samples, 0.1, 0.9)
	if !ok || math.Abs(rate-1000) > 1e-9 {
		t.Fatalf("drainRate = %v, %t; want 1000 msg/s (120 at 200 ms to 920 at 1000 ms)", rate, ok)
	}
	for name, s := range map[string][]offsetSample{
		"no samples":         nil,
		"never reaches 90 %": samples[:10],
		"both marks at once": {{at(0), 0, 1000}, {at(100), 1000, 1000}},
		"nothing stored":     {{at(0), 0, 0}, {at(100), 0, 0}},
	} {
		if rate, ok := drainRate(s, 0.1, 0.9); ok {
			t.Errorf("%s: drainRate = %v, ok; want not ok", name, rate)
		}
	}
}
