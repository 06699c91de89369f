package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
	"github.com/rmqio/rmq/topicgroup"
)

// SubGroupString is SubscriptionGroupConfig.toString.
func SubGroupString(c *topicgroup.SubscriptionGroupConfig) string {
	return fmt.Sprintf("SubscriptionGroupConfig [groupName=%s, consumeEnable=%t, consumeFromMinEnable=%t, consumeBroadcastEnable=%t, retryQueueNums=%d, retryMaxTimes=%d, brokerId=%d, whichBrokerWhenConsumeSlowly=%d, notifyConsumerIdsChangedEnable=%t]",
		c.GroupName, c.ConsumeEnable, c.ConsumeFromMinEnable, c.ConsumeBroadcastEnable, c.RetryQueueNums,
		c.RetryMaxTimes, c.BrokerID, c.WhichBrokerWhenConsumeSlowly, c.NotifyConsumerIdsChangedEnable)
}

// UpdateSubGroup sends UPDATE_AND_CREATE_SUBSCRIPTIONGROUP with cfg to the
// broker at addr or, when addr is "", to every master of cluster, and
// returns the brokers updated.
func (a *Admin) UpdateSubGroup(ctx context.Context, cfg *topicgroup.SubscriptionGroupConfig, addr, cluster string) ([]string, error) {
	return a.callMasters(ctx, addr, cluster, func() *remoting.Command {
		return newRequest(remoting.UpdateAndCreateSubscriptionGroup, nil, remoting.MarshalBody(cfg))
	})
}

// DeleteSubGroupResult is the outcome of deleteSubGroup.
type DeleteSubGroupResult struct {
	Group   string               `json:"group"`
	Cluster string               `json:"cluster,omitempty"`
	Brokers []string             `json:"brokers"`
	Topics  []*DeleteTopicResult `json:"deletedTopics,omitempty"`
}

// DeleteSubGroup sends DELETE_SUBSCRIPTIONGROUP to the broker at addr or to
// every master of cluster; in the cluster case the group's retry and DLQ
// topics are deleted too, as stock does.
func (a *Admin) DeleteSubGroup(ctx context.Context, group, addr, cluster string, removeOffset bool) (*DeleteSubGroupResult, error) {
	res := &DeleteSubGroupResult{Group: group}
	if addr == "" {
		res.Cluster = cluster
	}
	targets, err := a.brokerTargets(ctx, addr, cluster)
	if err != nil {
		return nil, err
	}
	for _, t := range targets {
		req := newRequest(remoting.DeleteSubscriptionGroup, (&remoting.DeleteSubscriptionGroupRequestHeader{GroupName: group, RemoveOffset: removeOffset}).Fields(), nil)
		if _, err := a.callBroker(ctx, t, req); err != nil {
			return res, err
		}
		res.Brokers = append(res.Brokers, t)
	}
	if addr != "" {
		return res, nil
	}
	for _, topic := range []string{message.RetryTopic(group), message.DLQTopic(group)} {
		dt, err := a.DeleteTopic(ctx, cluster, topic)
		if err != nil {
			return res, err
		}
		res.Topics = append(res.Topics, dt)
	}
	return res, nil
}

// Print writes deleteSubGroup's stock output.
func (r *DeleteSubGroupResult) Print(w io.Writer) {
	for _, b := range r.Brokers {
		if r.Cluster == "" {
			fmt.Fprintf(w, "delete subscription group [%s] from broker [%s] success.\n", r.Group, b)
		} else {
			fmt.Fprintf(w, "delete subscription group [%s] from broker [%s] in cluster [%s] success.\n", r.Group, b, r.Cluster)
		}
	}
	for _, t := range r.Topics {
		t.Print(w)
	}
}

// OffsetWrapper is one queue's entry of a ConsumeStats table.
type OffsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"`
}

// QueueProgress is one row of consumerProgress -g.
type QueueProgress struct {
	remoting.MessageQueue
	OffsetWrapper
	Diff     int64  `json:"diff"`
	ClientIP string `json:"clientIp,omitempty"`
}

// ConsumeStats is a group's merged consume progress.
type ConsumeStats struct {
	Group      string          `json:"group"`
	Queues     []QueueProgress `json:"queues"`
	ConsumeTps float64         `json:"consumeTps"`
	DiffTotal  int64           `json:"diffTotal"`
}

