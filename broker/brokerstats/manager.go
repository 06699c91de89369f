package brokerstats

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqio/rmq/message"
)

// Stats names of J4 BrokerStatsManager that rmq counts.
const (
	TopicPutNums    = "TOPIC_PUT_NUMS"
	TopicPutSize    = "TOPIC_PUT_SIZE"
	GroupGetNums    = "GROUP_GET_NUMS"
	GroupGetSize    = "GROUP_GET_SIZE"
	SndbckPutNums   = "SNDBCK_PUT_NUMS"
	BrokerPutNums   = "BROKER_PUT_NUMS"
	BrokerGetNums   = "BROKER_GET_NUMS"
	GroupGetLatency = "GROUP_GET_LATENCY"
)

// Key identifies an item within a set. Which fields a set uses follows its
// stock statsKey: Topic ("topic"), Topic and Group ("topic@group"), QueueID,
// Topic and Group ("queueId@topic@group"), or Topic alone holding the
// cluster name for the BROKER_* sets. A struct key keeps the lookups on the
// send and pull paths free of string building.
type Key struct {
	Topic   string
	Group   string
	QueueID int32
}

type keyForm uint8

const (
	formTopic keyForm = iota
	formTopicGroup
	formQueueTopicGroup
)

// String is the key in its stock statsKey form.
func (k Key) format(f keyForm) string {
	switch f {
	case formTopicGroup:
		return k.Topic + "@" + k.Group
	case formQueueTopicGroup:
		return strconv.Itoa(int(k.QueueID)) + "@" + k.Topic + "@" + k.Group
	}
	return k.Topic
}

// parseKey reads a stock statsKey; topic and group names cannot hold '@'.
func parseKey(f keyForm, s string) (Key, bool) {
	switch f {
	case formTopicGroup:
		t, g, ok := strings.Cut(s, "@")
		return Key{Topic: t, Group: g}, ok
	case formQueueTopicGroup:
		q, rest, ok := strings.Cut(s, "@")
		if !ok {
			return Key{}, false
		}
		n, err := strconv.ParseInt(q, 10, 32)
		if err != nil {
			return Key{}, false
		}
		t, g, ok := strings.Cut(rest, "@")
		return Key{Topic: t, Group: g, QueueID: int32(n)}, ok
	}
	return Key{Topic: s}, true
}

// Set is one stats name's items (J4 StatsItemSet). Reads go through an
// immutable map behind an atomic pointer, so finding an existing item takes
// no lock and allocates nothing; a new key copies the map under mu.
type Set struct {
	name  string
	form  keyForm
	mu    sync.Mutex
	items atomic.Pointer[map[Key]*Item]
}

func newSet(name string, f keyForm) *Set {
	s := &Set{name: name, form: f}
	m := make(map[Key]*Item)
	s.items.Store(&m)
	return s
}

// Name is the stock stats name.
func (s *Set) Name() string { return s.name }

// Item returns k's item, creating it on first use.
func (s *Set) Item(k Key) *Item {
	if it := (*s.items.Load())[k]; it != nil {
		return it
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.items.Load()
	if it := old[k]; it != nil {
		return it
	}
	m := make(map[Key]*Item, len(old)+1)
	for k2, v := range old {
		m[k2] = v
	}
	it := &Item{}
	m[k] = it
	s.items.Store(&m)
	return it
}

// Lookup returns k's item or nil.
func (s *Set) Lookup(k Key) *Item { return (*s.items.Load())[k] }

// LookupText returns the item a stock statsKey names, or nil.
func (s *Set) LookupText(statsKey string) *Item {
	k, ok := parseKey(s.form, statsKey)
	if !ok {
		return nil
	}
	return s.Lookup(k)
}

// KeyText writes k as a stock statsKey of this set.
func (s *Set) KeyText(k Key) string { return k.format(s.form) }

// Each calls fn for every item, in key-text order.
func (s *Set) Each(fn func(k Key, it *Item)) {
	m := *s.items.Load()
	keys := make([]Key, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return s.KeyText(keys[i]) < s.KeyText(keys[j]) })
	for _, k := range keys {
		fn(k, m[k])
	}
}

// RemoveIf drops the items whose key matches (a deleted topic or group).
func (s *Set) RemoveIf(match func(Key) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.items.Load()
	m := make(map[Key]*Item, len(old))
	for k, v := range old {
		if !match(k) {
			m[k] = v
		}
	}
	s.items.Store(&m)
}

