package timer

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// # The master's timer progress on a slave
//
// A slave's timer store is written by replication only: its own checkpoint
// stays where it was when it last delivered (or at its first Open). Started
// as a master, or delivering as an acting master, it would read the timer
// queue from there and deliver again everything its master had delivered
// since. 5.3.3 avoids that by copying the master's TimerCheckpoint every
// 3 s (SlaveSynchronize.syncTimerCheckPoint): lastReadTimeMs, every slot
// before which the master delivered, and masterTimerQueueOffset, below which
// the master read the timer queue; a slave that takes over resumes from them
// (TimerMessageStore.checkBrokerRole).
//
// rmq copies the same two values (CopyMaster) and turns them into one rule,
// kept in config/timermaster: a timer-queue record below the commitlog
// position P of timer-queue entry masterTimerQueueOffset (the queue is in
// commitlog order, so "read by the master" is "stored below P") whose
// TIMER_OUT_MS is before lastReadTimeMs was delivered (or recalled) by the
// master, and is dropped wherever this store meets it — in a wheel slot, read
// after its slot passed (bypass), or as a roll. The read time is not moved:
// records stored after P may sit in earlier slots and are delivered as
// before. What the master delivered after the copied checkpoint is delivered
// again (in flight, as stock).
//
// The rule is adopted only once this store holds everything it speaks for:
// the master's commitlog up to its max offset read after the checkpoint
// (where the master stored those deliveries; dropping a record whose
// delivered copy was not yet replicated would lose it), and the timer queue
// up to masterTimerQueueOffset. Until then the previous rule stays (stay on
// the duplicate side). The rule names the record at masterTimerQueueOffset-1
// (its end and store time): a commitlog cut back and rewritten below P
// since (a new master's history) no longer holds it, and the rule is then
// dropped at Open and at every takeover rather than applied to records the
// master never saw. A message the master rolled before lastReadTimeMs but
// due after it is kept here as well as its roll copy: delivered twice.

// masterMagic heads config/timermaster ("RMQTMMS1").
const masterMagic uint64 = 0x524D51544D4D5331

// masterRule is the adopted master progress: records stored below phy and
// due before readTimeMs were delivered by the master. anchorTs is the store
// time of the timer-queue record ending at phy (queue offset queueOffset-1).
type masterRule struct {
	readTimeMs, queueOffset, phy, anchorTs int64
	version                                DataVersion
}

// masterCopy is the last checkpoint copied from the master and the
// master's commitlog max offset read after it.
type masterCopy struct {
	ck   StockCheckpoint
	need int64
}

// masterState holds the copied and adopted master progress. mu orders the
// copies and the file writes; rule is read without it on every delivery.
type masterState struct {
	mu     sync.Mutex
	file   *store.SlotFile
	copied *masterCopy // newest copy, adopted or not
	rule   atomic.Pointer[masterRule]
	drops  atomic.Int64
}

func (t *TimerStore) openMaster() error {
	sf, v, _, ok, err := store.OpenSlotFile(t.opts.FS, filepath.Join(t.opts.Dir, "config", "timermaster"), masterMagic, 7)
	if err != nil {
		return err
	}
	t.ms.file = sf
	if ok && v[0] >= 0 && v[1] >= 0 && v[2] >= 0 {
		r := &masterRule{readTimeMs: v[0], queueOffset: v[1], phy: v[2], anchorTs: v[3],
			version: DataVersion{StateVersion: v[4], Timestamp: v[5], Counter: v[6]}}
		t.ms.rule.Store(r)
		if t.checkRule() {
			t.log.Info().Int64("readTimeMs", r.readTimeMs).Int64("queueOffset", r.queueOffset).Int64("phy", r.phy).
				Msg("timer: master progress loaded: its deliveries are not repeated")
		}
	}
	return nil
}

// checkRule drops the rule when the timer queue no longer holds the record
// it was adopted at (see above), and reports whether a rule stands.
func (t *TimerStore) checkRule() bool {
	r := t.ms.rule.Load()
	if r == nil {
		return false
	}
	if end, ts, ok := t.queueEnd(r.queueOffset); ok && end == r.phy && ts == r.anchorTs {
		return true
	}
	t.ms.rule.Store(nil)
	t.log.Warn().Int64("queueOffset", r.queueOffset).Int64("phy", r.phy).
		Msg("timer: the master progress copied earlier names a record this store no longer holds; not used")
	return false
}

// deliveredByMaster reports whether the master this store copied delivered
// the timer-queue record stored at offsetPy, due at due.
func (t *TimerStore) deliveredByMaster(offsetPy, due int64) bool {
	r := t.ms.rule.Load()
	if r == nil || offsetPy >= r.phy || due >= r.readTimeMs {
		return false
	}
	t.ms.drops.Add(1)
	return true
}

// delivering reports whether this store delivers due timers (started, not
// held): a master's or an acting master's.
func (t *TimerStore) delivering() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.started && !t.deqPaused.Load()
}

