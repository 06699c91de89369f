package pop_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqio/rmq/broker"
	"github.com/rmqio/rmq/broker/pop"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/remoting"
)

// TestPopAckRevive pops three messages, acks two, and checks that after the
// invisible time exactly the third comes back from the POP retry topic, with
// its reconsume count raised, once; the consumer offset then covers all.
func TestPopAckRevive(t *testing.T) {
	e := startEnv(t, nil)
	e.createTopic("T", 1)
	for i := 0; i < 3; i++ {
		e.send("T", 0, fmt.Sprintf("m%d", i))
	}
	e.WaitDispatched()
	ps, resp := e.pop("T", 0, 32, 60000, nil)
	if got := bodies(ps); !reflect.DeepEqual(got, []string{"m0", "m1", "m2"}) {
		t.Fatalf("popped %v (code %d %s)", got, resp.Code, resp.Remark)
	}
	if resp.ExtFields["startOffsetInfo"] != "0 0 0" || resp.ExtFields["msgOffsetInfo"] != "0 0 0,1,2" {
		t.Fatalf("offset info %q / %q", resp.ExtFields["startOffsetInfo"], resp.ExtFields["msgOffsetInfo"])
	}
	// Invisible: nothing more now.
	if again, resp := e.pop("T", 0, 32, 60000, nil); len(again) != 0 || resp.Code != remoting.PollingTimeout {
		t.Fatalf("second pop: %v code %d", bodies(again), resp.Code)
	}
	e.ack(ps[0])
	e.ack(ps[2])
	e.ack(ps[2]) // a duplicate ack stores nothing
	if w := e.Pop().Stats().AckWrites; w != 2 {
		t.Fatalf("ack records written = %d, want 2", w)
	}
	if off, _ := e.Clients().Offsets.Query(group, "T", 0); off != 1 {
		t.Fatalf("consumer offset = %d, want 1 (offset 1 still in flight)", off)
	}
	before := e.reviveMax()
	e.advanceAndSettle(59999*time.Millisecond, before)
	if st := e.Pop().Stats(); st.Revived != 0 || st.InFlight != 1 {
		t.Fatalf("revived before the invisible time ended: %+v", st)
	}
	e.advanceAndSettle(time.Millisecond, before+2) // trigger + done
	if st := e.Pop().Stats(); st.Revived != 1 || st.InFlight != 0 {
		t.Fatalf("after the invisible time: %+v", st)
	}
	if off, _ := e.Clients().Offsets.Query(group, "T", 0); off != 3 {
		t.Fatalf("consumer offset = %d, want 3", off)
	}
	e.WaitDispatched()
	re, resp := e.pop("T", -1, 32, 30000, nil)
	if len(re) != 1 || re[0].body() != "m1" {
		t.Fatalf("redelivery: %v code %d %s", bodies(re), resp.Code, resp.Remark)
	}
	m := re[0]
	if m.topic != pop.RetryTopic("T", group) || m.ext.ReconsumeTimes != 1 || m.ext.Properties["RETRY_TOPIC"] != "T" {
		t.Fatalf("redelivered message: ack topic %q reconsume %d props %v", m.topic, m.ext.ReconsumeTimes, m.ext.Properties)
	}
	e.ack(m)
	e.advanceAndSettle(time.Hour, e.reviveMax()+1)
	if st := e.Pop().Stats(); st.Revived != 1 || st.InFlight != 0 {
		t.Fatalf("after acking the redelivery: %+v", st)
	}
}

// TestReviveToDLQAfterRetryBudget: a message never acked goes to the retry
// topic until the group's retryMaxTimes, then to %DLQ%<group>.
func TestReviveToDLQAfterRetryBudget(t *testing.T) {
	e := startEnv(t, nil)
	e.createTopic("T", 1)
	g := e.Clients().SubGroups.FindOrCreate(group)
	g.RetryMaxTimes = 1
	if err := e.Clients().SubGroups.Update(g); err != nil {
		t.Fatal(err)
	}
	e.send("T", 0, "x")
	e.WaitDispatched()
	if ps, _ := e.pop("T", 0, 1, 1000, nil); len(ps) != 1 {
		t.Fatal("nothing popped")
	}
	e.advanceAndSettle(time.Second, e.reviveMax()+2)
	e.WaitDispatched()
	ps, _ := e.pop("T", -1, 1, 1000, nil)
	if len(ps) != 1 || ps[0].ext.ReconsumeTimes != 1 {
		t.Fatalf("first redelivery: %v", bodies(ps))
	}
	e.advanceAndSettle(time.Second, e.reviveMax()+2)
	e.WaitDispatched()
	if n := e.Store().MaxOffsetInQueue("%DLQ%"+group, 0); n != 1 {
		t.Fatalf("DLQ holds %d messages, want 1", n)
	}
	if ps, _ := e.pop("T", -1, 1, 1000, nil); len(ps) != 0 {
		t.Fatalf("popped %v after the retry budget", bodies(ps))
	}
}

