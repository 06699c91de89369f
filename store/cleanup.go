package store

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Retention: the stock CleanCommitLogService and CleanConsumeQueueService
// (Java 4.9.8 DefaultMessageStore), with the stock keys and defaults.
//
// Every CleanResourceInterval a round runs when the clock hour is one of
// DeleteWhen, when the disk is fuller than DiskMaxUsedSpaceRatio, or while
// manual rounds are left (DeleteExpiredFilesManually: 20 rounds). A round
// deletes, oldest first and at most 10 per round, commitlog files whose
// last write is FileReservedTime old, or any file when the disk is fuller
// than DiskSpaceCleanForciblyRatio and CleanFileForciblyEnable holds; it
// stops at the first file it must keep. The newest file is never deleted,
// nor a file not yet flushed or dispatched, nor one holding an offset at or
// above Options.Retention.ProtectedOffset() (pending delay, timer and
// half messages: the broker's choice, documented there; under disk pressure
// Options.Retention.Evacuate re-stores them ahead first). Consume-queue
// files whose last unit points below the commitlog's new minimum and
// index files ending below it go next, and every queue's minimum offset
// moves up to its first unit still in the commitlog (pulls below get
// OFFSET_TOO_SMALL with the new minimum).
//
// Deleting never holds the put lock. A file is taken off the list under the
// commitlog lock (readers copy out under its read lock), then, once the
// flusher and the page releaser are past any snapshot holding it, unmapped
// and truncated in steps of deleteStep before the unlink, so that freeing a
// 1 GiB segment is a series of short calls on the cleanup goroutine. A file
// whose removal fails is retried every RedeleteHangedFileInterval (Java's
// hanged first file).

// RetentionOptions configures cleanup and the disk guard. Zero values take
// the stock defaults.
type RetentionOptions struct {
	// FileReservedTime is how long a commitlog file is kept after its last
	// write (fileReservedTime, 72 h; the broker also takes a minutes
	// override for tests and development).
	FileReservedTime time.Duration
	// DeleteWhen lists the clock hours ("04", "04;16") during which expired
	// files are deleted (deleteWhen).
	DeleteWhen string
	// DiskMaxUsedSpaceRatio (percent, 75, clamped to 10..95): above it
	// expired files are deleted at any hour.
	DiskMaxUsedSpaceRatio int
	// DiskSpaceWarningLevelRatio (0.90): above it puts are refused
	// (SERVICE_NOT_AVAILABLE) until space is freed.
	DiskSpaceWarningLevelRatio float64
	// DiskSpaceCleanForciblyRatio (0.85): above it files are deleted even
	// inside FileReservedTime when CleanFileForciblyEnable.
	DiskSpaceCleanForciblyRatio float64
	// CleanFileForciblyDisable turns off cleanFileForciblyEnable (true).
	CleanFileForciblyDisable bool
	// CleanResourceInterval is the period of cleanup rounds (10 s).
	CleanResourceInterval time.Duration
	// DeleteCommitLogFilesInterval and DeleteConsumeQueueFilesInterval are
	// the pauses between two deleted files (100 ms each; negative: none).
	// They pace the disk, so they are wall-clock sleeps.
	DeleteCommitLogFilesInterval    time.Duration
	DeleteConsumeQueueFilesInterval time.Duration
	// DestroyMapedFileIntervalForcibly bounds how long removing one file
	// may take in steps (120 s): past it the rest is unlinked at once.
	DestroyMapedFileIntervalForcibly time.Duration
	// RedeleteHangedFileInterval is the retry period of a file whose
	// removal failed (120 s).
	RedeleteHangedFileInterval time.Duration
	// DiskCheckInterval is the period of the disk-full check (1 s; Java's
	// is 10 s). Writes also trigger one after DiskReserve/4 bytes.
	DiskCheckInterval time.Duration
	// DiskReserve is the free space below which puts are refused, kept so
	// that consume-queue, index and config writes of accepted messages
	// find blocks (default 2 consume-queue files + 4 MiB).
	DiskReserve int64
	// DiskUsage measures the file system (StatfsUsage when nil).
	DiskUsage DiskUsage
	// ProtectedOffset, when set, returns the lowest commitlog offset that
	// must be kept (math.MaxInt64: none); files holding it or anything
	// after it are not deleted. forced says the round deletes files inside
	// FileReservedTime (the disk is over DiskSpaceCleanForciblyRatio).
	ProtectedOffset func(forced bool) int64
	// Evacuate, when set, is called under disk pressure when the oldest
	// commitlog file must go but ProtectedOffset keeps it: it re-stores the
	// pending messages below below ahead (at the commitlog's end), so that
	// ProtectedOffset, asked again, lets the file go. Disk pressure is a
	// forced round, or an expired file on a disk over DiskMaxUsedSpaceRatio.
	// It must not block on the disk guard: a put it cannot make leaves the
	// file kept for this round.
	Evacuate func(below int64)
	// Disabled turns the cleanup rounds off (the disk guard stays).
	Disabled bool

	// removeFile, when set (tests only), replaces os.Remove for deleted
	// files.
	removeFile func(path string) error
	// noLoop (tests only) starts no cleanup goroutine: the test runs the
	// disk checks and rounds itself.
	noLoop bool
}

