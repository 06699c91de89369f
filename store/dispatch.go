package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/rmqio/rmq/message"
)

// DispatchRequest describes one stored message as the dispatcher sees it.
type DispatchRequest struct {
	Topic          string
	QueueID        int32
	QueueOffset    int64
	PhysicalOffset int64
	Size           int32
	TagsCode       int64
	StoreTimestamp int64
	// Props is the record's properties text (look keys up with message.Props.Get).
	Props   message.Props
	SysFlag int32
	// multi marks the unit of a queue the record names in
	// INNER_MULTI_DISPATCH rather than its own (lmq.go).
	multi bool
}

// dispatchBatch bounds how many records are parsed under one commitlog read lock.
const dispatchBatch = 256

// pendingDispatch is a parsed record whose properties are not yet decoded;
// decoding and the hooks run outside the commitlog lock.
type pendingDispatch struct {
	DispatchRequest
}

// parseDispatch fills d from the record b with layout l, taking its topic
// from names when it is there (names may be nil).
func parseDispatch(b []byte, l *message.Layout, d *pendingDispatch, names topicNames) {
	be := binary.BigEndian
	d.Topic = names.get(b[l.TopicPos : l.TopicPos+l.TopicLen])
	d.QueueID = int32(be.Uint32(b[message.PosQueueID:]))
	d.QueueOffset = int64(be.Uint64(b[message.PosQueueOffset:]))
	d.PhysicalOffset = int64(be.Uint64(b[message.PosPhysicalOffset:]))
	d.Size = int32(l.Total)
	d.StoreTimestamp = l.StoreTimestamp(b)
	d.SysFlag = l.SysFlag
	d.Props = l.Props(b)
	d.TagsCode = 0
}

// topicNames keeps one string per topic the dispatcher has read, so that
// records of a known topic name it without an allocation each. It is
// emptied when it grows past maxTopicNames (topics come and go).
type topicNames map[string]string

const maxTopicNames = 4096

// get returns topic as a string, from n when it is there (n may be nil).
func (n topicNames) get(topic []byte) string {
	if n == nil {
		return string(topic)
	}
	if s, ok := n[string(topic)]; ok {
		return s
	}
	if len(n) >= maxTopicNames {
		clear(n)
	}
	s := string(topic)
	n[s] = s
	return s
}

// dispatch decodes what d needs, writes its consume-queue unit (prepared and
// rollback transaction records get none), indexes its keys and calls
// OnDispatch. It returns an error when the unit or a key could not be
// written (a full disk, a queue or index file that could not be created):
// the record is then not dispatched (no OnDispatch), and the caller retries
// it later. A retry rewrites the same unit (a no-op) and the keys (queries
// drop duplicates), so nothing a producer was told is stored goes missing
// from its queue.
func (s *Store) dispatch(d *pendingDispatch) error {
	if s.opts.TagsCode != nil {
		d.TagsCode = s.opts.TagsCode(d.Topic, d.Props, d.StoreTimestamp)
	} else {
		d.TagsCode = message.TagsHash(d.Props.Get(message.PropTags))
	}
	if s.opts.EnableMultiDispatch && hasUnit(d.SysFlag) {
		if err := s.dispatchMulti(d); err != nil {
			return err
		}
	}
	k := queueKey{d.Topic, d.QueueID}
	if len(s.deferred) > 0 {
		if df := s.deferred[k]; df != nil {
			// Its queue waits for a file (dispatch_defer.go): so does it, a
			// record without a unit too (OnDispatch keeps the queue's order).
			return s.deferRecord(df, d)
		}
	}
	if hasUnit(d.SysFlag) {
		// Only the running dispatcher leaves the file to the creator.
		q, err := s.putUnit(&d.DispatchRequest, s.creator == nil)
		if err == errNoFile {
			return s.deferRecord(s.askFile(k, q, d.QueueOffset), d)
		}
		if err != nil {
			return err
		}
	}
	if err := s.indexRecord(d); err != nil {
		return err
	}
	if s.opts.OnDispatch != nil {
		s.opts.OnDispatch(d.DispatchRequest)
	}
	return nil
}

// indexRecord adds d's keys to the index, if there is one: the one way the
// dispatcher indexes, whether it holds the index lock already (a put
// dispatching its own records: indexService.holdFor) or not.
func (s *Store) indexRecord(d *pendingDispatch) error {
	if s.index == nil {
		return nil
	}
	return s.index.addRecord(d, s.indexHeld)
}

