package pop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/histo"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

// Defaults (BrokerConfig of 5.3.3 where stock has the setting).
const (
	// ReviveGroup is the consumer group stock reads the revive topic with.
	ReviveGroup = "CID_RMQ_SYS_REVIVE_GROUP"
	// MaxPopMsgs is the largest maxMsgNums a pop may ask for.
	MaxPopMsgs = 32
	// DefaultPersistInterval is how often the replay start is written.
	DefaultPersistInterval = 5 * time.Second
	// retryProbability is popFromRetryProbability (percent).
	retryProbability = 20
	// readBatch is how many revive records one read takes.
	readBatch = 256
	// reviveOffsetFile keeps the replay start (config/popReviveOffset.json).
	reviveOffsetFile = "popReviveOffset.json"
	permReadWrite    = topicgroup.PermRead | topicgroup.PermWrite
)

// Topics is the part of the broker's topic table the service uses.
type Topics interface {
	Get(topic string) *topicgroup.TopicConfig
	CreateSystemTopic(topic string, queueNums, perm int32) (*topicgroup.TopicConfig, bool)
}

// Groups finds (or auto-creates) subscription groups.
type Groups interface {
	FindOrCreate(group string) *topicgroup.SubscriptionGroupConfig
}

// Offsets are the consumer offsets (consumerOffset.json).
type Offsets interface {
	Query(group, topic string, queueID int32) (int64, bool)
	Commit(group, topic string, queueID int32, offset int64)
	Persist() error
}

// Putter stores a message through the broker's put hooks: the revive
// trigger carries TIMER_DELIVER_MS and goes to the timer store
// (*store.Store, without hooks, does for tests).
type Putter interface {
	PutMessage(m *message.Message) (*store.PutResult, error)
}

// Consumers lists the clients of a consumer group (QUERY_ASSIGNMENT).
type Consumers interface {
	ClientIDs(group string) []string
}

// PopCounter is told of every pop of one queue: the request topic, the
// group, whether the queue was the POP retry topic, and the messages and
// their stored bytes (the metrics' messages out). It runs under the
// service lock: it must only count.
type PopCounter interface {
	CountPop(topic, group string, retry bool, msgs, bytes int)
}

// Options wires a Service to the store and the broker's tables.
type Options struct {
	Store   *store.Store
	Put     Putter
	Topics  Topics
	Groups  Groups
	Offsets Offsets
	// ClusterName names the revive topic rmq_sys_REVIVE_LOG_<cluster>.
	ClusterName string
	BrokerName  string
	StoreHost   netip.AddrPort
	ConfigDir   string
	// FS carries the writes of the files under ConfigDir (store/vfs.go);
	// nil is the real file system.
	FS store.FS
	// TimerEnabled is timerWheelEnable: without the timer store a pop is
	// refused (stock: SYSTEM_ERROR).
	TimerEnabled bool
	// MaxInvisible bounds invisibleTime (the timer store's max delay).
	MaxInvisible    time.Duration
	PersistInterval time.Duration
	// ClientIDs lists the clients of a consumer group; nil: none but the
	// asking client.
	ClientIDs Consumers
	Clock     clock.Clock
	// MessageClock is the broker's message timeline (store timestamps, the
	// timer store): pop times, and so the invisible time's end that the
	// revive trigger carries to the timer store, are read from it, so that
	// a message revives at popTime+invisibleTime on the clock the timer
	// store compares with, never early when that clock runs ahead of the
	// wall clock (clockControlEnable, rmqtest). Long polling, persistence
	// and the client's bornTime check stay on Clock. Nil: Clock.
	MessageClock clock.Clock
	Logger       zerolog.Logger
	// OnPopped, when set, counts every pop (PopCounter).
	OnPopped PopCounter
	// Escape stores a revived message while the broker acts as master from
	// a SLAVE's store (the broker's escape bridge, takeover.go); nil
	// refuses such a revive, which then stays due.
	Escape Putter
}

// queueKey is one queue as a group pops it.
type queueKey struct {
	topic string
	group string
	qid   int32
}

