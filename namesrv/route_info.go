package namesrv

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// MasterID is the brokerId of a broker group's master (MixAll.MASTER_ID).
const MasterID int64 = 0

// BrokerRegistration is the content of one REGISTER_BROKER request.
type BrokerRegistration struct {
	ClusterName  string
	BrokerAddr   string
	BrokerName   string
	BrokerID     int64
	HAServerAddr string
	// Topics is the broker's topic table. nil stands for a request without a
	// body, which the Java name server treats as an empty table at DataVersion{0,0}.
	Topics *remoting.TopicConfigSerializeWrapper
	// FilterServerList replaces the broker's filter servers; nil leaves them as they are.
	FilterServerList []string
	// ConnID identifies the connection that registered, so that its closing can
	// remove the broker at once; 0 when there is none.
	ConnID uint64
	// Timeout overrides the expiry time for this broker when > 0 (J5 heartbeatTimeoutMillis).
	Timeout time.Duration
	// EnableActingMaster is 5.x's enableActingMaster (nil from a 4.x broker).
	EnableActingMaster *bool
}

// RegisterResult is what a registrant is told: for a slave whose master is
// alive, the master's address and HA address; empty otherwise.
type RegisterResult struct {
	MasterAddr   string
	HAServerAddr string
}

// ExpiredBroker is a broker address that ScanNotActiveBroker removed.
type ExpiredBroker struct {
	Addr   string
	ConnID uint64
}

type brokerLive struct {
	lastUpdate   time.Time
	dataVersion  remoting.DataVersion
	connID       uint64
	haServerAddr string
	timeout      time.Duration
}

// RouteInfoManager is the name server's route table. It has no network: the
// caller passes connection ids and a clock. All methods are safe for concurrent use.
//
// Invariants (as in the Java RouteInfoManager):
//   - every brokerName in clusterAddrTable has a brokerAddrTable entry with at
//     least one address, except transiently during removal;
//   - one address appears under one brokerId only (re-registering under a new
//     id drops the old entry);
//   - topic queue data is keyed by brokerName and is written only by masters,
//     on first registration or when their DataVersion changes. It outlives
//     slaves and is dropped only when the broker group has no address left, or
//     by DeleteTopic.
type RouteInfoManager struct {
	now func() time.Time
	log zerolog.Logger

	mu                sync.RWMutex
	topicQueueTable   map[string]map[string]*remoting.QueueData // topic → brokerName → queues
	brokerAddrTable   map[string]*remoting.BrokerData           // brokerName → group
	clusterAddrTable  map[string]map[string]struct{}            // cluster → brokerNames
	brokerLiveTable   map[string]*brokerLive                    // brokerAddr → liveness
	filterServerTable map[string][]string                       // brokerAddr → filter servers

	actingMaster map[string]bool // brokerName → its brokers registered enableActingMaster (BrokerData.enableActingMaster)
	// supportActingMaster and notifyMinID are the name server's
	// supportActingMaster and notifyMinBrokerIdChanged (acting_master.go).
	supportActingMaster, notifyMinID bool
	minIDChanges                     []MinBrokerIDChange // waiting for TakeMinBrokerIDChanges
}

// NewRouteInfoManager returns an empty route table reading time from now.
func NewRouteInfoManager(now func() time.Time, log zerolog.Logger) *RouteInfoManager {
	if now == nil {
		now = time.Now
	}
	return &RouteInfoManager{
		now:               now,
		log:               log,
		topicQueueTable:   make(map[string]map[string]*remoting.QueueData),
		brokerAddrTable:   make(map[string]*remoting.BrokerData),
		clusterAddrTable:  make(map[string]map[string]struct{}),
		brokerLiveTable:   make(map[string]*brokerLive),
		filterServerTable: make(map[string][]string),
		actingMaster:      make(map[string]bool),
	}
}

