package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/rs/zerolog"
)

// Garbage collector settings of the server commands and of rmq bench (see
// runBench). A broker's live heap is
// small (a few MiB: metadata, connection buffers, the timer wheel's used
// chunks) while it allocates per request, so at the default GOGC=100 it
// collects tens of times a second under load. A higher percentage trades some
// MiB of heap for fewer collections; the soft memory limit keeps a large live
// heap (a deep pull backlog, a huge delete set) from growing the heap target
// in proportion. GOGC and GOMEMLIMIT in the environment win over both.
const (
	serverGCPercent   = 400
	serverMemoryLimit = 512 << 20
)

// runtimeSettings are the broker config keys of the process itself.
type runtimeSettings struct {
	// MemoryLimitBytes is the Go soft memory limit (debug.SetMemoryLimit):
	// past it the collector runs until the heap is back under it, so the
	// garbage a flood leaves (partial frames of evicted connections, gRPC
	// requests refused or cancelled) goes before RSS grows on. 0 derives it:
	// 90 % of the container's memory limit (cgroup memory.max) when one is
	// set, else serverMemoryLimit; a negative value sets none. GOMEMLIMIT in
	// the environment wins. To hold RSS near serverMaxInflightBytes under a
	// flood, set it to that plus the broker's live heap (tens of MiB).
	MemoryLimitBytes int64 `conf:"memoryLimitBytes"`
}

// cgroupMemoryFiles are the container memory limits: cgroup v2, then v1.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// parseCgroupMemory reads a cgroup memory limit file: a byte count, or
// "max" (v2) or a page-rounded 2^63 (v1) for none.
func parseCgroupMemory(content string) (int64, bool) {
	v, err := strconv.ParseInt(strings.TrimSpace(content), 10, 64)
	if err != nil || v <= 0 || v >= 1<<62 {
		return 0, false
	}
	return v, true
}

// resolveMemoryLimit resolves memoryLimitBytes (see runtimeSettings); readFile
// reads the cgroup files. A negative result means no limit.
func resolveMemoryLimit(key int64, readFile func(string) ([]byte, error)) int64 {
	if key != 0 {
		return key
	}
	for _, f := range cgroupMemoryFiles {
		if b, err := readFile(f); err == nil {
			if v, ok := parseCgroupMemory(string(b)); ok {
				return v / 10 * 9
			}
			break // the v2 file says "max": no limit, whatever v1 says
		}
	}
	return serverMemoryLimit
}

// serverMemoryLimitFor is resolveMemoryLimit of the running process.
func serverMemoryLimitFor(key int64) int64 { return resolveMemoryLimit(key, os.ReadFile) }

// tuneRuntime applies the server GC settings where the environment does not set
// its own: GOGC serverGCPercent, the soft memory limit limit (negative: none;
// see resolveMemoryLimit), and, for a broker, one P more than CPUs where brokerProcs
// allows it. It returns the GC percentage and memory limit in force.
func tuneRuntime(getenv func(string) string, log zerolog.Logger, broker bool, limit int64) (gcPercent int, memoryLimit int64) {
	gcPercent = debug.SetGCPercent(serverGCPercent)
	if getenv("GOGC") != "" {
		debug.SetGCPercent(gcPercent) // keep the environment's
	} else {
		gcPercent = serverGCPercent
	}
	if getenv("GOMEMLIMIT") == "" {
		if limit < 0 {
			limit = math.MaxInt64
		}
		debug.SetMemoryLimit(limit)
	}
	if broker {
		// A broker's goroutines spend much time in syscalls that hold
		// their P until the scheduler's monitor hands it off (up to ~10 ms
		// later): the event loop's epoll_wait, the flushes' syncs, the
		// warm-up's writes. A P held that way also holds the timers on it,
		// which is what the delay-level and timer services wake by. One P
		// more than CPUs keeps a P free for them and for the request
		// goroutines. SYNC_FLUSH, workload 2 of bench/compare: +8 % msg per
		// broker CPU-second. ASYNC_FLUSH, workloads 1, 3, 4 on one broker:
		// delay lateness p99 5.8, 7.3 -> 5.1, 5.2 ms (max 23, 26 -> 20,
		// 14 ms); end-to-end max 16.9, 21.9 -> 7.4, 7.1 ms; workload 1
		// 116.7k, 118.3k -> 106.5k, 118.3k msg per broker CPU-second.
		// brokerProcs adds that P only where no CPU limit forbids it.
		dflt := runtime.GOMAXPROCS(0)
		if n := brokerProcs(runtime.NumCPU(), dflt, getenv("GOMAXPROCS") != ""); n != dflt {
			runtime.GOMAXPROCS(n)
		}
	}
	memoryLimit = debug.SetMemoryLimit(-1) // a negative limit only reads it
	log.Debug().Int("gcPercent", gcPercent).Int64("memoryLimit", memoryLimit).Int("gomaxprocs", runtime.GOMAXPROCS(0)).Msg("runtime settings")
	return gcPercent, memoryLimit
}

// brokerProcs returns the GOMAXPROCS a broker runs with, given the machine's
// CPUs, the runtime's default (runtime.GOMAXPROCS(0) at start) and whether
// the environment sets GOMAXPROCS. Since Go 1.25 the default follows the
// cgroup CPU limit, so a container limited to 2 CPUs on a 64-core host
// starts with 2, not 64; the broker then keeps it (a P more would only add
// throttling). Only when nothing limits the default below the CPU count does
// it take one P more (see tuneRuntime). A GOMAXPROCS from the environment
// always wins.
func brokerProcs(numCPU, dflt int, envSet bool) int {
	if envSet || dflt != numCPU {
		return dflt
	}
	return numCPU + 1
}
