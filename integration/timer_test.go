package integration

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rmqio/rmq/admin"
	"github.com/rmqio/rmq/integration/harness"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// 5.x timer messages with the stock Go client and raw remoting requests.
// Due time and lateness:
//
//	send ──▶ admitted at A, stored on rmq_sys_wheel_timer at S with TIMER_OUT_MS = due
//	     ──(wheel)──▶ re-stored on the real topic at D ──pull──▶ received R
//
// TIMER_DELIVER_MS is the due time itself; TIMER_DELAY_SEC / TIMER_DELAY_MS
// count from A, and born ≤ A ≤ S, so the due time the broker chose lies in
// [born+delay, S+delay]. "Never early" is checked on both clocks against the
// TIMER_OUT_MS the delivered copy keeps: D ≥ due (broker) and R ≥ due −
// earlyTolerance (client, which truncates to milliseconds differently).
// Lateness is R − due; it includes the pull leg.

// Wire names of the timer path (5.x MessageConst, TopicValidator).
const (
	wheelTopic         = "rmq_sys_wheel_timer"
	propTimerDelaySec  = "TIMER_DELAY_SEC"
	propTimerDelayMs   = "TIMER_DELAY_MS"
	propTimerOutMs     = "TIMER_OUT_MS"
	propTimerEnqueueMs = "TIMER_ENQUEUE_MS"
	propTimerDequeueMs = "TIMER_DEQUEUE_MS"
	propTimerRollTimes = "TIMER_ROLL_TIMES"
	// defaultTimerMaxDelaySec is the broker's default timerMaxDelaySec (3 days).
	defaultTimerMaxDelaySec = 3 * 24 * 3600
)

// timerKind is how a test message asks for its time.
type timerKind string

const (
	byDeliverTimestamp timerKind = "WithDelayTimestamp" // TIMER_DELIVER_MS, absolute
	byDelaySec         timerKind = "TIMER_DELAY_SEC"
	byDelayMs          timerKind = "TIMER_DELAY_MS"
)

// timerSend is one acknowledged timer message.
type timerSend struct {
	id        string
	kind      timerKind
	delay     time.Duration // relative kinds: the requested delay
	deliverMs int64         // byDeliverTimestamp: the requested time
	result    *primitive.SendResult
}

// setTimer makes m a timer message of kind due delay after now.
func setTimer(m *primitive.Message, kind timerKind, now time.Time, delay time.Duration) (deliverMs int64) {
	switch kind {
	case byDeliverTimestamp:
		at := now.Add(delay)
		m.WithDelayTimestamp(at)
		return at.UnixMilli()
	case byDelaySec:
		m.WithProperty(propTimerDelaySec, strconv.FormatInt(int64(delay/time.Second), 10))
	case byDelayMs:
		m.WithProperty(propTimerDelayMs, strconv.FormatInt(delay.Milliseconds(), 10))
	}
	return 0
}

// timerOut reads the TIMER_OUT_MS a record carries.
func timerOut(m *primitive.MessageExt) (int64, error) {
	v := m.GetProperty(propTimerOutMs)
	out, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("TIMER_OUT_MS %q: %w", v, err)
	}
	return out, nil
}

// checkWheelRecord checks the record a timer send stored (read back by its
// offsetMsgId): on the wheel topic, destination kept in REAL_TOPIC/REAL_QID,
// and a TIMER_OUT_MS that honours the request. It returns that due time.
func checkWheelRecord(cl *remoting.Client, brokerAddr, topic string, s timerSend) (int64, error) {
	rec, err := viewStored(cl, brokerAddr, s.result.OffsetMsgID)
	if err != nil {
		return 0, err
	}
	if rec.Topic != wheelTopic || rec.Queue.QueueId != 0 {
		return 0, fmt.Errorf("stored on %s/%d, want %s/0", rec.Topic, rec.Queue.QueueId, wheelTopic)
	}
	if rt, rq := rec.GetProperty(primitive.PropertyRealTopic), rec.GetProperty(primitive.PropertyRealQueueId); rt != topic || rq != strconv.Itoa(s.result.MessageQueue.QueueId) {
		return 0, fmt.Errorf("REAL_TOPIC=%q REAL_QID=%q, want %s and %d", rt, rq, topic, s.result.MessageQueue.QueueId)
	}
	out, err := timerOut(rec)
	if err != nil {
		return 0, err
	}
	if s.kind == byDeliverTimestamp {
		if out != s.deliverMs {
			return 0, fmt.Errorf("TIMER_OUT_MS %d, want the requested TIMER_DELIVER_MS %d exactly", out, s.deliverMs)
		}
		return out, nil
	}
	lo, hi := rec.BornTimestamp+s.delay.Milliseconds(), rec.StoreTimestamp+s.delay.Milliseconds()
	if out < lo || out > hi {
		return 0, fmt.Errorf("TIMER_OUT_MS %d outside [born+%v, stored+%v] = [%d, %d]", out, s.delay, s.delay, lo, hi)
	}
	return out, nil
}

