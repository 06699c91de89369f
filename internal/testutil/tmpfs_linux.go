//go:build linux

package testutil

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of size bytes on a new temporary directory for the
// test and returns it; it is unmounted when the test ends. It needs root (CI
// runs as root) and skips the test otherwise. A tmpfs is a real disk that
// fills: a write into a sparse page of a mapped file on it raises SIGBUS
// when it is full, as on ext4, which a fault injected through the store's FS
// seam cannot show.
func Tmpfs(t testing.TB, size int64) string {
	t.Helper()
	dir := t.TempDir()
	MountTmpfs(t, dir, size)
	return dir
}

// MountTmpfs mounts a tmpfs of size bytes on dir (created if missing) until
// the test ends, e.g. on one directory of a store, so that only the files
// there meet the full disk.
func MountTmpfs(t testing.TB, dir string, size int64) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs (CI runs as root); skipped")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (%v: %s); skipped", err, out)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("umount: %v", err)
		}
	})
}

// FillDisk writes the file path until its file system is full (ENOSPC) and
// returns how many bytes it wrote; removing path frees them again.
func FillDisk(t testing.TB, path string) int64 {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("testutil: ballast: %v", err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var n int64
	for len(buf) > 0 {
		w, err := f.Write(buf)
		n += int64(w)
		switch {
		case errors.Is(err, syscall.ENOSPC):
			buf = buf[:len(buf)/2] // fill the last pages too
		case err != nil:
			t.Fatalf("testutil: ballast %s: %v", filepath.Base(path), err)
		}
	}
	return n
}
