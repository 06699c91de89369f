package broker

import (
	"strconv"
	"testing"
	"time"

	"github.com/rmqio/rmq/broker/brokerstats"
	"github.com/rmqio/rmq/internal/clock"
	"github.com/rmqio/rmq/internal/testutil"
	"github.com/rmqio/rmq/internal/testutil/storetest"
	"github.com/rmqio/rmq/message"
	"github.com/rmqio/rmq/remoting"
)

// startDelayBroker runs a broker on a manual clock so delay levels are
// crossed by advancing time, never by sleeping.
func startDelayBroker(t *testing.T) (*testBroker, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(time.UnixMilli(1_700_000_000_000))
	tb := startBroker(t, func(o *Options) { o.Clock = clk })
	return tb, clk
}

// messagesOn returns the messages of topic/queue from offset 0.
func (tb *testBroker) messagesOn(topic string, queueID int32) []*message.MessageExt {
	tb.t.Helper()
	tb.waitDispatched()
	return storetest.Messages(tb.t, tb.Store(), topic, queueID)
}

func TestDelayLevelSendIsHeldUntilDue(t *testing.T) {
	tb, clk := startDelayBroker(t)
	resp := tb.mustSend(sendArgs{topic: "DelayT", body: []byte("d"), queueID: 2, props: coreProps("DELAY", "2", "TAGS", "tA", "UNIQ_KEY", "U1")})
	if resp.ExtFields["msgId"] == "" {
		t.Fatal("no msgId")
	}
	sched := tb.messagesOn(message.TopicSchedule, 1)
	if len(sched) != 1 || sched[0].Properties["REAL_TOPIC"] != "DelayT" || sched[0].Properties["REAL_QID"] != "2" {
		t.Fatalf("schedule queue holds %d messages", len(sched))
	}
	if unit, ok := tb.Store().CommitLogOffsetOf(message.TopicSchedule, 1, 0); !ok || unit != sched[0].PhysicalOffset {
		t.Fatalf("consume-queue unit %d %v", unit, ok)
	}
	clk.Advance(5*time.Second - time.Millisecond)
	if got := tb.messagesOn("DelayT", 2); len(got) != 0 {
		t.Fatal("delivered before its delay")
	}
	clk.Advance(time.Millisecond)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(tb.messagesOn("DelayT", 2)) == 1 }, "delivery")
	m := tb.messagesOn("DelayT", 2)[0]
	if string(m.Body) != "d" || m.Properties["TAGS"] != "tA" || m.Properties["UNIQ_KEY"] != "U1" || m.Properties["DELAY"] != "" {
		t.Fatalf("delivered %q %v", m.Body, m.Properties)
	}
	// The delivered message is pullable by consumers (and woke long polls through dispatch).
	pr := tb.pull(pullArgs{topic: "DelayT", queueID: 2, sysFlag: 4, subscription: "*"})
	if pr.Code != remoting.Success {
		t.Fatalf("pull code %d %q", pr.Code, pr.Remark)
	}
}

func TestDelayLevelAboveMaxIsClamped(t *testing.T) {
	tb, _ := startDelayBroker(t)
	tb.mustSend(sendArgs{topic: "Clamp", body: []byte("x"), props: coreProps("DELAY", "99")})
	sched := tb.messagesOn(message.TopicSchedule, 17)
	if len(sched) != 1 || sched[0].Properties["DELAY"] != "18" {
		t.Fatalf("level 18 queue: %d messages", len(sched))
	}
}

func TestDelayLevelRefusals(t *testing.T) {
	tb, _ := startDelayBroker(t)
	if r := tb.send(sendArgs{topic: "Bad", body: []byte("x"), props: coreProps("DELAY", "soon")}); r.Code != remoting.MessageIllegal {
		t.Fatalf("non-numeric DELAY: code %d", r.Code)
	}
	body := coreBatchBody(message.BatchEntry{Body: []byte("a"), Properties: map[string]string{"DELAY": "1"}})
	if r := tb.send(sendArgs{code: remoting.SendBatchMessage, topic: "Bad", body: body, batch: true}); r.Code != remoting.MessageIllegal {
		t.Fatalf("delayed batch: code %d %q", r.Code, r.Remark)
	}
}

func TestDelayedMessagesSurviveRestart(t *testing.T) {
	tb, clk := startDelayBroker(t)
	for i := 0; i < 3; i++ {
		tb.mustSend(sendArgs{topic: "Persist", body: []byte(strconv.Itoa(i)), props: coreProps("DELAY", "3")})
	}
	tb.waitDispatched()
	tb = tb.restart()
	clk.Advance(10 * time.Second)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(tb.messagesOn("Persist", 0)) == 3 }, "delivery after restart")
}

