package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/mmap"
)

// cqUnitSize is the size of one consume-queue unit: int64 commitlog offset,
// int32 record size, int64 tagsCode.
const cqUnitSize = 20

// Filler units pad a queue whose first unit is not at the start of its file
// (Java writes the same {0, Integer.MAX_VALUE, 0}); readers skip them.
const fillerSize = math.MaxInt32

func isFiller(phy int64, size int32) bool { return phy == 0 && size == fillerSize }

// cqRecoverFiles is how many trailing files are scanned for the write position
// on load; older files are full by construction (Java does the same).
const cqRecoverFiles = 3

// errQueueDestroyed tells the dispatcher that the queue was deleted under it.
var errQueueDestroyed = errors.New("store: consume queue destroyed")

// errNoFile tells the dispatcher that a unit's file does not exist yet.
var errNoFile = errors.New("store: consume queue file not created yet")

// cqFile is a consume-queue segment and its write/flush positions (bytes).
type cqFile struct {
	*mappedFile
	wrote   atomic.Int64
	flushed int64 // flusher only
	// unsynced: created by the dispatcher without fsyncs; the next flush
	// makes the file and its directory entry durable. Set before the file
	// is listed, then flusher only.
	unsynced bool
}

// consumeQueue indexes one topic/queue: unit i sits at byte i*20 of the queue,
// in the file whose name is the byte offset of its first unit.
//
// Only the dispatcher (or recovery, before it starts) writes units; it takes
// mu shared for unit writes, which only touch bytes above the published write
// position, and exclusive to change the file list. Readers hold mu shared.
type consumeQueue struct {
	topic    string
	queueID  int32
	dir      string
	fileSize int64
	fs       FS // Options.FS
	log      zerolog.Logger

	mu        sync.RWMutex
	files     []*cqFile // ascending by start; gaps are possible after damage
	minLogic  int64     // byte offset of the first readable unit
	destroyed bool
	// newDir: addFile created the queue's directory (and maybe the topic's);
	// the next flush syncs their parents so the entries survive a crash.
	newDir atomic.Bool
}

func newConsumeQueue(fs FS, root, topic string, queueID int32, fileSize int64, log zerolog.Logger) *consumeQueue {
	return &consumeQueue{
		fs:       fs,
		topic:    topic,
		queueID:  queueID,
		dir:      filepath.Join(root, topic, strconv.Itoa(int(queueID))),
		fileSize: fileSize,
		log:      log.With().Str("topic", topic).Int32("queueId", queueID).Logger(),
	}
}

// unitAt decodes the unit at b[0:20].
func unitAt(b []byte) (phy int64, size int32, tags int64) {
	be := binary.BigEndian
	return int64(be.Uint64(b)), int32(be.Uint32(b[8:])), int64(be.Uint64(b[12:]))
}

func putUnit(b []byte, phy int64, size int32, tags int64) {
	be := binary.BigEndian
	be.PutUint64(b, uint64(phy))
	be.PutUint32(b[8:], uint32(size))
	be.PutUint64(b[12:], uint64(tags))
}

// load maps the queue's files and finds the write position: the last
// cqRecoverFiles files are scanned up to their first unit with a negative
// offset or a non-positive size.
func (q *consumeQueue) load() error {
	starts, err := listSegments(q.dir)
	if err != nil {
		return err
	}
	if err := checkSegments(q.dir, starts, q.fileSize); err != nil {
		return err
	}
	for i, start := range starts {
		mf, err := openMappedFile(q.fs, filepath.Join(q.dir, segmentName(start)), start, q.fileSize, false)
		if err != nil {
			return err
		}
		f := &cqFile{mappedFile: mf}
		w := q.fileSize
		if i >= len(starts)-cqRecoverFiles {
			w = scanUnits(mf.data)
		}
		f.wrote.Store(w)
		f.flushed = w
		q.files = append(q.files, f)
	}
	q.resetMin()
	return nil
}

