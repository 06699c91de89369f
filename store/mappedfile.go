package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/rmqio/rmq/internal/mmap"
)

// fileNameDigits is the width of segment file names (UtilAll.offset2FileName).
const fileNameDigits = 20

// segmentName formats a segment's start offset as its file name.
func segmentName(start int64) string {
	return fmt.Sprintf("%0*d", fileNameDigits, start)
}

// parseSegmentName returns the start offset encoded in a segment file name.
func parseSegmentName(name string) (int64, bool) {
	if len(name) != fileNameDigits {
		return 0, false
	}
	v, err := strconv.ParseInt(name, 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

var pageSize = mmap.PageSize

// mappedFile is one fixed-size segment file mapped read-write and shared, so
// that bytes copied into data are in the page cache at once (a killed process
// loses nothing written) and msync makes them durable. The owner serialises
// writes, flushes and unmap; readers may read data below the published write
// position of the owner concurrently.
type mappedFile struct {
	path  string
	fs    FS    // the store's (Options.FS): every write, sync and truncate of file
	start int64 // global offset of data[0]
	file  *os.File
	data  []byte
	// doneMs is when the writer moved past this commitlog file (Unix ms on
	// the store clock); 0 while it is written or when unknown (then the
	// file's modification time counts). Retention ages files by it.
	doneMs atomic.Int64

	// syncMu serialises sync and guards msync, which rewrites a range
	// whose msync failed before the next one.
	syncMu sync.Mutex
	msync  MappedSync
}

// openMappedFile opens the existing segment file at path, sized to size
// bytes, and maps it. A shorter file is extended with zeros (loaders allow
// that only for the newest file, see checkSegments) and prepared as
// createMappedFile prepares a new one; a longer one is refused.
func openMappedFile(fs FS, path string, start, size int64, prealloc bool) (*mappedFile, error) {
	return mapSegment(fs, path, start, size, prealloc, false, true)
}

// createMappedFile creates the segment file at path, sized to size bytes,
// and maps it. Every step of the creation runs whether or not the file is
// already there: a file left by an attempt that failed part-way (its
// fallocate, or the fsync of the file or of its directory) has its full
// size but not what the failed step was to give it, so the retry must not
// take its size as proof of a complete creation. A file this call created
// is removed again when a step fails. With prealloc the space is reserved
// on disk up front where the OS supports it, so a full disk shows as
// ErrDiskFull here; without it the file stays sparse and a write into it on
// a full disk faults, which callers turn into ErrDiskFull with GuardFault.
func createMappedFile(fs FS, path string, start, size int64, prealloc bool) (*mappedFile, error) {
	return mapSegment(fs, path, start, size, prealloc, true, true)
}

// createMappedFileUnsynced is createMappedFile without preallocation and
// without the fsyncs of the file and its directory, for files written by the
// dispatcher (consume queues): their creation must not hold up dispatch,
// and the consume-queue flush makes it durable (syncCreation) before the
// checkpoint counts a unit in them. A crash before that leaves the file
// missing, empty or sparse, all of which loading accepts for the newest
// files, and recovery dispatches the units again.
func createMappedFileUnsynced(fs FS, path string, start, size int64) (*mappedFile, error) {
	return mapSegment(fs, path, start, size, false, true, false)
}

// syncCreation fsyncs a file made by createMappedFileUnsynced as a whole
// (its size and every page written so far). A failed fsync may have marked
// dirty pages clean without writing them, so it records [0, wrote) as a
// failed range: the next sync writes it again from the mapping (see sync).
func (m *mappedFile) syncCreation(wrote int64) error {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	if err := m.fs.Sync(m.file); err != nil {
		m.msync.failed(0, wrote)
		return fmt.Errorf("store: fsync %s: %w", m.path, err)
	}
	return nil
}

// mapSegment is openMappedFile (create false: the steps of a creation run
// only for a file shorter than size), createMappedFile and (durable false:
// no fsync of the file or its directory) createMappedFileUnsynced.
func mapSegment(fs FS, path string, start, size int64, prealloc, create, durable bool) (mf *mappedFile, err error) {
	fs = OrOS(fs)
	_, statErr := os.Stat(path)
	existed := statErr == nil
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
			if create && !existed {
				_ = os.Remove(path)
			}
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > size {
		return nil, fmt.Errorf("%w: %s has %d bytes, want %d", ErrCorrupt, path, st.Size(), size)
	}
	if st.Size() < size || create {
		if st.Size() < size {
			if err := fs.Truncate(f, size); err != nil {
				return nil, DiskErr(err)
			}
		}
		if prealloc {
			if err := fs.Fallocate(f, size); err != nil {
				return nil, DiskErr(err)
			}
		}
		if durable {
			if err := fs.Sync(f); err != nil {
				return nil, err
			}
			if err := syncDir(fs, filepath.Dir(path)); err != nil {
				return nil, err
			}
		}
	}
	data, err := fs.Mmap(f, int(size))
	if err != nil {
		return nil, fmt.Errorf("store: mmap %s: %w", path, err)
	}
	return &mappedFile{path: path, fs: fs, start: start, file: f, data: data}, nil
}

// adviseRandom turns off read-ahead for faults on m. Files written through
// the mapping from empty (consume queues) or read at random (index files)
// gain nothing from it, and it is costly: the first fault in a sparse region
// reads a whole read-ahead window (8 MiB on this project's test machine) of
// holes into the page cache, zero-filling every page of it. A new consume
// queue file took 1.2 ms for its first unit on an idle machine and ~16 ms
// after a few GB of writes (workload 4 of bench/compare), each time holding up
// the dispatcher. Pages already in the cache are mapped as before.
func (m *mappedFile) adviseRandom() {
	madviseRandom(m.data)
}

func (m *mappedFile) size() int64 { return int64(len(m.data)) }

// end is the global offset just past the file.
func (m *mappedFile) end() int64 { return m.start + int64(len(m.data)) }

// sync makes data[from:to) durable (MappedSync.Sync). It covers bytes
// pwritten there as well as bytes copied into the mapping (mmap.Sync).
// Callers advance their flushed offsets only past ranges it synced.
func (m *mappedFile) sync(from, to int64) error {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	if err := m.msync.Sync(m.fs, m.path, m.file, m.data, from, to); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// MappedSync runs the msyncs of one shared mapping of a file and remembers
// the range whose last msync failed (the store's mapped files, the timer
// log's segments). The zero value is ready; callers serialise calls.
//
// A failed msync may have left pages of its range clean but not written
// (Linux marks them clean when writeback fails and reports the error once),
// so a later msync that succeeds proves nothing for them. The next Sync
// therefore first writes the failed range again from the mapping, which
// dirties its pages, and syncs it with its own range.
type MappedSync struct {
	failedFrom, failedTo int64 // empty when equal
}

// failed records [from, to) as a range whose sync failed.
func (s *MappedSync) failed(from, to int64) {
	if to <= from {
		return
	}
	if s.failedTo > s.failedFrom {
		from, to = min(from, s.failedFrom), max(to, s.failedTo)
	}
	s.failedFrom, s.failedTo = from, to
}

// Sync makes data[from:to) durable, data being a shared mapping of f (the
// file path) from its byte 0; from is rounded down to a page boundary
// because msync works on whole pages. It returns nil only when every range
// it was asked to sync since the last nil, this one included, is durable.
func (s *MappedSync) Sync(fs FS, path string, f *os.File, data []byte, from, to int64) error {
	if to <= from {
		return nil
	}
	from &^= pageSize - 1
	if s.failedTo > s.failedFrom {
		if err := rewriteMapped(fs, f, data, s.failedFrom, s.failedTo); err != nil {
			return fmt.Errorf("rewrite %s after a failed msync: %w", path, err)
		}
		from, to = min(from, s.failedFrom), max(to, s.failedTo)
	}
	if err := fs.Msync(path, f, data[from:to], from); err != nil {
		s.failedFrom, s.failedTo = from, to
		return fmt.Errorf("msync %s: %w", path, err)
	}
	s.failedFrom, s.failedTo = 0, 0
	return nil
}

// rewriteChunk bounds the buffer rewriteMapped copies through.
const rewriteChunk = 256 << 10

// rewriteMapped writes data[from:to) to f again (pwrite, through a copy:
// not from the file's own mapping), so that its pages are dirty.
func rewriteMapped(fs FS, f *os.File, data []byte, from, to int64) error {
	buf := make([]byte, min(to-from, rewriteChunk))
	for off := from; off < to; {
		n := copy(buf, data[off:to])
		if _, err := fs.WriteAt(f, buf[:n], off); err != nil {
			return err
		}
		off += int64(n)
	}
	return nil
}

// zero clears data[from:to), skipping pages that are already zero so that a
// mostly empty file is not dirtied. It reports whether anything changed.
func (m *mappedFile) zero(from, to int64) bool {
	changed := false
	for p := from; p < to; {
		q := min((p|(pageSize-1))+1, to)
		chunk := m.data[p:q]
		if !allZero(chunk) {
			clear(chunk)
			changed = true
		}
		p = q
	}
	return changed
}

func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// close unmaps and closes the file. data must not be touched afterwards.
func (m *mappedFile) close() error {
	var errs []error
	if m.data != nil {
		errs = append(errs, mmap.Unmap(m.data))
		m.data = nil
	}
	errs = append(errs, m.file.Close())
	return errors.Join(errs...)
}

// remove closes and deletes the file.
func (m *mappedFile) remove() error {
	err := m.close()
	if rerr := os.Remove(m.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	return err
}

// checkSegments verifies the segment files of dir before any is opened: each
// name is a multiple of size and every file has exactly size bytes, except
// that the newest may be shorter — and is then extended with zeros — when it
// is empty (a crash while creating it) or when other files prove the size (a
// cut tail), and so may the one before it (a cut tail under a segment
// created ahead, commitlog_alloc.go). Anything else usually means the
// configured file size changed, which would misplace every offset, so
// nothing is touched.
func checkSegments(dir string, starts []int64, size int64) error {
	for i, start := range starts {
		name := segmentName(start)
		if start%size != 0 {
			return fmt.Errorf("%w: %s is not a multiple of the file size %d (was the file size changed?)", ErrCorrupt, filepath.Join(dir, name), size)
		}
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		shortOK := i == len(starts)-1 && (st.Size() == 0 || i > 0) ||
			i == len(starts)-2
		if n := st.Size(); n > size || n < size && !shortOK {
			return fmt.Errorf("%w: %s has %d bytes, want %d (was the file size changed?)", ErrCorrupt, filepath.Join(dir, name), n, size)
		}
	}
	return nil
}

// listSegments returns the segment files of dir ordered by start offset,
// ignoring names that are not 20-digit offsets.
func listSegments(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []int64
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if off, ok := parseSegmentName(e.Name()); ok {
			out = append(out, off)
		}
	}
	// ReadDir sorts by name and names are fixed-width, so out is ascending.
	return out, nil
}