func (s *Set) each(fn func(*Item)) {
	for _, it := range *s.items.Load() {
		fn(it)
	}
}

// Manager holds the broker's stats sets (J4 BrokerStatsManager) and samples
// them on the broker clock.
type Manager struct {
	cluster string
	sets    map[string]*Set

	TopicPut     *Set // TOPIC_PUT_NUMS
	TopicSize    *Set // TOPIC_PUT_SIZE
	GroupGet     *Set // GROUP_GET_NUMS
	GroupSize    *Set // GROUP_GET_SIZE
	SendBack     *Set // SNDBCK_PUT_NUMS
	BrokerPut    *Set // BROKER_PUT_NUMS
	BrokerGet    *Set // BROKER_GET_NUMS
	GroupLatency *Set // GROUP_GET_LATENCY

	// scheduledPut and scheduledSize are the part of TopicPut and TopicSize
	// that schedule deliveries added (RecordScheduleDelivery), for readers
	// that count sends only (ScheduledPut). Not stock stats names.
	scheduledPut, scheduledSize *Set

	// Runtime samples the store's get counters every second for the
	// getFoundTps, getMissTps and getTotalTps of GET_BROKER_RUNTIME_INFO.
	Runtime Rates

	brokerPut, brokerGet *Item
	detail               atomic.Pointer[Detail] // nil unless EnableDetail (detail.go)

	tickMu                        sync.Mutex
	nextMinute, nextHour, nextDay time.Time
}

// NewManager returns empty sets; cluster is the key of the BROKER_* items.
func NewManager(cluster string) *Manager {
	m := &Manager{
		cluster:       cluster,
		TopicPut:      newSet(TopicPutNums, formTopic),
		TopicSize:     newSet(TopicPutSize, formTopic),
		GroupGet:      newSet(GroupGetNums, formTopicGroup),
		GroupSize:     newSet(GroupGetSize, formTopicGroup),
		SendBack:      newSet(SndbckPutNums, formTopicGroup),
		BrokerPut:     newSet(BrokerPutNums, formTopic),
		BrokerGet:     newSet(BrokerGetNums, formTopic),
		GroupLatency:  newSet(GroupGetLatency, formQueueTopicGroup),
		scheduledPut:  newSet("", formTopic),
		scheduledSize: newSet("", formTopic),
	}
	m.sets = make(map[string]*Set)
	for _, s := range m.all() {
		m.sets[s.name] = s
	}
	m.brokerPut = m.BrokerPut.Item(Key{Topic: cluster})
	m.brokerGet = m.BrokerGet.Item(Key{Topic: cluster})
	return m
}

func (m *Manager) all() []*Set {
	return []*Set{m.TopicPut, m.TopicSize, m.GroupGet, m.GroupSize, m.SendBack, m.BrokerPut, m.BrokerGet, m.GroupLatency}
}

// Set returns the set of a stock stats name, or nil.
func (m *Manager) Set(name string) *Set { return m.sets[name] }

// Cluster is the key of the BROKER_* items.
func (m *Manager) Cluster() string { return m.cluster }

// RecordPut counts one stored send of msgs messages in bytes commitlog bytes
// (J4 incTopicPutNums, incTopicPutSize, incBrokerPutNums).
func (m *Manager) RecordPut(topic string, msgs, bytes int) {
	k := Key{Topic: topic}
	m.TopicPut.Item(k).Add(int64(msgs))
	m.TopicSize.Item(k).Add(int64(bytes))
	m.brokerPut.Add(int64(msgs))
	if d := m.detail.Load(); d != nil && msgs > 0 {
		avg, h := int64(bytes/msgs), d.MessageSize.Get(topic)
		for range msgs {
			h.Observe(avg)
		}
	}
}

// Schedule delivery's consumer group and topic (J4
// MixAll.SCHEDULE_CONSUMER_GROUP, TopicValidator.RMQ_SYS_SCHEDULE_TOPIC).
const (
	scheduleGroup = "SCHEDULE_CONSUMER"
	scheduleTopic = message.TopicSchedule
)