// timerLateness checks one delivered copy against its due time outMs and
// returns the lateness on the client clock (R − due) and on the broker clock
// (D − due).
func timerLateness(a arrival, outMs int64) (client, broker time.Duration, err error) {
	m := a.msg
	due := time.UnixMilli(outMs)
	if m.StoreTimestamp < outMs {
		return 0, 0, fmt.Errorf("stored on its topic at %d, %d ms before TIMER_OUT_MS %d", m.StoreTimestamp, outMs-m.StoreTimestamp, outMs)
	}
	if a.at.Before(due.Add(-earlyTolerance)) {
		return 0, 0, fmt.Errorf("received %v before TIMER_OUT_MS %d", due.Sub(a.at), outMs)
	}
	if got, err := timerOut(m); err != nil || got != outMs {
		return 0, 0, fmt.Errorf("delivered copy has TIMER_OUT_MS %q, the wheel record %d", m.GetProperty(propTimerOutMs), outMs)
	}
	deq, err := strconv.ParseInt(m.GetProperty(propTimerDequeueMs), 10, 64)
	if err != nil || deq < outMs {
		return 0, 0, fmt.Errorf("TIMER_DEQUEUE_MS %q, want a time at or after TIMER_OUT_MS %d", m.GetProperty(propTimerDequeueMs), outMs)
	}
	if _, err := strconv.ParseInt(m.GetProperty(propTimerEnqueueMs), 10, 64); err != nil {
		return 0, 0, fmt.Errorf("TIMER_ENQUEUE_MS %q: %v", m.GetProperty(propTimerEnqueueMs), err)
	}
	return a.at.Sub(due), time.Duration(m.StoreTimestamp-outMs) * time.Millisecond, nil
}

