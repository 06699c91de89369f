package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
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
			p, l := tuneRuntime(func(k string) string { return tc.env[k] }, zerolog.Nop(), tc.broker, serverMemoryLimit)
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

// memoryLimitBytes is the soft memory limit in force after tuneRuntime
// (read back with debug.SetMemoryLimit(-1)); GOMEMLIMIT still wins.
func TestMemoryLimitKeyApplied(t *testing.T) {
	prevLimit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prevLimit) })
	noCgroup := func(string) ([]byte, error) { return nil, os.ErrNotExist }
	for _, tc := range []struct {
		name string
		key  int64
		env  string
		want int64
	}{
		{"key", 300 << 20, "", 300 << 20},
		{"default", 0, "", serverMemoryLimit},
		{"negative: none", -1, "", math.MaxInt64},
		{"GOMEMLIMIT wins", 300 << 20, "1GiB", 1 << 30},
	} {
		debug.SetMemoryLimit(math.MaxInt64)
		if tc.env != "" {
			debug.SetMemoryLimit(1 << 30) // as the runtime read it at start
		}
		_, l := tuneRuntime(func(k string) string {
			if k == "GOMEMLIMIT" {
				return tc.env
			}
			return ""
		}, zerolog.Nop(), false, resolveMemoryLimit(tc.key, noCgroup))
		if got := debug.SetMemoryLimit(-1); got != tc.want || l != tc.want {
			t.Errorf("%s: limit in force %d (returned %d), want %d", tc.name, got, l, tc.want)
		}
	}
}

// Without the key the limit follows the container's memory.max.
func TestCgroupMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		content string
		want    int64
		ok      bool
	}{
		{"max\n", 0, false},
		{"123456\n", 123456, true},
		{"536870912", 512 << 20, true},
		{"9223372036854771712\n", 0, false}, // cgroup v1 without a limit
		{"", 0, false},
		{"-1", 0, false},
		{"12ab", 0, false},
	} {
		if got, ok := parseCgroupMemory(tc.content); got != tc.want || ok != tc.ok {
			t.Errorf("parseCgroupMemory(%q) = %d, %v; want %d, %v", tc.content, got, ok, tc.want, tc.ok)
		}
	}
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			if v, ok := m[name]; ok {
				return []byte(v), nil
			}
			return nil, os.ErrNotExist
		}
	}
	for _, tc := range []struct {
		name  string
		key   int64
		files map[string]string
		want  int64
	}{
		{"v2 limit", 0, map[string]string{cgroupMemoryFiles[0]: "1000000000\n"}, 900000000},
		{"v2 max", 0, map[string]string{cgroupMemoryFiles[0]: "max\n", cgroupMemoryFiles[1]: "1000\n"}, serverMemoryLimit},
		{"v1 limit", 0, map[string]string{cgroupMemoryFiles[1]: "2000000000\n"}, 1800000000},
		{"none", 0, nil, serverMemoryLimit},
		{"key over cgroup", 64 << 20, map[string]string{cgroupMemoryFiles[0]: "1000000000\n"}, 64 << 20},
	} {
		if got := resolveMemoryLimit(tc.key, files(tc.files)); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// memoryLimitBytes is a broker config key: it loads without a warning and
// -p prints it.
func TestMemoryLimitKeyLoads(t *testing.T) {
	path := writeFile(t, "broker.conf", "memoryLimitBytes=314572800\n")
	bs, err := loadBrokerSettings(brokerFlags{configFile: path}, zerolog.Nop())
	if err != nil || bs.rt.MemoryLimitBytes != 300<<20 {
		t.Fatalf("loaded %+v, %v", bs.rt, err)
	}
	code, out, errOut := runCLI(t, "broker", "-c", path, "-p")
	if code != 0 || !strings.Contains(out, "memoryLimitBytes=314572800") || strings.Contains(errOut, "memoryLimitBytes") {
		t.Fatalf("-p: %d %q %q", code, out, errOut)
	}
}