// Retention defaults.
const (
	DefaultFileReservedTime            = 72 * time.Hour
	DefaultDeleteWhen                  = "04"
	DefaultDiskMaxUsedSpaceRatio       = 75
	DefaultDiskSpaceWarningLevelRatio  = 0.90
	DefaultDiskSpaceCleanForciblyRatio = 0.85
	DefaultCleanResourceInterval       = 10 * time.Second
	DefaultDeleteFilesInterval         = 100 * time.Millisecond
	DefaultDestroyMapedFileForcibly    = 120 * time.Second
	DefaultRedeleteHangedFileInterval  = 120 * time.Second
	DefaultDiskCheckInterval           = time.Second
	// deleteFilesBatchMax is Java's DELETE_FILES_BATCH_MAX.
	deleteFilesBatchMax = 10
	// manualDeleteRounds is how many rounds DeleteExpiredFilesManually forces.
	manualDeleteRounds = 20
	// deleteStep is how much of a file one truncate frees.
	deleteStep = 64 << 20
)

func (r RetentionOptions) normalized(cqFileSize int64) (RetentionOptions, error) {
	if r.FileReservedTime <= 0 {
		r.FileReservedTime = DefaultFileReservedTime
	}
	if r.DeleteWhen == "" {
		r.DeleteWhen = DefaultDeleteWhen
	}
	if _, err := ParseDeleteWhen(r.DeleteWhen); err != nil {
		return r, err
	}
	if r.DiskMaxUsedSpaceRatio == 0 {
		r.DiskMaxUsedSpaceRatio = DefaultDiskMaxUsedSpaceRatio
	}
	r.DiskMaxUsedSpaceRatio = min(max(r.DiskMaxUsedSpaceRatio, 10), 95)
	if r.DiskSpaceWarningLevelRatio <= 0 {
		r.DiskSpaceWarningLevelRatio = DefaultDiskSpaceWarningLevelRatio
	}
	if r.DiskSpaceCleanForciblyRatio <= 0 {
		r.DiskSpaceCleanForciblyRatio = DefaultDiskSpaceCleanForciblyRatio
	}
	if r.CleanResourceInterval <= 0 {
		r.CleanResourceInterval = DefaultCleanResourceInterval
	}
	if r.DeleteCommitLogFilesInterval == 0 {
		r.DeleteCommitLogFilesInterval = DefaultDeleteFilesInterval
	}
	if r.DeleteConsumeQueueFilesInterval == 0 {
		r.DeleteConsumeQueueFilesInterval = DefaultDeleteFilesInterval
	}
	if r.DestroyMapedFileIntervalForcibly <= 0 {
		r.DestroyMapedFileIntervalForcibly = DefaultDestroyMapedFileForcibly
	}
	if r.RedeleteHangedFileInterval <= 0 {
		r.RedeleteHangedFileInterval = DefaultRedeleteHangedFileInterval
	}
	if r.DiskCheckInterval <= 0 {
		r.DiskCheckInterval = DefaultDiskCheckInterval
	}
	if r.DiskReserve <= 0 {
		r.DiskReserve = 2*cqFileSize + 4<<20
	}
	if r.DiskUsage == nil {
		r.DiskUsage = StatfsUsage{}
	}
	return r, nil
}

// ParseDeleteWhen parses a deleteWhen ("04;16") into hours (Java
// UtilAll.isItTimeToDo).
func ParseDeleteWhen(s string) ([]int, error) {
	var hours []int
	for _, f := range strings.Split(s, ";") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		h, err := strconv.Atoi(f)
		if err != nil || h < 0 || h > 23 {
			return nil, fmt.Errorf("store: deleteWhen %q: %q is not an hour 0..23", s, f)
		}
		hours = append(hours, h)
	}
	return hours, nil
}

