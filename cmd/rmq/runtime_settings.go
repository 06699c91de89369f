package main

import (
	"runtime"
	"runtime/debug"

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

// tuneRuntime applies the server GC settings where the environment does not set
// its own (and, for a broker, one P more than CPUs where brokerProcs allows
// it), and returns the GC percentage and memory limit in force.
func tuneRuntime(getenv func(string) string, log zerolog.Logger, broker bool) (gcPercent int, memoryLimit int64) {
	gcPercent = debug.SetGCPercent(serverGCPercent)
	if getenv("GOGC") != "" {
		debug.SetGCPercent(gcPercent) // keep the environment's
	} else {
		gcPercent = serverGCPercent
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(serverMemoryLimit)
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
