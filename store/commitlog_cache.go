package store

// Page cache of the commitlog behind the writer (Options.PageCacheKeep).
//
// Every byte appended goes into a page-cache page the kernel has to find
// first. Left alone, it takes free memory for them until memory runs short,
// and only then reuses the pages of old records. In a virtual machine whose
// free memory is handed back to the host (virtio-balloon free page
// reporting), a page the guest has not used lately faults on its first
// touch in the host as well: writing into such pages cost about 3 ms of
// CPU per MiB here, against 0.4-0.5 ms into pages recycled from the page
// cache (3 GiB written through a mapping by itself: 9.2-9.4 s of CPU
// keeping every page, 1.2-1.6 s dropping what fell 64 MiB behind; with
// 1 GiB kept, 0.4-0.5 s per GiB once the window is full). At 1 MiB
// messages (workload c of bench/compare) that was most of the broker's CPU.
//
// So once the flushed and dispatched positions are PageCacheKeep past a
// range, its pages are dropped from the page cache (dropCached:
// posix_fadvise DONTNEED), and the next pages the writer needs are the ones
// just freed. Dropped pages are clean (flushed), so nothing is lost: a
// reader of those records reads them from the disk again. Pulls read them
// on the pool, not on an event loop (ReadResident asks mincore first), as
// the delay-level and timer services do on their own goroutines. Pages a
// process still maps (a reader within the read window) are not dropped.
//
//	commitlog: | dropped (read from disk) |<--- PageCacheKeep --->| min(flushed, dispatched) ... max
//
// The bound also keeps the broker's page cache, which a container's memory
// accounting counts, near PageCacheKeep instead of the whole write volume.

// dropStep is the least a drop pass covers: a pass walks the page cache of
// its range once, so it runs every so many bytes, not every flush.
func (c *commitLog) dropStep() int64 { return min(64<<20, max(c.fileSize/4, pageSize)) }

// dropBehind drops the page cache of every commitlog byte keep or more
// behind the older of the flushed and dispatched positions, once that has
// moved a dropStep since the last pass. keep <= 0 does nothing.
func (c *commitLog) dropBehind(keep int64) {
	if keep <= 0 {
		return
	}
	c.releaseMu.Lock() // retention waits for it before unmapping a file (dropFirst)
	defer c.releaseMu.Unlock()
	limit := c.flushedOffset.Load()
	if c.readUpTo != nil {
		limit = min(limit, c.readUpTo())
	}
	upTo := (limit - keep) &^ (pageSize - 1)
	from := c.dropped
	if upTo-from < c.dropStep() {
		return
	}
	c.mu.RLock()
	files := c.files
	c.mu.RUnlock()
	for _, f := range files {
		lo, hi := max(from, f.start), min(upTo, f.end())
		if lo < hi {
			dropCached(f.file, lo-f.start, hi-lo)
		}
	}
	c.dropped = upTo
}