// TestChangeInvisibleTime extends a message's invisible time: the old
// deadline passes without a revive, the new one revives it.
func TestChangeInvisibleTime(t *testing.T) {
	e := startEnv(t, nil)
	e.createTopic("T", 1)
	e.send("T", 0, "a")
	e.WaitDispatched()
	ps, _ := e.pop("T", 0, 1, 10000, nil)
	if len(ps) != 1 {
		t.Fatal("nothing popped")
	}
	p := ps[0]
	e.clk.Advance(time.Millisecond)
	changedAt := e.clk.Now().UnixMilli()
	resp := e.Invoke(remoting.ChangeMessageInvisibleTime, map[string]string{
		"consumerGroup": group, "topic": "T", "queueId": "0", "extraInfo": p.handle, "offset": "0", "invisibleTime": "30000",
	}, nil)
	if resp.Code != remoting.Success {
		t.Fatalf("change: %d %s", resp.Code, resp.Remark)
	}
	pt := resp.ExtFields["popTime"]
	e.advanceAndSettle(10*time.Second-time.Millisecond, e.reviveMax()+1) // the old trigger: nothing left to revive
	if st := e.Pop().Stats(); st.Revived != 0 || st.InFlight != 1 {
		t.Fatalf("after the old deadline: %+v", st)
	}
	// The old handle is dead: its ack succeeds and stores nothing.
	n := e.reviveMax()
	if resp := e.ackResp(p); resp.Code != remoting.Success {
		t.Fatalf("ack with the old handle: %d", resp.Code)
	}
	if st := e.Pop().Stats(); st.InFlight != 1 || st.AckWrites != 0 || e.reviveMax() != n {
		t.Fatalf("old handle acked something: %+v", st)
	}
	if p0, _ := strconv.ParseInt(pt, 10, 64); p0 != changedAt {
		t.Fatalf("new popTime %s", pt)
	}
	e.advanceAndSettle(20*time.Second, e.reviveMax())
	if st := e.Pop().Stats(); st.Revived != 0 {
		t.Fatalf("revived early: %+v", st)
	}
	e.advanceAndSettle(time.Millisecond, e.reviveMax()+2)
	if st := e.Pop().Stats(); st.Revived != 1 || st.InFlight != 0 {
		t.Fatalf("after the new deadline: %+v", st)
	}
}

// TestOrderlyPop: one batch in flight per queue; an ack unblocks it, an
// expiry pops the same message again with its attempt count.
func TestOrderlyPop(t *testing.T) {
	e := startEnv(t, nil)
	e.createTopic("T", 1)
	e.send("T", 0, "o0")
	e.send("T", 0, "o1")
	e.WaitDispatched()
	order := map[string]string{"order": "true"}
	ps, resp := e.pop("T", 0, 1, 5000, order)
	if len(ps) != 1 || ps[0].body() != "o0" || resp.ExtFields["reviveQid"] != "999" {
		t.Fatalf("first orderly pop: %v %v", bodies(ps), resp.ExtFields)
	}
	if again, _ := e.pop("T", 0, 1, 5000, order); len(again) != 0 {
		t.Fatalf("queue not locked: popped %v", bodies(again))
	}
	e.advanceAndSettle(5*time.Second, e.reviveMax()+2)
	e.restart() // the rewind and the attempt count come back from the revive log
	again, resp := e.pop("T", 0, 1, 5000, order)
	if len(again) != 1 || again[0].body() != "o0" || resp.ExtFields["orderCountInfo"] != "0 qo0%0 1" {
		t.Fatalf("after expiry: %v %v", bodies(again), resp.ExtFields)
	}
	e.ack(again[0])
	next, _ := e.pop("T", 0, 1, 5000, order)
	if len(next) != 1 || next[0].body() != "o1" {
		t.Fatalf("after ack: %v", bodies(next))
	}
	e.ack(next[0])
	if off, _ := e.Clients().Offsets.Query(group, "T", 0); off != 2 {
		t.Fatalf("consumer offset %d, want 2", off)
	}
}

