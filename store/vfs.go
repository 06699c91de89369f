package store

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/rmqio/rmq/internal/mmap"
)

// The file-operation seam. Every write, sync, rename, truncate, fallocate
// and mmap of the files the broker writes goes through an FS passed in
// options: store.Options.FS, and the same value in timer.Options.FS,
// schedule.Options.FS and the broker's config managers. nil is the real
// file system; a test passes an ErrorFS (NewErrorFS), which wraps another FS
// and fails the operations its Injector's rules pick by op, path and count,
// as pebble's vfs/errorfs wraps its vfs.FS. There is no process-wide
// registry: two stores in one process with different FS values never see
// each other's faults, and a store's path decides nothing.

// FS is the file operations of the store. Operations on an open file take
// the *os.File and use its name as the path.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (*os.File, error)
	Write(f *os.File, b []byte) (int, error)
	WriteAt(f *os.File, b []byte, off int64) (int, error)
	// Sync is fsync; Fdatasync syncs the data only; Msync syncs the part
	// b of a shared mapping of name, which starts at byte off of the file
	// (msync MS_SYNC).
	Sync(f *os.File) error
	Fdatasync(f *os.File) error
	Msync(name string, f *os.File, b []byte, off int64) error
	Mmap(f *os.File, size int) ([]byte, error)
	Truncate(f *os.File, size int64) error
	Fallocate(f *os.File, size int64) error
	Rename(oldpath, newpath string) error
}

// Op is a kind of file operation, as Rule matches it.
type Op uint8

const (
	OpOpen Op = iota
	OpWrite
	OpSync     // Sync: fsync of a file or directory
	OpDatasync // Fdatasync (the commitlog warmer's)
	OpMsync    // Msync: the flush of a mapped file's range
	OpRename
	OpTruncate
	OpFallocate
	OpMmap
)

func (o Op) String() string {
	return [...]string{"open", "write", "sync", "datasync", "msync", "rename", "truncate", "fallocate", "mmap"}[o]
}

// osFS is the real file system.
type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
func (osFS) Write(f *os.File, b []byte) (int, error)              { return f.Write(b) }
func (osFS) WriteAt(f *os.File, b []byte, off int64) (int, error) { return f.WriteAt(b, off) }
func (osFS) Sync(f *os.File) error                                { return f.Sync() }
func (osFS) Fdatasync(f *os.File) error                           { return syncData(f) }
func (osFS) Truncate(f *os.File, size int64) error                { return f.Truncate(size) }
func (osFS) Fallocate(f *os.File, size int64) error               { return preallocate(f, size) }
func (osFS) Rename(oldpath, newpath string) error                 { return os.Rename(oldpath, newpath) }

func (osFS) Msync(_ string, f *os.File, b []byte, _ int64) error {
	if len(b) == 0 {
		return nil
	}
	return mmap.Sync(f, b)
}

func (osFS) Mmap(f *os.File, size int) ([]byte, error) { return mmap.Map(f, int64(size)) }

// OSFS returns the real file system, which a nil Options.FS stands for.
func OSFS() FS { return osFS{} }

// OrOS returns fs, or the real file system when fs is nil (the zero
// value of every FS option).
func OrOS(fs FS) FS {
	if fs == nil {
		return osFS{}
	}
	return fs
}

// NewErrorFS returns an ErrorFS over the real file system whose operations
// fail as inj decides.
func NewErrorFS(inj *Injector) *ErrorFS { return &ErrorFS{FS: osFS{}, Inj: inj} }

// ErrInjected is the default error of an injected fault; it wraps EIO.
var ErrInjected = fmt.Errorf("injected I/O fault: %w", syscall.EIO)

// Rule is one fault to inject.
type Rule struct {
	Op Op
	// Nth fails only the Nth matching operation (1-based, counted from when
	// the rule was added); 0 fails every one.
	Nth int
	// Path, when set, matches only operations on paths containing it
	// (with Exact, only on Path itself: a directory, not its files).
	Path  string
	Exact bool
	// Data, when set, matches only writes of bytes it accepts (e.g. the
	// records of one topic, not the warmer's zeros).
	Data func(b []byte) bool
	// Partial makes a failing write store the first half of its bytes
	// before it fails (a torn write).
	Partial bool
	// Err is the error returned (ErrInjected when nil).
	Err error
	// Stall, when set, makes a matching operation wait until Stall is
	// closed and then succeed: a slow disk, not a failing one.
	Stall <-chan struct{}

	seen int
}

// Injector decides which operations fail. Its methods are safe for
// concurrent use.
type Injector struct {
	mu    sync.Mutex
	rules []*Rule
	hits  []string
	// lost holds, per path, the byte ranges [from, to) whose msync failed
	// and that no write has covered since (Unsynced).
	lost map[string][][2]int64
}

// Add adds a rule.
func (i *Injector) Add(r Rule) {
	i.mu.Lock()
	i.rules = append(i.rules, &r)
	i.mu.Unlock()
}

// Clear removes every rule; the record of faults injected is kept.
func (i *Injector) Clear() {
	i.mu.Lock()
	i.rules = nil
	i.mu.Unlock()
}

// Hits lists the faults injected so far, as "op path".
func (i *Injector) Hits() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return append([]string(nil), i.hits...)
}

