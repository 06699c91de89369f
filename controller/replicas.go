package controller

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rmqio/rmq/remoting"
)

// The request checks of 5.3.3 ReplicasInfoManager, run by the leader
// against the replicated state: each returns the answer and the events
// that make it true. Nothing here changes the state; the events do, once
// the Raft log has them (Controller.propose).

// result is ControllerResult: the answer's code, remark, header and body,
// and the events to replicate before it is sent.
type result struct {
	code   int32
	remark string
	header interface{ Encode(*remoting.Command) }
	body   []byte
	events []event
}

func refuse(code int32, format string, args ...any) result {
	return result{code: code, remark: fmt.Sprintf(format, args...)}
}

// liveness is what the leader knows of brokers outside the log.
type liveness interface {
	alive(cluster, brokerName string, id int64) bool
	info(cluster, brokerName string, id int64) *brokerLive
}

func ptr[T any](v T) *T { return &v }

func syncBody(s *syncStateInfo) []byte {
	return (&remoting.SyncStateSet{SyncStateSet: s.SyncStateSet, SyncStateSetEpoch: s.SyncStateSetEpoch}).Encode()
}

// alterSyncStateSet checks, in the stock order: the set is known, the
// set changes, the request is from the current master, at its epoch, at
// the current sync state set epoch, every new member exists and is alive,
// and the master stays in the set.
func (st *state) alterSyncStateSet(req *remoting.AlterSyncStateSetRequestHeader, set remoting.SyncStateSet, live liveness) result {
	if !st.contains(req.BrokerName) {
		return refuse(remoting.ControllerAlterSyncStateSetFailed, "Broker metadata is not existed")
	}
	s, r := st.Syncs[req.BrokerName], st.Replicas[req.BrokerName]
	newSet := remoting.SortedIDs(set.SyncStateSet)
	if slices.Equal(remoting.SortedIDs(s.SyncStateSet), newSet) {
		return refuse(remoting.ControllerAlterSyncStateSetFailed, "The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet")
	}
	if s.Master == nil || req.MasterBrokerID == nil || *s.Master != *req.MasterBrokerID {
		return refuse(remoting.ControllerInvalidMaster, "Rejecting alter syncStateSet request because the current leader is:{%s}, not {%s}",
			javaLong(s.Master), javaLong(req.MasterBrokerID))
	}
	if req.MasterEpoch == nil || *req.MasterEpoch != s.MasterEpoch {
		return refuse(remoting.ControllerFencedMasterEpoch, "Rejecting alter syncStateSet request because the current master epoch is:{%d}, not {%s}",
			s.MasterEpoch, javaInt(req.MasterEpoch))
	}
	if set.SyncStateSetEpoch != s.SyncStateSetEpoch {
		return refuse(remoting.ControllerFencedSyncStateSetEpoch, "Rejecting alter syncStateSet request because the current syncStateSet epoch is:{%d}, not {%d}",
			s.SyncStateSetEpoch, set.SyncStateSetEpoch)
	}
	for _, id := range newSet {
		if !r.has(id) {
			return refuse(remoting.ControllerInvalidReplicas, "Rejecting alter syncStateSet request because the replicas {%d} don't exist", id)
		}
		if !live.alive(r.Cluster, r.BrokerName, id) {
			return refuse(remoting.ControllerBrokerNotAlive, "Rejecting alter syncStateSet request because the replicas {%d} don't alive", id)
		}
	}
	if !slices.Contains(newSet, *s.Master) {
		return refuse(remoting.ControllerAlterSyncStateSetFailed, "Rejecting alter syncStateSet request because the newSyncStateSet don't contains origin leader {%d}", *s.Master)
	}
	epoch := s.SyncStateSetEpoch + 1
	return result{
		header: &remoting.ControllerReplyHeader{NewSyncStateSetEpoch: ptr(epoch)},
		body:   (&remoting.SyncStateSet{SyncStateSet: newSet, SyncStateSetEpoch: epoch}).Encode(),
		events: []event{{Type: evAlterSyncStateSet, BrokerName: req.BrokerName, IDs: newSet}},
	}
}