// scanUnits returns the byte length of the valid prefix of a queue file.
// The scan reads past the last unit into what may be a hole, and on tmpfs a
// read of a hole page of a shared mapping allocates it, which faults on a
// full disk (a restart while the disk is full): a hole holds no unit, so the
// prefix ends where a read faults.
func scanUnits(data []byte) int64 {
	var p int64
	_ = GuardFault(func() {
		for ; p+cqUnitSize <= int64(len(data)); p += cqUnitSize {
			phy, size, _ := unitAt(data[p:])
			if phy < 0 || size <= 0 {
				break
			}
		}
	})
	return p
}

// resetMin points minLogic at the first unit of the first file that is not a
// filler. mu must be held exclusively (or the queue not yet shared).
func (q *consumeQueue) resetMin() {
	if len(q.files) == 0 {
		q.minLogic = 0
		return
	}
	f := q.files[0]
	w := f.wrote.Load()
	p := int64(0)
	for ; p < w; p += cqUnitSize {
		if phy, size, _ := unitAt(f.data[p:]); !isFiller(phy, size) {
			break
		}
	}
	q.minLogic = f.start + p
}

// endLocked is the byte offset just past the last unit. mu must be held.
func (q *consumeQueue) endLocked() int64 {
	if len(q.files) == 0 {
		return 0
	}
	f := q.files[len(q.files)-1]
	return f.start + f.wrote.Load()
}

// maxOffset is the logical offset the next unit gets (the unit count for a
// queue that starts at 0).
func (q *consumeQueue) maxOffset() int64 {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.endLocked() / cqUnitSize
}

func (q *consumeQueue) minOffset() int64 {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.minLogic / cqUnitSize
}

// fileIndex returns the index of the file holding byte offset pos, or -1.
func (q *consumeQueue) fileIndex(pos int64) int {
	i := sort.Search(len(q.files), func(i int) bool { return q.files[i].end() > pos })
	if i < len(q.files) && q.files[i].start <= pos {
		return i
	}
	return -1
}

// units calls fn with the written units of the file holding logical offset
// idx, from idx to that file's write position, under the read lock. It reports
// false when no file holds idx or idx is not written.
func (q *consumeQueue) units(idx int64, fn func(b []byte)) bool {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.destroyed {
		return false
	}
	pos := idx * cqUnitSize
	i := q.fileIndex(pos)
	if i < 0 {
		return false
	}
	f := q.files[i]
	rel, w := pos-f.start, f.wrote.Load()
	if rel >= w {
		return false
	}
	fn(f.data[rel:w])
	return true
}

// unit returns the unit at logical offset idx.
func (q *consumeQueue) unit(idx int64) (phy int64, size int32, tags int64, ok bool) {
	ok = q.units(idx, func(b []byte) { phy, size, tags = unitAt(b) })
	return
}

// nextFileStart is the logical offset of the first unit of the file after the
// one holding idx (Java rollNextFile).
func (q *consumeQueue) nextFileStart(idx int64) int64 {
	per := q.fileSize / cqUnitSize
	return idx + per - idx%per
}

// fileStart is the byte offset of the file that holds the unit of logical
// offset idx.
func (q *consumeQueue) fileStart(idx int64) int64 {
	pos := idx * cqUnitSize
	return pos - pos%q.fileSize
}

// put writes the unit of logical offset idx. Re-putting an identical unit is a
// no-op, so recovery can replay records the queue already holds; a different
// unit at a written position is overwritten (the commitlog is the source of
// truth). A position past the end is reached by padding with filler units.
// A unit whose file does not exist yet creates it, or, without create,
// returns errNoFile.
func (q *consumeQueue) put(idx, phy int64, size int32, tags int64, create bool) error {
	pos := idx * cqUnitSize
	q.mu.RLock()
	destroyed, i := q.destroyed, q.fileIndex(pos)
	q.mu.RUnlock()
	if destroyed {
		return errQueueDestroyed
	}
	if i < 0 {
		if !create {
			return errNoFile
		}
		if err := q.addFile(q.fileStart(idx)); err != nil {
			return err
		}
	}
	q.mu.RLock()
	if q.minLogic < q.endLocked() {
		defer q.mu.RUnlock()
		return q.putLocked(pos, phy, size, tags)
	}
	q.mu.RUnlock()
	// The queue has no unit yet: its minimum moves to this one, which needs
	// the exclusive lock (readers read minLogic).
	q.mu.Lock()
	defer q.mu.Unlock()
	wasEmpty := q.minLogic >= q.endLocked()
	if err := q.putLocked(pos, phy, size, tags); err != nil {
		return err
	}
	if wasEmpty {
		q.minLogic = pos
	}
	return nil
}