// TestTimerMessagesNeverEarlyAndOnTime sends timer messages of the three
// kinds — WithDelayTimestamp (TIMER_DELIVER_MS), TIMER_DELAY_SEC and
// TIMER_DELAY_MS — to a consumer that is already pulling every queue, and
// checks that each is parked on the wheel topic with the right due time,
// arrives once, intact, on the producer's queue, not before its time on
// either clock, and within lateLimit after it.
func TestTimerMessagesNeverEarlyAndOnTime(t *testing.T) {
	t.Parallel()
	p := sharedRMQ(t)
	topic := uniqueName(t, "t")
	prod, _ := newProducer(t, p.NamesrvAddr())
	sendAll(t, prod, []*primitive.Message{testMsg(topic, "create", bodyFor("create"))})
	waitRoute(t, p, topic)
	got := newArrivals()
	startWarmConsumer(t, p, prod.SendSync, consumerConf{group: uniqueName(t, "cg"), topic: topic}, got.add)

	plan := []struct {
		kind   timerKind
		delays []time.Duration
	}{
		{kind: byDeliverTimestamp, delays: []time.Duration{1234 * time.Millisecond, 2500 * time.Millisecond, 3901 * time.Millisecond, 5 * time.Second}},
		{kind: byDelaySec, delays: []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 5 * time.Second}},
		{kind: byDelayMs, delays: []time.Duration{777 * time.Millisecond, 2345 * time.Millisecond, 3 * time.Second, 4567 * time.Millisecond}},
	}
	var sends []timerSend
	for _, pl := range plan {
		for i, d := range pl.delays {
			id := fmt.Sprintf("%s-%d", pl.kind, i)
			m := testMsg(topic, id, bodyFor(id))
			m.WithTag("TagTimer")
			deliverMs := setTimer(m, pl.kind, time.Now(), d)
			ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
			r, err := prod.SendSync(ctx, m)
			cancel()
			if err != nil {
				t.Fatalf("send %s: %v", id, err)
			}
			if r.Status != primitive.SendOK {
				t.Fatalf("send %s: status %d, want SEND_OK", id, r.Status)
			}
			sends = append(sends, timerSend{id: id, kind: pl.kind, delay: d, deliverMs: deliverMs, result: r})
		}
	}

	cl := rawClient(t)
	outs := make(map[string]int64, len(sends))
	ids := make([]string, len(sends))
	for i, s := range sends {
		ids[i] = s.id
		out, err := checkWheelRecord(cl, p.BrokerAddr(), topic, s)
		if err != nil {
			t.Fatalf("%s: wheel record: %v", s.id, err)
		}
		outs[s.id] = out
	}

	got.wait(t, consumeTimeout, ids)
	late := make(map[timerKind][]time.Duration)
	brokerLate := make(map[timerKind][]time.Duration)
	for _, s := range sends {
		a := got.get(s.id)
		if len(a) != 1 {
			t.Errorf("%s: received %d times, want once", s.id, len(a))
		}
		cLate, bLate, err := timerLateness(a[0], outs[s.id])
		if err != nil {
			t.Errorf("%s: %v", s.id, err)
			continue
		}
		late[s.kind] = append(late[s.kind], cLate)
		brokerLate[s.kind] = append(brokerLate[s.kind], bLate)
		if cLate > lateLimit {
			t.Errorf("%s: received %v after its time, limit %v", s.id, cLate, lateLimit)
		}
		m := a[0].msg
		switch {
		case m.Topic != topic || m.Queue.QueueId != s.result.MessageQueue.QueueId:
			t.Errorf("%s: delivered on %s/%d, want the producer's queue %s/%d", s.id, m.Topic, m.Queue.QueueId, topic, s.result.MessageQueue.QueueId)
		case string(m.Body) != string(bodyFor(s.id)) || m.GetTags() != "TagTimer":
			t.Errorf("%s: body %q tags %q, want %q TagTimer", s.id, m.Body, m.GetTags(), bodyFor(s.id))
		case m.MsgId != s.result.MsgID:
			t.Errorf("%s: msgId (UNIQ_KEY) %s, send result said %s", s.id, m.MsgId, s.result.MsgID)
		case m.ReconsumeTimes != 0:
			t.Errorf("%s: reconsumeTimes %d, want 0", s.id, m.ReconsumeTimes)
		}
	}
	for _, pl := range plan {
		p50, p99, maxL := latencySummary(late[pl.kind])
		b50, _, bmax := latencySummary(brokerLate[pl.kind])
		t.Logf("%s: %d messages; received after due p50 %v p99 %v max %v; stored on the topic after due p50 %v max %v",
			pl.kind, len(late[pl.kind]), p50, p99, maxL, b50, bmax)
	}
}

// rawSendTimer sends one message with SEND_MESSAGE_V2 to queue q of topic,
// as a Java producer would, and returns the broker's answer (the Go client
// keeps neither the exact code of a refusal nor the recallHandle).
func rawSendTimer(cl *remoting.Client, addr, topic string, q int32, id string, props map[string]string) (*remoting.Command, error) {
	all := map[string]string{idProp: id, message.PropWait: "true", message.PropUniqKey: admin.NewUniqID(time.Now())}
	for k, v := range props {
		all[k] = v
	}
	req := admin.NewSendRequest(&admin.SendSpec{
		ProducerGroup: "it_timer_raw", Topic: topic, QueueID: q, Body: bodyFor(id), Properties: all,
		BornTimestamp: time.Now().UnixMilli(),
	})
	return cl.InvokeTimeout(addr, req, sendTimeout)
}

