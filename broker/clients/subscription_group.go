package clients

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

// Consumer groups every stock broker knows from the start (J4
// SubscriptionGroupManager.init), and the prefix of system groups that are
// created even when auto-creation is off (MixAll.isSysConsumerGroup).
var builtinSubscriptionGroups = []string{
	message.GroupTools, "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY",
	"CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER",
}

const sysConsumerGroupPrefix = message.SysGroupPrefix

// ErrEmptyGroupName rejects a subscription group config without a name.
var ErrEmptyGroupName = errors.New("broker: subscription group name is empty")

// SubscriptionGroupManager holds the consumer group configs and persists them
// to subscriptionGroup.json in SubscriptionGroupWrapper form:
//
//	{"dataVersion":{"counter":3,"timestamp":1700000000000},
//	 "subscriptionGroupTable":{"G1":{"brokerId":0,"consumeBroadcastEnable":true,...}}}
//
// Stored configs are never modified in place (updates replace them), so the
// pointers handed out stay consistent without the lock.
type SubscriptionGroupManager struct {
	path       string
	fs         store.FS // Options.FS (nil: the real file system)
	autoCreate bool
	log        zerolog.Logger
	clock      clock.Clock
	// Lmq answers every %LMQ% group with the defaults, never stored
	// (LmqSubscriptionGroupManager); set once before the broker serves.
	Lmq bool

	mu      sync.RWMutex
	table   map[string]*topicgroup.SubscriptionGroupConfig
	version remoting.DataVersion

	persistMu sync.Mutex
}

