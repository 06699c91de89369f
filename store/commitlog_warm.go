package store

import (
	"sync"
)

// Warm-up of the commitlog ahead of the writer.
//
// A new segment is fallocated, so its blocks are "unwritten" extents: the
// first sync of every range has to convert them, which costs a filesystem
// journal commit on each flush (each group commit under SYNC_FLUSH, every
// FlushInterval under ASYNC_FLUSH), and a put that touches a page while that
// commit runs can wait for it, for tens of milliseconds, holding putMu.
// The warmer writes zeros through the file descriptor (never through the
// mapping, so they do not count in the broker's resident memory) a little
// ahead of the write position and syncs them, which turns those blocks into
// ordinary written extents: flushes are then pure data writeback.
//
//	commitlog:  | records ... |<- reserved      | zeroed, synced | fallocated ...
//	                                       done ->|<- busy chunk ->|
//
// The writer reserves every range before copying into it; a reservation that
// overlaps the chunk being zeroed is refused (the writer waits for the chunk
// outside Store.putMu and tries again), and the warmer never starts a chunk
// below the highest reservation, so zeros never overwrite a record.
//
// The page cache sizes the folios it allocates for a write by the write's
// length, and a write into a folio walks every block head of it: ext4's
// buffered write (pwrite) per record, and the mapping's write fault once per
// page. So the zeros go out in pwrites sized for the writer's mode. Records
// pwritten (SYNC_FLUSH) want small folios: after 1 MiB zero writes each 1 KiB
// record walked 256 block heads (ext4_block_write_begin, 2.9 % of the
// broker's CPU in workload 2 of bench/compare; 0.4 % after 16 KiB writes).
// Records copied into the mapping (ASYNC_FLUSH) want big ones, which take
// fewer faults (workload 1: 93-95k msg per broker CPU-second after 1 MiB zero
// writes, 85-87k after 16 KiB ones).
const (
	warmChunk       = 4 << 20  // bytes zeroed and synced per step
	warmAhead       = 64 << 20 // bytes kept ready beyond the write position
	warmWriteMapped = 1 << 20  // bytes per zero pwrite ahead of mapping writes
	warmWriteDirect = 16 << 10 // bytes per zero pwrite ahead of direct appends
)

type warmer struct {
	cl    *commitLog
	chunk int64
	ahead int64
	wake  chan struct{}
	zeros []byte

	mu       sync.Mutex
	cond     *sync.Cond
	reserved int64 // end of the highest range an append reserved
	done     int64 // bytes in [reserved, done) are zeroed and synced, or given up (next)
	busyFrom int64 // chunk being zeroed: [busyFrom, busyTo); busyTo 0: none
	busyTo   int64
	failed   bool
	write    int64 // bytes per zero pwrite, by the last reservation's mode
	// paused: no chunk is claimed (TruncateTo deletes files); syncing: the
	// chunk just zeroed is being synced through its file's descriptor.
	paused  bool
	syncing bool

	// busyWrite is write when the busy chunk was claimed; only the warmer
	// goroutine (next, zeroRange) touches it.
	busyWrite int64

	// nearArmed: the allocator waits in awaitNear for a reservation
	// reaching nearAt; tryReserve then sends on near (under mu).
	nearArmed bool
	nearAt    int64
	near      chan struct{}
}

func newWarmer(cl *commitLog, from int64) *warmer {
	w := &warmer{
		cl: cl, chunk: min(warmChunk, cl.fileSize), ahead: min(warmAhead, max(cl.fileSize/4, pageSize)),
		wake: make(chan struct{}, 1), reserved: from, done: from, write: warmWriteMapped,
		near: make(chan struct{}, 1),
	}
	w.zeros = make([]byte, min(w.chunk, warmWriteMapped))
	w.cond = sync.NewCond(&w.mu)
	return w
}

