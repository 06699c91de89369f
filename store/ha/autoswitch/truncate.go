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
	if point < 0 && !claimsBytes(local, localMaxOffset) {
		// Empty terms. An entry that covers no bytes (its start is at or
		// above the next entry's start, or the store's end for the last)
		// asserts nothing about the log, so it cannot disagree with the
		// master: a slave whose table holds only empty entries has
		// nothing to check or cut, like the new replica above. That is
		// the old master of a term killed before any message (its table
		// [{e,s}] at end s) facing a master whose table lacks {e,s}: a
		// master that never followed it long enough to hear its epoch,
		// or an rmq master before it kept empty terms (ChangeToMaster).
		// Stock finds no common entry and the slave retries forever; rmq
		// keeps its log (cut at its end: nothing) and drops the empty
		// entries (TruncateSuffixByOffset), so the master's epochs
		// append after.
		//
		// The rule only turns "no point" into "keep all" for a log no
		// entry claims a byte of: where stock finds a point it is used,
		// and a slave with bytes of an epoch the master lacks still
		// fails as in stock. It runs only on rmq slaves and changes no
		// byte on the wire; a stock slave gets the same match from an
		// rmq master's table as from a stock master's, since both keep
		// the empty entry.
		point = localMaxOffset
	}
	if point < 0 {
		return TruncatePlan{}, fmt.Errorf("%w: local %v, master %v", ErrNoConsistentPoint, local, master.Entries)
	}
	return TruncatePlan{Truncate: true, Offset: point}, nil
}

// claimsBytes reports whether some entry of a table (start offsets never
// decreasing) covers bytes of a log ending at end: the first entry starts
// below end (each entry ends at the next one's start, the last at end).
func claimsBytes(entries []EpochEntry, end int64) bool {
	return len(entries) > 0 && entries[0].StartOffset < end
}
