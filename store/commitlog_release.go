package store

import (
	"math"

	"github.com/rmqio/rmq/internal/mmap"
)

// Release of commitlog pages from the broker's page tables.
//
// Records are copied into a shared mapping (under SYNC_FLUSH pwritten, and
// then mapped by the readers that read them back), so every page the broker
// ever wrote or read would stay mapped and count in its resident set, which
// would grow by the whole write volume. Pages more than releaseKeep behind both the write
// position and the dispatcher are unmapped with madvise(MADV_DONTNEED). For a
// shared file mapping that only drops this process's page-table entries: the
// pages stay in the page cache (a dirty page stays dirty, and msync of the
// range still writes it, as msync syncs the file range, mapped or not), and a
// later read faults them back in without I/O. Consumers that keep up read
// within releaseKeep of the end and never fault; pages a lagging reader (the
// delay-level service reads messages stored seconds ago) maps again are
// released again by the next pass, which sweeps from the oldest segment.
//
//	segments:  | not mapped (reads map pages back) |<--- releaseKeep --->| ... |
//	           oldest segment start          upTo ^  min(max, dispatched) ^
//
// Readers of older records (a consumer draining a backlog, a reset offset)
// map pages far behind that window, and no write-side pass comes to release
// them while nothing is written. So every record read below the released
// mark widens a read span [readLo, readHi) (noteRead), and once readHi has
// moved by readKeep since the last pass, the reader that noticed releases
// the span up to readKeep below readHi (releaseRead): resident memory while
// draining stays near that window instead of growing by the backlog. A
// consumer lagging behind the others faults its pages back in from the page
// cache without I/O, as above, and they are released at the next pass.
//
// Segments are unmapped only by close, after the flushers and the warmer
// stop, so the ranges given to madvise are always still mapped by this store.
const (
	releaseKeep = 16 << 20 // bytes that stay mapped behind the write/dispatch position
	// readKeepFactor × releaseKeep stay mapped behind the furthest read,
	// and reads are released once per that much progress of it (noteRead).
	// Consumers of different queues drain at different paces, and a page
	// holds records of several queues. Drain of 1 000 000 messages
	// (workload a), peak RSS and broker CPU, and the stock push Consumer
	// draining the same backlog: no read release 1 236 MiB, 2.7 s; stock
	// 162k msg/s, 5.7 s. A pass per 4 MiB with 16 MiB kept: 552-703 MiB,
	// 3.2-4.5 s; with 64 MiB: 185-192 MiB, 2.2-2.8 s, but stock 121-126k
	// msg/s at 11.4-11.6 s (the pages of its lagging queues released and
	// faulted back again and again). A pass per 32 MiB, 32 MiB kept: 187
	// MiB, 2.6 s; stock 168k msg/s, 5.9 s.
	readKeepFactor = 2
	releaseBatch   = 4 << 20 // release in steps of at least this much
)

// releaseBehind unmaps every page below the kept window, once the window
// has moved by a batch since the last pass. It runs after each flush, each
// warm-up chunk and each dispatch pass; ranges with nothing mapped cost a
// page-table walk.
func (c *commitLog) releaseBehind() {
	c.releaseMu.Lock()
	defer c.releaseMu.Unlock()
	upTo, due := c.releaseTarget()
	if !due {
		return
	}
	if c.releaseRange(math.MinInt64, upTo, "written") {
		c.released.Store(upTo)
	}
}

// releaseTarget is where releaseBehind releases up to, and whether that is
// a pass (releaseStep) past the last release: the check needs no lock, for
// callers that must not wait for releaseMu (dispatchOwn).
func (c *commitLog) releaseTarget() (upTo int64, due bool) {
	limit := c.maxOffset.Load()
	if c.readUpTo != nil {
		limit = min(limit, c.readUpTo())
	}
	upTo = (limit - c.releaseKeep()) &^ (pageSize - 1)
	return upTo, upTo-c.released.Load() >= c.releaseStep()
}

// releaseRange unmaps the pages of every segment in [from, upTo);
// false when madvise failed (logged). releaseMu must be held.
func (c *commitLog) releaseRange(from, upTo int64, what string) bool {
	c.mu.RLock()
	files := c.files
	c.mu.RUnlock()
	for _, f := range files {
		if err := mmap.ReleasePages(f.data, max(from, f.start)-f.start, min(upTo, f.end())-f.start); err != nil {
			c.log.Warn().Err(err).Str("file", f.path).Msg("commitlog: releasing " + what + " pages failed")
			return false
		}
	}
	return true
}

// releaseKeep is the window kept mapped behind the write position (and
// behind the furthest read), smaller for small (test) segments.
func (c *commitLog) releaseKeep() int64 { return min(int64(releaseKeep), c.fileSize/4) }

// releaseStep is the least a release pass unmaps.
func (c *commitLog) releaseStep() int64 {
	return min(int64(releaseBatch), max(c.fileSize/16, pageSize))
}

// noteRead records that bytes from off on were read through the mapping and
// releases the read span when its part below the kept window is a batch.
func (c *commitLog) noteRead(off int64) {
	if off >= c.released.Load() {
		return // within the window the write side keeps mapped
	}
	for lo := c.readLo.Load(); off < lo && !c.readLo.CompareAndSwap(lo, off); lo = c.readLo.Load() {
	}
	for hi := c.readHi.Load(); off >= hi && !c.readHi.CompareAndSwap(hi, off+1); hi = c.readHi.Load() {
	}
	// One pass per readKeep of progress of the furthest read: a pass per
	// batch released, again and again, the pages lagging readers had just
	// mapped back (the stock push consumer's queues drift far apart).
	if c.readHi.Load()-c.readSwept.Load() >= c.readKeep() {
		c.releaseRead()
	}
}

// readKeep is what stays mapped behind the furthest read, and the progress
// of that read between two release passes.
func (c *commitLog) readKeep() int64 { return readKeepFactor * c.releaseKeep() }

// readReleaseEnd is where a release of read pages stops: readKeepFactor ×
// releaseKeep below the furthest read, and never into the window the write side keeps.
func (c *commitLog) readReleaseEnd() int64 {
	return min(c.readHi.Load()-c.readKeep(), c.released.Load()) &^ (pageSize - 1)
}

// releaseRead unmaps the read span below readReleaseEnd. A reader that
// finds another release under way leaves it to that one.
func (c *commitLog) releaseRead() {
	if !c.releaseMu.TryLock() {
		return
	}
	defer c.releaseMu.Unlock()
	hi := c.readHi.Load()
	if hi-c.readSwept.Load() < c.readKeep() {
		return // another reader's pass came first
	}
	c.readSwept.Store(hi)
	lo := c.readLo.Load()
	from, upTo := lo&^(pageSize-1), c.readReleaseEnd()
	if upTo-from < c.releaseStep() {
		return
	}
	if !c.releaseRange(from, upTo, "read") {
		return
	}
	// A read below upTo noted meanwhile lowered readLo: keep that.
	c.readLo.CompareAndSwap(lo, upTo)
}