// Unsynced returns the byte ranges of the file at path whose msync failed
// and that no write has covered since. It models what Linux does when
// writeback fails: the pages are marked clean (the error is reported once),
// so a later msync or fsync of the range succeeds without writing them, and
// their bytes reach the disk only if they are written again. Durable data
// must never be claimed for such a range.
func (i *Injector) Unsynced(path string) [][2]int64 {
	i.mu.Lock()
	defer i.mu.Unlock()
	return append([][2]int64(nil), i.lost[path]...)
}

// syncFailed records that the msync of [from, to) of path failed.
func (i *Injector) syncFailed(path string, from, to int64) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.lost == nil {
		i.lost = map[string][][2]int64{}
	}
	i.lost[path] = append(i.lost[path], [2]int64{from, to})
}

// written records that [from, to) of path was written again (dirtied).
func (i *Injector) written(path string, from, to int64) {
	i.mu.Lock()
	defer i.mu.Unlock()
	var keep [][2]int64
	for _, r := range i.lost[path] {
		if r[0] < from {
			keep = append(keep, [2]int64{r[0], min(r[1], from)})
		}
		if r[1] > to {
			keep = append(keep, [2]int64{max(r[0], to), r[1]})
		}
	}
	if keep == nil {
		delete(i.lost, path)
	} else {
		i.lost[path] = keep
	}
}

// check returns the rule that fails this operation, if any.
func (i *Injector) check(op Op, path string, b []byte) *Rule {
	r := i.match(op, path, b)
	if r != nil && r.Stall != nil {
		<-r.Stall
		return nil
	}
	return r
}

func (i *Injector) match(op Op, path string, b []byte) *Rule {
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, r := range i.rules {
		if r.Op != op || (r.Path != "" && !strings.Contains(path, r.Path)) || (r.Exact && path != r.Path) || (r.Data != nil && !r.Data(b)) {
			continue
		}
		r.seen++
		if r.Nth == 0 || r.seen == r.Nth {
			i.hits = append(i.hits, op.String()+" "+path)
			return r
		}
	}
	return nil
}

func (r *Rule) err(op Op, path string) error {
	err := r.Err
	if err == nil {
		err = ErrInjected
	}
	return &os.PathError{Op: op.String(), Path: path, Err: err}
}

// ErrorFS is an FS whose operations fail as Inj decides.
type ErrorFS struct {
	FS
	Inj *Injector
}

func (e *ErrorFS) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	if r := e.Inj.check(OpOpen, name, nil); r != nil {
		return nil, r.err(OpOpen, name)
	}
	return e.FS.OpenFile(name, flag, perm)
}

func (e *ErrorFS) Write(f *os.File, b []byte) (int, error) {
	if r := e.Inj.check(OpWrite, f.Name(), b); r != nil {
		n := 0
		if r.Partial {
			n, _ = e.FS.Write(f, b[:len(b)/2])
		}
		return n, r.err(OpWrite, f.Name())
	}
	return e.FS.Write(f, b)
}

func (e *ErrorFS) WriteAt(f *os.File, b []byte, off int64) (int, error) {
	if r := e.Inj.check(OpWrite, f.Name(), b); r != nil {
		n := 0
		if r.Partial {
			n, _ = e.FS.WriteAt(f, b[:len(b)/2], off)
			e.Inj.written(f.Name(), off, off+int64(n))
		}
		return n, r.err(OpWrite, f.Name())
	}
	n, err := e.FS.WriteAt(f, b, off)
	e.Inj.written(f.Name(), off, off+int64(n))
	return n, err
}

func (e *ErrorFS) Sync(f *os.File) error {
	if r := e.Inj.check(OpSync, f.Name(), nil); r != nil {
		return r.err(OpSync, f.Name())
	}
	return e.FS.Sync(f)
}

func (e *ErrorFS) Fdatasync(f *os.File) error {
	if r := e.Inj.check(OpDatasync, f.Name(), nil); r != nil {
		return r.err(OpDatasync, f.Name())
	}
	return e.FS.Fdatasync(f)
}

func (e *ErrorFS) Msync(name string, f *os.File, b []byte, off int64) error {
	if r := e.Inj.check(OpMsync, name, nil); r != nil {
		e.Inj.syncFailed(name, off, off+int64(len(b)))
		return r.err(OpMsync, name)
	}
	return e.FS.Msync(name, f, b, off)
}

func (e *ErrorFS) Mmap(f *os.File, size int) ([]byte, error) {
	if r := e.Inj.check(OpMmap, f.Name(), nil); r != nil {
		return nil, r.err(OpMmap, f.Name())
	}
	return e.FS.Mmap(f, size)
}

func (e *ErrorFS) Truncate(f *os.File, size int64) error {
	if r := e.Inj.check(OpTruncate, f.Name(), nil); r != nil {
		return r.err(OpTruncate, f.Name())
	}
	return e.FS.Truncate(f, size)
}

func (e *ErrorFS) Fallocate(f *os.File, size int64) error {
	if r := e.Inj.check(OpFallocate, f.Name(), nil); r != nil {
		return r.err(OpFallocate, f.Name())
	}
	return e.FS.Fallocate(f, size)
}

func (e *ErrorFS) Rename(oldpath, newpath string) error {
	if r := e.Inj.check(OpRename, newpath, nil); r != nil {
		return r.err(OpRename, newpath)
	}
	return e.FS.Rename(oldpath, newpath)
}
