package admin

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rmqio/rmq/message"
)

// Message trace records (client TraceDataEncoder): records end with \x02,
// fields are separated by \x01.
const (
	traceFieldSep  = "\x01"
	traceRecordSep = "\x02"
	// traceQueryMaxNum is queryMsgTraceById's QUERY_MESSAGE maxNum.
	traceQueryMaxNum = 64
)

// TraceView is one trace record of a message (client TraceView).
type TraceView struct {
	Type       string `json:"msgType"` // Pub, SubBefore, SubAfter, EndTransaction
	MsgID      string `json:"msgId"`
	Group      string `json:"groupName"`
	Topic      string `json:"topic,omitempty"`
	Tags       string `json:"tags,omitempty"`
	Keys       string `json:"keys,omitempty"`
	StoreHost  string `json:"storeHost,omitempty"`
	ClientHost string `json:"clientHost"`
	TimeStamp  int64  `json:"timeStamp"`
	CostTime   int64  `json:"costTime"`
	Status     string `json:"status"` // success | failed
}

// DecodeTraces reads the trace records of one trace message body and keeps
// those about msgID (TraceView.decodeFromTraceTransData); clientHost is the
// trace message's born host.
func DecodeTraces(body []byte, msgID, clientHost string) []TraceView {
	var out []TraceView
	for _, rec := range strings.Split(string(body), traceRecordSep) {
		f := strings.Split(rec, traceFieldSep)
		at := func(i int) string {
			if i < len(f) {
				return f[i]
			}
			return ""
		}
		num := func(i int) int64 { n, _ := strconv.ParseInt(at(i), 10, 64); return n }
		v := TraceView{Type: at(0), ClientHost: clientHost, Status: "success"}
		switch v.Type {
		case "Pub":
			if len(f) < 13 {
				continue
			}
			v.TimeStamp, v.Group, v.Topic, v.MsgID, v.Tags, v.Keys, v.StoreHost = num(1), at(3), at(4), at(5), at(6), at(7), at(8)
			v.CostTime = num(10)
			if len(f) >= 14 && !strings.EqualFold(at(13), "true") {
				v.Status = "failed"
			}
		case "SubBefore":
			if len(f) < 8 {
				continue
			}
			v.TimeStamp, v.Group, v.MsgID, v.Keys = num(1), at(3), at(5), at(7)
		case "SubAfter":
			if len(f) < 6 {
				continue
			}
			v.MsgID, v.CostTime, v.Keys = at(2), num(3), at(5)
			if !strings.EqualFold(at(4), "true") {
				v.Status = "failed"
			}
			if len(f) >= 9 {
				v.TimeStamp, v.Group = num(7), at(8)
			}
		case "EndTransaction":
			if len(f) < 13 {
				continue
			}
			v.TimeStamp, v.Group, v.Topic, v.MsgID, v.Tags, v.Keys, v.StoreHost = num(1), at(3), at(4), at(5), at(6), at(7), at(8)
		default:
			continue
		}
		if v.MsgID == msgID {
			out = append(out, v)
		}
	}
	return out
}

// QueryMsgTraceByID is mqadmin queryMsgTraceById: QUERY_MESSAGE by key on
// the trace topic (message.TopicTrace when traceTopic is ""), keeping the
// records about msgID.
func (a *Admin) QueryMsgTraceByID(ctx context.Context, traceTopic, msgID string) ([]TraceView, error) {
	if traceTopic == "" {
		traceTopic = message.TopicTrace
	}
	msgs, err := a.QueryMessage(ctx, traceTopic, msgID, traceQueryMaxNum, 0, a.now().UnixMilli(), false)
	if err != nil {
		return nil, err
	}
	var out []TraceView
	for _, m := range msgs {
		out = append(out, DecodeTraces(m.Body, msgID, m.BornHost.String())...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].TimeStamp < out[j].TimeStamp })
	return out, nil
}

// PrintTraces writes queryMsgTraceById output: each Pub record, then the
// SubAfter records grouped by consumer group.
func PrintTraces(w io.Writer, views []TraceView) {
	const row = "%-10s %-20s %-20s %-20s %-10s %-10s\n"
	when := func(ms int64) string { return time.UnixMilli(ms).Format("2006-01-02 15:04:05") }
	var groups []string
	byGroup := map[string][]TraceView{}
	for _, v := range views {
		switch v.Type {
		case "Pub":
			fmt.Fprintf(w, row, "#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status")
			fmt.Fprintf(w, row, "Pub", v.Group, v.ClientHost, when(v.TimeStamp), strconv.FormatInt(v.CostTime, 10)+"ms", v.Status)
			fmt.Fprintf(w, "\n")
		case "SubAfter":
			if _, ok := byGroup[v.Group]; !ok {
				groups = append(groups, v.Group)
			}
			byGroup[v.Group] = append(byGroup[v.Group], v)
		}
	}
	for _, g := range groups {
		fmt.Fprintf(w, row, "#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes", "#Status")
		for _, v := range byGroup[g] {
			fmt.Fprintf(w, row, "Sub", v.Group, v.ClientHost, when(v.TimeStamp), strconv.FormatInt(v.CostTime, 10)+"ms", v.Status)
		}
		fmt.Fprintf(w, "\n")
	}
}
