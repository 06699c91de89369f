package clients

import (
	"github.com/rmqio/rmq/internal/clock"
	"sort"
	"sync"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/remoting"
)

// ConsumerManager tracks consumer groups from heartbeats: which connections
// belong to each group and what the group subscribes to (J4 ConsumerManager,
// ConsumerGroupInfo). A group exists while it has at least one connection.
type ConsumerManager struct {
	log   zerolog.Logger
	clock clock.Clock

	mu     sync.RWMutex
	groups map[string]*consumerGroup

	// groupGone, when set, hears of every group that lost its last
	// connection (ConsumerGroupEvent.UNREGISTER); it runs under mu.
	groupGone func(group string)
}

type consumerGroup struct {
	consumeType      string
	messageModel     string
	consumeFromWhere string
	channels         map[*remoting.Conn]*ClientChannel
	// subs is replaced per topic, never mutated in place, so the values handed
	// out by FindSubscription stay consistent without the lock.
	subs map[string]*remoting.SubscriptionData
}

// NewConsumerManager returns an empty manager on clk (nil: the wall clock).
func NewConsumerManager(log zerolog.Logger, clk clock.Clock) *ConsumerManager {
	return &ConsumerManager{log: log, clock: orReal(clk), groups: make(map[string]*consumerGroup)}
}

// Register records one consumer group of a heartbeat from ch. changed reports
// a new connection in the group, a connection now under another client id, or a
// subscribed topic added or removed; members are then the group's connections
// to notify. A subscription of a known topic is replaced only by one with a
// higher subVersion, and that alone is no change (as the stock broker).
func (m *ConsumerManager) Register(ch ClientChannel, data *remoting.ConsumerData) (changed bool, members []*remoting.Conn) {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[data.GroupName]
	if g == nil {
		g = &consumerGroup{channels: make(map[*remoting.Conn]*ClientChannel), subs: make(map[string]*remoting.SubscriptionData)}
		m.groups[data.GroupName] = g
	}
	g.consumeType, g.messageModel, g.consumeFromWhere = data.ConsumeType, data.MessageModel, data.ConsumeFromWhere

	old := g.channels[ch.Conn]
	switch {
	case old == nil:
		ch.LastUpdate = now
		g.channels[ch.Conn] = &ch
		changed = true
		m.log.Info().Str("group", data.GroupName).Object("client", ch.Conn).Msg("new consumer connected")
	case old.ClientID != ch.ClientID:
		m.log.Warn().Str("group", data.GroupName).Str("old", old.ClientID).Str("new", ch.ClientID).Msg("consumer connection changed its client id")
		ch.LastUpdate = now
		g.channels[ch.Conn] = &ch
		changed = true
	default:
		old.LastUpdate = now
		old.Language, old.Version = ch.Language, ch.Version
	}

	if g.updateSubscriptions(data.SubscriptionDataSet) {
		changed = true
		m.log.Info().Str("group", data.GroupName).Msg("consumer subscription changed")
	}
	if changed {
		members = g.conns()
	}
	return changed, members
}

func (g *consumerGroup) updateSubscriptions(list []*remoting.SubscriptionData) bool {
	changed := false
	seen := make(map[string]struct{}, len(list))
	for _, sub := range list {
		if sub == nil {
			continue
		}
		seen[sub.Topic] = struct{}{}
		old := g.subs[sub.Topic]
		switch {
		case old == nil:
			g.subs[sub.Topic] = sub
			changed = true
		case sub.SubVersion > old.SubVersion:
			g.subs[sub.Topic] = sub
		}
	}
	for topic := range g.subs {
		if _, ok := seen[topic]; !ok {
			delete(g.subs, topic)
			changed = true
		}
	}
	return changed
}

func (g *consumerGroup) conns() []*remoting.Conn {
	out := make([]*remoting.Conn, 0, len(g.channels))
	for c := range g.channels {
		out = append(out, c)
	}
	return out
}

// Unregister removes conn from group (UNREGISTER_CLIENT). When it was a member,
// removed is true and members are the connections left to notify.
func (m *ConsumerManager) Unregister(group string, conn *remoting.Conn) (removed bool, members []*remoting.Conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[group]
	if g == nil {
		return false, nil
	}
	if _, ok := g.channels[conn]; !ok {
		return false, nil
	}
	delete(g.channels, conn)
	m.log.Info().Str("group", group).Object("client", conn).Msg("consumer unregistered")
	if len(g.channels) == 0 {
		m.removeGroupLocked(group)
		return true, nil
	}
	return true, g.conns()
}

