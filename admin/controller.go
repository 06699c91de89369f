package admin

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/rmqio/rmq/remoting"
)

// The controller subcommands of mqadmin 5.3.3: getControllerMetaData,
// getSyncStateSet, electMaster (to a controller) and getBrokerEpoch (to
// the brokers of a group). Like DefaultMQAdminExt, the calls that need
// the leader ask the given controller for its metadata first and send
// the request to the leader it names.

const roleController = "controller"

// ControllerMetaData is CONTROLLER_GET_METADATA_INFO from addr.
func (a *Admin) ControllerMetaData(ctx context.Context, addr string) (*remoting.GetMetaDataResponseHeader, error) {
	resp, err := a.call(ctx, roleController, addr, newRequest(remoting.ControllerGetMetadataInfo, nil, nil))
	if err != nil {
		return nil, err
	}
	h, err := remoting.DecodeHeader[remoting.GetMetaDataResponseHeader](resp)
	if err != nil {
		return nil, fmt.Errorf("%w: controller %s: %v", ErrBadBody, addr, err)
	}
	return &h, nil
}

// controllerLeader returns the leader's address named by the first
// controller of a ';'-separated list.
func (a *Admin) controllerLeader(ctx context.Context, addrs string) (string, error) {
	first, _, _ := strings.Cut(strings.TrimSpace(addrs), ";")
	md, err := a.ControllerMetaData(ctx, strings.TrimSpace(first))
	if err != nil {
		return "", err
	}
	if md.ControllerLeaderAddress == "" {
		return "", fmt.Errorf("%w: controller %s knows no leader", ErrNotFound, first)
	}
	return md.ControllerLeaderAddress, nil
}

// PrintControllerMetaData writes getControllerMetaData's output.
func PrintControllerMetaData(w io.Writer, md *remoting.GetMetaDataResponseHeader) {
	fmt.Fprintf(w, "\n#ControllerGroup\t%s", javaNull(md.Group))
	fmt.Fprintf(w, "\n#ControllerLeaderId\t%s", javaNull(md.ControllerLeaderID))
	fmt.Fprintf(w, "\n#ControllerLeaderAddress\t%s", javaNull(md.ControllerLeaderAddress))
	for _, p := range strings.Split(md.Peers, ";") {
		if p != "" {
			fmt.Fprintf(w, "\n#Peer:\t%s", p)
		}
	}
	fmt.Fprint(w, "\n")
}

// javaNull prints an absent string as Java's %s prints null.
func javaNull(s string) string {
	if s == "" {
		return "null"
	}
	return s
}

// BrokerNamesOfCluster lists a cluster's broker names from the name server.
func (a *Admin) BrokerNamesOfCluster(ctx context.Context, cluster string) ([]string, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	groups, err := clusterBrokers(ci, cluster)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, g := range groups {
		names = append(names, g.BrokerName)
	}
	return names, nil
}

