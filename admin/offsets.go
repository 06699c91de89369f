package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/remoting"
)

// QueueOffset is one queue's offset of a reset or a client's status.
type QueueOffset struct {
	remoting.MessageQueue
	Offset int64 `json:"offset"`
}

// ResetResult is what resetOffsetByTime did.
type ResetResult struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Timestamp int64  `json:"timestamp"`
	Force     bool   `json:"force"`
	// Old is true when no client was online and the offsets were rewritten on
	// the brokers directly (resetOffsetByTimeOld).
	Old    bool          `json:"old"`
	Queues []QueueOffset `json:"queues"`
}

func decodeOffsetTable(role, addr string, code int32, body []byte) ([]QueueOffset, error) {
	var b struct {
		OffsetTable fastjson.Entries[remoting.MessageQueue, int64] `json:"offsetTable"`
	}
	if err := decodeBody(role, addr, code, body, &b); err != nil {
		return nil, err
	}
	out := make([]QueueOffset, len(b.OffsetTable))
	for i, e := range b.OffsetTable {
		out[i] = QueueOffset{e.Key, e.Value}
	}
	return out, nil
}

func sortQueueOffsets(qs []QueueOffset) {
	sort.Slice(qs, func(i, j int) bool { return CompareQueues(qs[i].MessageQueue, qs[j].MessageQueue) < 0 })
}

// ResetOffsetByTime is mqadmin resetOffsetByTime: INVOKE_BROKER_TO_RESET_OFFSET
// on every broker of the topic's route (timestamp -1: the end of each queue).
// When a broker answers CONSUMER_NOT_ONLINE the offsets are rewritten the old
// way: for each queue of the group's consume stats the offset at the
// timestamp, written with UPDATE_CONSUMER_OFFSET if force or behind.
func (a *Admin) ResetOffsetByTime(ctx context.Context, group, topic string, ts int64, force bool) (*ResetResult, error) {
	rd, err := a.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	res := &ResetResult{Group: group, Topic: topic, Timestamp: ts, Force: force, Queues: []QueueOffset{}}
	for _, bd := range rd.BrokerDatas {
		addr := SelectBrokerAddr(bd)
		if addr == "" {
			continue
		}
		req := newRequest(remoting.InvokeBrokerToResetOffset, (&remoting.ResetOffsetRequestHeader{Topic: topic, Group: group, Timestamp: ts, IsForce: force}).Fields(), nil)
		resp, err := a.callBroker(ctx, addr, req, remoting.Success, remoting.ConsumerNotOnline)
		if err != nil {
			return nil, err
		}
		if resp.Code == remoting.ConsumerNotOnline {
			return a.resetOffsetByTimeOld(ctx, group, topic, ts, force)
		}
		qs, err := decodeOffsetTable(roleBroker, addr, req.Code, resp.Body)
		if err != nil {
			return nil, err
		}
		res.Queues = append(res.Queues, qs...)
	}
	sortQueueOffsets(res.Queues)
	return res, nil
}

// resetOffsetByTimeOld is ResetOffsetByTimeOldCommand.resetOffset.
func (a *Admin) resetOffsetByTimeOld(ctx context.Context, group, topic string, ts int64, force bool) (*ResetResult, error) {
	cs, err := a.ConsumeStats(ctx, group, topic)
	if err != nil {
		return nil, err
	}
	rd, err := a.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	res := &ResetResult{Group: group, Topic: topic, Timestamp: ts, Force: force, Old: true, Queues: []QueueOffset{}}
	for _, q := range cs.Queues {
		if q.Topic != topic {
			continue
		}
		addr := MasterAddr(rd, q.BrokerName)
		qa := QueueAddr{MessageQueue: q.MessageQueue, Addr: addr}
		var target int64
		if ts == -1 {
			target, err = a.MaxOffset(ctx, qa)
		} else {
			target, err = a.SearchOffset(ctx, qa, ts)
		}
		if err != nil {
			return nil, err
		}
		if force || target < q.ConsumerOffset {
			req := newRequest(remoting.UpdateConsumerOffset, (&remoting.UpdateConsumerOffsetRequestHeader{
				ConsumerGroup: group, Topic: topic, QueueID: q.QueueID, CommitOffset: target}).Fields(), nil)
			if _, err := a.callBroker(ctx, addr, req); err != nil {
				return nil, err
			}
		} else {
			target = q.ConsumerOffset
		}
		res.Queues = append(res.Queues, QueueOffset{q.MessageQueue, target})
	}
	sortQueueOffsets(res.Queues)
	return res, nil
}

