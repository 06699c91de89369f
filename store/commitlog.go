package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/mmap"
	"github.com/rmqio/rmq/message"
)

// commitLog is the sequence of fixed-size segment files holding every record
// back to back, addressed by a global byte offset.
//
// Writers (the put path, under Store.putMu) copy a record into the mapping,
// or pwrite it under SYNC_FLUSH (commitlog_pwrite.go), and then publish the
// new end in maxOffset; readers load maxOffset and read the mapping only
// below it, so they never see a partial record. files grows at the tail
// (under mu) and loses its oldest file to cleanup (dropFirst, under mu,
// which then waits out the flusher's and the releaser's snapshots); other
// segments are unmapped only by close, after every goroutine that reads
// them has stopped.
type commitLog struct {
	dir      string
	fileSize int64
	log      zerolog.Logger

	mu     sync.RWMutex
	files  []*mappedFile // contiguous: files[i].start == files[0].start + i*fileSize
	closed bool

	maxOffset     atomic.Int64 // end of the last record or BLANK written
	flushedOffset atomic.Int64 // every byte below is durable
	flushMu       sync.Mutex   // serialises flush
	flushes       atomic.Int64 // flush calls that synced something
	// releaseMu serialises release passes (commitlog_release.go);
	// released is the end of the last range the write side unmapped,
	// stored under releaseMu and read without it by noteRead. readUpTo,
	// when set, bounds what may be released: the dispatch position.
	releaseMu sync.Mutex
	released  atomic.Int64
	readUpTo  func() int64
	// readLo and readHi bound the bytes read below released since the
	// last release of read pages (noteRead, releaseRead).
	readLo    atomic.Int64
	readHi    atomic.Int64
	readSwept atomic.Int64 // readHi at the last release of read pages
	// dropped is the end of the last range dropCached dropped
	// (commitlog_cache.go); releaseMu guards it.
	dropped int64

	// beforeFlush, when set (tests only), runs at the start of every flush,
	// before the range to sync is read.
	beforeFlush func()

	// warm, when set (while the store is open), zero-fills ahead of the
	// writer; every range is reserved with it before bytes are copied in.
	warm *warmer
	// alloc, when set (while the store is open), creates the next segment
	// ahead of the writer (commitlog_alloc.go).
	alloc *segmentAllocator

	// wbuf is the scratch buffer of direct appends (commitlog_pwrite.go);
	// Store.putMu guards it.
	wbuf []byte

	// prealloc reserves the blocks of new files (Options.NoPreallocate off).
	prealloc bool
	// fs is Options.FS (nil: the real file system), for every segment.
	fs FS
	// now is the store clock, read when the writer leaves a file.
	now func() time.Time
}

func newCommitLog(dir string, fileSize int64, log zerolog.Logger) *commitLog {
	c := &commitLog{dir: dir, fileSize: fileSize, log: log, prealloc: true, now: time.Now}
	c.readLo.Store(math.MaxInt64)
	return c
}

// lastWrite is when f was last written: when the writer moved on to the
// next file, or, for files from before this Open or still written, the
// file's modification time (Java MappedFile.getLastModifiedTimestamp).
func (c *commitLog) lastWrite(f *mappedFile) time.Time {
	if ms := f.doneMs.Load(); ms > 0 {
		return time.UnixMilli(ms)
	}
	st, err := os.Stat(f.path)
	if err != nil {
		return c.now()
	}
	return st.ModTime()
}

// dropFirst takes f, the oldest file, off the list if it still is the
// oldest and not the newest, and waits until no flush or page release
// works on a snapshot holding it; f may then be unmapped.
func (c *commitLog) dropFirst(f *mappedFile) bool {
	c.mu.Lock()
	if len(c.files) < 2 || c.files[0] != f {
		c.mu.Unlock()
		return false
	}
	c.files = slices.Clone(c.files[1:])
	c.mu.Unlock()
	c.flushMu.Lock()
	c.flushMu.Unlock()
	c.releaseMu.Lock()
	c.releaseMu.Unlock()
	return true
}

// load maps every segment file. The files must be contiguous and sized as
// configured (checkSegments); a gap means lost data the store cannot address
// around.
func (c *commitLog) load() error {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	starts, err := listSegments(c.dir)
	if err != nil {
		return err
	}
	if err := checkSegments(c.dir, starts, c.fileSize); err != nil {
		return err
	}
	for i, start := range starts {
		if i > 0 && start != starts[i-1]+c.fileSize {
			return fmt.Errorf("%w: commitlog files %s and %s are not contiguous", ErrCorrupt, segmentName(starts[i-1]), segmentName(start))
		}
		f, err := openMappedFile(c.fs, filepath.Join(c.dir, segmentName(start)), start, c.fileSize, c.prealloc)
		if err != nil {
			return err
		}
		c.files = append(c.files, f)
	}
	return nil
}

// minOffset is the first addressable offset (the start of the oldest file),
// or maxOffset when there are no files.
func (c *commitLog) minOffset() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.files) == 0 {
		return c.maxOffset.Load()
	}
	return c.files[0].start
}

