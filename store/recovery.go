package store

import (
	"encoding/binary"
	"fmt"

	"github.com/rmqio/rmq/message"
)

// recoveryStats counts what recovery found.
type recoveryStats struct {
	scannedFrom    int64 // where the verifying scan started (0 if none ran)
	records        int64 // valid records re-dispatched
	corruptRegions int64 // damaged spans followed by valid records
	skippedBytes   int64 // bytes in those spans
	tornTailBytes  int64 // non-zero bytes cleared after the last valid record
	droppedUnits   int64 // consume-queue units pointing past the commitlog end
	clean          bool  // the checkpoint of a clean shutdown was trusted
}

// recover establishes the commitlog end, consume queues consistent with it,
// the next queue offsets and the dispatch position. It runs in Open before any
// goroutine starts.
//
// After a clean shutdown (no abort marker, valid checkpoint inside the files)
// the checkpoint's commitlog offset is the end. Otherwise every record from
// the checkpoint's lower offset (or the first file) on is verified (framing,
// own offset, CRC) and re-dispatched; damaged spans followed by valid records
// are skipped and counted; everything after the last valid record is zeroed
// and files past it are deleted.
func (s *Store) recover(clean bool, ck checkpointData, ckOK bool) error {
	cl := s.cl
	var end, dispatchFrom int64
	switch {
	case len(cl.files) == 0:
		if ckOK && ck.physicOffset > 0 {
			s.log.Warn().Int64("checkpoint", ck.physicOffset).Msg("recovery: checkpoint points into a commitlog that has no files")
		}
	case clean && ckOK && ck.physicOffset >= cl.files[0].start && ck.physicOffset <= cl.last().end() && ck.logicsOffset <= ck.physicOffset:
		end = ck.physicOffset
		dispatchFrom = max(ck.logicsOffset, cl.files[0].start)
		s.recovery.clean = true
		s.log.Info().Int64("commitlogEnd", end).Int64("dispatchFrom", dispatchFrom).Msg("recovery: clean shutdown, checkpoint trusted")
		s.dropFilesAfter(end)
	default:
		start := cl.files[0].start
		if ckOK {
			if p := min(ck.physicOffset, ck.logicsOffset); p >= start && p <= cl.last().end() {
				start = p
			}
		}
		var err error
		if end, dispatchFrom, err = s.scanAndRebuild(start); err != nil {
			return err
		}
	}
	cl.maxOffset.Store(end)
	cl.flushedOffset.Store(end)
	if g := s.confirm.Load(); g > end {
		// Stock corrects a confirm offset past the recovered end to it.
		s.confirm.Store(end)
	}
	s.reput.Store(dispatchFrom)
	// Records the checkpoint says were not dispatched yet go into their queues
	// before queue offsets are derived from the queues.
	s.dispatchAvailable()

	for _, q := range s.allQueues() {
		if n := q.truncateAfter(end); n > 0 {
			s.recovery.droppedUnits += n
			s.log.Warn().Str("topic", q.topic).Int32("queueId", q.queueID).Int64("units", n).Msg("recovery: dropped consume queue units past the commitlog end")
		}
	}
	for _, q := range s.allQueues() {
		if next := q.maxOffset(); next > 0 {
			s.queueOffsets[queueKey{q.topic, q.queueID}] = next
		}
	}
	// Records not dispatched (a full disk, an I/O error) still hold their
	// queue offsets: later puts must not take them again.
	if err := s.queueOffsetsAfter(s.reput.Load(), end); err != nil {
		return err
	}
	if _, err := s.flushQueues(true); err != nil {
		return err
	}
	return s.ckpt.write(end, s.reput.Load(), s.opts.Clock.Now().UnixMilli())
}

// dropFilesAfter deletes commitlog files that start past end.
func (s *Store) dropFilesAfter(end int64) {
	cl := s.cl
	for len(cl.files) > 0 && cl.last().start > end {
		f := cl.last()
		if err := f.remove(); err != nil {
			s.log.Error().Err(err).Str("file", f.path).Msg("recovery: remove commitlog file")
		}
		cl.files = cl.files[:len(cl.files)-1]
		s.log.Warn().Str("file", f.path).Msg("recovery: removed commitlog file past the end")
	}
}