// sendBack runs CONSUMER_SEND_MSG_BACK for a stored message.
func (tb *testBroker) sendBack(msgID, group string, delayLevel int, maxTimes string) *remoting.Command {
	tb.t.Helper()
	_, off, err := message.DecodeMessageID(msgID)
	if err != nil {
		tb.t.Fatal(err)
	}
	ext := map[string]string{"offset": strconv.FormatInt(off, 10), "group": group, "delayLevel": strconv.Itoa(delayLevel), "originMsgId": msgID}
	if maxTimes != "" {
		ext["maxReconsumeTimes"] = maxTimes
	}
	return tb.invoke(remoting.ConsumerSendMsgBack, ext, nil)
}

func TestConsumerSendMsgBackRetriesAfterLevel3(t *testing.T) {
	tb, clk := startDelayBroker(t)
	resp := tb.mustSend(sendArgs{topic: "Work", body: []byte("job"), props: coreProps("TAGS", "t", "UNIQ_KEY", "UK")})
	msgID := resp.ExtFields["msgId"]
	if r := tb.sendBack(msgID, "G1", 0, "16"); r.Code != remoting.Success {
		t.Fatalf("send back: %d %q", r.Code, r.Remark)
	}
	sched := tb.messagesOn(message.TopicSchedule, 2) // level 3 = 10 s
	if len(sched) != 1 {
		t.Fatalf("level 3 queue holds %d", len(sched))
	}
	p := sched[0].Properties
	if p["REAL_TOPIC"] != "%RETRY%G1" || p["RETRY_TOPIC"] != "Work" || p["ORIGIN_MESSAGE_ID"] != msgID || sched[0].ReconsumeTimes != 1 {
		t.Fatalf("retry message props %v reconsume %d", p, sched[0].ReconsumeTimes)
	}
	clk.Advance(10 * time.Second)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(tb.messagesOn("%RETRY%G1", 0)) == 1 }, "retry delivery")
	retry := tb.messagesOn("%RETRY%G1", 0)[0]
	if retry.ReconsumeTimes != 1 || string(retry.Body) != "job" || retry.Properties["UNIQ_KEY"] != "UK" {
		t.Fatalf("retry delivered %+v", retry.Message)
	}
	// Failing the retried message again: level 3+1, reconsumeTimes 2, origin kept.
	retryID := message.CreateMessageID(tb.host, retry.PhysicalOffset)
	if r := tb.sendBack(retryID, "G1", 0, "16"); r.Code != remoting.Success {
		t.Fatalf("second send back: %d", r.Code)
	}
	second := tb.messagesOn(message.TopicSchedule, 3)
	if len(second) != 1 || second[0].ReconsumeTimes != 2 || second[0].Properties["ORIGIN_MESSAGE_ID"] != msgID {
		t.Fatalf("second retry %v", second)
	}
}

// A positive delayLevel from the client replaces the 3+reconsumeTimes default.
func TestConsumerSendMsgBackExplicitDelayLevel(t *testing.T) {
	tb, clk := startDelayBroker(t)
	resp := tb.mustSend(sendArgs{topic: "Explicit", body: []byte("later"), props: coreProps("UNIQ_KEY", "UE")})
	msgID := resp.ExtFields["msgId"]
	if r := tb.sendBack(msgID, "G4", 5, "16"); r.Code != remoting.Success {
		t.Fatalf("send back: %d %q", r.Code, r.Remark)
	}
	if n := len(tb.messagesOn(message.TopicSchedule, 2)); n != 0 {
		t.Fatalf("default level 3 queue holds %d", n)
	}
	sched := tb.messagesOn(message.TopicSchedule, 4) // level 5 = 1 m
	if len(sched) != 1 {
		t.Fatalf("level 5 queue holds %d", len(sched))
	}
	p := sched[0].Properties
	if p["DELAY"] != "5" || p["REAL_TOPIC"] != "%RETRY%G4" || p["RETRY_TOPIC"] != "Explicit" ||
		p["ORIGIN_MESSAGE_ID"] != msgID || sched[0].ReconsumeTimes != 1 {
		t.Fatalf("retry message props %v reconsume %d", p, sched[0].ReconsumeTimes)
	}
	clk.Advance(time.Minute - time.Millisecond)
	if n := len(tb.messagesOn("%RETRY%G4", 0)); n != 0 {
		t.Fatal("delivered before level 5's delay")
	}
	clk.Advance(time.Millisecond)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(tb.messagesOn("%RETRY%G4", 0)) == 1 }, "level 5 delivery")
	if m := tb.messagesOn("%RETRY%G4", 0)[0]; string(m.Body) != "later" || m.ReconsumeTimes != 1 || m.Properties["DELAY"] != "" {
		t.Fatalf("retry delivered %q reconsume %d %v", m.Body, m.ReconsumeTimes, m.Properties)
	}
}

