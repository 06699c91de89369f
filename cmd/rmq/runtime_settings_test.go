package main

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/rs/zerolog"
)

func TestTuneRuntime(t *testing.T) {
	prevPercent := debug.SetGCPercent(100)
	prevLimit := debug.SetMemoryLimit(-1)
	prevProcs := runtime.GOMAXPROCS(0)
	t.Cleanup(func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
		runtime.GOMAXPROCS(prevProcs)
	})

	tests := []struct {
		name        string
		env         map[string]string
		broker      bool
		wantPercent int
		wantLimit   int64
		wantProcs   int
	}{
		{name: "name server defaults", env: nil, wantPercent: serverGCPercent, wantLimit: serverMemoryLimit, wantProcs: runtime.NumCPU()},
		{name: "GOGC set", env: map[string]string{"GOGC": "150"}, wantPercent: 150, wantLimit: serverMemoryLimit, wantProcs: runtime.NumCPU()},
		{name: "GOMEMLIMIT set", env: map[string]string{"GOMEMLIMIT": "1GiB"}, wantPercent: serverGCPercent, wantLimit: 1 << 30, wantProcs: runtime.NumCPU()},
		{name: "broker", broker: true, wantPercent: serverGCPercent, wantLimit: serverMemoryLimit, wantProcs: runtime.NumCPU() + 1},
		{name: "broker with GOMAXPROCS set", env: map[string]string{"GOMAXPROCS": "1"}, broker: true, wantPercent: serverGCPercent, wantLimit: serverMemoryLimit, wantProcs: runtime.NumCPU()},
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
			runtime.GOMAXPROCS(runtime.NumCPU())
			p, l := tuneRuntime(func(k string) string { return tc.env[k] }, zerolog.Nop(), tc.broker)
			if got := runtime.GOMAXPROCS(0); got != tc.wantProcs {
				t.Fatalf("GOMAXPROCS %d, want %d", got, tc.wantProcs)
			}
			if p != tc.wantPercent || l != tc.wantLimit {
				t.Fatalf("tuneRuntime = %d, %d; want %d, %d", p, l, tc.wantPercent, tc.wantLimit)
			}
			if got := debug.SetGCPercent(p); got != tc.wantPercent {
				t.Fatalf("GC percent in force %d, want %d", got, tc.wantPercent)
			}
		})
	}
}