// TestPopLongPolling parks a pop on an empty topic; a send wakes it.
func TestPopLongPolling(t *testing.T) {
	e := startEnv(t, nil)
	e.createTopic("T", 2)
	var wg sync.WaitGroup
	var got []popped
	wg.Add(1)
	go func() {
		defer wg.Done()
		resp := e.Invoke(remoting.PopMessage, e.popReq("T", -1, 32, 60000, map[string]string{"pollTime": "15000"}), nil)
		got = e.decodePop("T", resp)
	}()
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return e.Pop().Stats().Parked == 1 }, "pop to park")
	resp := e.Invoke(remoting.PollingInfo, map[string]string{"consumerGroup": group, "topic": "T", "queueId": "-1"}, nil)
	if resp.Code != remoting.Success || resp.ExtFields["pollingNum"] != "1" {
		t.Fatalf("polling info: %d %v", resp.Code, resp.ExtFields)
	}
	e.send("T", 1, "late")
	wg.Wait()
	if len(got) != 1 || got[0].body() != "late" {
		t.Fatalf("parked pop answered %v", bodies(got))
	}
	// A parked pop with nothing arriving answers POLLING_TIMEOUT at its poll time.
	// The first one leaves the table just after its answer.
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return e.Pop().Stats().Parked == 0 }, "the answered pop to leave")
	done := make(chan *remoting.Command, 1)
	go func() {
		done <- e.Invoke(remoting.PopMessage, e.popReq("T", -1, 32, 60000, map[string]string{"pollTime": "3000"}), nil)
	}()
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return e.Pop().Stats().Parked == 1 }, "pop to park")
	e.clk.Advance(3 * time.Second)
	if resp := <-done; resp.Code != remoting.PollingTimeout {
		t.Fatalf("timed-out pop: %d %s", resp.Code, resp.Remark)
	}
}

// TestNotificationAndPeek: NOTIFICATION reports messages to pop, PEEK reads
// them without popping.
func TestNotificationAndPeek(t *testing.T) {
	e := startEnv(t, nil)
	e.createTopic("T", 1)
	notify := func() *remoting.Command {
		return e.Invoke(remoting.Notification, map[string]string{"consumerGroup": group, "topic": "T", "queueId": "-1",
			"pollTime": "0", "bornTime": strconv.FormatInt(e.clk.Now().UnixMilli(), 10)}, nil)
	}
	if resp := notify(); resp.Code != remoting.Success || resp.ExtFields["hasMsg"] != "false" {
		t.Fatalf("empty notification: %d %v", resp.Code, resp.ExtFields)
	}
	e.send("T", 0, "p")
	e.WaitDispatched()
	if resp := notify(); resp.ExtFields["hasMsg"] != "true" {
		t.Fatalf("notification: %v", resp.ExtFields)
	}
	resp := e.Invoke(remoting.PeekMessage, map[string]string{"consumerGroup": group, "topic": "T", "queueId": "0", "maxMsgNums": "4"}, nil)
	if resp.Code != remoting.Success || len(e.decodeRaw(resp.Body)) != 1 {
		t.Fatalf("peek: %d %s", resp.Code, resp.Remark)
	}
	if ps, _ := e.pop("T", 0, 4, 1000, nil); len(ps) != 1 {
		t.Fatal("peek popped the message")
	}
	if resp := notify(); resp.ExtFields["hasMsg"] != "false" {
		t.Fatalf("notification after pop: %v", resp.ExtFields)
	}
}

func (e *env) decodeRaw(body []byte) []string {
	var out []string
	for _, p := range e.decodePopRaw(body) {
		out = append(out, p)
	}
	return out
}

func (e *env) decodePopRaw(body []byte) []string {
	if len(body) == 0 {
		return nil
	}
	var out []string
	for _, m := range decodeRecords(e.t, body) {
		out = append(out, string(m.Body))
	}
	sort.Strings(out)
	return out
}