// TestTimerIllegalValuesRefused sends timer properties the broker must refuse
// with MESSAGE_ILLEGAL (13): values that are not 64-bit decimals, times
// beyond timerMaxDelaySec, relative delays that overflow, and an illegal
// TIMER_DELAY_SEC that takes precedence over a valid TIMER_DELIVER_MS. The Go
// client surfaces the code in its error; a raw SEND_MESSAGE_V2 sees it
// exactly. Nothing refused may be stored. A delay of exactly
// timerMaxDelaySec is the last one accepted.
func TestTimerIllegalValuesRefused(t *testing.T) {
	t.Parallel()
	p := sharedRMQ(t)
	topic := uniqueName(t, "t")
	prod, _ := newProducer(t, p.NamesrvAddr())
	sendAll(t, prod, []*primitive.Message{testMsg(topic, "create", bodyFor("create"))})
	route := waitRoute(t, p, topic)
	queues := int(route.QueueDatas[0].WriteQueueNums)
	cl := rawClient(t)
	// Dispatch to the consume queues is asynchronous (as in the Java broker):
	// wait until the create message counts before taking the baseline.
	var before map[int]int64
	harness.WaitFor(t, 10*time.Second, func() error {
		var err error
		if before, err = queueMaxOffsets(cl, p.BrokerAddr(), topic, queues); err != nil {
			return err
		}
		var total int64
		for _, n := range before {
			total += n
		}
		if total != 1 {
			return fmt.Errorf("%d messages visible, want the create message", total)
		}
		return nil
	})

	maxMs := int64(defaultTimerMaxDelaySec) * 1000
	longMax := strconv.FormatInt(math.MaxInt64, 10)
	cases := []struct {
		name  string
		props func(now time.Time) map[string]string
	}{
		{name: "deliver ms not a number", props: func(time.Time) map[string]string { return map[string]string{primitive.PropertyTimerDeliverMS: "soon"} }},
		{name: "delay sec with a fraction", props: func(time.Time) map[string]string { return map[string]string{propTimerDelaySec: "1.5"} }},
		{name: "delay ms with a unit", props: func(time.Time) map[string]string { return map[string]string{propTimerDelayMs: "1500ms"} }},
		{name: "delay sec beyond int64", props: func(time.Time) map[string]string { return map[string]string{propTimerDelaySec: "9223372036854775808"} }},
		{name: "delay sec beyond the max delay", props: func(time.Time) map[string]string {
			return map[string]string{propTimerDelaySec: strconv.Itoa(defaultTimerMaxDelaySec + 60)}
		}},
		{name: "delay ms beyond the max delay", props: func(time.Time) map[string]string {
			return map[string]string{propTimerDelayMs: strconv.FormatInt(maxMs+60_000, 10)}
		}},
		{name: "deliver ms beyond the max delay", props: func(now time.Time) map[string]string {
			return map[string]string{primitive.PropertyTimerDeliverMS: strconv.FormatInt(now.UnixMilli()+maxMs+60_000, 10)}
		}},
		{name: "delay sec Long.MAX", props: func(time.Time) map[string]string { return map[string]string{propTimerDelaySec: longMax} }},
		{name: "delay ms Long.MAX", props: func(time.Time) map[string]string { return map[string]string{propTimerDelayMs: longMax} }},
		{name: "deliver ms Long.MAX", props: func(time.Time) map[string]string { return map[string]string{primitive.PropertyTimerDeliverMS: longMax} }},
		{name: "illegal delay sec wins over a valid deliver ms", props: func(now time.Time) map[string]string {
			return map[string]string{propTimerDelaySec: "x", primitive.PropertyTimerDeliverMS: strconv.FormatInt(now.Add(time.Minute).UnixMilli(), 10)}
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("illegal-%d", i)
			m := testMsg(topic, id, bodyFor(id))
			for k, v := range tc.props(time.Now()) {
				m.WithProperty(k, v)
			}
			ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
			r, err := prod.SendSync(ctx, m)
			cancel()
			if err == nil {
				t.Fatalf("Go client: sent (%v), want a refusal with code 13", r)
			}
			if !strings.Contains(err.Error(), "CODE: 13,") {
				t.Errorf("Go client error %q does not carry the broker's code 13", err)
			}

			resp, err := rawSendTimer(cl, p.BrokerAddr(), topic, 0, id+"-raw", tc.props(time.Now()))
			if err != nil {
				t.Fatalf("raw send: %v", err)
			}
			if resp.Code != remoting.MessageIllegal || resp.Remark == "" {
				t.Errorf("raw send: code %d %q, want %d MESSAGE_ILLEGAL with a remark", resp.Code, resp.Remark, remoting.MessageIllegal)
			}
		})
	}

	// The boundary: TIMER_DELAY_SEC = timerMaxDelaySec is accepted and parked
	// on the wheel, due exactly that long after the broker admitted it.
	resp, err := rawSendTimer(cl, p.BrokerAddr(), topic, 0, "at-max", map[string]string{propTimerDelaySec: strconv.Itoa(defaultTimerMaxDelaySec)})
	if err != nil {
		t.Fatalf("send at the max delay: %v", err)
	}
	res, err := admin.ParseSendResponse(resp)
	if err != nil {
		t.Fatalf("send at the max delay: code %d %q: %v", resp.Code, resp.Remark, err)
	}
	if res.RecallHandle == "" {
		t.Errorf("send at the max delay: no recallHandle in the reply %v", resp.ExtFields)
	}
	rec, err := viewStored(cl, p.BrokerAddr(), res.OffsetMsgID)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := timerOut(rec); rec.Topic != wheelTopic || err != nil || out-rec.StoreTimestamp > maxMs || out-rec.BornTimestamp < maxMs {
		t.Errorf("send at the max delay: stored on %s with TIMER_OUT_MS %q (born %d, stored %d), want %s due %d ms after admission",
			rec.Topic, rec.GetProperty(propTimerOutMs), rec.BornTimestamp, rec.StoreTimestamp, wheelTopic, maxMs)
	}

	after, err := queueMaxOffsets(cl, p.BrokerAddr(), topic, queues)
	if err != nil {
		t.Fatal(err)
	}
	for q := range queues {
		if after[q] != before[q] {
			t.Errorf("queue %d: max offset %d after the refused sends, %d before: something refused was stored", q, after[q], before[q])
		}
	}
}

