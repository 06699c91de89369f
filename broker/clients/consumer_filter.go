package clients

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/filter"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/store"
)

// Expression types of a subscription (ExpressionType.java). Only SQL92 is a
// property filter the broker evaluates; TAG (or no type) filters by tag hash.
const (
	ExpressionTypeTag   = "TAG"
	ExpressionTypeSQL92 = "SQL92"
)

// IsTagType is ExpressionType.isTagType: no type, "" or TAG.
func IsTagType(t string) bool { return t == "" || t == ExpressionTypeTag }

// FilterFileName is the consumer filter file under Options.ConfigDir.
const FilterFileName = "consumerFilter.json"

// filterDataCleanTimeSpan is BrokerConfig.filterDataCleanTimeSpan: a filter
// dead this long is dropped when the file is written.
const filterDataCleanTimeSpan = 24 * time.Hour

// compileCacheSize bounds the compiled-expression cache, as rocketmq-filter's
// parse cache (100 entries).
const compileCacheSize = 100

// FilterData is one group's property filter of one topic (ConsumerFilterData).
// A value is never modified once published, so a pull may keep it without a
// lock; a change stores a new one.
type FilterData struct {
	Group          string
	Topic          string
	Expression     string
	ExpressionType string
	// Compiled is nil only for an entry loaded from the file whose expression
	// no longer compiles; such an entry filters nothing (Java: no compiled
	// expression, every message matches).
	Compiled      *filter.Expression
	BornTime      int64 // ms
	DeadTime      int64 // ms; dead while DeadTime >= BornTime
	ClientVersion int64 // the subscription's subVersion
	bloom         *bloomFilterData
}

// Dead reports whether the group stopped subscribing (ConsumerFilterData.isDead).
func (d *FilterData) Dead() bool { return d.DeadTime >= d.BornTime }

// ConsumerFilterManager keeps the compiled property filters per topic and
// group, registered from heartbeats (J4 ConsumerFilterManager): the pull path
// looks up the filter of a subscription the client does not send along, and
// checks the filter is as new as the client's subscription.
type ConsumerFilterManager struct {
	path  string
	log   zerolog.Logger
	clock clock.Clock

	bloomK, bloomM int

	mu      sync.RWMutex
	byTopic map[string]map[string]*FilterData // topic → group → filter

	cacheMu sync.Mutex
	cache   map[string]compiled // by expression text
	order   []string            // insertion order, for eviction

	persistMu sync.Mutex
}

type compiled struct {
	expr *filter.Expression
	err  error
}

