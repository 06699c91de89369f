package clients

import (
	"encoding/json"
	"sort"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/store"
)

// offsetKeySep joins topic and group in offset table keys ("topic@group").
const offsetKeySep = "@"

// ConsumerOffsetManager stores the committed consume offsets of every
// (topic, group, queue) and persists them to consumerOffset.json:
//
//	{"offsetTable":{"TopicTest@G1":{"0":250,"1":248},"%RETRY%G1@G1":{"0":0}}}
//
// The Java broker writes the queue ids as bare numbers ({0:250}); both forms
// load.
type ConsumerOffsetManager struct {
	path string
	fs   store.FS // Options.FS (nil: the real file system)
	log  zerolog.Logger
	// Lmq keeps one offset per topic for a %LMQ% group, whatever queue id
	// it names (LmqConsumerOffsetManager's topic@group key); set once
	// before the broker serves.
	Lmq bool

	mu      sync.RWMutex
	table   map[string]map[int32]int64
	version uint64 // bumped on every change; Persist skips unchanged tables

	persistMu sync.Mutex
	persisted uint64 // version last written (^0: never); guarded by persistMu
}

type offsetFile struct {
	OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
}

// NewConsumerOffsetManager loads path (or its .bak) if present. An empty path
// keeps offsets in memory only.
func NewConsumerOffsetManager(path string, log zerolog.Logger) (*ConsumerOffsetManager, error) {
	m := &ConsumerOffsetManager{path: path, log: log, table: make(map[string]map[int32]int64), persisted: ^uint64(0)}
	err := loadConfigFile(path, func(b []byte) error {
		var f offsetFile
		if err := json.Unmarshal(b, &f); err != nil {
			return err
		}
		table := make(map[string]map[int32]int64, len(f.OffsetTable))
		for k, q := range f.OffsetTable {
			if q != nil {
				table[k] = q
			}
		}
		m.table = table
		return nil
	})
	if err != nil {
		return nil, err
	}
	log.Info().Str("path", path).Int("keys", len(m.table)).Msg("consumer offsets loaded")
	return m, nil
}

func offsetKey(group, topic string) string { return topic + offsetKeySep + group }

// splitOffsetKey splits "topic@group"; keys with other than exactly one '@'
// are skipped by the lookups, as by the stock broker.
func splitOffsetKey(key string) (topic, group string, ok bool) {
	topic, group, ok = strings.Cut(key, offsetKeySep)
	if !ok || strings.Contains(group, offsetKeySep) {
		return "", "", false
	}
	return topic, group, true
}

// Commit records offset as group's next offset to consume in the queue.
func (m *ConsumerOffsetManager) Commit(group, topic string, queueID int32, offset int64) {
	queueID = m.lmqQueue(group, queueID)
	key := offsetKey(group, topic)
	m.mu.Lock()
	q := m.table[key]
	if q == nil {
		q = make(map[int32]int64, 8)
		m.table[key] = q
	}
	prev, had := q[queueID]
	q[queueID] = offset
	m.version++
	m.mu.Unlock()
	if had && offset < prev {
		m.log.Warn().Str("key", key).Int32("queueId", queueID).Int64("offset", offset).Int64("stored", prev).Msg("consumer offset moved backwards")
	}
}

// Query returns the committed offset, false if none.
func (m *ConsumerOffsetManager) Query(group, topic string, queueID int32) (int64, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	off, ok := m.table[offsetKey(group, topic)][m.lmqQueue(group, queueID)]
	return off, ok
}

// lmqQueue is the queue id an offset of group is kept under: 0 for an LMQ
// group with Lmq on.
func (m *ConsumerOffsetManager) lmqQueue(group string, queueID int32) int32 {
	if m.Lmq && message.IsLmq(group) {
		return 0
	}
	return queueID
}

// QueryAll returns a copy of group's offsets of every queue of topic (nil if none).
func (m *ConsumerOffsetManager) QueryAll(group, topic string) map[int32]int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	q := m.table[offsetKey(group, topic)]
	if q == nil {
		return nil
	}
	out := make(map[int32]int64, len(q))
	for k, v := range q {
		out[k] = v
	}
	return out
}

// RemoveTopic forgets every group's offsets of topic (topic deleted).
func (m *ConsumerOffsetManager) RemoveTopic(topic string) {
	m.removeWhere(func(t, _ string) bool { return t == topic })
}

// RemoveGroup forgets every offset of group (DELETE_SUBSCRIPTIONGROUP removeOffset).
func (m *ConsumerOffsetManager) RemoveGroup(group string) {
	m.removeWhere(func(_, g string) bool { return g == group })
}

func (m *ConsumerOffsetManager) removeWhere(match func(topic, group string) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key := range m.table {
		if t, g, ok := splitOffsetKey(key); ok && match(t, g) {
			delete(m.table, key)
			m.version++
			m.log.Info().Str("key", key).Msg("consumer offsets removed")
		}
	}
}

// Each calls fn for every committed offset (on a copy: fn may call back).
func (m *ConsumerOffsetManager) Each(fn func(group, topic string, queueID int32, offset int64)) {
	table, _ := m.snapshot()
	for key, qs := range table {
		t, g, ok := splitOffsetKey(key)
		if !ok {
			continue
		}
		for id, off := range qs {
			fn(g, t, id, off)
		}
	}
}

// TopicsByGroup lists, sorted, the topics group has offsets for.
func (m *ConsumerOffsetManager) TopicsByGroup(group string) []string {
	return m.collect(func(t, g string) (string, bool) { return t, g == group })
}

// GroupsByTopic lists, sorted, the groups with offsets for topic.
func (m *ConsumerOffsetManager) GroupsByTopic(topic string) []string {
	return m.collect(func(t, g string) (string, bool) { return g, t == topic })
}

func (m *ConsumerOffsetManager) collect(pick func(topic, group string) (string, bool)) []string {
	m.mu.RLock()
	var out []string
	for key := range m.table {
		if t, g, ok := splitOffsetKey(key); ok {
			if v, ok := pick(t, g); ok {
				out = append(out, v)
			}
		}
	}
	m.mu.RUnlock()
	sort.Strings(out)
	return out
}

// snapshot returns a deep copy of the table and its version.
func (m *ConsumerOffsetManager) snapshot() (map[string]map[int32]int64, uint64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	cp := make(map[string]map[int32]int64, len(m.table))
	for k, q := range m.table {
		qc := make(map[int32]int64, len(q))
		for id, off := range q {
			qc[id] = off
		}
		cp[k] = qc
	}
	return cp, m.version
}

// Encode returns the table as compact JSON (the GET_ALL_CONSUMER_OFFSET body).
func (m *ConsumerOffsetManager) Encode() []byte {
	table, _ := m.snapshot()
	b, err := json.Marshal(offsetFile{OffsetTable: table})
	if err != nil {
		panic("broker: marshal offsets: " + err.Error()) // maps of strings and ints always marshal
	}
	return b
}

// Persist writes the table to its file if it changed since the last write.
func (m *ConsumerOffsetManager) Persist() error {
	if m.path == "" {
		return nil
	}
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	table, version := m.snapshot()
	if version == m.persisted {
		return nil
	}
	b, err := json.MarshalIndent(offsetFile{OffsetTable: table}, "", "\t")
	if err != nil {
		return err
	}
	if err := store.WriteFileAtomic(m.fs, m.path, b); err != nil {
		return err
	}
	m.persisted = version
	return nil
}