// putLocked writes the unit at byte offset pos, whose file exists. mu must be
// held (shared is enough: only bytes above the write position change, or a
// replayed unit is rewritten in place).
func (q *consumeQueue) putLocked(pos, phy int64, size int32, tags int64) error {
	if q.destroyed {
		return errQueueDestroyed
	}
	idx := pos / cqUnitSize
	f := q.files[q.fileIndex(pos)]
	rel, w := pos-f.start, f.wrote.Load()
	if rel < w {
		if p, s, t := unitAt(f.data[rel:]); p == phy && s == size && t == tags {
			return nil
		}
		q.log.Warn().Int64("queueOffset", idx).Int64("phyOffset", phy).Msg("consume queue unit differs from the commitlog; overwritten")
		return GuardFault(func() { putUnit(f.data[rel:], phy, size, tags) })
	}
	if rel > w {
		q.log.Warn().Int64("from", (f.start+w)/cqUnitSize).Int64("to", idx).Msg("consume queue gap padded")
	}
	// Queue files are sparse: the first write to a page allocates it.
	err := GuardFault(func() {
		for p := w; p < rel; p += cqUnitSize {
			putUnit(f.data[p:], 0, fillerSize, 0)
		}
		putUnit(f.data[rel:], phy, size, tags)
	})
	if err != nil {
		return err
	}
	f.wrote.Store(rel + cqUnitSize)
	return nil
}

// addFile creates the file starting at byte offset start.
//
// It runs on the dispatcher, so it does not fsync: a new topic's first
// messages would otherwise wait for two fsyncs per queue (a journal commit
// each on ext4, hundreds of milliseconds behind other writers' dirty data)
// before a consumer could see them. flush makes the creation durable before
// the checkpoint counts any unit in the file.
func (q *consumeQueue) addFile(start int64) error {
	if _, err := os.Stat(q.dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(q.dir, 0o755); err != nil {
			return err
		}
		q.newDir.Store(true)
	}
	mf, err := createMappedFileUnsynced(q.fs, filepath.Join(q.dir, segmentName(start)), start, q.fileSize)
	if err != nil {
		return fmt.Errorf("store: create consume queue file %s: %w", filepath.Join(q.dir, segmentName(start)), err)
	}
	// Empty until the dispatcher writes it, and read near where it writes.
	mf.adviseRandom()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.destroyed {
		mf.remove()
		return errQueueDestroyed
	}
	f := &cqFile{mappedFile: mf, unsynced: true}
	i := sort.Search(len(q.files), func(i int) bool { return q.files[i].start > start })
	q.files = append(q.files, nil)
	copy(q.files[i+1:], q.files[i:])
	q.files[i] = f
	if len(q.files) == 1 {
		q.minLogic = start
	}
	return nil
}

// truncateAfter drops trailing units that are fillers or point at records
// ending past phyEnd (the recovered end of the commitlog), zeroing their bytes
// and deleting files left empty. It reports how many units were dropped.
// Errors are logged: recovery flushes every queue and writes the checkpoint
// afterwards.
func (q *consumeQueue) truncateAfter(phyEnd int64) int64 {
	dropped, _, err := q.truncateFrom(phyEnd)
	if err != nil {
		q.log.Error().Err(err).Msg("truncate consume queue")
	}
	return dropped
}

