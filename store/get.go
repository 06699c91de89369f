package store

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"unsafe"

	"github.com/rmqio/rmq/internal/mmap"
	"github.com/rmqio/rmq/message"
)

// GetStatus is the outcome of GetMessage (Java GetMessageStatus).
type GetStatus int

const (
	Found               GetStatus = iota // at least one message returned
	NoMatchedMessage                     // every unit scanned was filtered out
	MessageWasRemoving                   // the first units point at records that cannot be read
	OffsetFoundNull                      // no consume-queue file holds the offset
	OffsetOverflowBadly                  // offset > max
	OffsetOverflowOne                    // offset == max: nothing new yet
	OffsetTooSmall                       // offset < min
	NoMatchedLogicQueue                  // no consume queue for topic/queue
	NoMessageInQueue                     // the queue exists but max == 0
)

var getStatusNames = [...]string{
	"FOUND", "NO_MATCHED_MESSAGE", "MESSAGE_WAS_REMOVING", "OFFSET_FOUND_NULL", "OFFSET_OVERFLOW_BADLY",
	"OFFSET_OVERFLOW_ONE", "OFFSET_TOO_SMALL", "NO_MATCHED_LOGIC_QUEUE", "NO_MESSAGE_IN_QUEUE",
}

// String returns the Java enum name.
func (g GetStatus) String() string {
	if g >= 0 && int(g) < len(getStatusNames) {
		return getStatusNames[g]
	}
	return fmt.Sprintf("GetStatus(%d)", int(g))
}

// GetResult is what GetMessage found.
type GetResult struct {
	Status GetStatus
	// Messages are raw records, each a sub-slice of one buffer that holds them
	// back to back (see Body); the caller owns them.
	Messages        [][]byte
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
	body            []byte
	buf             *[]byte // the pooled buffer body started in (bodypool.go)
}

// Body returns the messages concatenated: a PULL_MESSAGE response body. It
// shares memory with Messages.
func (r *GetResult) Body() []byte { return r.body }

// Release hands the body's buffer back for a later read to reuse. Neither
// Body nor Messages, nor any copy of them, may be used after it: the bytes
// will be overwritten. A result never released is collected as usual.
func (r *GetResult) Release() {
	if r.buf != nil {
		recycleBody(r.buf)
	}
	r.buf, r.body, r.Messages = nil, nil, nil
}

// maxFilterUnits is Java's floor on consume-queue units scanned per call.
const maxFilterUnits = 16000

// GetMessage reads up to maxMsgs messages (and about maxBytes bytes, but always
// at least one message) from topic/queueID starting at the logical offset,
// following Java DefaultMessageStore.getMessage: only the consume-queue file
// holding offset is scanned, at most max(16000, 20*maxMsgs) units; units whose
// tagsCode (and lazily parsed properties) filter rejects are skipped but
// counted in NextBeginOffset, as are units whose record cannot be read. A nil
// filter accepts everything. The result is never nil; after Close every queue
// reads as NoMatchedLogicQueue (Java returns null once shut down).
func (s *Store) GetMessage(topic string, queueID int32, offset int64, maxMsgs, maxBytes int, filter func(tagsCode int64, props func() map[string]string) bool) *GetResult {
	return s.getMessage(topic, queueID, offset, maxMsgs, maxBytes, filter, nil, consumerRead)
}

// ReadQueue is GetMessage for the broker's own services (the delay service,
// the timer store) reading their system queues: it is not counted in the
// get statistics (getMessageTimesTotal, getMessageTimesTotalFound,
// getTotalTps and the like), which count consumers' reads only. The Java
// services read their consume queues and the commitlog directly rather than
// through DefaultMessageStore.getMessage (4.9.8 ScheduleMessageService,
// 5.3.3 TimerMessageStore), so their reads never reach those counters.
func (s *Store) ReadQueue(topic string, queueID int32, offset int64, maxMsgs, maxBytes int) *GetResult {
	return s.getMessage(topic, queueID, offset, maxMsgs, maxBytes, nil, nil, serviceRead)
}