// hasUnit reports whether a record with sysFlag gets a consume-queue unit:
// prepared and rollback transaction records get none.
func hasUnit(sysFlag int32) bool {
	tt := message.TransactionType(sysFlag)
	return tt == message.TransactionNotType || tt == message.TransactionCommitType
}

// putUnit writes d's consume-queue unit. A failure to write it (a full
// disk, a queue file that could not be created) is returned, to be retried:
// skipping the unit would leave the next one to pad over it, and the
// message, acknowledged already, would never be consumable. Only a record
// whose topic cannot name a queue (which puts refuse, so only damage puts
// one in the commitlog) is counted, logged and passed over.
//
// Without createFile, a unit whose file does not exist yet is not written:
// errNoFile is returned with the queue, whose file the caller has created.
func (s *Store) putUnit(d *DispatchRequest, createFile bool) (*consumeQueue, error) {
	if s.opts.dispatchFault != nil {
		if err := s.opts.dispatchFault(d); err != nil {
			return nil, err
		}
	}
	// A queue deleted between lookup and write is looked up (recreated) again.
	for attempt := 0; attempt < 2; attempt++ {
		q, err := s.queueFor(d.Topic, d.QueueID, true)
		if err != nil {
			s.stats.dispatchErrors.Add(1)
			s.log.Error().Err(err).Str("topic", d.Topic).Int32("queueId", d.QueueID).Int64("phyOffset", d.PhysicalOffset).Msg("dispatch: no consume queue")
			return nil, nil
		}
		if d.multi {
			if err := s.checkMultiUnit(q, d); err != nil {
				return q, err
			}
		}
		err = q.put(d.QueueOffset, d.PhysicalOffset, d.Size, d.TagsCode, createFile)
		switch {
		case errors.Is(err, errQueueDestroyed):
			continue
		case err == nil, err == errNoFile:
			return q, err
		}
		s.stats.dispatchErrors.Add(1)
		return q, fmt.Errorf("consume queue %s/%d, queue offset %d: %w", d.Topic, d.QueueID, d.QueueOffset, err)
	}
	return nil, nil
}

// dispatchRetryInterval is how long a stalled dispatcher waits before it
// tries the record again (it also tries when woken).
const dispatchRetryInterval = 200 * time.Millisecond

// dispatchStall is why the dispatcher stopped: the record at phy could not
// be put in its consume queue or key index.
type dispatchStall struct {
	phy int64
	err error
}

// stallDispatch records that the record at phy could not be dispatched:
// puts are refused (writeRefused) until it is. This is the one rule for a
// full disk and for an I/O error alike (Java stops accepting puts too when
// a consume queue or the index cannot be written: RunningFlags
// makeLogicsQueueError / makeIndexFileError in ConsumeQueue and
// IndexService).
func (s *Store) stallDispatch(phy int64, err error) {
	s.dispatchStall.Store(&dispatchStall{phy: phy, err: err})
	if !s.dispatchStalled.Swap(true) {
		s.stats.dispatchStalls.Add(1)
		s.log.Error().Err(err).Int64("phyOffset", phy).Msg("dispatch: cannot put the record in its consume queue or index; it stays in the commitlog and is dispatched once that succeeds, puts are refused until then")
	}
}

// stallRefusal is the error a put gets while dispatch is stalled: an
// ErrDiskFull when the stall's cause is a full disk, an ErrNotWritable
// otherwise.
func (s *Store) stallRefusal() error {
	st := s.dispatchStall.Load()
	if st == nil || errors.Is(st.err, ErrDiskFull) {
		return errDispatchStalled
	}
	return fmt.Errorf("%w: the record at commitlog offset %d cannot be put in its consume queue or index (%v); puts are refused until it is", ErrNotWritable, st.phy, st.err)
}

// stalledOnFullDisk reports whether dispatch waits for disk space.
func (s *Store) stalledOnFullDisk() bool {
	if !s.dispatchStalled.Load() {
		return false
	}
	st := s.dispatchStall.Load()
	return st == nil || errors.Is(st.err, ErrDiskFull)
}

