package timer

import (
	"errors"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/histo"
	"github.com/rmqio/rmq/store"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// ErrClosed is returned by calls on a stopped TimerStore.
var ErrClosed = errors.New("timer: closed")

// errCrashed is returned internally after a failpoint simulated a crash.
var errCrashed = errors.New("timer: simulated crash")

// TimerStore delivers timer messages at their time. See doc.go for the design.
type TimerStore struct {
	opts Options
	log  zerolog.Logger
	p    int64 // precision (ms)
	span int64 // ring span (ms)
	roll int64 // roll window (ms)
	// deqPaused holds the dequeue (SetDequeue); deqMu is held around each
	// dequeue step, so that holding waits for the one in progress.
	deqPaused atomic.Bool
	deqMu     sync.Mutex

	delPath string
	ckf     *checkpointFile

	// flushMu serialises flush and TimerLog cleanup (which unmaps segments
	// that flush syncs without holding mu).
	flushMu sync.Mutex

	mu          sync.Mutex
	tl          *timerLog
	wh          *wheel
	dels        *deleteSet
	queueOffset int64 // next timer consume-queue offset to read
	readTime    int64 // every slot before it is done; the only slot being read is readTime
	open        *openSlot
	resume      *resumePoint     // checkpointed progress inside slot resume.t
	nonEmpty    slotHeap         // times of slots that got units, lazily pruned below readTime
	liveNum     int64            // units linked into slots at or after readTime
	delivered   map[string]int64 // key → due time of deliveries from slots not yet closed
	deqWakeAt   int64            // the dequeue sleeps until then; earlier links wake it
	rounds      clock.Rounds     // paces the dequeue's rounds (Coalesce); written by the dequeue under mu
	enqPaused   bool             // the enqueue waits for readTime to move
	lagWarned   bool
	// appendFailing: the last TimerLog append failed (a full disk); the
	// enqueue retries every RetryInterval and logs the first failure only.
	appendFailing bool
	lastCkpt      checkpoint // the durable checkpoint
	lastClean     int64
	// committed counts deliveries, rolls and marker drops the in-memory
	// progress (cursor, read time, queue offset) covers; durableCommitted is
	// its value in the last durable checkpoint. Their difference is what a
	// crash now would redo (tests bound duplicates with it).
	committed, durableCommitted int64
	// commitRequested: the dequeue asked for a commit that no flush has
	// snapshotted yet. deqWaitsCommit: the dequeue waits for the end of a
	// flush (the commit window is full). commitFailed: the last flush failed,
	// so the next batch goes out anyway.
	commitRequested, deqWaitsCommit, commitFailed bool
	// Units below tlOpenEnd were written before this Open; a unit there
	// pointing beyond clMaxAtOpen refers to commitlog bytes lost since.
	tlOpenEnd   int64
	clMaxAtOpen int64
	rates       rateWindow
	obs         *histo.Deliveries // lateness and the last deliveries (metrics.go)
	// setLatency and lastRead are the enqueue figures 5.x records when it
	// reads the timer queue (metrics.go).
	setLatency *histo.ByKey[string]
	lastRead   lastRead

	enqWake chan struct{}
	deqWake chan struct{}
	// commitWake wakes the flush goroutine for a commit the dequeue asked for.
	commitWake chan struct{}
	stop       chan struct{}
	stopOnce   sync.Once
	wg         sync.WaitGroup
	started    bool
	closed     bool
	dead       atomic.Bool

	c        counters
	diverter *store.Diverter
	ms       masterState // the master's progress copied on a slave (master.go)
	timing   timing      // timer messages in the wheel by real topic (timing.go)

	// Evacuation (retention.go): evac maps the TimerLog position of a unit
	// whose message Evacuate is re-storing (false) or re-stored (true),
	// under evMu (taken inside mu, never the reverse); evacPin, under mu,
	// is the commitlog offset below which no pending timer needs its record.
	evMu    sync.Mutex
	evac    map[int64]bool
	evacPin int64
}

type counters struct {
	enqueued, delivered, rolled, bypassed, deleted, skipped, putRetries, markers atomic.Int64
	appendFailures                                                               atomic.Int64
	toDLQ, deadLettered, evacuated                                               atomic.Int64
}

// Open opens the timer store under opts.Dir and recovers it: TimerLog units
// not covered by the checkpoint are discarded (their messages are read again
// from the timer consume queue), wheel slots pointing at them are repaired or
// the wheel is rebuilt from the TimerLog, and every checkpoint value is clamped
// to what the TimerLog and the consume queue really hold. The recovered state
// is made durable before Open returns, except on a full disk: the broker must
// start while the disk is full (refusing sends is how it tells producers),
// so Open then returns the store with the flush goroutine to retry. That
// state is the one a crash in the middle of this flush would leave, which
// recovery handles: the checkpoint is written last and only once every
// file it covers is.
// Call Start to run it.
func Open(opts Options) (*TimerStore, error) {
	opts, err := opts.normalized()
	if err != nil {
		return nil, err
	}
	t := &TimerStore{
		opts: opts, log: opts.Logger, p: opts.PrecisionMs, span: opts.WheelSlots * opts.PrecisionMs,
		roll:       opts.RollWindow.Milliseconds(),
		delPath:    filepath.Join(opts.Dir, "config", "timerdelete.json"),
		delivered:  map[string]int64{},
		evac:       map[int64]bool{},
		obs:        histo.NewDeliveries(recentDeliveries),
		setLatency: histo.NewByKey[string](SetLatencyBoundsS...),
		deqWakeAt:  math.MaxInt64,
		rounds:     clock.Rounds{Window: opts.Coalesce.Milliseconds()},
		enqWake:    make(chan struct{}, 1),
		deqWake:    make(chan struct{}, 1),
		commitWake: make(chan struct{}, 1),
		stop:       make(chan struct{}),
	}
	t.diverter = &store.Diverter{
		Source: "timer", Put: opts.Store.PutMessage, Path: opts.DeadLetterPath,
		Logger: opts.Logger, Clock: opts.Clock, FS: opts.FS,
	}
	if opts.DLQTopics != nil {
		t.diverter.EnsureDLQ = opts.DLQTopics.EnsureDLQ
	}
	if err := os.MkdirAll(filepath.Join(opts.Dir, "config"), 0o755); err != nil {
		return nil, err
	}
	var ck checkpoint
	var ok bool
	if t.ckf, ck, ok, err = openCheckpoint(opts.FS, filepath.Join(opts.Dir, "config", "timercheck")); err != nil {
		return nil, err
	}
	t.loadTiming(filepath.Join(opts.Dir, "config", "timermetrics"))
	if err := t.openMaster(); err != nil {
		t.closeFiles()
		return nil, err
	}
	if t.tl, err = openTimerLog(opts.FS, filepath.Join(opts.Dir, "timerlog"), opts.MappedFileSizeTimerLog); err != nil {
		t.closeFiles()
		return nil, err
	}
	var wheelFresh bool
	if t.wh, wheelFresh, err = openWheel(opts.FS, filepath.Join(opts.Dir, "timerwheel"), opts.WheelSlots, opts.PrecisionMs); err != nil {
		t.closeFiles()
		return nil, err
	}
	if t.dels, err = loadDeleteSet(t.delPath); err != nil {
		// Refusing to start would stop every timer message for the sake of
		// some recalls: go on without them, loudly.
		t.log.Error().Err(err).Str("path", t.delPath).Msg("timer: delete set unreadable, pending recalls are lost")
		t.dels = &deleteSet{m: map[string]deleteEntry{}, dirty: true}
	}
	if err := t.recover(ck, ok, wheelFresh); err != nil {
		t.closeFiles()
		return nil, err
	}
	if err := t.flush(); errors.Is(err, store.ErrDiskFull) {
		t.log.Error().Err(err).Msg("timer: recovered state not yet durable, the disk is full; the flush retries")
	} else if err != nil {
		t.closeFiles()
		return nil, err
	}
	return t, nil
}

// Start runs the enqueue, dequeue and flush goroutines.
func (t *TimerStore) Start() {
	if !t.deqPaused.Load() {
		t.adoptPending() // taking over: the newest copy of the master's progress, if replicated
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started || t.closed {
		return
	}
	t.started = true
	t.wg.Add(3)
	go t.runEnqueue()
	go t.runDequeue()
	go t.runFlush()
}

// Stop ends the goroutines (a delivery batch in progress is finished), makes
// everything durable, writes the checkpoint and closes the files.
func (t *TimerStore) Stop() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.mu.Unlock()
	t.halt()
	t.wg.Wait()
	var err error
	if !t.dead.Load() {
		err = t.flush()
	}
	return errors.Join(err, t.closeFiles())
}

// Flush makes the current progress durable now (the flush goroutine does it
// every FlushInterval).
func (t *TimerStore) Flush() error {
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return t.flush()
}

// Notify wakes the enqueue stage: new messages reached the timer consume
// queue. Wire it to the store's OnDispatch for message.TopicWheelTimer. A nil
// TimerStore ignores it, so the hook may be installed before the timer store
// is opened.
func (t *TimerStore) Notify() {
	if t == nil {
		return
	}
	signal(t.enqWake)
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (t *TimerStore) halt() { t.stopOnce.Do(func() { close(t.stop) }) }

func (t *TimerStore) stopping() bool {
	select {
	case <-t.stop:
		return true
	default:
		return false
	}
}

// fp runs the named failpoint; true means the process is to be considered
// dead from here on: the caller abandons its work without further effects.
func (t *TimerStore) fp(name string) bool {
	if t.dead.Load() {
		return true
	}
	if t.opts.failpoint == nil {
		return false
	}
	if err := t.opts.failpoint(name); err != nil {
		t.log.Warn().Str("failpoint", name).Err(err).Msg("timer: failpoint fired")
		t.dead.Store(true)
		t.halt()
		return true
	}
	return false
}

// crash simulates the death of the process (tests): goroutines end at their
// next step, nothing more is flushed, files are closed as they are.
func (t *TimerStore) crash() {
	t.kill()
	t.closeFiles()
}

// kill stops every goroutine without any further effect (tests).
func (t *TimerStore) kill() {
	t.dead.Store(true)
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.halt()
	t.wg.Wait()
}

func (t *TimerStore) closeFiles() error {
	var errs []error
	if t.tl != nil {
		errs = append(errs, t.tl.close())
	}
	if t.wh != nil {
		errs = append(errs, t.wh.close())
	}
	if t.ckf != nil {
		errs = append(errs, t.ckf.close())
	}
	if t.ms.file != nil {
		errs = append(errs, t.ms.file.Close())
	}
	return errors.Join(errs...)
}

func (t *TimerStore) nowMs() int64 { return t.opts.Clock.Now().UnixMilli() }

// slotOf is the time of the slot holding ms.
func (t *TimerStore) slotOf(ms int64) int64 {
	s := ms / t.p * t.p
	if ms < 0 && ms%t.p != 0 {
		s -= t.p
	}
	return s
}

// waitUntil blocks until the clock reaches deadlineMs (MaxInt64: no deadline),
// wake is signalled, or the store stops. It reports false on stop.
func (t *TimerStore) waitUntil(deadlineMs int64, wake <-chan struct{}) bool {
	var tc <-chan time.Time
	if deadlineMs != math.MaxInt64 {
		if !t.opts.Clock.Now().Before(time.UnixMilli(deadlineMs)) {
			return !t.stopping()
		}
		// TimerAt: a clock moved between a reading and the timer made from
		// it (a manual clock in tests) would push the timer past the
		// deadline.
		timer := clock.TimerAt(t.opts.Clock, time.UnixMilli(deadlineMs))
		defer timer.Stop()
		tc = timer.C()
	}
	select {
	case <-tc:
		return true
	case <-wake:
		return true
	case <-t.stop:
		return false
	}
}
