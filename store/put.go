package store

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/rmqio/rmq/message"
)

// PutStatus is the outcome of a successful append.
type PutStatus int

const (
	// PutOK: stored (and, under SYNC_FLUSH, durable).
	PutOK PutStatus = iota
	// PutFlushDiskTimeout: stored, but the SYNC_FLUSH fsync did not complete
	// within SyncFlushTimeout.
	PutFlushDiskTimeout
)

// String returns the Java PutMessageStatus name.
func (s PutStatus) String() string {
	switch s {
	case PutOK:
		return "PUT_OK"
	case PutFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	}
	return fmt.Sprintf("PutStatus(%d)", int(s))
}

// PutStatusName is the Java PutMessageStatus name of a put's outcome: the
// result's status when err is nil, else the status Java gives the refusal.
func PutStatusName(res *PutResult, err error) string {
	switch {
	case err == nil && res != nil:
		return res.Status.String()
	case errors.Is(err, ErrMessageTooLarge), errors.Is(err, ErrTopicTooLong), errors.Is(err, ErrInvalidTopic),
		errors.Is(err, ErrInvalidBatch), errors.Is(err, ErrHostNotIPv4):
		return "MESSAGE_ILLEGAL"
	case errors.Is(err, ErrPropertiesTooLarge):
		return "PROPERTIES_SIZE_EXCEEDED"
	case errors.Is(err, ErrLmqQueueNumExceeded):
		return "LMQ_CONSUME_QUEUE_NUM_EXCEEDED"
	case errors.Is(err, ErrClosed), errors.Is(err, ErrNotWritable), errors.Is(err, ErrWouldBlock), errors.Is(err, ErrDiskFull), errors.Is(err, ErrSlave):
		// Java refuses puts on a full disk as not writeable (checkStoreStatus).
		return "SERVICE_NOT_AVAILABLE"
	}
	return "UNKNOWN_ERROR"
}

// PutResult describes stored messages.
type PutResult struct {
	Status         PutStatus
	PhysicalOffset int64 // of the first message
	QueueOffset    int64 // of the first message
	StoreTimestamp int64
	Count          int
	// WroteBytes is the commitlog bytes the messages occupy.
	WroteBytes int

	// The offsetMsgIds are built when asked for (MsgID), not by every put:
	// the schedule and timer services' re-puts never read them. A batch keeps
	// them built, as its records' offsets are not kept.
	storeHost netip.AddrPort
	msgIDs    []string
}

// MsgID returns the offsetMsgId of the i-th stored message (0 ≤ i < Count).
func (r *PutResult) MsgID(i int) string {
	if i < len(r.msgIDs) {
		return r.msgIDs[i]
	}
	return message.CreateMessageID(r.storeHost, r.PhysicalOffset)
}

// MsgIDList is the offsetMsgIds of every stored message joined by commas, as
// a send's answer carries them (msgId).
func (r *PutResult) MsgIDList() string {
	switch {
	case len(r.msgIDs) > 0:
		return strings.Join(r.msgIDs, ",")
	case r.Count == 0:
		return ""
	}
	return r.MsgID(0)
}

// PutMessage appends one message. Prepared and rollback transaction records
// (SysFlag transaction bits) get queue offset 0 and never a consume-queue
// unit, as in Java.
func (s *Store) PutMessage(m *message.Message) (*PutResult, error) {
	ms := [1]*message.Message{m}
	return s.put(ms[:], false, false)
}

// PutMessageInline is PutMessage for a caller that must not wait for the
// disk (a remoting event loop): where PutMessage would wait for the next
// commitlog file to be created or for the warm-up of the range, it returns
// ErrWouldBlock having stored nothing, and the caller is to call PutMessage
// from a goroutine that may wait. It still takes the put lock, which no
// put holds while waiting for the disk, and it still waits for the SYNC_FLUSH
// fsync unless m.SkipFlushWait is set.
func (s *Store) PutMessageInline(m *message.Message) (*PutResult, error) {
	ms := [1]*message.Message{m}
	return s.put(ms[:], false, true)
}

