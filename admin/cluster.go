package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/rmqio/rmq/remoting"
)

// ClusterInfo fetches GET_BROKER_CLUSTER_INFO from the name server.
func (a *Admin) ClusterInfo(ctx context.Context) (*remoting.ClusterInfo, error) {
	req := newRequest(remoting.GetBrokerClusterInfo, nil, nil)
	resp, addr, err := a.callNamesrv(ctx, req)
	if err != nil {
		return nil, err
	}
	var ci remoting.ClusterInfo
	if err := decodeBody(roleNamesrv, addr, req.Code, resp.Body, &ci); err != nil {
		return nil, err
	}
	if ci.BrokerAddrTable == nil {
		ci.BrokerAddrTable = map[string]*remoting.BrokerData{}
	}
	if ci.ClusterAddrTable == nil {
		ci.ClusterAddrTable = map[string][]string{}
	}
	return &ci, nil
}

// clusterBrokers returns the broker groups of a cluster, sorted by name. An
// unknown cluster is an error, as in CommandUtil.
func clusterBrokers(ci *remoting.ClusterInfo, cluster string) ([]*remoting.BrokerData, error) {
	names, ok := ci.ClusterAddrTable[cluster]
	if !ok {
		return nil, fmt.Errorf("%w: cluster %q is unknown to the name server; make sure the specified clusterName exists or the name server connected to is correct", ErrNotFound, cluster)
	}
	names = append([]string(nil), names...)
	sort.Strings(names)
	var out []*remoting.BrokerData
	for _, n := range names {
		if bd := ci.BrokerAddrTable[n]; bd != nil {
			out = append(out, bd)
		}
	}
	return out, nil
}

// MasterAddrs is CommandUtil.fetchMasterAddrByClusterName: the master
// address of every broker group of the cluster, sorted.
func (a *Admin) MasterAddrs(ctx context.Context, cluster string) ([]string, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	bds, err := clusterBrokers(ci, cluster)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, bd := range bds {
		if addr := bd.BrokerAddrs[0]; addr != "" {
			out = append(out, addr)
		}
	}
	sort.Strings(out)
	return out, nil
}

// callMasters sends a request that build makes to the broker at addr or,
// when addr is "", to every master of cluster (brokerTargets), in order,
// and returns the brokers that answered SUCCESS; it stops at the first
// failure.
func (a *Admin) callMasters(ctx context.Context, addr, cluster string, build func() *remoting.Command) ([]string, error) {
	targets, err := a.brokerTargets(ctx, addr, cluster)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, t := range targets {
		if _, err := a.callBroker(ctx, t, build()); err != nil {
			return done, err
		}
		done = append(done, t)
	}
	return done, nil
}

// BrokerMember is one broker process of a cluster.
type BrokerMember struct {
	Cluster    string `json:"cluster"`
	BrokerName string `json:"brokerName"`
	BrokerID   int64  `json:"brokerId"`
	Addr       string `json:"addr"`
}

// Members lists every broker process (masters and slaves) of the cluster,
// or of all clusters when cluster is "", ordered by cluster, broker name
// and id.
func (a *Admin) Members(ctx context.Context, cluster string) ([]BrokerMember, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	return members(ci, cluster)
}

func members(ci *remoting.ClusterInfo, cluster string) ([]BrokerMember, error) {
	clusters := []string{cluster}
	if cluster == "" {
		clusters = sortedKeys(ci.ClusterAddrTable)
	}
	var out []BrokerMember
	for _, c := range clusters {
		bds, err := clusterBrokers(ci, c)
		if err != nil {
			return nil, err
		}
		for _, bd := range bds {
			ids := make([]int64, 0, len(bd.BrokerAddrs))
			for id := range bd.BrokerAddrs {
				ids = append(ids, id)
			}
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			for _, id := range ids {
				out = append(out, BrokerMember{Cluster: c, BrokerName: bd.BrokerName, BrokerID: id, Addr: bd.BrokerAddrs[id]})
			}
		}
	}
	return out, nil
}