// fileAt returns the file holding off; mu must be held.
func (c *commitLog) fileAt(off int64) *mappedFile {
	if len(c.files) == 0 || off < c.files[0].start {
		return nil
	}
	i := (off - c.files[0].start) / c.fileSize
	if i >= int64(len(c.files)) {
		return nil
	}
	return c.files[i]
}

// read calls fn with the published bytes of the file holding off, from off to
// the lower of maxOffset and the file end. fn runs under the read lock and must
// not keep b.
func (c *commitLog) read(off int64, fn func(b []byte) error) error {
	if err := c.readLocked(off, fn); err != nil {
		return err
	}
	c.noteRead(off) // after the read lock: it may release pages
	return nil
}

func (c *commitLog) readLocked(off int64, fn func(b []byte) error) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return ErrClosed
	}
	max := c.maxOffset.Load()
	f := c.fileAt(off)
	if f == nil || off >= max {
		return fmt.Errorf("%w: commitlog offset %d outside [%d, %d)", ErrNotFound, off, c.minLocked(), max)
	}
	return fn(f.data[off-f.start : min(max, f.end())-f.start])
}

func (c *commitLog) minLocked() int64 {
	if len(c.files) == 0 {
		return c.maxOffset.Load()
	}
	return c.files[0].start
}

// resident reports whether the bytes [from, to) are published, in one file,
// and in the page cache (mmap.Resident).
func (c *commitLog) resident(from, to int64) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed || from >= to {
		return false
	}
	f := c.fileAt(from)
	if f == nil || to > min(c.maxOffset.Load(), f.end()) {
		return false
	}
	return mmap.Resident(f.data[from-f.start : to-f.start])
}

// record calls fn with the record at off after checking its framing (magic,
// sizes) and, when wantSize > 0, that its TOTALSIZE equals wantSize.
func (c *commitLog) record(off int64, wantSize int32, fn func(b []byte, l *message.Layout) error) error {
	return c.read(off, func(b []byte) error {
		if len(b) >= 8 && binary.BigEndian.Uint32(b[message.PosMagic:]) == BlankMagicCode {
			return fmt.Errorf("%w: commitlog offset %d is end-of-file padding", ErrNotFound, off)
		}
		l, err := message.ParseLayout(b)
		if err != nil {
			return fmt.Errorf("%w: commitlog offset %d: %w", ErrCorrupt, off, err)
		}
		if wantSize > 0 && int32(l.Total) != wantSize {
			return fmt.Errorf("%w: record at %d has size %d, consume queue says %d", ErrCorrupt, off, l.Total, wantSize)
		}
		return fn(b[:l.Total], &l)
	})
}

// appendLocked reserves n bytes at the write position and calls write with
// them and their global offset: the mapped bytes themselves, or with direct
// a scratch buffer that is then pwritten there. When fewer than n+8 bytes
// remain in the current file, the rest of it becomes a BLANK record and the
// bytes go to the next file. n+8 must not exceed the file size. Store.putMu
// must be held.
//
// appendLocked never waits for the disk: when the next segment is not
// created yet (commitlog_alloc.go) or the warmer is zeroing the range
// (commitlog_warm.go), it returns an ErrWouldBlock (errWaitSegment,
// errWaitWarm) having changed nothing, and the caller may release putMu,
// awaitWritable and try again.
func (c *commitLog) appendLocked(n int, direct bool, write func(b []byte, phy int64)) (int64, error) {
	cur := c.maxOffset.Load()
	f := c.last()
	blank := false
	if f == nil || cur >= f.end() {
		f = nil
	} else if int64(n)+blankRecordLength > f.end()-cur {
		blank = true
	}
	if f == nil || blank {
		at := cur
		if blank {
			at = f.end()
		}
		start := at - at%c.fileSize
		if ok, err := c.segmentReady(start); !ok {
			if err == nil {
				err = &waitSegmentError{start: start}
			}
			return 0, err
		}
	}
	// Reserved before anything is written, so that the warmer keeps away.
	// In the current file the range covers the BLANK header too when it
	// comes to that (n > 8).
	if f != nil && c.warm != nil && !c.warm.tryReserve(cur, cur+int64(n), direct) {
		return 0, errWaitWarm
	}
	if blank {
		rel, rest := cur-f.start, f.end()-cur
		var err error
		if direct {
			err = pwriteBlank(f, rel, rest)
		} else {
			err = GuardFault(func() {
				binary.BigEndian.PutUint32(f.data[rel:], uint32(rest))
				binary.BigEndian.PutUint32(f.data[rel+4:], BlankMagicCode)
			})
		}
		if err != nil {
			return 0, err
		}
		c.maxOffset.Store(f.end())
		cur, f = f.end(), nil
	}
	if f == nil {
		// The new segment is reserved before it is listed, where the warmer
		// could claim its first chunk: the warmer's chunk lies in a listed
		// file, below cur, so this never fails.
		if c.warm != nil && !c.warm.tryReserve(cur, cur+int64(n), direct) {
			return 0, errWaitWarm
		}
		var err error
		if f, err = c.roll(cur); err != nil {
			return 0, err
		}
	}
	rel := cur - f.start
	if direct {
		b := c.scratch(n)
		write(b, cur)
		if err := pwriteAt(f, b, rel); err != nil {
			return 0, err
		}
	} else if err := GuardFault(func() { write(f.data[rel:rel+int64(n)], cur) }); err != nil {
		// Segments are preallocated, but where the filesystem cannot do that
		// a full disk faults the write; nothing is published then.
		return 0, err
	}
	c.maxOffset.Store(cur + int64(n))
	return cur, nil
}

