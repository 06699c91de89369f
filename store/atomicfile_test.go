package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomicKeepsBackup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config", "topics.json")
	for _, content := range []string{`{"v":1}`, `{"v":2}`, `{"v":3}`} {
		if err := WriteFileAtomic(nil, path, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		file string
		want string
	}{
		{file: path, want: `{"v":3}`},
		{file: path + ".bak", want: `{"v":2}`},
	}
	for _, tt := range tests {
		got, err := os.ReadFile(tt.file)
		if err != nil || string(got) != tt.want {
			t.Fatalf("%s = %q %v, want %q", tt.file, got, err, tt.want)
		}
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 2 {
		t.Fatalf("temporary files left behind: %v", ents)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", fi.Mode())
	}
}

func TestReadFileWithBackup(t *testing.T) {
	parseOK := func(got *string) func([]byte) error {
		return func(b []byte) error {
			if string(b) == "broken" {
				return errors.New("parse error")
			}
			*got = string(b)
			return nil
		}
	}
	tests := []struct {
		name    string
		primary *string
		backup  *string
		want    string
		wantErr func(error) bool
	}{
		{name: "primary", primary: ptr("A"), backup: ptr("B"), want: "A"},
		{name: "primary broken", primary: ptr("broken"), backup: ptr("B"), want: "B"},
		{name: "primary empty", primary: ptr(""), backup: ptr("B"), want: "B"},
		{name: "primary missing", backup: ptr("B"), want: "B"},
		{name: "neither", wantErr: func(err error) bool { return errors.Is(err, fs.ErrNotExist) }},
		{name: "both broken", primary: ptr("broken"), backup: ptr("broken"), wantErr: func(err error) bool { return err != nil && !errors.Is(err, fs.ErrNotExist) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.json")
			if tt.primary != nil {
				os.WriteFile(path, []byte(*tt.primary), 0o644)
			}
			if tt.backup != nil {
				os.WriteFile(path+".bak", []byte(*tt.backup), 0o644)
			}
			var got string
			err := ReadFileWithBackup(path, parseOK(&got))
			if tt.wantErr != nil {
				if !tt.wantErr(err) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q %v, want %q", got, err, tt.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }
