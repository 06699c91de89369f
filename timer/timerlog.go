package timer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/rmqio/rmq/internal/mmap"
	"github.com/rmqio/rmq/store"
)

// timerLog is the append-only sequence of 52-byte units in segment files
// named by their 20-digit start position. Segments are mapped shared, so an
// appended unit is in the page cache at once; sync makes it durable. A unit
// never spans files: when fewer than unit+blank bytes are left, the rest of the
// file becomes a blank filler and the unit goes to the next file.
//
// Segments are sparse files (a new one is truncated to its size, not
// preallocated), so on a full disk the first write into a page not yet
// backed by a block faults (SIGBUS on tmpfs and ext4 alike). Every write into
// the mapping therefore runs under store.GuardFault, which answers the fault
// as store.ErrDiskFull: the unit counts as not written (end does not move)
// and the caller retries it later. Preallocating instead would show the full
// disk at segment creation but reserve a whole segment (100 MiB) of disk,
// or of memory on tmpfs, for every timer log segment; older segments are
// sparse anyway, so the guard is needed either way. File operations go
// through Options.FS (the store's FS seam, store/vfs.go), so tests can
// inject faults.
//
// The owner serialises all calls (TimerStore.mu).
type timerLog struct {
	fs       store.FS // Options.FS, never nil
	dir      string
	fileSize int64 // size of new segments
	segs     []*segment
	end      int64 // append position: global offset of the next unit
	synced   int64 // everything below is durable
	released int64 // pages below were released once synced (releaseSynced)
	reads    int   // units read since the released range was last swept
}

// Release of TimerLog pages from the broker's page tables, as the store's
// commitlog does (store/commitlog_release.go): every unit appended through
// the shared mapping would otherwise stay resident, 52 bytes per timer
// ever written, so ten million pending timers kept half a gigabyte mapped.
// Once synced, units more than logKeep behind the synced end are released
// (mmap.Release: the pages stay in the page cache, and a read faults them
// back without I/O). Reads of older units (a slot coming due, recovery,
// the stats walk) map pages back in; after readSweep reads, the whole
// released range is swept again, so at most that many pages come back
// between sweeps.
//
//	segments: | released, read pages swept back out |<-- logKeep -->| ... |
//	          first()                      released ^        synced ^  end ^
const (
	logKeep   = 8 << 20 // bytes kept mapped behind the synced end
	logStep   = 4 << 20 // release in steps of at least this much
	readSweep = 8192    // units read between two sweeps of the released range
)

type segment struct {
	fs    store.FS
	path  string
	start int64
	f     *os.File
	data  []byte
	sync  store.MappedSync // flushMu
}

func (s *segment) endPos() int64 { return s.start + int64(len(s.data)) }

var errTimerLogFull = errors.New("timer: timer log segment size too small")

func segmentName(start int64) string { return fmt.Sprintf("%020d", start) }

// openTimerLog maps every segment of dir. Segments must follow each other
// without gaps; anything after a gap is removed (it cannot be reached).
// end is left at the start of the first segment: recovery finds the real end.
func openTimerLog(fs store.FS, dir string, fileSize int64) (*timerLog, error) {
	if fileSize < unitSize+blankSize {
		return nil, fmt.Errorf("%w: %d bytes, need at least %d", errTimerLogFull, fileSize, unitSize+blankSize)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var starts []int64
	for _, e := range ents {
		if n, err := strconv.ParseInt(e.Name(), 10, 64); err == nil && len(e.Name()) == 20 && !e.IsDir() && n >= 0 {
			starts = append(starts, n)
		}
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	l := &timerLog{fs: store.OrOS(fs), dir: dir, fileSize: fileSize}
	for i, st := range starts {
		path := filepath.Join(dir, segmentName(st))
		if i > 0 && st != l.segs[len(l.segs)-1].endPos() {
			for _, rest := range starts[i:] {
				os.Remove(filepath.Join(dir, segmentName(rest)))
			}
			break
		}
		info, err := os.Stat(path)
		if err != nil {
			l.close()
			return nil, err
		}
		size := info.Size()
		if size < unitSize+blankSize {
			size = fileSize
		}
		seg, err := mapSegment(l.fs, path, st, size)
		if err != nil {
			l.close()
			return nil, err
		}
		l.segs = append(l.segs, seg)
	}
	if len(l.segs) > 0 {
		l.end = l.segs[0].start
		l.synced = l.end
	}
	return l, nil
}

// mapSegment opens (creating) the segment file at path, sized to size bytes,
// and maps it. A file this call created is removed again when a later step
// fails, so a segment that could not be made leaves nothing behind.
func mapSegment(fs store.FS, path string, start, size int64) (seg *segment, err error) {
	_, statErr := os.Stat(path)
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, store.DiskErr(err)
	}
	defer func() {
		if err != nil {
			f.Close()
			if statErr != nil {
				_ = os.Remove(path)
			}
		}
	}()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() != size {
		if err := fs.Truncate(f, size); err != nil {
			return nil, fmt.Errorf("timer: truncate %s: %w", path, store.DiskErr(err))
		}
	}
	data, err := fs.Mmap(f, int(size))
	if err != nil {
		return nil, fmt.Errorf("timer: mmap %s: %w", path, err)
	}
	return &segment{fs: fs, path: path, start: start, f: f, data: data}, nil
}

func (s *segment) close() error {
	var errs []error
	if s.data != nil {
		errs = append(errs, mmap.Unmap(s.data))
		s.data = nil
	}
	errs = append(errs, s.f.Close())
	return errors.Join(errs...)
}

// msync makes data[from:to) durable, and a range whose msync failed before
// with it (store.MappedSync): flush calls it under flushMu.
func (s *segment) msync(from, to int64) error {
	if to <= from {
		return nil
	}
	if err := s.sync.Sync(s.fs, s.path, s.f, s.data, from, to); err != nil {
		return fmt.Errorf("timer: %w", err)
	}
	return nil
}

// first is the lowest position still stored.
func (l *timerLog) first() int64 {
	if len(l.segs) == 0 {
		return l.end
	}
	return l.segs[0].start
}

func (l *timerLog) segFor(pos int64) *segment {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].endPos() > pos })
	if i == len(l.segs) || pos < l.segs[i].start {
		return nil
	}
	return l.segs[i]
}

