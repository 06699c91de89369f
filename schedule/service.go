package schedule

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/histo"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// Store is what the service needs of the message store.
type Store interface {
	// ReadQueue reads a delay level's queue; it does not count as a
	// consumer's get (store.Store.ReadQueue).
	ReadQueue(topic string, queueID int32, offset int64, maxMsgs, maxBytes int) *store.GetResult
	PutMessage(m *message.Message) (*store.PutResult, error)
	MinOffsetInQueue(topic string, queueID int32) int64
	MaxOffsetInQueue(topic string, queueID int32) int64
}

// DLQTopics registers a group's DLQ topic (a send-back would create it)
// before the service moves a retry message the store refuses there.
type DLQTopics interface {
	EnsureDLQ(topic string) bool
}

// Options configures the Service.
type Options struct {
	Levels     Levels
	Store      Store
	OffsetPath string // config/delayOffset.json
	Clock      clock.Clock
	// PersistInterval is how often changed offsets are written (flushDelayOffsetInterval).
	PersistInterval time.Duration
	// SyncCommits makes every batch commit of a level durable (an fsync of
	// delayOffset.json), for a broker whose deliveries are durable when
	// stored (SYNC_FLUSH): a power loss then re-delivers at most a batch per
	// level too. Otherwise a commit only outlives the process and the file
	// is synced every PersistInterval (offsetWriter).
	SyncCommits bool
	// RetryInterval is the pause after a failed delivery (stock DELAY_FOR_A_WHILE).
	RetryInterval time.Duration
	// Coalesce paces each level's delivery rounds (clock.Rounds): after a
	// round that delivered, messages due within Coalesce wait for its end
	// and go out together. Zero: each due millisecond is a round.
	Coalesce time.Duration
	// DeadLetterPath is the log of messages the store refuses for good and
	// that have no DLQ (store.Diverter); empty means deadletter/schedule.log
	// next to the directory of OffsetPath's directory (the store root when
	// OffsetPath is <root>/config/delayOffset.json).
	DeadLetterPath string
	// DLQTopics, when set, registers a DLQ topic before a refused retry
	// message is moved there (the broker's topic table).
	DLQTopics DLQTopics
	Logger    zerolog.Logger
	// FS carries every write and sync of delayOffset.json and the
	// dead-letter log (store/vfs.go); nil is the real file system. The
	// broker passes the store's Options.FS.
	FS store.FS

	// failpoint, when set (tests), is called at each named durability step;
	// an error simulates the death of the process at that point.
	failpoint func(name string) error
}

// Service delivers delay-level messages when they are due. Each level is a
// FIFO queue with one fixed delay, so its head gates the rest: one goroutine
// per level sleeps exactly until its head is due (or until a message arrives
// in an empty level) instead of polling.
type Service struct {
	opts    Options
	log     zerolog.Logger
	mu      sync.Mutex
	offsets map[int]int64 // level → next consume-queue offset to deliver
	dirty   bool
	notify  []chan struct{}
	// uncommitted counts, per level, the offsets moved past since the level
	// last wrote delayOffset.json; only the level's deliverDue touches it.
	uncommitted []int
	// rounds paces each level's delivery rounds (Coalesce), under mu: the
	// level's goroutine writes it, NextDue reads it.
	rounds []clock.Rounds
	// levelMu, per level, is held by the level's delivery round and by an
	// evacuation (Evacuate), the two writers of its offset.
	levelMu []sync.Mutex
	stop    chan struct{}
	// paused holds every level's delivery (SetActive): a slave acting as
	// master delivers only while its group has no master.
	paused  atomic.Bool
	wg      sync.WaitGroup
	started bool

	// pmu serialises offset-file writes, so that the last write holds the
	// newest snapshot; it guards w.
	pmu      sync.Mutex
	w        offsetWriter
	diverter *store.Diverter
	dead     atomic.Bool // a failpoint fired: nothing more is written

	delivered    atomic.Int64
	skipped      atomic.Int64
	toDLQ        atomic.Int64
	deadLettered atomic.Int64
	obs          *histo.Deliveries // lateness and the last deliveries (metrics.go)
}

// errCrashed is returned once a failpoint has killed the service (tests).
var errCrashed = errors.New("schedule: crashed at a failpoint")

// fp runs the failpoint name; true means the service is now dead.
func (s *Service) fp(name string) bool {
	if s.opts.failpoint == nil {
		return false
	}
	if s.opts.failpoint(name) != nil {
		s.dead.Store(true)
	}
	return s.dead.Load()
}

