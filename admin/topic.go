package admin

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// Name server KV namespace of ordered topics' queue layout (NamesrvUtil).
const namespaceOrderTopicConfig = "ORDER_TOPIC_CONFIG"

// Route fetches GET_ROUTEINFO_BY_TOPIC from the name server.
func (a *Admin) Route(ctx context.Context, topic string) (*remoting.TopicRouteData, error) {
	req := newRequest(remoting.GetRouteinfoByTopic, (&remoting.GetRouteInfoRequestHeader{Topic: topic}).Fields(), nil)
	resp, addr, err := a.callNamesrv(ctx, req)
	if err != nil {
		return nil, err
	}
	var rd remoting.TopicRouteData
	if err := decodeBody(roleNamesrv, addr, req.Code, resp.Body, &rd); err != nil {
		return nil, err
	}
	for _, bd := range rd.BrokerDatas {
		if bd.BrokerAddrs == nil {
			bd.BrokerAddrs = map[int64]string{}
		}
	}
	if rd.FilterServerTable == nil {
		rd.FilterServerTable = map[string][]string{}
	}
	return &rd, nil
}

// TopicSpec is the topic configuration updateTopic sends.
type TopicSpec struct {
	TopicName      string `json:"topicName"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	Perm           int32  `json:"perm"`
	TopicSysFlag   int32  `json:"topicSysFlag"`
	Order          bool   `json:"order"`
}

// String is TopicConfig.toString.
func (s *TopicSpec) String() string {
	return fmt.Sprintf("TopicConfig [topicName=%s, readQueueNums=%d, writeQueueNums=%d, perm=%s, topicFilterType=SINGLE_TAG, topicSysFlag=%d, order=%t]",
		s.TopicName, s.ReadQueueNums, s.WriteQueueNums, topicgroup.PermString(s.Perm), s.TopicSysFlag, s.Order)
}

// TopicSysFlag builds the unit flags of a topic (TopicSysFlag.buildSysFlag).
func TopicSysFlag(unit, hasUnitSub bool) int32 {
	var f int32
	if unit {
		f |= 1
	}
	if hasUnitSub {
		f |= 2
	}
	return f
}

// UpdateTopicResult is the outcome of updateTopic.
type UpdateTopicResult struct {
	Brokers   []string  `json:"brokers"`
	OrderConf string    `json:"orderConf,omitempty"`
	Config    TopicSpec `json:"topicConfig"`
}

// UpdateTopic sends UPDATE_AND_CREATE_TOPIC to the broker at addr or, when
// addr is "", to every master of cluster. For an ordered topic it then
// records the queue layout in the name servers' ORDER_TOPIC_CONFIG, merged
// with other brokers' entries in the single-broker case.
func (a *Admin) UpdateTopic(ctx context.Context, spec TopicSpec, addr, cluster string) (*UpdateTopicResult, error) {
	res := &UpdateTopicResult{Config: spec}
	targets, err := a.brokerTargets(ctx, addr, cluster)
	if err != nil {
		return nil, err
	}
	for _, t := range targets {
		req := newRequest(remoting.UpdateAndCreateTopic, (&remoting.CreateTopicRequestHeader{
			Topic:           spec.TopicName,
			DefaultTopic:    message.TopicAutoCreateKey,
			ReadQueueNums:   spec.ReadQueueNums,
			WriteQueueNums:  spec.WriteQueueNums,
			Perm:            spec.Perm,
			TopicFilterType: "SINGLE_TAG",
			TopicSysFlag:    spec.TopicSysFlag,
			Order:           spec.Order,
		}).Fields(), nil)
		if _, err := a.callBroker(ctx, t, req); err != nil {
			return res, err
		}
		res.Brokers = append(res.Brokers, t)
	}
	if !spec.Order {
		return res, nil
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return res, err
	}
	if addr != "" {
		name := brokerNameOf(ci, addr)
		if name == "" {
			return res, fmt.Errorf("%w: broker %s is not registered with the name server", ErrNotFound, addr)
		}
		conf := name + ":" + strconv.Itoa(int(spec.WriteQueueNums))
		old, err := a.GetKVConfig(ctx, namespaceOrderTopicConfig, spec.TopicName)
		if err != nil && CodeOf(err) != remoting.QueryNotFound {
			return res, err
		}
		res.OrderConf = mergeOrderConf(old, conf)
	} else {
		bds, err := clusterBrokers(ci, cluster)
		if err != nil {
			return res, err
		}
		parts := make([]string, len(bds))
		for i, bd := range bds {
			parts[i] = bd.BrokerName + ":" + strconv.Itoa(int(spec.WriteQueueNums))
		}
		res.OrderConf = strings.Join(parts, ";")
	}
	return res, a.PutKVConfig(ctx, namespaceOrderTopicConfig, spec.TopicName, res.OrderConf)
}

// mergeOrderConf replaces or adds one "broker:queues" entry of an order
// configuration, keeping the other brokers' entries, sorted by broker name.
func mergeOrderConf(old, entry string) string {
	byBroker := map[string]string{}
	for _, e := range strings.Split(old, ";") {
		if e = strings.TrimSpace(e); e != "" {
			byBroker[strings.SplitN(e, ":", 2)[0]] = e
		}
	}
	byBroker[strings.SplitN(entry, ":", 2)[0]] = entry
	parts := make([]string, 0, len(byBroker))
	for _, k := range sortedKeys(byBroker) {
		parts = append(parts, byBroker[k])
	}
	return strings.Join(parts, ";")
}

func brokerNameOf(ci *remoting.ClusterInfo, addr string) string {
	for _, name := range sortedKeys(ci.BrokerAddrTable) {
		for _, a := range ci.BrokerAddrTable[name].BrokerAddrs {
			if a == addr {
				return name
			}
		}
	}
	return ""
}

// Print writes updateTopic's stock output.
func (r *UpdateTopicResult) Print(w io.Writer, singleBroker bool) {
	for _, b := range r.Brokers {
		fmt.Fprintf(w, "create topic to %s success.\n", b)
	}
	if r.OrderConf != "" {
		scope := "cluster"
		if singleBroker {
			scope = "broker"
		}
		fmt.Fprintf(w, "set %s orderConf. isOrder=true, orderConf=[%s]\n", scope, r.OrderConf)
	}
	fmt.Fprintf(w, "%s\n", &r.Config)
}

// GetKVConfig reads one name server KV entry (from the first name server).
func (a *Admin) GetKVConfig(ctx context.Context, namespace, key string) (string, error) {
	req := newRequest(remoting.GetKVConfig, (&remoting.KVConfigRequestHeader{Namespace: namespace, Key: key}).Fields(), nil)
	resp, _, err := a.callNamesrv(ctx, req)
	if err != nil {
		return "", err
	}
	rh, _ := remoting.DecodeHeader[remoting.GetKVConfigResponseHeader](resp) // value is nullable
	return rh.Value, nil
}

// PutKVConfig writes one KV entry on every name server.
func (a *Admin) PutKVConfig(ctx context.Context, namespace, key, value string) error {
	if len(a.namesrv) == 0 {
		return ErrNoNamesrv
	}
	for _, ns := range a.namesrv {
		req := newRequest(remoting.PutKVConfig, (&remoting.PutKVConfigRequestHeader{Namespace: namespace, Key: key, Value: value}).Fields(), nil)
		if _, err := a.call(ctx, roleNamesrv, ns, req); err != nil {
			return err
		}
	}
	return nil
}

// DeleteTopicResult is the outcome of deleteTopic.
type DeleteTopicResult struct {
	Topic    string   `json:"topic"`
	Cluster  string   `json:"cluster"`
	Brokers  []string `json:"brokers"`
	Namesrvs []string `json:"nameServers"`
}

// DeleteTopic removes a topic from every master of the cluster
// (DELETE_TOPIC_IN_BROKER) and then from every name server
// (DELETE_TOPIC_IN_NAMESRV).
func (a *Admin) DeleteTopic(ctx context.Context, cluster, topic string) (*DeleteTopicResult, error) {
	masters, err := a.MasterAddrs(ctx, cluster)
	if err != nil {
		return nil, err
	}
	res := &DeleteTopicResult{Topic: topic, Cluster: cluster}
	for _, m := range masters {
		req := newRequest(remoting.DeleteTopicInBroker, (&remoting.TopicRequestHeader{Topic: topic}).Fields(), nil)
		if _, err := a.callBroker(ctx, m, req); err != nil {
			return res, err
		}
		res.Brokers = append(res.Brokers, m)
	}
	for _, ns := range a.namesrv {
		req := newRequest(remoting.DeleteTopicInNamesrv, (&remoting.DeleteTopicFromNamesrvRequestHeader{Topic: topic, ClusterName: cluster}).Fields(), nil)
		if _, err := a.call(ctx, roleNamesrv, ns, req); err != nil {
			return res, err
		}
		res.Namesrvs = append(res.Namesrvs, ns)
	}
	return res, nil
}

// Print writes deleteTopic's stock output.
func (r *DeleteTopicResult) Print(w io.Writer) {
	fmt.Fprintf(w, "delete topic [%s] from cluster [%s] success.\n", r.Topic, r.Cluster)
	fmt.Fprintf(w, "delete topic [%s] from NameServer success.\n", r.Topic)
}

// TopicList fetches every topic the name server routes
// (GET_ALL_TOPIC_LIST_FROM_NAMESERVER), in the name server's order.
func (a *Admin) TopicList(ctx context.Context) ([]string, error) {
	req := newRequest(remoting.GetAllTopicListFromNameserver, nil, nil)
	resp, addr, err := a.callNamesrv(ctx, req)
	if err != nil {
		return nil, err
	}
	var tl remoting.TopicList
	if err := decodeBody(roleNamesrv, addr, req.Code, resp.Body, &tl); err != nil {
		return nil, err
	}
	if tl.TopicList == nil {
		tl.TopicList = []string{}
	}
	return tl.TopicList, nil
}

// TopicClusterRow is one row of topicList -c.
type TopicClusterRow struct {
	Cluster string `json:"cluster"`
	Topic   string `json:"topic"`
	Group   string `json:"consumerGroup"`
}

// TopicClusterList is topicList -c: for every topic except retry and DLQ
// topics, its cluster and the groups consuming it (one row per group, one
// row with an empty group when none). Lookup failures leave the cluster or
// group empty, as stock does.
func (a *Admin) TopicClusterList(ctx context.Context) ([]TopicClusterRow, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	topics, err := a.TopicList(ctx)
	if err != nil {
		return nil, err
	}
	rows := []TopicClusterRow{}
	for _, t := range topics {
		if message.IsRetryTopic(t) || message.IsDLQTopic(t) {
			continue
		}
		var cluster string
		var groups []string
		if rd, err := a.Route(ctx, t); err == nil && len(rd.BrokerDatas) > 0 {
			cluster = clusterOfBroker(ci, rd.BrokerDatas[0].BrokerName)
			groups, _ = a.QueryTopicConsumeByWho(ctx, t, rd)
		}
		if len(groups) == 0 {
			groups = []string{""}
		}
		for _, g := range groups {
			rows = append(rows, TopicClusterRow{Cluster: cluster, Topic: t, Group: g})
		}
	}
	return rows, nil
}

func clusterOfBroker(ci *remoting.ClusterInfo, brokerName string) string {
	for _, c := range sortedKeys(ci.ClusterAddrTable) {
		for _, n := range ci.ClusterAddrTable[c] {
			if n == brokerName {
				return c
			}
		}
	}
	return ""
}

// QueryTopicConsumeByWho asks the first broker of the topic's route which
// groups consume it (QUERY_TOPIC_CONSUME_BY_WHO). rd may be nil.
func (a *Admin) QueryTopicConsumeByWho(ctx context.Context, topic string, rd *remoting.TopicRouteData) ([]string, error) {
	if rd == nil {
		var err error
		if rd, err = a.Route(ctx, topic); err != nil {
			return nil, err
		}
	}
	if len(rd.BrokerDatas) == 0 {
		return nil, fmt.Errorf("%w: topic %s has no broker", ErrNoRoute, topic)
	}
	addr := SelectBrokerAddr(rd.BrokerDatas[0])
	req := newRequest(remoting.QueryTopicConsumeByWho, (&remoting.TopicRequestHeader{Topic: topic}).Fields(), nil)
	resp, err := a.callBroker(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	var gl remoting.GroupList
	if err := decodeBody(roleBroker, addr, req.Code, resp.Body, &gl); err != nil {
		return nil, err
	}
	return gl.GroupList, nil
}

// PrintTopicClusterList writes topicList -c output.
func PrintTopicClusterList(w io.Writer, rows []TopicClusterRow) {
	fmt.Fprintf(w, "%-20s  %-48s  %-48s\n", "#Cluster Name", "#Topic", "#Consumer Group")
	for _, r := range rows {
		fmt.Fprintf(w, "%-20s  %-64s  %-64s\n", front(r.Cluster, 20), front(r.Topic, 64), front(r.Group, 64))
	}
}

// PrintRouteList writes topicRoute -l: one row per broker and a total.
func PrintRouteList(w io.Writer, rd *remoting.TopicRouteData) error {
	const f = "%-45s %-32s %-50s %-10s %-11s %-5s\n"
	qds := make(map[string]*remoting.QueueData, len(rd.QueueDatas))
	for _, qd := range rd.QueueDatas {
		qds[qd.BrokerName] = qd
	}
	bds := append([]*remoting.BrokerData(nil), rd.BrokerDatas...)
	sort.Slice(bds, func(i, j int) bool { return bds[i].BrokerName < bds[j].BrokerName })
	fmt.Fprintf(w, f, "#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm")
	var totalRead, totalWrite int64
	for _, bd := range bds {
		qd := qds[bd.BrokerName]
		if qd == nil {
			return fmt.Errorf("%w: broker %s of the route has no queue data", ErrBadBody, bd.BrokerName)
		}
		totalRead += int64(qd.ReadQueueNums)
		totalWrite += int64(qd.WriteQueueNums)
		fmt.Fprintf(w, f, bd.Cluster, bd.BrokerName, javaBrokerAddrs(bd.BrokerAddrs),
			strconv.Itoa(int(qd.ReadQueueNums)), strconv.Itoa(int(qd.WriteQueueNums)), strconv.Itoa(int(qd.Perm)))
	}
	fmt.Fprintln(w, strings.Repeat("-", 158))
	fmt.Fprintf(w, f, "Total:", strconv.Itoa(len(qds)), "", strconv.FormatInt(totalRead, 10), strconv.FormatInt(totalWrite, 10), "")
	return nil
}

// TopicOffset is one queue's entry of a TopicStatsTable.
type TopicOffset struct {
	MinOffset           int64 `json:"minOffset"`
	MaxOffset           int64 `json:"maxOffset"`
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
}

// QueueStats is one row of topicStatus.
type QueueStats struct {
	remoting.MessageQueue
	TopicOffset
}

// TopicStatus fetches GET_TOPIC_STATS_INFO from every broker of the topic's
// route and merges the tables, ordered like MessageQueue.compareTo. An empty
// result is an error, as examineTopicStats throws.
func (a *Admin) TopicStatus(ctx context.Context, topic string) ([]QueueStats, error) {
	rd, err := a.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out []QueueStats
	for _, bd := range rd.BrokerDatas {
		addr := SelectBrokerAddr(bd)
		if addr == "" {
			continue
		}
		req := newRequest(remoting.GetTopicStatsInfo, (&remoting.TopicRequestHeader{Topic: topic}).Fields(), nil)
		resp, err := a.callBroker(ctx, addr, req)
		if err != nil {
			return nil, err
		}
		var tst struct {
			OffsetTable fastjson.Entries[remoting.MessageQueue, TopicOffset] `json:"offsetTable"`
		}
		if err := decodeBody(roleBroker, addr, req.Code, resp.Body, &tst); err != nil {
			return nil, err
		}
		for _, e := range tst.OffsetTable {
			out = append(out, QueueStats{e.Key, e.Value})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no topic stats info for %s", ErrNotFound, topic)
	}
	sort.Slice(out, func(i, j int) bool { return CompareQueues(out[i].MessageQueue, out[j].MessageQueue) < 0 })
	return out, nil
}

// PrintTopicStatus writes topicStatus output.
func PrintTopicStatus(w io.Writer, rows []QueueStats) {
	fmt.Fprintf(w, "%-32s  %-4s  %-20s  %-20s    %s\n", "#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated")
	for _, r := range rows {
		last := ""
		if r.LastUpdateTimestamp > 0 {
			last = HumanTime(r.LastUpdateTimestamp)
		}
		fmt.Fprintf(w, "%-32s  %-4d  %-20d  %-20d    %s\n", front(r.BrokerName, 32), r.QueueID, r.MinOffset, r.MaxOffset, last)
	}
}

// CompareQueues orders queues as MessageQueue.compareTo does: topic, broker
// name, queue id.
func CompareQueues(a, b remoting.MessageQueue) int {
	switch {
	case a.Topic != b.Topic:
		if a.Topic < b.Topic {
			return -1
		}
		return 1
	case a.BrokerName != b.BrokerName:
		if a.BrokerName < b.BrokerName {
			return -1
		}
		return 1
	default:
		return int(a.QueueID) - int(b.QueueID)
	}
}
