package namesrv

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/remoting"
)

// NamespaceOrderTopicConfig holds "brokerName:queueNums;..." per topic for
// ordered topics (NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG).
const NamespaceOrderTopicConfig = "ORDER_TOPIC_CONFIG"

// kvConfigFile is the on-disk form, the Java KVConfigSerializeWrapper.
type kvConfigFile struct {
	ConfigTable map[string]map[string]string `json:"configTable"`
}

// KVConfigManager is the name server's namespace → key → value store. With a
// path it is loaded at creation and rewritten whole (temp file + rename) after
// every change, so the file is always either the old or the new table.
type KVConfigManager struct {
	path string
	log  zerolog.Logger

	mu    sync.RWMutex
	table map[string]map[string]string
}

// ErrKVConfigFile marks a KV config file that exists but cannot be used.
var ErrKVConfigFile = errors.New("namesrv: kv config file")

// NewKVConfigManager loads path ("" = memory only; a missing file = empty).
func NewKVConfigManager(path string, log zerolog.Logger) (*KVConfigManager, error) {
	m := &KVConfigManager{path: path, log: log, table: make(map[string]map[string]string)}
	if path == "" {
		return m, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKVConfigFile, err)
	}
	if len(b) == 0 {
		return m, nil
	}
	var f kvConfigFile
	if err := remoting.UnmarshalBody(b, &f); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrKVConfigFile, path, err)
	}
	for ns, kv := range f.ConfigTable {
		if kv == nil {
			kv = make(map[string]string)
		}
		m.table[ns] = kv
	}
	log.Info().Str("path", path).Int("namespaces", len(m.table)).Msg("kv config loaded")
	return m, nil
}

// Put sets a value, creating its namespace when needed, then persists.
func (m *KVConfigManager) Put(namespace, key, value string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	kv := m.table[namespace]
	if kv == nil {
		kv = make(map[string]string)
		m.table[namespace] = kv
	}
	kv[key] = value
	m.log.Info().Str("namespace", namespace).Str("key", key).Str("value", value).Msg("kv config put")
	return m.persistLocked()
}

// Get returns a value.
func (m *KVConfigManager) Get(namespace, key string) (string, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v, ok := m.table[namespace][key]
	return v, ok
}

// Delete removes a key, then persists. An emptied namespace stays known (as in
// Java), so listing it afterwards yields an empty table rather than "not found".
func (m *KVConfigManager) Delete(namespace, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	kv := m.table[namespace]
	if kv == nil {
		return nil
	}
	delete(kv, key)
	m.log.Info().Str("namespace", namespace).Str("key", key).Msg("kv config delete")
	return m.persistLocked()
}

// List returns a copy of a namespace; false when the namespace was never used.
func (m *KVConfigManager) List(namespace string) (map[string]string, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	kv, ok := m.table[namespace]
	if !ok {
		return nil, false
	}
	return maps.Clone(kv), true
}

func (m *KVConfigManager) persistLocked() error {
	if m.path == "" {
		return nil
	}
	b := remoting.MarshalBody(kvConfigFile{ConfigTable: m.table})
	if err := writeFileAtomic(m.path, b); err != nil {
		m.log.Error().Err(err).Str("path", m.path).Msg("persist kv config")
		return fmt.Errorf("%w: %w", ErrKVConfigFile, err)
	}
	return nil
}

// writeFileAtomic replaces path with b: write a temp file beside it, sync, rename.
func writeFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
