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
// (FindConsistentPoint). A master table out of order is an ErrFrame (Java
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
	point := l.FindConsistentPoint(m)
	if point < 0 {
		return TruncatePlan{}, fmt.Errorf("%w: local %v, master %v", ErrNoConsistentPoint, local, master.Entries)
	}
	return TruncatePlan{Truncate: true, Offset: point}, nil
}
