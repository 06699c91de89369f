package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/remoting"
)

// RunningInfo is one consumer client's ConsumerRunningInfo, as much of it as
// consumerStatus prints: the client's properties, subscriptions and the
// committed offset of each queue it consumes.
type RunningInfo struct {
	ClientID      string                       `json:"clientId"`
	Version       string                       `json:"version"`
	Properties    map[string]string            `json:"properties"`
	Subscriptions []*remoting.SubscriptionData `json:"subscriptions"`
	Offsets       []QueueOffset                `json:"offsets"`
}

// ConsumerRunningInfo is mqadmin consumerStatus: GET_CONSUMER_RUNNING_INFO
// (forwarded by the broker) for each client of group, or only clientID.
// Clients that do not answer are left out, as stock does.
func (a *Admin) ConsumerRunningInfo(ctx context.Context, group, clientID string) ([]RunningInfo, error) {
	addr, err := a.groupBroker(ctx, group)
	if err != nil {
		return nil, err
	}
	cc, err := a.ConsumerConnection(ctx, group, addr)
	if err != nil {
		return nil, err
	}
	conns := append([]*remoting.Connection(nil), cc.ConnectionSet...)
	sort.Slice(conns, func(i, j int) bool { return conns[i].ClientID < conns[j].ClientID })
	var out []RunningInfo
	for _, c := range conns {
		if clientID != "" && c.ClientID != clientID {
			continue
		}
		req := newRequest(remoting.GetConsumerRunningInfo, (&remoting.GetConsumerRunningInfoRequestHeader{ConsumerGroup: group, ClientID: c.ClientID}).Fields(), nil)
		resp, err := a.callBroker(ctx, addr, req)
		if err != nil {
			if clientID != "" {
				return nil, err
			}
			continue
		}
		var body struct {
			Properties      map[string]string                                        `json:"properties"`
			SubscriptionSet []*remoting.SubscriptionData                             `json:"subscriptionSet"`
			MqTable         fastjson.Entries[remoting.MessageQueue, json.RawMessage] `json:"mqTable"`
		}
		if err := decodeBody(roleBroker, addr, req.Code, resp.Body, &body); err != nil {
			return nil, err
		}
		ri := RunningInfo{ClientID: c.ClientID, Version: VersionDesc(c.Version), Properties: body.Properties,
			Subscriptions: body.SubscriptionSet, Offsets: []QueueOffset{}}
		for _, e := range body.MqTable {
			var pq struct {
				CommitOffset int64 `json:"commitOffset"`
			}
			_ = json.Unmarshal(e.Value, &pq)
			ri.Offsets = append(ri.Offsets, QueueOffset{e.Key, pq.CommitOffset})
		}
		sortQueueOffsets(ri.Offsets)
		sort.Slice(ri.Subscriptions, func(i, j int) bool { return ri.Subscriptions[i].Topic < ri.Subscriptions[j].Topic })
		out = append(out, ri)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no client of group %s answered GET_CONSUMER_RUNNING_INFO", ErrNotFound, group)
	}
	return out, nil
}

// PrintRunningInfos writes consumerStatus output: without a client id one
// line per client (ConsumerStatusSubCommand's list); with one, the client's
// properties, subscriptions and offsets (ConsumerRunningInfo.formatString's
// first sections).
func PrintRunningInfos(w io.Writer, infos []RunningInfo, detail bool) {
	if !detail {
		for i, ri := range infos {
			fmt.Fprintf(w, "%03d  %-40s %-20s\n", i+1, ri.ClientID, ri.Version)
		}
		return
	}
	for _, ri := range infos {
		fmt.Fprintf(w, "#Consumer Properties#\n")
		keys := make([]string, 0, len(ri.Properties))
		for k := range ri.Properties {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "%-40s: %s\n", k, ri.Properties[k])
		}
		fmt.Fprintf(w, "\n\n#Consumer Subscription#\n")
		for i, s := range ri.Subscriptions {
			fmt.Fprintf(w, "%03d Topic: %-40s ClassFilter: %-8t SubExpression: %s\n", i+1, s.Topic, s.ClassFilterMode, s.SubString)
		}
		fmt.Fprintf(w, "\n\n#Consumer Offset#\n")
		fmt.Fprintf(w, "%-64s  %-32s  %-4s  %-20s\n", "#Topic", "#Broker Name", "#QID", "#Consumer Offset")
		for _, q := range ri.Offsets {
			fmt.Fprintf(w, "%-64s  %-32s  %-4d  %-20d\n", q.Topic, q.BrokerName, q.QueueID, q.Offset)
		}
	}
}
