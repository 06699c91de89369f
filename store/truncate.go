package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// Truncation of the commitlog (controller-mode replication).
//
// A slave whose commitlog holds records its new master never had (it was
// the master of an older epoch, or it received bytes the old master lost)
// cuts them off at the point where both logs agree, then replicates from
// there; stock 5.3.3 does it in DefaultMessageStore.truncateFiles
// (ConsumeQueue.truncateDirtyLogicFiles, CommitLog.truncateDirtyFiles,
// recoverTopicQueueTable, the reput service restarted at
// min(reput, offset)). TruncateTo is that cut, made crash safe.
//
// The cut changes three kinds of files that cannot change together (the
// consume queues and the index, derived from the commitlog, and the
// commitlog itself), and recovery cannot tell a half-made cut from damage:
// it resynchronises past a damaged span onto the valid records after it,
// which would bring back records above the cut that a crash left
// unzeroed. So the cut is announced first in a marker file, and Open
// completes any cut it finds announced before it recovers anything.
// TruncateTo makes it durable in this order:
//
//  1. flush the commitlog (every written byte, the records below the cut
//     included, is durable; SYNC_FLUSH waiters are answered);
//  2. write the marker <Dir>/truncate (offset and CRC; written to a
//     temporary file, fsynced, renamed, the directory fsynced): from here
//     a crash recovers to a store cut at the offset; before it, to the old
//     store whole, as nothing else has changed on disk;
//  3. drop the consume-queue units of records at or above the offset,
//     msync what changed, delete queue files left empty, fsync their
//     directories;
//  4. drop the index entries at or above the offset, msync the changed
//     index file, delete index files left empty, fsync the directory;
//  5. zero the commitlog from the offset to the old end in its file and
//     msync it, delete the files after it (the segment created ahead
//     first, then newest first) and fsync the directory;
//  6. write the checkpoint with both offsets at or below the cut, and the
//     confirm offset at or below it (confirm.go);
//  7. remove the marker and fsync the directory.
//
// Open, finding the marker (a crash after step 2), redoes steps 3 and 5
// (each is idempotent: it removes only what is at or above the offset),
// lowers the checkpoint's offsets to the cut and recovers as after a
// crash, which rebuilds the consume queues and the index up to the cut
// (the index drops its entries at or above the commitlog end itself:
// resumeFrom); it syncs the index, writes the checkpoint, and only then
// removes the marker (completeTruncation, Open).
//
// In memory the cut happens at once after step 2, under every lock a
// writer, the dispatcher, a flusher, the checkpoint and cleanup take, so
// no reader sees a record at or above the offset once TruncateTo has
// passed step 2. A failure after step 2 leaves puts and replicated
// appends refused (the dispatch stall's ErrNotWritable) until a later
// TruncateTo, which redoes every step, succeeds, or a restart completes
// the cut.

// ErrTruncateOffset is TruncateTo's refusal of an offset that is not a
// record boundary of the commitlog or is below its first file (stock
// isOffsetAligned: "offset is not align, truncate failed").
var ErrTruncateOffset = errors.New("store: truncate offset is not a record boundary of the commitlog")

// truncateMarkerName is the marker file of a cut in progress, under Dir.
const truncateMarkerName = "truncate"

// truncateMarker: magic "RMQTRUNC", int64 offset, CRC-32 IEEE of both.
const truncateMarkerSize = 20

var truncateMagic = []byte("RMQTRUNC")

func encodeTruncateMarker(off int64) []byte {
	b := make([]byte, truncateMarkerSize)
	copy(b, truncateMagic)
	binary.BigEndian.PutUint64(b[8:], uint64(off))
	binary.BigEndian.PutUint32(b[16:], crc32.ChecksumIEEE(b[:16]))
	return b
}