// ConnClosed drops conn from every group. The result maps each group that lost
// it to the connections still in that group (empty groups are removed and
// left out: nobody remains to notify).
func (m *ConsumerManager) ConnClosed(conn *remoting.Conn) map[string][]*remoting.Conn {
	m.mu.Lock()
	defer m.mu.Unlock()
	var changed map[string][]*remoting.Conn
	for name, g := range m.groups {
		if _, ok := g.channels[conn]; !ok {
			continue
		}
		delete(g.channels, conn)
		m.log.Info().Str("group", name).Object("client", conn).Msg("consumer connection closed")
		if len(g.channels) == 0 {
			m.removeGroupLocked(name)
			continue
		}
		if changed == nil {
			changed = make(map[string][]*remoting.Conn)
		}
		changed[name] = g.conns()
	}
	return changed
}

// ScanExpired drops every channel whose last heartbeat is older than the
// channel expiry. It returns the dropped connections (each once; the caller
// closes them) and, per group that lost a member but still has others, the
// remaining connections to notify.
func (m *ConsumerManager) ScanExpired() (expired []*remoting.Conn, changed map[string][]*remoting.Conn) {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := make(map[*remoting.Conn]struct{})
	for name, g := range m.groups {
		lost := false
		for c, ch := range g.channels {
			if now.Sub(ch.LastUpdate) <= channelExpiredTimeout {
				continue
			}
			delete(g.channels, c)
			lost = true
			m.log.Warn().Str("group", name).Object("client", c).Msg("consumer channel expired")
			if _, dup := seen[c]; !dup {
				seen[c] = struct{}{}
				expired = append(expired, c)
			}
		}
		if len(g.channels) == 0 {
			m.removeGroupLocked(name)
			continue
		}
		if lost {
			if changed == nil {
				changed = make(map[string][]*remoting.Conn)
			}
			changed[name] = g.conns()
		}
	}
	return expired, changed
}

// removeGroupLocked forgets a group without connections; m.mu is held.
func (m *ConsumerManager) removeGroupLocked(group string) {
	delete(m.groups, group)
	if m.groupGone != nil {
		m.groupGone(group)
	}
}

// FindSubscription returns group's subscription of topic, or nil. The result
// is shared: do not modify it.
func (m *ConsumerManager) FindSubscription(group, topic string) *remoting.SubscriptionData {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g := m.groups[group]; g != nil {
		return g.subs[topic]
	}
	return nil
}

// SubscriptionCount is the number of topics group subscribes to (0 if offline).
func (m *ConsumerManager) SubscriptionCount(group string) int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g := m.groups[group]; g != nil {
		return len(g.subs)
	}
	return 0
}

// ClientIDs lists the client ids of group's connections, sorted; nil if the
// group is offline.
func (m *ConsumerManager) ClientIDs(group string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.groups[group]
	if g == nil {
		return nil
	}
	ids := make([]string, 0, len(g.channels))
	for _, ch := range g.channels {
		ids = append(ids, ch.ClientID)
	}
	sort.Strings(ids)
	return ids
}

// FindChannel returns a copy of the channel of clientID in group.
func (m *ConsumerManager) FindChannel(group, clientID string) (ClientChannel, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g := m.groups[group]; g != nil {
		for _, ch := range g.channels {
			if ch.ClientID == clientID {
				return *ch, true
			}
		}
	}
	return ClientChannel{}, false
}

// Connection builds the GET_CONSUMER_CONNECTION_LIST body of group; false if
// the group is offline.
func (m *ConsumerManager) Connection(group string) (*remoting.ConsumerConnection, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.groups[group]
	if g == nil {
		return nil, false
	}
	cc := &remoting.ConsumerConnection{
		ConnectionSet:     make([]*remoting.Connection, 0, len(g.channels)),
		ConsumeFromWhere:  g.consumeFromWhere,
		ConsumeType:       g.consumeType,
		MessageModel:      g.messageModel,
		SubscriptionTable: make(map[string]*remoting.SubscriptionData, len(g.subs)),
	}
	for _, ch := range g.channels {
		cc.ConnectionSet = append(cc.ConnectionSet, ch.connection())
	}
	sort.Slice(cc.ConnectionSet, func(i, j int) bool { return cc.ConnectionSet[i].ClientID < cc.ConnectionSet[j].ClientID })
	for topic, sub := range g.subs {
		cp := *sub
		if cp.CodeSet == nil {
			cp.CodeSet = []remoting.FlexInt64{}
		}
		if cp.TagsSet == nil {
			cp.TagsSet = []string{}
		}
		cc.SubscriptionTable[topic] = &cp
	}
	return cc, true
}

// GroupsByTopic lists, sorted, the online groups subscribed to topic.
func (m *ConsumerManager) GroupsByTopic(topic string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for name, g := range m.groups {
		if _, ok := g.subs[topic]; ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Groups lists the online consumer groups, sorted.
func (m *ConsumerManager) Groups() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.groups))
	for name := range m.groups {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