// javaLong and javaInt print a nullable number as Java's String.format
// does ("null" for null).
func javaLong(v *int64) string {
	if v == nil {
		return "null"
	}
	return strconv.FormatInt(*v, 10)
}

func javaInt(v *int32) string {
	if v == nil {
		return "null"
	}
	return strconv.FormatInt(int64(*v), 10)
}

func memberGroup(r *replicaInfo) *remoting.BrokerMemberGroup {
	g := &remoting.BrokerMemberGroup{Cluster: r.Cluster, BrokerName: r.BrokerName, BrokerAddrs: map[int64]string{}}
	for id, m := range r.Brokers {
		g.BrokerAddrs[id] = m.Addr
	}
	return g
}

// electMaster is ReplicasInfoManager.electMaster: the first election of a
// set goes to the asking broker; later ones to the policy (electPolicy),
// over the sync state set, then over every replica when unclean elections
// are enabled. A master that stays answers CONTROLLER_MASTER_STILL_EXIST
// with the current master; no candidate answers
// CONTROLLER_MASTER_NOT_AVAILABLE (and records the master gone) when the
// controller asked, CONTROLLER_ELECT_MASTER_FAILED when a broker did.
func (st *state) electMaster(req *remoting.ElectMasterRequestHeader, live liveness, unclean bool) result {
	if !st.contains(req.BrokerName) {
		return refuse(remoting.ControllerBrokerNeedToBeRegistered, "Broker hasn't been registered")
	}
	s, r := st.Syncs[req.BrokerName], st.Replicas[req.BrokerName]
	var all []int64
	if unclean {
		all = r.ids()
	}
	var newMaster *int64
	if s.firstTimeForElect() {
		newMaster = ptr(req.BrokerID)
	}
	if newMaster == nil || *newMaster == -1 {
		var prefer *int64
		if req.DesignateElect {
			prefer = ptr(req.BrokerID)
		}
		newMaster = elect(r.Cluster, r.BrokerName, s.SyncStateSet, all, s.Master, prefer, live)
	}
	if newMaster != nil && s.Master != nil && *newMaster == *s.Master {
		return result{
			code:   remoting.ControllerMasterStillExist,
			remark: fmt.Sprintf("The old master %d is still alive, not need to elect new master for broker %s", *s.Master, r.BrokerName),
			header: &remoting.ElectMasterResponseHeader{MasterBrokerID: ptr(*s.Master), MasterAddress: r.addr(s.Master),
				MasterEpoch: ptr(s.MasterEpoch), SyncStateSetEpoch: ptr(s.SyncStateSetEpoch)},
			body: (&remoting.ElectMasterResponseBody{SyncStateSet: s.SyncStateSet}).Encode(),
		}
	}
	if newMaster != nil {
		return result{
			header: &remoting.ElectMasterResponseHeader{MasterBrokerID: ptr(*newMaster), MasterAddress: r.addr(newMaster),
				MasterEpoch: ptr(s.MasterEpoch + 1), SyncStateSetEpoch: ptr(s.SyncStateSetEpoch + 1)},
			body:   (&remoting.ElectMasterResponseBody{BrokerMemberGroup: memberGroup(r), SyncStateSet: []int64{*newMaster}}).Encode(),
			events: []event{{Type: evElectMaster, BrokerName: req.BrokerName, BrokerID: *newMaster, Elected: true}},
		}
	}
	if req.BrokerID == -1 {
		res := refuse(remoting.ControllerMasterNotAvailable, "Old master has down and failed to elect a new broker master")
		res.header = &remoting.ElectMasterResponseHeader{}
		res.events = []event{{Type: evElectMaster, BrokerName: req.BrokerName}}
		return res
	}
	res := refuse(remoting.ControllerElectMasterFailed, "Failed to elect a new master")
	res.header = &remoting.ElectMasterResponseHeader{}
	return res
}

// getNextBrokerID is ReplicasInfoManager.getNextBrokerId.
func (st *state) getNextBrokerID(req *remoting.BrokerSetRequestHeader) result {
	next := remoting.FirstBrokerControllerID
	if r := st.Replicas[req.BrokerName]; r != nil {
		next = r.NextID
	}
	return result{header: &remoting.ControllerReplyHeader{ClusterName: req.ClusterName, BrokerName: req.BrokerName, NextBrokerID: ptr(next)}}
}