// PrintResetResult writes resetOffsetByTime output.
func PrintResetResult(w io.Writer, r *ResetResult, tsText string) {
	fmt.Fprintf(w, "rollback consumer offset by specified group[%s], topic[%s], force[%t], timestamp(string)[%s], timestamp(long)[%d]\n",
		r.Group, r.Topic, r.Force, tsText, r.Timestamp)
	fmt.Fprintf(w, "%-40s  %-40s  %-40s\n", "#brokerName", "#queueId", "#offset")
	for _, q := range r.Queues {
		fmt.Fprintf(w, "%-40s  %-40d  %-40d\n", q.BrokerName, q.QueueID, q.Offset)
	}
}

// ParseResetTimestamp reads resetOffsetByTime's -s: "now", milliseconds, or
// yyyy-MM-dd#HH:mm:ss:SSS in local time.
func ParseResetTimestamp(s string, now time.Time) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "now" {
		return now.UnixMilli(), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	bad := fmt.Errorf("%w: -s %q is neither now, milliseconds nor yyyy-MM-dd#HH:mm:ss:SSS", ErrUsage, s)
	// Go layouts know no ':' before the milliseconds: split them off.
	i := strings.LastIndexByte(s, ':')
	if i < 0 || len(s)-i-1 != 3 {
		return 0, bad
	}
	ms, err := strconv.Atoi(s[i+1:])
	if err != nil {
		return 0, bad
	}
	t, err := time.ParseInLocation("2006-01-02#15:04:05", s[:i], time.Local)
	if err != nil {
		return 0, bad
	}
	return t.UnixMilli() + int64(ms), nil
}

// CloneGroupOffset is mqadmin cloneGroupOffset: CLONE_GROUP_OFFSET on every
// broker of the topic's route.
func (a *Admin) CloneGroupOffset(ctx context.Context, src, dest, topic string, offline bool) error {
	rd, err := a.Route(ctx, topic)
	if err != nil {
		return err
	}
	for _, bd := range rd.BrokerDatas {
		addr := SelectBrokerAddr(bd)
		if addr == "" {
			continue
		}
		req := newRequest(remoting.CloneGroupOffset, (&remoting.CloneGroupOffsetRequestHeader{SrcGroup: src, DestGroup: dest, Topic: topic, Offline: offline}).Fields(), nil)
		if _, err := a.callBroker(ctx, addr, req); err != nil {
			return err
		}
	}
	return nil
}

// ClientStatus is one client's offsets as getConsumerStatus reports them.
type ClientStatus struct {
	ClientID string        `json:"clientId"`
	Queues   []QueueOffset `json:"queues"`
}

// ConsumerStatus is mqadmin getConsumerStatus: INVOKE_BROKER_TO_GET_CONSUMER_STATUS
// on every broker of the topic's route; each client's offsets, merged.
func (a *Admin) ConsumerStatus(ctx context.Context, group, topic, clientID string) ([]ClientStatus, error) {
	rd, err := a.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	byClient := map[string][]QueueOffset{}
	for _, bd := range rd.BrokerDatas {
		addr := SelectBrokerAddr(bd)
		if addr == "" {
			continue
		}
		req := newRequest(remoting.InvokeBrokerToGetConsumerStatus,
			(&remoting.GetConsumerStatusRequestHeader{Topic: topic, Group: group, ClientAddr: clientID}).Fields(), nil)
		resp, err := a.callBroker(ctx, addr, req)
		if err != nil {
			return nil, err
		}
		var body struct {
			ConsumerTable map[string]fastjson.Entries[remoting.MessageQueue, int64] `json:"consumerTable"`
		}
		if err := decodeBody(roleBroker, addr, req.Code, resp.Body, &body); err != nil {
			return nil, err
		}
		for id, table := range body.ConsumerTable {
			for _, e := range table {
				byClient[id] = append(byClient[id], QueueOffset{e.Key, e.Value})
			}
		}
	}
	out := make([]ClientStatus, 0, len(byClient))
	for id, qs := range byClient {
		sortQueueOffsets(qs)
		out = append(out, ClientStatus{ClientID: id, Queues: qs})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ClientID < out[j].ClientID })
	return out, nil
}