// errNotReady means the queue had a hole or was being cleaned: retry shortly.
var errNotReady = errors.New("schedule: consume queue not readable yet")

// New loads delayOffset.json and corrects offsets outside their queue's range
// (persisting the correction) so that no level stalls.
func New(opts Options) (*Service, error) {
	if len(opts.Levels) == 0 {
		return nil, fmt.Errorf("%w: no levels", ErrBadLevels)
	}
	if opts.Store == nil {
		return nil, errors.New("schedule: no store")
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	opts.FS = store.OrOS(opts.FS)
	if opts.PersistInterval <= 0 {
		opts.PersistInterval = 10 * time.Second
	}
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = 100 * time.Millisecond
	}
	if opts.Coalesce < 0 {
		return nil, fmt.Errorf("schedule: Coalesce %v is negative", opts.Coalesce)
	}
	if opts.DeadLetterPath == "" && opts.OffsetPath != "" {
		opts.DeadLetterPath = filepath.Join(filepath.Dir(filepath.Dir(opts.OffsetPath)), "deadletter", "schedule.log")
	}
	s := &Service{opts: opts, log: opts.Logger, stop: make(chan struct{}), offsets: map[int]int64{}, w: offsetWriter{fs: opts.FS, path: opts.OffsetPath}}
	s.diverter = &store.Diverter{
		Source: "schedule", Put: opts.Store.PutMessage, Path: opts.DeadLetterPath,
		Logger: opts.Logger, Clock: opts.Clock, FS: opts.FS,
	}
	if opts.DLQTopics != nil {
		s.diverter.EnsureDLQ = opts.DLQTopics.EnsureDLQ
	}
	s.obs = newDeliveries()
	s.notify = make([]chan struct{}, len(opts.Levels)+1)
	s.uncommitted = make([]int, len(opts.Levels)+1)
	s.rounds = make([]clock.Rounds, len(opts.Levels)+1)
	s.levelMu = make([]sync.Mutex, len(opts.Levels)+1)
	for i := range s.rounds {
		s.rounds[i].Window = opts.Coalesce.Milliseconds()
	}
	for i := range s.notify {
		s.notify[i] = make(chan struct{}, 1)
	}
	if opts.OffsetPath != "" {
		loaded, err := loadOffsets(opts.OffsetPath)
		if err != nil {
			return nil, err
		}
		for level, off := range loaded {
			if level >= 1 && level <= len(opts.Levels) {
				s.offsets[level] = off
			}
		}
	}
	corrected := false
	for level := 1; level <= len(opts.Levels); level++ {
		qid := int32(level - 1)
		lo, hi := opts.Store.MinOffsetInQueue(message.TopicSchedule, qid), opts.Store.MaxOffsetInQueue(message.TopicSchedule, qid)
		off := s.offsets[level]
		fixed := off
		if fixed < lo {
			fixed = lo
		}
		if fixed > hi {
			fixed = hi
		}
		if fixed != off {
			s.log.Warn().Int("delayLevel", level).Int64("offset", off).Int64("min", lo).Int64("max", hi).Int64("corrected", fixed).
				Msg("schedule: delay offset outside its queue, corrected")
			s.offsets[level] = fixed
			corrected = true
		}
	}
	if corrected {
		s.dirty = true
		// On a full disk the correction stays dirty for the persister: the
		// broker must start while the disk is full, and a lost correction
		// is only made again at the next start.
		if err := s.persist(true); errors.Is(err, store.ErrDiskFull) {
			s.log.Error().Err(err).Msg("schedule: corrected delay offsets not persisted, the disk is full; retried")
		} else if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// SetActive resumes (true) or holds (false) the delivery of every level; a
// Service starts active. Holding waits for the deliveries in progress:
// when it returns, nothing more is delivered until SetActive(true). The
// offsets are kept (and may be replaced meanwhile, ReplaceOffsets); a
// resumed level reads its queue from them.
func (s *Service) SetActive(on bool) {
	s.paused.Store(!on)
	for level := 1; level <= len(s.opts.Levels); level++ {
		if on {
			s.Notify(int32(level - 1))
			continue
		}
		s.levelMu[level].Lock()
		s.levelMu[level].Unlock() //nolint:staticcheck // a barrier: the delivery in progress ends first
	}
}

// Start runs one delivery goroutine per level and the offset persister.
func (s *Service) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return
	}
	s.started = true
	for level := 1; level <= len(s.opts.Levels); level++ {
		s.wg.Add(1)
		go s.runLevel(level)
	}
	s.wg.Add(1)
	go s.runPersist()
}

