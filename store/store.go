package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/message"
)

// Paths under Options.Dir.
const (
	commitLogDir    = "commitlog"
	consumeQueueDir = "consumequeue"
	configDir       = "config"
	checkpointName  = "checkpoint"
	abortName       = "abort"
	lockName        = "lock"
)

// queueKey names one consume queue.
type queueKey struct {
	topic   string
	queueID int32
}

// Store is the message store: a commitlog, consume queues fed from it by a
// dispatch goroutine, flush goroutines and a checkpoint. All methods are safe
// for concurrent use.
type Store struct {
	opts Options
	log  zerolog.Logger
	cl   *commitLog
	ckpt *checkpointFile
	lock *os.File

	// storeHost, once SetStoreHost ran, replaces Options.StoreHost (storehost.go).
	storeHost atomic.Pointer[netip.AddrPort]
	// slave refuses every put with ErrSlave (role.go).
	slave atomic.Bool

	// putMu serialises appends; queue offsets are assigned under it.
	putMu        sync.Mutex
	queueOffsets map[queueKey]int64 // next queue offset per queue
	// lmqQueues counts the consume queues of LMQ topics (lmq.go).
	lmqQueues atomic.Int64
	// multiSkips counts multi-dispatch units past their queue's end.
	multiSkips atomic.Int64
	// busy times the holder of putMu (pagecache_busy.go).
	busy pageCacheBusy
	// replPending holds replicated bytes of a record not complete yet,
	// from commitlog offset replBase (replica.go).
	replPending []byte
	replBase    int64
	replNames   topicNames // topic strings of replicated records (followReplicated)

	// confirm is the dispatch gate, -1 for none (confirm.go); confirmMu
	// guards the confirm file and the value last saved in it.
	confirm      atomic.Int64
	confirmMu    sync.Mutex
	confirmSF    *SlotFile
	confirmSaved int64
	// truncPending is the offset of a cut TruncateTo could not complete
	// (truncate.go), -1 otherwise.
	truncPending atomic.Int64
	truncOldEnd  int64 // the commitlog end before that cut; putMu guards it

	cqMu      sync.RWMutex
	cqs       map[string]map[int32]*consumeQueue
	cqFlushMu sync.Mutex // serialises consume-queue flushes and checkpoint writes

	// Dispatch: reput is the commitlog offset below which every record has been
	// dispatched.
	reput atomic.Int64
	// caughtUpTo is the dispatch limit (confirm.go dispatchLimit) of the
	// dispatcher's last pass that found nothing more to dispatch: with a
	// gate inside a record, reput stays below the gate, and WaitVisible
	// tells "held by the gate" from "not dispatched yet" by this.
	caughtUpTo atomic.Int64
	pending    []pendingDispatch // dispatcher-owned batch buffer
	topicNames topicNames        // dispatcher-owned: the topics its records named
	// cursor: dispatcher-owned; every record below it is dispatched or
	// waits in deferred for its consume-queue file, which creator makes
	// (dispatch_defer.go; nil during Open's recovery pass).
	//
	// "Dispatcher-owned" state (pending, topicNames, cursor, deferred and
	// the OnDispatch hooks' own) is touched only by whoever holds
	// dispatchMu: the dispatcher goroutine, or a put dispatching its own
	// records (dispatch_own.go).
	dispatchMu      sync.Mutex
	indexHeld       bool // a put dispatching its own records holds the index lock (holdFor)
	cursor          int64
	deferred        map[queueKey]*deferral
	deferredRecs    int // records in deferred
	creator         *fileCreator
	dispatchWake    chan struct{}
	stopDispatch    chan struct{}
	dispatchWG      sync.WaitGroup
	dispatchStopped atomic.Bool
	// dispatchStalled is set while the dispatcher cannot put the record at
	// reput in its consume queue or index (dispatch.go), dispatchStall
	// says why; puts are refused meanwhile.
	dispatchStalled atomic.Bool
	dispatchStall   atomic.Pointer[dispatchStall]
	progressMu      sync.Mutex
	progress        chan struct{} // closed and replaced after a dispatch pass, if watched
	progressWatched atomic.Bool   // progress was handed out since it was made

	// Flush: flushEpoch is closed and replaced after each commitlog flush.
	flushWake    chan struct{}
	flushEpochMu sync.Mutex
	flushEpoch   chan struct{}
	stopFlush    chan struct{}
	flushWG      sync.WaitGroup
	waiters      flushWaiters // OnFlushed callbacks (commitlog_flushwait.go)

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error

	// index is set by Open after recovery (nil when disabled); only the
	// dispatcher (dispatchMu's holder) writes to it, and only the dispatch
	// goroutine rolls it over to a new file.
	index *indexService

	stats    storeStats
	recovery recoveryStats
	bootTime time.Time

	// Disk guard and cleanup (disk.go, cleanup.go).
	diskFull       atomic.Bool
	disk           atomic.Pointer[diskState]
	ret            atomic.Pointer[RetentionOptions] // in force (SetRetention)
	sinceDiskCheck atomic.Int64                     // put bytes since the last disk check
	diskCheckWake  chan struct{}
	cleanWake      chan struct{}
	manualDelete   atomic.Int32 // forced rounds left
	cleanMu        sync.Mutex   // one cleanup round at a time; guards clean
	clean          cleanState
}

