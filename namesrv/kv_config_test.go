package namesrv

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rs/zerolog"
)

func TestKVConfigPersistsAndReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "kvConfig.json")
	m, err := NewKVConfigManager(path, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		do   func() error
	}{
		{name: "put order conf", do: func() error { return m.Put(NamespaceOrderTopicConfig, "T", "broker-a:4") }},
		{name: "put other", do: func() error { return m.Put("NS", "k", "v") }},
		{name: "overwrite", do: func() error { return m.Put("NS", "k", "v2") }},
		{name: "put then delete", do: func() error {
			if err := m.Put("GONE", "k", "v"); err != nil {
				return err
			}
			return m.Delete("GONE", "k")
		}},
		{name: "delete in unknown namespace", do: func() error { return m.Delete("NOPE", "k") }},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"configTable":{"GONE":{},"NS":{"k":"v2"},"ORDER_TOPIC_CONFIG":{"T":"broker-a:4"}}}`
	if string(raw) != want {
		t.Errorf("file = %s\nwant   %s", raw, want)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}

	again, err := NewKVConfigManager(path, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	lookups := []struct {
		ns, key   string
		wantValue string
		wantFound bool
	}{
		{ns: NamespaceOrderTopicConfig, key: "T", wantValue: "broker-a:4", wantFound: true},
		{ns: "NS", key: "k", wantValue: "v2", wantFound: true},
		{ns: "GONE", key: "k"},
		{ns: "NOPE", key: "k"},
	}
	for _, l := range lookups {
		v, found := again.Get(l.ns, l.key)
		if v != l.wantValue || found != l.wantFound {
			t.Errorf("Get(%s,%s) = %q %v, want %q %v", l.ns, l.key, v, found, l.wantValue, l.wantFound)
		}
	}
	if kv, found := again.List("GONE"); !found || len(kv) != 0 {
		t.Errorf("emptied namespace: %v %v, want empty and found", kv, found)
	}
	if _, found := again.List("NOPE"); found {
		t.Errorf("unknown namespace found")
	}
	kv, _ := again.List("NS")
	kv["k"] = "mutated"
	if v, _ := again.Get("NS", "k"); v != "v2" {
		t.Errorf("List returned the live map")
	}
}

func TestKVConfigLoadErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		content *string // nil: no file
		wantErr bool
	}{
		{name: "missing file", content: nil},
		{name: "empty file", content: ptr("")},
		{name: "null table", content: ptr(`{"configTable":null}`)},
		{name: "corrupt file", content: ptr(`{"configTable":`), wantErr: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "kv"+string(rune('a'+i))+".json")
			if tt.content != nil {
				if err := os.WriteFile(path, []byte(*tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			m, err := NewKVConfigManager(path, zerolog.Nop())
			if tt.wantErr {
				if !errors.Is(err, ErrKVConfigFile) {
					t.Fatalf("err = %v, want ErrKVConfigFile", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Put("N", "k", "v"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestKVConfigWriteFailureIsReported(t *testing.T) {
	sub := filepath.Join(t.TempDir(), "sub")
	m, err := NewKVConfigManager(filepath.Join(sub, "kv.json"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	// The parent directory becomes a file, so every write fails (even as root).
	if err := os.WriteFile(sub, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.Put("N", "k", "v"); !errors.Is(err, ErrKVConfigFile) {
		t.Fatalf("err = %v, want ErrKVConfigFile", err)
	}
	if v, ok := m.Get("N", "k"); !ok || v != "v" {
		t.Errorf("value not kept in memory after a failed write")
	}
}

func TestKVConfigInMemory(t *testing.T) {
	m, err := NewKVConfigManager("", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Put("N", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if kv, ok := m.List("N"); !ok || !reflect.DeepEqual(kv, map[string]string{"k": "v"}) {
		t.Errorf("List = %v %v", kv, ok)
	}
}

func ptr(s string) *string { return &s }