// isTimeToDelete reports whether now's clock hour is one of DeleteWhen.
func (s *Store) isTimeToDelete(now time.Time) bool {
	hours, _ := ParseDeleteWhen(s.retention().DeleteWhen)
	return slices.Contains(hours, now.Hour())
}

// hangedFile is a deleted file whose removal failed, retried later.
type hangedFile struct {
	path    string
	retryAt time.Time
}

// cleanState is owned by the cleanup goroutine (and by tests calling
// cleanRound directly).
type cleanState struct {
	manualRounds        int
	lastPhysicalMin     int64
	hanged              []hangedFile
	keptLogged          string // the file last reported as kept
	deletedCommitLog    int64
	deletedConsumeQueue int64
	deletedIndex        int64
}

// DeleteExpiredFilesManually makes the next 20 cleanup rounds run whatever
// the hour (DELETE_EXPIRED_COMMITLOG, Java executeDeleteFilesManually);
// files must still be expired unless the disk is over the forced ratio.
func (s *Store) DeleteExpiredFilesManually() {
	s.manualDelete.Store(manualDeleteRounds)
	s.wakeCleanup()
}

func (s *Store) wakeCleanup() {
	select {
	case s.cleanWake <- struct{}{}:
	default:
	}
}

// retention returns the retention options in force (Options.Retention
// until SetRetention replaces them).
func (s *Store) retention() *RetentionOptions { return s.ret.Load() }

// Retention returns the retention options in force.
func (s *Store) Retention() RetentionOptions { return *s.retention() }

// SetRetention replaces the retention keys while the store runs (the
// broker's UPDATE_BROKER_CONFIG): FileReservedTime, DeleteWhen, the three
// disk ratios, CleanFileForciblyDisable, the intervals and Disabled. Zero
// values take the stock defaults, as at Open. The hooks (DiskUsage,
// ProtectedOffset), DiskCheckInterval and DiskReserve keep their values.
// The next round uses the new values; the disk is checked again before
// SetRetention returns, so a changed warning ratio sets or lifts the
// refusal of puts at once, and a changed CleanResourceInterval re-arms the
// round ticker.
// Java 4.9.8 reads most of these through MessageStoreConfig getters at each
// use (DefaultMessageStore.CleanCommitLogService) but schedules the cleanup
// at the start's cleanResourceInterval; here every key is live.
func (s *Store) SetRetention(r RetentionOptions) error {
	cur := s.retention()
	r.DiskUsage, r.ProtectedOffset, r.Evacuate = cur.DiskUsage, cur.ProtectedOffset, cur.Evacuate
	r.DiskCheckInterval, r.DiskReserve = cur.DiskCheckInterval, cur.DiskReserve
	r.removeFile, r.noLoop = cur.removeFile, cur.noLoop
	next, err := r.normalized(s.opts.MappedFileSizeConsumeQueue)
	if err != nil {
		return err
	}
	s.ret.Store(&next)
	s.log.Info().Dur("fileReservedTime", next.FileReservedTime).Str("deleteWhen", next.DeleteWhen).
		Int("diskMaxUsedSpaceRatio", next.DiskMaxUsedSpaceRatio).Msg("retention options updated")
	s.checkDisk()
	if next.noLoop {
		return nil
	}
	// The cleanup goroutine re-arms its round ticker and, over the new
	// diskMaxUsedSpaceRatio, runs a round.
	select {
	case s.diskCheckWake <- struct{}{}:
	default:
	}
	return nil
}

// cleanLoop runs the disk checks and the cleanup rounds until stopFlush.
// Their periods are polling, on the wall clock like the group-commit
// pacing; what a round decides (file ages, the hour) reads the store clock.
// The options are read afresh at each event (SetRetention).
func (s *Store) cleanLoop() {
	defer s.flushWG.Done()
	check := time.NewTicker(s.retention().DiskCheckInterval)
	every := s.retention().CleanResourceInterval
	round := time.NewTicker(every)
	defer func() { check.Stop(); round.Stop() }()
	overRatio := func(used float64) bool {
		return used > float64(s.retention().DiskMaxUsedSpaceRatio)/100
	}
	for {
		if d := s.retention().CleanResourceInterval; d != every {
			every = d
			round.Reset(d)
		}
		select {
		case <-s.stopFlush:
			return
		case <-check.C:
			if overRatio(s.checkDisk()) {
				s.cleanRound()
			}
		case <-s.diskCheckWake:
			if overRatio(s.checkDisk()) {
				s.cleanRound()
			}
		case <-s.cleanWake:
			s.checkDisk()
			s.cleanRound()
		case <-round.C:
			s.cleanRound()
		}
	}
}

