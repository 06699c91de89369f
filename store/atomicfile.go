package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// WriteFileAtomic replaces path with data so that a crash leaves either the old
// or the new content: data goes to a temporary file in the same directory,
// which is fsynced and renamed over path, then the directory is fsynced. The
// previous content is kept as path+".bak" (Java MixAll.string2File does the
// same), which ReadFileWithBackup falls back to. On a full disk the error
// wraps ErrDiskFull and path keeps its previous content. The writes, syncs
// and rename go through fsys (nil: the real file system), the FS of the
// store whose files these are.
func WriteFileAtomic(fsys FS, path string, data []byte) error {
	return DiskErr(writeFileAtomic(OrOS(fsys), path, data))
}

func writeFileAtomic(fsys FS, path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := createTemp(fsys, dir, filepath.Base(path)+".tmp")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	if _, err := fsys.Write(tmp, data); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := fsys.Sync(tmp); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := keepBackup(fsys, path); err != nil {
		return err
	}
	if err := fsys.Rename(tmpName, path); err != nil {
		return err
	}
	ok = true
	return syncDir(fsys, dir)
}

// createTemp creates a new file named prefix and a random suffix in dir
// (os.CreateTemp's contract), opened through fsys.
func createTemp(fsys FS, dir, prefix string) (*os.File, error) {
	for try := 0; ; try++ {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		return f, err
	}
}

// keepBackup makes path+".bak" hold the current content of path (if any). A
// hard link is enough: the rename that follows only replaces path's directory
// entry, so the old inode lives on under the .bak name.
func keepBackup(fsys FS, path string) error {
	bak := path + ".bak"
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	if err := os.Remove(bak); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Link(path, bak); err == nil {
		return nil
	}
	return copyFile(fsys, path, bak)
}

func copyFile(fsys FS, src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := fsys.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(in)
	if err != nil {
		out.Close()
		return err
	}
	if _, err := fsys.Write(out, b); err != nil {
		out.Close()
		return err
	}
	if err := fsys.Sync(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// ReadFileWithBackup reads path and hands its content to parse; when path is
// missing, empty or parse fails, it tries path+".bak" the same way (Java
// ConfigManager.load). It returns an error wrapping fs.ErrNotExist when neither
// file exists, or the parse error of the primary file when both fail to parse.
func ReadFileWithBackup(path string, parse func([]byte) error) error {
	var firstErr error
	for _, p := range []string{path, path + ".bak"} {
		data, err := os.ReadFile(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			if firstErr == nil {
				firstErr = err
			}
			continue
		case len(data) == 0:
			continue
		}
		if err := parse(data); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", p, err)
			}
			continue
		}
		return nil
	}
	if firstErr != nil {
		return firstErr
	}
	return fmt.Errorf("%s: %w", path, fs.ErrNotExist)
}

// syncDir fsyncs a directory so that entries created or renamed in it survive
// a crash.
func syncDir(fsys FS, dir string) error {
	if !canSyncDir {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = fsys.Sync(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