// ConsumeStats is examineConsumeStats: GET_CONSUME_STATS from every broker
// of the route of %RETRY%<group> (topic "" means every topic the group
// consumes), merged. An empty table is a CONSUMER_NOT_ONLINE-style error.
func (a *Admin) ConsumeStats(ctx context.Context, group, topic string) (*ConsumeStats, error) {
	rd, err := a.Route(ctx, message.RetryTopic(group))
	if err != nil {
		return nil, err
	}
	cs := &ConsumeStats{Group: group, Queues: []QueueProgress{}}
	for _, bd := range rd.BrokerDatas {
		addr := SelectBrokerAddr(bd)
		if addr == "" {
			continue
		}
		req := newRequest(remoting.GetConsumeStats, (&remoting.GetConsumeStatsRequestHeader{ConsumerGroup: group, Topic: topic}).Fields(), nil)
		resp, err := a.callBroker(ctx, addr, req)
		if err != nil {
			return nil, err
		}
		var body struct {
			ConsumeTps  float64                                                `json:"consumeTps"`
			OffsetTable fastjson.Entries[remoting.MessageQueue, OffsetWrapper] `json:"offsetTable"`
		}
		if err := decodeBody(roleBroker, addr, req.Code, resp.Body, &body); err != nil {
			return nil, err
		}
		cs.ConsumeTps += body.ConsumeTps
		for _, e := range body.OffsetTable {
			cs.Queues = append(cs.Queues, QueueProgress{MessageQueue: e.Key, OffsetWrapper: e.Value, Diff: e.Value.BrokerOffset - e.Value.ConsumerOffset})
		}
	}
	if len(cs.Queues) == 0 {
		return nil, fmt.Errorf("%w: group %s has no consume stats (offset table empty: the group consumed nothing yet)", ErrNotFound, group)
	}
	sort.Slice(cs.Queues, func(i, j int) bool { return CompareQueues(cs.Queues[i].MessageQueue, cs.Queues[j].MessageQueue) < 0 })
	for _, q := range cs.Queues {
		cs.DiffTotal += q.Diff
	}
	return cs, nil
}

// groupBroker picks the broker answering group queries: the first broker
// (by name) of the route of %RETRY%<group>.
func (a *Admin) groupBroker(ctx context.Context, group string) (string, error) {
	rd, err := a.Route(ctx, message.RetryTopic(group))
	if err != nil {
		return "", err
	}
	bds := append([]*remoting.BrokerData(nil), rd.BrokerDatas...)
	sort.Slice(bds, func(i, j int) bool { return bds[i].BrokerName < bds[j].BrokerName })
	for _, bd := range bds {
		if addr := SelectBrokerAddr(bd); addr != "" {
			return addr, nil
		}
	}
	return "", fmt.Errorf("%w: %s has no broker", ErrNoRoute, message.RetryTopic(group))
}

