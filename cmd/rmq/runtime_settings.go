package main

import (
	"runtime"
	"runtime/debug"

	"github.com/rs/zerolog"
)

// Garbage collector settings of the server commands. A broker's live heap is
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
// its own (and, for a SYNC_FLUSH broker, one P more than CPUs), and returns
// the GC percentage and memory limit in force.
func tuneRuntime(getenv func(string) string, log zerolog.Logger, syncFlush bool) (gcPercent int, memoryLimit int64) {
	gcPercent = debug.SetGCPercent(serverGCPercent)
	if getenv("GOGC") != "" {
		debug.SetGCPercent(gcPercent) // keep the environment's
	} else {
		gcPercent = serverGCPercent
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(serverMemoryLimit)
	}
	if syncFlush && getenv("GOMAXPROCS") == "" {
		// The group-commit flusher spends most of its time blocked in the
		// sync: one P more than CPUs keeps every CPU's worth of Ps for the
		// request goroutines instead of waiting for the scheduler to hand
		// the blocked P off (workload 2: +8 % msg per broker CPU-s).
		runtime.GOMAXPROCS(runtime.NumCPU() + 1)
	}
	memoryLimit = debug.SetMemoryLimit(-1) // a negative limit only reads it
	log.Debug().Int("gcPercent", gcPercent).Int64("memoryLimit", memoryLimit).Int("gomaxprocs", runtime.GOMAXPROCS(0)).Msg("runtime settings")
	return gcPercent, memoryLimit
}