// SyncStateData is CONTROLLER_GET_SYNC_STATE_DATA for brokerNames, from
// the leader named by controllerAddrs.
func (a *Admin) SyncStateData(ctx context.Context, controllerAddrs string, brokerNames []string) (*remoting.BrokerReplicasInfo, error) {
	leader, err := a.controllerLeader(ctx, controllerAddrs)
	if err != nil {
		return nil, err
	}
	req := newRequest(remoting.ControllerGetSyncStateData, nil, remoting.EncodeBrokerNames(brokerNames))
	resp, err := a.call(ctx, roleController, leader, req)
	if err != nil {
		return nil, err
	}
	var info remoting.BrokerReplicasInfo
	if err := decodeBody(roleController, leader, req.Code, resp.Body, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// PrintSyncStateData writes getSyncStateSet's output, broker names sorted.
func PrintSyncStateData(w io.Writer, info *remoting.BrokerReplicasInfo) {
	for _, name := range slices.Sorted(maps.Keys(info.ReplicasInfoTable)) {
		r := info.ReplicasInfoTable[name]
		master := "null"
		if r.MasterBrokerID != nil {
			master = fmt.Sprint(*r.MasterBrokerID)
		}
		fmt.Fprintf(w, "\n#brokerName\t%s\n#MasterBrokerId\t%s\n#MasterAddr\t%s\n#MasterEpoch\t%d\n#SyncStateSetEpoch\t%d\n#SyncStateSetNums\t%d\n",
			name, master, javaNull(r.MasterAddress), r.MasterEpoch, r.SyncStateSetEpoch, len(r.InSyncReplicas))
		for _, m := range r.InSyncReplicas {
			fmt.Fprintf(w, "\nInSyncReplica:\t%s\n", replicaString(m))
		}
		for _, m := range r.NotInSyncReplicas {
			fmt.Fprintf(w, "\nNotInSyncReplica:\t%s\n", replicaString(m))
		}
	}
}

// replicaString is ReplicaIdentity.toString.
func replicaString(m remoting.ReplicaIdentity) string {
	return fmt.Sprintf("ReplicaIdentity{brokerName='%s', brokerId=%d, brokerAddress='%s', alive=%t}", m.BrokerName, m.BrokerID, m.BrokerAddress, m.Alive)
}

// ElectMasterResult is electMaster's answer.
type ElectMasterResult struct {
	ClusterName       string           `json:"clusterName"`
	BrokerName        string           `json:"brokerName"`
	MasterBrokerID    *int64           `json:"masterBrokerId"`
	MasterAddress     string           `json:"masterAddress"`
	MasterEpoch       *int32           `json:"masterEpoch"`
	SyncStateSetEpoch *int32           `json:"syncStateSetEpoch"`
	Brokers           map[int64]string `json:"brokers,omitempty"`
}

// ElectMaster is mqadmin electMaster: CONTROLLER_ELECT_MASTER designating
// brokerID (ElectMasterRequestHeader.ofAdminTrigger), to the leader.
func (a *Admin) ElectMaster(ctx context.Context, controllerAddrs, cluster, brokerName string, brokerID int64) (*ElectMasterResult, error) {
	leader, err := a.controllerLeader(ctx, controllerAddrs)
	if err != nil {
		return nil, err
	}
	h := remoting.ElectMasterRequestHeader{ClusterName: cluster, BrokerName: brokerName, BrokerID: brokerID, DesignateElect: true}
	resp, err := a.call(ctx, roleController, leader, newRequest(remoting.ControllerElectMaster, h.Fields(), nil))
	if err != nil {
		return nil, err
	}
	rh, err := remoting.DecodeHeader[remoting.ElectMasterResponseHeader](resp)
	if err != nil {
		return nil, fmt.Errorf("%w: controller %s: %v", ErrBadBody, leader, err)
	}
	res := &ElectMasterResult{ClusterName: cluster, BrokerName: brokerName, MasterBrokerID: rh.MasterBrokerID,
		MasterAddress: rh.MasterAddress, MasterEpoch: rh.MasterEpoch, SyncStateSetEpoch: rh.SyncStateSetEpoch}
	if body, err := remoting.DecodeElectMasterResponseBody(resp.Body); err == nil && body.BrokerMemberGroup != nil {
		res.Brokers = body.BrokerMemberGroup.BrokerAddrs
	}
	return res, nil
}

// Print writes electMaster's output (mqadmin's lines; the members, which
// mqadmin 5.3.3 reads from the wrong level of the body and never prints,
// follow from the body's brokerMemberGroup).
func (r *ElectMasterResult) Print(w io.Writer) {
	num := func(p *int32) string {
		if p == nil {
			return "null"
		}
		return fmt.Sprint(*p)
	}
	fmt.Fprintf(w, "\n#ClusterName\t%s", r.ClusterName)
	fmt.Fprintf(w, "\n#BrokerName\t%s", r.BrokerName)
	fmt.Fprintf(w, "\n#BrokerMasterAddr\t%s", javaNull(r.MasterAddress))
	fmt.Fprintf(w, "\n#MasterEpoch\t%s", num(r.MasterEpoch))
	fmt.Fprintf(w, "\n#SyncStateSetEpoch\t%s\n", num(r.SyncStateSetEpoch))
	for _, id := range slices.Sorted(maps.Keys(r.Brokers)) {
		fmt.Fprintf(w, "\t#Broker\t%d\t%s\n", id, r.Brokers[id])
	}
}

// BrokerEpoch is one broker's GET_BROKER_EPOCH_CACHE answer.
type BrokerEpoch struct {
	Addr string `json:"addr"`
	remoting.EpochEntryCache
}

// BrokerEpochs is mqadmin getBrokerEpoch: GET_BROKER_EPOCH_CACHE from every
// broker of brokerName (or of every group of cluster when brokerName is
// empty), as the name server lists them.
func (a *Admin) BrokerEpochs(ctx context.Context, cluster, brokerName string) ([]BrokerEpoch, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	var groups []*remoting.BrokerData
	if brokerName != "" {
		if g := ci.BrokerAddrTable[brokerName]; g != nil {
			groups = append(groups, g)
		}
	} else if groups, err = clusterBrokers(ci, cluster); err != nil {
		return nil, err
	}
	var out []BrokerEpoch
	for _, g := range groups {
		for _, id := range slices.Sorted(maps.Keys(g.BrokerAddrs)) {
			addr := g.BrokerAddrs[id]
			req := newRequest(remoting.GetBrokerEpochCache, nil, nil)
			resp, err := a.callBroker(ctx, addr, req)
			if err != nil {
				return nil, err
			}
			e := BrokerEpoch{Addr: addr}
			if err := decodeBody(roleBroker, addr, req.Code, resp.Body, &e.EpochEntryCache); err != nil {
				return nil, err
			}
			if n := len(e.EpochList); n > 0 {
				e.EpochList[n-1].EndOffset = e.MaxOffset // as the stock command shows the last entry
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// PrintBrokerEpochs writes getBrokerEpoch's output.
func PrintBrokerEpochs(w io.Writer, es []BrokerEpoch) {
	for _, e := range es {
		fmt.Fprintf(w, "\n#clusterName\t%s\n#brokerName\t%s\n#brokerAddr\t%s\n#brokerId\t%d", e.ClusterName, e.BrokerName, e.Addr, e.BrokerID)
		for _, x := range e.EpochList {
			fmt.Fprintf(w, "\n#Epoch: EpochEntry{epoch=%d, startOffset=%d, endOffset=%d}", x.Epoch, x.StartOffset, x.EndOffset)
		}
		fmt.Fprint(w, "\n")
	}
}