// ConsumerConnection fetches GET_CONSUMER_CONNECTION_LIST from addr, or
// from a broker of the group's retry topic when addr is "".
func (a *Admin) ConsumerConnection(ctx context.Context, group, addr string) (*remoting.ConsumerConnection, error) {
	if addr == "" {
		var err error
		if addr, err = a.groupBroker(ctx, group); err != nil {
			return nil, err
		}
	}
	req := newRequest(remoting.GetConsumerConnectionList, (&remoting.ConsumerGroupRequestHeader{ConsumerGroup: group}).Fields(), nil)
	resp, err := a.callBroker(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	var cc remoting.ConsumerConnection
	if err := decodeBody(roleBroker, addr, req.Code, resp.Body, &cc); err != nil {
		return nil, err
	}
	if len(cc.ConnectionSet) == 0 {
		return nil, &ResponseError{Role: roleBroker, Addr: addr, Request: req.Code, Code: remoting.ConsumerNotOnline, Remark: "Not found the consumer group connection"}
	}
	sort.Slice(cc.ConnectionSet, func(i, j int) bool { return cc.ConnectionSet[i].ClientID < cc.ConnectionSet[j].ClientID })
	return &cc, nil
}

// PrintConsumerConnection writes consumerConnection output.
func PrintConsumerConnection(w io.Writer, cc *remoting.ConsumerConnection) {
	fmt.Fprintf(w, "%-36s %-22s %-10s %s\n", "#ClientId", "#ClientAddr", "#Language", "#Version")
	for _, c := range cc.ConnectionSet {
		fmt.Fprintf(w, "%-36s %-22s %-10s %s\n", c.ClientID, c.ClientAddr, c.Language, VersionDesc(c.Version))
	}
	fmt.Fprintf(w, "\nBelow is subscription:\n")
	fmt.Fprintf(w, "%-20s %s\n", "#Topic", "#SubExpression")
	for _, t := range sortedKeys(cc.SubscriptionTable) {
		sd := cc.SubscriptionTable[t]
		fmt.Fprintf(w, "%-20s %s\n", sd.Topic, sd.SubString)
	}
	fmt.Fprintf(w, "\n")
	fmt.Fprintf(w, "ConsumeType: %s\n", cc.ConsumeType)
	fmt.Fprintf(w, "MessageModel: %s\n", cc.MessageModel)
	fmt.Fprintf(w, "ConsumeFromWhere: %s\n", cc.ConsumeFromWhere)
}

// QueueAllocation maps each queue of the group to the IP of the client
// consuming it, from every client's GET_CONSUMER_RUNNING_INFO (forwarded by
// the broker). Clients that do not answer are skipped, as stock does.
func (a *Admin) QueueAllocation(ctx context.Context, group string) map[remoting.MessageQueue]string {
	out := map[remoting.MessageQueue]string{}
	addr, err := a.groupBroker(ctx, group)
	if err != nil {
		return out
	}
	cc, err := a.ConsumerConnection(ctx, group, addr)
	if err != nil {
		return out
	}
	for _, c := range cc.ConnectionSet {
		req := newRequest(remoting.GetConsumerRunningInfo, (&remoting.GetConsumerRunningInfoRequestHeader{ConsumerGroup: group, ClientID: c.ClientID}).Fields(), nil)
		resp, err := a.callBroker(ctx, addr, req)
		if err != nil {
			continue
		}
		var info struct {
			MqTable fastjson.Entries[remoting.MessageQueue, json.RawMessage] `json:"mqTable"`
		}
		if decodeBody(roleBroker, addr, req.Code, resp.Body, &info) != nil {
			continue
		}
		ip, _, _ := strings.Cut(c.ClientID, "@")
		for _, e := range info.MqTable {
			out[e.Key] = ip
		}
	}
	return out
}

// PrintConsumeStats writes consumerProgress -g output.
func PrintConsumeStats(w io.Writer, cs *ConsumeStats, showClientIP bool) {
	if showClientIP {
		fmt.Fprintf(w, "%-64s  %-32s  %-4s  %-20s  %-20s  %-20s %-20s  %s\n",
			"#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Client IP", "#Diff", "#LastTime")
	} else {
		fmt.Fprintf(w, "%-64s  %-32s  %-4s  %-20s  %-20s  %-20s  %s\n",
			"#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime")
	}
	for _, q := range cs.Queues {
		last := "N/A"
		if q.LastTimestamp != 0 {
			last = FormatDate(q.LastTimestamp)
		}
		if showClientIP {
			ip := q.ClientIP
			if ip == "" {
				ip = "N/A"
			}
			fmt.Fprintf(w, "%-64s  %-32s  %-4d  %-20d  %-20d  %-20s %-20d  %s\n",
				front(q.Topic, 64), front(q.BrokerName, 32), q.QueueID, q.BrokerOffset, q.ConsumerOffset, ip, q.Diff, last)
		} else {
			fmt.Fprintf(w, "%-64s  %-32s  %-4d  %-20d  %-20d  %-20d  %s\n",
				front(q.Topic, 64), front(q.BrokerName, 32), q.QueueID, q.BrokerOffset, q.ConsumerOffset, q.Diff, last)
		}
	}
	fmt.Fprintf(w, "\n")
	fmt.Fprintf(w, "Consume TPS: %.2f\n", cs.ConsumeTps)
	fmt.Fprintf(w, "Diff Total: %d\n", cs.DiffTotal)
}

// GroupSummary is one row of consumerProgress without -g.
type GroupSummary struct {
	Group        string `json:"group"`
	Count        int    `json:"count"`
	Version      string `json:"version"`
	ConsumeType  string `json:"consumeType"`
	MessageModel string `json:"messageModel"`
	ConsumeTps   int64  `json:"consumeTps"`
	DiffTotal    int64  `json:"diffTotal"`
}

// GroupSummaries is consumerProgress without -g: one row per group that has
// a retry topic, sorted by group. Groups whose stats or connections cannot
// be read keep zero figures, as stock does.
func (a *Admin) GroupSummaries(ctx context.Context) ([]GroupSummary, error) {
	topics, err := a.TopicList(ctx)
	if err != nil {
		return nil, err
	}
	var groups []string
	for _, t := range topics {
		if g, ok := message.RetryTopicGroup(t); ok {
			groups = append(groups, g)
		}
	}
	sort.Strings(groups)
	out := []GroupSummary{}
	for _, g := range groups {
		row := GroupSummary{Group: g}
		if cs, err := a.ConsumeStats(ctx, g, ""); err == nil {
			row.ConsumeTps = int64(cs.ConsumeTps)
			row.DiffTotal = cs.DiffTotal
		}
		if cc, err := a.ConsumerConnection(ctx, g, ""); err == nil {
			row.Count = len(cc.ConnectionSet)
			minV := cc.ConnectionSet[0].Version
			for _, c := range cc.ConnectionSet {
				minV = min(minV, c.Version)
			}
			row.Version = VersionDesc(minV)
			row.ConsumeType = "PUSH"
			if cc.ConsumeType == "CONSUME_ACTIVELY" {
				row.ConsumeType = "PULL"
			} else if cc.ConsumeType == "CONSUME_PASSIVELY" {
				row.MessageModel = cc.MessageModel
			}
		} else if !errors.Is(err, context.Canceled) {
			a.log.Debug().Err(err).Str("group", g).Msg("consumer connection")
		}
		out = append(out, row)
	}
	return out, nil
}

// PrintGroupSummaries writes consumerProgress output without -g.
func PrintGroupSummaries(w io.Writer, rows []GroupSummary) {
	fmt.Fprintf(w, "%-64s  %-6s  %-24s %-5s  %-14s  %-7s  %s\n", "#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff Total")
	for _, r := range rows {
		version := r.Version
		if r.Count == 0 {
			version = "OFFLINE"
		}
		fmt.Fprintf(w, "%-64s  %-6d  %-24s %-5s  %-14s  %-7d  %d\n", front(r.Group, 64), r.Count, version, r.ConsumeType, r.MessageModel, r.ConsumeTps, r.DiffTotal)
	}
}