// TestBadInput: refusals carry the stock codes, store nothing and leave
// the broker serving.
func TestBadInput(t *testing.T) {
	e := startEnv(t, nil)
	e.createTopic("T", 1)
	e.send("T", 0, "a")
	e.WaitDispatched()
	before := e.reviveMax()
	cases := []struct {
		name  string
		topic string
		qid   int32
		max   int
		inv   int64
		extra map[string]string
		code  int32
	}{
		{"unknown topic", "Nope", 0, 1, 1000, nil, remoting.TopicNotExist},
		{"queue out of range", "T", 5, 1, 1000, nil, remoting.InvalidParameter},
		{"too many", "T", 0, 33, 1000, nil, remoting.InvalidParameter},
		{"invisible zero", "T", 0, 1, 0, nil, remoting.InvalidParameter},
		{"invisible too long", "T", 0, 1, 1 << 50, nil, remoting.InvalidParameter},
		{"born too long ago", "T", 0, 1, 1000, map[string]string{"bornTime": "1"}, remoting.PollingTimeout},
		{"bad group", "T", 0, 1, 1000, map[string]string{"consumerGroup": "bad group!"}, remoting.SubscriptionGroupNotExist},
		{"sql filter", "T", 0, 1, 1000, map[string]string{"expType": "SQL92", "exp": "a > 1"}, remoting.SystemError},
	}
	for _, c := range cases {
		ps, resp := e.pop(c.topic, c.qid, c.max, c.inv, c.extra)
		if resp.Code != c.code || len(ps) != 0 {
			t.Errorf("%s: code %d (%s), want %d", c.name, resp.Code, resp.Remark, c.code)
		}
	}
	acks := []struct {
		name string
		ext  map[string]string
		code int32
	}{
		{"malformed extraInfo", map[string]string{"topic": "T", "queueId": "0", "offset": "0", "extraInfo": "x y"}, remoting.SystemError},
		{"non-numeric extraInfo", map[string]string{"topic": "T", "queueId": "0", "offset": "0", "extraInfo": "a 1 2 0 0 b 0 0"}, remoting.SystemError},
		{"unknown topic", map[string]string{"topic": "Nope", "queueId": "0", "offset": "0", "extraInfo": "0 1 1000 0 0 b 0 0"}, remoting.TopicNotExist},
		{"bad queue", map[string]string{"topic": "T", "queueId": "7", "offset": "0", "extraInfo": "0 1 1000 0 0 b 7 0"}, remoting.MessageIllegal},
		{"offset beyond the queue", map[string]string{"topic": "T", "queueId": "0", "offset": "99", "extraInfo": "0 1 1000 0 0 b 0 99"}, remoting.NoMessage},
		{"unknown checkpoint", map[string]string{"topic": "T", "queueId": "0", "offset": "0", "extraInfo": "0 1 1000 0 0 b 0 0"}, remoting.Success},
	}
	for _, c := range acks {
		c.ext["consumerGroup"] = group
		if resp := e.Invoke(remoting.AckMessage, c.ext, nil); resp.Code != c.code {
			t.Errorf("ack %s: code %d (%s), want %d", c.name, resp.Code, resp.Remark, c.code)
		}
	}
	resp := e.Invoke(remoting.ChangeMessageInvisibleTime, map[string]string{
		"consumerGroup": group, "topic": "T", "queueId": "0", "offset": "0", "extraInfo": "0 1 1000 0 0 b 0 0", "invisibleTime": "1000",
	}, nil)
	if resp.Code != remoting.NoMessage {
		t.Errorf("change of an unknown handle: %d %s", resp.Code, resp.Remark)
	}
	if got := e.reviveMax(); got != before {
		t.Fatalf("refused requests stored %d revive records", got-before)
	}
	if ps, _ := e.pop("T", 0, 1, 1000, nil); len(ps) != 1 {
		t.Fatal("broker no longer pops after the refusals")
	}
}

// TestTimerDisabled: without the timer store a pop is refused as stock.
func TestTimerDisabled(t *testing.T) {
	e := startEnv(t, func(o *broker.Options) { o.TimerWheelEnable = false })
	e.createTopic("T", 1)
	if _, resp := e.pop("T", 0, 1, 1000, nil); resp.Code != remoting.SystemError {
		t.Fatalf("pop without timer store: %d %s", resp.Code, resp.Remark)
	}
}