// TestTimerPastTimeDeliveredAtOnce sends timer messages whose time is not in
// the future: a TIMER_DELIVER_MS in the past, TIMER_DELAY_MS=0 and a negative
// TIMER_DELAY_SEC. Each is stored on its own topic at once (not on the wheel)
// and reaches the consumer within lateLimit of its send.
func TestTimerPastTimeDeliveredAtOnce(t *testing.T) {
	t.Parallel()
	p := sharedRMQ(t)
	topic := uniqueName(t, "t")
	prod, _ := newProducer(t, p.NamesrvAddr())
	sendAll(t, prod, []*primitive.Message{testMsg(topic, "create", bodyFor("create"))})
	waitRoute(t, p, topic)
	got := newArrivals()
	startWarmConsumer(t, p, prod.SendSync, consumerConf{group: uniqueName(t, "cg"), topic: topic}, got.add)

	cases := []struct {
		name string
		set  func(m *primitive.Message)
	}{
		{name: "deliver timestamp 10 s ago", set: func(m *primitive.Message) { m.WithDelayTimestamp(time.Now().Add(-10 * time.Second)) }},
		{name: "deliver ms 1", set: func(m *primitive.Message) { m.WithProperty(primitive.PropertyTimerDeliverMS, "1") }},
		{name: "delay ms 0", set: func(m *primitive.Message) { m.WithProperty(propTimerDelayMs, "0") }},
		{name: "delay sec -5", set: func(m *primitive.Message) { m.WithProperty(propTimerDelaySec, "-5") }},
	}
	cl := rawClient(t)
	sentAt := make(map[string]time.Time)
	var ids []string
	for i, tc := range cases {
		id := fmt.Sprintf("past-%d", i)
		m := testMsg(topic, id, bodyFor(id))
		tc.set(m)
		sentAt[id] = time.Now()
		r := sendAll(t, prod, []*primitive.Message{m})[0]
		rec, err := viewStored(cl, p.BrokerAddr(), r.OffsetMsgID)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if rec.Topic != topic || rec.GetProperty(propTimerOutMs) != "" {
			t.Errorf("%s: stored on %s with TIMER_OUT_MS %q, want on %s directly", tc.name, rec.Topic, rec.GetProperty(propTimerOutMs), topic)
		}
		ids = append(ids, id)
	}
	got.wait(t, consumeTimeout, ids)
	for i, tc := range cases {
		a := got.get(ids[i])
		if len(a) != 1 {
			t.Errorf("%s: received %d times, want once", tc.name, len(a))
			continue
		}
		if d := a[0].at.Sub(sentAt[ids[i]]); d > lateLimit {
			t.Errorf("%s: received %v after the send, limit %v", tc.name, d, lateLimit)
		} else {
			t.Logf("%s: received %v after the send", tc.name, d)
		}
	}
}

// recall sends RECALL_MESSAGE (370) and returns the answer.
func recall(cl *remoting.Client, addr, topic, handle string) (*remoting.Command, error) {
	req := remoting.NewRequest(remoting.RecallMessage, map[string]string{
		"producerGroup": "it_timer_raw", "topic": topic, "recallHandle": handle,
	}, nil)
	return cl.InvokeTimeout(addr, req, sendTimeout)
}