// read returns the intact unit at pos, which must be below end.
func (l *timerLog) read(pos int64) (unit, bool) {
	if pos < 0 || pos+unitSize > l.end {
		return unit{}, false
	}
	s := l.segFor(pos)
	if s == nil || pos+unitSize > s.endPos() {
		return unit{}, false
	}
	off := pos - s.start
	u, ok := decodeUnit(s.data[off : off+unitSize])
	if pos < l.released {
		if l.reads++; l.reads >= readSweep {
			l.sweepReleased()
		}
	}
	return u, ok
}

// append writes u at the end and returns its position. On a full disk it
// returns an error wrapping store.ErrDiskFull and end stays where it was:
// bytes of a unit or filler a fault cut short lie beyond end, where nothing
// reads them, and the next append writes over them.
func (l *timerLog) append(u *unit) (int64, error) {
	s := l.segFor(l.end)
	if s != nil && s.endPos()-l.end < unitSize+blankSize {
		if err := store.GuardFault(func() { putBlank(s.data[l.end-s.start:]) }); err != nil {
			return 0, fmt.Errorf("timer: append to %s: %w", s.path, err)
		}
		l.end = s.endPos()
		s = nil
	}
	if s == nil {
		var err error
		if s, err = l.addSegment(l.end); err != nil {
			return 0, err
		}
	}
	pos := l.end
	if err := s.encodeAt(pos, u); err != nil {
		return 0, err
	}
	l.end += unitSize
	return pos, nil
}

// encodeAt writes u at the global position pos, which s holds, under the
// fault guard.
func (s *segment) encodeAt(pos int64, u *unit) error {
	off := pos - s.start
	if err := store.GuardFault(func() { u.encode(s.data[off : off+unitSize]) }); err != nil {
		return fmt.Errorf("timer: write %s at %d: %w", s.path, off, err)
	}
	return nil
}

func (l *timerLog) addSegment(start int64) (*segment, error) {
	seg, err := mapSegment(l.fs, filepath.Join(l.dir, segmentName(start)), start, l.fileSize)
	if err != nil {
		return nil, err
	}
	l.segs = append(l.segs, seg)
	return seg, nil
}

// scan calls fn for every intact unit from pos on (crossing fillers) and
// returns the position after the last one: the first byte that is neither a
// unit nor a filler. It reads past end: recovery uses it to find end.
//
// Reading past end can touch a hole, and on tmpfs even a read of a hole page
// of a shared mapping allocates it, which faults on a full disk. A hole holds
// no unit (none was written there), so a fault ends the scan where it
// happened; the scan runs under one guard, not one per unit.
func (l *timerLog) scan(pos int64, fn func(pos int64, u unit) bool) int64 {
	_ = store.GuardFault(func() { l.scanFrom(&pos, fn) })
	return pos
}

// scanFrom is scan, moving *pos as it goes so that a fault leaves it at the
// unit being read.
func (l *timerLog) scanFrom(pos *int64, fn func(pos int64, u unit) bool) {
	for {
		s := l.segFor(*pos)
		if s == nil {
			return
		}
		rest := s.data[*pos-s.start:]
		if isBlank(rest) {
			*pos = s.endPos()
			continue
		}
		u, ok := decodeUnit(rest)
		if !ok || (fn != nil && !fn(*pos, u)) {
			return
		}
		*pos += unitSize
	}
}