// queueState is the pop cursor of one queue for one group and the offsets
// popped from it that are neither acked nor revived.
type queueState struct {
	cursor  int64
	pending map[int64]int // offset → live checkpoints holding it unacked
	live    int           // live checkpoints (an orderly queue pops again at 0)
	// counts are orderly delivery attempts of offsets not yet acked.
	counts map[int64]int32
	// countsFrom is the revive-queue offset the replay must start at to
	// rebuild counts after a rewind (the rewound checkpoint's ck record), -1
	// once a later ck record carries them.
	countsFrom int64
	committed  int64
}

// checkpoint is a live ck record.
type checkpoint struct {
	rec    ckRecord
	acked  []bool
	nacked int
	logOff int64 // revive-queue offset of the ck record
}

// Service is POP consumption: pop, ack, change of invisible time, revive.
type Service struct {
	opts        Options
	log         zerolog.Logger
	clock       clock.Clock
	msgClock    clock.Clock // Options.MessageClock
	reviveTopic string

	mu     sync.Mutex
	queues map[queueKey]*queueState
	cks    map[ckKey]*checkpoint
	// readPos is the next revive-queue offset the reader looks at; due
	// holds triggers read but not yet acted on (a failed revive waits here).
	readPos int64
	due     []ckKey
	// counters (Stats)
	revived, rewound, ackWrites int64
	// reviveIn counts ck and ack records written, by their outcome
	// (ReviveIn).
	reviveIn map[ReviveInKey]int64

	// scans times each pass of run over the revive log and the due
	// checkpoints (ScanTimes).
	scans *histo.Histogram

	polls *pollTable
	modes *ModeManager

	// held: revives wait (SetActive(false), takeover.go); a service on a
	// slave's store starts held.
	held bool
	// followed: the last read applied every record (following).
	followed bool

	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	started bool
	stopMu  sync.Once
}

// ReviveTopic is rmq_sys_REVIVE_LOG_<cluster> (PopAckConstants).
func ReviveTopic(cluster string) string { return "rmq_sys_REVIVE_LOG_" + cluster }