// NewConsumerFilterManager loads path (empty: memory only). Like the stock
// broker it takes every loaded filter for dead (its consumers have to
// heartbeat again) and ignores the whole file when an entry's bloom-filter
// data does not fit the filter this broker uses.
func NewConsumerFilterManager(path string, log zerolog.Logger, clk clock.Clock) (*ConsumerFilterManager, error) {
	m := &ConsumerFilterManager{
		path: path, log: log, clock: orReal(clk),
		byTopic: make(map[string]map[string]*FilterData),
		cache:   make(map[string]compiled),
	}
	m.bloomK, m.bloomM = bloomShape(bloomErrorRate, bloomExpectedNum)
	err := loadConfigFile(path, func(b []byte) error {
		var f filterFile
		if err := json.Unmarshal(b, &f); err != nil {
			return err
		}
		now := m.clock.Now().UnixMilli()
		loaded := make(map[string]map[string]*FilterData, len(f.FilterDataByTopic))
		for topic, byGroup := range f.FilterDataByTopic {
			if byGroup == nil {
				continue
			}
			for group, e := range byGroup.GroupFilterData {
				if e == nil {
					continue
				}
				if !bloomValid(e.BloomFilterData, m.bloomK, m.bloomM) {
					m.log.Info().Str("file", path).Msg("bloom filter changed: consumer filter data in the file ignored")
					return nil
				}
				d := &FilterData{
					Group: e.ConsumerGroup, Topic: e.Topic, Expression: e.Expression, ExpressionType: e.ExpressionType,
					BornTime: e.BornTime, DeadTime: e.DeadTime, ClientVersion: e.ClientVersion, bloom: e.BloomFilterData,
				}
				var cerr error
				if d.Compiled, cerr = m.Compile(d.ExpressionType, d.Expression); cerr != nil {
					m.log.Error().Err(cerr).Str("topic", topic).Str("group", group).Msg("load consumer filter: expression does not compile")
				}
				if d.DeadTime == 0 {
					d.DeadTime = max(now-30_000, d.BornTime)
				}
				if loaded[topic] == nil {
					loaded[topic] = make(map[string]*FilterData)
				}
				loaded[topic][group] = d
			}
		}
		m.byTopic = loaded
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Compile compiles expr of type typ through a cache of the last 100
// expressions (errors included). The error's text is the stock remark of a
// refused subscription.
func (m *ConsumerFilterManager) Compile(typ, expr string) (*filter.Expression, error) {
	if typ != ExpressionTypeSQL92 {
		return nil, fmt.Errorf("unsupported expression type %s", typ)
	}
	m.cacheMu.Lock()
	defer m.cacheMu.Unlock()
	if c, ok := m.cache[expr]; ok {
		return c.expr, c.err
	}
	e, err := filter.Compile(expr)
	if len(m.order) >= compileCacheSize {
		delete(m.cache, m.order[0])
		m.order = m.order[1:]
	}
	m.cache[expr] = compiled{e, err}
	m.order = append(m.order, expr)
	return e, err
}

// Get returns group's filter of topic, dead or alive; nil if none.
func (m *ConsumerFilterManager) Get(topic, group string) *FilterData {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.byTopic[topic][group]
}

// Register records the property-filter subscriptions of one consumer group
// of a heartbeat (ConsumerFilterManager.register): each new or newer (higher
// subVersion) SQL92 subscription is compiled and stored, an expression that
// does not compile stores nothing (and drops the group's older filter of the
// topic), and the group's filters of topics it no longer subscribes to die.
func (m *ConsumerFilterManager) Register(group string, subs []*remoting.SubscriptionData) {
	now := m.clock.Now().UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	subscribed := make(map[string]struct{}, len(subs))
	for _, sub := range subs {
		if sub == nil {
			continue
		}
		subscribed[sub.Topic] = struct{}{}
		if IsTagType(sub.ExpressionType) || sub.SubString == "" {
			continue
		}
		m.registerLocked(sub.Topic, group, sub.SubString, sub.ExpressionType, sub.SubVersion, now)
	}
	for topic, byGroup := range m.byTopic {
		d := byGroup[group]
		if d == nil || d.Dead() {
			continue
		}
		if _, ok := subscribed[topic]; !ok {
			nd := *d
			nd.DeadTime = now
			byGroup[group] = &nd
			m.log.Info().Str("group", group).Str("topic", topic).Msg("consumer filter dead: topic no longer subscribed")
		}
	}
}

// registerLocked is FilterDataMapByTopic.register.
func (m *ConsumerFilterManager) registerLocked(topic, group, expr, typ string, version, now int64) {
	byGroup := m.byTopic[topic]
	if byGroup == nil {
		byGroup = make(map[string]*FilterData)
		m.byTopic[topic] = byGroup
	}
	old := byGroup[group]
	if old != nil && version <= old.ClientVersion {
		if version == old.ClientVersion && old.Dead() {
			nd := *old
			nd.DeadTime = 0
			byGroup[group] = &nd
		}
		return
	}
	if old != nil && old.Expression == expr && old.ExpressionType == typ && old.bloom != nil {
		nd := *old
		nd.ClientVersion = version
		nd.DeadTime = 0
		byGroup[group] = &nd
		return
	}
	e, err := m.Compile(typ, expr)
	if err != nil {
		m.log.Warn().Str("group", group).Str("topic", topic).Str("expression", expr).Str("error", err.Error()).Msg("consumer filter does not compile")
		if old != nil {
			delete(byGroup, group)
		} else if len(byGroup) == 0 {
			delete(m.byTopic, topic)
		}
		return
	}
	bloom := bloomGenerate(group+"#"+topic, m.bloomK, m.bloomM)
	byGroup[group] = &FilterData{
		Group: group, Topic: topic, Expression: expr, ExpressionType: typ, Compiled: e,
		BornTime: now, ClientVersion: version, bloom: &bloom,
	}
	m.log.Info().Str("group", group).Str("topic", topic).Str("expression", expr).Int64("clientVersion", version).Msg("consumer filter registered")
}

// Unregister marks every filter of group dead: its last consumer left
// (ConsumerGroupEvent.UNREGISTER).
func (m *ConsumerFilterManager) Unregister(group string) {
	now := m.clock.Now().UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, byGroup := range m.byTopic {
		if d := byGroup[group]; d != nil && !d.Dead() {
			nd := *d
			nd.DeadTime = now
			byGroup[group] = &nd
		}
	}
}

// filterFile is consumerFilter.json as the stock broker writes it (fastjson,
// keys sorted).
type filterFile struct {
	FilterDataByTopic map[string]*filterTopic `json:"filterDataByTopic"`
}

type filterTopic struct {
	GroupFilterData map[string]*filterEntry `json:"groupFilterData"`
	Topic           string                  `json:"topic"`
}

type filterEntry struct {
	BloomFilterData *bloomFilterData `json:"bloomFilterData"`
	BornTime        int64            `json:"bornTime"`
	ClientVersion   int64            `json:"clientVersion"`
	ConsumerGroup   string           `json:"consumerGroup"`
	Dead            bool             `json:"dead"`
	DeadTime        int64            `json:"deadTime"`
	Expression      string           `json:"expression"`
	ExpressionType  string           `json:"expressionType"`
	Topic           string           `json:"topic"`
}

// Persist drops the filters dead for a day (ConsumerFilterManager.clean) and
// writes the rest to the file.
func (m *ConsumerFilterManager) Persist() error {
	if m.path == "" {
		return nil
	}
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	now := m.clock.Now().UnixMilli()
	f := filterFile{FilterDataByTopic: make(map[string]*filterTopic)}
	m.mu.Lock()
	for topic, byGroup := range m.byTopic {
		for group, d := range byGroup {
			if d.Dead() && now-d.DeadTime >= filterDataCleanTimeSpan.Milliseconds() {
				delete(byGroup, group)
				m.log.Info().Str("group", group).Str("topic", topic).Msg("consumer filter removed: dead too long")
			}
		}
		if len(byGroup) == 0 {
			delete(m.byTopic, topic)
			continue
		}
		ft := &filterTopic{Topic: topic, GroupFilterData: make(map[string]*filterEntry, len(byGroup))}
		for group, d := range byGroup {
			ft.GroupFilterData[group] = &filterEntry{
				BloomFilterData: d.bloom, BornTime: d.BornTime, ClientVersion: d.ClientVersion, ConsumerGroup: d.Group,
				Dead: d.Dead(), DeadTime: d.DeadTime, Expression: d.Expression, ExpressionType: d.ExpressionType, Topic: d.Topic,
			}
		}
		f.FilterDataByTopic[topic] = ft
	}
	m.mu.Unlock()
	b, err := json.MarshalIndent(&f, "", "\t")
	if err != nil {
		return err
	}
	return store.WriteFileAtomic(m.path, b)
}