// parseTruncateMarker decodes a marker; anything but exactly a valid one
// is an error (the rename makes a torn marker impossible, so a bad one is
// damage, and the cut it announced cannot be guessed).
func parseTruncateMarker(b []byte) (int64, error) {
	if len(b) != truncateMarkerSize || string(b[:8]) != string(truncateMagic) ||
		crc32.ChecksumIEEE(b[:16]) != binary.BigEndian.Uint32(b[16:]) {
		return 0, fmt.Errorf("%w: truncate marker of %d bytes is not valid", ErrCorrupt, len(b))
	}
	off := int64(binary.BigEndian.Uint64(b[8:]))
	if off < 0 {
		return 0, fmt.Errorf("%w: truncate marker offset %d", ErrCorrupt, off)
	}
	return off, nil
}

// readTruncateMarker returns the offset of an announced cut, if any.
func readTruncateMarker(dir string) (int64, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, truncateMarkerName))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	off, err := parseTruncateMarker(b)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w; remove it only knowing the store needs no cut", filepath.Join(dir, truncateMarkerName), err)
	}
	return off, true, nil
}

// removeTruncateMarker is step 7 (and its backup, which WriteFileAtomic
// keeps when a marker was already there).
func (s *Store) removeTruncateMarker() error {
	p := filepath.Join(s.opts.Dir, truncateMarkerName)
	for _, name := range []string{p, p + ".bak"} {
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return syncDir(s.opts.FS, s.opts.Dir)
}

// TruncateTo cuts the commitlog back to off, a record boundary at or
// below its end (the start of a record, of a BLANK filler, or of a file)
// and not below MinPhyOffset, and makes everything derived from it forget
// every record at or above off, durably (steps above): consume-queue units,
// index entries, each queue's next offset (rebuilt as recovery rebuilds
// it), the dispatch position and a confirm offset above off
// (SetConfirmOffset). Replicated bytes held of an incomplete record
// (AppendReplicated) at or above off are dropped too. After it,
// AppendReplicated continues at off, and so do puts, with queue offsets
// that follow the records left.
//
// A store whose commitlog ends at or below off is unchanged, except that
// the pending replicated bytes are cut at off: TruncateTo(MaxPhyOffset())
// drops an incomplete replicated record, which is all 5.3.3's
// truncateInvalidMsg (AutoSwitchHAService.changeToMaster) has to remove in
// this store: the commitlog itself never holds a torn replicated record
// (replica.go), so a slave becoming master calls it, then
// SetConfirmOffset(-1) and WaitDispatched(MaxPhyOffset()) to dispatch
// everything (stock waits for dispatchBehindBytes to reach 0). Stock also
// cuts there at the first record after the dispatch position that does not
// parse; here only a master's stream that breaks framing publishes such
// bytes (publishable), and they are skipped by the dispatcher and by
// recovery as damage, records after them kept, as for a damaged span of a
// master's own log.
//
// Records already handed to Options.OnDispatch stay handed. TruncateTo holds
// the put lock while it flushes and cuts: puts wait meanwhile. Stock
// refuses an unaligned offset the same way (isOffsetAligned).
func (s *Store) TruncateTo(off int64) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if off < 0 {
		return fmt.Errorf("%w: offset %d", ErrTruncateOffset, off)
	}
	// SYNC_FLUSH callbacks the flush of step 1 answers run once every
	// lock below is released (they may call into the store).
	var answered []flushWaiter
	defer func() {
		for _, w := range answered {
			w.fn(true)
		}
	}()
	s.cleanMu.Lock()
	defer s.cleanMu.Unlock()
	s.putMu.Lock()
	defer s.putMu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	c := s.cl
	redo := s.truncPending.Load()
	if redo >= 0 {
		off = min(off, redo)
	}
	end := c.maxOffset.Load()
	if off >= end && redo < 0 {
		s.cutPendingReplica(off)
		return nil
	}
	if off < end {
		if err := s.checkBoundary(off); err != nil {
			return err
		}
	}
	// 1. Everything written becomes durable; waiters are answered.
	if err := c.flush(); err != nil {
		return fmt.Errorf("store: truncate to %d: flush: %w", off, err)
	}
	s.broadcastFlushed()
	answered, _ = s.takeWaiters(false)

	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	if s.creator != nil {
		// No queue file appears behind the cut (dispatch_defer.go).
		s.creator.waitIdle()
	}
	s.cqFlushMu.Lock()
	defer s.cqFlushMu.Unlock()
	c.flushMu.Lock()
	defer c.flushMu.Unlock()

	// 2. The marker.
	if s.fault("truncate:before-marker") {
		return errTruncateFault
	}
	if err := WriteFileAtomic(s.opts.FS, filepath.Join(s.opts.Dir, truncateMarkerName), encodeTruncateMarker(off)); err != nil {
		return fmt.Errorf("store: truncate to %d: write marker: %w", off, err)
	}
	if redo < 0 {
		s.truncOldEnd = end
	}
	s.truncPending.Store(off)
	s.cutInMemory(off)
	if err := s.cutDurably(off, max(end, s.truncOldEnd)); err != nil {
		s.stallDispatch(off, fmt.Errorf("%w: the commitlog cut to %d is incomplete (%v): TruncateTo again or restart", ErrNotWritable, off, err))
		return fmt.Errorf("store: truncate to %d: %w", off, err)
	}
	s.truncPending.Store(-1)
	if s.dispatchStalled.Load() {
		// The stall of a failed attempt (at its offset, at or above this
		// one), or one at a record that is gone; a stall below stays.
		if st := s.dispatchStall.Load(); st == nil || st.phy >= off {
			s.dispatchStalled.Store(false)
		}
	}
	if err := s.rebuildQueueOffsets(s.reput.Load(), off); err != nil {
		return err
	}
	s.log.Warn().Int64("offset", off).Int64("oldEnd", end).Msg("commitlog truncated")
	s.wakeDispatcher()
	return nil
}

