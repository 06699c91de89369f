package admin

import (
	"context"
	"fmt"
	"io"

	"github.com/rmqio/rmq/remoting"
)

// BrokerHAStatus is one broker's GET_BROKER_HA_STATUS answer (haStatus).
type BrokerHAStatus struct {
	Addr string                  `json:"brokerAddr"`
	Info *remoting.HARuntimeInfo `json:"haRuntimeInfo"`
}

// HAStatus fetches a broker's HARuntimeInfo (5.3.3 getBrokerHAStatus).
func (a *Admin) HAStatus(ctx context.Context, addr string) (*remoting.HARuntimeInfo, error) {
	req := newRequest(remoting.GetBrokerHaStatus, nil, nil)
	resp, err := a.callBroker(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	var info remoting.HARuntimeInfo
	if err := decodeBody(roleBroker, addr, req.Code, resp.Body, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// HAStatuses is haStatus's innerExec: the broker at addr or, when addr is
// "", every master of cluster (fetchMasterAddrByClusterName), in order. It
// stops at the first failure, as mqadmin's exception does, and returns
// what it got before it.
func (a *Admin) HAStatuses(ctx context.Context, addr, cluster string) ([]BrokerHAStatus, error) {
	addrs := []string{addr}
	if addr == "" {
		var err error
		if addrs, err = a.MasterAddrs(ctx, cluster); err != nil {
			return nil, err
		}
	}
	out := []BrokerHAStatus{}
	for _, ad := range addrs {
		info, err := a.HAStatus(ctx, ad)
		if err != nil {
			return out, err
		}
		out = append(out, BrokerHAStatus{Addr: ad, Info: info})
	}
	return out, nil
}

// PrintHAStatus writes one broker's status as 5.3.3 HAStatusSubCommand's
// printStatus does: a master's header and one row per slave connection
// (speed in KB/s, "OK" or "Fall Behind"), or a slave's client figures
// (Java's %s of a null masterAddr prints "null").
func PrintHAStatus(w io.Writer, st BrokerHAStatus) {
	info := st.Info
	if info.Master {
		fmt.Fprintf(w, "\n#MasterAddr\t%s\n#MasterCommitLogMaxOffset\t%d\n#SlaveNum\t%d\n#InSyncSlaveNum\t%d\n",
			st.Addr, info.MasterCommitLogMaxOffset, len(info.HAConnectionInfo), info.InSyncSlaveNums)
		fmt.Fprintf(w, "%-32s  %-16s %16s %16s %16s %16s\n",
			"#SlaveAddr", "#SlaveAckOffset", "#Diff", "#TransferSpeed(KB/s)", "#Status", "#TransferFromWhere")
		for _, c := range info.HAConnectionInfo {
			status := "Fall Behind"
			if c.InSync {
				status = "OK"
			}
			fmt.Fprintf(w, "%-32s  %-16d %16d %16.2f %16s %16d\n",
				c.Addr, c.SlaveAckOffset, c.Diff, float64(c.TransferredByteInSecond)/1024, status, c.TransferFromWhere)
		}
		return
	}
	cl := info.HAClientRuntimeInfo
	master := cl.MasterAddr
	if master == "" {
		master = "null"
	}
	fmt.Fprintf(w, "\n#MasterAddr\t%s\n", master)
	fmt.Fprintf(w, "#CommitLogMaxOffset\t%d\n", cl.MaxOffset)
	fmt.Fprintf(w, "#TransferSpeed(KB/s)\t%.2f\n", float64(cl.TransferredByteInSecond)/1024)
	fmt.Fprintf(w, "#LastReadTime\t%s\n", HumanTime(cl.LastReadTimestamp))
	fmt.Fprintf(w, "#LastWriteTime\t%s\n", HumanTime(cl.LastWriteTimestamp))
	fmt.Fprintf(w, "#MasterFlushOffset\t%d\n", cl.MasterFlushOffset)
}