// Open creates the directories if needed, locks the store, recovers the
// commitlog and consume queues, and starts the dispatch and flush goroutines.
func Open(opts Options) (*Store, error) {
	o, err := opts.normalized()
	if err != nil {
		return nil, err
	}
	s := &Store{
		opts:          o,
		topicNames:    make(topicNames),
		log:           o.Logger.With().Str("component", "store").Logger(),
		queueOffsets:  make(map[queueKey]int64),
		cqs:           make(map[string]map[int32]*consumeQueue),
		dispatchWake:  make(chan struct{}, 1),
		stopDispatch:  make(chan struct{}),
		progress:      make(chan struct{}),
		flushWake:     make(chan struct{}, 1),
		flushEpoch:    make(chan struct{}),
		stopFlush:     make(chan struct{}),
		bootTime:      o.Clock.Now(),
		diskCheckWake: make(chan struct{}, 1),
		cleanWake:     make(chan struct{}, 1),
	}
	s.stats.times.init(s.bootTime)
	s.confirm.Store(-1)
	s.truncPending.Store(-1)
	s.ret.Store(&s.opts.Retention)
	s.SetOSPageCacheBusyTimeout(o.OSPageCacheBusyTimeout)
	for _, d := range []string{o.Dir, filepath.Join(o.Dir, configDir), filepath.Join(o.Dir, consumeQueueDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if s.lock, err = lockDir(filepath.Join(o.Dir, lockName)); err != nil {
		return nil, err
	}
	s.cl = newCommitLog(o.commitLogPath(), o.MappedFileSizeCommitLog, s.log)
	s.cl.prealloc = !o.NoPreallocate
	s.cl.fs = o.FS
	s.cl.now = o.Clock.Now
	ok := false
	defer func() {
		if !ok {
			s.releaseAll()
		}
	}()
	abortPath := filepath.Join(o.Dir, abortName)
	_, statErr := os.Stat(abortPath)
	clean := errors.Is(statErr, fs.ErrNotExist)
	ckpt, ck, ckOK, err := openCheckpoint(o.FS, filepath.Join(o.Dir, checkpointName))
	if err != nil {
		return nil, err
	}
	s.ckpt = ckpt
	if err := s.cl.load(); err != nil {
		return nil, err
	}
	if err := s.loadQueues(); err != nil {
		return nil, err
	}
	if o.RestoreConfirmOffset {
		gate, err := s.loadConfirm()
		if err != nil {
			return nil, err
		}
		s.confirm.Store(gate)
	}
	// A cut TruncateTo announced and did not finish is completed first
	// (truncate.go): recovery then starts below it and ends at it.
	cutAt, cut, err := readTruncateMarker(o.Dir)
	if err != nil {
		return nil, err
	}
	if cut {
		if err := s.completeTruncation(cutAt); err != nil {
			return nil, err
		}
		clean = false
		ck.physicOffset, ck.logicsOffset = min(ck.physicOffset, cutAt), min(ck.logicsOffset, cutAt)
		if g := s.confirm.Load(); g > cutAt {
			s.confirm.Store(cutAt)
		}
	}
	if err := s.recover(clean, ck, ckOK); err != nil {
		return nil, err
	}
	if err := s.openIndexAndCatchUp(); err != nil {
		return nil, err
	}
	if cut {
		if err := s.index.syncAll(); err != nil {
			return nil, err
		}
		if err := s.saveConfirm(); err != nil {
			return nil, err
		}
		if err := s.removeTruncateMarker(); err != nil {
			return nil, err
		}
	}
	// Files deleted by an earlier cleanup may have left units below the
	// commitlog's first file in the first consume-queue files.
	minPhy := s.cl.minOffset()
	for _, q := range s.allQueues() {
		q.correctMin(minPhy)
	}
	s.clean.lastPhysicalMin = minPhy
	s.checkDisk()
	abort, err := o.FS.OpenFile(abortPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	if err := abort.Close(); err != nil {
		return nil, err
	}
	if err := syncDir(o.FS, o.Dir); err != nil {
		return nil, err
	}
	ok = true
	// Both hooks are plain fields read by the dispatcher (releaseBehind) and
	// the writers; they are set before any goroutine that reads them starts.
	s.cl.readUpTo = s.reput.Load
	s.cl.warm = newWarmer(s.cl, s.cl.maxOffset.Load())
	if s.directAppend() {
		// The zero write size follows the writer's reservations, but the
		// first file of a new store is warmed before the first one.
		s.cl.warm.write = warmWriteDirect
	}
	s.cl.alloc = newSegmentAllocator(s.cl, o.BeforeSegmentCreate)
	if f := s.cl.last(); f != nil {
		s.cl.alloc.request(f.end())
	}
	s.deferred = make(map[queueKey]*deferral)
	s.creator = newFileCreator(s.wakeDispatcher)
	go s.creator.run()
	s.dispatchWG.Add(1)
	go s.dispatchLoop()
	s.flushWG.Add(4)
	go func() {
		defer s.flushWG.Done()
		s.cl.warm.run(s.stopFlush)
	}()
	go func() {
		defer s.flushWG.Done()
		s.cl.alloc.run()
	}()
	if o.FlushDiskType == SyncFlush {
		s.flushWG.Add(1)
		go s.expireWaitersLoop()
		go s.groupCommitLoop()
	} else {
		go s.asyncFlushLoop()
	}
	go s.queueFlushLoop()
	if !o.Retention.noLoop {
		s.flushWG.Add(1)
		go s.cleanLoop()
	}
	return s, nil
}

// lockDir takes an exclusive, non-blocking lock on path (Java's ${root}/lock).
// The kernel drops it when the process dies, so a crashed owner does not
// block the next Open.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	held, err := tryLock(f)
	if err != nil || held {
		f.Close()
		if held {
			return nil, fmt.Errorf("%w: %s", ErrLocked, path)
		}
		return nil, err
	}
	return f, nil
}

// loadQueues maps every consumequeue/<topic>/<queueId> directory.
func (s *Store) loadQueues() error {
	root := filepath.Join(s.opts.Dir, consumeQueueDir)
	topics, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, t := range topics {
		if !t.IsDir() {
			continue
		}
		qdirs, err := os.ReadDir(filepath.Join(root, t.Name()))
		if err != nil {
			return err
		}
		for _, qd := range qdirs {
			id, err := strconv.ParseInt(qd.Name(), 10, 32)
			if !qd.IsDir() || err != nil {
				s.log.Warn().Str("path", filepath.Join(root, t.Name(), qd.Name())).Msg("not a consume queue directory; ignored")
				continue
			}
			q := newConsumeQueue(s.opts.FS, root, t.Name(), int32(id), s.opts.MappedFileSizeConsumeQueue, s.log)
			if err := q.load(); err != nil {
				return err
			}
			if s.cqs[t.Name()] == nil {
				s.cqs[t.Name()] = make(map[int32]*consumeQueue)
			}
			s.cqs[t.Name()][int32(id)] = q
			s.countLmqQueue(t.Name(), 1)
		}
	}
	return nil
}

// queueFor returns the consume queue of topic/queueID, creating it (without
// files yet) when create is set.
func (s *Store) queueFor(topic string, queueID int32, create bool) (*consumeQueue, error) {
	s.cqMu.RLock()
	q := s.cqs[topic][queueID]
	s.cqMu.RUnlock()
	if q != nil || !create {
		return q, nil
	}
	if err := checkTopic(topic); err != nil {
		return nil, err
	}
	s.cqMu.Lock()
	defer s.cqMu.Unlock()
	if q = s.cqs[topic][queueID]; q != nil {
		return q, nil
	}
	q = newConsumeQueue(s.opts.FS, filepath.Join(s.opts.Dir, consumeQueueDir), topic, queueID, s.opts.MappedFileSizeConsumeQueue, s.log)
	if s.cqs[topic] == nil {
		s.cqs[topic] = make(map[int32]*consumeQueue)
	}
	s.cqs[topic][queueID] = q
	s.countLmqQueue(topic, 1)
	return q, nil
}

// checkTopic refuses names that cannot be a single directory name. Java
// brokers only allow [%|a-zA-Z0-9_-]; the store only guards the filesystem.
func checkTopic(topic string) error {
	if topic == "" || topic == "." || topic == ".." || strings.ContainsAny(topic, "/\\\x00") {
		return fmt.Errorf("%w: %q", ErrInvalidTopic, topic)
	}
	if len(topic) > message.MaxTopicLength {
		return fmt.Errorf("%w: %d bytes", ErrTopicTooLong, len(topic))
	}
	return nil
}

func (s *Store) allQueues() []*consumeQueue {
	s.cqMu.RLock()
	defer s.cqMu.RUnlock()
	var out []*consumeQueue
	for _, m := range s.cqs {
		for _, q := range m {
			out = append(out, q)
		}
	}
	return out
}

// QueueIDs lists the queue ids of topic that have a consume queue, ascending.
func (s *Store) QueueIDs(topic string) []int32 {
	s.cqMu.RLock()
	defer s.cqMu.RUnlock()
	ids := make([]int32, 0, len(s.cqs[topic]))
	for id := range s.cqs[topic] {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Topics lists the topics that have consume queues, sorted.
func (s *Store) Topics() []string {
	s.cqMu.RLock()
	defer s.cqMu.RUnlock()
	out := make([]string, 0, len(s.cqs))
	for t := range s.cqs {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// deleteTopicsWait bounds how long DeleteTopics waits for records already
// written to reach their queues before deleting them.
const deleteTopicsWait = 3 * time.Second

// DeleteTopics drops the consume queues of the topics (files and memory) and
// restarts their queue offsets at 0. The commitlog keeps the records; a
// checkpoint is written afterwards so that crash recovery does not rebuild the
// deleted queues from them.
func (s *Store) DeleteTopics(topics ...string) {
	if s.closed.Load() || len(topics) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), deleteTopicsWait)
	s.WaitDispatched(ctx, s.cl.maxOffset.Load())
	cancel()
	var doomed []*consumeQueue
	s.cqMu.Lock()
	for _, t := range topics {
		for _, q := range s.cqs[t] {
			doomed = append(doomed, q)
			s.countLmqQueue(t, -1)
		}
		delete(s.cqs, t)
	}
	s.cqMu.Unlock()
	s.putMu.Lock()
	for k := range s.queueOffsets {
		if slices.Contains(topics, k.topic) {
			delete(s.queueOffsets, k)
		}
	}
	s.putMu.Unlock()
	for _, q := range doomed {
		if err := q.destroy(); err != nil {
			s.log.Error().Err(err).Str("topic", q.topic).Int32("queueId", q.queueID).Msg("delete consume queue")
		}
	}
	for _, t := range topics {
		if checkTopic(t) == nil {
			os.Remove(filepath.Join(s.opts.Dir, consumeQueueDir, t))
		}
	}
	s.log.Info().Strs("topics", topics).Int("queues", len(doomed)).Msg("topics deleted")
	if err := s.cl.flush(); err != nil {
		s.log.Error().Err(err).Msg("flush commitlog after topic deletion")
		return
	}
	s.broadcastFlushed()
	if err := s.checkpointNow(); err != nil {
		s.log.Error().Err(err).Msg("checkpoint after topic deletion")
	}
}

// flushQueues fsyncs every consume queue.
//
// Unless thorough, queues with little written since their last sync are
// left (consumeQueue.flush); pending is then the lowest commitlog offset
// whose unit is not synced (math.MaxInt64 when every unit is).
func (s *Store) flushQueues(thorough bool) (pending int64, err error) {
	type createdFiles struct {
		q     *consumeQueue
		files []*cqFile
	}
	var (
		errs    []error
		created []createdFiles
		dirs    = make(map[string]struct{})
	)
	pending = math.MaxInt64
	for _, q := range s.allQueues() {
		files, p, err := q.flush(dirs, thorough)
		if err != nil {
			errs = append(errs, err)
		} else if len(files) > 0 {
			created = append(created, createdFiles{q, files})
		}
		pending = min(pending, p)
	}
	// The directories of files created since the last flush, each once.
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if err := syncDir(s.opts.FS, d); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return pending, errors.Join(errs...)
	}
	for _, c := range created {
		c.q.createdDurable(c.files)
	}
	return pending, nil
}

// checkpointNow flushes every consume queue and records the durable commitlog
// and dispatch positions.
func (s *Store) checkpointNow() error { return s.checkpoint(true) }

// cqFlushThoroughInterval is flushConsumeQueueThoroughInterval: the periodic
// checkpoint syncs every queue at least this often, so the dispatch position
// it records lags by at most about this much.
const cqFlushThoroughInterval = 60 * time.Second

// checkpoint flushes the consume queues (all of them when thorough) and
// records the durable commitlog and dispatch positions. The dispatch position
// is read before the queue flush, so every unit below it is covered by that
// flush, except in the queues the flush left: it is lowered to the first unit
// they have not synced, and recovery dispatches again from there.
func (s *Store) checkpoint(thorough bool) error {
	s.cqFlushMu.Lock()
	defer s.cqFlushMu.Unlock()
	logics := s.reput.Load()
	pending, err := s.flushQueues(thorough)
	if err != nil {
		return err
	}
	if err := s.saveConfirm(); err != nil {
		return err
	}
	return s.ckpt.write(s.cl.flushedOffset.Load(), min(logics, pending), s.opts.Clock.Now().UnixMilli())
}

// Close stops the goroutines after everything written is dispatched, flushes
// the commitlog and consume queues, writes the checkpoint and removes the
// abort marker, so the next Open trusts the checkpoint. Puts and reads after
// Close fail with ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.shutdown() })
	return s.closeErr
}

func (s *Store) shutdown() error {
	s.closed.Store(true)
	// Taking the lock once is the barrier: appends in flight finish, later ones
	// see closed under the lock.
	s.putMu.Lock()
	s.putMu.Unlock()
	close(s.stopDispatch)
	s.dispatchWG.Wait()
	close(s.stopFlush)
	close(s.cl.alloc.stop)
	s.flushWG.Wait()

	var errs []error
	if err := s.cl.flush(); err != nil {
		errs = append(errs, err)
	}
	s.broadcastFlushed()
	s.completeWaiters(false)
	s.failWaiters()
	if err := s.checkpointNow(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		// Only a fully flushed, checkpointed store counts as a clean shutdown.
		if err := os.Remove(filepath.Join(s.opts.Dir, abortName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		} else if err := syncDir(s.opts.FS, s.opts.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, s.releaseAll())
	return errors.Join(errs...)
}

// releaseAll unmaps and closes every file and drops the directory lock.
func (s *Store) releaseAll() error {
	var errs []error
	errs = append(errs, s.index.close())
	for _, q := range s.allQueues() {
		errs = append(errs, q.close())
	}
	if s.cl != nil {
		if s.cl.alloc != nil {
			errs = append(errs, s.cl.alloc.close())
		}
		errs = append(errs, s.cl.close())
	}
	if s.ckpt != nil {
		errs = append(errs, s.ckpt.close())
	}
	errs = append(errs, s.closeConfirm())
	if s.lock != nil {
		errs = append(errs, s.lock.Close()) // closing the descriptor releases the flock
	}
	return errors.Join(errs...)
}