// Stop ends delivery and persists the offsets.
func (s *Service) Stop() error {
	s.mu.Lock()
	started := s.started
	s.started = false
	s.mu.Unlock()
	if started {
		close(s.stop)
		s.wg.Wait()
	}
	err := s.persist(true)
	s.pmu.Lock()
	s.w.close()
	s.pmu.Unlock()
	return err
}

// Notify tells the service that a message was dispatched to the schedule
// queue queueID (wired to the store's OnDispatch).
func (s *Service) Notify(queueID int32) {
	level := int(queueID) + 1
	if level < 1 || level >= len(s.notify) {
		return
	}
	select {
	case s.notify[level] <- struct{}{}:
	default:
	}
}

// Offsets returns a copy of the per-level progress.
func (s *Service) Offsets() map[int]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int]int64, len(s.offsets))
	for k, v := range s.offsets {
		out[k] = v
	}
	return out
}

// Stats are the service's counters since start.
type Stats struct {
	Delivered int64 // stored on their real topic
	Skipped   int64 // undecodable records, or records without a destination
	// Messages the store refused for good, moved aside so that their level
	// goes on (store.Diverter): to the group's DLQ, or to the dead-letter log.
	ToDLQ        int64
	DeadLettered int64
}

// Stats returns the counters.
func (s *Service) Stats() Stats {
	return Stats{Delivered: s.delivered.Load(), Skipped: s.skipped.Load(), ToDLQ: s.toDLQ.Load(), DeadLettered: s.deadLettered.Load()}
}

// Pending is the number of messages stored on the schedule topic not yet delivered.
func (s *Service) Pending() int64 {
	var n int64
	for level := 1; level <= len(s.opts.Levels); level++ {
		hi := s.opts.Store.MaxOffsetInQueue(message.TopicSchedule, int32(level-1))
		n += hi - s.offset(level)
	}
	return n
}

// NextDue tells a driver of the service clock (package rmqtest) where
// delivery stands: busy while some level has a message due at the clock's
// now that is not delivered yet, else the earliest time a level's head falls
// due (ok false: every level is empty). It only reads.
func (s *Service) NextDue() (next time.Time, ok, busy bool) {
	nowMs := s.opts.Clock.Now().UnixMilli()
	for level := 1; level <= len(s.opts.Levels); level++ {
		qid := int32(level - 1)
		// The offset and the level's last round are read together: the
		// loop moves the offset past what it delivered before it records
		// the round (deliverDue), so a snapshot that holds the new round
		// holds the new offset. Read apart, the old head could meet the
		// new round and look due at the round's window end, after now:
		// "not busy, next due in 5 ms" for a message being delivered.
		s.mu.Lock()
		off, round := s.offsets[level], s.rounds[level]
		s.mu.Unlock()
		res := s.opts.Store.ReadQueue(message.TopicSchedule, qid, off, 1, 4<<20)
		switch {
		case res == nil:
			return time.Time{}, false, false // store closed
		case res.Status == store.Found:
			ext, _, err := message.DecodeRecordText(res.Messages[0])
			if err != nil {
				return time.Time{}, false, true // the level skips it
			}
			due := round.Next(s.opts.Levels.DeliverAt(level, ext.StoreTimestamp))
			if due <= nowMs {
				return time.Time{}, false, true
			}
			if at := time.UnixMilli(due); !ok || at.Before(next) {
				next, ok = at, true
			}
		case off < s.opts.Store.MaxOffsetInQueue(message.TopicSchedule, qid):
			return time.Time{}, false, true // a hole or a correction in progress
		}
	}
	return next, ok, false
}

// roundAt is when level delivers a message due at dueMs: then, or at the
// end of the window of its last delivery round (Coalesce).
func (s *Service) roundAt(level int, dueMs int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rounds[level].Next(dueMs)
}

func (s *Service) offset(level int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offsets[level]
}

func (s *Service) setOffset(level int, off int64) {
	s.mu.Lock()
	if s.offsets[level] != off {
		s.offsets[level] = off
		s.dirty = true
	}
	s.mu.Unlock()
}

// persist writes the offsets when they changed; sync makes them durable
// (also when an earlier write left them only in the page cache), else they
// only outlive the process (offsetWriter).
func (s *Service) persist(sync bool) error {
	if s.opts.OffsetPath == "" || s.dead.Load() {
		return nil
	}
	s.pmu.Lock()
	defer s.pmu.Unlock()
	s.mu.Lock()
	if !s.dirty {
		s.mu.Unlock()
		if sync {
			return s.w.sync()
		}
		return nil
	}
	snap := make(map[int]int64, len(s.offsets))
	for k, v := range s.offsets {
		snap[k] = v
	}
	s.dirty = false
	s.mu.Unlock()
	if err := s.w.write(snap, sync); err != nil {
		s.mu.Lock()
		s.dirty = true
		s.mu.Unlock()
		return err
	}
	return nil
}

