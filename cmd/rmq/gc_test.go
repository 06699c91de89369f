package main

import (
	"runtime/debug"
	"testing"

	"github.com/rs/zerolog"
)

func TestTuneGC(t *testing.T) {
	prevPercent := debug.SetGCPercent(100)
	prevLimit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(prevPercent); debug.SetMemoryLimit(prevLimit) })

	tests := []struct {
		name        string
		env         map[string]string
		wantPercent int
		wantLimit   int64
	}{
		{name: "defaults", env: nil, wantPercent: serverGCPercent, wantLimit: serverMemoryLimit},
		{name: "GOGC set", env: map[string]string{"GOGC": "150"}, wantPercent: 150, wantLimit: serverMemoryLimit},
		{name: "GOMEMLIMIT set", env: map[string]string{"GOMEMLIMIT": "1GiB"}, wantPercent: serverGCPercent, wantLimit: 1 << 30},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The runtime read the variables at start; stand in for that.
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(1<<63 - 1)
			if tc.env["GOGC"] == "150" {
				debug.SetGCPercent(150)
			}
			if tc.env["GOMEMLIMIT"] != "" {
				debug.SetMemoryLimit(1 << 30)
			}
			p, l := tuneGC(func(k string) string { return tc.env[k] }, zerolog.Nop())
			if p != tc.wantPercent || l != tc.wantLimit {
				t.Fatalf("tuneGC = %d, %d; want %d, %d", p, l, tc.wantPercent, tc.wantLimit)
			}
			if got := debug.SetGCPercent(p); got != tc.wantPercent {
				t.Fatalf("GC percent in force %d, want %d", got, tc.wantPercent)
			}
		})
	}
}