// CleanNow runs one cleanup round on the caller's goroutine and returns the
// number of commitlog files it deleted (tests and tools: the cleanup
// goroutine runs rounds by itself).
func (s *Store) CleanNow() int { return s.cleanRound() }

// cleanRound is one CleanCommitLogService + CleanConsumeQueueService run.
// It returns the number of commitlog files deleted.
func (s *Store) cleanRound() int {
	if s.closed.Load() {
		return 0
	}
	s.cleanMu.Lock()
	defer s.cleanMu.Unlock()
	r := s.retention()
	now := s.opts.Clock.Now()
	s.retryHanged(now)
	if r.Disabled {
		return 0
	}
	used := s.checkDisk()
	timeUp := s.isTimeToDelete(now)
	spaceFull := used < 0 || used > float64(r.DiskMaxUsedSpaceRatio)/100
	cleanImmediately := used > r.DiskSpaceCleanForciblyRatio
	manual := false
	if n := s.manualDelete.Load(); n > 0 {
		manual = true
		s.manualDelete.Add(-1)
	}
	deleted := 0
	if timeUp || spaceFull || manual {
		force := !r.CleanFileForciblyDisable && cleanImmediately
		deleted = s.deleteExpiredCommitLog(now, force, spaceFull)
		if deleted == 0 && spaceFull {
			s.log.Warn().Float64("used", used).Msg("cleanup: disk space will be full soon, but no file could be deleted")
		}
	}
	s.cleanQueuesAndIndex()
	if deleted > 0 {
		// Space freed: a refusal may lift now rather than at the next check.
		s.checkDisk()
		s.wakeDispatcher()
	}
	return deleted
}

// deleteExpiredCommitLog deletes up to deleteFilesBatchMax of the oldest
// commitlog files that expired (or any with force), stopping at the first
// one that must be kept. Under disk pressure (force, or spaceFull and the
// file expired) a file kept only for pending messages is evacuated first
// (RetentionOptions.Evacuate) and the protected offset asked again: the
// disk keeps taking writes without losing a pending delay, timer or half
// message (broker/delivery.go).
func (s *Store) deleteExpiredCommitLog(now time.Time, force, spaceFull bool) int {
	r := s.retention()
	protected := int64(1<<63 - 1)
	if r.ProtectedOffset != nil {
		protected = r.ProtectedOffset(force)
	}
	written := min(s.cl.flushedOffset.Load(), s.reput.Load())
	deleted := 0
	evacuated := ""
	for deleted < deleteFilesBatchMax {
		s.cl.mu.RLock()
		if len(s.cl.files) < 2 {
			s.cl.mu.RUnlock()
			break
		}
		f := s.cl.files[0]
		s.cl.mu.RUnlock()
		expired := !now.Before(s.cl.lastWrite(f).Add(r.FileReservedTime))
		if !expired && !force {
			break
		}
		if f.end() > written {
			break
		}
		if f.end() > protected && r.Evacuate != nil && evacuated != f.path && (force || spaceFull) {
			// Once per file and round: what cannot be re-stored now (the
			// disk is past its reserve) waits for the next round.
			evacuated = f.path
			r.Evacuate(f.end())
			protected = r.ProtectedOffset(force)
		}
		if f.end() > protected {
			if s.clean.keptLogged != f.path {
				// Logged once per file: rounds run every second on a full disk.
				s.clean.keptLogged = f.path
				s.log.Info().Str("file", f.path).Int64("protectedOffset", protected).Bool("forced", force).Msg("cleanup: commitlog file kept for pending messages")
			}
			break
		}
		if !s.cl.dropFirst(f) {
			break
		}
		s.destroyFile(f)
		deleted++
		s.clean.deletedCommitLog++
		s.log.Info().Str("file", f.path).Bool("expired", expired).Bool("forced", force && !expired).Msg("cleanup: commitlog file deleted")
		// A refusal of puts lifts with the first file that frees enough,
		// not after the batch and its pauses (a second of refused sends).
		s.checkDisk()
		if d := r.DeleteCommitLogFilesInterval; d > 0 && deleted < deleteFilesBatchMax {
			time.Sleep(d)
		}
	}
	return deleted
}