// truncateFrom is truncateAfter returning its errors: dropped units,
// whether a file was deleted (its directory is then to be synced), and the
// first error of a sync or a removal. The dispatcher and the queue flusher
// must not run (recovery, or TruncateTo holding their locks).
func (q *consumeQueue) truncateFrom(phyEnd int64) (dropped int64, removed bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.files) > 0 {
		f := q.files[len(q.files)-1]
		w := f.wrote.Load()
		for w > 0 {
			phy, size, _ := unitAt(f.data[w-cqUnitSize:])
			if !isFiller(phy, size) && phy+int64(size) <= phyEnd {
				break
			}
			w -= cqUnitSize
			dropped++
		}
		if old := f.wrote.Load(); w < old {
			f.zero(w, old)
			if serr := f.sync(w, old); serr != nil && err == nil {
				err = serr
			}
			f.wrote.Store(w)
			f.flushed = min(f.flushed, w)
		}
		if w > 0 || len(q.files) == 1 {
			break
		}
		if rerr := f.remove(); rerr != nil && err == nil {
			err = rerr
		}
		q.files = q.files[:len(q.files)-1]
		removed = true
	}
	if q.minLogic > q.endLocked() {
		q.resetMin()
	}
	return dropped, removed, err
}

// flush makes written units durable. Files created since the last flush
// (addFile does not fsync) are fsynced whole, and returned with their
// directory added to dirs, and for a new queue directory its parents too:
// the caller syncs each directory once and then calls createdDurable.
//
// Unless thorough, a queue with fewer than cqFlushLeastPages pages written
// since its last flush (and no file awaiting its creation sync) is left for
// a later flush, as Java's FlushConsumeQueueService leaves it
// (flushConsumeQueueLeastPages, DefaultMessageStore.java), and pending is the
// commitlog offset of its first unit not synced: the checkpoint may not claim
// a dispatch position past it. Otherwise pending is math.MaxInt64.
func (q *consumeQueue) flush(dirs map[string]struct{}, thorough bool) (created []*cqFile, pending int64, err error) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	pending = math.MaxInt64
	if q.destroyed {
		return nil, pending, nil
	}
	if !thorough {
		if phy, ok := q.deferrableLocked(); ok {
			return nil, phy, nil
		}
	}
	for _, f := range q.files {
		w := f.wrote.Load()
		if f.flushed < w {
			if err := f.sync(f.flushed, w); err != nil {
				return nil, pending, err
			}
		}
		if f.unsynced {
			// Its size, and the units again: a failure records [0, w)
			// for the next sync to write again (flushed stays put).
			if err := f.syncCreation(w); err != nil {
				return nil, pending, err
			}
			created = append(created, f)
		}
		if f.flushed < w {
			f.flushed = w
			f.releaseBelow(w - cqReleaseKeep)
		}
	}
	if len(created) > 0 {
		dirs[q.dir] = struct{}{}
		if q.newDir.Load() {
			topicDir := filepath.Dir(q.dir)
			dirs[topicDir] = struct{}{}
			dirs[filepath.Dir(topicDir)] = struct{}{}
		}
	}
	return created, pending, nil
}

// cqFlushLeastPages is flushConsumeQueueLeastPages: a periodic flush syncs a
// queue once this many pages were written to it since its last sync.
// Without it, a broker whose deliveries touch many queues a little (a timer
// flood over BenchmarkTest's 1 024 queues) synced every queue every second:
// 10 % of its CPU.
const cqFlushLeastPages = 2

// deferrableLocked reports whether a periodic flush may leave the queue: it
// has units not synced, fewer than cqFlushLeastPages pages of them, none in
// a full file or in one whose creation is not synced yet, and the first of
// them is a real unit (not a filler); phy is that unit's commitlog offset. mu
// must be held.
func (q *consumeQueue) deferrableLocked() (phy int64, ok bool) {
	var pages int64
	var first *cqFile
	for _, f := range q.files {
		w := f.wrote.Load()
		if f.unsynced {
			return 0, false
		}
		if f.flushed >= w {
			continue
		}
		if w == f.size() {
			return 0, false // a full file is synced (Java: isAbleToFlush)
		}
		if first == nil {
			first = f
		}
		pages += w/pageSize - f.flushed/pageSize
	}
	if first == nil || pages >= cqFlushLeastPages {
		return 0, false
	}
	phy, size, _ := unitAt(first.data[first.flushed:])
	if isFiller(phy, size) {
		return 0, false
	}
	return phy, true
}