// errTruncateFault is a crash injected by a test (Options.truncateFault).
var errTruncateFault = errors.New("store: injected crash during truncation")

// fault reports whether a test's truncateFault stops the cut at step.
func (s *Store) fault(step string) bool {
	return s.opts.truncateFault != nil && s.opts.truncateFault(step)
}

// checkBoundary refuses off unless a record or BLANK starts there (framing,
// its own offset and body CRC: scan.go's checkRecord) or a file does.
// Store.putMu is held; off is below the commitlog end.
func (s *Store) checkBoundary(off int64) error {
	c := s.cl
	if min := c.minOffset(); off < min {
		return fmt.Errorf("%w: offset %d is below the commitlog's first offset %d", ErrTruncateOffset, off, min)
	}
	if off%c.fileSize == 0 {
		return nil
	}
	kind := recBad
	err := c.read(off, func(b []byte) error {
		_, kind = checkRecord(b, 0, off)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: offset %d: %w", ErrTruncateOffset, off, err)
	}
	if kind == recBad {
		return fmt.Errorf("%w: no record starts at %d", ErrTruncateOffset, off)
	}
	return nil
}

// cutPendingReplica drops the pending replicated bytes at or above off.
// Store.putMu is held.
func (s *Store) cutPendingReplica(off int64) {
	if n := len(s.replPending); n > 0 && off < s.replBase+int64(n) {
		s.replPending = s.replPending[:max(0, off-s.replBase)]
	}
}

// cutInMemory makes the records at or above off unreadable and moves the
// positions derived from the end back to off. Every lock TruncateTo takes
// is held.
func (s *Store) cutInMemory(off int64) {
	c := s.cl
	s.replPending = s.replPending[:0]
	if c.maxOffset.Load() > off {
		c.maxOffset.Store(off)
	}
	// Readers load maxOffset under the read lock: once it is taken and
	// released, none reads above off any more.
	c.mu.Lock()
	c.mu.Unlock() //nolint:staticcheck // a barrier
	c.flushedOffset.Store(min(c.flushedOffset.Load(), off))
	for {
		g := s.confirm.Load()
		if g <= off || s.confirm.CompareAndSwap(g, off) {
			break
		}
	}
	s.cursor = min(max(s.cursor, s.reput.Load()), off)
	for k, df := range s.deferred {
		n := len(df.recs)
		df.recs = slices.DeleteFunc(df.recs, func(d pendingDispatch) bool { return d.PhysicalOffset >= off })
		s.deferredRecs -= n - len(df.recs)
		if len(df.recs) == 0 && !df.asked {
			delete(s.deferred, k)
		}
	}
	s.publishDispatched()
	c.releaseMu.Lock()
	if c.released.Load() > off {
		c.released.Store(off &^ (pageSize - 1))
	}
	c.releaseMu.Unlock()
}

// cutDurably is steps 3 to 7: queues, index, commitlog, checkpoint,
// marker. end is the commitlog end before the cut.
func (s *Store) cutDurably(off, end int64) error {
	if s.fault("truncate:after-marker") {
		return errTruncateFault
	}
	if err := s.truncateQueues(off); err != nil {
		return err
	}
	if s.fault("truncate:after-queues") {
		return errTruncateFault
	}
	if s.index != nil {
		if err := s.index.truncateDurably(off); err != nil {
			return err
		}
	}
	if s.fault("truncate:after-index") {
		return errTruncateFault
	}
	if err := s.truncateCommitLog(off, end); err != nil {
		return err
	}
	if s.fault("truncate:after-commitlog") {
		return errTruncateFault
	}
	if err := s.saveConfirm(); err != nil {
		return err
	}
	if err := s.ckpt.write(s.cl.flushedOffset.Load(), min(s.reput.Load(), off), s.opts.Clock.Now().UnixMilli()); err != nil {
		return err
	}
	if s.fault("truncate:after-checkpoint") {
		return errTruncateFault
	}
	return s.removeTruncateMarker()
}

// truncateQueues is step 3 (also run by Open for an announced cut).
func (s *Store) truncateQueues(off int64) error {
	dirs := make(map[string]struct{})
	for _, q := range s.allQueues() {
		_, removed, err := q.truncateFrom(off)
		if err != nil {
			return err
		}
		if removed {
			dirs[q.dir] = struct{}{}
		}
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if err := syncDir(s.opts.FS, d); err != nil {
			return err
		}
	}
	return nil
}

// truncateCommitLog is step 5 at run time: end is the old commitlog end
// (bytes past it in its file are zeros already).
func (s *Store) truncateCommitLog(off, end int64) error {
	c := s.cl
	c.mu.RLock()
	files := slices.Clone(c.files)
	c.mu.RUnlock()
	keep := len(files)
	for keep > 0 && files[keep-1].start > off {
		keep--
	}
	if keep == 0 {
		return fmt.Errorf("%w: no commitlog file holds offset %d", ErrTruncateOffset, off)
	}
	f := files[keep-1]
	f.doneMs.Store(0)
	if from, to := off-f.start, min(end, f.end())-f.start; from < to {
		if err := GuardFault(func() { f.zero(from, to) }); err != nil {
			return err
		}
		if err := f.sync(from, to); err != nil {
			return err
		}
	}
	if s.fault("truncate:after-zero") {
		return errTruncateFault
	}
	// The warmer zeroes ahead in listed files through their descriptors,
	// and the allocator has created (or is creating) the file after the
	// newest: both keep away while files go. The warmer then starts again
	// from the cut, the writer's position.
	if c.warm != nil {
		c.warm.pause()
		defer c.warm.resume(off)
	}
	if keep == len(files) {
		// Only the segment the allocator holds after the newest stays
		// past it (a file an earlier attempt failed to remove does not).
		after := f.start
		if a := c.alloc; a != nil {
			a.mu.Lock()
			if a.cur != nil && a.cur.start == f.end() {
				after = f.end()
			}
			a.mu.Unlock()
		}
		return s.removeSegmentsAfter(after)
	}
	var ahead *mappedFile
	if a := c.alloc; a != nil {
		a.mu.Lock()
		r := a.cur
		a.cur = nil
		a.mu.Unlock()
		if r != nil {
			a.want(r)
			select {
			case <-r.done:
				ahead = r.f
			case <-a.stop:
			}
		}
	}
	c.mu.Lock()
	c.files = slices.Clone(files[:keep])
	c.mu.Unlock()
	// Snapshots of the list (flush, page release) end before files go.
	c.releaseMu.Lock()
	c.releaseMu.Unlock() //nolint:staticcheck // a barrier
	doomed := slices.Clone(files[keep:])
	slices.Reverse(doomed)
	if ahead != nil {
		doomed = append([]*mappedFile{ahead}, doomed...)
	}
	var errs []error
	for _, d := range doomed {
		if err := d.remove(); err != nil {
			errs = append(errs, err)
		}
		if s.fault("truncate:removed-file") {
			return errTruncateFault
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := s.removeSegmentsAfter(f.start); err != nil {
		return err
	}
	if err := syncDir(s.opts.FS, c.dir); err != nil {
		return err
	}
	if c.alloc != nil {
		c.alloc.request(f.end())
	}
	return nil
}

// removeSegmentsAfter deletes every commitlog file on disk that starts
// after start, listed or not (a removal an earlier attempt did not finish:
// recovery's scan would take the records of a file left behind for valid),
// newest first, then fsyncs the directory.
func (s *Store) removeSegmentsAfter(start int64) error {
	dir := s.cl.dir
	starts, err := listSegments(dir)
	if err != nil {
		return err
	}
	slices.Reverse(starts)
	removed := false
	for _, st := range starts {
		if st <= start {
			break
		}
		if err := os.Remove(filepath.Join(dir, segmentName(st))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		removed = true
	}
	if !removed {
		return nil
	}
	return syncDir(s.opts.FS, dir)
}

// completeTruncation is Open's part for a cut announced by a marker: step
// 3 and step 5 on the files as a crash left them (the queues and the
// commitlog are loaded, nothing is recovered yet).
func (s *Store) completeTruncation(off int64) error {
	s.log.Warn().Int64("offset", off).Msg("recovery: completing an interrupted commitlog truncation")
	if err := s.truncateQueues(off); err != nil {
		return err
	}
	c := s.cl
	if len(c.files) == 0 {
		return nil
	}
	if off < c.files[0].start {
		return fmt.Errorf("%w: truncate marker offset %d is below the first commitlog file %d", ErrCorrupt, off, c.files[0].start)
	}
	removed := false
	for len(c.files) > 1 && c.last().start > off {
		f := c.last()
		if err := f.remove(); err != nil {
			return err
		}
		c.files = c.files[:len(c.files)-1]
		removed = true
	}
	if f := c.fileAt(off); f != nil {
		var err error
		rel := off - f.start
		if ferr := GuardFault(func() { zeroData(f, rel, f.size()) }); ferr != nil {
			return ferr
		}
		if err = f.sync(rel, f.size()); err != nil {
			return err
		}
	}
	if removed {
		return syncDir(s.opts.FS, c.dir)
	}
	return nil
}

// rebuildQueueOffsets recomputes the next queue offset of every queue as
// recovery does: from the consume queues, then past the records in
// [from, to) not dispatched yet (behind a stall, a deferral or the confirm
// offset). Store.putMu and dispatchMu are held.
func (s *Store) rebuildQueueOffsets(from, to int64) error {
	clear(s.queueOffsets)
	for _, q := range s.allQueues() {
		if next := q.maxOffset(); next > 0 {
			s.queueOffsets[queueKey{q.topic, q.queueID}] = next
		}
	}
	if from < to {
		return s.queueOffsetsAfter(from, to)
	}
	return nil
}