// TestRestartKeepsInFlight: after a clean restart popped messages stay
// invisible until their time, acked ones never come back.
func TestRestartKeepsInFlight(t *testing.T) {
	e := startEnv(t, nil)
	e.createTopic("T", 1)
	for i := 0; i < 4; i++ {
		e.send("T", 0, fmt.Sprintf("m%d", i))
	}
	e.WaitDispatched()
	ps, _ := e.pop("T", 0, 32, 20000, nil)
	if len(ps) != 4 {
		t.Fatalf("popped %d", len(ps))
	}
	e.ack(ps[1])
	e.ack(ps[3])
	e.restart()
	if st := e.Pop().Stats(); st.InFlight != 2 {
		t.Fatalf("after restart: %+v", st)
	}
	if again, _ := e.pop("T", 0, 32, 20000, nil); len(again) != 0 {
		t.Fatalf("popped %v again after restart", bodies(again))
	}
	e.advanceAndSettle(20*time.Second, e.reviveMax()+2)
	e.WaitDispatched()
	re, _ := e.pop("T", -1, 32, 20000, nil)
	got := bodies(re)
	sort.Strings(got)
	if !reflect.DeepEqual(got, []string{"m0", "m2"}) {
		t.Fatalf("redelivered %v, want [m0 m2]", got)
	}
}

// TestBatchAck acks offsets 0 and 2 of a pop in one BATCH_ACK_MESSAGE
// (stock body: short names, the BitSet as base64 of its bytes).
func TestBatchAck(t *testing.T) {
	e := startEnv(t, nil)
	e.createTopic("T", 1)
	for i := 0; i < 3; i++ {
		e.send("T", 0, fmt.Sprintf("b%d", i))
	}
	e.WaitDispatched()
	ps, resp := e.pop("T", 0, 32, 60000, nil)
	if len(ps) != 3 {
		t.Fatalf("popped %d", len(ps))
	}
	body := `{"brokerName":"` + e.Opts.BrokerName + `","acks":[{"c":"` + group + `","t":"T","r":"0","so":0,"q":0,"rq":0,"pt":` +
		resp.ExtFields["popTime"] + `,"it":60000,"b":"BQ=="}]}`
	if r := e.Invoke(remoting.BatchAckMessage, nil, []byte(body)); r.Code != remoting.Success {
		t.Fatalf("batch ack: %d %s", r.Code, r.Remark)
	}
	if st := e.Pop().Stats(); st.InFlight != 1 || st.AckWrites != 2 {
		t.Fatalf("after batch ack: %+v", st)
	}
	e.advanceAndSettle(time.Minute, e.reviveMax()+2)
	e.WaitDispatched()
	re, _ := e.pop("T", -1, 32, 60000, nil)
	if len(re) != 1 || re[0].body() != "b1" {
		t.Fatalf("redelivered %v, want [b1]", bodies(re))
	}
}

// TestPopWait: the Go API's long poll (for the gRPC front end) returns when
// a message arrives, and gives up with its context.
func TestPopWait(t *testing.T) {
	e := startEnv(t, nil)
	e.createTopic("T", 1)
	req := pop.PopRequest{Group: group, Topic: "T", QueueID: -1, MaxMsgs: 4, Invisible: 10000}
	got := make(chan *pop.PopResult, 1)
	go func() {
		res, err := e.Pop().PopWait(context.Background(), req, time.Minute)
		if err != nil {
			t.Error(err)
		}
		got <- res
	}()
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return e.Pop().Stats().Parked == 1 }, "PopWait to park")
	e.send("T", 0, "w")
	res := <-got
	if len(res.Messages) != 1 || string(res.Messages[0].Ext.Body) != "w" || res.Messages[0].Handle.Offset != 0 {
		t.Fatalf("PopWait: %+v", res)
	}
	if err := e.Pop().Ack(group, "T", res.Messages[0].Handle); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return e.Pop().Stats().Parked == 0 }, "the answered PopWait to leave")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := e.Pop().PopWait(ctx, req, time.Minute)
		errc <- err
	}()
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return e.Pop().Stats().Parked == 1 }, "PopWait to park")
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Fatalf("cancelled PopWait: %v", err)
	}
	testutil.WaitFor(t, testutil.DefaultTimeout, func() bool { return e.Pop().Stats().Parked == 0 }, "cancelled wait to leave")
}
