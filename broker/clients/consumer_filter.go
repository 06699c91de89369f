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

// The compiled-expression cache keeps at most compileCacheSize expressions,
// as rocketmq-filter's parse cache (100 entries), and at most
// compileCacheBytes of them by filter.Expression.Footprint (text plus
// compiled tree): a hundred expressions at filter.MaxExpressionLength with
// long IN lists would otherwise hold well over 100 MB.
const (
	compileCacheSize  = 100
	compileCacheBytes = 16 << 20
)

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
	fs    store.FS // Options.FS (nil: the real file system)
	log   zerolog.Logger
	clock clock.Clock

	bloomK, bloomM int

	mu      sync.RWMutex
	byTopic map[string]map[string]*FilterData // topic → group → filter

	cacheMu    sync.Mutex
	cache      map[string]*compiled // by expression text
	order      []string             // finished entries in insertion order, for eviction
	cacheBytes int                  // sum of the finished entries' cost

	// compileHook, when set (by tests), runs before each compile, outside
	// every lock.
	compileHook func(expr string)

	persistMu sync.Mutex
}

// compiled is one cache entry. It is in the map from the moment its compile
// starts, so that callers of the same expression wait for that compile
// (done) instead of repeating it; expr and err are set before done closes.
type compiled struct {
	done chan struct{}
	expr *filter.Expression
	err  error
	cost int
}

// NewConsumerFilterManager loads path (empty: memory only). Like the stock
// broker it takes every loaded filter for dead (its consumers have to
// heartbeat again) and ignores the whole file when an entry's bloom-filter
// data does not fit the filter this broker uses.
func NewConsumerFilterManager(path string, log zerolog.Logger, clk clock.Clock) (*ConsumerFilterManager, error) {
	m := &ConsumerFilterManager{
		path: path, log: log, clock: orReal(clk),
		byTopic: make(map[string]map[string]*FilterData),
		cache:   make(map[string]*compiled),
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
// expressions (errors included), bounded by compileCacheBytes. The error's
// text is the stock remark of a refused subscription; errors.Is(err,
// filter.ErrLimit) tells an expression over filter's limits.
//
// No lock is held while compiling: the entry goes into the map first, the
// compile runs unlocked, and only callers of the same expression wait for it,
// so one slow compile never holds up another group's heartbeat or pull.
func (m *ConsumerFilterManager) Compile(typ, expr string) (*filter.Expression, error) {
	if typ != ExpressionTypeSQL92 {
		return nil, fmt.Errorf("unsupported expression type %s", typ)
	}
	if len(expr) > filter.MaxExpressionLength {
		// Refused at once, and not cached: the entry would hold the text.
		return filter.Compile(expr)
	}
	m.cacheMu.Lock()
	if c, ok := m.cache[expr]; ok {
		m.cacheMu.Unlock()
		<-c.done
		return c.expr, c.err
	}
	c := &compiled{done: make(chan struct{})}
	m.cache[expr] = c
	m.cacheMu.Unlock()

	if m.compileHook != nil {
		m.compileHook(expr)
	}
	c.expr, c.err = filter.Compile(expr)
	if c.err != nil {
		c.cost = 2*len(expr) + 256 // the error keeps the text and formats it
	} else {
		c.cost = c.expr.Footprint()
	}
	close(c.done)

	m.cacheMu.Lock()
	m.order = append(m.order, expr)
	m.cacheBytes += c.cost
	for len(m.order) > compileCacheSize || m.cacheBytes > compileCacheBytes {
		old := m.cache[m.order[0]]
		m.cacheBytes -= old.cost
		delete(m.cache, m.order[0])
		m.order[0] = ""
		m.order = m.order[1:]
	}
	m.cacheMu.Unlock()
	return c.expr, c.err
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
	// Compile first, without m.mu: every group's heartbeat and every pull
	// looks filters up under it. The cache makes this free for an
	// expression already registered.
	results := make([]compileResult, len(subs))
	for i, sub := range subs {
		if sub != nil && !IsTagType(sub.ExpressionType) && sub.SubString != "" {
			results[i].expr, results[i].err = m.Compile(sub.ExpressionType, sub.SubString)
		}
	}
	now := m.clock.Now().UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	subscribed := make(map[string]struct{}, len(subs))
	for i, sub := range subs {
		if sub == nil {
			continue
		}
		subscribed[sub.Topic] = struct{}{}
		if IsTagType(sub.ExpressionType) || sub.SubString == "" {
			continue
		}
		m.registerLocked(sub.Topic, group, sub.SubString, sub.ExpressionType, sub.SubVersion, now, results[i])
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

// compileResult is a subscription's expression compiled before Register
// takes its lock.
type compileResult struct {
	expr *filter.Expression
	err  error
}

// LogExpression is how much of an expression a log line carries: a refused
// subscription may be megabytes.
func LogExpression(expr string) string {
	const n = 512
	if len(expr) <= n {
		return expr
	}
	return fmt.Sprintf("%s... (%d bytes)", expr[:n], len(expr))
}

// registerLocked is FilterDataMapByTopic.register, with the expression
// compiled by the caller.
func (m *ConsumerFilterManager) registerLocked(topic, group, expr, typ string, version, now int64, c compileResult) {
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
	e, err := c.expr, c.err
	if err != nil {
		m.log.Warn().Str("group", group).Str("topic", topic).Str("expression", LogExpression(expr)).Str("error", err.Error()).Msg("consumer filter does not compile")
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
	m.log.Info().Str("group", group).Str("topic", topic).Str("expression", LogExpression(expr)).Int64("clientVersion", version).Msg("consumer filter registered")
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
	return store.WriteFileAtomic(m.fs, m.path, b)
}