// CopyMaster takes the timer checkpoint a slave read from its master
// (GET_TIMER_CHECK_POINT) and the master's commitlog max offset read after
// it. The copy is what StockCheckpoint answers from now on, as a 5.3.3
// slave's checkpoint does; it becomes the rule (see above) once this
// store holds what it covers, checked now and at each later copy and
// takeover (SetDequeue(true), Start). A store that delivers ignores it
// (stock copies only while !shouldRunningDequeue).
func (t *TimerStore) CopyMaster(ck StockCheckpoint, masterMaxPhy int64) error {
	if t.delivering() {
		return nil
	}
	if ck.LastReadTimeMs < 0 || ck.MasterTimerQueueOffset < 0 {
		return fmt.Errorf("%w: negative read time or queue offset", ErrBadStockState)
	}
	t.ms.mu.Lock()
	defer t.ms.mu.Unlock()
	t.ms.copied = &masterCopy{ck: ck, need: masterMaxPhy}
	return t.adoptLocked()
}

// adoptLocked makes the newest copy the rule when the store holds what it
// covers. ms.mu must be held.
func (t *TimerStore) adoptLocked() error {
	c := t.ms.copied
	if c == nil || t.ms.file == nil {
		return nil
	}
	q := c.ck.MasterTimerQueueOffset
	if t.opts.Store.MaxPhyOffset() < c.need || t.opts.Store.MaxOffsetInQueue(message.TopicWheelTimer, 0) < q {
		return nil // not replicated yet: the previous rule stays
	}
	phy, ts, ok := t.queueEnd(q)
	if !ok {
		return nil
	}
	r := &masterRule{readTimeMs: c.ck.LastReadTimeMs, queueOffset: q, phy: phy, anchorTs: ts, version: c.ck.DataVersion}
	if old := t.ms.rule.Load(); old != nil && old.readTimeMs == r.readTimeMs && old.phy == r.phy && old.anchorTs == r.anchorTs {
		return nil
	}
	if err := t.ms.file.Write([]int64{r.readTimeMs, r.queueOffset, r.phy, r.anchorTs,
		r.version.StateVersion, r.version.Timestamp, r.version.Counter}); err != nil {
		return fmt.Errorf("timer: master progress: %w", err)
	}
	t.ms.rule.Store(r)
	return nil
}

// queueEnd is the commitlog position just past the timer-queue record at
// offset q-1 (0 for q = 0), and that record's store time: the records below
// it are those at offsets < q. It fails when that record cannot be read (a
// queue whose start has passed q-1 included: the rule is then not adopted,
// or dropped; the safe side).
func (t *TimerStore) queueEnd(q int64) (end, storeTs int64, ok bool) {
	if q <= 0 {
		return 0, 0, true
	}
	res := t.opts.Store.ReadQueue(message.TopicWheelTimer, 0, q-1, 1, maxGetBytes)
	if res == nil || res.Status != store.Found || len(res.Messages) == 0 {
		return 0, 0, false
	}
	ext, err := message.DecodeRecord(res.Messages[0])
	if err != nil || ext.QueueOffset != q-1 {
		return 0, 0, false
	}
	return ext.PhysicalOffset + int64(ext.StoreSize), ext.StoreTimestamp, true
}

// adoptPending adopts the newest copy if it has become adoptable (at a
// takeover); failures keep the previous rule and are logged.
func (t *TimerStore) adoptPending() {
	t.ms.mu.Lock()
	defer t.ms.mu.Unlock()
	if err := t.adoptLocked(); err != nil {
		t.log.Error().Err(err).Msg("timer: master progress not adopted")
	}
	t.checkRule()
}

// StockCheckpoint is this store's 5.3.3 TimerCheckpoint (the
// GET_TIMER_CHECK_POINT body), from its last durable checkpoint:
//
//	lastReadTimeMs          read time (every slot before it is delivered)
//	lastTimerLogFlushPos    TimerLog end the checkpoint covers
//	lastTimerQueueOffset    next timer-queue offset to read
//	masterTimerQueueOffset  the same (stock: the queue offset on a master)
//	dataVersion             0, time written, checkpoint sequence
//
// A store that does not deliver (a slave's) answers, as a 5.3.3 slave, the
// master's lastReadTimeMs, masterTimerQueueOffset and dataVersion it last
// copied (the adopted rule's after a restart), and the lower of its own
// queue offset and the master's as lastTimerQueueOffset.
func (t *TimerStore) StockCheckpoint() StockCheckpoint {
	t.mu.Lock()
	ck := t.lastCkpt
	delivering := t.started && !t.deqPaused.Load()
	t.mu.Unlock()
	c := StockCheckpoint{
		LastReadTimeMs: ck.readTimeMs, LastTimerLogFlushPos: ck.flushPos,
		LastTimerQueueOffset: ck.queueOffset, MasterTimerQueueOffset: ck.queueOffset,
		DataVersion: DataVersion{Timestamp: ck.writtenAtMs, Counter: int64(ck.seq)},
	}
	if delivering {
		return c
	}
	t.ms.mu.Lock()
	copied := t.ms.copied
	t.ms.mu.Unlock()
	switch r := t.ms.rule.Load(); {
	case copied != nil:
		c.LastReadTimeMs, c.MasterTimerQueueOffset, c.DataVersion = copied.ck.LastReadTimeMs, copied.ck.MasterTimerQueueOffset, copied.ck.DataVersion
	case r != nil:
		c.LastReadTimeMs, c.MasterTimerQueueOffset, c.DataVersion = r.readTimeMs, r.queueOffset, r.version
	}
	c.LastTimerQueueOffset = min(c.LastTimerQueueOffset, c.MasterTimerQueueOffset)
	return c
}