// BrokerRuntimeInfo fetches the GET_BROKER_RUNTIME_INFO table of a broker.
func (a *Admin) BrokerRuntimeInfo(ctx context.Context, addr string) (map[string]string, error) {
	req := newRequest(remoting.GetBrokerRuntimeInfo, nil, nil)
	resp, err := a.callBroker(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	var kv remoting.KVTable
	if err := decodeBody(roleBroker, addr, req.Code, resp.Body, &kv); err != nil {
		return nil, err
	}
	if kv.Table == nil {
		kv.Table = map[string]string{}
	}
	return kv.Table, nil
}

// ClusterBroker is one row of clusterList.
type ClusterBroker struct {
	BrokerMember
	Version                 string  `json:"version"`
	InTPS                   float64 `json:"inTps"`
	OutTPS                  float64 `json:"outTps"`
	SendQueueSize           string  `json:"sendThreadPoolQueueSize"`
	SendQueueHeadWaitMillis string  `json:"sendThreadPoolQueueHeadWaitTimeMills"`
	PullQueueSize           string  `json:"pullThreadPoolQueueSize"`
	PullQueueHeadWaitMillis string  `json:"pullThreadPoolQueueHeadWaitTimeMills"`
	PageCacheLockMillis     string  `json:"pageCacheLockTimeMills"`
	Hours                   float64 `json:"hours"`
	DiskRatio               float64 `json:"commitLogDiskRatio"`
	InTotalYesterday        int64   `json:"inTotalYest"`
	OutTotalYesterday       int64   `json:"outTotalYest"`
	InTotalToday            int64   `json:"inTotalToday"`
	OutTotalToday           int64   `json:"outTotalToday"`
	// Role and LagBytes: see Replication.
	Role     string `json:"role"`
	LagBytes int64  `json:"replicationLagBytes"`
	// MasterEpoch and SyncStateSet: a controller-mode rmq broker's
	// haMasterEpoch and (on the master) haSyncStateSet, "" elsewhere.
	MasterEpoch  string `json:"masterEpoch,omitempty"`
	SyncStateSet string `json:"syncStateSet,omitempty"`
	Error        string `json:"error,omitempty"`
}

// ClusterList is the result of clusterList.
type ClusterList struct {
	Brokers []ClusterBroker `json:"brokers"`
}

// ClusterList fetches the cluster table and each broker's runtime figures.
// A broker that does not answer keeps a row with its Error set, and the
// returned error names it (the list is returned too).
func (a *Admin) ClusterList(ctx context.Context) (*ClusterList, error) {
	ms, err := a.Members(ctx, "")
	if err != nil {
		return nil, err
	}
	out := &ClusterList{Brokers: []ClusterBroker{}}
	var errs []error
	tables := make([]map[string]string, len(ms))
	for i, m := range ms {
		row := ClusterBroker{BrokerMember: m}
		kv, err := a.BrokerRuntimeInfo(ctx, m.Addr)
		if err != nil {
			row.Error = err.Error()
			errs = append(errs, err)
		} else {
			a.fillClusterRow(&row, kv)
			tables[i] = kv
		}
		out.Brokers = append(out.Brokers, row)
	}
	for i, r := range Replication(ms, tables) {
		out.Brokers[i].Role, out.Brokers[i].LagBytes = r.Role, r.LagBytes
	}
	return out, errors.Join(errs...)
}

// Roles as clusterList names them: the broker's own brokerRole when its
// runtime table has one (rmq's), else what the route tells, MASTER for
// brokerId 0 (MixAll.MASTER_ID) and SLAVE for the others: a Java broker's
// table does not say whether it replicates synchronously.
const (
	RoleMaster = "MASTER"
	RoleSlave  = "SLAVE"
)

// ReplicaState is one member's role and replication lag.
type ReplicaState struct {
	Role string
	// LagBytes is, on a slave, the commitlog bytes its master has and it
	// has not (the master's commitLogMaxOffset minus its own); on a
	// master, the largest of its slaves'. -1 when unknown: a master
	// without slaves, or a table missing.
	LagBytes int64
}

// Replication derives each member's role and lag from the runtime tables
// (tables[i] is ms[i]'s, nil when it did not answer). It reads only
// commitLogMaxOffset, which every stock broker reports, so it measures Java
// pairs as it measures rmq ones; the slave's copy is byte-identical, so the
// offset difference is the bytes still to replicate.
func Replication(ms []BrokerMember, tables []map[string]string) []ReplicaState {
	type group struct{ cluster, name string }
	maxOff := func(i int) int64 {
		if tables[i] == nil {
			return -1
		}
		n, err := strconv.ParseInt(tables[i]["commitLogMaxOffset"], 10, 64)
		if err != nil {
			return -1
		}
		return n
	}
	masters := map[group]int{}
	for i, m := range ms {
		if m.BrokerID == 0 {
			masters[group{m.Cluster, m.BrokerName}] = i
		}
	}
	out := make([]ReplicaState, len(ms))
	for i, m := range ms {
		out[i] = ReplicaState{Role: RoleMaster, LagBytes: -1}
		if m.BrokerID != 0 {
			out[i].Role = RoleSlave
		}
		if tables[i] != nil && tables[i]["brokerRole"] != "" {
			out[i].Role = tables[i]["brokerRole"]
		}
	}
	for i, m := range ms {
		if m.BrokerID == 0 {
			continue
		}
		mi, ok := masters[group{m.Cluster, m.BrokerName}]
		if !ok {
			continue
		}
		mo, so := maxOff(mi), maxOff(i)
		if mo < 0 || so < 0 {
			continue
		}
		lag := max(mo-so, 0)
		out[i].LagBytes = lag
		out[mi].LagBytes = max(out[mi].LagBytes, lag)
	}
	return out
}

func (a *Admin) fillClusterRow(row *ClusterBroker, kv map[string]string) {
	firstFloat := func(k string) float64 {
		f, _ := strconv.ParseFloat(strings.Fields(kv[k] + " 0")[0], 64)
		return f
	}
	num := func(k string) int64 {
		n, _ := strconv.ParseInt(kv[k], 10, 64)
		return n
	}
	row.Version = kv["brokerVersionDesc"]
	row.InTPS = firstFloat("putTps")
	row.OutTPS = firstFloat("getTransferedTps")
	row.SendQueueSize = kv["sendThreadPoolQueueSize"]
	row.SendQueueHeadWaitMillis = kv["sendThreadPoolQueueHeadWaitTimeMills"]
	row.PullQueueSize = kv["pullThreadPoolQueueSize"]
	row.PullQueueHeadWaitMillis = kv["pullThreadPoolQueueHeadWaitTimeMills"]
	row.PageCacheLockMillis = kv["pageCacheLockTimeMills"]
	row.MasterEpoch, row.SyncStateSet = kv["haMasterEpoch"], kv["haSyncStateSet"]
	if earliest := num("earliestMessageTimeStamp"); earliest > 0 {
		row.Hours = float64(a.now().UnixMilli()-earliest) / 1000 / 60 / 60
	}
	row.DiskRatio, _ = strconv.ParseFloat(kv["commitLogDiskRatio"], 64)
	row.InTotalYesterday = num("msgPutTotalTodayMorning") - num("msgPutTotalYesterdayMorning")
	row.OutTotalYesterday = num("msgGetTotalTodayMorning") - num("msgGetTotalYesterdayMorning")
	row.InTotalToday = num("msgPutTotalTodayNow") - num("msgPutTotalTodayMorning")
	row.OutTotalToday = num("msgGetTotalTodayNow") - num("msgGetTotalTodayMorning")
}

// Print writes the clusterList table; more selects the -m layout.
func (l *ClusterList) Print(w io.Writer, more bool) {
	if more {
		fmt.Fprintf(w, "%-16s  %-32s %14s %14s %14s %14s\n",
			"#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest", "#InTotalToday", "#OutTotalToday")
		for _, b := range l.Brokers {
			fmt.Fprintf(w, "%-16s  %-32s %14d %14d %14d %14d\n",
				b.Cluster, b.BrokerName, b.InTotalYesterday, b.OutTotalYesterday, b.InTotalToday, b.OutTotalToday)
		}
		return
	}
	const f = "%-16s  %-22s  %-4s  %-22s %-16s %19s %19s %10s %5s %6s\n"
	fmt.Fprintf(w, f, "#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version",
		"#InTPS(LOAD)", "#OutTPS(LOAD)", "#PCWait(ms)", "#Hour", "#SPACE")
	for _, b := range l.Brokers {
		fmt.Fprintf(w, f, b.Cluster, b.BrokerName, strconv.FormatInt(b.BrokerID, 10), b.Addr, b.Version,
			fmt.Sprintf("%9.2f(%s,%sms)", b.InTPS, b.SendQueueSize, b.SendQueueHeadWaitMillis),
			fmt.Sprintf("%9.2f(%s,%sms)", b.OutTPS, b.PullQueueSize, b.PullQueueHeadWaitMillis),
			b.PageCacheLockMillis, fmt.Sprintf("%2.2f", b.Hours), fmt.Sprintf("%.4f", b.DiskRatio))
	}
}

// PrintReplication writes each member's role and replication lag (rmq's
// clusterList --replication; stock mqadmin has no such table).
func (l *ClusterList) PrintReplication(w io.Writer) {
	const f = "%-16s  %-22s  %-4s  %-22s %-13s %16s\n"
	fmt.Fprintf(w, f, "#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Role", "#Lag(bytes)")
	for _, b := range l.Brokers {
		lag := "-"
		if b.LagBytes >= 0 {
			lag = strconv.FormatInt(b.LagBytes, 10)
		}
		fmt.Fprintf(w, f, b.Cluster, b.BrokerName, strconv.FormatInt(b.BrokerID, 10), b.Addr, b.Role, lag)
	}
}

// BrokerStatus is the runtime table of one broker (brokerStatus).
type BrokerStatus struct {
	Addr  string            `json:"addr"`
	Table map[string]string `json:"table,omitempty"`
	Error string            `json:"error,omitempty"`
}

// BrokerStatuses fetches the runtime tables of one broker (addr) or of every
// member of a cluster. Members that fail keep their Error and are named in
// the returned error.
func (a *Admin) BrokerStatuses(ctx context.Context, addr, cluster string) ([]BrokerStatus, error) {
	addrs := []string{addr}
	if addr == "" {
		ms, err := a.Members(ctx, cluster)
		if err != nil {
			return nil, err
		}
		addrs = addrs[:0]
		for _, m := range ms {
			addrs = append(addrs, m.Addr)
		}
		sort.Strings(addrs)
	}
	var out []BrokerStatus
	var errs []error
	for _, ad := range addrs {
		kv, err := a.BrokerRuntimeInfo(ctx, ad)
		st := BrokerStatus{Addr: ad, Table: kv}
		if err != nil {
			st.Error = err.Error()
			errs = append(errs, err)
		}
		out = append(out, st)
	}
	return out, errors.Join(errs...)
}

// PrintBrokerStatuses writes brokerStatus output: sorted keys, prefixed by
// the broker address when several brokers are listed (-c).
func PrintBrokerStatuses(w io.Writer, sts []BrokerStatus, withAddr bool) {
	for _, st := range sts {
		for _, k := range sortedKeys(st.Table) {
			if withAddr {
				fmt.Fprintf(w, "%-24s %-32s: %s\n", st.Addr, k, st.Table[k])
			} else {
				fmt.Fprintf(w, "%-32s: %s\n", k, st.Table[k])
			}
		}
	}
}