// TestTimerRecall sends three timer messages to one queue with raw
// SEND_MESSAGE_V2 — "recalled" and "kept" due at T, "fence" at T+1 s —
// recalls the first with the recallHandle of its send reply, and checks that
// it is never stored on the topic: once the fence arrived (deliveries go in
// due order) the queue grew by exactly two. Malformed recalls are refused,
// and a recall of a message already delivered is refused with
// ILLEGAL_OPERATION.
func TestTimerRecall(t *testing.T) {
	t.Parallel()
	p := sharedRMQ(t)
	topic := uniqueName(t, "t")
	prod, _ := newProducer(t, p.NamesrvAddr())
	sendAll(t, prod, []*primitive.Message{testMsg(topic, "create", bodyFor("create"))})
	waitRoute(t, p, topic)
	got := newArrivals()
	startWarmConsumer(t, p, prod.SendSync, consumerConf{group: uniqueName(t, "cg"), topic: topic}, got.add)

	cl := rawClient(t)
	const q = 1
	start, err := queueMaxOffsets(cl, p.BrokerAddr(), topic, q+1)
	if err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(3 * time.Second).UnixMilli()
	sent := make(map[string]*admin.SendResult)
	for _, s := range []struct {
		id  string
		due int64
	}{{id: "recalled", due: due}, {id: "kept", due: due}, {id: "fence", due: due + 1000}} {
		resp, err := rawSendTimer(cl, p.BrokerAddr(), topic, q, s.id, map[string]string{primitive.PropertyTimerDeliverMS: strconv.FormatInt(s.due, 10)})
		if err != nil {
			t.Fatalf("send %s: %v", s.id, err)
		}
		res, err := admin.ParseSendResponse(resp)
		if err != nil {
			t.Fatalf("send %s: code %d %q: %v", s.id, resp.Code, resp.Remark, err)
		}
		if res.RecallHandle == "" {
			t.Fatalf("send %s: the reply carries no recallHandle: %v", s.id, resp.ExtFields)
		}
		sent[s.id] = res
	}

	refusals := []struct {
		name   string
		topic  string
		handle string
		want   int32
	}{
		{name: "garbage handle", topic: topic, handle: "not-a-handle", want: remoting.IllegalOperation},
		{name: "handle of another topic", topic: "TBW102", handle: sent["recalled"].RecallHandle, want: remoting.IllegalOperation},
		{name: "unknown topic", topic: uniqueName(t, "none"), handle: sent["recalled"].RecallHandle, want: remoting.TopicNotExist},
	}
	for _, r := range refusals {
		resp, err := recall(cl, p.BrokerAddr(), r.topic, r.handle)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		if resp.Code != r.want {
			t.Errorf("recall with %s: code %d %q, want %d", r.name, resp.Code, resp.Remark, r.want)
		}
	}

	resp, err := recall(cl, p.BrokerAddr(), topic, sent["recalled"].RecallHandle)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != remoting.Success {
		t.Fatalf("recall: code %d %q, want SUCCESS", resp.Code, resp.Remark)
	}
	rec, err := viewStored(cl, p.BrokerAddr(), sent["recalled"].OffsetMsgID)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ExtFields["msgId"] != rec.MsgId {
		t.Errorf("recall answered msgId %q, the message's UNIQ_KEY is %q", resp.ExtFields["msgId"], rec.MsgId)
	}

	got.wait(t, consumeTimeout, []string{"kept", "fence"})
	if a := got.get("recalled"); len(a) != 0 {
		t.Errorf("the recalled message was delivered %d times (stored at %d)", len(a), a[0].msg.StoreTimestamp)
	}
	end, err := queueMaxOffsets(cl, p.BrokerAddr(), topic, q+1)
	if err != nil {
		t.Fatal(err)
	}
	if n := end[q] - start[q]; n != 2 {
		t.Errorf("queue %d grew by %d records once the fence was delivered, want 2 (kept, fence)", q, n)
	}
	for _, id := range []string{"kept", "fence"} {
		a := got.get(id)
		if len(a) != 1 || a[0].msg.Queue.QueueId != q {
			t.Errorf("%s: %d deliveries, want one on queue %d", id, len(a), q)
		}
	}

	resp, err = recall(cl, p.BrokerAddr(), topic, sent["kept"].RecallHandle)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != remoting.IllegalOperation {
		t.Errorf("recall after delivery: code %d %q, want %d ILLEGAL_OPERATION", resp.Code, resp.Remark, remoting.IllegalOperation)
	}
}