// applyBrokerID is ReplicasInfoManager.applyBrokerId: the first id of an
// unknown set must be 1; in a known set an id is granted when free or
// already this broker's (same register check code).
func (st *state) applyBrokerID(req *remoting.ApplyBrokerIDRequestHeader) result {
	if req.AppliedBrokerID == nil {
		return refuse(remoting.SystemError, "the custom field <appliedBrokerId> is null")
	}
	id := *req.AppliedBrokerID
	addr, _, _ := strings.Cut(req.RegisterCheckCode, ";")
	res := result{header: &remoting.ControllerReplyHeader{ClusterName: req.ClusterName, BrokerName: req.BrokerName}}
	ev := event{Type: evApplyBrokerID, Cluster: req.ClusterName, BrokerName: req.BrokerName, Addr: addr, BrokerID: id, CheckCode: req.RegisterCheckCode}
	r := st.Replicas[req.BrokerName]
	if r == nil {
		if id == remoting.FirstBrokerControllerID {
			res.events = []event{ev}
			return res
		}
		res.code = remoting.ControllerBrokerIDInvalid
		res.remark = fmt.Sprintf("Broker-set: %s hasn't been registered in controller, but broker try to apply brokerId: %d", req.BrokerName, id)
		return res
	}
	if m, ok := r.Brokers[id]; !ok || m.CheckCode == req.RegisterCheckCode {
		res.events = []event{ev}
		return res
	}
	res.code = remoting.ControllerBrokerIDInvalid
	res.remark = fmt.Sprintf("Fail to apply brokerId: %d in broker-set: %s", id, req.BrokerName)
	return res
}

// registerBroker is ReplicasInfoManager.registerBroker: a registered
// broker learns the master when it is alive, and its new address is
// recorded.
func (st *state) registerBroker(req *remoting.RegisterBrokerToControllerRequestHeader, live liveness) result {
	hdr := &remoting.ControllerReplyHeader{ClusterName: req.ClusterName, BrokerName: req.BrokerName}
	if !st.contains(req.BrokerName) {
		res := refuse(remoting.ControllerBrokerNeedToBeRegistered, "Broker-set: %s hasn't been registered in controller", req.BrokerName)
		res.header = hdr
		return res
	}
	r, s := st.Replicas[req.BrokerName], st.Syncs[req.BrokerName]
	if req.BrokerID == nil || !r.has(*req.BrokerID) {
		res := refuse(remoting.ControllerBrokerNeedToBeRegistered, "BrokerId: %s hasn't been registered in broker-set: %s", javaLong(req.BrokerID), req.BrokerName)
		res.header = hdr
		return res
	}
	if s.Master != nil && live.alive(req.ClusterName, req.BrokerName, *s.Master) {
		hdr.MasterBrokerID = ptr(*s.Master)
		hdr.MasterAddress = r.addr(s.Master)
		hdr.MasterEpoch = ptr(s.MasterEpoch)
		hdr.SyncStateSetEpoch = ptr(s.SyncStateSetEpoch)
	}
	res := result{header: hdr, body: syncBody(s)}
	if req.BrokerAddress != r.addr(req.BrokerID) {
		res.events = []event{{Type: evUpdateBrokerAddr, Cluster: req.ClusterName, BrokerName: req.BrokerName, Addr: req.BrokerAddress, BrokerID: *req.BrokerID}}
	}
	return res
}

// getReplicaInfo is ReplicasInfoManager.getReplicaInfo.
func (st *state) getReplicaInfo(brokerName string) result {
	if !st.contains(brokerName) {
		res := refuse(remoting.ControllerBrokerMetadataNotExist, "Broker metadata is not existed")
		res.header = &remoting.ControllerReplyHeader{}
		return res
	}
	s, r := st.Syncs[brokerName], st.Replicas[brokerName]
	hdr := &remoting.ControllerReplyHeader{}
	if s.Master != nil {
		hdr.MasterBrokerID = ptr(*s.Master)
	}
	hdr.MasterAddress = r.addr(s.Master)
	hdr.MasterEpoch = ptr(s.MasterEpoch)
	return result{header: hdr, body: syncBody(s)}
}

