package admin

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// Timer keys of GET_BROKER_RUNTIME_INFO, as a 5.x broker reports them
// (AdminBrokerProcessor.prepareRuntimeInfo; all zero when its timer wheel is
// disabled). timerStatus reads these; a broker that reports none of them has
// no timer wheel to show.
const (
	// KeyTimerCongestNum: messages in the wheel from the read position on,
	// i.e. timer messages not yet delivered.
	KeyTimerCongestNum = "timerCongestNum"
	// KeyTimerReadBehind: seconds the wheel's read time is behind the clock.
	KeyTimerReadBehind = "timerReadBehind"
	// KeyTimerOffsetBehind: messages on the timer topic not yet read into
	// the wheel.
	KeyTimerOffsetBehind = "timerOffsetBehind"
	// KeyTimerEnqueueTps and KeyTimerDequeueTps: wheel enqueue and delivery
	// rates, messages per second.
	KeyTimerEnqueueTps = "timerEnqueueTps"
	// KeyTimerWheelEnable is "false" in an rmq broker's runtime info when it
	// runs with timerWheelEnable=false.
	KeyTimerWheelEnable = "timerWheelEnable"
	KeyTimerDequeueTps  = "timerDequeueTps"
)

// timerKeys are the keys above, in column order.
var timerKeys = []string{KeyTimerCongestNum, KeyTimerReadBehind, KeyTimerOffsetBehind, KeyTimerEnqueueTps, KeyTimerDequeueTps}

// TimerStatus is one broker's timer figures.
type TimerStatus struct {
	BrokerMember
	Pending       int64   `json:"pending"`
	ReadBehindSec int64   `json:"readBehindSec"`
	EnqueueBehind int64   `json:"enqueueBehind"`
	EnqueueTps    float64 `json:"enqueueTps"`
	DequeueTps    float64 `json:"dequeueTps"`
	// Disabled: the broker runs with timerWheelEnable=false (rmq brokers
	// say so in the runtime info); it has no figures, and that is no error.
	Disabled bool `json:"disabled,omitempty"`
	// Other holds every other runtime key starting with "timer" (rmq
	// brokers may add e.g. timerReadBehindMs, timerPrecisionMs).
	Other map[string]string `json:"other,omitempty"`
	Error string            `json:"error,omitempty"`
}

// TimerStatuses reads the timer keys of GET_BROKER_RUNTIME_INFO from the
// broker at addr, or from every member of cluster (all clusters when both
// are ""). A broker without the keys gets an Error wrapping ErrNoTimerStats;
// every failure is also in the returned error.
func (a *Admin) TimerStatuses(ctx context.Context, addr, cluster string) ([]TimerStatus, error) {
	var ms []BrokerMember
	if addr != "" {
		ms = []BrokerMember{{Addr: addr}}
		if ci, err := a.ClusterInfo(ctx); err == nil {
			if all, err := members(ci, ""); err == nil {
				for _, m := range all {
					if m.Addr == addr {
						ms[0] = m
					}
				}
			}
		}
	} else {
		var err error
		if ms, err = a.Members(ctx, cluster); err != nil {
			return nil, err
		}
	}
	var out []TimerStatus
	var errs []error
	for _, m := range ms {
		st := TimerStatus{BrokerMember: m}
		kv, err := a.BrokerRuntimeInfo(ctx, m.Addr)
		if err == nil {
			err = fillTimerStatus(&st, kv)
		}
		if err != nil {
			st.Error = err.Error()
			errs = append(errs, err)
		}
		out = append(out, st)
	}
	return out, errors.Join(errs...)
}

func fillTimerStatus(st *TimerStatus, kv map[string]string) error {
	if kv[KeyTimerWheelEnable] == "false" {
		st.Disabled = true
		return nil
	}
	found := false
	for _, k := range timerKeys {
		if _, ok := kv[k]; ok {
			found = true
		}
	}
	if !found {
		return fmt.Errorf("%w: broker %s answered %s without the timer keys (%s): it runs no timer wheel",
			ErrNoTimerStats, st.Addr, RequestName(remoting.GetBrokerRuntimeInfo), strings.Join(timerKeys, ", "))
	}
	num := func(k string) int64 {
		n, _ := strconv.ParseInt(strings.TrimSpace(kv[k]), 10, 64)
		return n
	}
	rate := func(k string) float64 {
		f, _ := strconv.ParseFloat(strings.TrimSpace(kv[k]), 64)
		return f
	}
	st.Pending = num(KeyTimerCongestNum)
	st.ReadBehindSec = num(KeyTimerReadBehind)
	st.EnqueueBehind = num(KeyTimerOffsetBehind)
	st.EnqueueTps = rate(KeyTimerEnqueueTps)
	st.DequeueTps = rate(KeyTimerDequeueTps)
	for k, v := range kv {
		if strings.HasPrefix(k, "timer") && !isTimerKey(k) {
			if st.Other == nil {
				st.Other = map[string]string{}
			}
			st.Other[k] = v
		}
	}
	return nil
}

func isTimerKey(k string) bool {
	for _, t := range timerKeys {
		if t == k {
			return true
		}
	}
	return false
}