// scanAndRebuild verifies and re-dispatches every record from start and
// returns the end of the last valid one.
func (s *Store) scanAndRebuild(start int64) (end, dispatched int64, err error) {
	cl := s.cl
	s.recovery.scannedFrom = start
	s.log.Warn().Int64("from", start).Msg("recovery: abnormal shutdown, verifying commitlog")
	end = start
	badFrom := int64(-1)   // start of the damaged span being skipped, -1 if none
	stalledAt := int64(-1) // the first record that could not be dispatched

	first := int((start - cl.files[0].start) / cl.fileSize)
	for i := first; i < len(cl.files); i++ {
		f := cl.files[i]
		p := 0
		if i == first {
			p = int(start - f.start)
		}
		for p < len(f.data) {
			l, kind := checkRecord(f.data, p, f.start)
			if kind == recBad {
				if badFrom < 0 {
					badFrom = f.start + int64(p)
				}
				q := resyncFile(f, p+1)
				if q < 0 {
					break
				}
				p = q
				continue
			}
			if badFrom >= 0 {
				s.skipDamaged(badFrom, f.start+int64(p))
				badFrom = -1
			}
			if kind == recBlank {
				p = len(f.data)
				end = f.end()
				break
			}
			var d pendingDispatch
			parseDispatch(f.data[p:p+l.Total], &l, &d, nil)
			if g := s.confirm.Load(); stalledAt < 0 && g >= 0 && d.PhysicalOffset+int64(l.Total) > g {
				// Behind the confirm offset gate (confirm.go): this record
				// and every later one wait for the gate, undispatched.
				stalledAt = d.PhysicalOffset
			}
			if stalledAt < 0 {
				if err := s.dispatch(&d); err != nil {
					// Its unit or keys cannot be written (no space, an I/O
					// error): this record and every later one are
					// dispatched by the dispatcher once they can be.
					stalledAt = d.PhysicalOffset
					s.stallDispatch(stalledAt, err)
				}
			}
			s.recovery.records++
			p += l.Total
			end = f.start + int64(p)
		}
	}
	s.dispatchBatchDone()
	if err := s.truncateTail(end); err != nil {
		return 0, 0, err
	}
	// Make the recovered span durable so the checkpoint written next is true
	// even though the pages came from a crashed process's page cache.
	for _, f := range cl.files {
		if f.end() <= start {
			continue
		}
		if err := f.sync(max(start, f.start)-f.start, min(end, f.end())-f.start); err != nil {
			return 0, 0, err
		}
	}
	s.log.Info().Int64("commitlogEnd", end).Int64("records", s.recovery.records).
		Int64("corruptRegions", s.recovery.corruptRegions).Int64("skippedBytes", s.recovery.skippedBytes).
		Int64("tornTailBytes", s.recovery.tornTailBytes).Msg("recovery: commitlog verified")
	if stalledAt >= 0 {
		return end, stalledAt, nil
	}
	return end, end, nil
}

// skipDamaged accounts for the damaged span [from, to) that a valid record
// follows, and zeroes it: consume-queue units still pointing into it then fail
// the read-time framing check and are skipped instead of serving damaged
// bytes. When the span runs to the end of a file, that file gets a BLANK record
// where the damage starts, so it ends the way the writer ends files.
func (s *Store) skipDamaged(from, to int64) {
	s.recovery.corruptRegions++
	s.recovery.skippedBytes += to - from
	s.log.Error().Int64("from", from).Int64("to", to).Msg("recovery: skipped damaged commitlog span")
	for at := from; at < to; {
		f := s.cl.fileAt(at)
		if f == nil {
			return
		}
		rel, stop := at-f.start, min(to, f.end())-f.start
		zeroData(f, rel, stop)
		if stop == f.size() && stop-rel >= blankRecordLength {
			binary.BigEndian.PutUint32(f.data[rel:], uint32(stop-rel))
			binary.BigEndian.PutUint32(f.data[rel+4:], BlankMagicCode)
		}
		if err := f.sync(rel, stop); err != nil {
			s.log.Error().Err(err).Str("file", f.path).Msg("recovery: sync repaired span")
		}
		at = f.start + stop
	}
}

// truncateTail zeroes everything after end in its file and deletes the files
// after it.
func (s *Store) truncateTail(end int64) error {
	cl := s.cl
	for len(cl.files) > 0 {
		f := cl.last()
		if f.start < end || f.start == cl.files[0].start && f.start >= end {
			break
		}
		s.recovery.tornTailBytes += nonZeroBytes(f, 0, f.size())
		if err := f.remove(); err != nil {
			return fmt.Errorf("store: remove commitlog file past the end: %w", err)
		}
		cl.files = cl.files[:len(cl.files)-1]
		s.log.Warn().Str("file", f.path).Msg("recovery: removed commitlog file past the last valid record")
	}
	f := cl.fileAt(end)
	if f == nil {
		return nil // end is the end of the last file (it closed with a BLANK)
	}
	rel := end - f.start
	if nonZero := nonZeroBytes(f, rel, f.size()); nonZero > 0 {
		s.recovery.tornTailBytes += nonZero
		zeroData(f, rel, f.size())
		if err := f.sync(rel, f.size()); err != nil {
			return err
		}
		s.log.Warn().Int64("from", end).Int64("nonZeroBytes", nonZero).Msg("recovery: cleared torn tail")
	}
	return nil
}

// zeroCount counts zero bytes, page by page so that all-zero pages are cheap.
func zeroCount(b []byte) int64 {
	var n int64
	for len(b) > 0 {
		chunk := b[:min(len(b), int(pageSize))]
		if allZero(chunk) {
			n += int64(len(chunk))
		} else {
			for _, c := range chunk {
				if c == 0 {
					n++
				}
			}
		}
		b = b[len(chunk):]
	}
	return n
}

// queueOffsetsAfter raises the next queue offsets past those of the records
// in [from, end), which are stored but not dispatched (the dispatcher
// stalled on a full disk and will write their units).
func (s *Store) queueOffsetsAfter(from, end int64) error {
	for from < end {
		batch, next, err := s.readRecords(from, end, nil, false)
		if err != nil {
			return err
		}
		for i := range batch {
			d := &batch[i]
			if tt := message.TransactionType(d.SysFlag); tt != message.TransactionNotType && tt != message.TransactionCommitType {
				continue
			}
			k := queueKey{d.Topic, d.QueueID}
			s.queueOffsets[k] = max(s.queueOffsets[k], d.QueueOffset+1)
		}
		if next <= from {
			break
		}
		from = next
	}
	return nil
}