// timerBacklog reads the pending count and enqueue backlog from the broker's
// runtime info (timerCongestNum, timerOffsetBehind).
func timerBacklog(ctx context.Context, adm *admin.Admin, brokerAddr string) (pending, behind int64, err error) {
	kv, err := adm.BrokerRuntimeInfo(ctx, brokerAddr)
	if err != nil {
		return 0, 0, err
	}
	pending, err1 := strconv.ParseInt(kv[admin.KeyTimerCongestNum], 10, 64)
	behind, err2 := strconv.ParseInt(kv[admin.KeyTimerOffsetBehind], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("runtime info %s=%q %s=%q", admin.KeyTimerCongestNum, kv[admin.KeyTimerCongestNum],
			admin.KeyTimerOffsetBehind, kv[admin.KeyTimerOffsetBehind])
	}
	return pending, behind, nil
}

// TestTimerMessagesSurviveKill sends 300 timer messages due 8–10 s later to a
// SYNC_FLUSH broker, checks none is on the topic yet, kills the broker with
// SIGKILL and restarts it. A fresh consumer must then get every one, each
// stored on the topic no earlier than its TIMER_OUT_MS (the requested
// time), and the topic must hold exactly one copy of each once the wheel is
// empty.
func TestTimerMessagesSurviveKill(t *testing.T) {
	t.Parallel()
	p := ownRMQ(t, "flushDiskType=SYNC_FLUSH", "mappedFileSizeCommitLog=4194304", "mappedFileSizeTimerLog=1048576")
	topic := uniqueName(t, "t")
	prod, stopProd := newProducer(t, p.NamesrvAddr())
	sendAll(t, prod, []*primitive.Message{testMsg(topic, "create", bodyFor("create"))})
	route := waitRoute(t, p, topic)
	queues := int(route.QueueDatas[0].WriteQueueNums)
	cl := rawClient(t)

	const n = 300
	base := time.Now().Add(8 * time.Second)
	deliverMs := make(map[string]int64, n)
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("k-%d", i)
		at := base.Add(time.Duration(i) * 2 * time.Second / n)
		m := testMsg(topic, ids[i], bodyFor(ids[i]))
		m.WithDelayTimestamp(at)
		deliverMs[ids[i]] = at.UnixMilli()
		sendAll(t, prod, []*primitive.Message{m})
	}
	sentAll := time.Now()
	if sentAll.After(base) {
		t.Fatalf("sending %d messages took until %v past the first due time; the kill would not find them all pending", n, sentAll.Sub(base))
	}
	offs, err := queueMaxOffsets(cl, p.BrokerAddr(), topic, queues)
	if err != nil {
		t.Fatal(err)
	}
	var stored int64
	for _, o := range offs {
		stored += o
	}
	if stored != 1 {
		t.Fatalf("%d records on the topic before the kill, want 1 (the create message): timers delivered early", stored)
	}
	stopProd()
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	if err := p.Restart(); err != nil {
		t.Fatalf("restart after SIGKILL: %v", err)
	}
	t.Logf("killed %v before the first due time; broker back after %v", base.Sub(killedAt).Round(time.Millisecond), time.Since(killedAt).Round(time.Millisecond))

	waitRoute(t, p, topic)
	got := newArrivals()
	startConsumerFunc(t, p.NamesrvAddr(), consumerConf{group: uniqueName(t, "cg"), topic: topic}, got.add)
	got.wait(t, consumeTimeout, ids)

	adm := admin.New(admin.Options{NamesrvAddr: p.NamesrvAddr()})
	t.Cleanup(adm.Close)
	harness.WaitFor(t, consumeTimeout, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		pending, behind, err := timerBacklog(ctx, adm, p.BrokerAddr())
		if err != nil {
			return err
		}
		if pending != 0 || behind != 0 {
			return fmt.Errorf("timer wheel: %d pending, %d not yet enqueued", pending, behind)
		}
		return nil
	})

	var brokerLate []time.Duration
	dups := 0
	for _, id := range ids {
		copies := got.distinctCopies(id)
		if len(copies) > 1 {
			dups += len(copies) - 1
		}
		for _, m := range copies {
			out, err := timerOut(m)
			switch {
			case err != nil:
				t.Errorf("%s: %v", id, err)
			case out != deliverMs[id]:
				t.Errorf("%s: TIMER_OUT_MS %d, requested %d", id, out, deliverMs[id])
			case m.StoreTimestamp < out:
				t.Errorf("%s: stored on the topic %d ms before its time", id, out-m.StoreTimestamp)
			case string(m.Body) != string(bodyFor(id)):
				t.Errorf("%s: body %q after recovery", id, m.Body)
			default:
				brokerLate = append(brokerLate, time.Duration(m.StoreTimestamp-out)*time.Millisecond)
			}
		}
	}
	offs, err = queueMaxOffsets(cl, p.BrokerAddr(), topic, queues)
	if err != nil {
		t.Fatal(err)
	}
	stored = 0
	for _, o := range offs {
		stored += o
	}
	b50, b99, bmax := latencySummary(brokerLate)
	t.Logf("after the restart: all %d delivered, %d duplicate copies, %d records on the topic; stored after due p50 %v p99 %v max %v",
		n, dups, stored, b50, b99, bmax)
	if dups != 0 || stored != 1+n {
		t.Errorf("%d duplicate copies received, %d records on the topic, want 0 and %d: nothing was delivered before the kill", dups, stored, 1+n)
	}
}