// PrintTimerStatuses writes the timerStatus table, then each broker's other
// timer keys. Brokers that failed show their error instead of figures.
func PrintTimerStatuses(w io.Writer, sts []TimerStatus) {
	const f = "%-22s  %-22s  %-12s  %-12s  %-12s  %-12s  %s\n"
	fmt.Fprintf(w, f, "#Broker Name", "#Addr", "#Pending", "#ReadLag(s)", "#EnqueueLag", "#EnqueueTPS", "#DequeueTPS")
	for _, s := range sts {
		if s.Error != "" {
			fmt.Fprintf(w, f, s.BrokerName, s.Addr, "-", "-", "-", "-", "-")
			continue
		}
		if s.Disabled {
			fmt.Fprintf(w, f, s.BrokerName, s.Addr, "disabled", "-", "-", "-", "-")
			continue
		}
		fmt.Fprintf(w, f, s.BrokerName, s.Addr, strconv.FormatInt(s.Pending, 10), strconv.FormatInt(s.ReadBehindSec, 10),
			strconv.FormatInt(s.EnqueueBehind, 10), strconv.FormatFloat(s.EnqueueTps, 'f', 2, 64), strconv.FormatFloat(s.DequeueTps, 'f', 2, 64))
	}
	for _, s := range sts {
		for _, k := range sortedKeys(s.Other) {
			fmt.Fprintf(w, "%-24s %-32s: %s\n", s.Addr, k, s.Other[k])
		}
	}
}

// RecallHandle is a decoded recall handle (5.x RecallMessageHandle.HandleV1).
type RecallHandle struct {
	Topic       string `json:"topic"`
	BrokerName  string `json:"brokerName"`
	TimestampMs int64  `json:"timestampMs"`
	UniqKey     string `json:"uniqKey"`
}

// DecodeRecallHandle reads URL-safe base64 (padding optional) of
// "v1 <topic> <brokerName> <timestampMs> <uniqKey>".
func DecodeRecallHandle(h string) (*RecallHandle, error) {
	raw, err := base64.URLEncoding.DecodeString(h)
	if err != nil {
		raw, err = base64.RawURLEncoding.DecodeString(h)
	}
	if err != nil || h == "" {
		return nil, fmt.Errorf("%w: %q is not URL-safe base64", ErrBadRecallHandle, h)
	}
	f := strings.Split(string(raw), " ")
	if len(f) < 5 || f[0] != "v1" || f[1] == "" || f[2] == "" || f[4] == "" {
		return nil, fmt.Errorf("%w: want \"v1 <topic> <brokerName> <timestampMs> <uniqKey>\", got %q", ErrBadRecallHandle, raw)
	}
	ts, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: timestamp %q in %q", ErrBadRecallHandle, f[3], raw)
	}
	return &RecallHandle{Topic: f[1], BrokerName: f[2], TimestampMs: ts, UniqKey: f[4]}, nil
}

// RecallResult is the outcome of recallMessage.
type RecallResult struct {
	RecallHandle
	Addr  string `json:"addr"`
	MsgID string `json:"msgId"`
}

// RecallMessage sends RECALL_MESSAGE for a timer message to the master of
// the broker named in its handle, as the 5.x producer's recallMessage does.
// topic may be "" to take the handle's.
func (a *Admin) RecallMessage(ctx context.Context, topic, handle, producerGroup string) (*RecallResult, error) {
	h, err := DecodeRecallHandle(handle)
	if err != nil {
		return nil, err
	}
	if topic == "" {
		topic = h.Topic
	}
	if message.IsRetryTopic(topic) || message.IsDLQTopic(topic) {
		return nil, fmt.Errorf("%w: topic %s: retry and DLQ messages cannot be recalled", ErrUsage, topic)
	}
	if topic != h.Topic {
		return nil, fmt.Errorf("%w: the handle is for topic %s, not %s", ErrBadRecallHandle, h.Topic, topic)
	}
	rd, err := a.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	addr := MasterAddr(rd, h.BrokerName)
	if addr == "" {
		return nil, fmt.Errorf("%w: broker %s of the handle has no master in the route of %s", ErrNoRoute, h.BrokerName, topic)
	}
	if producerGroup == "" {
		producerGroup = ToolsProducerGroup
	}
	req := newRequest(remoting.RecallMessage, (&remoting.RecallMessageRequestHeader{
		ProducerGroup: producerGroup, Topic: topic, RecallHandle: handle, BrokerName: h.BrokerName,
	}).Fields(), nil)
	resp, err := a.callBroker(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	rh, _ := remoting.DecodeHeader[remoting.RecallMessageResponseHeader](resp) // msgId is nullable
	return &RecallResult{RecallHandle: *h, Addr: addr, MsgID: rh.MsgID}, nil
}

// Print writes recallMessage output.
func (r *RecallResult) Print(w io.Writer) {
	fmt.Fprintf(w, "%-32s  %-22s  %-20s  %s\n", "#Broker Name", "#Addr", "#Recall Result", "#MsgId")
	fmt.Fprintf(w, "%-32s  %-22s  %-20s  %s\n", r.BrokerName, r.Addr, "RECALL_OK", r.MsgID)
}
