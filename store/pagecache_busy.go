package store

import (
	"sync/atomic"
	"time"
)

// The page-cache-busy signal of the stock broker
// (DefaultMessageStore.isOSPageCacheBusy): the put that holds the put lock
// now has held it for longer than OSPageCacheBusyTimeout. In Java that
// happens when the copy into the mapped file stalls on the page cache; here
// a put holds putMu across a SYNC_FLUSH pwrite, a warm-up chunk or a
// page-cache fault, and a put that stalls there shows the same way. A new
// put is then refused with ErrOSPageCacheBusy before it queues for the lock
// (stock checkStoreStatus, answered [PC_SYNCHRONIZED]), and the broker
// refuses sends before it serves them ([REJECTREQUEST]) and drains its
// send queue ([PCBUSY_CLEAN_QUEUE]).
//
// lockedSince is the store clock (unix ns) at which the current holder
// took putMu, 0 while nobody holds it: one atomic store each way per put,
// and no clock read beyond the store timestamp the put reads anyway.

// lockBusyCeiling is stock's sanity bound: a hold that looks longer than
// this (10 000 000 ms) is a clock jump, not a stall.
const lockBusyCeiling = 10_000_000 * time.Millisecond

// pageCacheBusy holds the signal's state; Store embeds it.
type pageCacheBusy struct {
	lockedSince atomic.Int64
	timeout     atomic.Int64 // ns; <= 0 never busy
}

// SetOSPageCacheBusyTimeout changes osPageCacheBusyTimeOutMills while the
// store runs (stock reads it on every check); 0 or less turns the signal off.
func (s *Store) SetOSPageCacheBusyTimeout(d time.Duration) { s.busy.timeout.Store(int64(d)) }

// IsOSPageCacheBusy reports whether the put holding the put lock has held it
// for longer than the page-cache-busy timeout (and less than the ceiling).
func (s *Store) IsOSPageCacheBusy() bool {
	since := s.busy.lockedSince.Load()
	limit := s.busy.timeout.Load()
	if since == 0 || limit <= 0 {
		return false
	}
	held := s.opts.Clock.Now().UnixNano() - since
	return held > limit && held < int64(lockBusyCeiling)
}

// LockHeld is how long the current put has held the put lock (0 when none
// does): stock lockTimeMills, for the runtime info.
func (s *Store) LockHeld() time.Duration {
	since := s.busy.lockedSince.Load()
	if since == 0 {
		return 0
	}
	return max(time.Duration(s.opts.Clock.Now().UnixNano()-since), 0)
}
