package admin

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/rmqio/rmq/internal/fastjson"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// Stats request codes (J4 RequestCode).
const (
	ViewBrokerStatsData = remoting.ViewBrokerStatsData
	GetAllProducerInfo  = remoting.GetAllProducerInfo
)

// Stats names of J4 BrokerStatsManager read by statsAll.
const (
	StatsTopicPutNums = "TOPIC_PUT_NUMS"
	StatsGroupGetNums = "GROUP_GET_NUMS"
)

// BrokerStatsItem is one window of a stats item.
type BrokerStatsItem struct {
	Sum   int64   `json:"sum"`
	Tps   float64 `json:"tps"`
	Avgpt float64 `json:"avgpt"`
}

// BrokerStatsData is the VIEW_BROKER_STATS_DATA body.
type BrokerStatsData struct {
	StatsMinute BrokerStatsItem `json:"statsMinute"`
	StatsHour   BrokerStatsItem `json:"statsHour"`
	StatsDay    BrokerStatsItem `json:"statsDay"`
}

// Sum24Hour is StatsAllSubCommand.compute24HourSum: the day sum, else the
// hour's, else the minute's.
func (d *BrokerStatsData) Sum24Hour() int64 {
	for _, s := range []int64{d.StatsDay.Sum, d.StatsHour.Sum, d.StatsMinute.Sum} {
		if s != 0 {
			return s
		}
	}
	return 0
}

