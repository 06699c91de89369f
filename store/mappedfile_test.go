package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestGuardFaultTurnsSIGBUSIntoError(t *testing.T) {
	path := filepath.Join(t.TempDir(), segmentName(0))
	m, err := openMappedFile(nil, path, 0, 2*pageSize, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	if err := GuardFault(func() { m.data[0] = 1 }); err != nil {
		t.Fatalf("ordinary write: %v", err)
	}
	// Cut the file behind the mapping: touching the page now raises SIGBUS.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if err := GuardFault(func() { m.data[pageSize] = 1 }); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("faulting write: err = %v, want ErrDiskFull", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a non-fault panic was swallowed")
		}
	}()
	GuardFault(func() { panic("bug") })
}

func TestSegmentNames(t *testing.T) {
	tests := []struct {
		name  string
		start int64
		ok    bool
	}{
		{name: "00000000000000000000", start: 0, ok: true},
		{name: "00000000001073741824", start: 1 << 30, ok: true},
		{name: "0000000000107374182", ok: false},
		{name: "0000000000107374182x", ok: false},
		{name: "-0000000001073741824", ok: false},
	}
	for _, tt := range tests {
		start, ok := parseSegmentName(tt.name)
		if ok != tt.ok || ok && start != tt.start {
			t.Errorf("parseSegmentName(%q) = %d %v", tt.name, start, ok)
		}
		if tt.ok && segmentName(tt.start) != tt.name {
			t.Errorf("segmentName(%d) = %q", tt.start, segmentName(tt.start))
		}
	}
}