// MessageFilter selects messages in GetMessageFiltered, in the two steps of
// Java's MessageFilter: MatchTags sees the consume-queue unit's tagsCode
// (isMatchedByConsumeQueue) before the record is read; MatchProps sees the
// properties text of a record that passed it (isMatchedByCommitLog), read in
// place: the text is only valid during the call and must not be kept.
type MessageFilter interface {
	MatchTags(tagsCode int64) bool
	MatchProps(props message.Props) bool
}

// GetMessageFiltered is GetMessage with a MessageFilter: a unit either step
// rejects is skipped but counted in NextBeginOffset, as Java's getMessage
// does. The properties are handed over without a copy, so a filter that
// evaluates them allocates nothing per message. It serves the broker's
// pulls: the body is a pooled buffer (bodypool.go), which the caller hands
// back with Release once it is done with the result.
func (s *Store) GetMessageFiltered(topic string, queueID int32, offset int64, maxMsgs, maxBytes int, f MessageFilter) *GetResult {
	return s.getMessage(topic, queueID, offset, maxMsgs, maxBytes, nil, f, pullRead)
}

// readMode says who reads: a consumer's read is counted in the get
// statistics, and a pull's body comes from the pool (its caller releases
// it; a body from the pool that is never released would cost a whole size
// class instead of what it holds).
type readMode struct{ count, pooled bool }

var (
	consumerRead = readMode{count: true}
	pullRead     = readMode{count: true, pooled: true}
	serviceRead  = readMode{}
)

