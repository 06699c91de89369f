package broker

import (
	"strconv"
	"strings"
)

// ControllerState is a controller-mode broker's replication state as the
// observers (GET_BROKER_RUNTIME_INFO, metrics, console) show it: the role
// the controller gave, the epoch of the master it serves or follows, the
// sync state set with its epoch and the confirm offset (the end every
// member of the set holds; a consumer sees nothing past it).
//
// The sync state set is the master's: a slave keeps none (5.3.3's
// ReplicasManager changes syncStateSet only in changeToMaster and on the
// master's own proposals), so on a slave it is empty and its epoch 0, and
// the observers show the set on the master's row only.
type ControllerState struct {
	Master            bool
	BrokerID          int64 // brokerConfig.brokerId now (0 on the master)
	MasterID          int64 // the master's controller id, 0 before one is known
	MasterEpoch       int32
	SyncStateSet      []int64
	SyncStateSetEpoch int32
	ConfirmOffset     int64
}

// ControllerState reads the state, and false when the broker is not in
// controller mode. The epoch and master come from the replicas manager
// (what the controller told), falling back to the HA service's last epoch
// before the manager runs; the set and the confirm offset come from the HA
// service, which holds what the manager handed it.
func (b *Broker) ControllerState() (ControllerState, bool) {
	if b.ctl == nil {
		return ControllerState{}, false
	}
	st := ControllerState{Master: b.ctl.master.Load(), BrokerID: b.brokerID(), MasterEpoch: b.ctl.ha.LastEpoch(),
		ConfirmOffset: b.ctl.ha.ConfirmOffset()}
	if st.Master {
		st.SyncStateSet, st.SyncStateSetEpoch = b.ctl.ha.SyncStateSet()
	}
	if r, ok := b.ReplicasRole(); ok && r.MasterEpoch > 0 {
		st.MasterID, st.MasterEpoch = r.MasterID, r.MasterEpoch
	}
	return st, true
}

// Role is the brokerRole the state stands for: 5.3.3's ReplicasManager
// sets SYNC_MASTER on changeToMaster and SLAVE on changeToSlave.
func (s ControllerState) Role() string {
	if s.Master {
		return RoleSyncMaster
	}
	return RoleSlave
}

// SyncStateSetText is the set as the runtime table carries it: ids in
// order, comma-separated ("" while empty).
func (s ControllerState) SyncStateSetText() string {
	ids := make([]string, len(s.SyncStateSet))
	for i, id := range s.SyncStateSet {
		ids[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(ids, ",")
}

// ctlRuntimeInfo adds the controller-mode keys to GET_BROKER_RUNTIME_INFO
// (haRuntimeInfo). 5.3.3 puts none there (its prepareRuntimeInfo and
// DefaultMessageStore.getRuntimeInfo have no role, epoch or set key; the
// epochs are served apart, GET_BROKER_EPOCH_CACHE 1009, the set by the
// controller, GET_SYNC_STATE_DATA 1006). rmq adds them so that one request
// shows a member's whole state:
//
//	brokerRole          the role now (SYNC_MASTER or SLAVE), not the configured one
//	haMasterEpoch       the epoch of the master it serves or follows
//	haMasterBrokerId    that master's controller id
//	haConfirmOffset     the confirm offset
//	haSyncStateSet      master: the sync state set's ids, comma-separated in order
//	haSyncStateSetEpoch master: the set's epoch
func (b *Broker) ctlRuntimeInfo(t map[string]string) {
	st, ok := b.ControllerState()
	if !ok {
		return
	}
	t["brokerRole"] = st.Role()
	t["haMasterEpoch"] = strconv.FormatInt(int64(st.MasterEpoch), 10)
	t["haMasterBrokerId"] = strconv.FormatInt(st.MasterID, 10)
	t["haConfirmOffset"] = strconv.FormatInt(st.ConfirmOffset, 10)
	if st.Master {
		t["haSyncStateSet"] = st.SyncStateSetText()
		t["haSyncStateSetEpoch"] = strconv.FormatInt(int64(st.SyncStateSetEpoch), 10)
	}
}