// TestTimerBeyondRollWindow runs a broker whose roll window is 5 s (50 slots
// of 100 ms) and checks that messages due 3, 8 and 12 s ahead arrive on time:
// the far ones are rolled (re-stored on the wheel topic, TIMER_ROLL_TIMES
// counted) as often as the window requires, and still never early.
func TestTimerBeyondRollWindow(t *testing.T) {
	t.Parallel()
	p := ownRMQ(t, "timerPrecisionMs=100", "timerRollWindowSlot=50", "mappedFileSizeCommitLog=4194304", "mappedFileSizeTimerLog=1048576")
	topic := uniqueName(t, "t")
	prod, _ := newProducer(t, p.NamesrvAddr())
	sendAll(t, prod, []*primitive.Message{testMsg(topic, "create", bodyFor("create"))})
	waitRoute(t, p, topic)
	got := newArrivals()
	startWarmConsumer(t, p, prod.SendSync, consumerConf{group: uniqueName(t, "cg"), topic: topic}, got.add)

	const window = 5 * time.Second
	cases := []struct {
		id        string
		delay     time.Duration
		minRolls  int
		wantRolls bool
	}{
		{id: "inside", delay: 3 * time.Second, minRolls: 0},
		{id: "one-roll", delay: 8 * time.Second, minRolls: 1, wantRolls: true},
		{id: "two-rolls", delay: 12 * time.Second, minRolls: 2, wantRolls: true},
	}
	cl := rawClient(t)
	sends := make([]timerSend, len(cases))
	outs := make(map[string]int64)
	for i, tc := range cases {
		m := testMsg(topic, tc.id, bodyFor(tc.id))
		deliverMs := setTimer(m, byDeliverTimestamp, time.Now(), tc.delay)
		r := sendAll(t, prod, []*primitive.Message{m})[0]
		sends[i] = timerSend{id: tc.id, kind: byDeliverTimestamp, delay: tc.delay, deliverMs: deliverMs, result: r}
		out, err := checkWheelRecord(cl, p.BrokerAddr(), topic, sends[i])
		if err != nil {
			t.Fatalf("%s: wheel record: %v", tc.id, err)
		}
		outs[tc.id] = out
	}
	got.wait(t, consumeTimeout, []string{"inside", "one-roll", "two-rolls"})
	for _, tc := range cases {
		a := got.get(tc.id)
		if len(a) != 1 {
			t.Errorf("%s: received %d times, want once", tc.id, len(a))
		}
		cLate, bLate, err := timerLateness(a[0], outs[tc.id])
		if err != nil {
			t.Errorf("%s: %v", tc.id, err)
			continue
		}
		if cLate > lateLimit {
			t.Errorf("%s: received %v after its time, limit %v", tc.id, cLate, lateLimit)
		}
		rollsProp := a[0].msg.GetProperty(propTimerRollTimes)
		rolls, _ := strconv.Atoi(rollsProp)
		if (rollsProp != "") != tc.wantRolls || rolls < tc.minRolls || time.Duration(rolls)*window >= tc.delay {
			t.Errorf("%s (due in %v, window %v): TIMER_ROLL_TIMES %q, want at least %d and fewer than %v/%v",
				tc.id, tc.delay, window, rollsProp, tc.minRolls, tc.delay, window)
		}
		t.Logf("%s: due in %v, rolled %d times, received %v after due (stored %v after)", tc.id, tc.delay, rolls, cLate, bLate)
	}
}