func (s *Store) getMessage(topic string, queueID int32, offset int64, maxMsgs, maxBytes int,
	filter func(tagsCode int64, props func() map[string]string) bool, mf MessageFilter, mode readMode) *GetResult {
	if s.closed.Load() {
		return &GetResult{Status: NoMatchedLogicQueue}
	}
	if mode.count {
		s.stats.getCalls.Add(1)
		start := s.opts.Clock.Now()
		defer func() { s.stats.times.noteGet(s.opts.Clock.Now().Sub(start)) }()
	}
	r := &GetResult{Status: NoMatchedLogicQueue, NextBeginOffset: 0}
	q, _ := s.queueFor(topic, queueID, false)
	if q == nil {
		return r
	}
	r.MinOffset, r.MaxOffset = q.minOffset(), q.maxOffset()
	switch {
	case r.MaxOffset == 0:
		r.Status, r.NextBeginOffset = NoMessageInQueue, 0
		return r
	case offset < r.MinOffset:
		r.Status, r.NextBeginOffset = OffsetTooSmall, r.MinOffset
		return r
	case offset == r.MaxOffset:
		r.Status, r.NextBeginOffset = OffsetOverflowOne, offset
		return r
	case offset > r.MaxOffset:
		r.Status, r.NextBeginOffset = OffsetOverflowBadly, r.MaxOffset
		return r
	}
	limit := max(maxFilterUnits, maxMsgs*cqUnitSize) // Java compares bytes scanned with this unit count
	var offs []int                                   // start of each record in r.body
	scanned := 0
	found := q.units(offset, func(units []byte) {
		r.Status = NoMatchedMessage
		nextPhyFileStart := int64(math.MinInt64)
		for ; scanned < len(units) && scanned < limit; scanned += cqUnitSize {
			phy, size, tags := unitAt(units[scanned:])
			if nextPhyFileStart != math.MinInt64 && phy < nextPhyFileStart {
				continue
			}
			if isFiller(phy, size) {
				if len(offs) == 0 {
					r.Status = MessageWasRemoving
				}
				continue
			}
			if len(offs) > 0 && (len(offs) >= maxMsgs || len(r.body)+int(size) > maxBytes) {
				break
			}
			missing := false
			if filter != nil {
				var accepted bool
				if accepted, missing = s.filterUnit(filter, phy, size, tags); !accepted && !missing {
					if len(offs) == 0 {
						r.Status = NoMatchedMessage
					}
					continue
				}
			}
			if mf != nil && !mf.MatchTags(tags) {
				if len(offs) == 0 {
					r.Status = NoMatchedMessage
				}
				continue
			}
			if !missing {
				start := len(r.body)
				rejected := false
				err := s.cl.record(phy, size, func(b []byte, l *message.Layout) error {
					if mf != nil && !mf.MatchProps(propsInPlace(b, l)) {
						rejected = true
						return nil
					}
					if r.body == nil {
						// Size the buffer for what the queue holds: the units
						// written from here on, within maxMsgs and maxBytes.
						ahead := units[scanned:min(len(units), limit)]
						if n := bodyEstimate(ahead, maxMsgs, maxBytes); mode.pooled {
							r.body, r.buf = newBody(n)
						} else {
							r.body = make([]byte, 0, n)
						}
						offs = make([]int, 0, min(max(maxMsgs, 1), len(ahead)/cqUnitSize))
					}
					r.body = append(r.body, b...)
					return nil
				})
				if err == nil && rejected {
					if len(offs) == 0 {
						r.Status = NoMatchedMessage
					}
					continue
				}
				if err == nil {
					offs = append(offs, start)
					r.Status = Found
					nextPhyFileStart = math.MinInt64
					continue
				}
				missing = true
				if errors.Is(err, ErrNotFound) && phy < s.cl.minOffset() {
					// Expired commitlog file: skip every unit pointing into it.
					nextPhyFileStart = phy + s.cl.fileSize - phy%s.cl.fileSize
				}
			}
			if len(offs) == 0 {
				r.Status = MessageWasRemoving
			}
		}
	})
	if !found {
		r.Status = OffsetFoundNull
		r.NextBeginOffset = q.nextFileStart(offset)
		s.log.Warn().Str("topic", topic).Int32("queueId", queueID).Int64("offset", offset).
			Int64("minOffset", r.MinOffset).Int64("maxOffset", r.MaxOffset).Msg("consume queue has no file for the offset")
		return r
	}
	r.NextBeginOffset = offset + int64(scanned/cqUnitSize)
	if len(offs) > 0 {
		r.Messages = make([][]byte, len(offs))
		for i, o := range offs {
			end := len(r.body)
			if i+1 < len(offs) {
				end = offs[i+1]
			}
			r.Messages[i] = r.body[o:end:end]
		}
		if mode.count {
			s.stats.getFound.Add(1)
			s.stats.getMessages.Add(int64(len(offs)))
		}
	}
	return r
}

// bodyEstimate is the buffer a pull needs for the units ahead (the first one
// is the record being copied): the sum of the record sizes of the units
// unitsAhead takes. Without a filter this is exact, so a pull allocates in
// proportion to what it returns rather than to maxMsgs; a filter that skips
// units only makes it an over-estimate, and append grows the buffer if
// accepted records beyond those units follow.
func bodyEstimate(units []byte, maxMsgs, maxBytes int) int {
	total := 0
	unitsAhead(units, maxMsgs, maxBytes, func(_ int64, size int32) { total += int(size) })
	return total
}

// unitsAhead calls fn with the first maxMsgs non-filler units of units,
// stopping where maxBytes would be passed (but taking at least one), as
// getMessage's copy loop does without a filter. full reports that it
// stopped at one of the two limits rather than at the end of units.
func unitsAhead(units []byte, maxMsgs, maxBytes int, fn func(phy int64, size int32)) (full bool) {
	total, n := 0, 0
	for p := 0; p+cqUnitSize <= len(units); p += cqUnitSize {
		if n >= max(maxMsgs, 1) {
			return true
		}
		phy, size, _ := unitAt(units[p:])
		if isFiller(phy, size) || size <= 0 {
			continue
		}
		if n > 0 && total+int(size) > maxBytes {
			return true
		}
		total += int(size)
		n++
		fn(phy, size)
	}
	return n >= max(maxMsgs, 1)
}