// PutMessages stores a batch atomically on one topic/queue with consecutive
// queue offsets: all records land in one commitlog file, in order, or none
// does. Transactional prepared/rollback flags are refused in a batch.
func (s *Store) PutMessages(msgs []*message.Message) (*PutResult, error) {
	return s.put(msgs, true, false)
}

// prepare validates m and builds its record fields (everything except the
// offsets and store timestamp, which are set under the put lock).
func (s *Store) prepare(m *message.Message, f *message.Record) error {
	if err := checkTopic(m.Topic); err != nil {
		return err
	}
	if len(m.Body) > s.opts.MaxMessageSize {
		return fmt.Errorf("%w: body of %d bytes exceeds %d", ErrMessageTooLarge, len(m.Body), s.opts.MaxMessageSize)
	}
	if m.BornHost.IsValid() && message.HostIsV6(m.BornHost) {
		return fmt.Errorf("%w: born host %s", ErrHostNotIPv4, m.BornHost)
	}
	props := m.RawProperties
	if m.Properties != nil {
		props = message.MarshalProperties(m.Properties)
	}
	if len(props) > message.MaxPropertiesLength {
		return fmt.Errorf("%w: %d bytes", ErrPropertiesTooLarge, len(props))
	}
	*f = message.Record{
		Topic:                     m.Topic,
		Properties:                props,
		Body:                      m.Body,
		BodyCRC:                   message.BodyCRC(m.Body),
		QueueID:                   m.QueueID,
		Flag:                      m.Flag,
		SysFlag:                   m.SysFlag &^ (message.SysFlagBornHostV6 | message.SysFlagStoreHostV6),
		ReconsumeTimes:            m.ReconsumeTimes,
		BornTimestamp:             m.BornTimestamp,
		PreparedTransactionOffset: m.PreparedTransactionOffset,
		BornHost:                  m.BornHost,
		StoreHost:                 s.StoreHost(),
	}
	return nil
}