func TestConsumerSendMsgBackToDLQ(t *testing.T) {
	tb, _ := startDelayBroker(t)
	for _, tc := range []struct {
		name       string
		delayLevel int
		maxTimes   string
	}{
		{name: "budget spent", delayLevel: 0, maxTimes: "0"},
		{name: "client asks for DLQ", delayLevel: -1, maxTimes: "16"},
	} {
		resp := tb.mustSend(sendArgs{topic: "Dead", body: []byte(tc.name)})
		if r := tb.sendBack(resp.ExtFields["msgId"], "G2", tc.delayLevel, tc.maxTimes); r.Code != remoting.Success {
			t.Fatalf("%s: %d %q", tc.name, r.Code, r.Remark)
		}
	}
	dlq := tb.messagesOn("%DLQ%G2", 0)
	if len(dlq) != 2 || dlq[0].Properties["DELAY"] != "" {
		t.Fatalf("DLQ holds %d", len(dlq))
	}
	if tc := tb.Topics().Get("%DLQ%G2"); tc == nil || tc.Perm != 6 {
		t.Fatalf("DLQ topic config %+v", tc)
	}
}

func TestConsumerSendMsgBackErrors(t *testing.T) {
	tb, _ := startDelayBroker(t)
	r := tb.invoke(remoting.ConsumerSendMsgBack, map[string]string{"offset": "123456789", "group": "G", "delayLevel": "0"}, nil)
	if r.Code != remoting.SystemError {
		t.Fatalf("bad offset: %d", r.Code)
	}
	r = tb.invoke(remoting.ConsumerSendMsgBack, map[string]string{"group": "G", "delayLevel": "0"}, nil)
	if r.Code != remoting.SystemError {
		t.Fatalf("missing offset: %d", r.Code)
	}
}

// A plain send to %RETRY%<group> carrying DELAY (the Go client's fallback) is delayed.
func TestRetryFallbackSendIsDelayed(t *testing.T) {
	tb, clk := startDelayBroker(t)
	tb.mustSend(sendArgs{topic: "%RETRY%G3", body: []byte("fb"), reconsumeTimes: "1", maxReconsumeTimes: "16",
		props: coreProps("DELAY", "4", "RETRY_TOPIC", "Orig")})
	if n := len(tb.messagesOn(message.TopicSchedule, 3)); n != 1 {
		t.Fatalf("level 4 queue holds %d", n)
	}
	clk.Advance(30 * time.Second)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(tb.messagesOn("%RETRY%G3", 0)) == 1 }, "fallback delivery")
}

func TestTransactionalBatchIsRefused(t *testing.T) {
	tb, _ := startDelayBroker(t)
	body := coreBatchBody(message.BatchEntry{Body: []byte("a"), Properties: map[string]string{"TRAN_MSG": "true"}})
	if r := tb.send(sendArgs{code: remoting.SendBatchMessage, topic: "TxBatch", body: body, batch: true}); r.Code != remoting.MessageIllegal {
		t.Fatalf("TRAN_MSG batch: code %d %q", r.Code, r.Remark)
	}
}

