package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/broker/pop"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
	"github.com/rmqio/rmq/topicgroup"
)

// Topic names and limits of the stock broker (TopicValidator.java, MixAll.java).
const (
	scheduleTopicQueueNums = 18
	defaultTopicQueueNums  = 16 // new TopicConfig(name) in Java
	filterTypeSingleTag    = "SINGLE_TAG"
	filterTypeMultiTag     = "MULTI_TAG"
	topicSysFlagUnit       = 1 << 0
	topicSysFlagUnitSub    = 1 << 1
	permReadWrite          = topicgroup.PermRead | topicgroup.PermWrite
	permReadWriteInherit   = topicgroup.PermRead | topicgroup.PermWrite | topicgroup.PermInherit
	topicConfigFileName    = "topics.json"
)

// builtinSystemTopics may be neither created nor deleted by admin requests
// (TopicValidator.SYSTEM_TOPIC_SET before the broker adds its own).
var builtinSystemTopics = map[string]bool{
	message.TopicAutoCreateKey: true, message.TopicSchedule: true, message.TopicBenchmark: true, message.TopicTransHalf: true,
	message.TopicTrace: true, message.TopicTransOpHalf: true, message.TopicTransCheckMaxTime: true, message.TopicSelfTest: true,
	message.TopicOffsetMovedEvent: true,
}

// notAllowedSendTopics refuse producer sends (TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET).
var notAllowedSendTopics = map[string]bool{
	message.TopicSchedule: true, message.TopicTransHalf: true, message.TopicTransOpHalf: true, message.TopicTransCheckMaxTime: true,
	message.TopicSelfTest: true, message.TopicOffsetMovedEvent: true,
	// A record on the wheel topic without TIMER_OUT_MS would stall the timer
	// pipeline (stock leaves this open): only the broker writes there.
	message.TopicWheelTimer: true,
}

// ErrTopicConfig wraps failures to load or persist topics.json.
var ErrTopicConfig = errors.New("broker: topic config")

// TopicConfigManager owns the topic table (config/topics.json). Table entries
// are never mutated in place: every change stores a fresh *TopicConfig, and
// readers get copies, so a config handed out never changes under its holder.
// Every change bumps the DataVersion (the name server only re-reads a
// broker's topics when it changes), is on disk before the change returns
// (persist: concurrent changes share one write), and calls onChange.
type TopicConfigManager struct {
	path       string
	fs         store.FS
	autoCreate bool
	clock      clock.Clock
	log        zerolog.Logger
	// onChange asks for a registration with the name servers; it must not block.
	onChange func()
	// lmq serves every %LMQ% topic a synthetic config (lmq.go); set once
	// before the broker serves.
	lmq bool

	mu      sync.RWMutex
	table   map[string]*topicgroup.TopicConfig
	version remoting.DataVersion
	changes uint64 // changes made (under mu); persist's sequence numbers
	// unregistered names the topics created or changed (with onChange)
	// since an incremental registration last took them (takeUnregistered).
	unregistered map[string]struct{}

	// persistMu serialises writes of topics.json; persisted is the last
	// change a completed write holds.
	persistMu sync.Mutex
	persisted uint64
	// system holds the topics this broker defines itself (cluster, broker
	// name, reply topic) on top of builtinSystemTopics.
	system map[string]bool
}

// topicConfigDefaults names what the stock constructor derives from BrokerConfig.
type topicConfigDefaults struct {
	clusterName      string
	brokerName       string
	autoCreate       bool
	defaultQueueNums int32
	// traceTopic, when not empty, is created at start (traceTopicEnable).
	traceTopic string
	fs         store.FS // Options.FS: topics.json's writes
	// clusterTopic and brokerTopic are clusterTopicEnable and
	// brokerTopicEnable: off, the topic is only inheritable (not R/W).
	clusterTopic, brokerTopic bool
}

func newTopicConfig(topic string, queueNums, perm int32) *topicgroup.TopicConfig {
	return &topicgroup.TopicConfig{
		TopicName: topic, ReadQueueNums: queueNums, WriteQueueNums: queueNums,
		Perm: perm, TopicFilterType: filterTypeSingleTag,
	}
}