func (s *Service) runPersist() {
	defer s.wg.Done()
	for {
		t := s.opts.Clock.NewTimer(s.opts.PersistInterval)
		select {
		case <-t.C():
			if err := s.persist(true); err != nil {
				s.log.Error().Err(err).Msg("schedule: persist delay offsets")
			}
		case <-s.stop:
			t.Stop()
			return
		}
	}
}

func (s *Service) runLevel(level int) {
	defer s.wg.Done()
	for {
		now := s.opts.Clock.Now()
		s.levelMu[level].Lock()
		if s.paused.Load() {
			// Read under the level's lock: SetActive(false) takes it after
			// the flag, so no delivery starts once it returned.
			s.levelMu[level].Unlock()
			select {
			case <-s.notify[level]: // SetActive(true) signals every level
			case <-s.stop:
				return
			}
			continue
		}
		next, idle, err := s.deliverDue(level, now)
		s.levelMu[level].Unlock()
		var t clock.Timer
		switch {
		case errors.Is(err, errCrashed):
			return
		case err != nil:
			s.log.Warn().Err(err).Int("delayLevel", level).Msg("schedule: delivery paused")
			t = s.opts.Clock.NewTimer(s.opts.RetryInterval)
		case idle:
			// nothing stored: wait for a dispatch notification
		default:
			// TimerAt: a timer made from a reading of the clock taken
			// before it moved would fire late; a head already due is
			// served at once. Rounds are paced (Coalesce) only here,
			// between calls: one call delivers all that is due.
			next = s.roundAt(level, next)
			t = clock.TimerAt(s.opts.Clock, time.UnixMilli(next))
			if !s.opts.Clock.Now().Before(time.UnixMilli(next)) {
				t.Stop()
				continue
			}
		}
		var tc <-chan time.Time
		if t != nil {
			tc = t.C()
		}
		// A level is FIFO with one delay, so a message stored after the head
		// is never due before it: while a head is timed, arrivals need not
		// wake the level (at a high send rate every dispatch would otherwise
		// re-read the queue head). Its notification stays buffered.
		notify := s.notify[level]
		if !idle && err == nil {
			notify = nil
		}
		select {
		case <-tc:
		case <-notify:
			if t != nil {
				t.Stop()
			}
		case <-s.stop:
			if t != nil {
				t.Stop()
			}
			return
		}
	}
}

// deliverBatch is the most messages a level delivers between two writes of
// delayOffset.json: a crash re-delivers at most this many per level.
const deliverBatch = 32

// commitIdle is how long a level may wait for its next message with
// deliveries not yet written to delayOffset.json: a longer wait writes them
// first. Messages due every millisecond or so (a steady send rate) thus
// share a write, up to deliverBatch of them, instead of paying one each.
const commitIdle = 10 * time.Millisecond