// createdDurable records that the files flush returned, and their
// directories, have been synced.
func (q *consumeQueue) createdDurable(created []*cqFile) {
	for _, f := range created {
		f.unsynced = false
	}
	q.newDir.Store(false)
}

// cqReleaseKeep is how much of a consume-queue file stays mapped behind its
// write position after a flush (3 276 units: what consumers that keep up
// read). The pages below are dropped from the page tables as the
// commitlog's are (commitlog_release.go): they stay in the page cache, and a
// lagging reader faults them back in without I/O.
const cqReleaseKeep = 64 << 10

// releaseBelow unmaps the file's whole pages below rel (a byte offset in
// the file). The caller holds the queue's lock, so the mapping stays valid.
func (f *cqFile) releaseBelow(rel int64) {
	_ = mmap.ReleasePages(f.data, 0, min(rel, f.size()))
}

// lastPhy returns the commitlog offset of the queue's last unit.
func (q *consumeQueue) lastPhy() (int64, bool) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if len(q.files) == 0 || q.destroyed {
		return 0, false
	}
	f := q.files[len(q.files)-1]
	w := f.wrote.Load()
	if w < cqUnitSize {
		return 0, false
	}
	phy, _, _ := unitAt(f.data[w-cqUnitSize:])
	return phy, true
}

// deleteBelow takes off the list the files (never the newest) whose last
// unit points below minPhy, the commitlog's minimum, oldest first and
// stopping at the first that stays (Java deleteExpiredFileByOffset), and
// moves the queue's minimum to its first unit at or above minPhy (Java
// correctMinOffset). The caller unmaps and removes the returned files: no
// reader reaches them any more.
func (q *consumeQueue) deleteBelow(minPhy int64) []*mappedFile {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.destroyed {
		return nil
	}
	var out []*mappedFile
	for len(q.files) > 1 {
		f := q.files[0]
		w := f.wrote.Load()
		if w < cqUnitSize {
			break
		}
		phy, _, _ := unitAt(f.data[w-cqUnitSize:])
		if phy >= minPhy {
			break
		}
		out = append(out, f.mappedFile)
		q.files = q.files[1:]
	}
	if len(out) > 0 {
		q.files = slices.Clone(q.files)
	}
	q.correctMinLocked(minPhy)
	return out
}

// correctMinLocked raises minLogic to the first unit of the first file that
// is no filler and points at or above minPhy; when every unit there is
// below, the minimum is that file's write position (nothing readable before
// it). mu must be held exclusively.
func (q *consumeQueue) correctMinLocked(minPhy int64) {
	if len(q.files) == 0 {
		return
	}
	f := q.files[0]
	w := f.wrote.Load()
	p := max(q.minLogic-f.start, 0)
	for ; p < w; p += cqUnitSize {
		phy, size, _ := unitAt(f.data[p:])
		if !isFiller(phy, size) && phy >= minPhy {
			break
		}
	}
	if f.start+p > q.minLogic {
		q.minLogic = f.start + p
	}
}

// correctMin is correctMinLocked for Open, after recovery.
func (q *consumeQueue) correctMin(minPhy int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.correctMinLocked(minPhy)
}

// destroy deletes the queue's files and directory.
func (q *consumeQueue) destroy() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.destroyed = true
	var errs []error
	for _, f := range q.files {
		errs = append(errs, f.remove())
	}
	q.files = nil
	errs = append(errs, os.RemoveAll(q.dir))
	return errors.Join(errs...)
}

func (q *consumeQueue) close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.destroyed = true
	var errs []error
	for _, f := range q.files {
		errs = append(errs, f.close())
	}
	q.files = nil
	return errors.Join(errs...)
}