// NewSubscriptionGroupManager starts from the built-in groups and loads path
// (or its .bak) over them if present. An empty path keeps configs in memory
// only. Data versions are stamped from clk (nil: the wall clock).
func NewSubscriptionGroupManager(path string, autoCreate bool, log zerolog.Logger, clk clock.Clock) (*SubscriptionGroupManager, error) {
	m := &SubscriptionGroupManager{
		path: path, autoCreate: autoCreate, log: log, clock: orReal(clk),
		table: make(map[string]*topicgroup.SubscriptionGroupConfig),
	}
	m.version.Timestamp = m.clock.Now().UnixMilli()
	for _, g := range builtinSubscriptionGroups {
		m.table[g] = topicgroup.NewSubscriptionGroupConfig(g)
	}
	err := loadConfigFile(path, func(b []byte) error {
		var f struct {
			DataVersion            *remoting.DataVersion      `json:"dataVersion"`
			SubscriptionGroupTable map[string]json.RawMessage `json:"subscriptionGroupTable"`
		}
		if err := json.Unmarshal(b, &f); err != nil {
			return err
		}
		loaded := make(map[string]*topicgroup.SubscriptionGroupConfig, len(f.SubscriptionGroupTable))
		for name, raw := range f.SubscriptionGroupTable {
			cfg, err := decodeSubscriptionGroupConfig(raw)
			if err != nil {
				return err
			}
			if cfg == nil {
				continue
			}
			if cfg.GroupName == "" {
				cfg.GroupName = name
			}
			loaded[name] = cfg
		}
		for name, cfg := range loaded {
			m.table[name] = cfg
		}
		if f.DataVersion != nil {
			m.version = *f.DataVersion
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// decodeSubscriptionGroupConfig decodes over the stock defaults, so fields a
// client leaves out keep Java's field initialisers (consumeEnable true, ...).
// A JSON null decodes to nil.
func decodeSubscriptionGroupConfig(b []byte) (*topicgroup.SubscriptionGroupConfig, error) {
	if t := strings.TrimSpace(string(b)); t == "" || t == "null" {
		return nil, nil
	}
	cfg := topicgroup.NewSubscriptionGroupConfig("")
	if err := json.Unmarshal(b, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Find returns group's config or nil, never creating it. Do not modify the result.
func (m *SubscriptionGroupManager) Find(group string) *topicgroup.SubscriptionGroupConfig {
	if m.Lmq && message.IsLmq(group) {
		return topicgroup.NewSubscriptionGroupConfig(group)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.table[group]
}

// FindOrCreate returns group's config, creating it with the defaults (and
// persisting) when auto-creation is on or the group is a system group; nil
// otherwise. Do not modify the result.
func (m *SubscriptionGroupManager) FindOrCreate(group string) *topicgroup.SubscriptionGroupConfig {
	if cfg := m.Find(group); cfg != nil {
		return cfg
	}
	if message.ValidateGroup(group) != nil || (!m.autoCreate && !strings.HasPrefix(group, sysConsumerGroupPrefix)) {
		return nil
	}
	m.mu.Lock()
	cfg := m.table[group]
	created := cfg == nil
	if created {
		cfg = topicgroup.NewSubscriptionGroupConfig(group)
		m.table[group] = cfg
		m.nextVersionLocked()
	}
	m.mu.Unlock()
	if created {
		m.log.Info().Str("group", group).Msg("subscription group auto-created")
		m.persistLogged()
	}
	return cfg
}

// Update creates or replaces a config (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP) and persists.
func (m *SubscriptionGroupManager) Update(cfg *topicgroup.SubscriptionGroupConfig) error {
	if cfg.GroupName == "" {
		return ErrEmptyGroupName
	}
	if err := message.ValidateGroup(cfg.GroupName); err != nil {
		return err
	}
	cp := *cfg
	m.mu.Lock()
	_, existed := m.table[cp.GroupName]
	m.table[cp.GroupName] = &cp
	m.nextVersionLocked()
	m.mu.Unlock()
	m.log.Info().Str("group", cp.GroupName).Bool("existed", existed).Msg("subscription group updated")
	return m.Persist()
}

// Delete removes group's config and persists; false if there was none.
func (m *SubscriptionGroupManager) Delete(group string) (bool, error) {
	m.mu.Lock()
	_, ok := m.table[group]
	if ok {
		delete(m.table, group)
		m.nextVersionLocked()
	}
	m.mu.Unlock()
	if !ok {
		return false, nil
	}
	m.log.Info().Str("group", group).Msg("subscription group deleted")
	return true, m.Persist()
}

// Groups lists the configured group names, sorted.
func (m *SubscriptionGroupManager) Groups() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.table))
	for g := range m.table {
		out = append(out, g)
	}
	sort.Strings(out)
	return out
}

// DataVersion returns the current version of the table.
func (m *SubscriptionGroupManager) DataVersion() remoting.DataVersion {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.version
}

// Wrapper returns a snapshot of the table (the GET_ALL_SUBSCRIPTIONGROUP_CONFIG body).
func (m *SubscriptionGroupManager) Wrapper() *remoting.SubscriptionGroupWrapper {
	m.mu.RLock()
	defer m.mu.RUnlock()
	w := &remoting.SubscriptionGroupWrapper{
		DataVersion:            m.version,
		SubscriptionGroupTable: make(map[string]*topicgroup.SubscriptionGroupConfig, len(m.table)),
	}
	for k, v := range m.table {
		w.SubscriptionGroupTable[k] = v
	}
	return w
}

// nextVersionLocked bumps the data version. m.mu must be held.
func (m *SubscriptionGroupManager) nextVersionLocked() {
	m.version.Counter++
	m.version.Timestamp = m.clock.Now().UnixMilli()
}

// Persist writes the table to its file.
func (m *SubscriptionGroupManager) Persist() error {
	if m.path == "" {
		return nil
	}
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	b, err := json.MarshalIndent(m.Wrapper(), "", "\t")
	if err != nil {
		return err
	}
	return store.WriteFileAtomic(m.fs, m.path, b)
}

func (m *SubscriptionGroupManager) persistLogged() {
	if err := m.Persist(); err != nil {
		m.log.Error().Err(err).Str("path", m.path).Msg("persist subscription groups")
	}
}