// RecordScheduleDelivery counts a due delay-level message of bytes stored
// on its real topic as J4 ScheduleMessageService PutResultProcess.onSuccess
// does (enableScheduleMessageStats, default true): a put of the topic and
// of the broker, and a get of SCHEDULE_TOPIC_XXXX by SCHEDULE_CONSUMER.
func (m *Manager) RecordScheduleDelivery(topic string, msgs, bytes int) {
	k := Key{Topic: topic}
	m.scheduledPut.Item(k).Add(int64(msgs))
	m.scheduledSize.Item(k).Add(int64(bytes))
	m.TopicPut.Item(k).AddTimes(int64(msgs), 1)
	m.TopicSize.Item(k).Add(int64(bytes))
	m.brokerPut.Add(int64(msgs))
	g := Key{Topic: scheduleTopic, Group: scheduleGroup}
	m.GroupGet.Item(g).Add(int64(msgs))
	m.GroupSize.Item(g).Add(int64(bytes))
}

// ScheduledPut is the part of topic's TOPIC_PUT_NUMS (msgs) and
// TOPIC_PUT_SIZE (bytes) that schedule deliveries added: the 5.x metrics
// (rocketmq_messages_in_total) count sends only.
func (m *Manager) ScheduledPut(topic string) (msgs, bytes int64) {
	k := Key{Topic: topic}
	if it := m.scheduledPut.Lookup(k); it != nil {
		msgs = it.Value()
	}
	if it := m.scheduledSize.Lookup(k); it != nil {
		bytes = it.Value()
	}
	return msgs, bytes
}

// IsScheduleGet reports the GROUP_GET_* key of schedule deliveries
// (SCHEDULE_TOPIC_XXXX@SCHEDULE_CONSUMER), which no consumer pulled.
func IsScheduleGet(k Key) bool { return k.Topic == scheduleTopic && k.Group == scheduleGroup }

// RecordGet counts one pull that transferred msgs messages of bytes bytes
// (J4 incGroupGetNums, incGroupGetSize, incBrokerGetNums).
func (m *Manager) RecordGet(topic, group string, msgs, bytes int) {
	k := Key{Topic: topic, Group: group}
	m.GroupGet.Item(k).Add(int64(msgs))
	m.GroupSize.Item(k).Add(int64(bytes))
	m.brokerGet.Add(int64(msgs))
}

// RecordGetLatency counts a pull's handling time (J4 incGroupGetLatency).
func (m *Manager) RecordGetLatency(topic, group string, queueID int32, d time.Duration) {
	m.GroupLatency.Item(Key{Topic: topic, Group: group, QueueID: queueID}).Add(d.Milliseconds())
}

// RecordSendBack counts one CONSUMER_SEND_MSG_BACK of a message of topic
// (J4 incSendBackNums).
func (m *Manager) RecordSendBack(topic, group string) {
	m.SendBack.Item(Key{Topic: topic, Group: group}).Add(1)
}

// GroupGetTps is the minute TPS of GROUP_GET_NUMS for topic@group (J4
// tpsGroupGetNums), 0 when nothing was pulled.
func (m *Manager) GroupGetTps(topic, group string) float64 {
	if it := m.GroupGet.Lookup(Key{Topic: topic, Group: group}); it != nil {
		return it.Minute().Tps
	}
	return 0
}

// RemoveTopic forgets every item of a deleted topic.
func (m *Manager) RemoveTopic(topic string) {
	for _, s := range m.all() {
		if s == m.BrokerPut || s == m.BrokerGet {
			continue
		}
		s.RemoveIf(func(k Key) bool { return k.Topic == topic })
	}
	m.scheduledPut.RemoveIf(func(k Key) bool { return k.Topic == topic })
	m.scheduledSize.RemoveIf(func(k Key) bool { return k.Topic == topic })
}

// Tick samples whichever windows are due at now; the broker calls it every
// second from its clock. The first call samples every window.
func (m *Manager) Tick(now time.Time) {
	m.tickMu.Lock()
	defer m.tickMu.Unlock()
	if !now.Before(m.nextMinute) {
		m.sampleAll(func(it *Item) { it.SampleMinute(now) })
		m.nextMinute = now.Add(minutePeriod)
	}
	if !now.Before(m.nextHour) {
		m.sampleAll(func(it *Item) { it.SampleHour(now) })
		m.nextHour = now.Add(hourPeriod)
	}
	if !now.Before(m.nextDay) {
		m.sampleAll(func(it *Item) { it.SampleDay(now) })
		m.nextDay = now.Add(dayPeriod)
	}
}

func (m *Manager) sampleAll(fn func(*Item)) {
	for _, s := range m.all() {
		s.each(fn)
	}
}