// newTopicConfigManager builds the stock default topics and then overlays
// the persisted file (or its .bak copy when the file is missing or broken).
func newTopicConfigManager(path string, d topicConfigDefaults, clk clock.Clock, log zerolog.Logger) (*TopicConfigManager, error) {
	m := &TopicConfigManager{
		path: path, fs: d.fs, autoCreate: d.autoCreate, clock: clk, log: log, onChange: func() {},
		table:        make(map[string]*topicgroup.TopicConfig),
		version:      remoting.DataVersion{Timestamp: clk.Now().UnixMilli()},
		system:       make(map[string]bool),
		unregistered: make(map[string]struct{}),
	}
	add := func(tc *topicgroup.TopicConfig) {
		m.table[tc.TopicName] = tc
		m.system[tc.TopicName] = true
	}
	add(newTopicConfig(message.TopicSelfTest, 1, permReadWrite))
	if d.autoCreate {
		add(newTopicConfig(message.TopicAutoCreateKey, d.defaultQueueNums, permReadWriteInherit))
	}
	add(newTopicConfig(message.TopicBenchmark, 1024, permReadWrite))
	// As stock: INHERIT, plus R|W when enabled. A topics.json written
	// before overrides both, as it does in stock.
	enabledPerm := func(on bool) int32 {
		if on {
			return permReadWriteInherit
		}
		return topicgroup.PermInherit
	}
	add(newTopicConfig(d.clusterName, defaultTopicQueueNums, enabledPerm(d.clusterTopic)))
	add(newTopicConfig(d.brokerName, 1, enabledPerm(d.brokerTopic)))
	add(newTopicConfig(message.TopicOffsetMovedEvent, 1, permReadWrite))
	add(newTopicConfig(message.TopicSchedule, scheduleTopicQueueNums, permReadWrite))
	add(newTopicConfig(message.ReplyTopic(d.clusterName), 1, permReadWrite))
	// POP checkpoints and revive triggers (stock: reviveQueueNum queues; rmq uses one).
	add(newTopicConfig(pop.ReviveTopic(d.clusterName), 1, permReadWrite))
	// The group's members, read from its route with compatibleWithOldNameSrv
	// (acting_master.go); stock creates it on every broker, perm INHERIT.
	add(newTopicConfig(topicgroup.SyncBrokerMemberTopicPrefix+d.brokerName, 1, topicgroup.PermInherit))
	if d.traceTopic != "" {
		add(newTopicConfig(d.traceTopic, 1, permReadWrite))
	}

	if err := m.load(); err != nil {
		return nil, err
	}
	return m, nil
}