// ViewBrokerStatsData is viewBrokerStatsData: one stats item of the broker
// at addr (statsKey "topic" or "topic@group").
func (a *Admin) ViewBrokerStatsData(ctx context.Context, addr, statsName, statsKey string) (*BrokerStatsData, error) {
	req := newRequest(ViewBrokerStatsData, (&remoting.ViewBrokerStatsDataRequestHeader{StatsName: statsName, StatsKey: statsKey}).Fields(), nil)
	resp, err := a.callBroker(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	var d BrokerStatsData
	if err := decodeBody(roleBroker, addr, req.Code, resp.Body, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// StatsAllRow is one line of statsAll.
type StatsAllRow struct {
	Topic        string  `json:"topic"`
	Group        string  `json:"group,omitempty"` // "" with NoConsumer
	Accumulation int64   `json:"accumulation"`
	InTps        float64 `json:"inTps"`
	OutTps       float64 `json:"outTps"`
	InMsg24Hour  int64   `json:"inMsg24Hour"`
	OutMsg24Hour int64   `json:"outMsg24Hour"`
	NoConsumer   bool    `json:"noConsumer,omitempty"`
}

// StatsAll is mqadmin statsAll: for every topic (or only topic) except
// retry and DLQ topics, the put TPS and 24-hour count summed over the
// masters of its route, and per consuming group the get TPS, 24-hour count
// and accumulation. active keeps rows with traffic only. As stock, a topic
// whose figures cannot be read is left out.
func (a *Admin) StatsAll(ctx context.Context, topic string, active bool) ([]StatsAllRow, error) {
	topics, err := a.TopicList(ctx)
	if err != nil {
		return nil, err
	}
	var rows []StatsAllRow
	for _, t := range topics {
		if strings.HasPrefix(t, message.RetryTopicPrefix) || strings.HasPrefix(t, message.DLQTopicPrefix) {
			continue
		}
		if topic != "" && t != topic {
			continue
		}
		if err := ctx.Err(); err != nil {
			return rows, err
		}
		rows = append(rows, a.topicStats(ctx, t, active)...)
	}
	return rows, nil
}

// topicStats is StatsAllSubCommand.printTopicDetail.
func (a *Admin) topicStats(ctx context.Context, topic string, active bool) []StatsAllRow {
	rd, err := a.Route(ctx, topic)
	if err != nil {
		return nil
	}
	groups, err := a.QueryTopicConsumeByWho(ctx, topic, rd)
	if err != nil {
		return nil
	}
	var masters []string
	for _, bd := range rd.BrokerDatas {
		if addr := bd.BrokerAddrs[0]; addr != "" {
			masters = append(masters, addr)
		}
	}
	in := StatsAllRow{Topic: topic}
	for _, m := range masters {
		if d, err := a.ViewBrokerStatsData(ctx, m, StatsTopicPutNums, topic); err == nil {
			in.InTps += d.StatsMinute.Tps
			in.InMsg24Hour += d.Sum24Hour()
		}
	}
	if len(groups) == 0 {
		if active && in.InMsg24Hour <= 0 {
			return nil
		}
		in.NoConsumer = true
		return []StatsAllRow{in}
	}
	var rows []StatsAllRow
	for _, g := range groups {
		row := in
		row.Group = g
		for _, m := range masters {
			if d, err := a.ViewBrokerStatsData(ctx, m, StatsGroupGetNums, topic+"@"+g); err == nil {
				row.OutTps += d.StatsMinute.Tps
				row.OutMsg24Hour += d.Sum24Hour()
			}
		}
		if cs, err := a.ConsumeStats(ctx, g, topic); err == nil {
			row.Accumulation = max(cs.DiffTotal, 0)
		}
		if !active || row.InMsg24Hour > 0 || row.OutMsg24Hour > 0 {
			rows = append(rows, row)
		}
	}
	return rows
}

// PrintStatsAll writes rows as StatsAllSubCommand does.
func PrintStatsAll(w io.Writer, rows []StatsAllRow) {
	fmt.Fprintf(w, "%-32s  %-32s %12s %11s %11s %14s %14s\n",
		"#Topic", "#Consumer Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour")
	for _, r := range rows {
		if r.NoConsumer {
			fmt.Fprintf(w, "%-64s  %-32s %12d %11.2f %11s %14d %14s\n", front(r.Topic, 64), "", 0, r.InTps, "", r.InMsg24Hour, "NO_CONSUMER")
			continue
		}
		fmt.Fprintf(w, "%-64s  %-64s %12d %11.2f %11.2f %14d %14d\n",
			front(r.Topic, 64), front(r.Group, 64), r.Accumulation, r.InTps, r.OutTps, r.InMsg24Hour, r.OutMsg24Hour)
	}
}

// BrokerConsumeRow is one queue of brokerConsumeStats.
type BrokerConsumeRow struct {
	Group string `json:"group"`
	remoting.MessageQueue
	OffsetWrapper
	Diff int64 `json:"diff"`
}

// BrokerConsumeStatsResult is the GET_BROKER_CONSUME_STATS answer, flattened.
type BrokerConsumeStatsResult struct {
	BrokerAddr string             `json:"brokerAddr"`
	Rows       []BrokerConsumeRow `json:"rows"`
	TotalDiff  int64              `json:"totalDiff"`
}

// BrokerConsumeStats is fetchConsumeStatsInBroker: every group's consume
// stats on the broker at addr. Rows whose diff is below level are dropped
// (mqadmin brokerConsumeStats -l).
func (a *Admin) BrokerConsumeStats(ctx context.Context, addr string, isOrder bool, level int64) (*BrokerConsumeStatsResult, error) {
	req := newRequest(remoting.GetBrokerConsumeStats, (&remoting.GetConsumeStatsInBrokerHeader{IsOrder: isOrder}).Fields(), nil)
	resp, err := a.callBroker(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	var body struct {
		BrokerAddr       string `json:"brokerAddr"`
		TotalDiff        int64  `json:"totalDiff"`
		ConsumeStatsList []map[string][]struct {
			OffsetTable fastjson.Entries[remoting.MessageQueue, OffsetWrapper] `json:"offsetTable"`
		} `json:"consumeStatsList"`
	}
	if err := decodeBody(roleBroker, addr, req.Code, resp.Body, &body); err != nil {
		return nil, err
	}
	res := &BrokerConsumeStatsResult{BrokerAddr: body.BrokerAddr, TotalDiff: body.TotalDiff, Rows: []BrokerConsumeRow{}}
	for _, m := range body.ConsumeStatsList {
		groups := make([]string, 0, len(m))
		for g := range m {
			groups = append(groups, g)
		}
		sort.Strings(groups)
		for _, group := range groups {
			for _, cs := range m[group] {
				var rows []BrokerConsumeRow
				for _, e := range cs.OffsetTable {
					diff := e.Value.BrokerOffset - e.Value.ConsumerOffset
					if diff < level {
						continue
					}
					rows = append(rows, BrokerConsumeRow{Group: group, MessageQueue: e.Key, OffsetWrapper: e.Value, Diff: diff})
				}
				sort.Slice(rows, func(i, j int) bool { return CompareQueues(rows[i].MessageQueue, rows[j].MessageQueue) < 0 })
				res.Rows = append(res.Rows, rows...)
			}
		}
	}
	return res, nil
}

// Print writes r as BrokerConsumeStatsSubCommad does: only queues with a
// last consume time.
func (r *BrokerConsumeStatsResult) Print(w io.Writer) {
	fmt.Fprintf(w, "%-32s  %-32s  %-32s  %-4s  %-20s  %-20s  %-20s  %s\n",
		"#Topic", "#Group", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime")
	for _, q := range r.Rows {
		if q.LastTimestamp <= 0 {
			continue
		}
		fmt.Fprintf(w, "%-64s  %-32s  %-32s  %-4d  %-20d  %-20d  %-20d  %s\n",
			front(q.Topic, 64), q.Group, front(q.BrokerName, 32), q.QueueID, q.BrokerOffset, q.ConsumerOffset, q.Diff, FormatDate(q.LastTimestamp))
	}
	fmt.Fprintf(w, "\nDiff Total: %d\n", r.TotalDiff)
}

// ProducerInfo is one producer instance of GET_ALL_PRODUCER_INFO.
type ProducerInfo struct {
	ClientID            string `json:"clientId"`
	RemoteIP            string `json:"remoteIP"`
	Language            string `json:"language"`
	Version             int32  `json:"version"`
	LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
}

// String is ProducerInfo.toString.
func (p ProducerInfo) String() string {
	return fmt.Sprintf("clientId=%s,remoteIP=%s, language=%s, version=%d, lastUpdateTimestamp=%d",
		p.ClientID, p.RemoteIP, p.Language, p.Version, p.LastUpdateTimestamp)
}

// ProducerGroup is one group of a ProducerTableInfo.
type ProducerGroup struct {
	Group     string         `json:"group"`
	Producers []ProducerInfo `json:"producers"`
}

// AllProducerInfo is getAllProducerInfo: the producer groups connected to
// the broker at addr, sorted by group.
func (a *Admin) AllProducerInfo(ctx context.Context, addr string) ([]ProducerGroup, error) {
	req := newRequest(GetAllProducerInfo, nil, nil)
	resp, err := a.callBroker(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	var body struct {
		Data map[string][]ProducerInfo `json:"data"`
	}
	if err := decodeBody(roleBroker, addr, req.Code, resp.Body, &body); err != nil {
		return nil, err
	}
	out := make([]ProducerGroup, 0, len(body.Data))
	for g, ps := range body.Data {
		out = append(out, ProducerGroup{Group: g, Producers: ps})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out, nil
}

// PrintProducers writes groups as ProducerSubCommand does.
func PrintProducers(w io.Writer, groups []ProducerGroup) {
	for _, g := range groups {
		if len(g.Producers) == 0 {
			fmt.Fprintf(w, "producer group (%s) instances are empty\n", g.Group)
			continue
		}
		for _, p := range g.Producers {
			fmt.Fprintf(w, "producer group (%s) instance : %s\n", g.Group, p)
		}
	}
}