// destroyFile unmaps f and removes it in steps (the commitlog lock is not
// held; f is off every list).
func (s *Store) destroyFile(f *mappedFile) {
	r := s.retention()
	if err := f.close(); err != nil {
		s.log.Warn().Err(err).Str("file", f.path).Msg("cleanup: unmap")
	}
	start := time.Now()
	if fd, err := s.opts.FS.OpenFile(f.path, os.O_WRONLY, 0); err == nil {
		for size := f.size() - deleteStep; size > 0 && time.Since(start) < r.DestroyMapedFileIntervalForcibly; size -= deleteStep {
			if err := s.opts.FS.Truncate(fd, size); err != nil {
				break
			}
		}
		fd.Close()
	}
	s.removePath(f.path)
}

// removePath unlinks path, keeping it for a later retry if that fails.
func (s *Store) removePath(path string) {
	rm := s.retention().removeFile
	if rm == nil {
		rm = os.Remove
	}
	if err := rm(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log.Error().Err(err).Str("file", path).Msg("cleanup: remove failed; retried later")
		s.clean.hanged = append(s.clean.hanged, hangedFile{path: path, retryAt: s.opts.Clock.Now().Add(s.retention().RedeleteHangedFileInterval)})
	}
}

// retryHanged retries the removals that failed, once their retry time came.
func (s *Store) retryHanged(now time.Time) {
	h := s.clean.hanged
	s.clean.hanged = nil
	for _, f := range h {
		if now.Before(f.retryAt) {
			s.clean.hanged = append(s.clean.hanged, f)
			continue
		}
		s.log.Warn().Str("file", f.path).Msg("cleanup: retrying the removal of a hanged file")
		s.removePath(f.path)
	}
}

// cleanQueuesAndIndex deletes consume-queue and index files wholly below
// the commitlog minimum and moves the queues' minimum offsets up, when that
// minimum grew since the last time.
func (s *Store) cleanQueuesAndIndex() {
	minPhy := s.cl.minOffset()
	if minPhy <= s.clean.lastPhysicalMin {
		return
	}
	s.clean.lastPhysicalMin = minPhy
	pause := s.retention().DeleteConsumeQueueFilesInterval
	for _, q := range s.allQueues() {
		files := q.deleteBelow(minPhy)
		for _, f := range files {
			if err := f.close(); err != nil {
				s.log.Warn().Err(err).Str("file", f.path).Msg("cleanup: unmap consume queue file")
			}
			s.removePath(f.path)
			s.clean.deletedConsumeQueue++
		}
		if len(files) > 0 && pause > 0 {
			time.Sleep(pause)
		}
	}
	if s.index != nil {
		for _, f := range s.index.deleteBelow(minPhy) {
			if err := f.close(); err != nil {
				s.log.Warn().Err(err).Str("file", f.path).Msg("cleanup: unmap index file")
			}
			s.removePath(f.path)
			s.clean.deletedIndex++
		}
	}
}

// CleanExpiredConsumeQueues destroys the consume queues whose every unit
// points below the commitlog minimum (CLEAN_EXPIRED_CONSUMEQUEUE, Java
// cleanExpiredConsumerQueue; the delay topic is kept). It returns how many
// queues went.
func (s *Store) CleanExpiredConsumeQueues(keep func(topic string) bool) int {
	minPhy := s.cl.minOffset()
	var doomed []*consumeQueue
	s.cqMu.Lock()
	for topic, m := range s.cqs {
		if keep != nil && keep(topic) {
			continue
		}
		for id, q := range m {
			if last, ok := q.lastPhy(); ok && last < minPhy {
				doomed = append(doomed, q)
				delete(m, id)
			}
		}
		if len(m) == 0 {
			delete(s.cqs, topic)
		}
	}
	s.cqMu.Unlock()
	for _, q := range doomed {
		if err := q.destroy(); err != nil {
			s.log.Error().Err(err).Str("topic", q.topic).Int32("queueId", q.queueID).Msg("cleanup: destroy expired consume queue")
		}
		s.log.Info().Str("topic", q.topic).Int32("queueId", q.queueID).Msg("cleanup: expired consume queue destroyed")
	}
	return len(doomed)
}

// CleanupStats are the cleanup counters since Open.
func (s *Store) cleanupInfo() map[string]string {
	s.cleanMu.Lock()
	defer s.cleanMu.Unlock()
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	return map[string]string{
		"cleanDeletedCommitLogFiles":    i(s.clean.deletedCommitLog),
		"cleanDeletedConsumeQueueFiles": i(s.clean.deletedConsumeQueue),
		"cleanDeletedIndexFiles":        i(s.clean.deletedIndex),
		"cleanHangedFiles":              i(int64(len(s.clean.hanged))),
	}
}
