package sdklog

import (
	"os"
	"testing"
)

// RemoveAfter removes a log the run made and leaves one that was there.
func TestRemoveAfter(t *testing.T) {
	if _, err := os.Stat(Path); err == nil {
		t.Skipf("%s exists: it is not this test's to remove", Path)
	}
	done := RemoveAfter()
	if err := os.WriteFile(Path, []byte("{}\n"), 0o644); err != nil {
		t.Skipf("cannot write %s: %v", Path, err)
	}
	keep := RemoveAfter() // Path exists now: not this caller's
	keep()
	if _, err := os.Stat(Path); err != nil {
		t.Fatalf("a log that existed before was removed: %v", err)
	}
	done()
	if _, err := os.Stat(Path); !os.IsNotExist(err) {
		t.Fatalf("the run's log is still there: %v", err)
	}
}