// dispatchLoop runs until stopDispatch is closed, dispatching whatever the put
// path has published each time it is woken, and once more before exiting so
// that Close leaves nothing undispatched.
func (s *Store) dispatchLoop() {
	defer s.dispatchWG.Done()
	for {
		s.dispatchMu.Lock()
		stalled := s.dispatchAvailable()
		s.dispatchMu.Unlock()
		// Also release here, not only after flushes: at a high write rate
		// (a timer flood stores every message twice) a flush interval's worth
		// of written pages would otherwise stay mapped.
		s.cl.releaseBehind()
		// The retry polls the disk: wall-clock pacing, like the cleanup
		// loop's, which also wakes the dispatcher when it freed space.
		var retry <-chan time.Time
		var t *time.Timer
		if stalled {
			t = time.NewTimer(dispatchRetryInterval)
			retry = t.C
		}
		select {
		case <-s.dispatchWake:
		case <-retry:
		case <-s.stopDispatch:
			if t != nil {
				t.Stop()
			}
			s.dispatchMu.Lock()
			s.dispatchAvailable()
			s.settleDeferred()
			s.dispatchStopped.Store(true)
			s.dispatchMu.Unlock()
			s.signalProgress()
			return
		}
		if t != nil {
			t.Stop()
		}
	}
}

// wakeDispatcher is called after every put. The channel holds one pending
// signal, so a put that lands while a pass is running triggers another pass.
func (s *Store) wakeDispatcher() {
	select {
	case s.dispatchWake <- struct{}{}:
	default:
	}
}

// dispatchAvailable dispatches records from the cursor up to the current
// commitlog end, and the deferred records whose file now exists. Only the
// dispatcher goroutine (or Open, before it starts) calls it, holding
// dispatchMu. It reports
// whether it stopped at a record it could not dispatch for want of disk
// space or an I/O error (the cursor then points at that record), or a
// deferred record's file could not be created.
func (s *Store) dispatchAvailable() (stalled bool) {
	s.cursor = max(s.cursor, s.reput.Load())
	for {
		deferErr := s.resolveDeferred()
		from, limit := s.cursor, s.dispatchLimit()
		var batch []pendingDispatch
		next := from
		var err error
		if from < limit {
			batch, next, err = s.readRecords(from, limit, s.pending[:0], true)
		}
		if err == nil && next <= from {
			// Caught up, or the next record ends past the confirm offset
			// gate (confirm.go).
			s.caughtUpTo.Store(limit)
			if batch != nil {
				s.pending = batch[:0]
			}
			s.publishDispatched()
			if deferErr != nil {
				s.stallDispatch(s.reput.Load(), deferErr)
				s.signalProgress()
				return true
			}
			s.unstallDispatch()
			s.signalProgress()
			return false
		}
		if err != nil {
			// from is not inside any file: nothing can be dispatched there.
			s.log.Error().Err(err).Int64("reput", from).Msg("dispatch: cannot read commitlog")
			s.publishDispatched()
			return false
		}
		if s.dispatchRead(batch, next) {
			s.signalProgress()
			return true
		}
		if deferErr == nil {
			s.unstallDispatch()
		}
		s.signalProgress()
	}
}

// dispatchRead dispatches batch, the records readRecords read up to next,
// and moves the cursor past them. At a record that fails, the cursor stays
// at it and the dispatch stalls there (true). The caller holds dispatchMu.
func (s *Store) dispatchRead(batch []pendingDispatch, next int64) (stalled bool) {
	for i := range batch {
		if at, err := s.dispatchBounded(&batch[i]); err != nil {
			s.pending = batch[:0]
			s.cursor = batch[i].PhysicalOffset
			s.publishDispatched()
			s.stallDispatch(at, err)
			s.dispatchBatchDone()
			return true
		}
	}
	s.pending = batch[:0]
	s.cursor = next
	s.publishDispatched()
	s.dispatchBatchDone()
	return false
}

// dispatchBatchDone calls OnDispatchBatch after a run of dispatches.
func (s *Store) dispatchBatchDone() {
	if s.opts.OnDispatchBatch != nil {
		s.opts.OnDispatchBatch()
	}
}

// unstallDispatch lifts the refusal of puts once the record dispatch
// stalled at went through: reput (published) is past it, or at the
// commitlog's end (everything stored is dispatched: a stall recorded at the
// end, by a deferral that failed without records, has nothing left to
// wait for, and puts, refused, would never move reput past it). A pass that
// only handed that record's file to the creator has not put it in its queue
// yet: after Open's recovery stalled at a file it could not create, the
// dispatcher's first pass defers the record and finds no failure until the
// creator has tried, and puts must stay refused meanwhile.
func (s *Store) unstallDispatch() {
	if !s.dispatchStalled.Load() {
		return
	}
	reput := s.reput.Load()
	if st := s.dispatchStall.Load(); st != nil && reput <= st.phy && reput < s.cl.maxOffset.Load() {
		return
	}
	if s.truncPending.Load() >= 0 {
		return // a cut TruncateTo could not complete (truncate.go)
	}
	if s.dispatchStalled.Swap(false) {
		s.log.Warn().Int64("reput", s.reput.Load()).Msg("dispatch: resumed after a stall; puts accepted again")
	}
}