// RegisterBroker records a broker registration.
func (m *RouteInfoManager) RegisterBroker(r BrokerRegistration) RegisterResult {
	topics := r.Topics
	if topics == nil {
		topics = &remoting.TopicConfigSerializeWrapper{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()

	names := m.clusterAddrTable[r.ClusterName]
	if names == nil {
		names = make(map[string]struct{})
		m.clusterAddrTable[r.ClusterName] = names
	}
	names[r.BrokerName] = struct{}{}

	registerFirst := false
	bd := m.brokerAddrTable[r.BrokerName]
	if bd == nil {
		registerFirst = true
		bd = &remoting.BrokerData{Cluster: r.ClusterName, BrokerName: r.BrokerName, BrokerAddrs: make(map[int64]string)}
		m.brokerAddrTable[r.BrokerName] = bd
	}
	m.actingMaster[r.BrokerName] = r.EnableActingMaster != nil && *r.EnableActingMaster
	prevMin, hadAny := minID(bd.BrokerAddrs)
	// A slave promoted to master re-registers its address under id 0: the
	// address must not stay under its old id as well.
	for id, addr := range bd.BrokerAddrs {
		if addr == r.BrokerAddr && id != r.BrokerID {
			delete(bd.BrokerAddrs, id)
		}
	}
	oldAddr, had := bd.BrokerAddrs[r.BrokerID]
	bd.BrokerAddrs[r.BrokerID] = r.BrokerAddr
	if r.BrokerID == MasterID && oldAddr != r.BrokerAddr {
		m.log.Info().Str("cluster", bd.Cluster).Str("brokerName", r.BrokerName).
			Str("from", oldAddr).Str("to", r.BrokerAddr).Msg("master address changed")
	}
	registerFirst = registerFirst || !had

	// A prime slave (5.x, the live member of least id when the master is
	// gone) writes the group's queue data too; in acting-master mode
	// without write permission, which the route then shows as a read-only
	// master (RouteInfoManager.registerBroker).
	curMin, _ := minID(bd.BrokerAddrs)
	primeSlave := r.EnableActingMaster != nil && r.BrokerID != MasterID && r.BrokerID == curMin
	if (r.BrokerID == MasterID || primeSlave) && (registerFirst || m.topicConfigChangedLocked(r.BrokerAddr, topics.DataVersion)) {
		for name, tc := range topics.TopicConfigTable {
			if tc == nil {
				continue
			}
			topic := tc.TopicName
			if topic == "" {
				topic = name
			}
			if primeSlave && m.actingMaster[r.BrokerName] {
				c := *tc
				c.Perm &^= topicgroup.PermWrite
				tc = &c
			}
			m.updateQueueDataLocked(topic, r.BrokerName, tc)
		}
	}

	prev := m.brokerLiveTable[r.BrokerAddr]
	m.brokerLiveTable[r.BrokerAddr] = &brokerLive{
		lastUpdate:   m.now(),
		dataVersion:  topics.DataVersion,
		connID:       r.ConnID,
		haServerAddr: r.HAServerAddr,
		timeout:      r.Timeout,
	}
	if prev == nil {
		m.log.Info().Str("brokerAddr", r.BrokerAddr).Str("haServer", r.HAServerAddr).Msg("new broker registered")
	}

	if r.FilterServerList != nil {
		if len(r.FilterServerList) == 0 {
			delete(m.filterServerTable, r.BrokerAddr)
		} else {
			m.filterServerTable[r.BrokerAddr] = slices.Clone(r.FilterServerList)
		}
	}

	if hadAny && r.BrokerID < prevMin {
		// A member of lower id (the master coming back) joined: the others
		// are told, with its HA address.
		m.minIDChangedLocked(r.BrokerName, "", r.HAServerAddr)
	}

	var res RegisterResult
	if r.BrokerID != MasterID {
		if masterAddr, ok := bd.BrokerAddrs[MasterID]; ok {
			if live := m.brokerLiveTable[masterAddr]; live != nil {
				res.MasterAddr = masterAddr
				res.HAServerAddr = live.haServerAddr
			}
		}
	}
	return res
}

func (m *RouteInfoManager) updateQueueDataLocked(topic, brokerName string, tc *topicgroup.TopicConfig) {
	qd := &remoting.QueueData{
		BrokerName:     brokerName,
		Perm:           tc.Perm,
		ReadQueueNums:  tc.ReadQueueNums,
		TopicSysFlag:   tc.TopicSysFlag,
		WriteQueueNums: tc.WriteQueueNums,
	}
	qds := m.topicQueueTable[topic]
	if qds == nil {
		m.topicQueueTable[topic] = map[string]*remoting.QueueData{brokerName: qd}
		m.log.Info().Str("topic", topic).Str("brokerName", brokerName).Msg("new topic registered")
		return
	}
	if old := qds[brokerName]; old != nil && *old != *qd {
		m.log.Info().Str("topic", topic).Interface("old", old).Interface("new", qd).Msg("topic changed")
	}
	qds[brokerName] = qd
}

func (m *RouteInfoManager) topicConfigChangedLocked(brokerAddr string, dv remoting.DataVersion) bool {
	live := m.brokerLiveTable[brokerAddr]
	return live == nil || live.dataVersion != dv
}

// IsBrokerTopicConfigChanged reports whether dv differs from the DataVersion the
// broker at brokerAddr last registered (true when the broker is unknown).
func (m *RouteInfoManager) IsBrokerTopicConfigChanged(brokerAddr string, dv remoting.DataVersion) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.topicConfigChangedLocked(brokerAddr, dv)
}

// BrokerDataVersion returns the DataVersion the broker last registered.
func (m *RouteInfoManager) BrokerDataVersion(brokerAddr string) (remoting.DataVersion, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if live := m.brokerLiveTable[brokerAddr]; live != nil {
		return live.dataVersion, true
	}
	return remoting.DataVersion{}, false
}

// TouchBroker renews a live broker's registration time (QUERY_DATA_VERSION with
// an unchanged DataVersion); unknown addresses are ignored.
func (m *RouteInfoManager) TouchBroker(brokerAddr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if live := m.brokerLiveTable[brokerAddr]; live != nil {
		live.lastUpdate = m.now()
	}
}

// UnregisterBroker removes one broker address (UNREGISTER_BROKER). When it was
// the group's last address, the group leaves its cluster and its topic queues go.
func (m *RouteInfoManager) UnregisterBroker(clusterName, brokerAddr, brokerName string, brokerID int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, wasLive := m.brokerLiveTable[brokerAddr]
	delete(m.brokerLiveTable, brokerAddr)
	delete(m.filterServerTable, brokerAddr)
	m.log.Info().Str("brokerAddr", brokerAddr).Bool("wasLive", wasLive).Msg("unregister broker")

	bd := m.brokerAddrTable[brokerName]
	if bd == nil {
		return
	}
	wasMin := false
	if id, ok := minID(bd.BrokerAddrs); ok && id == brokerID {
		wasMin = true
	}
	// As stock: every id of the address goes (removeIf by value).
	for id, addr := range bd.BrokerAddrs {
		if addr == brokerAddr {
			delete(bd.BrokerAddrs, id)
		}
	}
	if len(bd.BrokerAddrs) > 0 {
		m.groupReducedLocked(brokerName, brokerAddr, wasMin)
		return
	}
	delete(m.brokerAddrTable, brokerName)
	if names := m.clusterAddrTable[clusterName]; names != nil {
		delete(names, brokerName)
		if len(names) == 0 {
			delete(m.clusterAddrTable, clusterName)
		}
	}
	m.removeTopicsOfBrokerLocked(brokerName)
}

func (m *RouteInfoManager) removeTopicsOfBrokerLocked(brokerName string) {
	for topic, qds := range m.topicQueueTable {
		delete(qds, brokerName)
		if len(qds) == 0 {
			delete(m.topicQueueTable, topic)
			m.log.Info().Str("topic", topic).Str("brokerName", brokerName).Msg("topic has no broker left, removed")
		}
	}
}

// removeBrokerAddrLocked forgets a broker address the way a destroyed channel
// does in Java: out of the live and address tables and, when its group is left
// empty, out of its cluster with its topic queues.
func (m *RouteInfoManager) removeBrokerAddrLocked(brokerAddr string) {
	delete(m.brokerLiveTable, brokerAddr)
	delete(m.filterServerTable, brokerAddr)
	for name, bd := range m.brokerAddrTable {
		found, wasMin := false, false
		minBefore, _ := minID(bd.BrokerAddrs)
		for id, addr := range bd.BrokerAddrs {
			if addr == brokerAddr {
				delete(bd.BrokerAddrs, id)
				found = true
				wasMin = wasMin || id == minBefore
			}
		}
		if !found {
			continue
		}
		if len(bd.BrokerAddrs) > 0 {
			m.groupReducedLocked(name, brokerAddr, wasMin)
		}
		if len(bd.BrokerAddrs) == 0 {
			delete(m.brokerAddrTable, name)
			for cluster, names := range m.clusterAddrTable {
				if _, ok := names[name]; ok {
					delete(names, name)
					if len(names) == 0 {
						delete(m.clusterAddrTable, cluster)
					}
				}
			}
			m.removeTopicsOfBrokerLocked(name)
		}
		m.log.Info().Str("brokerAddr", brokerAddr).Str("brokerName", name).Msg("broker removed")
		return
	}
}

// ConnClosed removes, at once, every broker whose latest registration came over
// connection connID, and returns their addresses. A broker that has since
// registered over another connection is kept.
func (m *RouteInfoManager) ConnClosed(connID uint64) []string {
	if connID == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var gone []string
	for addr, live := range m.brokerLiveTable {
		if live.connID == connID {
			gone = append(gone, addr)
		}
	}
	slices.Sort(gone)
	for _, addr := range gone {
		m.removeBrokerAddrLocked(addr)
	}
	return gone
}

// ScanNotActiveBroker removes brokers whose last registration is older than
// expiry (or their own registered timeout) and returns them, so the caller can
// close their connections.
func (m *RouteInfoManager) ScanNotActiveBroker(expiry time.Duration) []ExpiredBroker {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	var gone []ExpiredBroker
	for addr, live := range m.brokerLiveTable {
		ttl := expiry
		if live.timeout > 0 {
			ttl = live.timeout
		}
		if live.lastUpdate.Add(ttl).Before(now) {
			gone = append(gone, ExpiredBroker{Addr: addr, ConnID: live.connID})
		}
	}
	slices.SortFunc(gone, func(a, b ExpiredBroker) int { return cmp.Compare(a.Addr, b.Addr) })
	for _, e := range gone {
		m.log.Warn().Str("brokerAddr", e.Addr).Dur("expiry", expiry).Msg("broker registration expired")
		m.removeBrokerAddrLocked(e.Addr)
	}
	return gone
}

// TopicRoute returns a copy of the topic's route, or nil when the topic has no
// queue data or none of its brokers is known (TOPIC_NOT_EXIST). Queue and broker
// data are sorted by brokerName; every BrokerAddrs map is non-nil.
func (m *RouteInfoManager) TopicRoute(topic string) *remoting.TopicRouteData {
	m.mu.RLock()
	defer m.mu.RUnlock()
	qds := m.topicQueueTable[topic]
	if qds == nil {
		return nil
	}
	rd := &remoting.TopicRouteData{
		BrokerDatas:       []*remoting.BrokerData{},
		FilterServerTable: map[string][]string{},
		QueueDatas:        make([]*remoting.QueueData, 0, len(qds)),
	}
	for _, name := range slices.Sorted(maps.Keys(qds)) {
		qd := *qds[name]
		rd.QueueDatas = append(rd.QueueDatas, &qd)
		bd := m.brokerAddrTable[name]
		if bd == nil {
			continue
		}
		rd.BrokerDatas = append(rd.BrokerDatas, cloneBrokerData(bd))
		for _, addr := range bd.BrokerAddrs {
			if fs, ok := m.filterServerTable[addr]; ok {
				rd.FilterServerTable[addr] = slices.Clone(fs)
			}
		}
	}
	if len(rd.BrokerDatas) == 0 {
		return nil
	}
	if m.supportActingMaster {
		actingMasterRoute(topic, rd, m.actingMaster)
	}
	return rd
}

func cloneBrokerData(bd *remoting.BrokerData) *remoting.BrokerData {
	c := &remoting.BrokerData{Cluster: bd.Cluster, BrokerName: bd.BrokerName, BrokerAddrs: make(map[int64]string, len(bd.BrokerAddrs))}
	maps.Copy(c.BrokerAddrs, bd.BrokerAddrs)
	return c
}

// ClusterInfo returns a copy of the broker and cluster tables (GET_BROKER_CLUSTER_INFO).
func (m *RouteInfoManager) ClusterInfo() *remoting.ClusterInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ci := &remoting.ClusterInfo{
		BrokerAddrTable:  make(map[string]*remoting.BrokerData, len(m.brokerAddrTable)),
		ClusterAddrTable: make(map[string][]string, len(m.clusterAddrTable)),
	}
	for name, bd := range m.brokerAddrTable {
		ci.BrokerAddrTable[name] = cloneBrokerData(bd)
	}
	for cluster, names := range m.clusterAddrTable {
		ci.ClusterAddrTable[cluster] = slices.Sorted(maps.Keys(names))
	}
	return ci
}