// ReadResident reports whether GetMessage of these arguments, without a
// filter, would read only memory: the consume-queue units it walks and the
// commitlog span of the records they point at are in the page cache
// (mmap.Resident), checked before any of them is read. The broker serves
// such a pull on its event loop, which must never wait for the disk. It is
// a snapshot: false when the queue, the offset or a record is not there,
// when filler units would take the read past the maxMsgs units checked,
// when the span crosses a commitlog file or is longer than mmap.Resident
// looks at, and on systems without the check; a page the kernel evicts
// right after the check costs one read.
func (s *Store) ReadResident(topic string, queueID int32, offset int64, maxMsgs, maxBytes int) bool {
	if s.closed.Load() {
		return false
	}
	q, _ := s.queueFor(topic, queueID, false)
	if q == nil {
		return false
	}
	resident := false
	q.units(offset, func(units []byte) {
		ahead := units[:min(len(units), max(maxMsgs, 1)*cqUnitSize)]
		if !mmap.Resident(ahead) {
			return
		}
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		full := unitsAhead(ahead, maxMsgs, maxBytes, func(phy int64, size int32) {
			lo, hi = min(lo, phy), max(hi, phy+int64(size))
		})
		resident = lo < hi && (full || len(ahead) == len(units)) && s.cl.resident(lo, hi)
	})
	return resident
}

// filterUnit runs filter on one unit, parsing the record's properties only if
// the filter asks for them; missing reports that the record could not be read.
func (s *Store) filterUnit(filter func(int64, func() map[string]string) bool, phy int64, size int32, tags int64) (accepted, missing bool) {
	var props map[string]string
	accepted = filter(tags, func() map[string]string {
		if props == nil && !missing {
			err := s.cl.record(phy, size, func(b []byte, l *message.Layout) error {
				props = message.ParseProperties(string(l.Props(b)))
				return nil
			})
			missing = err != nil
		}
		return props
	})
	return accepted, missing
}

// propsInPlace returns the properties text of rec as a string that shares
// rec's memory: no copy, valid only while rec is (during a record callback).
func propsInPlace(rec []byte, l *message.Layout) message.Props {
	if l.PropertiesLen == 0 {
		return ""
	}
	return message.Props(unsafe.String(&rec[l.PropertiesPos], l.PropertiesLen))
}

// MaxOffsetInQueue is the logical offset the next message of the queue gets
// (its message count when it starts at 0); 0 for an unknown queue.
func (s *Store) MaxOffsetInQueue(topic string, queueID int32) int64 {
	if q, _ := s.queueFor(topic, queueID, false); q != nil {
		return q.maxOffset()
	}
	return 0
}

// MinOffsetInQueue is the first readable logical offset; 0 for an unknown queue.
func (s *Store) MinOffsetInQueue(topic string, queueID int32) int64 {
	if q, _ := s.queueFor(topic, queueID, false); q != nil {
		return q.minOffset()
	}
	return 0
}

// CommitLogOffsetOf returns the commitlog offset of the message at a logical
// offset of the queue.
func (s *Store) CommitLogOffsetOf(topic string, queueID int32, queueOffset int64) (int64, bool) {
	q, _ := s.queueFor(topic, queueID, false)
	if q == nil || queueOffset < 0 {
		return 0, false
	}
	phy, size, _, ok := q.unit(queueOffset)
	if !ok || isFiller(phy, size) {
		return 0, false
	}
	return phy, true
}

// storeTimestampAt reads STORETIMESTAMP of the record at phy.
func (s *Store) storeTimestampAt(phy int64, size int32) (int64, error) {
	var ts int64
	err := s.cl.record(phy, size, func(b []byte, l *message.Layout) error {
		ts = l.StoreTimestamp(b)
		return nil
	})
	return ts, err
}

