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
	// forbidden is group -> topic -> permission bits refused to the group on
	// the topic (J5 SubscriptionGroupManager.forbiddenTable). Inner maps are
	// replaced, never modified in place.
	forbidden map[string]map[string]int32

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
			DataVersion            *remoting.DataVersion       `json:"dataVersion"`
			ForbiddenTable         map[string]map[string]int32 `json:"forbiddenTable"`
			SubscriptionGroupTable map[string]json.RawMessage  `json:"subscriptionGroupTable"`
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
		m.forbidden = f.ForbiddenTable
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

// UpdateList creates or replaces several configs
// (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST) and persists once. Every name
// is checked before any config changes, so a bad one changes nothing.
func (m *SubscriptionGroupManager) UpdateList(cfgs []*topicgroup.SubscriptionGroupConfig) error {
	for _, cfg := range cfgs {
		if cfg.GroupName == "" {
			return ErrEmptyGroupName
		}
		if err := message.ValidateGroup(cfg.GroupName); err != nil {
			return err
		}
	}
	if len(cfgs) == 0 {
		return nil
	}
	m.mu.Lock()
	for _, cfg := range cfgs {
		cp := *cfg
		m.table[cp.GroupName] = &cp
		m.nextVersionLocked()
	}
	m.mu.Unlock()
	m.log.Info().Int("groups", len(cfgs)).Msg("subscription groups updated (list)")
	return m.Persist()
}

// Forbidden reports whether the permission bit index (topicgroup.PermRead's
// index 2 for reads) is forbidden to group on topic.
func (m *SubscriptionGroupManager) Forbidden(group, topic string, index uint) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	bit := int32(1) << index
	v := m.forbidden[group][topic]
	return v > 0 && v&bit == bit
}

// SetForbidden sets (forbid) or clears the permission bit index of group on
// topic and persists (J5 SubscriptionGroupManager.updateForbidden). As
// stock's updateForbiddenValue, a value that drops to 0 removes the whole
// group's entry, every topic of it, in memory only: no new data version and
// no write until the next change persists the table.
func (m *SubscriptionGroupManager) SetForbidden(group, topic string, index uint, forbid bool) error {
	m.mu.Lock()
	v := max(m.forbidden[group][topic], 0)
	if forbid {
		v |= int32(1) << index
	} else {
		v &^= int32(1) << index
	}
	if v <= 0 {
		delete(m.forbidden, group)
		m.mu.Unlock()
		m.log.Info().Str("group", group).Str("topic", topic).Msg("group forbidden cleared")
		return nil
	}
	topics := make(map[string]int32, len(m.forbidden[group])+1)
	for t, bits := range m.forbidden[group] {
		topics[t] = bits
	}
	topics[topic] = v
	if m.forbidden == nil {
		m.forbidden = make(map[string]map[string]int32)
	}
	m.forbidden[group] = topics
	m.nextVersionLocked()
	m.mu.Unlock()
	m.log.Info().Str("group", group).Str("topic", topic).Int32("forbidden", v).Msg("group forbidden set")
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
	if len(m.forbidden) > 0 {
		w.ForbiddenTable = make(map[string]map[string]int32, len(m.forbidden))
		for g, topics := range m.forbidden {
			w.ForbiddenTable[g] = topics
		}
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