// segmentReady reports whether the segment starting at start can be listed
// without waiting for the disk (always, without an allocator: roll creates
// it then), or the error its allocation failed with.
func (c *commitLog) segmentReady(start int64) (bool, error) {
	if c.alloc == nil {
		return true, nil
	}
	return c.alloc.ready(start)
}

// The ErrWouldBlock of appendLocked, by what it would wait for: the
// creation of the segment starting at start (a *waitSegmentError, which
// is errWaitSegment), or the warmer's chunk (errWaitWarm).
var (
	errWaitSegment = fmt.Errorf("%w: the next commitlog file is not created yet", ErrWouldBlock)
	errWaitWarm    = fmt.Errorf("%w: the commitlog range is being warmed up", ErrWouldBlock)
)

// waitSegmentError is errWaitSegment for the segment starting at start.
// awaitWritable waits for that segment only: once it is listed, the
// allocator's pending request is the segment after it, which the writer
// that was refused does not need (waiting for it held the first sends to a
// new store for the creation of its second 1 GiB file, 0.1-0.5 s).
type waitSegmentError struct{ start int64 }

func (e *waitSegmentError) Error() string { return errWaitSegment.Error() }
func (e *waitSegmentError) Unwrap() error { return errWaitSegment }

// awaitWritable waits, without Store.putMu, until what made appendLocked
// return err (a *waitSegmentError or errWaitWarm) may have changed: the
// segment it named is created (or was listed meanwhile), or the warmer
// finished the chunk it was zeroing.
//
// A wait longer than slowWriterWait is logged: sends stall for that long
// (the disk is slower than the writes, or something is wrong with it).
func (c *commitLog) awaitWritable(err error) {
	start := time.Now() // real time: a diagnostic, not logic
	var seg *waitSegmentError
	switch {
	case errors.As(err, &seg) && c.alloc != nil:
		c.alloc.wait(seg.start)
	case err == errWaitWarm && c.warm != nil:
		c.warm.waitIdle()
	default:
		return
	}
	if waited := time.Since(start); waited > slowWriterWait {
		c.log.Warn().Dur("waited", waited).Int64("offset", c.maxOffset.Load()).Str("for", err.Error()).
			Msg("commitlog: a writer waited long for the disk")
	}
}

// slowWriterWait is the wait in awaitWritable from which it is logged.
const slowWriterWait = time.Second

// last returns the newest file. Only the put path (and recovery) changes
// the tail, but cleanup replaces the list, hence the read lock.
func (c *commitLog) last() *mappedFile {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.files) == 0 {
		return nil
	}
	return c.files[len(c.files)-1]
}

// roll lists the file starting at the file boundary at or below at: the
// allocator's ready file (segmentReady said so), or without an allocator one
// created here.
func (c *commitLog) roll(at int64) (*mappedFile, error) {
	start := at - at%c.fileSize
	var f *mappedFile
	var err error
	if c.alloc != nil {
		f, err = c.alloc.take(start)
	} else {
		f, err = c.createSegment(start)
	}
	if err != nil {
		return nil, err
	}
	if prev := c.last(); prev != nil {
		prev.doneMs.Store(c.now().UnixMilli())
	}
	c.mu.Lock()
	c.files = append(c.files, f)
	c.mu.Unlock()
	return f, nil
}

// flush makes every published byte durable and advances flushedOffset.
func (c *commitLog) flush() error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	if c.beforeFlush != nil {
		c.beforeFlush()
	}
	from, to := c.flushedOffset.Load(), c.maxOffset.Load()
	if to <= from {
		// The dispatcher may have moved on since the last flush.
		c.releaseBehind()
		return nil
	}
	// Files are unmapped only after the flushers stop, so the snapshot stays valid.
	c.mu.RLock()
	files := c.files
	c.mu.RUnlock()
	for _, f := range files {
		if f.end() <= from || f.start >= to {
			continue
		}
		if err := f.sync(max(from, f.start)-f.start, min(to, f.end())-f.start); err != nil {
			return err
		}
	}
	c.flushedOffset.Store(to)
	c.flushes.Add(1)
	c.releaseBehind()
	return nil
}

// close unmaps every file; later reads fail with ErrClosed.
func (c *commitLog) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var first error
	for _, f := range c.files {
		if err := f.close(); err != nil && first == nil {
			first = err
		}
	}
	c.files = nil
	return first
}