// New creates the revive topic, loads the request modes and replays the
// revive log from the persisted replay start (doc.go, Recovery).
func New(opts Options) (*Service, error) {
	if opts.Store == nil || opts.Put == nil || opts.Topics == nil || opts.Groups == nil || opts.Offsets == nil {
		return nil, errors.New("pop: Store, Put, Topics, Groups and Offsets are required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.MessageClock == nil {
		opts.MessageClock = opts.Clock
	}
	if opts.PersistInterval <= 0 {
		opts.PersistInterval = DefaultPersistInterval
	}
	if opts.MaxInvisible <= 0 {
		opts.MaxInvisible = 3 * 24 * time.Hour
	}
	s := &Service{
		opts: opts, log: opts.Logger, clock: opts.Clock, msgClock: opts.MessageClock, reviveTopic: ReviveTopic(opts.ClusterName),
		queues: make(map[queueKey]*queueState), cks: make(map[ckKey]*checkpoint),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		scans: histo.New(ScanTimeBoundsMs...), held: opts.Store.IsSlave(), followed: opts.Store.IsSlave(),
	}
	s.polls = newPollTable(s)
	var err error
	if s.modes, err = NewModeManager(filepath.Join(opts.ConfigDir, modeFileName)); err != nil {
		return nil, err
	}
	s.modes.fs = opts.FS
	if tc, _ := opts.Topics.CreateSystemTopic(s.reviveTopic, 1, permReadWrite); tc == nil {
		return nil, fmt.Errorf("pop: cannot create revive topic %s", s.reviveTopic)
	}
	start, err := s.loadReplayStart()
	if err != nil {
		return nil, err
	}
	// Replay needs every revive record in its consume queue: every one
	// consumers can see. Records above a controller-mode store's confirm
	// gate come later, when the role is known, and the service applies
	// them then (takeover.go: a slave follows the revive log, a new master
	// reads it to the end before reviving).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	err = opts.Store.WaitVisible(ctx, opts.Store.MaxPhyOffset())
	cancel()
	if err != nil {
		return nil, fmt.Errorf("pop: wait for dispatch before replay: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readPos = max(start, opts.Store.MinOffsetInQueue(s.reviveTopic, 0))
	replayed := s.readRevive(true)
	s.reviveDueOrFollow()
	s.log.Info().Int64("from", start).Int("records", replayed).Int("live", len(s.cks)).Msg("pop: revive log replayed")
	return s, nil
}

// Modes is the message request mode table (SET_MESSAGE_REQUEST_MODE).
func (s *Service) Modes() *ModeManager { return s.modes }

// Start runs the revive reader.
func (s *Service) Start() {
	s.started = true
	go s.run()
}

// Stop ends the reader and the parked pops and writes the replay start.
func (s *Service) Stop() error {
	var err error
	s.stopMu.Do(func() {
		close(s.stop)
		if s.started {
			<-s.done
		}
		s.polls.shutdown()
		err = s.persist()
	})
	return err
}

// Notify is called for every message dispatched to a consume queue.
func (s *Service) Notify(topic string, qid int32) {
	if topic == s.reviveTopic {
		select {
		case s.kick <- struct{}{}:
		default:
		}
		return
	}
	s.polls.arrived(topic)
}

func (s *Service) run() {
	defer close(s.done)
	next := s.clock.Now().Add(s.opts.PersistInterval)
	for {
		// Not NewTimer(next.Sub(Now())): the clock may move between the
		// two, and the timer would then wait past next.
		t := clock.TimerAt(s.clock, next)
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-s.kick:
			t.Stop()
		case <-t.C():
			if err := s.persist(); err != nil {
				s.log.Error().Err(err).Msg("pop: persist replay start")
			}
			next = s.clock.Now().Add(s.opts.PersistInterval)
		}
		begin := s.clock.Now()
		s.mu.Lock()
		s.readReviveAs()
		s.reviveDueOrFollow()
		s.mu.Unlock()
		s.scans.Observe(s.clock.Now().Sub(begin).Milliseconds())
	}
}

// ScanTimeBoundsMs are the buckets of
// rocketmq_pop_buffer_scan_time_consume_milliseconds (5.3.3
// PopMetricsManager: 1 ms to 3 s).
var ScanTimeBoundsMs = []int64{1, 10, 100, 1000, 2000, 3000}

// ScanTimes are the durations (ms) of the passes over the pop service's
// buffered state: each reads the revive log's new records and revives the
// due checkpoints, under the service lock. It is what 5.3.3 times as its
// PopBufferMergeService scan (rocketmq_pop_buffer_scan_time_consume): the
// periodic pass over the checkpoints held in memory, which rmq holds all of
// (acks are applied to them as they arrive, not merged by the pass).
func (s *Service) ScanTimes() histo.Snapshot { return s.scans.Snapshot() }

// readRevive reads the revive queue from readPos to its end. While
// replaying every record applies; live, the writers have already applied
// ck, ack and done records to memory and only triggers matter.
func (s *Service) readRevive(replay bool) int {
	n := 0
	for {
		res := s.opts.Store.GetMessage(s.reviveTopic, 0, s.readPos, readBatch, 1<<30, nil)
		if res.Status != store.Found {
			if res.NextBeginOffset > s.readPos && res.Status != store.OffsetOverflowBadly {
				s.readPos = res.NextBeginOffset
				continue
			}
			return n
		}
		for _, raw := range res.Messages {
			ext, err := message.DecodeRecord(raw)
			if err != nil {
				s.log.Warn().Err(err).Int64("offset", s.readPos).Msg("pop: unreadable revive record skipped")
				continue
			}
			s.apply(ext, replay)
			n++
		}
		s.readPos = res.NextBeginOffset
	}
}

func (s *Service) apply(ext *message.MessageExt, replay bool) {
	tag := ext.Properties[message.PropTags]
	if tag == tagTrigger {
		var r triggerRecord
		if json.Unmarshal(ext.Body, &r) == nil {
			s.due = append(s.due, r.ckKey)
		}
		return
	}
	if !replay {
		return
	}
	switch tag {
	case tagCheckpoint:
		var r ckRecord
		if json.Unmarshal(ext.Body, &r) != nil || s.cks[r.ckKey] != nil {
			return
		}
		qs := s.queueFor(r.queue(), -1, r.Start)
		if r.Order {
			qs.cursor = r.Next
		} else {
			qs.cursor = max(qs.cursor, r.Next)
		}
		s.addCheckpoint(r, ext.QueueOffset)
	case tagAck:
		var r ackRecord
		if json.Unmarshal(ext.Body, &r) != nil {
			return
		}
		if ck := s.cks[r.ckKey]; ck != nil {
			for _, off := range r.Offsets {
				s.markAcked(ck, off)
			}
		}
	case tagDone:
		var r doneRecord
		if json.Unmarshal(ext.Body, &r) != nil {
			return
		}
		if ck := s.cks[r.ckKey]; ck != nil {
			s.closeCheckpoint(ck, r.Rewind)
		}
	}
}

// queueFor returns the state of q, creating it from the committed offset
// (or, without one, from initMode: 0 = the queue's min offset, 1 = as
// stock's MAX; -1 = fallback).
func (s *Service) queueFor(q queueKey, initMode int, fallback int64) *queueState {
	if qs := s.queues[q]; qs != nil {
		return qs
	}
	off, ok := s.opts.Offsets.Query(q.group, q.topic, q.qid)
	if !ok {
		switch initMode {
		case 0:
			off = s.opts.Store.MinOffsetInQueue(q.topic, q.qid)
		case 1:
			// PopMessageProcessor.getInitOffset: a queue that still holds its
			// first message starts there (initPopOffsetByCheckMsgInMem), any
			// other at its last message.
			off = 0
			if s.opts.Store.MinOffsetInQueue(q.topic, q.qid) > 0 {
				off = max(0, s.opts.Store.MaxOffsetInQueue(q.topic, q.qid)-1)
			}
		default:
			off = fallback
		}
	}
	qs := &queueState{cursor: off, committed: -1, countsFrom: -1, pending: make(map[int64]int)}
	s.queues[q] = qs
	return qs
}

func (s *Service) addCheckpoint(r ckRecord, logOff int64) *checkpoint {
	ck := &checkpoint{rec: r, acked: make([]bool, len(r.Offsets)), logOff: logOff}
	s.cks[r.ckKey] = ck
	qs := s.queues[r.queue()]
	qs.live++
	if r.Order {
		qs.countsFrom = -1
	}
	for i, off := range r.Offsets {
		qs.pending[off]++
		if r.Order && i < len(r.Counts) {
			if qs.counts == nil {
				qs.counts = make(map[int64]int32)
			}
			qs.counts[off] = r.Counts[i]
		}
	}
	return ck
}

// markAcked records an ack of off in ck; false if off is not in ck or was
// acked already. A fully acked checkpoint is closed.
func (s *Service) markAcked(ck *checkpoint, off int64) bool {
	i := sort.Search(len(ck.rec.Offsets), func(i int) bool { return ck.rec.Offsets[i] >= off })
	if i == len(ck.rec.Offsets) || ck.rec.Offsets[i] != off || ck.acked[i] {
		return false
	}
	ck.acked[i] = true
	ck.nacked++
	qs := s.queues[ck.rec.queue()]
	s.release(qs, off)
	delete(qs.counts, off)
	if ck.nacked == len(ck.acked) {
		s.closeCheckpoint(ck, -1)
	} else {
		s.commit(ck.rec.queue(), qs)
	}
	return true
}

func (s *Service) release(qs *queueState, off int64) {
	if qs.pending[off]--; qs.pending[off] <= 0 {
		delete(qs.pending, off)
	}
}

// closeCheckpoint forgets ck: its offsets are acked or revived. rewind >= 0
// moves an orderly queue's cursor back to it.
func (s *Service) closeCheckpoint(ck *checkpoint, rewind int64) {
	if s.cks[ck.rec.ckKey] != ck {
		return
	}
	delete(s.cks, ck.rec.ckKey)
	qs := s.queues[ck.rec.queue()]
	qs.live--
	for i, off := range ck.rec.Offsets {
		if !ck.acked[i] {
			s.release(qs, off)
			if rewind >= 0 { // popped again: one attempt more (orderCountInfo)
				if qs.counts == nil {
					qs.counts = make(map[int64]int32)
				}
				qs.counts[off] = max(qs.counts[off], ck.rec.countAt(i)) + 1
			}
		}
	}
	if rewind >= 0 && (qs.countsFrom < 0 || ck.logOff < qs.countsFrom) {
		qs.countsFrom = ck.logOff
	}
	if rewind >= 0 && rewind < qs.cursor {
		qs.cursor = rewind
	}
	s.commit(ck.rec.queue(), qs)
}

// commit moves the consumer offset to the lowest offset still in flight, or
// to the cursor when none is.
func (s *Service) commit(q queueKey, qs *queueState) {
	off := qs.cursor
	for o := range qs.pending {
		off = min(off, o)
	}
	if off != qs.committed {
		qs.committed = off
		s.opts.Offsets.Commit(q.group, q.topic, q.qid, off)
	}
}

// reviveDue acts on the triggers read: the unacked messages of an ordinary
// checkpoint go to the POP retry topic (or the DLQ), an orderly one rewinds
// its queue. A trigger whose checkpoint is gone (acked, revived before a
// crash, or never written) is dropped. A revive the store refuses stays
// due and is tried again at the next read.
func (s *Service) reviveDue() {
	keep := s.due[:0]
	for _, k := range s.due {
		ck := s.cks[k]
		if ck == nil {
			continue
		}
		if err := s.revive(ck); err != nil {
			s.log.Warn().Err(err).Str("ck", k.String()).Msg("pop: revive failed, will retry")
			keep = append(keep, k)
		}
	}
	s.due = keep
}

func (s *Service) revive(ck *checkpoint) error {
	rewind := int64(-1)
	for i, off := range ck.rec.Offsets {
		if ck.acked[i] {
			continue
		}
		if ck.rec.Order {
			if rewind < 0 {
				rewind = off
			}
			continue
		}
		if err := s.reviveOne(ck, off); err != nil {
			return err
		}
	}
	if !s.following() { // an acting master cannot store it (takeover.go)
		if _, err := s.putRecord(tagDone, doneRecord{ck.rec.ckKey, rewind}); err != nil {
			return err
		}
	}
	s.closeCheckpoint(ck, rewind)
	if rewind >= 0 {
		s.rewound++
		s.polls.arrived(ck.rec.Topic)
	}
	return nil
}

func (r *ckRecord) countAt(i int) int32 {
	if i < len(r.Counts) {
		return r.Counts[i]
	}
	return 0
}

// reviveOne re-puts the message at off to the POP retry topic with its
// reconsume count raised (PopReviveService.reviveRetry), or to %DLQ%<group>
// once the group's retry budget is spent.
func (s *Service) reviveOne(ck *checkpoint, off int64) error {
	err := s.reput(ck.rec.ckKey, off, false)
	var gone *goneError
	if errors.As(err, &gone) {
		s.log.Warn().Err(err).Msg("pop: popped message not revived")
		return nil
	}
	if err == nil {
		s.revived++
	}
	return err
}

// goneError: the popped message is no longer in the store, or unreadable.
type goneError struct{ msg string }

func (e *goneError) Error() string { return e.msg }

// reput stores the message at off of k's queue again, on the POP retry
// topic with its reconsume count raised, or on %DLQ%<group> when the
// group's retry budget is spent or toDLQ asks for it.
func (s *Service) reput(k ckKey, off int64, toDLQ bool) error {
	res := s.opts.Store.GetMessage(k.Topic, k.QueueID, off, 1, 1<<30, nil)
	if res.Status != store.Found {
		return &goneError{fmt.Sprintf("message %s:%d:%d no longer in the store (%s)", k.Topic, k.QueueID, off, res.Status)}
	}
	orig, err := message.DecodeRecord(res.Messages[0])
	if err != nil {
		return &goneError{fmt.Sprintf("message %s:%d:%d unreadable: %v", k.Topic, k.QueueID, off, err)}
	}
	props := make(map[string]string, len(orig.Properties)+3)
	for key, v := range orig.Properties {
		props[key] = v
	}
	for _, key := range []string{message.PropDelay, message.PropTimerDeliverMs, message.PropTimerDelaySec,
		message.PropTimerDelayMs, message.PropTimerOutMs, PropPopCK, message.PropWait} {
		delete(props, key)
	}
	normal := k.Topic
	if retryFlag(k.Topic) != flagNormal {
		normal = props[message.PropRetryTopic]
	}
	if props[message.PropRetryTopic] == "" {
		props[message.PropRetryTopic] = orig.Topic
	}
	if props[message.PropOriginMessageID] == "" {
		props[message.PropOriginMessageID] = orig.MsgID
	}
	if props[PropFirstPopTime] == "" {
		props[PropFirstPopTime] = strconv.FormatInt(k.PopTime, 10)
	}
	maxTimes := int32(16)
	if g := s.opts.Groups.FindOrCreate(k.Group); g != nil {
		maxTimes = g.RetryMaxTimes
	}
	topic := RetryTopic(normal, k.Group)
	if toDLQ || orig.ReconsumeTimes+1 > maxTimes {
		topic = message.DLQTopic(k.Group)
	}
	if tc, _ := s.opts.Topics.CreateSystemTopic(topic, 1, permReadWrite); tc == nil {
		return fmt.Errorf("pop: cannot create %s", topic)
	}
	m := &message.Message{
		Topic: topic, QueueID: 0, Flag: orig.Flag, Body: orig.Body, Properties: props,
		SysFlag: orig.SysFlag, BornTimestamp: orig.BornTimestamp, BornHost: orig.BornHost,
		ReconsumeTimes: orig.ReconsumeTimes + 1,
	}
	if _, err := s.putRevived(m); err != nil {
		if store.IsPermanent(err) {
			s.log.Error().Err(err).Str("topic", topic).Msg("pop: revived message refused by the store, dropped")
			return nil
		}
		return err
	}
	return nil
}

// putRecord stores a record on the revive topic and returns its queue
// offset. Checkpoint and ack records are counted by outcome, as 5.x counts
// its CK and ACK puts to the revive topic (PopMetricsManager
// incPopReviveCkPutCount, incPopReviveAckPutCount).
func (s *Service) putRecord(tag string, body any) (int64, error) {
	res, err := s.opts.Store.PutMessage(&message.Message{
		Topic: s.reviveTopic, QueueID: 0, Body: marshal(body),
		Properties:    map[string]string{message.PropTags: tag},
		BornTimestamp: s.msgClock.Now().UnixMilli(), BornHost: s.opts.StoreHost,
	})
	var k ReviveInKey
	switch r := body.(type) {
	case ckRecord:
		k = ReviveInKey{Group: r.Group, Topic: r.Topic, Type: "CK"}
	case ackRecord:
		k = ReviveInKey{Group: r.Group, Topic: r.Topic, Type: "ACK"}
	}
	if k.Type != "" {
		k.Status = store.PutStatusName(res, err)
		if s.reviveIn == nil {
			s.reviveIn = make(map[ReviveInKey]int64)
		}
		s.reviveIn[k]++
	}
	if err != nil {
		return 0, err
	}
	return res.QueueOffset, nil
}

// putTrigger schedules the revive of k at due through the timer store.
func (s *Service) putTrigger(k ckKey, due int64) error {
	_, err := s.opts.Put.PutMessage(&message.Message{
		Topic: s.reviveTopic, QueueID: 0, Body: marshal(triggerRecord{k}),
		Properties: map[string]string{
			message.PropTags: tagTrigger, message.PropTimerDeliverMs: strconv.FormatInt(due, 10),
		},
		BornTimestamp: s.msgClock.Now().UnixMilli(), BornHost: s.opts.StoreHost,
	})
	return err
}

// persist writes the replay start: the revive-queue offset of the oldest
// live checkpoint (or the read position). Consumer offsets are persisted
// first, so that every checkpoint before the start is covered by them.
func (s *Service) persist() error {
	s.mu.Lock()
	start := s.readPos
	for _, ck := range s.cks {
		start = min(start, ck.logOff)
	}
	for _, qs := range s.queues {
		if qs.countsFrom >= 0 && len(qs.counts) > 0 {
			start = min(start, qs.countsFrom)
		}
	}
	s.mu.Unlock()
	if err := s.opts.Offsets.Persist(); err != nil {
		return err
	}
	b, _ := json.Marshal(map[string]int64{"offset": start})
	return store.WriteFileAtomic(s.opts.FS, filepath.Join(s.opts.ConfigDir, reviveOffsetFile), b)
}

func (s *Service) loadReplayStart() (int64, error) {
	b, err := os.ReadFile(filepath.Join(s.opts.ConfigDir, reviveOffsetFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var v struct {
		Offset int64 `json:"offset"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		// A damaged file costs a longer replay, never a lost checkpoint.
		s.log.Warn().Err(err).Msg("pop: replay start unreadable, replaying the whole revive log")
		return 0, nil
	}
	return max(v.Offset, 0), nil
}

// randomStart picks the first queue a pop of every queue looks at.
func randomStart(n int32) int32 {
	if n <= 1 {
		return 0
	}
	return rand.Int32N(n)
}

func rand100() int { return rand.IntN(100) }

// Stats are counters for tests and runtime info.
type Stats struct {
	InFlight  int   // popped messages neither acked nor revived
	ReadPos   int64 // next revive-queue offset the reader looks at
	Due       int   // triggers read whose revive is still to be done
	Parked    int   // long-polling requests waiting
	Revived   int64 // messages re-put to a retry topic or the DLQ
	Rewound   int64 // orderly checkpoints whose queue went back
	AckWrites int64 // ack records written
	// Checkpoints are the live checkpoints: pops whose messages hold the
	// consumer offset back until each is acked or revived (what 5.x
	// buffers per queue to commit offsets in order).
	Checkpoints int
	// ReviveBehindMs is how long the oldest trigger read but not yet
	// revived has been due (0: none).
	ReviveBehindMs int64
}

// ReviveInKey is one series of records written to the revive topic: the
// checkpoint's group and topic (the retry topic for a pop of it), CK or ACK
// (5.x PopReviveMessageType) and the put's PutMessageStatus name.
type ReviveInKey struct {
	Group, Topic, Type, Status string
}

// ReviveIn counts the ck and ack records written (rocketmq_pop_revive_in_message_total).
func (s *Service) ReviveIn() map[ReviveInKey]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.reviveIn)
}

// Stats returns the current counters.
func (s *Service) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{ReadPos: s.readPos, Due: len(s.due), Revived: s.revived, Rewound: s.rewound, AckWrites: s.ackWrites,
		Checkpoints: len(s.cks)}
	for _, ck := range s.cks {
		st.InFlight += len(ck.acked) - ck.nacked
	}
	// The oldest due revive not done: 5.x reports how long the revive
	// service's current checkpoint has been due (getReviveBehindMillis).
	now := s.msgClock.Now().UnixMilli()
	for _, k := range s.due {
		if ck := s.cks[k]; ck != nil {
			st.ReviveBehindMs = max(st.ReviveBehindMs, now-(k.PopTime+ck.rec.Invisible))
		}
	}
	s.polls.mu.Lock()
	st.Parked = s.polls.n
	s.polls.mu.Unlock()
	return st
}
