package main

import (
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

// tuneGC applies the server GC settings where the environment does not set
// its own, and returns the GC percentage and memory limit in force.
func tuneGC(getenv func(string) string, log zerolog.Logger) (gcPercent int, memoryLimit int64) {
	gcPercent = debug.SetGCPercent(serverGCPercent)
	if getenv("GOGC") != "" {
		debug.SetGCPercent(gcPercent) // keep the environment's
	} else {
		gcPercent = serverGCPercent
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(serverMemoryLimit)
	}
	memoryLimit = debug.SetMemoryLimit(-1) // a negative limit only reads it
	log.Debug().Int("gcPercent", gcPercent).Int64("memoryLimit", memoryLimit).Msg("garbage collector")
	return gcPercent, memoryLimit
}