// truncate makes pos the end: bytes after it are zeroed and later segments
// removed. The zeroing is synced so that a unit cut off here cannot come back.
func (l *timerLog) truncate(pos int64) error {
	if pos < l.first() {
		pos = l.first()
	}
	var errs []error
	keep := l.segs[:0]
	for _, s := range l.segs {
		switch {
		case s.start > pos || (s.start == pos && s != l.segs[0]):
			errs = append(errs, s.close(), os.Remove(s.path))
			continue
		case s.endPos() > pos:
			errs = append(errs, s.zeroFrom(pos-s.start))
		}
		keep = append(keep, s)
	}
	l.segs = keep
	l.end = pos
	l.synced = min(l.synced, pos)
	l.released = min(l.released, pos)
	return errors.Join(errs...)
}

// zeroFrom zeroes data[from:] and syncs what it changed. Only the file's data
// regions are read and only pages holding a non-zero byte are written: after a
// clean stop the tail is a hole or zero, and rewriting the rest of a 100 MiB
// segment on every start would cost a large synced write.
func (s *segment) zeroFrom(from int64) error {
	// The pages cleared hold data, so they have their blocks and clearing
	// them needs no space; the guard covers a file changed behind the
	// mapping.
	page := mmap.PageSize
	lo, hi := int64(-1), int64(-1)
	err := store.GuardFault(func() {
		for _, r := range store.DataRegions(s.f, from, int64(len(s.data))) {
			for p := r[0]; p < r[1]; {
				e := min((p/page+1)*page, r[1])
				if b := s.data[p:e]; !allZero(b) {
					clear(b)
					if lo < 0 {
						lo = p
					}
					hi = e
				}
				p = e
			}
		}
	})
	if err != nil {
		return fmt.Errorf("timer: zero %s: %w", s.path, err)
	}
	if lo < 0 {
		return nil
	}
	return s.msync(lo, hi)
}

// removeBelow deletes whole segments that end at or before pos, never the one
// holding end. It returns how many were removed.
func (l *timerLog) removeBelow(pos int64) (int, error) {
	n := 0
	var errs []error
	for len(l.segs) > 1 && l.segs[0].endPos() <= pos && l.segs[0].endPos() <= l.end {
		s := l.segs[0]
		errs = append(errs, s.close(), os.Remove(s.path))
		l.segs = l.segs[1:]
		n++
	}
	return n, errors.Join(errs...)
}

func (l *timerLog) close() error {
	var errs []error
	for _, s := range l.segs {
		errs = append(errs, s.close())
	}
	l.segs = nil
	return errors.Join(errs...)
}

// syncRange is part of a segment to msync.
type syncRange struct {
	seg      *segment
	from, to int64 // offsets inside the segment
}

// pendingSyncs lists what must be synced for every unit below to to be
// durable. The msyncs run without the store lock; segments are only unmapped
// by cleanup, which is serialised with them.
func (l *timerLog) pendingSyncs(to int64) []syncRange {
	var out []syncRange
	for _, s := range l.segs {
		if s.endPos() <= l.synced || s.start >= to {
			continue
		}
		out = append(out, syncRange{seg: s, from: max(l.synced, s.start) - s.start, to: min(to, s.endPos()) - s.start})
	}
	return out
}

func (l *timerLog) markSynced(to int64) error {
	if to > l.synced {
		l.synced = to
	}
	return l.releaseSynced()
}

// keep is what stays mapped behind the synced end, and step the least a
// release unmaps: smaller for small (test) segments.
func (l *timerLog) keep() int64 { return min(int64(logKeep), l.fileSize/4) }
func (l *timerLog) step() int64 { return min(int64(logStep), max(l.fileSize/16, 1)) }

// releaseSynced releases the pages more than keep below the synced end once
// that is a step beyond the last release.
func (l *timerLog) releaseSynced() error {
	upTo := l.synced - l.keep()
	if upTo-l.released < l.step() {
		return nil
	}
	err := l.releaseRange(l.released, upTo)
	l.released = upTo
	return err
}

// sweepReleased releases again the pages reads mapped back below released.
func (l *timerLog) sweepReleased() {
	l.reads = 0
	_ = l.releaseRange(l.first(), l.released) // only costs memory; the next sweep retries
}

// releaseRange releases the whole pages of [from, upTo) in every segment.
func (l *timerLog) releaseRange(from, upTo int64) error {
	var errs []error
	for _, s := range l.segs {
		if err := mmap.ReleasePages(s.data, from-s.start, min(upTo, s.endPos())-s.start); err != nil {
			errs = append(errs, fmt.Errorf("timer: release %s: %w", s.path, err))
		}
	}
	return errors.Join(errs...)
}