// load overlays topics.json, falling back to topics.json.bak as Java's
// ConfigManager does. No file at all is not an error (first start). The
// parse only builds a new table, so a broken file leaves no trace.
func (m *TopicConfigManager) load() error {
	err := store.ReadFileWithBackup(m.path, func(data []byte) error {
		var w remoting.TopicConfigSerializeWrapper
		if err := json.Unmarshal(data, &w); err != nil {
			return err
		}
		for name, tc := range w.TopicConfigTable {
			if tc == nil {
				continue
			}
			if tc.TopicName == "" {
				tc.TopicName = name
			}
			if tc.TopicFilterType == "" {
				tc.TopicFilterType = filterTypeSingleTag
			}
			m.table[name] = tc
		}
		if w.DataVersion.Timestamp != 0 || w.DataVersion.Counter != 0 {
			m.version = w.DataVersion
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: load %s: %w", ErrTopicConfig, m.path, err)
	}
	return nil
}

// Get returns a copy of the topic's config, nil if absent.
func (m *TopicConfigManager) Get(topic string) *topicgroup.TopicConfig {
	tc, ok := m.Lookup(topic)
	if !ok {
		return nil
	}
	return &tc
}

// Lookup returns a copy of the topic's config as a value, ok false if
// absent: the send and pull paths read a config once per request, and Get's
// copy cost them a heap allocation each time.
func (m *TopicConfigManager) Lookup(topic string) (tc topicgroup.TopicConfig, ok bool) {
	if m.lmq && message.IsLmq(topic) {
		return lmqTopicConfig(topic), true
	}
	m.mu.RLock()
	p := m.table[topic]
	if p != nil {
		tc, ok = *p, true
	}
	m.mu.RUnlock()
	return tc, ok
}

// Has reports whether the topic has a config.
func (m *TopicConfigManager) Has(topic string) bool {
	if m.lmq && message.IsLmq(topic) {
		return true
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.table[topic] != nil
}

// IsSystemTopic reports whether admin requests must leave topic alone.
func (m *TopicConfigManager) IsSystemTopic(topic string) bool {
	if builtinSystemTopics[topic] || strings.HasPrefix(topic, message.SystemTopicPrefix) {
		return true
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.system[topic]
}

// IsOrderTopic reports the order flag (learnt from the name server's
// ORDER_TOPIC_CONFIG namespace at registration).
func (m *TopicConfigManager) IsOrderTopic(topic string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	tc := m.table[topic]
	return tc != nil && tc.Order
}

// CreateRetryTopic creates %RETRY%<group> unless it exists.
func (m *TopicConfigManager) CreateRetryTopic(group string, queueNums int32, perm int32) (tc *topicgroup.TopicConfig, created bool) {
	return m.createIfAbsent(newTopicConfig(message.RetryTopicPrefix+group, queueNums, perm))
}

// CreateSystemTopic creates a broker-internal topic (DLQ, transaction
// half/op topics, ...) unless it exists.
func (m *TopicConfigManager) CreateSystemTopic(topic string, queueNums int32, perm int32) (tc *topicgroup.TopicConfig, created bool) {
	return m.createIfAbsent(newTopicConfig(topic, queueNums, perm))
}

// createIfAbsent is Java's createTopicInSendMessageBackMethod.
// A name that is not a valid topic (message.ValidateTopic) is never created:
// the result is nil.
func (m *TopicConfigManager) createIfAbsent(tc *topicgroup.TopicConfig) (*topicgroup.TopicConfig, bool) {
	if message.ValidateTopic(tc.TopicName) != nil {
		return nil, false
	}
	m.mu.Lock()
	if old := m.table[tc.TopicName]; old != nil {
		m.mu.Unlock()
		cp := *old
		return &cp, false
	}
	m.table[tc.TopicName] = tc
	seq := m.topicChangedLocked(tc.TopicName)
	m.mu.Unlock()
	m.persist(seq)
	m.log.Info().Str("topic", tc.TopicName).Int32("queues", tc.WriteQueueNums).Int32("perm", tc.Perm).Msg("topic created")
	m.onChange()
	cp := *tc
	return &cp, true
}

// createFromDefault is the send path's auto-creation from defaultTopic
// (createTopicInSendMessageMethod): allowed only when the default topic
// carries PERM_INHERIT, and for TBW102 only while auto-creation is enabled.
// The new topic gets min(clientQueueNums, default write queues) queues and the
// default's perm without INHERIT. nil means the topic may not be created.
func (m *TopicConfigManager) createFromDefault(topic, defaultTopic string, clientQueueNums, sysFlag int32) (*topicgroup.TopicConfig, bool) {
	m.mu.Lock()
	if old := m.table[topic]; old != nil {
		m.mu.Unlock()
		cp := *old
		return &cp, false
	}
	def := m.table[defaultTopic]
	if def == nil || def.Perm&topicgroup.PermInherit == 0 || (defaultTopic == message.TopicAutoCreateKey && !m.autoCreate) {
		m.mu.Unlock()
		// The caller's refusal line says so, rate-limited (send_processor.go).
		return nil, false
	}
	n := min(clientQueueNums, def.WriteQueueNums)
	n = max(n, 0)
	tc := &topicgroup.TopicConfig{
		TopicName: topic, ReadQueueNums: n, WriteQueueNums: n,
		Perm: def.Perm &^ topicgroup.PermInherit, TopicSysFlag: sysFlag, TopicFilterType: def.TopicFilterType,
	}
	m.table[topic] = tc
	seq := m.topicChangedLocked(topic)
	m.mu.Unlock()
	m.persist(seq)
	m.log.Info().Str("topic", topic).Str("defaultTopic", defaultTopic).Int32("queues", n).Msg("topic auto-created")
	m.onChange()
	cp := *tc
	return &cp, true
}

// Update creates or replaces a topic (UPDATE_AND_CREATE_TOPIC).
func (m *TopicConfigManager) Update(tc *topicgroup.TopicConfig) {
	if m.lmq && message.IsLmq(tc.TopicName) {
		return // LmqTopicConfigManager.updateTopicConfig: never stored
	}
	cp := *tc
	m.mu.Lock()
	m.table[cp.TopicName] = &cp
	seq := m.topicChangedLocked(cp.TopicName)
	m.mu.Unlock()
	m.persist(seq)
	m.onChange()
}

// Delete removes a topic; false if it did not exist.
func (m *TopicConfigManager) Delete(topic string) bool {
	m.mu.Lock()
	if m.table[topic] == nil {
		m.mu.Unlock()
		return false
	}
	delete(m.table, topic)
	seq := m.changedLocked()
	m.mu.Unlock()
	m.persist(seq)
	return true
}

// setOrderTopics applies the name server's ORDER_TOPIC_CONFIG keys: exactly
// the listed topics are orderly (updateOrderTopicConfig).
func (m *TopicConfigManager) setOrderTopics(order map[string]string) {
	m.mu.Lock()
	changed := false
	for name, tc := range m.table {
		_, want := order[name]
		if tc.Order != want {
			cp := *tc
			cp.Order = want
			m.table[name] = &cp
			changed = true
		}
	}
	if !changed {
		m.mu.Unlock()
		return
	}
	seq := m.changedLocked()
	m.mu.Unlock()
	m.persist(seq)
}

// topicChangedLocked is changedLocked for a created or changed topic, which
// the next incremental registration carries (takeUnregistered).
func (m *TopicConfigManager) topicChangedLocked(topic string) uint64 {
	m.unregistered[topic] = struct{}{}
	return m.changedLocked()
}

// changedLocked bumps the data version and returns the change's sequence
// number, for persist once m.mu is released. m.mu must be held.
func (m *TopicConfigManager) changedLocked() uint64 {
	m.version.Counter++
	m.version.Timestamp = m.clock.Now().UnixMilli()
	m.changes++
	return m.changes
}

// persist returns once topics.json holds change seq. A write takes a
// snapshot of the whole table, so it holds every change made before it:
// changes made while a write is under way wait for it, and the first of
// them then writes once for all (group commit). The table stays readable
// and changeable during the write (it is not written under m.mu), and no
// change is answered before it is on disk. A failed write is logged; the
// next change writes again.
func (m *TopicConfigManager) persist(seq uint64) {
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	if m.persisted >= seq {
		return
	}
	if err := m.writeLocked(); err != nil {
		m.log.Error().Err(err).Msg("persist topic config")
	}
}

// Snapshot returns a deep copy of the table and its version.
func (m *TopicConfigManager) Snapshot() remoting.TopicConfigSerializeWrapper {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.snapshotLocked()
}

func (m *TopicConfigManager) snapshotLocked() remoting.TopicConfigSerializeWrapper {
	w := remoting.TopicConfigSerializeWrapper{
		DataVersion:      m.version,
		TopicConfigTable: make(map[string]*topicgroup.TopicConfig, len(m.table)),
	}
	for name, tc := range m.table {
		cp := *tc
		w.TopicConfigTable[name] = &cp
	}
	return w
}

// takeUnregistered returns the topics created or changed since it was last
// called, with the current version, for an incremental registration (Java's
// registerIncrementBrokerData): a change made after it returns bumps the
// version and is in the next call's result, so a name server that accepts
// the result's version has every change up to it. ok is false when nothing
// changed. A deleted topic is left out. What a name server did not accept
// goes back with giveBackUnregistered.
func (m *TopicConfigManager) takeUnregistered() (w remoting.TopicConfigSerializeWrapper, names []string, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.unregistered) == 0 {
		return w, nil, false
	}
	w = remoting.TopicConfigSerializeWrapper{
		DataVersion:      m.version,
		TopicConfigTable: make(map[string]*topicgroup.TopicConfig, len(m.unregistered)),
	}
	names = make([]string, 0, len(m.unregistered))
	for name := range m.unregistered {
		names = append(names, name)
		if tc := m.table[name]; tc != nil {
			cp := *tc
			w.TopicConfigTable[name] = &cp
		}
	}
	clear(m.unregistered)
	return w, names, true
}

// giveBackUnregistered returns names taken by takeUnregistered whose
// registration some name server did not accept: the next incremental
// registration sends them again.
func (m *TopicConfigManager) giveBackUnregistered(names []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range names {
		m.unregistered[name] = struct{}{}
	}
}

// nextVersion moves the data version on without a change, so that a name
// server that holds the current one takes the next registration's topics
// (RouteInfoManager.registerBroker skips them for a version it holds).
func (m *TopicConfigManager) nextVersion() {
	m.mu.Lock()
	m.version.Counter++
	m.version.Timestamp = m.clock.Now().UnixMilli()
	m.mu.Unlock()
}

// DataVersion returns the current version.
func (m *TopicConfigManager) DataVersion() remoting.DataVersion {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.version
}

// Topics returns the topic names, sorted.
func (m *TopicConfigManager) Topics() []string {
	m.mu.RLock()
	out := make([]string, 0, len(m.table))
	for name := range m.table {
		out = append(out, name)
	}
	m.mu.RUnlock()
	sort.Strings(out)
	return out
}

// Persist writes topics.json.
func (m *TopicConfigManager) Persist() error {
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	return m.writeLocked()
}

// writeLocked writes a snapshot of the table. m.persistMu must be held.
func (m *TopicConfigManager) writeLocked() error {
	m.mu.RLock()
	w, seq := m.snapshotLocked(), m.changes
	m.mu.RUnlock()
	data, err := encodeTopicsFile(w)
	if err != nil {
		return fmt.Errorf("%w: encode: %v", ErrTopicConfig, err)
	}
	if err := store.WriteFileAtomic(m.fs, m.path, data); err != nil {
		return fmt.Errorf("%w: write %s: %w", ErrTopicConfig, m.path, err)
	}
	m.persisted = seq
	return nil
}

// encodeTopicsFile renders topics.json: the object Java's
// TopicConfigManager.encode(true) writes, indented down to one line per
// topic (in name order, each entry compact, as encoding/json writes a
// topicgroup.TopicConfig). Every change rewrites the whole table, and
// MarshalIndent of 2 000 topics took 4.0 ms against 0.6 ms for this layout
// (BenchmarkEncodeTopicsFile), most of a group commit's time apart from its
// fsyncs.
func encodeTopicsFile(w remoting.TopicConfigSerializeWrapper) ([]byte, error) {
	version, err := json.Marshal(w.DataVersion)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(w.TopicConfigTable))
	for name, tc := range w.TopicConfigTable {
		if tc != nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	b := make([]byte, 0, 64+len(version)+len(names)*192)
	b = append(b, "{\n\t\"dataVersion\":"...)
	b = append(b, version...)
	b = append(b, ",\n\t\"topicConfigTable\":{"...)
	for i, name := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n\t\t"...)
		b = fastjson.AppendString(b, name)
		b = append(b, ':')
		b = appendTopicConfig(b, w.TopicConfigTable[name])
	}
	if len(names) > 0 {
		b = append(b, "\n\t"...)
	}
	return append(b, "}\n}\n"...), nil
}

// appendTopicConfig appends tc as json.Marshal writes it: the fields in
// topicgroup.TopicConfig's order under their tags, attributes omitted when
// empty and sorted by key (TestAppendTopicConfigMatchesMarshal keeps the
// two in step).
func appendTopicConfig(b []byte, tc *topicgroup.TopicConfig) []byte {
	b = append(b, '{')
	if len(tc.Attributes) > 0 {
		keys := make([]string, 0, len(tc.Attributes))
		for k := range tc.Attributes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, `"attributes":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = fastjson.AppendString(b, k)
			b = append(b, ':')
			b = fastjson.AppendString(b, tc.Attributes[k])
		}
		b = append(b, "},"...)
	}
	b = append(b, `"order":`...)
	b = strconv.AppendBool(b, tc.Order)
	b = append(b, `,"perm":`...)
	b = strconv.AppendInt(b, int64(tc.Perm), 10)
	b = append(b, `,"readQueueNums":`...)
	b = strconv.AppendInt(b, int64(tc.ReadQueueNums), 10)
	b = append(b, `,"topicFilterType":`...)
	b = fastjson.AppendString(b, tc.TopicFilterType)
	b = append(b, `,"topicName":`...)
	b = fastjson.AppendString(b, tc.TopicName)
	b = append(b, `,"topicSysFlag":`...)
	b = strconv.AppendInt(b, int64(tc.TopicSysFlag), 10)
	b = append(b, `,"writeQueueNums":`...)
	b = strconv.AppendInt(b, int64(tc.WriteQueueNums), 10)
	return append(b, '}')
}

// validateTopicName applies message.ValidateTopic; the remark is the stock
// one, empty when the name is valid.
func validateTopicName(topic string) string {
	if err := message.ValidateTopic(topic); err != nil {
		return err.Error()
	}
	return ""
}

// topicConfigString renders tc as Java's TopicConfig.toString (used in remarks).
func topicConfigString(tc *topicgroup.TopicConfig) string {
	return fmt.Sprintf("TopicConfig [topicName=%s, readQueueNums=%d, writeQueueNums=%d, perm=%s, topicFilterType=%s, topicSysFlag=%d, order=%t]",
		tc.TopicName, tc.ReadQueueNums, tc.WriteQueueNums, topicgroup.PermString(tc.Perm), tc.TopicFilterType, tc.TopicSysFlag, tc.Order)
}
