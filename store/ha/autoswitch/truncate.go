package autoswitch

import (
	"errors"
	"fmt"
)

// ErrNoConsistentPoint is a slave whose epoch table shares no epoch (with
// the same start offset) with its master's: it cannot tell what to keep,
// so the handshake fails and the slave retries (doTruncate returns false,
// AutoSwitchHAClient.java:457-461).
var ErrNoConsistentPoint = errors.New("autoswitch: no consistent point with the master's epochs")

// TruncatePlan is what a slave does on the master's handshake.
type TruncatePlan struct {
	// Truncate is false for a slave with an empty epoch table, a new
	// replica: it keeps its commitlog and reports from 0 (:436-440).
	Truncate bool
	// Offset is where the slave cuts its commitlog and its epoch table
	// (TruncateSuffixByOffset), and the offset it last reported (:462-469).
	Offset int64
}

// PlanTruncate is the decision of doTruncate (AutoSwitchHAClient.java
// :435-476) as a pure function of the slave's epoch table and commitlog
// max offset and the master's handshake: both tables' last entries are
// bounded by their max offsets, and the cut is their consistent point
// (FindConsistentPoint), at most the local max offset (see below). A master table out of order is an ErrFrame (Java
// would sort it by epoch in a TreeMap; no stock master sends one).
func PlanTruncate(local []EpochEntry, localMaxOffset int64, master MasterHandshake) (TruncatePlan, error) {
	if len(local) == 0 {
		return TruncatePlan{}, nil
	}
	m, err := NewEpochTable(master.Entries)
	if err != nil {
		return TruncatePlan{}, fmt.Errorf("%w: master epoch table: %v", ErrFrame, err)
	}
	m.SetLastEndOffset(master.MaxOffset)
	l, err := NewEpochTable(local)
	if err != nil {
		return TruncatePlan{}, err
	}
	l.SetLastEndOffset(localMaxOffset)
	// The point is never above the slave's own max offset. Stock can
	// return more: when a crash lost the commitlog tail after the epoch
	// file gained an entry, the slave's max is below its last epoch's
	// start, SetLastEndOffset leaves that entry open, and the point
	// becomes the master's end; the stock slave then waits to report
	// until it passes an offset it never reaches. Cut at its max instead
	// (TruncateSuffixByOffset drops the empty epoch, which the next chunk
	// header appends again).
	point := min(l.FindConsistentPoint(m), localMaxOffset)
	if point < 0 {
		return TruncatePlan{}, fmt.Errorf("%w: local %v, master %v", ErrNoConsistentPoint, local, master.Entries)
	}
	return TruncatePlan{Truncate: true, Offset: point}, nil
}