// AllTopics returns every topic with queue data, sorted.
func (m *RouteInfoManager) AllTopics() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Sorted(maps.Keys(m.topicQueueTable))
}

// TopicsByCluster returns the topics served by at least one broker group of
// the cluster, sorted; empty for an unknown cluster.
func (m *RouteInfoManager) TopicsByCluster(cluster string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	names := m.clusterAddrTable[cluster]
	out := []string{}
	for topic, qds := range m.topicQueueTable {
		for name := range names {
			if _, ok := qds[name]; ok {
				out = append(out, topic)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// SystemTopics returns what GET_SYSTEM_TOPIC_LIST_FROM_NS lists: every cluster
// name and every broker name (a broker registers topics named after both),
// plus the address of one known broker for the caller to ask next ("" if none).
func (m *RouteInfoManager) SystemTopics() (topics []string, brokerAddr string) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	set := make(map[string]struct{})
	for cluster, names := range m.clusterAddrTable {
		set[cluster] = struct{}{}
		for name := range names {
			set[name] = struct{}{}
		}
	}
	topics = slices.Sorted(maps.Keys(set))
	for _, name := range slices.Sorted(maps.Keys(m.brokerAddrTable)) {
		addrs := m.brokerAddrTable[name].BrokerAddrs
		if len(addrs) > 0 {
			brokerAddr = addrs[slices.Min(slices.Collect(maps.Keys(addrs)))]
			break
		}
	}
	if topics == nil {
		topics = []string{}
	}
	return topics, brokerAddr
}

// DeleteTopic removes a topic's queue data: everywhere when cluster is "",
// otherwise only that of the cluster's broker groups (the topic goes when none is left).
func (m *RouteInfoManager) DeleteTopic(topic, cluster string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cluster == "" {
		delete(m.topicQueueTable, topic)
		return
	}
	qds := m.topicQueueTable[topic]
	if qds == nil {
		return
	}
	for name := range m.clusterAddrTable[cluster] {
		delete(qds, name)
	}
	if len(qds) == 0 {
		delete(m.topicQueueTable, topic)
	}
}

// ErrUnknownBroker is returned by RegisterTopic for queue data of a broker
// group the name server does not know.
var ErrUnknownBroker = errors.New("namesrv: queue data names an unknown broker")

// RegisterTopic adds or replaces queue data of a topic (REGISTER_TOPIC_IN_NAMESRV).
// Nothing changes when any entry names an unknown broker group.
func (m *RouteInfoManager) RegisterTopic(topic string, queueDatas []*remoting.QueueData) error {
	if len(queueDatas) == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, qd := range queueDatas {
		if qd == nil || m.brokerAddrTable[qd.BrokerName] == nil {
			name := "<nil>"
			if qd != nil {
				name = qd.BrokerName
			}
			return fmt.Errorf("%w: topic %s broker %s", ErrUnknownBroker, topic, name)
		}
	}
	qds := m.topicQueueTable[topic]
	if qds == nil {
		qds = make(map[string]*remoting.QueueData, len(queueDatas))
		m.topicQueueTable[topic] = qds
	}
	for _, qd := range queueDatas {
		c := *qd
		qds[qd.BrokerName] = &c
	}
	return nil
}

// WipeWritePerm clears the write bit of every queue data of the broker group
// and returns how many topics it touched (WIPE_WRITE_PERM_OF_BROKER).
func (m *RouteInfoManager) WipeWritePerm(brokerName string) int {
	return m.changePerm(brokerName, func(p int32) int32 { return p &^ topicgroup.PermWrite })
}

// AddWritePerm sets every queue data of the broker group to read|write and
// returns how many topics it touched (ADD_WRITE_PERM_OF_BROKER).
func (m *RouteInfoManager) AddWritePerm(brokerName string) int {
	return m.changePerm(brokerName, func(int32) int32 { return topicgroup.PermRead | topicgroup.PermWrite })
}

func (m *RouteInfoManager) changePerm(brokerName string, f func(int32) int32) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, qds := range m.topicQueueTable {
		if qd := qds[brokerName]; qd != nil {
			qd.Perm = f(qd.Perm)
			n++
		}
	}
	return n
}