// MessageStoreTimeStamp returns the store time of the message at a logical
// offset of the queue.
func (s *Store) MessageStoreTimeStamp(topic string, queueID int32, queueOffset int64) (int64, error) {
	q, _ := s.queueFor(topic, queueID, false)
	if q == nil || queueOffset < 0 {
		return 0, fmt.Errorf("%w: %s/%d offset %d", ErrNotFound, topic, queueID, queueOffset)
	}
	phy, size, _, ok := q.unit(queueOffset)
	if !ok || isFiller(phy, size) {
		return 0, fmt.Errorf("%w: %s/%d offset %d", ErrNotFound, topic, queueID, queueOffset)
	}
	return s.storeTimestampAt(phy, size)
}

// EarliestMessageTime returns the store time of the first message of the queue.
func (s *Store) EarliestMessageTime(topic string, queueID int32) (int64, error) {
	return s.MessageStoreTimeStamp(topic, queueID, s.MinOffsetInQueue(topic, queueID))
}

// EarliestStoreTime is the store time of the commitlog's first record
// (DefaultMessageStore.getEarliestMessageTime, which 5.x's
// rocketmq_storage_message_reserve_time measures from), 0 when there is
// none or it cannot be read.
func (s *Store) EarliestStoreTime() int64 {
	minOff := s.MinPhyOffset()
	if s.closed.Load() || minOff >= s.MaxPhyOffset() {
		return 0
	}
	rec, err := s.LookMessageByOffset(minOff)
	if err != nil {
		return 0
	}
	l, err := message.ParseLayout(rec)
	if err != nil {
		return 0
	}
	return l.StoreTimestamp(rec)
}

// OffsetInQueueByTime returns the logical offset whose message was stored
// closest to ts, as Java getOffsetInQueueByTime: an exact match wins (the first
// one here), otherwise the nearer neighbour, the earlier one on a tie; all
// older → the last message, all newer → the first. Units whose record cannot be
// read make it return 0, like Java; an unknown or empty queue gives 0.
func (s *Store) OffsetInQueueByTime(topic string, queueID int32, ts int64) int64 {
	q, _ := s.queueFor(topic, queueID, false)
	if q == nil {
		return 0
	}
	lo, hi := q.minOffset(), q.maxOffset()
	if lo >= hi {
		return 0
	}
	failed := false
	timeAt := func(idx int64) int64 {
		phy, size, _, ok := q.unit(idx)
		if !ok || isFiller(phy, size) {
			failed = true
			return 0
		}
		t, err := s.storeTimestampAt(phy, size)
		if err != nil {
			failed = true
		}
		return t
	}
	// First unit stored at or after ts; store times follow queue order.
	n := int(hi - lo)
	i := sort.Search(n, func(i int) bool { return failed || timeAt(lo+int64(i)) >= ts })
	if failed {
		return 0
	}
	switch {
	case i == n:
		return hi - 1
	case i == 0:
		return lo
	}
	right := timeAt(lo + int64(i))
	if right == ts {
		return lo + int64(i)
	}
	left := timeAt(lo + int64(i) - 1)
	if failed {
		return 0
	}
	if ts-left > right-ts {
		return lo + int64(i)
	}
	return lo + int64(i) - 1
}

// LookMessageByOffset returns a copy of the record at a commitlog offset.
func (s *Store) LookMessageByOffset(phyOffset int64) ([]byte, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if rec, ok, err := s.cl.lookCold(phyOffset); ok {
		return rec, err
	}
	var out []byte
	err := s.cl.record(phyOffset, 0, func(b []byte, _ *message.Layout) error {
		out = append([]byte(nil), b...)
		return nil
	})
	return out, err
}

// MaxPhyOffset is the commitlog end: the offset the next record gets, unless
// it has to move to a new file.
func (s *Store) MaxPhyOffset() int64 { return s.cl.maxOffset.Load() }

// MinPhyOffset is the first commitlog offset still stored.
func (s *Store) MinPhyOffset() int64 { return s.cl.minOffset() }