// tryReserve is called by the writer (under Store.putMu) before it copies
// into [from, to), direct when it pwrites there: it keeps the warmer away
// from that range, or reports false, having changed nothing, while the range
// is being zeroed (waitIdle waits for that chunk).
func (w *warmer) tryReserve(from, to int64, direct bool) bool {
	w.mu.Lock()
	if w.busyTo > from && w.busyFrom < to {
		w.mu.Unlock()
		return false
	}
	w.reserved = max(w.reserved, to)
	w.write = warmWriteMapped
	if direct {
		w.write = warmWriteDirect
	}
	lagging := !w.failed && w.done-w.reserved < w.ahead/2
	if w.nearArmed && w.reserved >= w.nearAt {
		w.nearArmed = false
		select {
		case w.near <- struct{}{}:
		default:
		}
	}
	w.mu.Unlock()
	if lagging {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	return true
}

// waitIdle waits until no chunk is being zeroed (the warmer may claim the
// next one at once).
func (w *warmer) waitIdle() {
	w.mu.Lock()
	for w.busyTo != 0 {
		w.cond.Wait()
	}
	w.mu.Unlock()
}

// pause waits until no chunk is being zeroed or synced and claims none
// until resume: the files it would write may be deleted (TruncateTo).
func (w *warmer) pause() {
	w.mu.Lock()
	w.paused = true
	for w.busyTo != 0 || w.syncing {
		w.cond.Wait()
	}
	w.mu.Unlock()
}

// resume ends a pause and wakes the warmer.
func (w *warmer) resume() {
	w.mu.Lock()
	w.paused = false
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run zeroes chunk after chunk until ahead bytes beyond the reservations are
// ready, then sleeps until a reservation eats into them. It stops on stop, or
// for good on the first I/O error (the writer does not depend on it).
func (w *warmer) run(stop <-chan struct{}) {
	for {
		f, from, to, ok := w.next()
		if !ok {
			select {
			case <-stop:
				return
			case <-w.wake:
				continue
			}
		}
		err := w.zeroRange(f, from-f.start, to-f.start)
		// Once the zeros are written the writer may copy records over
		// them (the page cache orders the two), so the chunk is released
		// before its sync, which under a heavy write load waits for all
		// the file's dirty pages: a writer waiting for that timed out
		// 1 MiB sends at 3 s (workload c).
		w.mu.Lock()
		w.busyFrom, w.busyTo = 0, 0
		w.syncing = true
		w.cond.Broadcast()
		w.mu.Unlock()
		if err == nil {
			err = f.fs.Fdatasync(f.file)
		}
		w.mu.Lock()
		w.syncing = false
		w.cond.Broadcast()
		if err == nil {
			w.done = max(w.done, to)
		} else {
			w.failed = true
		}
		w.mu.Unlock()
		if err != nil {
			w.cl.log.Warn().Err(err).Str("file", f.path).Msg("commitlog warm-up stopped")
			<-stop
			return
		}
		// A chunk is zeroed per chunk written: release behind at that pace
		// too, not only at the (ASYNC_FLUSH: 500 ms) flushes.
		w.cl.releaseBehind()
		select {
		case <-stop:
			return
		default:
		}
	}
}

// next claims the chunk to zero, if one is due: it starts at the first page
// past both the reservations and what is already done, and stays in the
// segment holding that position (the writer creates segments).
func (w *warmer) next() (*mappedFile, int64, int64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed || w.paused {
		return nil, 0, 0, false
	}
	if w.reserved-w.done > w.chunk {
		// The writer has outrun the warm-up by more than a chunk: records
		// come faster than the disk takes them and the zeros, and zeros
		// just ahead of the writer would be written twice (the sync of
		// each chunk writes them, and the records over them go out again),
		// halving the bandwidth left for records (1 MiB sends of workload
		// c). The rest of the writer's segment is left unwarmed; the
		// allocator warms the start of the next one, and the warmer goes
		// on from there.
		w.cl.mu.RLock()
		f := w.cl.fileAt(w.reserved)
		w.cl.mu.RUnlock()
		if f != nil {
			w.done = f.end()
		}
		return nil, 0, 0, false
	}
	from := max(w.done, (w.reserved+pageSize-1)&^(pageSize-1))
	if from-w.reserved >= w.ahead {
		return nil, 0, 0, false
	}
	w.cl.mu.RLock()
	f := w.cl.fileAt(from)
	w.cl.mu.RUnlock()
	if f == nil {
		return nil, 0, 0, false
	}
	to := min(from+w.chunk, f.end())
	w.busyFrom, w.busyTo = from, to
	w.busyWrite = w.write
	return f, from, to, true
}

// zeroRange writes zeros over f's bytes [from, to) with pwrite; run syncs
// them (fdatasync: the extent conversion is the metadata that matters).
func (w *warmer) zeroRange(f *mappedFile, from, to int64) error {
	step := min(int64(len(w.zeros)), max(w.busyWrite, pageSize))
	for off := from; off < to; {
		n := min(step, to-off)
		if _, err := f.fs.WriteAt(f.file, w.zeros[:n], off); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// awaitNear waits, on the allocator's goroutine, until the writer has
// reserved within ahead bytes of start, the warmer's own reach (so a file
// the writer is far from, or never reaches because the store closes first,
// is not zeroed yet), or until wanted (the writer waits for the segment) or
// stop is closed. It reports false on stop.
func (w *warmer) awaitNear(start int64, wanted, stop <-chan struct{}) bool {
	w.mu.Lock()
	if w.reserved >= start-w.ahead {
		w.mu.Unlock()
		return true
	}
	w.nearArmed, w.nearAt = true, start-w.ahead
	w.mu.Unlock()
	ok := true
	select {
	case <-w.near:
	case <-wanted:
	case <-stop:
		ok = false
	}
	w.mu.Lock()
	w.nearArmed = false
	select {
	case <-w.near: // sent after wanted or stop won
	default:
	}
	w.mu.Unlock()
	return ok
}

// prewarm zeroes and syncs the first bytes of f, a segment the allocator has
// just created and nobody writes yet, so that the writer finds them ready
// after the roll instead of waiting for the warmer there. It returns the
// bytes from f's start that the warmer can skip, for took. zeros is the
// allocator's own buffer. It zeroes the warmer's reach (ahead bytes), or
// one chunk when the writer already waits for f (waited): that writer
// would otherwise wait for all of it, 64 MiB zeroed and synced for a 1 GiB
// file (0.06-0.3 s before the first put of a new store), and the warmer
// goes on from the chunk's end as it does after any chunk.
//
// Like the warmer after a roll (which started at the first page past the
// writer's first record), it leaves f's first page to the writer and zeroes
// from the second one: zero writes aligned to their own size make the page
// cache allocate folios of that size (1 MiB under ASYNC_FLUSH), and copying
// zeros into those costs several times the CPU per byte of writes one page
// off (pwrite's copy_folio_from_iter_atomic took 13-15 % of the CPU of the
// in-process send/async benchmark of bench/compare with aligned warm-up
// writes, under 1 % with these). The warmer's chunks continue from where
// this stops, so they inherit the offset.
func (w *warmer) prewarm(f *mappedFile, zeros []byte, waited bool) int64 {
	w.mu.Lock()
	n, step := min(w.ahead, f.size()-pageSize), min(int64(len(zeros)), max(w.write, pageSize))
	if waited {
		n = min(n, w.chunk)
	}
	failed := w.failed
	w.mu.Unlock()
	if failed || n <= 0 {
		return 0
	}
	for off := pageSize; off < pageSize+n; off += step {
		if _, err := f.fs.WriteAt(f.file, zeros[:min(step, pageSize+n-off)], off); err != nil {
			w.cl.log.Warn().Err(err).Str("file", f.path).Msg("commitlog warm-up of a new file failed")
			return 0
		}
	}
	if err := f.fs.Fdatasync(f.file); err != nil {
		w.cl.log.Warn().Err(err).Str("file", f.path).Msg("commitlog warm-up of a new file failed")
		return 0
	}
	return pageSize + n
}

// took tells the warmer that the writer rolled to the segment starting at
// start, whose bytes below start+warmed prewarm zeroed (all but the first
// page, the writer's): there is nothing to do below start+warmed. The writer is at start, past everything below.
func (w *warmer) took(start, warmed int64) {
	w.mu.Lock()
	w.done = max(w.done, start+warmed)
	w.mu.Unlock()
}
