package controller

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// The replicated state: 5.3.3 ReplicasInfoManager's two tables
// (controller/impl/manager/ReplicasInfoManager.java), changed only by
// events that came through the Raft log (apply), so every controller node
// holds the same tables at the same log index. The request checks
// (replicas.go) read them on the leader and produce events; the leader's
// non-replicated knowledge (which brokers are alive, their epochs and
// offsets) decides what the events say, never how they apply.

// replicaInfo is BrokerReplicaInfo: a broker set's members by controller id.
type replicaInfo struct {
	Cluster    string `json:"cluster"`
	BrokerName string `json:"brokerName"`
	// NextID is nextAssignBrokerId: starts at 1 and grows with every
	// addBroker, also when an id is re-applied (stock).
	NextID  int64                  `json:"nextId"`
	Brokers map[int64]brokerMember `json:"brokers"`
}

type brokerMember struct {
	Addr      string `json:"addr"`
	CheckCode string `json:"checkCode"`
}

func (r *replicaInfo) addr(id *int64) string {
	if id == nil {
		return ""
	}
	return r.Brokers[*id].Addr
}

func (r *replicaInfo) has(id int64) bool { _, ok := r.Brokers[id]; return ok }

func (r *replicaInfo) ids() []int64 { return slices.Sorted(maps.Keys(r.Brokers)) }

// syncStateInfo is SyncStateInfo: the master, its epoch and the sync state
// set with its epoch. Master nil is "no master" (never elected, or the
// last election found nobody).
type syncStateInfo struct {
	Cluster           string  `json:"cluster"`
	BrokerName        string  `json:"brokerName"`
	MasterEpoch       int32   `json:"masterEpoch"`
	SyncStateSetEpoch int32   `json:"syncStateSetEpoch"`
	SyncStateSet      []int64 `json:"syncStateSet"`
	Master            *int64  `json:"master,omitempty"`
}

func (s *syncStateInfo) firstTimeForElect() bool { return s.MasterEpoch == 0 }

func (s *syncStateInfo) inSet(id int64) bool { return slices.Contains(s.SyncStateSet, id) }

// state is both tables plus the remoting address each controller node
// announced when it became leader (so that every node can answer
// GET_METADATA_INFO with the leader's remoting address, which is not its
// Raft address).
type state struct {
	Replicas map[string]*replicaInfo   `json:"replicas"`
	Syncs    map[string]*syncStateInfo `json:"syncs"`
	Members  map[string]string         `json:"members"`
}

func newState() *state {
	return &state{Replicas: map[string]*replicaInfo{}, Syncs: map[string]*syncStateInfo{}, Members: map[string]string{}}
}

// contains is isContainsBroker: a set is known when both tables have it.
func (st *state) contains(brokerName string) bool {
	_, a := st.Replicas[brokerName]
	_, b := st.Syncs[brokerName]
	return a && b
}

// Event types (5.3.3 impl/event/EventType, plus rmq's controller member
// announcement).
const (
	evAlterSyncStateSet = "alterSyncStateSet"
	evApplyBrokerID     = "applyBrokerId"
	evElectMaster       = "electMaster"
	evCleanBrokerData   = "cleanBrokerData"
	evUpdateBrokerAddr  = "updateBrokerAddress"
	evMember            = "controllerMember"
)

// event is one state change as it travels in the Raft log (JSON; the log
// is read only by rmq controllers, so it needs no Java form).
type event struct {
	Type       string  `json:"type"`
	Cluster    string  `json:"cluster,omitempty"`
	BrokerName string  `json:"brokerName,omitempty"`
	BrokerID   int64   `json:"brokerId,omitempty"`
	Addr       string  `json:"addr,omitempty"`
	CheckCode  string  `json:"checkCode,omitempty"`
	IDs        []int64 `json:"ids,omitempty"`
	// Elected is ElectMasterEvent.newMasterElected: false records that the
	// old master is gone and nobody replaced it.
	Elected bool `json:"elected,omitempty"`
	// Member is the controller node id of evMember.
	Member string `json:"member,omitempty"`
}

func encodeEvents(evs []event) []byte {
	b, err := json.Marshal(evs)
	if err != nil {
		panic(fmt.Sprintf("controller: encode events: %v", err))
	}
	return b
}

func decodeEvents(b []byte) ([]event, error) {
	var evs []event
	err := json.Unmarshal(b, &evs)
	return evs, err
}

// apply is ReplicasInfoManager.applyEvent.
func (st *state) apply(e event) {
	switch e.Type {
	case evAlterSyncStateSet:
		if st.contains(e.BrokerName) {
			s := st.Syncs[e.BrokerName]
			s.SyncStateSet = slices.Clone(e.IDs)
			s.SyncStateSetEpoch++
		}
	case evApplyBrokerID:
		if st.contains(e.BrokerName) {
			r := st.Replicas[e.BrokerName]
			if !r.has(e.BrokerID) {
				r.Brokers[e.BrokerID] = brokerMember{Addr: e.Addr, CheckCode: e.CheckCode}
				r.NextID++
			}
			return
		}
		// The first broker of the set: both tables start here.
		r := &replicaInfo{Cluster: e.Cluster, BrokerName: e.BrokerName, NextID: 1, Brokers: map[int64]brokerMember{}}
		r.Brokers[e.BrokerID] = brokerMember{Addr: e.Addr, CheckCode: e.CheckCode}
		r.NextID++
		st.Replicas[e.BrokerName] = r
		st.Syncs[e.BrokerName] = &syncStateInfo{Cluster: e.Cluster, BrokerName: e.BrokerName, SyncStateSet: []int64{}}
	case evUpdateBrokerAddr:
		if r := st.Replicas[e.BrokerName]; r != nil {
			if m, ok := r.Brokers[e.BrokerID]; ok {
				m.Addr = e.Addr
				r.Brokers[e.BrokerID] = m
			}
		}
	case evElectMaster:
		if !st.contains(e.BrokerName) {
			return
		}
		s := st.Syncs[e.BrokerName]
		if e.Elected {
			id := e.BrokerID
			s.Master = &id
			s.MasterEpoch++
			s.SyncStateSet = []int64{id}
			s.SyncStateSetEpoch++
		} else {
			// The master is gone and nobody replaced it: no master, a new
			// master epoch, the sync state set kept (stock).
			s.Master = nil
			s.MasterEpoch++
		}
	case evCleanBrokerData:
		if len(e.IDs) == 0 {
			delete(st.Replicas, e.BrokerName)
			delete(st.Syncs, e.BrokerName)
			return
		}
		if !st.contains(e.BrokerName) {
			return
		}
		r, s := st.Replicas[e.BrokerName], st.Syncs[e.BrokerName]
		for _, id := range e.IDs {
			delete(r.Brokers, id)
			s.SyncStateSet = slices.DeleteFunc(s.SyncStateSet, func(x int64) bool { return x == id })
		}
		if len(r.Brokers) == 0 {
			delete(st.Replicas, e.BrokerName)
		}
		if len(s.SyncStateSet) == 0 {
			delete(st.Syncs, e.BrokerName)
		}
	case evMember:
		st.Members[e.Member] = e.Addr
	}
}