// PrintConsumerStatus writes getConsumerStatus output (GetConsumerStatusCommand).
func PrintConsumerStatus(w io.Writer, group, topic, clientID string, st []ClientStatus) {
	fmt.Fprintf(w, "get consumer status from client. group=%s, topic=%s, originClientId=%s\n", group, topic, nullable(clientID))
	fmt.Fprintf(w, "%-50s  %-15s  %-15s  %-20s\n", "#clientId", "#brokerName", "#queueId", "#offset")
	for _, c := range st {
		for _, q := range c.Queues {
			fmt.Fprintf(w, "%-50s  %-15s  %-15d  %-20d\n", c.ClientID, q.BrokerName, q.QueueID, q.Offset)
		}
	}
}

// ConsumeQueueData is one consume-queue unit as QUERY_CONSUME_QUEUE reports it.
type ConsumeQueueData struct {
	PhysicOffset   int64  `json:"physicOffset"`
	PhysicSize     int32  `json:"physicSize"`
	TagsCode       int64  `json:"tagsCode"`
	ExtendDataJSON string `json:"extendDataJson,omitempty"`
	BitMap         string `json:"bitMap,omitempty"`
	Eval           bool   `json:"eval"`
	Msg            string `json:"msg,omitempty"`
}

// ConsumeQueueResult is QueryConsumeQueueResponseBody.
type ConsumeQueueResult struct {
	SubscriptionData *remoting.SubscriptionData `json:"subscriptionData,omitempty"`
	FilterData       string                     `json:"filterData,omitempty"`
	QueueData        []ConsumeQueueData         `json:"queueData"`
	MaxQueueIndex    int64                      `json:"maxQueueIndex"`
	MinQueueIndex    int64                      `json:"minQueueIndex"`
	// Remark is the broker's remark on a reply without units.
	Remark string `json:"remark,omitempty"`
}

// QueryConsumeQueue is mqadmin queryCq: QUERY_CONSUME_QUEUE on addr, or on
// the first broker of the topic's route when addr is "".
func (a *Admin) QueryConsumeQueue(ctx context.Context, addr, topic string, queueID int32, index int64, count int32, group string) (*ConsumeQueueResult, error) {
	if addr == "" {
		rd, err := a.Route(ctx, topic)
		if err != nil {
			return nil, err
		}
		for _, bd := range rd.BrokerDatas {
			if addr = SelectBrokerAddr(bd); addr != "" {
				break
			}
		}
		if addr == "" {
			return nil, fmt.Errorf("%w: No topic route data!", ErrNotFound)
		}
	}
	qh := remoting.QueryConsumeQueueRequestHeader{Topic: topic, QueueID: queueID, Index: index, Count: count}
	if group != "" {
		qh.ConsumerGroup = &group
	}
	req := newRequest(remoting.QueryConsumeQueue, qh.Fields(), nil)
	resp, err := a.callBroker(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	res := &ConsumeQueueResult{QueueData: []ConsumeQueueData{}}
	if len(resp.Body) == 0 {
		res.Remark = resp.Remark
		if res.Remark == "" {
			return nil, errors.New("the broker answered QUERY_CONSUME_QUEUE without a body")
		}
		return res, nil
	}
	if err := decodeBody(roleBroker, addr, req.Code, resp.Body, res); err != nil {
		return nil, err
	}
	return res, nil
}

// PrintConsumeQueue writes queryCq output.
func PrintConsumeQueue(w io.Writer, r *ConsumeQueueResult, index int64) {
	const sep = "======================================\n"
	if r.Remark != "" {
		fmt.Fprintf(w, "%s\n", r.Remark)
		return
	}
	if r.SubscriptionData != nil {
		b, _ := json.MarshalIndent(r.SubscriptionData, "", "\t")
		fmt.Fprintf(w, "Subscription data: \n%s\n", b)
		fmt.Fprint(w, sep)
	}
	if r.FilterData != "" {
		fmt.Fprintf(w, "Filter data: \n%s\n", r.FilterData)
		fmt.Fprint(w, sep)
	}
	fmt.Fprintf(w, "Queue data: \nmax: %d, min: %d\n", r.MaxQueueIndex, r.MinQueueIndex)
	fmt.Fprint(w, sep)
	for i, q := range r.QueueData {
		fmt.Fprintf(w, "idx: %d\n", index+int64(i))
		fmt.Fprintf(w, "ConsumeQueueData{physicOffset=%d, physicSize=%d, tagsCode=%d, extendDataJson='%s', bitMap='%s', eval=%t, msg='%s'}\n",
			q.PhysicOffset, q.PhysicSize, q.TagsCode, nullable(q.ExtendDataJSON), nullable(q.BitMap), q.Eval, nullable(q.Msg))
		fmt.Fprint(w, sep)
	}
}