// deliverDue delivers every message of level due at now. It returns the
// deliver time (ms) of the first message not yet due, or idle when the level
// has nothing left to deliver.
//
// The level's offset is written to delayOffset.json (commit) before a read
// could take the uncommitted deliveries past deliverBatch, and on return
// unless the next message is due within commitIdle: a crash re-delivers at
// most deliverBatch messages, never what was delivered before. A call that
// delivered something is the level's last round (Coalesce).
func (s *Service) deliverDue(level int, now time.Time) (next int64, idle bool, err error) {
	delivered := false
	commit := func() bool {
		if s.fp("deliver:before-commit") {
			return false
		}
		if perr := s.persist(s.opts.SyncCommits); perr != nil {
			s.log.Error().Err(perr).Int("delayLevel", level).Msg("schedule: persist delay offsets")
		}
		s.uncommitted[level] = 0
		return true
	}
	defer func() {
		if delivered {
			s.mu.Lock()
			s.rounds[level].Delivered(now.UnixMilli())
			s.mu.Unlock()
		}
		if s.uncommitted[level] == 0 || s.dead.Load() || errors.Is(err, errCrashed) {
			return
		}
		if err == nil && !idle && next-now.UnixMilli() <= commitIdle.Milliseconds() {
			return // the next message is due soon: its commit covers these
		}
		if !commit() {
			next, idle, err = 0, false, errCrashed
		}
	}()
	nowMs := now.UnixMilli()
	qid := int32(level - 1)
	off := s.offset(level)
	moved := func(to int64) {
		s.uncommitted[level] += int(to - off)
		off = to
		s.setOffset(level, off)
	}
	for {
		if s.uncommitted[level] >= deliverBatch && !commit() {
			return 0, false, errCrashed
		}
		res := s.opts.Store.ReadQueue(message.TopicSchedule, qid, off, deliverBatch-s.uncommitted[level], 4<<20)
		switch res.Status {
		case store.Found:
			for i, raw := range res.Messages {
				ext, props, derr := message.DecodeRecordText(raw)
				if derr != nil {
					s.skipped.Add(1)
					s.log.Error().Err(derr).Int("delayLevel", level).Int64("offset", off+int64(i)).Msg("schedule: undecodable record skipped")
					moved(off + 1)
					continue
				}
				due := s.opts.Levels.DeliverAt(level, ext.StoreTimestamp)
				if due > nowMs {
					return due, false, nil
				}
				if err := s.deliver(ext, props); err != nil {
					return 0, false, err
				}
				s.observe(level, props, due, nowMs)
				delivered = true
				if s.fp("deliver:after-put") {
					return 0, false, errCrashed
				}
				moved(ext.QueueOffset + 1)
			}
		case store.OffsetOverflowOne:
			return 0, true, nil
		case store.NoMessageInQueue, store.NoMatchedLogicQueue:
			if off != 0 {
				s.correct(level, off, 0)
			}
			return 0, true, nil
		case store.OffsetTooSmall, store.OffsetOverflowBadly:
			s.correct(level, off, res.NextBeginOffset)
			off = res.NextBeginOffset
		default:
			if res.NextBeginOffset > off {
				moved(res.NextBeginOffset)
				continue
			}
			return 0, false, errNotReady
		}
	}
}

func (s *Service) correct(level int, from, to int64) {
	s.log.Warn().Int("delayLevel", level).Int64("offset", from).Int64("corrected", to).Msg("schedule: delay offset outside its queue, corrected")
	s.setOffset(level, to)
	if err := s.persist(true); err != nil {
		s.log.Error().Err(err).Msg("schedule: persist corrected delay offset")
	}
}

// deliver stores the message on its real topic and queue. Like stock
// messageTimeup it keeps body, flag, properties, sysFlag, born fields and
// reconsumeTimes; DELAY is dropped so that a consumer re-sending the message
// object does not delay it again. ext comes without its properties map
// (message.DecodeRecordText): props is the text, which is read and edited
// in place of a map.
func (s *Service) deliver(ext *message.MessageExt, props message.Props) error {
	realTopic := props.Get(message.PropRealTopic)
	qid, qerr := strconv.Atoi(props.Get(message.PropRealQueueID))
	if realTopic == "" || qerr != nil || realTopic == message.TopicTransHalf {
		s.skipped.Add(1)
		s.log.Error().Str("realTopic", realTopic).Str("realQid", props.Get(message.PropRealQueueID)).Int64("phyOffset", ext.PhysicalOffset).
			Msg("schedule: message without a deliverable destination skipped")
		return nil
	}
	m := &message.Message{
		Topic: realTopic, QueueID: int32(qid), Flag: ext.Flag, Body: ext.Body,
		RawProperties: message.EditProperties(string(props), []string{message.PropDelay}),
		SysFlag:       ext.SysFlag, BornTimestamp: ext.BornTimestamp, BornHost: ext.BornHost,
		ReconsumeTimes: ext.ReconsumeTimes, PreparedTransactionOffset: ext.PreparedTransactionOffset,
		Delivery: true,
	}
	_, err := s.opts.Store.PutMessage(m)
	switch {
	case err == nil:
		s.delivered.Add(1)
		return nil
	case store.IsPermanent(err):
		// Never again storable: retrying would hold up every message behind
		// it on this level, for every topic. Move it aside and go on.
		where, derr := s.diverter.Divert(m, ext.PhysicalOffset, fmt.Errorf("deliver to %s/%d: %w", realTopic, qid, err))
		if derr != nil {
			return fmt.Errorf("schedule: deliver to %s/%d: %w; %w", realTopic, qid, err, derr)
		}
		if where == store.ToDLQ {
			s.toDLQ.Add(1)
		} else {
			s.deadLettered.Add(1)
		}
		return nil
	default:
		return fmt.Errorf("schedule: deliver to %s/%d: %w", realTopic, qid, err)
	}
}
