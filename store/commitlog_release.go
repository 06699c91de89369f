package store

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
// Segments are unmapped only by close, after the flushers and the warmer
// stop, so the ranges given to madvise are always still mapped by this store.
const (
	releaseKeep  = 16 << 20 // bytes that stay mapped behind the write/dispatch position
	releaseBatch = 4 << 20  // release in steps of at least this much
)

// releaseBehind unmaps every page below the kept window, once the window
// has moved by a batch since the last pass. It runs after each flush, each
// warm-up chunk and each dispatch pass; ranges with nothing mapped cost a
// page-table walk.
func (c *commitLog) releaseBehind() {
	c.releaseMu.Lock()
	defer c.releaseMu.Unlock()
	limit := c.maxOffset.Load()
	if c.readUpTo != nil {
		limit = min(limit, c.readUpTo())
	}
	keep := min(int64(releaseKeep), c.fileSize/4)
	upTo := (limit - keep) &^ (pageSize - 1)
	if upTo-c.released < min(int64(releaseBatch), max(c.fileSize/16, pageSize)) {
		return
	}
	c.mu.RLock()
	files := c.files
	c.mu.RUnlock()
	for _, f := range files {
		from, to := f.start, min(upTo, f.end())
		if from >= to {
			continue
		}
		if err := releasePages(f.data[from-f.start : to-f.start]); err != nil {
			c.log.Warn().Err(err).Str("file", f.path).Msg("commitlog: releasing written pages failed")
			return
		}
	}
	c.released = upTo
}
