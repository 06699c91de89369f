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
		startProcs  int // the runtime's default; 0 means NumCPU
		wantPercent int
		wantLimit   int64
		wantProcs   int
	}{
		{name: "name server defaults", env: nil, wantPercent: serverGCPercent, wantLimit: serverMemoryLimit, wantProcs: runtime.NumCPU()},
		{name: "GOGC set", env: map[string]string{"GOGC": "150"}, wantPercent: 150, wantLimit: serverMemoryLimit, wantProcs: runtime.NumCPU()},
		{name: "GOMEMLIMIT set", env: map[string]string{"GOMEMLIMIT": "1GiB"}, wantPercent: serverGCPercent, wantLimit: 1 << 30, wantProcs: runtime.NumCPU()},
		{name: "broker", broker: true, wantPercent: serverGCPercent, wantLimit: serverMemoryLimit, wantProcs: runtime.NumCPU() + 1},
		{name: "broker with GOMAXPROCS set", env: map[string]string{"GOMAXPROCS": "1"}, broker: true, wantPercent: serverGCPercent, wantLimit: serverMemoryLimit, wantProcs: runtime.NumCPU()},
		{name: "broker under a CPU limit", broker: true, startProcs: 1, wantPercent: serverGCPercent, wantLimit: serverMemoryLimit, wantProcs: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.startProcs >= runtime.NumCPU() {
				t.Skip("needs more than one CPU to stand in for a limit below them")
			}
			// The runtime read the variables at start; stand in for that.
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(1<<63 - 1)
			if tc.env["GOGC"] == "150" {
				debug.SetGCPercent(150)
			}
			if tc.env["GOMEMLIMIT"] != "" {
				debug.SetMemoryLimit(1 << 30)
			}
			start := runtime.NumCPU()
			if tc.startProcs != 0 {
				start = tc.startProcs
			}
			runtime.GOMAXPROCS(start)
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

func TestBrokerProcs(t *testing.T) {
	tests := []struct {
		name         string
		numCPU, dflt int
		envSet       bool
		want         int
	}{
		{name: "no limit", numCPU: 8, dflt: 8, want: 9},
		{name: "one CPU, no limit", numCPU: 1, dflt: 1, want: 2},
		{name: "cgroup limit 2 on 64 cores", numCPU: 64, dflt: 2, want: 2},
		{name: "cgroup limit just below the CPUs", numCPU: 8, dflt: 7, want: 7},
		{name: "GOMAXPROCS set below the CPUs", numCPU: 8, dflt: 3, envSet: true, want: 3},
		{name: "GOMAXPROCS set equal to the CPUs", numCPU: 8, dflt: 8, envSet: true, want: 8},
		{name: "GOMAXPROCS set above the CPUs", numCPU: 8, dflt: 32, envSet: true, want: 32},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := brokerProcs(tc.numCPU, tc.dflt, tc.envSet); got != tc.want {
				t.Fatalf("brokerProcs(%d, %d, %v) = %d, want %d", tc.numCPU, tc.dflt, tc.envSet, got, tc.want)
			}
		})
	}
}