// A due delay-level message counts as J4 ScheduleMessageService's delivery
// does: a put of its real topic (and of the broker) and a get of
// SCHEDULE_TOPIC_XXXX by SCHEDULE_CONSUMER; the send itself counted on
// SCHEDULE_TOPIC_XXXX, where the delay rewrote it.
func TestDelayDeliveryCountsInBrokerStats(t *testing.T) {
	tb, clk := startDelayBroker(t)
	tb.mustSend(sendArgs{topic: "DelayStatsT", body: []byte("d"), queueID: 0, props: coreProps("DELAY", "2")})
	value := func(s *brokerstats.Set, k brokerstats.Key) int64 {
		if it := s.Lookup(k); it != nil {
			return it.Value()
		}
		return -1
	}
	if got := value(tb.bstats.TopicPut, brokerstats.Key{Topic: "DelayStatsT"}); got != -1 {
		t.Fatalf("TOPIC_PUT_NUMS DelayStatsT before delivery: %d", got)
	}
	if got := value(tb.bstats.TopicPut, brokerstats.Key{Topic: message.TopicSchedule}); got != 1 {
		t.Fatalf("TOPIC_PUT_NUMS %s: %d", message.TopicSchedule, got)
	}
	clk.Advance(5 * time.Second)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(tb.messagesOn("DelayStatsT", 0)) == 1 }, "delivery")
	stored := int64(tb.messagesOn("DelayStatsT", 0)[0].StoreSize)
	schedGet := brokerstats.Key{Topic: message.TopicSchedule, Group: "SCHEDULE_CONSUMER"}
	testutil.WaitFor(t, coreTestTimeout, func() bool { return value(tb.bstats.GroupGet, schedGet) == 1 }, "schedule get counted")
	if got := value(tb.bstats.TopicPut, brokerstats.Key{Topic: "DelayStatsT"}); got != 1 {
		t.Fatalf("TOPIC_PUT_NUMS DelayStatsT: %d", got)
	}
	if got := value(tb.bstats.TopicSize, brokerstats.Key{Topic: "DelayStatsT"}); got != stored {
		t.Fatalf("TOPIC_PUT_SIZE DelayStatsT: %d, want %d", got, stored)
	}
	if got := value(tb.bstats.GroupSize, schedGet); got != stored {
		t.Fatalf("GROUP_GET_SIZE schedule: %d, want %d", got, stored)
	}
	if got := value(tb.bstats.BrokerPut, brokerstats.Key{Topic: tb.bstats.Cluster()}); got != 2 {
		t.Fatalf("BROKER_PUT_NUMS: %d (the send and the delivery)", got)
	}
}

// A due timer message counts as 5.x TimerMessageStore.doPut's delivery
// does, through the same account stage as a delay delivery
// (deliveryStore): a put of its real topic and of the broker, kept apart in
// ScheduledPut (no send), and no schedule group get. Before the timer
// service wrote through deliveryStore its deliveries counted nowhere.
func TestTimerDeliveryCountsInBrokerStats(t *testing.T) {
	tb, clk := startDelayBroker(t)
	due := clk.Now().Add(3 * time.Second).UnixMilli()
	tb.mustSend(sendArgs{topic: "TimerStatsT", body: []byte("t"), queueID: 0,
		props: coreProps(message.PropTimerDeliverMs, strconv.FormatInt(due, 10))})
	value := func(s *brokerstats.Set, k brokerstats.Key) int64 {
		if it := s.Lookup(k); it != nil {
			return it.Value()
		}
		return -1
	}
	testutil.WaitFor(t, coreTestTimeout, func() bool { return tb.timers.Stats().Pending == 1 }, "enqueue into the wheel")
	if got := value(tb.bstats.TopicPut, brokerstats.Key{Topic: "TimerStatsT"}); got != -1 {
		t.Fatalf("TOPIC_PUT_NUMS TimerStatsT before delivery: %d", got)
	}
	clk.Advance(3 * time.Second)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return len(tb.messagesOn("TimerStatsT", 0)) == 1 }, "delivery")
	stored := int64(tb.messagesOn("TimerStatsT", 0)[0].StoreSize)
	testutil.WaitFor(t, coreTestTimeout, func() bool { return value(tb.bstats.TopicPut, brokerstats.Key{Topic: "TimerStatsT"}) == 1 }, "delivery counted")
	if got := value(tb.bstats.TopicSize, brokerstats.Key{Topic: "TimerStatsT"}); got != stored {
		t.Fatalf("TOPIC_PUT_SIZE TimerStatsT: %d, want %d", got, stored)
	}
	if msgs, bytes := tb.bstats.ScheduledPut("TimerStatsT"); msgs != 1 || bytes != stored {
		t.Fatalf("ScheduledPut TimerStatsT: %d %d, want 1 %d", msgs, bytes, stored)
	}
	if got := value(tb.bstats.GroupGet, brokerstats.Key{Topic: message.TopicSchedule, Group: "SCHEDULE_CONSUMER"}); got != -1 {
		t.Fatalf("GROUP_GET_NUMS schedule after a timer delivery: %d", got)
	}
	if got := value(tb.bstats.BrokerPut, brokerstats.Key{Topic: tb.bstats.Cluster()}); got != 2 {
		t.Fatalf("BROKER_PUT_NUMS: %d (the send and the delivery)", got)
	}
}