// readRecords parses the published records from from (in its file, below
// to, at most dispatchBatch of them) into batch, and returns it with the
// offset after what was read: past a BLANK that is the file end. Records
// that fail framing are skipped to the next position that parses; with
// report each skip is counted and logged (the dispatcher: bytes this
// process wrote should never fail).
func (s *Store) readRecords(from, to int64, batch []pendingDispatch, report bool) ([]pendingDispatch, int64, error) {
	next := from
	err := s.cl.read(from, func(b []byte) error {
		p := 0
		for p < len(b) && len(batch) < dispatchBatch && from+int64(p) < to {
			l, kind := checkRecordFast(b, p)
			if kind == recBlank {
				p = len(b) // a BLANK runs to the file end, which b reaches
				break
			}
			if kind == recValid && from+int64(p+l.Total) > to {
				break // it ends past to (the confirm offset gate)
			}
			if kind == recBad {
				q := resync(b, p+1, len(b), from)
				if report {
					s.stats.dispatchErrors.Add(1)
					s.log.Error().Int64("phyOffset", from+int64(p)).Int("resyncAt", q).Msg("dispatch: unreadable record skipped")
				}
				if q < 0 {
					p = len(b)
					break
				}
				p = q
				continue
			}
			batch = append(batch, pendingDispatch{})
			var names topicNames
			if report {
				names = s.topicNames // the dispatcher's own call
			}
			parseDispatch(b[p:p+l.Total], &l, &batch[len(batch)-1], names)
			p += l.Total
		}
		next = from + int64(p)
		return nil
	})
	return batch, next, err
}

// checkRecordFast classifies the record at b[p:] by framing only: the
// dispatcher reads bytes this process wrote, so the CRC is not recomputed.
func checkRecordFast(b []byte, p int) (message.Layout, recKind) {
	rest := b[p:]
	if len(rest) >= 8 && binary.BigEndian.Uint32(rest[message.PosMagic:]) == BlankMagicCode {
		return message.Layout{Total: len(rest)}, recBlank
	}
	l, err := message.ParseLayout(rest)
	if err != nil {
		return l, recBad
	}
	return l, recValid
}

// signalProgress wakes WaitDispatched callers. The channel is replaced only
// when one was handed out since the last signal (progressChan): a put
// dispatches its own record and signals, and a channel per put was one of
// its allocations though nobody waited. The caller has published the
// progress (reput, the dispatcher's state) before the call; progressChan
// marks the channel watched before its caller reads that state, so with
// both atomic one of the two sides sees the other.
func (s *Store) signalProgress() {
	if !s.progressWatched.Load() {
		return
	}
	s.progressMu.Lock()
	if s.progressWatched.Swap(false) {
		close(s.progress)
		s.progress = make(chan struct{})
	}
	s.progressMu.Unlock()
}

// progressChan returns the channel the next signalProgress closes. Read the
// progress after the call, then wait on the channel.
func (s *Store) progressChan() <-chan struct{} {
	s.progressMu.Lock()
	defer s.progressMu.Unlock()
	s.progressWatched.Store(true)
	return s.progress
}

// WaitDispatched blocks until every record below phyOffset has been
// dispatched to its consume queue (and OnDispatch), or ctx ends.
func (s *Store) WaitDispatched(ctx context.Context, phyOffset int64) error {
	for {
		ch := s.progressChan()
		if s.reput.Load() >= phyOffset {
			return nil
		}
		if s.closed.Load() && s.dispatchStopped.Load() {
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitVisible is WaitDispatched for a reader of what consumers can see:
// it also returns once dispatch is held by the confirm offset gate
// (confirm.go) below phyOffset, since the records above the gate are
// dispatched only when the broker raises it. A controller-mode store
// reopens gated at its saved confirm offset (Options.RestoreConfirmOffset)
// with the unconfirmed tail above it: WaitDispatched(MaxPhyOffset()) would
// wait until the broker's role is known, which comes after the services
// that wait here are built.
func (s *Store) WaitVisible(ctx context.Context, phyOffset int64) error {
	for {
		ch := s.progressChan()
		if s.reput.Load() >= phyOffset {
			return nil
		}
		if g := s.confirm.Load(); g >= 0 && g < phyOffset && s.caughtUpTo.Load() >= g {
			return nil
		}
		if s.closed.Load() && s.dispatchStopped.Load() {
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// DispatchBehind is the number of commitlog bytes not yet dispatched.
func (s *Store) DispatchBehind() int64 {
	return max(0, s.cl.maxOffset.Load()-s.reput.Load())
}