// put stores msgs; inline refuses with ErrWouldBlock where it would wait
// for the disk.
func (s *Store) put(msgs []*message.Message, batch, inline bool) (*PutResult, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if s.slave.Load() {
		return nil, ErrSlave
	}
	if err := s.writeRefused(len(msgs) == 1 && msgs[0].Delivery); err != nil {
		s.stats.putFailures.Add(1)
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: no messages", ErrInvalidBatch)
	}
	start := s.opts.Clock.Now()
	var one [1]message.Record
	fields := one[:]
	if len(msgs) > 1 {
		fields = make([]message.Record, len(msgs))
	}
	total := 0
	wait := s.opts.FlushDiskType == SyncFlush
	for i, m := range msgs {
		if batch && (m.Topic != msgs[0].Topic || m.QueueID != msgs[0].QueueID) {
			return nil, fmt.Errorf("%w: message %d is for %s/%d, not %s/%d", ErrInvalidBatch, i, m.Topic, m.QueueID, msgs[0].Topic, msgs[0].QueueID)
		}
		if batch {
			if tt := message.TransactionType(m.SysFlag); tt == message.TransactionPreparedType || tt == message.TransactionRollbackType {
				return nil, fmt.Errorf("%w: message %d is a prepared or rollback transaction record", ErrInvalidBatch, i)
			}
		}
		if err := s.prepare(m, &fields[i]); err != nil {
			return nil, err
		}
		total += fields[i].Size()
		if m.SkipFlushWait || m.Properties[message.PropWait] == "false" {
			wait = false
		}
	}
	if int64(total)+blankRecordLength > s.cl.fileSize {
		return nil, fmt.Errorf("%w: %d record bytes do not fit in a %d-byte commitlog file", ErrMessageTooLarge, total, s.cl.fileSize)
	}
	// A message naming queues in INNER_MULTI_DISPATCH gets their offsets
	// under the lock (lmq.go); a batch is not wrapped, as in Java.
	var multi *multiPlan
	var plainProps string
	if !batch {
		if multi = s.planMulti(fields[0].Properties, fields[0].QueueID); multi != nil {
			if s.lmqRefused() {
				return nil, ErrLmqQueueNumExceeded
			}
			plainProps = fields[0].Properties
		}
	}
	// Prepared and rollback records are stored but never consumed: they take
	// queue offset 0 and do not advance the queue.
	tt := message.TransactionType(msgs[0].SysFlag)
	counted := tt != message.TransactionPreparedType && tt != message.TransactionRollbackType

	key := queueKey{msgs[0].Topic, msgs[0].QueueID}
	var queueOffset, phy, storeTS int64
	var err error
	for {
		// Stock checkStoreStatus: while the current holder of the lock
		// has stalled past the page-cache-busy timeout, refuse instead of
		// queueing behind it.
		if s.IsOSPageCacheBusy() {
			s.stats.putFailures.Add(1)
			return nil, ErrOSPageCacheBusy
		}
		s.putMu.Lock()
		if s.closed.Load() {
			s.putMu.Unlock()
			return nil, ErrClosed
		}
		queueOffset = 0
		if counted {
			queueOffset = s.queueOffsets[key]
		}
		if multi != nil {
			// The offsets change the record's length: it is sized again.
			fields[0].Properties = s.wrapLocked(multi, plainProps)
			total = fields[0].Size()
			if err := s.multiFits(len(fields[0].Properties), total); err != nil {
				s.putMu.Unlock()
				return nil, err
			}
		}
		// Store timestamps come from the clock under the lock, so they follow
		// commitlog order as closely as the clock allows.
		locked := s.opts.Clock.Now()
		s.busy.lockedSince.Store(locked.UnixNano())
		storeTS = locked.UnixMilli()
		phy, err = s.cl.appendLocked(total, s.directAppend(), func(b []byte, at int64) {
			off := 0
			for i := range fields {
				f := &fields[i]
				n := f.Size()
				f.PhysicalOffset = at + int64(off)
				if counted {
					f.QueueOffset = queueOffset + int64(i)
				}
				f.StoreTimestamp = storeTS
				f.Encode(b[off : off+n])
				off += n
			}
		})
		if err == nil && counted {
			s.queueOffsets[key] = queueOffset + int64(len(fields))
			if multi != nil {
				s.advanceLocked(multi)
			}
		}
		s.busy.lockedSince.Store(0)
		s.putMu.Unlock()
		if err == nil || inline || !errors.Is(err, ErrWouldBlock) {
			break
		}
		// Nothing was written: wait for the disk without the lock, then
		// take the lock and the queue offset again.
		s.cl.awaitWritable(err)
	}
	if err != nil && errors.Is(err, ErrWouldBlock) {
		s.stats.putWouldBlock.Add(1)
		return nil, err
	}
	if err != nil {
		s.stats.putFailures.Add(1)
		return nil, err
	}
	s.stats.putMessages.Add(int64(len(fields)))
	s.stats.putBytes.Add(int64(total))
	end := s.opts.Clock.Now()
	s.stats.times.notePut(end, end.Sub(start))
	s.dispatchOwn(phy, phy+int64(total))
	s.noteWritten(total)

	res := &PutResult{
		Status:         PutOK,
		PhysicalOffset: phy,
		QueueOffset:    queueOffset,
		StoreTimestamp: storeTS,
		Count:          len(fields),
		WroteBytes:     total,
		storeHost:      fields[0].StoreHost,
	}
	if len(fields) > 1 {
		res.msgIDs = make([]string, len(fields))
		for i := range fields {
			res.msgIDs[i] = message.CreateMessageID(fields[i].StoreHost, fields[i].PhysicalOffset)
		}
	}
	if wait && !s.waitFlushed(phy+int64(total)) {
		s.stats.flushTimeouts.Add(1)
		res.Status = PutFlushDiskTimeout
	}
	return res, nil
}