// getSyncStateData is ReplicasInfoManager.getSyncStateData.
func (st *state) getSyncStateData(names []string, live liveness) result {
	out := &remoting.BrokerReplicasInfo{ReplicasInfoTable: map[string]*remoting.ReplicasInfo{}}
	for _, name := range names {
		if !st.contains(name) {
			continue
		}
		s, r := st.Syncs[name], st.Replicas[name]
		info := &remoting.ReplicasInfo{MasterAddress: r.addr(s.Master), MasterEpoch: s.MasterEpoch, SyncStateSetEpoch: s.SyncStateSetEpoch,
			InSyncReplicas: []remoting.ReplicaIdentity{}, NotInSyncReplicas: []remoting.ReplicaIdentity{}}
		if s.Master != nil {
			info.MasterBrokerID = ptr(*s.Master)
		}
		for _, id := range r.ids() {
			rep := remoting.ReplicaIdentity{BrokerName: name, BrokerID: id, BrokerAddress: r.Brokers[id].Addr, Alive: live.alive(r.Cluster, name, id)}
			if s.inSet(id) {
				info.InSyncReplicas = append(info.InSyncReplicas, rep)
			} else {
				info.NotInSyncReplicas = append(info.NotInSyncReplicas, rep)
			}
		}
		out.ReplicasInfoTable[name] = info
	}
	return result{body: out.Encode()}
}

// cleanBrokerData is ReplicasInfoManager.cleanBrokerData: unless
// cleaning living brokers is asked for, a set with a master cannot be
// cleaned whole, nor can a listed broker that is alive.
func (st *state) cleanBrokerData(req *remoting.CleanControllerBrokerDataRequestHeader, live liveness) result {
	var ids []int64
	if !req.IsCleanLivingBroker {
		s := st.Syncs[req.BrokerName]
		blank := strings.TrimSpace(req.BrokerControllerIDsToClean) == ""
		if blank && s != nil && s.Master != nil {
			return refuse(remoting.ControllerInvalidCleanBrokerMetadata, "Broker %s is still alive, clean up failure", req.BrokerName)
		}
		if !blank {
			fields := strings.Split(req.BrokerControllerIDsToClean, ";")
			for len(fields) > 0 && fields[len(fields)-1] == "" {
				fields = fields[:len(fields)-1] // Java's String.split drops trailing empty strings
			}
			for _, f := range fields {
				id, err := strconv.ParseInt(f, 10, 64)
				if err != nil {
					return refuse(remoting.ControllerInvalidCleanBrokerMetadata,
						"Please set the option <brokerControllerIdsToClean> according to the format, exception: java.lang.NumberFormatException: For input string: \"%s\"", f)
				}
				ids = append(ids, id)
			}
			for _, id := range ids {
				if live.alive(req.ClusterName, req.BrokerName, id) {
					return refuse(remoting.ControllerInvalidCleanBrokerMetadata, "Broker [%s,  %d] is still alive, clean up failure", req.BrokerName, id)
				}
			}
		}
	}
	if st.contains(req.BrokerName) {
		return result{events: []event{{Type: evCleanBrokerData, BrokerName: req.BrokerName, IDs: remoting.SortedIDs(ids)}}}
	}
	return refuse(remoting.ControllerInvalidCleanBrokerMetadata, "Broker %s is not existed,clean broker data failure.", req.BrokerName)
}

// needReelect is scanNeedReelectBrokerSets: sets whose master is not
// alive while some member is.
func (st *state) needReelect(live liveness) []string {
	var out []string
	for name, s := range st.Syncs {
		if s.Master == nil || live.alive(s.Cluster, name, *s.Master) {
			continue
		}
		r := st.Replicas[name]
		if r == nil {
			continue
		}
		for id := range r.Brokers {
			if live.alive(s.Cluster, name, id) {
				out = append(out, name)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}
